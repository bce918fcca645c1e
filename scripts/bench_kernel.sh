#!/usr/bin/env bash
# `make bench` section "kernel": the image's kernel datapath measured, inside the image's VM.
#
# The image runs Open vSwitch's kernel datapath, which these machines cannot load; its VM
# can. One VM (QEMU, TCG where KVM does not work), booted from the image as it is built
# (image/build.sh, reused from its cache), with a device namespace on its LAN NIC and an
# "ISP" namespace on its WAN NIC (DHCP for the WAN, a web server, an iperf3 server). The
# device is let in, then the same traffic goes through the same VM three ways, in
# alternating rounds, each with an empty connection table and after the guest has settled
# (busy under 20 % for 2 s):
#   homework  the image as it runs: the LAN NIC on br0 (kernel datapath, the controller's
#             pipeline), the router's stack and its nftables NAT to the WAN; the controller
#             reads every NATed connection from conntrack for its per-flow records
#   datapath  the same with the controller stopped: the switch keeps its flows (fail_mode
#             secure), so this is the kernel datapath and pipeline alone
#   kernel    the same VM with the LAN NIC taken off the bridge and the controller stopped:
#             the device's gateway address on the NIC, plain kernel forwarding, the same
#             nftables NAT (table inet homework) to the WAN
# Measured from the host: bulk TCP (iperf3, device -> ISP) and new connections/s (wrk, one
# request per connection, a server port of its own for every run), and what was busy in the
# guest during each new-connection run (the controller, the conntrack tools, ovs-vswitchd,
# hwdbd, softirq: where the forwarding's CPU went). Under TCG the guest is tens of times
# slower than the hardware it stands for, so only the ratio within this one VM means anything.
#
# The image build runs under flock /tmp/hw-image.lock, the VM under flock /tmp/hw-boot.lock
# (the boot test's locks: one heavy VM at a time on a shared machine).
# Environment: BENCH_KERNEL_ROUNDS (3), BENCH_KERNEL_SECONDS (10), HOMEWORK_IMAGE (an image
# to use instead of building), HOMEWORK_ACCEL (kvm|tcg; default: probe KVM as the boot test
# does, else TCG), BENCH_KERNEL_HOLD (a file: while it exists the VM and its namespaces stay
# up at the end, for a look inside; test-artifacts/bench-kernel/hold.env names them),
# BENCH_KERNEL_PROFILE (1: py-spy samples the controller during each new-connection run with
# it, non-blocking, 10 per second (more falls behind under TCG); collapsed stacks in test-artifacts/bench-kernel/
# profile-MODE-PORT.txt and a summary on stderr; py-spy costs the guest CPU too, so the
# figures of a profiled run are not the bench's). JSON in
# out/bench-kernel.json, logs in test-artifacts/bench-kernel/.
set -uo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
ROUNDS=${BENCH_KERNEL_ROUNDS:-3}
RUN_S=${BENCH_KERNEL_SECONDS:-10}
ART=$TOP/test-artifacts/bench-kernel

say() { echo "[bench-kernel +$(( $(date +%s) - T0 ))s] $*" >&2; }
T0=$(date +%s)

if [ "$(id -u)" != 0 ] || [ ! -c /dev/net/tun ]; then
  echo "kernel: skipped (needs root and /dev/net/tun)"; exit 0
fi
for t in qemu-system-x86_64 iperf3 wrk lighttpd dnsmasq udhcpc python3; do
  command -v "$t" >/dev/null || { echo "kernel: $t not installed (make deps)"; exit 1; }
done

