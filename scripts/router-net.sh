#!/usr/bin/env bash
# Homework router network bring-up: the OVS bridge the controller drives, the LAN
# ports, router sysctls and NAT out of the WAN interface.
#
#   scripts/router-net.sh up   [options]    # idempotent: safe to run again
#   scripts/router-net.sh down [options]    # removes what `up` made
#   scripts/router-net.sh status [options]
#   scripts/router-net.sh guard PORT...     # keep the router's own stack off LAN ports
#                                            (done by `up` for --lan-ports; call it for
#                                            ports added later, e.g. by the emulated home)
#
# Used unchanged by the emulated home (inside the router's network namespace, with
# OVS_RUNDIR pointing at that run's private OVS) and by the real image (root
# namespace, system OVS).
#
# Options (each also read from the environment variable in brackets):
#   --bridge NAME          [BRIDGE]          default br0
#   --datapath-type T      [DATAPATH_TYPE]   netdev | system, default netdev
#   --wan IF               [WAN_IF]          default wan0; empty: no NAT
#   --lan-ports "P1 P2"    [LAN_PORTS]       ports added to the bridge (space or comma separated)
#   --controller TARGET    [CONTROLLER]      default tcp:127.0.0.1:6653; "none": standalone
#                                            bridge with one NORMAL flow (benchmark baseline)
#   --hwaddr MAC           [HWADDR]          pinned MAC of the LOCAL interface, default 02:68:77:00:00:01
#   --state-dir DIR        [ROUTER_NET_STATE] where `up` remembers sysctl values for `down`,
#                                            default /run/homework
#   (environment only)     [WEB_CONNS]       connections one LAN device may hold open to the
#                                            router's web servers at a time, default 64
set -euo pipefail

BRIDGE=${BRIDGE:-br0}
DATAPATH_TYPE=${DATAPATH_TYPE:-netdev}
WAN_IF=${WAN_IF-wan0}
LAN_PORTS=${LAN_PORTS:-}
CONTROLLER=${CONTROLLER:-tcp:127.0.0.1:6653}
HWADDR=${HWADDR:-02:68:77:00:00:01}
ROUTER_NET_STATE=${ROUTER_NET_STATE:-/run/homework}
WEB_CONNS=${WEB_CONNS:-64}
NFT_TABLE=homework

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

action=${1:-}
[ -n "$action" ] || usage 2
shift
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bridge) BRIDGE=$2; shift 2 ;;
    --datapath-type) DATAPATH_TYPE=$2; shift 2 ;;
    --wan) WAN_IF=$2; shift 2 ;;
    --lan-ports) LAN_PORTS=$2; shift 2 ;;
    --controller) CONTROLLER=$2; shift 2 ;;
    --hwaddr) HWADDR=$2; shift 2 ;;
    --state-dir) ROUTER_NET_STATE=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    -*) echo "router-net: unknown option $1" >&2; usage 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done

die() { echo "router-net: $*" >&2; exit 1; }
log() { echo "router-net: $*" >&2; }

