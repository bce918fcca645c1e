"""Blocklists component: subscriptions the household adds by URL, and safe-search.

  - add: fetch, parse (parse.py), store (store.py: a row and a file of names), then put
    the list in force: the dns component's policy twin gets it (reverse check) and
    homework-dnsd reads the file (`list ID MACS PATH`, dnsd/src/control.rs);
  - refresh: every [blocklists] refresh_interval and on demand; a failed fetch changes
    nothing (the previous names stay, the error is shown);
  - owner lists apply to the devices whose `owner` is that name (or the device with that
    MAC); the MAC set is resent when devices change owner;
  - safe-search: `safesearch on|off` to dnsd; [dns] safe_search until set here.

Precedence (dnsd/src/policy.rs, dns/policy.py): explicit rules first, then lists.
"""
from __future__ import annotations

import threading
from pathlib import Path

from ...commands import CommandError
from ...component import Component
from ...macaddr import BadMac, normalize
from ...worker import offload
from .fetch import FetchError, check_url, fetch
from .parse import ListError, parse
from .store import SortedNames, Store, write_names
from ...interfaces import DnsLists

HOUSEHOLD = "*"
CHECK_EVERY = 60            # seconds between looks for lists due a refresh
MAX_OWNER = 64


def owner_of(owner) -> str:
    if owner is None or owner in ("", HOUSEHOLD, "household"):
        return HOUSEHOLD
    if not isinstance(owner, str) or not owner.strip() or len(owner) > MAX_OWNER or any(ord(c) < 0x20 for c in owner):
        raise ValueError(f"owner must be a name of at most {MAX_OWNER} printable characters")
    return owner.strip()