# ------------------------------------------------------------------ the image (its own lock)
if [ -z "${BENCH_KERNEL_LOCKED:-}" ]; then
  mkdir -p "$ART"
  if [ -z "${HOMEWORK_IMAGE:-}" ]; then
    say "building the image (reused from cache when its inputs are unchanged), under /tmp/hw-image.lock"
    export HOMEWORK_SIGNING_KEY=${HOMEWORK_SIGNING_KEY:-${HOMEWORK_IMAGE_WORK:-$TOP/image/work}/boottest-signing-key}
    if ! HOMEWORK_IMAGE_NOCOMPRESS=1 flock /tmp/hw-image.lock bash image/build.sh >"$ART/build.log" 2>&1; then
      echo "kernel: the image build failed (see $ART/build.log)"; exit 1
    fi
    HOMEWORK_IMAGE=$(readlink -f out/homework-latest-amd64.img)
  fi
  say "waiting for /tmp/hw-boot.lock (one VM at a time)"
  BENCH_KERNEL_LOCKED=1 HOMEWORK_IMAGE=$HOMEWORK_IMAGE exec flock /tmp/hw-boot.lock bash "$0"
fi
IMG=$HOMEWORK_IMAGE
[ -f "$IMG" ] || { echo "kernel: no image at $IMG"; exit 1; }
rm -rf "$ART"/*.log "$ART"/*.pid "$ART"/www; mkdir -p "$ART/www"
say "image ${IMG##*/}"

# ------------------------------------------------------------------ names, clean-up
SUF=$(printf '%04x' $(( $$ % 65536 )))
NS_ISP=hwbk-isp-$SUF NS_DEV=hwbk-dev-$SUF
ISP_IP=198.51.100.1
WAN_MAC=52:54:00:48:4b:01 LAN_MAC=52:54:00:48:4b:02
FIRST_PORT=8300
QEMU_PID=""
cleanup() {
  set +e
  if [ -n "${BENCH_KERNEL_HOLD:-}" ] && [ -e "$BENCH_KERNEL_HOLD" ]; then   # a developer looks inside first
    printf 'NS_DEV=%s\nNS_ISP=%s\nAGENT=%s\nQEMU_PID=%s\n' "$NS_DEV" "$NS_ISP" "$ART/agent.sock" "$QEMU_PID" >"$ART/hold.env"
    say "holding the VM and its namespaces ($ART/hold.env) until $BENCH_KERNEL_HOLD is removed"
    while [ -e "$BENCH_KERNEL_HOLD" ] && kill -0 "$QEMU_PID" 2>/dev/null; do sleep 2; done
  fi
  if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
    kill "$QEMU_PID"; for _ in $(seq 1 20); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$QEMU_PID" 2>/dev/null
  fi
  for ns in "$NS_ISP" "$NS_DEV"; do ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null; done
  sleep 0.2
  ip netns del "$NS_ISP" 2>/dev/null; ip netns del "$NS_DEV" 2>/dev/null
  for side in w l; do for l in "hk$side$SUF-tap" "hk$side$SUF-v" "hk$side$SUF-br"; do ip link del "$l" 2>/dev/null; done; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ the links: tap + veth on a host bridge
link() {  # link PREFIX NS: the VM's NIC (tap PREFIX-tap) and eth0 of NS on bridge PREFIX-br
  local br=$1-br tap=$1-tap veth=$1-v
  ip link add "$br" type bridge && ip link set "$br" type bridge stp_state 0 forward_delay 0
  ip link set "$br" type bridge nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0 2>/dev/null
  ip tuntap add dev "$tap" mode tap && ip link set "$tap" master "$br"
  ip link add "$veth" type veth peer name "${1}p" && ip link set "$veth" master "$br"
  ip link set "${1}p" netns "$2" && ip -n "$2" link set "${1}p" name eth0
  for l in "$br" "$tap" "$veth"; do ip link set "$l" up; done
  ip -n "$2" link set lo up && ip -n "$2" link set eth0 up
}
set -e
ip netns add "$NS_ISP"; ip netns add "$NS_DEV"
link "hkw$SUF" "$NS_ISP"; link "hkl$SUF" "$NS_DEV"
ip -n "$NS_ISP" addr add "$ISP_IP/24" dev eth0
ip netns exec "$NS_ISP" dnsmasq --conf-file=/dev/null --keep-in-foreground --user=root --interface=eth0 \
  --bind-interfaces --no-resolv --no-hosts --dhcp-range=198.51.100.50,198.51.100.99,255.255.255.0,1h \
  --dhcp-option=3,$ISP_IP --dhcp-leasefile="$ART/isp.leases" --pid-file="$ART/isp-dnsmasq.pid" \
  --log-facility="$ART/isp-dnsmasq.log" >/dev/null 2>&1 &
echo "<html><body>the ISP's server</body></html>" > "$ART/www/index.html"
{
  echo "server.document-root = \"$ART/www\""; echo "server.bind = \"$ISP_IP\""; echo "server.port = $FIRST_PORT"
  echo "server.max-connections = 4096"; echo "server.max-keep-alive-requests = 0"; echo 'server.errorlog = "/dev/null"'
  echo 'mimetype.assign = (".html" => "text/html")'
  for p in $(seq $((FIRST_PORT + 1)) $((FIRST_PORT + 4 * ROUNDS + 2))); do echo "\$SERVER[\"socket\"] == \"$ISP_IP:$p\" { }"; done
} > "$ART/lighttpd.conf"
ip netns exec "$NS_ISP" lighttpd -D -f "$ART/lighttpd.conf" >"$ART/lighttpd.log" 2>&1 &
ip netns exec "$NS_ISP" iperf3 -s -B "$ISP_IP" >"$ART/iperf3-server.log" 2>&1 &
set +e

# ------------------------------------------------------------------ the VM
probe_kvm() {
  [ -w /dev/kvm ] || return 1
  # PVM (kvm_pvm, pagetable-based virtualisation for nested clouds) runs only guest kernels
  # built for it, and no firmware: the image's kernel and its UEFI/BIOS boots cannot run there
  [ -d /sys/module/kvm_pvm ] && return 1
  MTOOLS_SKIP_CHECK=1 mcopy -n -i "$IMG@@1M" ::/homework/a/vmlinuz "$ART/vmlinuz" 2>/dev/null || return 1
  ( timeout 15 qemu-system-x86_64 -accel kvm -cpu host -m 256 -display none -no-reboot -nodefaults \
    -kernel "$ART/vmlinuz" -append "console=ttyS0 panic=-1" -serial "file:$ART/kvm-probe.log" ) >/dev/null 2>&1
  grep -q -e "Kernel panic" -e "VFS:" "$ART/kvm-probe.log" 2>/dev/null
}
case "${HOMEWORK_ACCEL:-auto}" in
  kvm) ACCEL=kvm ;; tcg) ACCEL=tcg ;;
  *) if { probe_kvm; } 2>/dev/null; then ACCEL=kvm; else ACCEL=tcg; fi ;;
