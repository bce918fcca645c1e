// A reporter for node's test runner, added by tests/ui/run.sh under CI=true or
// HOMEWORK_REQUIRE_ALL=1: a skipped test (`{ skip }`, `t.skip()`, `test.skip`) or a todo is a
// failure there, as in pytest (tests/require_all.py): a browser test that did not run has
// tested nothing. It names each one and sets a failing exit status.
export default async function* requireAll(source) {
  const notRun = [];
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { name, file, skip, todo } = event.data;
    if (skip !== undefined) notRun.push(`skipped under CI: ${name} (${file}): ${skip === true ? 'skip' : skip}`);
    else if (todo !== undefined) notRun.push(`skipped under CI: ${name} (${file}): todo${todo === true ? '' : ` ${todo}`}`);
  }
  if (notRun.length) {
    process.exitCode = 1;
    yield `${notRun.join('\n')}\nA skip is a failure under CI=true / HOMEWORK_REQUIRE_ALL=1: provide what the test needs (make deps, run as root).\n`;
  }
}