class BlocklistsComponent(Component):
    name = "blocklists"

    def __init__(self, ctx, dns: DnsLists | None = None):
        super().__init__(ctx)
        self.dns = dns      # what the dns component offers (interfaces.py); None: it is not loaded
        self.store = Store(ctx.state, Path(ctx.config.state_dir) / "blocklists")
        self._lock = threading.RLock()
        self.loaded: dict[int, SortedNames] = {}
        self.macs: dict[int, frozenset | None] = {}     # what dnsd has for each list
        self.safe_search = bool(ctx.config.dns_safe_search)

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        option = self.store.option("safe_search")
        if option is not None:
            self.safe_search = option == "on"
        if self.dns is None:
            self.log.warning("the dns component is not loaded: blocklists and safe-search are stored but not enforced")
        for row in self.store.all():
            try:
                self._install(row, push=False)
            except OSError as exc:
                # the file is gone (state dir restored without it): fetched again when due
                self.log.warning("blocklist %s: cannot read its names (%s); fetching it again", row["id"], exc)
                self.store.failed(row["id"], f"names file missing: {exc}", 0)
        if self.dns is not None:
            self.dns.resend_on_reconnect(self._dnsd_lines)
            self.dns.send(self._dnsd_lines())
        self.ctx.bus.subscribe("device", self._on_device)
        self._register_commands()
        self.ctx.every(min(CHECK_EVERY, self.ctx.config.blocklists_refresh_interval), self._refresh_due)

    # -- what dnsd and the policy twin get ---------------------------------------------------
    def _owner_macs(self, owner: str) -> frozenset | None:
        if owner == HOUSEHOLD:
            return None
        macs = {d.mac for d in self.ctx.state.devices() if (d.owner or "").strip() == owner}
        try:
            macs.add(normalize(owner))
        except BadMac:
            pass
        return frozenset(macs)

    def _list_line(self, list_id: int) -> str:
        macs = self.macs[list_id]
        text = HOUSEHOLD if macs is None else (",".join(sorted(macs)) or "-")
        return f"list {list_id} {text} {self.store.path(list_id)}"

    def _dnsd_lines(self) -> list[str]:
        with self._lock:
            lines = [self._list_line(i) for i in sorted(self.loaded)]
        return lines + [f"safesearch {'on' if self.safe_search else 'off'}"]

    def _install(self, row: dict, push: bool = True) -> None:
        """Put a stored list in force (again, after a refresh)."""
        list_id = row["id"]
        names = SortedNames(self.store.path(list_id))
        macs = self._owner_macs(row["owner"])
        with self._lock:
            self.loaded[list_id] = names
            self.macs[list_id] = macs
        if self.dns is not None:
            self.dns.set_list(str(list_id), macs, names)
            if push and not self.dns.send([self._list_line(list_id)]):
                self.log.warning("homework-dnsd did not confirm list %s; it gets it on reconnect", list_id)

    def _on_device(self, topic: str, ev: dict) -> None:
        """An owner's devices changed: resend that owner's lists with the new MAC set."""
        changed = []
        with self._lock:
            for list_id in list(self.loaded):
                row = self.store.get(list_id)
                if row is None or row["owner"] == HOUSEHOLD:
                    continue
                macs = self._owner_macs(row["owner"])
                if macs != self.macs.get(list_id):
                    self.macs[list_id] = macs
                    changed.append(list_id)
        if changed and self.dns is not None:
            for list_id in changed:
                self.dns.set_list(str(list_id), self.macs[list_id], self.loaded[list_id])
            self.dns.send([self._list_line(i) for i in changed])

    # -- fetching --------------------------------------------------------------------------
    def _download(self, url: str):
        """Fetch and parse; the names go to a temporary file. FetchError/ListError on failure."""
        text = fetch(url, timeout=self.ctx.config.blocklists_fetch_timeout, cap=self.ctx.config.blocklists_max_bytes)
        return offload(parse, text)

    def add(self, url, owner=None) -> dict:
        url = check_url(url)
        owner = owner_of(owner)
        if self.store.find(url, owner) is not None:
            raise ValueError(f"{url} is already subscribed for {'the household' if owner == HOUSEHOLD else owner}")
        parsed = self._download(url)
        now = self.ctx.now()
        staged = self.store.staging_path()
        offload(write_names, staged, parsed)
        list_id = self.store.add(url, owner, parsed, now, staged)
        self._install(self._row(list_id))
        self.log.info("blocklist %s added: %s (%d names, %d lines skipped)", list_id, url, parsed.rules, parsed.skipped)
        return self.view(list_id)

    def refresh(self, list_id) -> dict:
        row = self._row(list_id)
        try:
            parsed = self._download(row["url"])
        except (FetchError, ListError) as exc:
            self.store.failed(row["id"], str(exc), self.ctx.now())
            raise ValueError(f"refresh failed, the previous names stay in force: {exc}") from None
        offload(write_names, self.store.path(row["id"]), parsed)
        self.store.refreshed(row["id"], parsed, self.ctx.now())
        self._install(self._row(row["id"]))
        return self.view(row["id"])

    def _refresh_due(self) -> None:
        now = self.ctx.now()
        for row in self.store.all():
            if row["enabled"] and (row["checked"] or 0) + self.ctx.config.blocklists_refresh_interval <= now:
                try:
                    self.refresh(row["id"])
                    self.log.info("blocklist %s refreshed", row["id"])
                except ValueError as exc:
                    self.log.warning("blocklist %s: %s", row["id"], exc)

    def remove(self, list_id) -> dict:
        row = self._row(list_id)
        with self._lock:
            self.loaded.pop(row["id"], None)
            self.macs.pop(row["id"], None)
        if self.dns is not None:
            self.dns.remove_list(str(row["id"]))
            self.dns.send([f"unlist {row['id']}"])
        self.store.remove(row["id"])
        return {"removed": row["id"], "url": row["url"]}

    def set_safe_search(self, enabled=None) -> dict:
        if enabled is not None:
            if isinstance(enabled, str) and enabled.lower() in ("on", "off", "true", "false"):
                enabled = enabled.lower() in ("on", "true")
            if not isinstance(enabled, bool):
                raise ValueError("enabled must be true or false (or on/off)")
            self.store.set_option("safe_search", "on" if enabled else "off")
            self.safe_search = enabled
            if self.dns is not None:
                self.dns.send([f"safesearch {'on' if enabled else 'off'}"])
        return {"enabled": self.safe_search}

    # -- views -----------------------------------------------------------------------------
    def _row(self, list_id) -> dict:
        try:
            number = int(list_id)
        except (TypeError, ValueError):
            raise ValueError(f"a blocklist id is a number, not {list_id!r}") from None
        row = self.store.get(number)
        if row is None:
            raise CommandError(f"no blocklist with id {number}", 404)
        return row

    def _blocked_counts(self) -> dict:
        stats = self.dns.stats() if self.dns is not None else {}
        return {int(k.split(".", 1)[1]): v for k, v in stats.items()
                if k.startswith("list_blocked.") and k.split(".", 1)[1].isdigit() and isinstance(v, int)}

    def _shape(self, row: dict, counts: dict) -> dict:
        out = dict(row)
        out["owner"] = "household" if row["owner"] == HOUSEHOLD else row["owner"]
        out["enabled"] = bool(row["enabled"])
        out["blocked_queries"] = counts.get(row["id"], 0)
        out["devices"] = None if row["owner"] == HOUSEHOLD else sorted(self.macs.get(row["id"]) or ())
        return out

    def view(self, list_id: int) -> dict:
        return self._shape(self._row(list_id), self._blocked_counts())

    def list_view(self) -> dict:
        counts = self._blocked_counts()
        return {"blocklists": [self._shape(r, counts) for r in self.store.all()], "safe_search": self.safe_search}

    def _register_commands(self) -> None:
        cmd = self.ctx.commands.register
        cmd("blocklists", self.list_view)
        cmd("blocklist-add", lambda url, owner=None: self.add(url, owner))
        cmd("blocklist-refresh", lambda id: self.refresh(id))
        cmd("blocklist-remove", lambda id: self.remove(id))
        cmd("safe-search", lambda enabled=None: self.set_safe_search(enabled))