esac
if [ "$ACCEL" = kvm ]; then ACCEL_ARGS=(-accel kvm -cpu host); BOOT_TIMEOUT=180
else ACCEL_ARGS=(-accel "tcg,thread=multi" -cpu "max,avx=off,avx2=off"); BOOT_TIMEOUT=1800; fi   # a first boot (its keys) under a loaded TCG
# 2 GiB: with 1 GiB the kernel sizes its conntrack table at 7,680 entries, which the TIME_WAIT
# entries of a few runs fill (then both ways drop new connections); above 1 GiB it is 65,536
say "booting the image in QEMU ($ACCEL, 2 vCPUs, 2 GiB; the disk as a snapshot)"
qemu-system-x86_64 -machine q35 "${ACCEL_ARGS[@]}" -smp 2 -m 2048 -display none -no-reboot -snapshot \
  -drive "file=$IMG,if=virtio,format=raw" \
  -netdev "tap,id=lan,ifname=hkl$SUF-tap,script=no,downscript=no" -device "virtio-net-pci,netdev=lan,mac=$LAN_MAC" \
  -netdev "tap,id=wan,ifname=hkw$SUF-tap,script=no,downscript=no" -device "virtio-net-pci,netdev=wan,mac=$WAN_MAC" \
  -serial "file:$ART/ttyS0.log" -serial "file:$ART/ttyS1.log" \
  -device virtio-serial-pci -chardev "socket,id=agent,path=$ART/agent.sock,server=on,wait=off" \
  -device virtserialport,chardev=agent,name=org.homework.test -fw_cfg name=opt/org.homework.test,string=1 \
  -pidfile "$ART/qemu.pid" -daemonize >"$ART/qemu.log" 2>&1 || { echo "kernel: QEMU did not start (see $ART/qemu.log)"; exit 1; }