case "$DATAPATH_TYPE" in netdev|system) ;; *) die "DATAPATH_TYPE must be netdev or system, got '$DATAPATH_TYPE'" ;; esac
[[ "$BRIDGE" =~ ^[A-Za-z0-9_.-]{1,15}$ ]] || die "bad bridge name '$BRIDGE'"
[[ "$HWADDR" =~ ^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$ ]] || die "bad HWADDR '$HWADDR'"
LAN_PORTS=${LAN_PORTS//,/ }

VSCTL=(ovs-vsctl --timeout=10)
SYSCTL_FILE="$ROUTER_NET_STATE/router-net.$BRIDGE.sysctl"

sysctl_keys() {
  echo net.ipv4.ip_forward
  echo net.ipv4.conf.all.send_redirects
  echo net.ipv4.conf.default.send_redirects
  echo "net.ipv4.conf.$BRIDGE.send_redirects"
  echo net.ipv4.conf.all.accept_redirects
  [ -d /proc/sys/net/ipv6 ] && echo net.ipv6.conf.all.forwarding
  echo net.ipv4.conf.default.accept_redirects
}

wait_for_link() {
  local _
  for _ in $(seq 1 100); do
    ip link show dev "$1" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  return 1
}

up() {
  # 1. The bridge. Every setting is re-applied, so `up` after a partial `up` converges.
  "${VSCTL[@]}" --may-exist add-br "$BRIDGE" \
    -- set bridge "$BRIDGE" datapath_type="$DATAPATH_TYPE" protocols=OpenFlow13 \
       other-config:hwaddr="$HWADDR" other-config:disable-in-band=true
  if [ "$CONTROLLER" = none ]; then
    "${VSCTL[@]}" del-controller "$BRIDGE" -- set bridge "$BRIDGE" fail_mode=standalone
  else
    # max_backoff 1 s: reconnect quickly after a controller (re)start. inactivity_probe 30 s
    # (Open vSwitch's default is 5): the controller is on loopback, so a dead one is seen at
    # once (its socket closes), while one busy for a few seconds (resynchronising a home of
    # a thousand devices after a reconnect) must not be cut off and have to start again.
    "${VSCTL[@]}" set bridge "$BRIDGE" fail_mode=secure -- set-controller "$BRIDGE" "$CONTROLLER" \
      -- set controller "$BRIDGE" max_backoff=1000 inactivity_probe=30000
  fi
  local p
  for p in $LAN_PORTS; do
    ip link show dev "$p" >/dev/null 2>&1 || die "LAN port $p does not exist"
    # A LAN port the household let a found satellite take as its cable stays on
    # its demux bridge across a reboot: the controller gives it back if the satellite goes.
    case $("${VSCTL[@]}" port-to-br "$p" 2>/dev/null) in hwsat*) continue ;; esac
    "${VSCTL[@]}" --may-exist add-port "$BRIDGE" "$p"
    guard "$p"
    ip link set dev "$p" up
    # The userspace datapath never completes partial checksums (see sandbox notes).
    if [ "$DATAPATH_TYPE" = netdev ]; then ethtool -K "$p" tx off >/dev/null 2>&1 || true; fi
  done
  if [ "$CONTROLLER" = none ]; then
    ovs-ofctl -O OpenFlow13 replace-flows "$BRIDGE" - <<<"priority=0,actions=NORMAL"
  fi

  # 2. The LOCAL interface is the router's own stack; the controller adds one .1/30 per lease.
  wait_for_link "$BRIDGE" || die "bridge interface $BRIDGE did not appear"
  ip link set dev "$BRIDGE" up
  if [ "$DATAPATH_TYPE" = netdev ]; then ethtool -K "$BRIDGE" tx off >/dev/null 2>&1 || true; fi

  # 3. Sysctls; first `up` remembers the old values so `down` can put them back.
  mkdir -p "$ROUTER_NET_STATE"
  if [ ! -f "$SYSCTL_FILE" ]; then
    local k tmp="$SYSCTL_FILE.tmp"
    : >"$tmp"
    for k in $(sysctl_keys); do echo "$k=$(sysctl -n "$k")" >>"$tmp"; done
    mv "$tmp" "$SYSCTL_FILE"
  fi
  sysctl -q -w net.ipv4.ip_forward=1 \
    net.ipv4.conf.all.send_redirects=0 net.ipv4.conf.default.send_redirects=0 \
    "net.ipv4.conf.$BRIDGE.send_redirects=0" \
    net.ipv4.conf.all.accept_redirects=0 net.ipv4.conf.default.accept_redirects=0 >/dev/null
  # IPv6 (when the controller's [ipv6] is on): the router is fe80::1 on the LAN side and
  # routes; each device's /64 is routed to it by the controller. The WAN still takes the
  # ISP's Router Advertisements while forwarding (accept_ra=2).
  if [ -d /proc/sys/net/ipv6 ]; then     # a kernel booted with ipv6.disable=1 has none
    sysctl -q -w net.ipv6.conf.all.forwarding=1 "net.ipv6.conf.$BRIDGE.disable_ipv6=0" >/dev/null
    ip addr replace fe80::1/64 dev "$BRIDGE" nodad
    if [ -n "$WAN_IF" ] && [ -e "/proc/sys/net/ipv6/conf/$WAN_IF" ]; then
      sysctl -q -w "net.ipv6.conf.$WAN_IF.accept_ra=2" >/dev/null
    fi
  fi

  # 4. NAT in our own nftables table: never touches anyone else's rules. Its chains, hooks
  # and priorities are in the nftables plan (nox-modules/homework/nftplan.py), with every
  # other table's; tests/unit/test_nftplan.py checks this script against it.
  if [ -n "$WAN_IF" ]; then
    nft -f - <<EOF
table inet $NFT_TABLE
delete table inet $NFT_TABLE
table inet $NFT_TABLE {
  chain postrouting {
    type nat hook postrouting priority srcnat; policy accept;
    # IPv4 only: every device has a routed IPv6 /64 of its own (no NAT66).
    oifname "$WAN_IF" meta nfproto ipv4 masquerade
  }
  # What the household opened, filled by the controller (its reach and remote components;
  # docs/reaching-in.md): the forwards' IPv6 pinholes, miniupnpd's mappings (its
  # upnp_forward_chain), and the router's own WAN services (remote access's WireGuard port).
  chain reach_forward {
  }
  chain upnp_forward {
  }
  chain remote_input {
  }
  # Nothing from the WAN reaches the router's services (Guest Board, API, DNS) or the
  # home unless it answers a connection made from inside, or the household opened it.
  chain wan_input {
    type filter hook input priority filter; policy accept;
    iifname "$WAN_IF" ct state established,related accept
    iifname "$WAN_IF" meta l4proto icmp accept
    iifname "$WAN_IF" meta l4proto ipv6-icmp accept
    iifname "$WAN_IF" meta nfproto ipv6 udp dport 546 accept
    iifname "$WAN_IF" meta nfproto ipv4 udp dport 68 accept
    iifname "$WAN_IF" jump remote_input
    # Refused, not dropped: a scan from the internet then tells closed from open (what is
    # open is exactly what the household opened, docs/reaching-in.md); the kernel rate-limits
    # the ICMP errors.
    iifname "$WAN_IF" meta l4proto tcp reject with tcp reset
    iifname "$WAN_IF" reject
  }
  # A satellite's management link (the router's port hwsat<i>m, fe80::1) is for
  # pairing (443), OpenFlow over TLS and its agent (the defaults of [satellites] tls_port
  # and agent_port): nothing else of the router, and nothing routed.
  chain satellite_input {
    type filter hook input priority filter; policy accept;
    iifname "hwsat*" ct state established,related accept
    iifname "hwsat*" meta l4proto ipv6-icmp accept
    iifname "hwsat*" meta nfproto ipv6 tcp dport { 443, 6654, 6655 } accept
    iifname "hwsat*" drop
    # and those two are for satellites only: no device reaches them from the LAN
    iifname "$BRIDGE" tcp dport { 6654, 6655 } drop
  }
  # The Guest Board, the API and the captive page (lighttpd on 80 and 443, the captive
  # server on 8088) from the LAN: at most $WEB_CONNS connections at a time per device,
  # counted per IPv4 address and per IPv6 /64 (a device has all of its /64). So one
  # guest's thousands of idle connections cannot take the slots the household's board
  # needs; lighttpd also ends idle ones (conf/lighttpd.conf). The management links and
  # the router's own screen are not limited.
  set web_clients4 { type ipv4_addr; flags dynamic; }
  set web_clients6 { type ipv6_addr; flags dynamic; }
  chain web_input {
    type filter hook input priority filter; policy accept;
    iifname "$BRIDGE" tcp dport { 80, 443, 8088 } ct state new add @web_clients4 { ip saddr ct count over $WEB_CONNS } reject with tcp reset
    iifname "$BRIDGE" tcp dport { 80, 443, 8088 } ct state new add @web_clients6 { ip6 saddr & ffff:ffff:ffff:ffff:: ct count over $WEB_CONNS } reject with tcp reset
  }
  chain wan_forward {
    type filter hook forward priority filter; policy accept;
    iifname "hwsat*" drop
    iifname "$WAN_IF" ct state established,related accept
    # ICMPv6 that RFC 4890 (4.3.1) says must not be dropped on its way to a host (IPv6
    # devices have no NAT in front of them: path MTU discovery needs packet-too-big).
    iifname "$WAN_IF" icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem, echo-request, echo-reply } accept
    # A port forward or a UPnP/NAT-PMP/PCP mapping (IPv4): only the controller's tables DNAT
    # what comes in from the WAN.
    iifname "$WAN_IF" ct status dnat accept
    iifname "$WAN_IF" jump reach_forward
    iifname "$WAN_IF" jump upnp_forward
    iifname "$WAN_IF" drop
    # A device's DNS goes to the router (the switch steers port 53 there); over IPv4 it is
    # answered by homework-dnsd, and IPv6 DNS must not slip past the rules by being
    # routed to the internet instead. (DNS over TLS elsewhere, 853, is the switch's
    # business, as over IPv4: dropped for a device with rules, the router's own allowed.)
    iifname "$BRIDGE" meta nfproto ipv6 meta l4proto { udp, tcp } th dport 53 drop
    # Unique local addresses (no prefix from the ISP) stay inside the home (RFC 4193); a
    # reject, so the device falls back to IPv4 at once.
    oifname "$WAN_IF" ip6 saddr fc00::/7 reject with icmpv6 type admin-prohibited
  }
}
EOF
  fi
  log "up: bridge $BRIDGE ($DATAPATH_TYPE, controller $CONTROLLER, ports: ${LAN_PORTS:-none}), NAT via ${WAN_IF:-none}"
}

