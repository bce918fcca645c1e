"""The remote devices and the router's own WireGuard key in state.db (tables `remote_peers`
and `remote_router`, migration 17), mirrored in memory. Written at once."""
from __future__ import annotations

from dataclasses import dataclass

from . import keys

NAME_LIMIT = 64


@dataclass(frozen=True)
class Peer:
    mac: str             # the device it is (a locally administered MAC the router made)
    index: int           # its place in the away namespace: interface rmt<index>, tables
    name: str
    private_key: str     # the client's (kept, so the household can show its configuration again)
    public_key: str
    preshared_key: str
    created: float

    def as_dict(self) -> dict:
        return {"mac": self.mac, "name": self.name, "public_key": self.public_key, "created": self.created}


class RemoteStore:
    def __init__(self, state):
        self.state = state
        self.peers: dict[str, Peer] = {}
        for r in state.execute("SELECT mac, idx, name, private_key, public_key, preshared_key, created "
                               "FROM remote_peers"):
            self.peers[r["mac"]] = Peer(r["mac"], r["idx"], r["name"], r["private_key"], r["public_key"],
                                        r["preshared_key"], r["created"])
        rows = state.execute("SELECT private_key FROM remote_router WHERE id = 1")
        if rows:
            self.router_key = rows[0]["private_key"]
        else:
            self.router_key = keys.new_private()
            state.execute("INSERT INTO remote_router (id, private_key) VALUES (1, ?)", (self.router_key,))

    def free_index(self) -> int:
        used = {p.index for p in self.peers.values()}
        return next(i for i in range(1, len(used) + 2) if i not in used)

    def add(self, mac: str, name: str, now: float) -> Peer:
        private = keys.new_private()
        peer = Peer(mac, self.free_index(), name, private, keys.public_of(private), keys.new_preshared(), now)
        self.state.execute("INSERT INTO remote_peers (mac, idx, name, private_key, public_key, preshared_key, created) "
                           "VALUES (?,?,?,?,?,?,?)", (peer.mac, peer.index, peer.name, peer.private_key,
                                                      peer.public_key, peer.preshared_key, peer.created))
        self.peers[mac] = peer
        return peer

    def remove(self, mac: str) -> Peer | None:
        peer = self.peers.pop(mac, None)
        if peer is not None:
            self.state.execute("DELETE FROM remote_peers WHERE mac=?", (mac,))
        return peer