QEMU_PID=$(cat "$ART/qemu.pid")
t=0
until grep -q '^HOMEWORK-READY' "$ART/ttyS1.log" 2>/dev/null && grep -q '^HOMEWORK-AGENT ready' "$ART/ttyS1.log" 2>/dev/null; do
  kill -0 "$QEMU_PID" 2>/dev/null || { echo "kernel: the VM stopped (see $ART/ttyS0.log)"; exit 1; }
  [ $t -lt "$BOOT_TIMEOUT" ] || { echo "kernel: the VM was not ready in ${BOOT_TIMEOUT}s (see $ART/ttyS0.log)"; exit 1; }
  sleep 1; t=$((t + 1))
done
say "the router is up ($(grep '^HOMEWORK-READY' "$ART/ttyS1.log" | tail -1 | tr -d '\r'))"
g() { python3 "$TOP/image/boot-test-agent.py" "$ART/agent.sock" "${GT:-120}" "$*"; }
dev() { ip netns exec "$NS_DEV" "$@"; }

# ------------------------------------------------------------------ the device, let in
cat > "$ART/dhcp-hook.sh" <<EOF
#!/bin/sh
case "\$1" in
  deconfig) ip -4 addr flush dev "\$interface"; ip link set "\$interface" up ;;
  bound|renew) ip -4 addr flush dev "\$interface"; ip addr add "\$ip/\$mask" dev "\$interface"
    ip route replace default via \${router%% *} dev "\$interface"
    printf 'IP=%s\nROUTER=%s\n' "\$ip" "\${router%% *}" > "$ART/lease.env" ;;
esac
EOF
chmod +x "$ART/dhcp-hook.sh"
# HOMEWORK-READY does not wait for the controller's OpenFlow connection, and the LAN's DHCP is
# the controller's: wait for it (under a loaded TCG it can come minutes after READY)
GT=660 g 'for i in $(seq 1 600); do [ "$(ovs-vsctl get controller br0 is_connected)" = true ] && homework devices >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1' \
  >"$ART/controller-wait.log" 2>&1 || { echo "kernel: the controller did not connect to br0 (see $ART/controller-wait.log)"; exit 1; }
say "the controller is connected to br0"
dev sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
DEV_MAC=$(ip -n "$NS_DEV" link show eth0 | awk '/link\/ether/{print $2}')
lease() {  # one DHCP exchange from the device, tried three times (a loaded TCG guest answers late)
  local _
  rm -f "$ART/lease.env"
  for _ in 1 2 3; do
    dev timeout 120 udhcpc -i eth0 -f -q -n -t 20 -T 3 -A 2 -s "$ART/dhcp-hook.sh" >>"$ART/udhcpc.log" 2>&1 && return 0
  done
  return 1
}
: >"$ART/udhcpc.log"
lease || { echo "kernel: the device got no lease (see $ART/udhcpc.log)"; exit 1; }
. "$ART/lease.env"
g "homework permit $DEV_MAC" >"$ART/permit.log" 2>&1 || { echo "kernel: permit failed (see $ART/permit.log)"; exit 1; }
# the permitted lease (an hour) instead of the pending one's 30 s, which this client would not renew
lease || { echo "kernel: the device got no permitted lease (see $ART/udhcpc.log)"; exit 1; }
. "$ART/lease.env"
reaches() {  # the device reaches the ISP's web server within 90 s
  local _
  for _ in $(seq 1 90); do
    dev curl -s -o /dev/null -m 2 "http://$ISP_IP:$FIRST_PORT/" && return 0
    sleep 1
  done
  return 1
}
reaches || { echo "kernel: the permitted device ($IP) does not reach the ISP"; exit 1; }
say "device $DEV_MAC: $IP, gateway $ROUTER, permitted; it reaches the ISP"

