#!/usr/bin/env bash
# `make bench`: performance numbers, each section against its peer in the same run.
# Not a test.
# BENCH_SECTIONS="dhcp ..." runs only those sections (default: all).
set -euo pipefail
source "$(dirname "$0")/env.sh"
SECTIONS=${BENCH_SECTIONS:-all}

want() { [ "$SECTIONS" = all ] || [[ " $SECTIONS " == *" $1 "* ]]; }
section() { echo; echo "=== $1 ==="; }

bash scripts/teardown-stale.sh >/dev/null 2>&1 || true

if want dhcp; then
  section "DHCP (scripts/bench_dhcp.py)"
  "$PY" scripts/bench_dhcp.py
fi

if want ui; then
  section "Guest Board: DHCP -> label, drop -> first fetch (scripts/bench_ui.py)"
  "$PY" scripts/bench_ui.py
fi

if want dns; then
  section "DNS interception (scripts/bench_dns.py)"
  "$PY" scripts/bench_dns.py
fi

if want resolver; then
  section "The resolver: DNSSEC validation, DNS over TLS upstream, DoT/DoH to the router (scripts/bench_resolver.py)"
  "$PY" scripts/bench_resolver.py
fi

if want blocklists; then
  section "Blocklists: dnsperf with a 1,000,000-name list vs none, list load time (scripts/bench_blocklists.py)"
  "$PY" scripts/bench_blocklists.py
fi

if want routing; then
  section "Routing: new connections, bulk TCP, flow-table scaling (scripts/bench_routing.py)"
  "$PY" scripts/bench_routing.py
fi

if want usage; then
  section "Usage: accounting on vs off, storage per device per month (scripts/bench_usage.py)"
  "$PY" scripts/bench_usage.py
fi

if want ipv6; then
  section "IPv6 against IPv4: new connections, bulk TCP, DNS (scripts/bench_ipv6.py)"
  "$PY" scripts/bench_ipv6.py
fi

if want openflow; then
  section "OpenFlow encoding: the lean encoder vs os-ken, 1,000 devices' flows (scripts/bench_openflow.py)"
  "$PY" scripts/bench_openflow.py
fi

if want scale; then
  section "Scale: idle CPU and RSS of the whole router (the image's components, IPv6 on) at 3 / 100 / 1,000 permitted devices (scripts/bench_scale.py)"
  "$PY" scripts/bench_scale.py
fi

if want crowd; then
  section "Crowd: 1,000 devices through one port at 100/s, then permitted at once; the image's components vs dhcp+routing (scripts/bench_crowd.py)"
  "$PY" scripts/bench_crowd.py
fi

if want kernel; then
  section "Kernel datapath inside the image's VM: Homework vs plain kernel forwarding + nftables NAT (scripts/bench_kernel.sh)"
  bash scripts/bench_kernel.sh
fi

if want satellites; then
  section "Satellites: 1 / 4 / 8 datapaths of 50 devices, DHCP, permit, roaming, idle CPU vs the router alone (scripts/bench_satellites.py)"
  "$PY" scripts/bench_satellites.py
fi

if want hwdb; then
  section "hwdb vs SQLite :memory: (make -C hwdb bench)"
  make --no-print-directory -C hwdb bench
fi

if want update; then
  section "Updates: .hwup size, install time (upload to ready-to-reboot) vs zstd -dc into the slot by hand (scripts/bench_update.py)"
  "$PY" scripts/bench_update.py
fi

if want security; then
  section "Security: twelve devices guessing the admin password, checks off the event loop vs on it (scripts/bench_security.py)"
  "$PY" scripts/bench_security.py
fi

if want reach; then
  section "Reaching in: a port forward vs plain Linux DNAT, WireGuard vs plain wireguard-go (scripts/bench_reach.py)"
  "$PY" scripts/bench_reach.py
fi

if want isp; then
  section "ISP edge: three households on a backhaul below their lines; A's call with and without placement at the edge (scripts/bench_isp.py)"
  "$PY" scripts/bench_isp.py
fi

if want qos; then
  section "QoS: latency under load behind a slow link with a deep modem buffer, Homework's shaping vs none vs HTB by hand (scripts/bench_qos.py)"
  "$PY" scripts/bench_qos.py
fi

if want api; then
  section "API contract: a request body read into its model vs hand-written checks vs Debian's pydantic and jsonschema; a whole request (scripts/bench_api.py)"
  "$PY" scripts/bench_api.py
fi

if want radio; then
  section "Radio monitor: CPU with 50 stations, signal change -> label opacity (scripts/bench_radio.py)"
  "$PY" scripts/bench_radio.py
fi

if want identify; then
  section "Identification: the controller's CPU per new device with it off and on (the DISCOVER's handler, identify's timer, both), in one run; bad input; memory per device (scripts/bench_identify.py; homework-dhcpd's side is the DHCP section's homework-dhcpd+identify column)"
  "$PY" scripts/bench_identify.py
fi
