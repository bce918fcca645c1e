"""Blocklists component: subscriptions the household adds by URL, and safe-search.

  - add: fetch (httpout.py: a total deadline, never to a local address unless the
    household allowed it), compile in a process of its own (compile.py: streamed into
    dnsd's sorted file, never a Python set), check the caps ([blocklists] max_names per
    list, max_names_total for all), store (store.py: a row and the file), then put the
    list in force: the dns component's policy twin gets it (reverse check, the file by
    binary search) and homework-dnsd reads the file (`list ID MACS PATH`, dnsd/src/control.rs);
  - refresh: every [blocklists] refresh_interval and on demand; a failed fetch changes
    nothing (the previous names stay, the error is shown);
  - owner lists apply to the devices whose `owner` is that name (or the device with that
    MAC); the MAC set is resent when devices change owner;
  - safe-search: `safesearch on|off` to dnsd; [dns] safe_search until set here.

Precedence (dnsd/src/policy.rs, dns/policy.py): explicit rules first, then lists.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from ...commands import CommandError
from ...component import Component
from ...macaddr import BadMac, normalize
from ...httpout import HttpOutError, download
from ...netguard import Guard, LocalAddress, household_networks_of
from ...values import row_id
from .compile import Compiled
from .fetch import FetchError, check_url
from .parse import ListError
from .store import SortedNames, Store
from ...interfaces import DnsLists, RestoredLists

HOUSEHOLD = "*"
CHECK_EVERY = 60            # seconds between looks for lists due a refresh
MAX_OWNER = 64
FETCHING = "its names are being fetched again"
COMPILE_SECONDS = 600       # a list of [blocklists] max_names names takes seconds; a stuck one is stopped
PACKAGE_ROOT = Path(__file__).resolve().parents[3]     # the directory holding `homework`


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
        self.guard = Guard(household_networks_of(ctx), ctx.host.interfaces)

    def offer(self, interface: type) -> object:
        if interface is RestoredLists:
            return self
        return super().offer(interface)

    # -- life cycle ------------------------------------------------------------------------
    def start(self) -> None:
        option = self.store.option("safe_search")
        if option is not None:
            self.safe_search = option == "on"
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
    def _download(self, url: str, allow_local: bool, besides: int | None = None) -> tuple[Path, Compiled]:
        """Fetch and compile into a staged names file: (its path, its counts). FetchError or
        ListError on failure (nothing is left behind). `besides`: the list being
        refreshed, whose old names do not count towards the household's total."""
        cfg = self.ctx.config
        self.store.dir.mkdir(parents=True, exist_ok=True)
        staged = self.store.staging_path()
        raw = staged.with_name(staged.name + ".raw")
        try:
            try:
                download(url, raw, cap=cfg.blocklists_max_bytes, seconds=cfg.blocklists_fetch_timeout,
                         guard=self.guard, allow_local=allow_local,
                         headers={"User-Agent": "homework-router blocklists"})
            except HttpOutError as exc:
                raise FetchError(f"cannot fetch the list: {exc}") from None
            compiled = self._compile(raw, staged, cfg.blocklists_max_names)
            total = self.store.total_names(besides) + compiled.rules
            if total > cfg.blocklists_max_names_total:
                raise ListError(f"with this list's {compiled.rules:,} names the lists would hold {total:,}, more "
                                f"than the {cfg.blocklists_max_names_total:,} the router keeps in all "
                                "([blocklists] max_names_total): remove a list first")
            return staged, compiled
        except BaseException:
            staged.unlink(missing_ok=True)
            raise
        finally:
            raw.unlink(missing_ok=True)

    @staticmethod
    def _compile(raw: Path, staged: Path, max_names: int) -> Compiled:
        """compile.py in a process of its own (under eventlet, a green wait)."""
        try:
            res = subprocess.run([sys.executable, "-m", "homework.components.blocklists.compile", str(raw),
                                  str(staged), "--max-names", str(max_names)], capture_output=True, text=True,
                                 timeout=COMPILE_SECONDS, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                                                               "PYTHONPATH": str(PACKAGE_ROOT)})
            answer = json.loads(res.stdout.strip().splitlines()[-1])
        except subprocess.TimeoutExpired:
            raise ListError(f"reading the list took more than {COMPILE_SECONDS} s") from None
        except (ValueError, IndexError, OSError):
            raise ListError("the list could not be read (see the controller log)") from None
        if "error" in answer:
            raise ListError(answer["error"])
        return Compiled(**answer)

    def add(self, url, owner=None, allow_local=False) -> dict:
        url = check_url(url)
        owner = owner_of(owner)
        if not isinstance(allow_local, bool):
            raise ValueError("allow_local must be true or false")
        if self.store.find(url, owner) is not None:
            raise ValueError(f"{url} is already subscribed for {'the household' if owner == HOUSEHOLD else owner}")
        parts = urlsplit(url)
        try:
            self.guard.check_url_host(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80),
                                      allow_local)
        except LocalAddress as exc:
            raise ValueError(f"blocklist refused: {exc}") from None
        staged, compiled = self._download(url, allow_local)
        list_id = self.store.add(url, owner, compiled, self.ctx.now(), staged, allow_local)
        self._install(self._row(list_id))
        self.log.info("blocklist %s added: %s (%d names, %d lines skipped)", list_id, url, compiled.rules,
                      compiled.skipped)
        return self.view(list_id)

    def refresh(self, list_id) -> dict:
        row = self._row(list_id)
        try:
            staged, compiled = self._download(row["url"], bool(row["allow_local"]), besides=row["id"])
        except (FetchError, ListError) as exc:
            self.store.failed(row["id"], str(exc), self.ctx.now())
            raise ValueError(f"refresh failed, the previous names stay in force: {exc}") from None
        self.store.refreshed(row["id"], compiled, self.ctx.now(), staged)
        self._install(self._row(row["id"]))
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
    def prefetch(self, rows) -> dict:
        """Fetch and compile the lists of a backup before the restore writes anything:
        url -> (a staged names file, its counts) or the problem, in the household's words."""
        out: dict = {}
        for row in rows:
            url = row["url"]
            if url in out:
                continue
            try:
                out[url] = self._download(check_url(url), bool(row.get("allow_local", False)))
            except (FetchError, ListError, ValueError) as exc:
                out[url] = f"The blocklist {url} could not be fetched ({exc}): it applies once it is."
        return out

    def adopt(self, prefetched: dict) -> list[str]:
        """After the restore's transaction: each restored list gets its prefetched names
        under its new id (a URL subscribed twice, for two owners, gets a copy); the
        problems, in words."""
        problems, now = [], self.ctx.now()
        for row in self.store.all():
            got = prefetched.get(row["url"])
            if isinstance(got, tuple):
                staged, compiled = got
                if not staged.exists():          # the same URL's second row
                    copy = self.store.staging_path()
                    shutil.copyfile(self.store.path(self._first_of(row["url"])), copy)
                    staged = copy
                self.store.refreshed(row["id"], compiled, now, staged)
            elif isinstance(got, str):
                problems.append(got)
                self.store.failed(row["id"], got, 0)
        return problems

    def _first_of(self, url: str) -> int:
        return min(r["id"] for r in self.store.all() if r["url"] == url)

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
        number = row_id(list_id, "blocklist")
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
        out["allow_local"] = bool(row["allow_local"])
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
        cmd("blocklist-add", lambda url, owner=None, allow_local=False: self.add(url, owner, allow_local))
        cmd("blocklist-refresh", lambda id: self.refresh(id))
        cmd("blocklist-remove", lambda id: self.remove(id))
        cmd("safe-search", lambda enabled=None: self.set_safe_search(enabled))