# ------------------------------------------------------------------ the two ways through the VM
# kernel: the LAN NIC off the bridge, the controller stopped, the device's gateway on the NIC;
# the image's own nftables NAT stays (table inet homework).
# The NIC goes back on the bridge as the same OpenFlow port: the device's flows (and the
# controller's record of where the device is) name it.
to_kernel() {
  GT=180 g ". /run/homework/interfaces.env; L=\${LAN_PORTS%% *}; ovs-vsctl get Interface \$L ofport >/run/bench-ofport &&
    systemctl stop homework-controller && ovs-vsctl del-port br0 \$L && ip addr del $ROUTER/30 dev br0;
    ip addr add $ROUTER/30 dev \$L && ip link set \$L up" >>"$ART/switch.log" 2>&1
}
to_homework() {
  GT=180 g ". /run/homework/interfaces.env; L=\${LAN_PORTS%% *}; ip addr del $ROUTER/30 dev \$L;
    ovs-vsctl add-port br0 \$L -- set Interface \$L ofport_request=\$(cat /run/bench-ofport) &&
    systemctl start homework-controller" >>"$ART/switch.log" 2>&1
}
settle() {  # an empty connection table, then the guest settles (busy under 20 % for 2 s, at most 90 s)
  # Emptied: a run that met the last one's closed connections in the table (tens of thousands,
  # listed by every dump) was measured slower than the same code meeting an empty one.
  GT=120 g 'conntrack -F >/dev/null 2>&1; for i in $(seq 1 45); do a=$(awk "/^cpu /{print \$2+\$3+\$4+\$7+\$8, \$5}" /proc/stat); sleep 2
    b=$(awk "/^cpu /{print \$2+\$3+\$4+\$7+\$8, \$5}" /proc/stat); set -- $a $b
    busy=$(( ($3 - $1) * 100 / ($3 - $1 + $4 - $2 + 1) )); [ $busy -lt 20 ] && { echo "settled after $((2 * i)) s"; exit 0; }
    done; echo "still busy ($busy %) after 90 s"' 2>&1 | tr -d '\r'
}
guest_cpu() {  # the guest's busy jiffies (all CPUs) so far
  g "awk '/^cpu /{print \$2+\$3+\$4+\$7+\$8}' /proc/stat" 2>/dev/null | tr -d '\r\n'
}
guest_procs() {  # busy jiffies so far of what competes with the forwarding in the guest, and its softirq
  g 's() { t=0; for p in "$@"; do v=$(awk "{print \$14+\$15}" /proc/$p/stat 2>/dev/null); t=$((t + ${v:-0})); done; echo $t; }
    echo "controller=$(s $(systemctl show -p MainPID --value homework-controller)) conntrack=$(s $(pgrep -x conntrack))" \
      "ovs-vswitchd=$(s $(pgrep -x ovs-vswitchd)) hwdbd=$(s $(pgrep -x hwdbd)) $(awk "/^cpu /{print \"softirq=\" \$7+\$8}" /proc/stat)"' \
    2>/dev/null | tr -d '\r\n'
}
PROFILE=${BENCH_KERNEL_PROFILE:-}
profile_start() {  # py-spy on the controller for the coming wrk run (modes with a controller)
  [ -n "$PROFILE" ] && [ "$1" != datapath ] && [ "$1" != kernel ] || return 0
  g "p=\$(systemctl show -p MainPID --value homework-controller); rm -f /dev/shm/prof.txt
    setsid /dev/shm/py-spy record --nonblocking -r 10 -d $((RUN_S + 1)) -f raw -o /dev/shm/prof.txt -p \$p >/dev/shm/prof.log 2>&1 </dev/null &" \
    >>"$ART/switch.log" 2>&1
}
profile_fetch() {  # its collapsed stacks to the host, and the functions most on the CPU
  [ -n "$PROFILE" ] && [ "$1" != datapath ] && [ "$1" != kernel ] || return 0
  GT=120 g 'for i in $(seq 1 30); do [ -s /dev/shm/prof.txt ] && ! pgrep -x py-spy >/dev/null && break; sleep 1; done
    cat /dev/shm/prof.log >&2; gzip -c /dev/shm/prof.txt | base64 -w0' 2>>"$ART/switch.log" \
    | tail -1 | base64 -d 2>/dev/null | gunzip > "$ART/profile-$1-$port.txt" 2>>"$ART/switch.log"
  python3 - "$ART/profile-$1-$port.txt" "$1" >&2 <<'PY'
import collections, sys
leaf, incl, total = collections.Counter(), collections.Counter(), 0
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip().rpartition(" ")
    if not n.isdigit():
        continue
    n = int(n); total += n
    frames = stack.split(";")
    leaf[frames[-1]] += n
    for f in set(frames):
        incl[f] += n
print(f"profile of the controller ({sys.argv[2]}): {total} samples on the CPU")
for title, c in (("self", leaf), ("inclusive", incl)):
    print(f"  {title}:")
    for f, n in c.most_common(25):
        print(f"    {100 * n / max(total, 1):5.1f}%  {f}")
PY
}
port=$FIRST_PORT
measure() {  # measure MODE: one round of iperf3 and wrk; appends a JSON line
  local mode=$1 mbps cps c0 c1 settled p0 p1
  port=$((port + 1))
  settled=$(settle)
  c0=$(guest_cpu)
  mbps=$(dev iperf3 -c "$ISP_IP" -t "$RUN_S" -J 2>/dev/null | python3 -c 'import json,sys
try: print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6, 1))
except Exception: print("null")')
  p0=$(guest_procs)
  profile_start "$mode"
  cps=$(dev wrk -t 1 -c 16 -d "${RUN_S}s" -H "Connection: close" "http://$ISP_IP:$port/index.html" 2>/dev/null \
        | awk '/Requests\/sec/{print $2}')
  p1=$(guest_procs)
  c1=$(guest_cpu)
  profile_fetch "$mode"
  echo "{\"mode\": \"$mode\", \"iperf_mbps\": ${mbps:-null}, \"conn_per_s\": ${cps:-null}, \"guest_cpu_jiffies\": $(( ${c1:-0} - ${c0:-0} )), \"wrk_procs\": [\"$p0\", \"$p1\"]}" \
    >> "$ART/rounds.jsonl"
  say "$mode: bulk TCP ${mbps} Mb/s, ${cps} new connections/s (the guest ${settled}; conntrack entries $(g 'conntrack -C' | tr -d '\r\n'), TIME_WAIT $(g "cat $TIME_WAIT" | tr -d '\r\n') s)"
}
# BENCH_KERNEL_PATCH: files of this tree (paths in the repository, say
# nox-modules/homework/conntrack.py, or hwdb/python/hwdb_client/__init__.py for the client of hwdb
# installed beside them) measured against the image's own: each round then
# measures the image's controller as built ("image"), then the controller with those files
# in their place ("homework"). They reach the guest from the ISP's web server.
PATCH=${BENCH_KERNEL_PATCH:-}
# What the controller sets in the kernel stays after it stops (the connection table's TIME_WAIT
# is the routing component's): the image's own controller gets the kernel's setting back.
TIME_WAIT=/proc/sys/net/netfilter/nf_conntrack_tcp_timeout_time_wait
use_code() {  # use_code image|patch: the controller's files at its next start (bind mounts: the root may be read-only)
  [ -z "$PATCH" ] && return 0
  if [ "$1" = patch ]; then
    # hwdb's client is installed beside the controller's modules (image/install-overlay.sh)
    GT=120 g "for f in $PATCH; do t=\${f#hwdb/python/}; [ \"\$t\" = \"\$f\" ] || t=nox-modules/\$t
      mount --bind /run/bench-patch/\$f /usr/lib/homework/\$t || exit 1; done" >>"$ART/switch.log" 2>&1
  else
    GT=120 g "for f in $PATCH; do t=\${f#hwdb/python/}; [ \"\$t\" = \"\$f\" ] || t=nox-modules/\$t
      umount /usr/lib/homework/\$t 2>/dev/null; done; echo $TIME_WAIT_0 > $TIME_WAIT; true" >>"$ART/switch.log" 2>&1
  fi
}
if [ -n "$PROFILE" ]; then
  cp "$(command -v py-spy || echo "$TOP/.venv/bin/py-spy")" "$ART/www/py-spy"
  GT=300 g "curl -sf -m 120 -o /dev/shm/py-spy http://$ISP_IP:$FIRST_PORT/py-spy && chmod +x /dev/shm/py-spy" >>"$ART/switch.log" 2>&1 \
    || { echo "kernel: py-spy did not reach the guest (see $ART/switch.log)"; exit 1; }
