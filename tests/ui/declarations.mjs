// Prints, as JSON, what the Guest Board declares of the API: every route it calls
// (guestboard-ui/js/routes.js) and every field it reads (js/model.js), for
// tests/unit/test_ui_contract.py to check against the OpenAPI document. The two files are
// plain browser scripts: run here in a context of their own, as a page would.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const UI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'guestboard-ui', 'js');
const context = {};
context.window = context;
vm.createContext(context);
for (const file of ['routes.js', 'model.js', 'api.js']) {
  if (file === 'api.js') {
    // api.js needs jQuery only to be called; its event shapes are data.
    context.jQuery = () => undefined;
  }
  vm.runInContext(readFileSync(path.join(UI, file), 'utf8'), context, { filename: file });
}
const events = JSON.parse(JSON.stringify(context.HW.api.EVENTS));
process.stdout.write(JSON.stringify({ routes: context.HW.routes.ROUTES, shapes: context.HW.model.SHAPES, events }));