# With the userspace (netdev) datapath a LAN port is still an ordinary Linux interface:
# the kernel would answer ARP on it with the port's own MAC and route IP sent to that MAC,
# so devices could reach the router's stack (and each other) around the OpenFlow rules,
# and packets arrive twice. An nftables ingress hook drops frames for the kernel after
# OVS's packet socket has taken its copy (packet taps run before the ingress hook).
# (The kernel datapath takes frames in its rx handler, after that hook: netdev only.)
guard() {
  local p
  [ "$DATAPATH_TYPE" = netdev ] || return 0
  for p in "$@"; do
    [[ "$p" =~ ^[A-Za-z0-9_.:-]{1,15}$ ]] || die "bad port name '$p'"
    nft add table netdev "${NFT_TABLE}_lan"
    # Only the IP stack is kept off: EAPOL must still reach a hostapd on the port.
    nft add chain netdev "${NFT_TABLE}_lan" "in_$p" \
      "{ type filter hook ingress device \"$p\" priority 0; policy accept; }"
    nft flush chain netdev "${NFT_TABLE}_lan" "in_$p"
    nft add rule netdev "${NFT_TABLE}_lan" "in_$p" meta protocol "{ ip, arp, ip6 }" drop
    sysctl -q -w "net.ipv6.conf.$p.disable_ipv6=1" >/dev/null 2>&1 || true
  done
}

down() {
  nft delete table inet "$NFT_TABLE" 2>/dev/null || true
  nft delete table netdev "${NFT_TABLE}_lan" 2>/dev/null || true
  "${VSCTL[@]}" --if-exists del-br "$BRIDGE" || true
  if [ -f "$SYSCTL_FILE" ]; then
    local line
    while IFS= read -r line; do
      [ -n "$line" ] || continue
      sysctl -q -w "$line" >/dev/null 2>&1 || true
    done <"$SYSCTL_FILE"
    rm -f "$SYSCTL_FILE"
  fi
  log "down: bridge $BRIDGE and table inet $NFT_TABLE removed"
}

status() {
  "${VSCTL[@]}" show
  ovs-ofctl -O OpenFlow13 dump-flows "$BRIDGE" || true
  ip -br addr show dev "$BRIDGE" || true
  nft list table inet "$NFT_TABLE" 2>/dev/null || echo "(no table inet $NFT_TABLE)"
}

case "$action" in
  up) up ;;
  guard) guard "${ARGS[@]}" ;;
  down) down ;;
  status) status ;;
  *) usage 2 ;;
esac