fi
if [ -n "$PATCH" ]; then
  TIME_WAIT_0=$(g "cat $TIME_WAIT" | tr -d '\r\n')
  for f in $PATCH; do mkdir -p "$ART/www/patch/$(dirname "$f")" && cp "$TOP/$f" "$ART/www/patch/$f"; done
  GT=300 g "for f in $PATCH; do mkdir -p /run/bench-patch/\$(dirname \$f) && curl -sf -m 60 -o /run/bench-patch/\$f http://$ISP_IP:$FIRST_PORT/patch/\$f || exit 1; done" \
    >>"$ART/switch.log" 2>&1 || { echo "kernel: the patch did not reach the guest (see $ART/switch.log)"; exit 1; }
  say "measuring the image's controller against it with this tree's $PATCH"
fi
: > "$ART/rounds.jsonl"
restart_with() {  # restart_with image|patch: the controller restarted with that code
  use_code "$1" && GT=180 g "systemctl restart homework-controller" >>"$ART/switch.log" 2>&1 && reaches \
    || { echo "kernel: the controller with the $1's code did not come up (see $ART/switch.log)"; exit 1; }
}
round=0
for _ in $(seq 1 "$ROUNDS"); do
  round=$((round + 1))
  if [ -n "$PATCH" ] && [ $((round % 2)) = 1 ]; then   # which goes first alternates: the second follows a restart
    measure image
    restart_with patch
  elif [ -n "$PATCH" ]; then
    restart_with patch
    measure homework
    restart_with image
    measure image
  fi
  [ -n "$PATCH" ] && [ $((round % 2)) = 0 ] || measure homework
  # the same flows with the controller stopped (fail_mode secure: the switch keeps them)
  GT=120 g "systemctl stop homework-controller" >>"$ART/switch.log" 2>&1 && reaches \
    || { echo "kernel: the datapath alone does not forward (see $ART/switch.log)"; exit 1; }
  measure datapath
  to_kernel && reaches || { echo "kernel: the plain kernel router does not forward (see $ART/switch.log)"; exit 1; }
  measure kernel
  use_code image
  to_homework && reaches || { echo "kernel: Homework did not come back (see $ART/switch.log)"; exit 1; }
