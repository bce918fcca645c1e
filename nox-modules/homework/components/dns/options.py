"""The household's DNS settings in state.db's dns_options table (key -> text), where
the board, the API, the CLI and a restore all put them; each overrides the config
file's value for the same setting once set."""
from __future__ import annotations


class DnsOptions:
    def __init__(self, state):
        self.state = state

    def get(self, key: str) -> str | None:
        rows = self.state.execute("SELECT value FROM dns_options WHERE key=?", (key,))
        return rows[0]["value"] if rows else None

    def set(self, key: str, value: str) -> None:
        self.state.execute("INSERT INTO dns_options (key, value) VALUES (?,?) "
                           "ON CONFLICT(key) DO UPDATE SET value=excluded.value", (key, value))
