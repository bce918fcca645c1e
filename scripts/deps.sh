#!/usr/bin/env bash
# Idempotent set-up of everything Homework needs on a Debian 12 machine:
# Debian packages (the real daemons and clients we build on), a Python venv that
# sees Debian's os-ken, Node packages for the browser tests, and the hwdb build.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  # data plane and controller
  openvswitch-switch python3-os-ken python3-venv iproute2 iputils-ping ethtool nftables python3-nftables iptables conntrack
  # router services
  dnsmasq-base unbound dns-root-data hostapd wpasupplicant lighttpd lighttpd-mod-openssl libjs-jquery ieee-data radvd sqlite3 openssl
  libjs-chart.js  # Guest Board charts, served by lighttpd at /lib/chart.js/
  # real DHCP clients used by the emulated home and tests
  isc-dhcp-client udhcpc dhcpcd-base
  # test and benchmark tools
  python3-scapy python3-zeroconf kea-admin kea-dhcp6-server bind9-dnsutils dnsperf nghttp2-client iperf3 hping3 wrk curl procps psmisc
  nsd ldnsutils knot-dnsutils tcpdump   # signed zones in the emulated internet, kdig (DoT/DoH), sniffing the WAN
  # integrations: Prometheus exposition format, and Prometheus itself for its test
  python3-prometheus-client prometheus python3-paho-mqtt mosquitto mosquitto-clients
  python3-cryptography    # settings backup: scrypt + AES-GCM
  python3-dnspython       # the resolver's looks at its upstreams (components/dns/probe.py)
  # reaching in: miniupnpd (the router's), its clients for the tests (upnpc, natpmpc), nmap for what the
  # internet sees; remote access: WireGuard's tools, wireguard-go (no kernel module here), qrencode
  miniupnpd-nftables miniupnpc natpmpc nmap wireguard-tools wireguard-go qrencode
  # static checks (make lint)
  shellcheck
  # image build and boot test
  mmdebstrap qemu-system-x86 qemu-utils ovmf grub-pc-bin grub-efi-amd64-bin systemd-boot-efi
  dosfstools mtools fdisk e2fsprogs zstd
  # the boot test reads the router's own screen (OCR of a QMP screendump) and a wall tablet's pairing QR code
  tesseract-ocr tesseract-ocr-eng zbar-tools
  # browser tests
  chromium
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Other set-ups on the same machine may hold the dpkg lock: wait for it rather than fail.
  apt-get -o DPkg::Lock::Timeout=900 update -q
  apt-get -o DPkg::Lock::Timeout=900 install -y -q --no-install-recommends "${missing[@]}"
fi

# Python venv on Debian's interpreter so Debian's os-ken is importable.
VENV=.venv
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import os_ken' 2>/dev/null; then
  rm -rf "$VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
# PyPI test tools: reinstalled whenever tests/requirements.txt changes.
want=$(sha256sum tests/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$VENV/.requirements.sha256" 2>/dev/null)" != "$want" ]; then
  "$VENV/bin/pip" install -q -r tests/requirements.txt
  echo "$want" >"$VENV/.requirements.sha256"
fi

# Node: playwright-core drives Debian's chromium (no browser download).
if [ -f tests/package.json ] && { [ ! -d tests/node_modules/playwright-core ] || [ tests/package-lock.json -nt tests/node_modules/.package-lock.json ]; }; then
  (cd tests && npm ci --no-audit --no-fund --silent)
fi

# homework-dnsd: the DNS interception data path (Rust, std only).
if [ -f dnsd/Cargo.toml ]; then (cd dnsd && cargo build --release -q); fi
# homework-dhcpd: answers decided DHCP leases off the controller (Rust).
if [ -f dhcpd/Cargo.toml ]; then (cd dhcpd && cargo build --release -q); fi
# hwdb: the Rust database daemon, CLI and its library.
if [ -f hwdb/Cargo.toml ]; then
  (cd hwdb && cargo build --release -q)
fi
echo "deps: ok"
