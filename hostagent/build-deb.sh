#!/usr/bin/env bash
# Build the agent's Debian package: out/homework-agent_<version>_all.deb (dpkg-deb only).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../out}
version=$(python3 "$here/homework-agent" --version)
stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
install -D -m 0755 "$here/homework-agent" "$stage/usr/bin/homework-agent"
install -D -m 0644 "$here/homework-agent.service" "$stage/lib/systemd/system/homework-agent.service"
install -D -m 0600 "$here/homework-agent.conf" "$stage/etc/homework-agent.conf"
install -D -m 0644 "$here/README.md" "$stage/usr/share/doc/homework-agent/README.md"
mkdir -p "$stage/DEBIAN"
sed "s/@VERSION@/$version/" "$here/debian/control" >"$stage/DEBIAN/control"
echo /etc/homework-agent.conf >"$stage/DEBIAN/conffiles"
mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/homework-agent_${version}_all.deb" >/dev/null
echo "$out/homework-agent_${version}_all.deb"
