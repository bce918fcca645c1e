"""The nftables plan (homework/nftplan.py) is what the router loads: scripts/router-net.sh's
tables and chains, the dns and qos components' rulesets, each table with one owner, and
the order between hooks the plan relies on following from the priorities."""
from __future__ import annotations

import re
from pathlib import Path

from homework import nftplan
from homework.components.dns import netfilter
from homework.components.qos import plan as qos_plan

ROOT = Path(__file__).resolve().parents[2]
ROUTER_NET = (ROOT / "scripts" / "router-net.sh").read_text()
BASE_CHAIN = re.compile(r"chain (\S+) \{\s*(?:\n\s*#[^\n]*)*\s*type (\w+) hook (\w+)(?: device \S+)? priority (-?\w+); "
                        r"policy (\w+);")


def chains_in(ruleset: str) -> dict[str, tuple]:
    """name -> (type, hook, priority, policy) of every chain in an nft ruleset; () for a regular chain."""
    found = {m.group(1): m.groups()[1:] for m in BASE_CHAIN.finditer(ruleset)}
    for name in re.findall(r"^\s*chain (\S+) \{", ruleset, re.M):
        found.setdefault(name, ())
    return found


def planned(table: nftplan.Table) -> dict[str, tuple]:
    return {c.name: (c.type, c.hook, c.priority, c.policy) if c.base else () for c in table.chains}


def test_tables_have_one_owner_and_names_of_ours():
    names = [(t.family, t.name) for t in nftplan.TABLES]
    assert len(names) == len(set(names))
    assert all(t.name.startswith("homework") for t in nftplan.TABLES)
    for t in nftplan.TABLES:
        assert (ROOT / "nox-modules" / "homework" / t.owner).exists() or (ROOT / t.owner).exists(), t.owner
        assert len({c.name for c in t.chains}) == len(t.chains), t.name


def test_the_order_between_hooks_follows_from_the_priorities():
    for (first_table, first), (then_table, then) in nftplan.ORDER:
        a, b = first_table.chain(first), then_table.chain(then)
        assert a.hook == b.hook and a.number < b.number, (first_table.name, first, then_table.name, then)


def test_router_net_sh_loads_the_plans_router_table():
    assert re.search(rf"^NFT_TABLE={nftplan.ROUTER.name}$", ROUTER_NET, re.M)
    body = ROUTER_NET.split(f"table {nftplan.ROUTER.family} $NFT_TABLE {{", 1)[1].split("\nEOF", 1)[0]
    assert chains_in(body) == planned(nftplan.ROUTER)
    assert set(re.findall(r"^\s*set (\w+) \{", body, re.M)) == set(nftplan.ROUTER.sets)
    # `down` removes what `up` made: both tables
    down = ROUTER_NET.split("\ndown() {", 1)[1].split("\n}", 1)[0]
    assert f'nft delete table {nftplan.ROUTER.family} "$NFT_TABLE"' in down
    assert f'nft delete table {nftplan.LAN_GUARD.family} "${{NFT_TABLE}}_lan"' in down


def test_router_net_sh_guards_lan_ports_as_planned():
    assert nftplan.LAN_GUARD.name == f"{nftplan.ROUTER.name}_lan"
    guard = ROUTER_NET.split("\nguard() {", 1)[1].split("\n}", 1)[0]
    assert f'nft add table {nftplan.LAN_GUARD.family} "${{NFT_TABLE}}_lan"' in guard
    chain = nftplan.LAN_GUARD.chain("in_<port>")
    declared = re.search(r'"in_\$p" \\\s*\n\s*"\{ (type .*?) \}"', guard).group(1)
    assert declared.replace('\\"', '"') == chain.header(device="$p")      # as bash hands it to nft


def test_the_dns_ruleset_is_the_plans_table():
    text = netfilter.ruleset("br0", "169.254.53.53", 5300, ("fd00:53::53", 5300))
    assert text.startswith(f"table {nftplan.DNS.family} {nftplan.DNS.name}\ndelete table")
    assert chains_in(text) == planned(nftplan.DNS)
    for name in nftplan.DNS.sets:
        assert f"set {name} " in text


def test_the_qos_ruleset_is_the_plans_table():
    member = qos_plan.Member("02:00:00:00:00:01", 1, "10.2.0.4/30")
    text = qos_plan.nft_text("wan0", "br0", [member], {}, [])
    assert text.startswith(f"table {nftplan.QOS.family} {nftplan.QOS.name}\ndelete table")
    assert chains_in(text) == planned(nftplan.QOS)


ADD_CHAIN = re.compile(r"^add chain (\w+) (\S+) (\S+)(?: \{ (type .*?) \})?$", re.M)


def test_the_reach_tables_are_the_plans():
    from homework.components.reach import plan as reach_plan
    text = reach_plan.setup("br0", "wan0", reach_plan.Upnp("10.2.255.1", 5000, ["10.2.0.2"], []))
    chains: dict[str, dict[str, tuple]] = {}
    for family, table, name, header in ADD_CHAIN.findall(text):
        chains.setdefault(f"{family} {table}", {})[name] = tuple(header.split()) if header else ()
    reach = {c.name: tuple(c.header().split()) if c.base else () for c in nftplan.REACH.chains}
    assert chains[f"inet {nftplan.REACH.name}"] == reach
    router = {c.name for c in nftplan.ROUTER.chains if c.filler}
    assert set(chains[f"inet {nftplan.ROUTER.name}"]) <= router        # the router's chains it fills
    for name in nftplan.REACH.sets:
        assert f"add set inet {nftplan.REACH.name} {name} " in text