done
g "head -1 /etc/homework/version; uname -r; ovs-vsctl --version | head -1; nft --version" > "$ART/guest.txt" 2>&1
mkdir -p "$TOP/out"
python3 - "$ART/rounds.jsonl" "$ACCEL" "$RUN_S" "$ART/guest.txt" "$TOP/out/bench-kernel.json" "${PATCH:-none}" <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
accel, secs, guest = sys.argv[2], sys.argv[3], open(sys.argv[4]).read().split("\n")
def med(mode, key):
    vals = [r[key] for r in rows if r["mode"] == mode and r[key] is not None]
    return statistics.median(vals) if vals else None
MODES = tuple(m for m in ("image", "homework", "datapath", "kernel") if any(r["mode"] == m for r in rows))
out = {m: {k: med(m, k) for k in ("iperf_mbps", "conn_per_s", "guest_cpu_jiffies")} for m in MODES}
out["rounds"] = rows
print(f"\nthe image in one VM ({accel}, 2 vCPUs, 2 GiB; guest {guest[0].strip()}, kernel {guest[1].strip() if len(guest) > 1 else '?'}): "
      f"{len(rows) // len(MODES)} alternating rounds of {secs} s each, medians")
def ratio(mode, k):
    h, p = out[mode][k], out["kernel"][k]
    return round(h / p, 2) if h and p else None
