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

import os
import threading
from pathlib import Path

from ...commands import CommandError
from ...component import Component
from ...macaddr import BadMac, normalize
from ...worker import offload
from .fetch import FetchError, check_url, fetch
from .parse import ListError, parse
from .store import SortedNames, Store, write_names

HOUSEHOLD = "*"
CHECK_EVERY = 60            # seconds between looks for lists due a refresh
FETCHING = "its names are being fetched again"
MAX_OWNER = 64


def owner_of(owner) -> str:
    if owner is None or owner in ("", HOUSEHOLD, "household"):
        return HOUSEHOLD
    if not isinstance(owner, str) or not owner.strip() or len(owner) > MAX_OWNER or any(ord(c) < 0x20 for c in owner):
        raise ValueError(f"owner must be a name of at most {MAX_OWNER} printable characters")
    return owner.strip()


class BlocklistsComponent(Component):
    name = "blocklists"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.store = Store(ctx.state, Path(ctx.config.state_dir) / "blocklists")
        self._lock = threading.RLock()
        self.loaded: dict[int, SortedNames] = {}
        self.macs: dict[int, frozenset | None] = {}     # what dnsd has for each list
        self.safe_search = bool(ctx.config.dns_safe_search)
        self.dns = None

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        option = self.store.option("safe_search")
        if option is not None:
            self.safe_search = option == "on"
        self.dns = self.ctx.component("dns")
        if self.dns is None:
            self.log.warning("the dns component is not loaded: blocklists and safe-search are stored but not enforced")
        missing = []
        for row in self.store.all():
            try:
                self._install(row, push=False)
            except OSError as exc:
                # the file is gone (state dir restored without it): fetched again at once
                self.log.warning("blocklist %s: cannot read its names (%s); fetching it again", row["id"], exc)
                self.store.failed(row["id"], FETCHING, 0)
                missing.append(row["id"])
        if missing:
            threading.Thread(target=self._fetch_missing, args=(missing,), daemon=True,
                             name="blocklists-missing").start()
        if self.dns is not None:
            self.dns.snapshot_sources.append(self._dnsd_lines)
            self.dns.push_lines(self._dnsd_lines())
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
            self.dns.policy.set_list(str(list_id), macs, names)
            if push and not self.dns.push_lines([self._list_line(list_id)]):
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
                self.dns.policy.set_list(str(list_id), self.macs[list_id], self.loaded[list_id])
            self.dns.push_lines([self._list_line(i) for i in changed])

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
        self._install(self.store.get(list_id))
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
        self._install(self.store.get(row["id"]))
        return self.view(row["id"])

    def _fetch_missing(self, list_ids: list[int]) -> None:
        for list_id in list_ids:
            try:
                self.refresh(list_id)
                self.log.info("blocklist %s fetched again", list_id)
            except (ValueError, CommandError) as exc:
                self.log.warning("blocklist %s: %s", list_id, exc)

    def pending(self) -> list[int]:
        """Enabled lists whose names are not in force yet and are still to be fetched (not
        those whose fetch failed: their error is shown)."""
        with self._lock:
            return [row["id"] for row in self.store.all() if row["enabled"] and row["id"] not in self.loaded
                    and row["error"] in ("", FETCHING)]

    # -- a restore brings its lists' names with it (components/backup) ------------------------
    def prefetch(self, urls) -> dict:
        """Fetch and parse these lists before a restore writes anything: url -> (a staged
        file of its names, the parse) or the error, in the household's words."""
        out: dict = {}
        for url in dict.fromkeys(urls):
            try:
                parsed = self._download(check_url(url))
                staged = self.store.staging_path()
                offload(write_names, staged, parsed)
                out[url] = (staged, parsed)
            except (FetchError, ListError, ValueError) as exc:
                out[url] = f"{url} could not be fetched ({exc}): it applies once it is"
        return out

    def adopt(self, prefetched: dict) -> list[str]:
        """After the restore's transaction: each restored list gets its prefetched names
        under its new id (a URL subscribed twice, for two owners, is written twice); the
        problems, in words."""
        problems, now = [], self.ctx.now()
        for row in self.store.all():
            got = prefetched.get(row["url"])
            if isinstance(got, tuple):
                staged, parsed = got
                if staged.exists():
                    os.replace(staged, self.store.path(row["id"]))
                else:
                    offload(write_names, self.store.path(row["id"]), parsed)
                self.store.stats(row["id"], parsed, now)
            elif isinstance(got, str):
                problems.append(got)
                self.store.failed(row["id"], got, 0)
        return problems

    def drop_prefetched(self, prefetched: dict) -> None:
        """A restore that wrote nothing: its staged files go."""
        for got in prefetched.values():
            if isinstance(got, tuple):
                got[0].unlink(missing_ok=True)

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
            self.dns.policy.remove_list(str(row["id"]))
            self.dns.push_lines([f"unlist {row['id']}"])
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
                self.dns.push_lines([f"safesearch {'on' if enabled else 'off'}"])
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
        link = self.dns.link if self.dns is not None else None
        stats = link.stats() if link is not None else {}
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