labels = {"image": "Homework, the image's controller as built", "homework": "Homework as it runs (datapath + controller)",
          "datapath": "its kernel datapath, controller stopped",
          "kernel": "plain kernel forwarding + the same NAT"}
def paired(mode, k):  # the median of each round's ratio (the ways of one round ran within minutes)
    ks = [r[k] for r in rows if r["mode"] == "kernel"]
    ms = [r[k] for r in rows if r["mode"] == mode]
    vals = [a / b for a, b in zip(ms, ks) if a and b]
    return round(statistics.median(vals), 2) if vals else None
print(f"{'way through the VM':44} {'bulk TCP Mb/s':>14} {'ratio':>6} {'paired':>7} {'new conn/s':>11} {'ratio':>6} {'paired':>7}")
for m in MODES:
    print(f"{labels[m]:44} {out[m]['iperf_mbps'] or 0:14.1f} {ratio(m, 'iperf_mbps') or 0:5.2f}x {paired(m, 'iperf_mbps') or 0:6.2f}x"
          f" {out[m]['conn_per_s'] or 0:11.1f} {ratio(m, 'conn_per_s') or 0:5.2f}x {paired(m, 'conn_per_s') or 0:6.2f}x")
print("ratio: of the medians; paired: the median of the rounds' own ratios")
if "image" in MODES:
    print(f"(Homework as it runs: with this tree's {sys.argv[6]} in place of the image's)")
print("ratios against the plain kernel router (aim: at least 0.8x); under TCG only these ratios mean anything:"
      " the guest runs tens of times slower than real hardware")
out["ratios"] = {m: {"iperf": ratio(m, "iperf_mbps"), "conn_per_s": ratio(m, "conn_per_s"),
                     "iperf_paired": paired(m, "iperf_mbps"), "conn_per_s_paired": paired(m, "conn_per_s")}
                 for m in MODES if m != "kernel"}
def procs(r):  # {name: jiffies during the wrk run} of one round
    try:
        before, after = (dict(kv.split("=", 1) for kv in side.split()) for side in r.get("wrk_procs", ["", ""]))
        return {k: int(after[k]) - int(before[k]) for k in after if k in before}
    except (ValueError, KeyError):
        return {}
names = ("controller", "conntrack", "ovs-vswitchd", "hwdbd", "softirq")
print("\nbusy in the guest during the new-connection runs, % of one vCPU (medians):")
print(f"{'way':<10}" + "".join(f"{n:>13}" for n in names))
for m in MODES:
    got = [procs(r) for r in rows if r["mode"] == m]
    meds = [statistics.median(v) if (v := [p[n] for p in got if n in p]) else None for n in names]
    out[m]["wrk_cpu_percent"] = {n: round(v / int(secs), 1) if v is not None else None for n, v in zip(names, meds)}
    print(f"{m:<10}" + "".join(f"{v / int(secs):13.1f}" if v is not None else f"{'-':>13}" for v in meds))
out["accel"] = accel
json.dump(out, open(sys.argv[5], "w"), indent=2)
EOF
