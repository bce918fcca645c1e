#!/usr/bin/env bash
# Boot test of the router image (`make image-test`, part of `make test`).
#
# QEMU boots out/homework-<version>-amd64.img (built or reused from cache by image/build.sh)
# with two NICs, LAN first so the WAN has to be found by its DHCP answer:
#   LAN NIC -- host bridge -- veth -- namespace "device"  (a household device, udhcpc + curl)
#   WAN NIC -- host bridge -- veth -- namespace "isp"     (dnsmasq DHCP+DNS, a web server;
#                                                           IPv6: radvd, kea-dhcp6 delegating /48s)
# Boot 1 uses UEFI (OVMF, systemd-boot); the in-guest reboot comes back with legacy BIOS
# (SeaBIOS, GRUB) on the same disk, so both boot paths and the persistence of state are tested.
# The guest prints its first-boot credentials and readiness on ttyS1; host-driven checks inside
# the guest go through a virtio-serial agent that exists only in this VM (see image/README.md).
#
# Every check prints PASS, FAIL or SKIP (with the reason; a SKIP is never a pass). Every part
# of Homework is checked, always. Under CI=true or HOMEWORK_REQUIRE_ALL=1 a skip (not root, no
# /dev/net/tun, a check that could not run) is a failure. Ends with
# "image-test: N passed, N failed, N skipped"; exit 1 on any failure.
# Everything it creates (namespaces, bridges, taps, veths, QEMU and daemons by PID) is removed
# on exit, also on failure or Ctrl-C. Logs stay in test-artifacts/image-boot/.
#
# Every household step is done from the device namespace, a LAN device behind the LAN NIC, as a
# household would: the first hour's set-up from its waiting page, logins, decisions (the board's
# API calls), the Wi-Fi settings, backup, factory reset, restore. The agent and ttyS1 observe.
#
# Power cuts (image/README.md, "Power cuts at boot"): the disk is captured as a cut would leave
# it (a QMP external snapshot, image/boot-test-qmp.py) at points of the main chain's boots and
# during the marking step; a recovery VM boots each captured disk, beside the main chain, and it
# must come back serving within two boots.
#
# Environment: HOMEWORK_ACCEL=kvm|tcg (default: probe KVM, fall back to TCG),
# HOMEWORK_IMAGE=path (test this image instead of building), HOMEWORK_BOOT_TEST_ONLY=satellite
# (boot 1, then only the satellite phase: for working on it) | hardware (boot 1 with its WAN on
# e1000e and a screen, then only the hardware part: image/boot-test-hardware.sh), HOMEWORK_POWERCUT=subset (the
# default: a few cut points, both firmwares, the marking step) | wide (a cut every
# HOMEWORK_POWERCUT_EVERY seconds, 8 by default, of boots 2 and 5 from the kernel to a few
# seconds after ready, and the marking steps under both firmwares: `make image-test-powercut`)
# | none.
set -uo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
ART=$TOP/test-artifacts/image-boot${HOMEWORK_BOOT_TEST_ONLY:+-$HOMEWORK_BOOT_TEST_ONLY}   # a part run alone keeps its own artifacts
T_START=$(date +%s)

# ------------------------------------------------------------------ reporting
PASSED=0 FAILED=0 SKIPPED=0
RESULTS=()
pass() { PASSED=$((PASSED+1)); RESULTS+=("PASS  $1"); echo "  PASS  $1"; }
fail() { FAILED=$((FAILED+1)); RESULTS+=("FAIL  $1${2:+ -- $2}"); echo "  FAIL  $1${2:+ -- $2}"; }
REQUIRE_ALL=no
case "${CI:-}" in true|1|yes) REQUIRE_ALL=yes ;; esac
[ "${HOMEWORK_REQUIRE_ALL:-}" = 1 ] && REQUIRE_ALL=yes
skip() {  # under CI nothing may be skipped: a skip there is a failure
  if [ "$REQUIRE_ALL" = yes ]; then fail "$1" "skipped under CI/HOMEWORK_REQUIRE_ALL: $2"; return; fi
  SKIPPED=$((SKIPPED+1)); RESULTS+=("SKIP  $1 -- $2"); echo "  SKIP  $1 -- $2"
}
skip_all() {  # skip_all NAME WHY: the whole test cannot run here
  skip "$1" "$2"; summary; [ "$FAILED" -eq 0 ]; exit
}
check() {  # check NAME COMMAND...: PASS when the command succeeds
  local name=$1; shift
  if "$@" >>"$ART/checks.log" 2>&1; then pass "$name"; else fail "$name" "see $ART/checks.log"; fi
}
check_within() {  # check_within SECONDS NAME COMMAND...: PASS once the command succeeds, tried every 3 s
  # (for a state the router reaches at its own pace: a VM under TCG beside other work is slow)
  local end=$(( $(date +%s) + $1 )) name=$2; shift 2
  until "$@" >>"$ART/checks.log" 2>&1; do
    [ "$(date +%s)" -lt "$end" ] || { fail "$name" "not within the time allowed; see $ART/checks.log"; return 1; }
    sleep 3
  done
  pass "$name"
}
log() { echo "[image-test +$(( $(date +%s) - T_START ))s] $*"; }
summary() {
  echo
  echo "image-test results:"
  printf '  %s\n' "${RESULTS[@]}"
  [ -n "${READY1:-}" ] && echo "  boot-to-ready: UEFI boot ${READY1}s, BIOS reboot ${READY2:-?}s (host clock, QEMU start to HOMEWORK-READY; accel $ACCEL)"
  [ -n "${UPDATE_TIME:-}" ] && echo "  update: ${UPDATE_TIME}s from update-start to ready-to-reboot (verify, write the slot, read back, boot loader; accel $ACCEL); .hwup $(du -h "${HWUP:-/dev/null}" 2>/dev/null | cut -f1); the permitted device was cut off for ${DOWNTIME:-?}s (the reboot into the new slot)"
  echo "  total $(( $(date +%s) - T_START ))s, logs in $ART"
  echo "image-test: $PASSED passed, $FAILED failed, $SKIPPED skipped"
}

# ------------------------------------------------------------------ preflight
if [ "$(id -u)" != 0 ]; then
  skip_all "image boot test" "needs root (network namespaces, taps)"
fi
for t in qemu-system-x86_64 qemu-img ip dnsmasq udhcpc curl python3 mcopy radvd kea-dhcp6 kdig; do
  command -v "$t" >/dev/null || { fail "preflight" "$t not installed (make deps)"; summary; exit 1; }
done
[ -c /dev/net/tun ] || skip_all "image boot test" "no /dev/net/tun on this machine"
OVMF_CODE=/usr/share/OVMF/OVMF_CODE_4M.fd OVMF_VARS=/usr/share/OVMF/OVMF_VARS_4M.fd
[ -f "$OVMF_CODE" ] || { OVMF_CODE=/usr/share/OVMF/OVMF_CODE.fd; OVMF_VARS=/usr/share/OVMF/OVMF_VARS.fd; }

# Leftovers of a run that was killed without its trap (SIGKILL, machine reset): its QEMU (by
# the PID in its pid file, only if that process really is our QEMU) and, when no other boot
# test is running, its namespaces and links (all named hwbt-* / hb[wlsd]XXXX-*).
if [ -f "$ART/qemu.pid" ]; then
  old=$(cat "$ART/qemu.pid" 2>/dev/null)
  if [ -n "$old" ] && grep -qa "$ART/" "/proc/$old/cmdline" 2>/dev/null && grep -qa "disk0" "/proc/$old/cmdline" 2>/dev/null; then
    kill "$old" 2>/dev/null; sleep 1
  fi
fi
if [ -f "$ART/qemu-rec.pid" ]; then
  old=$(cat "$ART/qemu-rec.pid" 2>/dev/null)
  if [ -n "$old" ] && grep -qa "$ART/rec-" "/proc/$old/cmdline" 2>/dev/null; then kill "$old" 2>/dev/null; sleep 1; fi
fi
if [ -f "$ART/qemu-sat.pid" ]; then
  old=$(cat "$ART/qemu-sat.pid" 2>/dev/null)
  if [ -n "$old" ] && grep -qa "$ART/sat-disk.img" "/proc/$old/cmdline" 2>/dev/null; then kill "$old" 2>/dev/null; sleep 1; fi
fi
others=$(ps -eo pid=,ppid=,args= | awk -v me=$$ '$3 == "bash" && $4 ~ /image\/boot-test\.sh$/ && $1 != me && $2 != me' | wc -l)
if [ "$others" -eq 0 ]; then
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^hwbt-(isp|dev|sdev|rdev)-[0-9a-f]{4}$'); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null; ip netns del "$ns" 2>/dev/null
  done
  for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^hb[wlsdr][0-9a-f]{4}-(br|tap|v|u|w)$'); do
    ip link del "$l" 2>/dev/null
  done
fi
rm -rf "$ART"; mkdir -p "$ART"
SUF=$(printf '%04x' $(( $$ % 65536 )))
NS_ISP=hwbt-isp-$SUF NS_DEV=hwbt-dev-$SUF
BR_W=hbw$SUF-br BR_L=hbl$SUF-br TAP_W=hbw$SUF-tap TAP_L=hbl$SUF-tap VETH_W=hbw$SUF-v VETH_L=hbl$SUF-v
# The satellite's cable (the router's third NIC, idle until the satellite phase), and the
# satellite's own uplink and device port (image/boot-test-satellite.sh)
BR_S=hbs$SUF-br TAP_S=hbs$SUF-tap TAP_SU=hbs$SUF-u BR_D=hbd$SUF-br TAP_SD=hbd$SUF-tap VETH_D=hbd$SUF-v
NS_SDEV=hwbt-sdev-$SUF
# The recovery VM (power cuts): its LAN NIC on a bridge of its own with a device namespace, its
# WAN NIC on the ISP's bridge
BR_R=hbr$SUF-br TAP_RL=hbr$SUF-tap TAP_RW=hbr$SUF-w VETH_R=hbr$SUF-v NS_RDEV=hwbt-rdev-$SUF
REC_WAN_MAC=52:54:00:48:58:01 REC_LAN_MAC=52:54:00:48:58:02
ISP_IP=198.51.100.1
ISP6_IP=2001:db8:100::1 PD_POOL=2001:db8:200::/44   # the ISP's IPv6 link and the prefixes it delegates
WAN_MAC=52:54:00:48:57:01 LAN_MAC=52:54:00:48:57:02 SATCABLE_MAC=52:54:00:48:57:03
QEMU_PID="" PIDS=()

cleanup() {
  set +e
  if [ -n "$QEMU_PID" ] && kill -0 "$QEMU_PID" 2>/dev/null; then
    kill "$QEMU_PID"; for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$QEMU_PID" 2>/dev/null
  fi
  [ -n "${RECOVERY_PID:-}" ] && kill "$RECOVERY_PID" 2>/dev/null
  if [ -f "$ART/qemu-rec.pid" ]; then kill -9 "$(cat "$ART/qemu-rec.pid")" 2>/dev/null; fi
  if [ -n "${SAT_QEMU_PID:-}" ] && kill -0 "$SAT_QEMU_PID" 2>/dev/null; then
    kill "$SAT_QEMU_PID"; sleep 1; kill -9 "$SAT_QEMU_PID" 2>/dev/null
  fi
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for f in "$ART"/*.pid; do [ -f "$f" ] && kill "$(cat "$f" 2>/dev/null)" 2>/dev/null; done
  ip netns pids "$NS_ISP" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns pids "$NS_DEV" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns pids "$NS_SDEV" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns pids "$NS_RDEV" 2>/dev/null | xargs -r kill 2>/dev/null
  sleep 0.2
  ip netns del "$NS_ISP" 2>/dev/null; ip netns del "$NS_DEV" 2>/dev/null; ip netns del "$NS_SDEV" 2>/dev/null
  ip netns del "$NS_RDEV" 2>/dev/null
  for l in "$TAP_W" "$TAP_L" "$VETH_W" "$VETH_L" "$BR_W" "$BR_L" "$TAP_S" "$TAP_SU" "$BR_S" "$TAP_SD" "$VETH_D" "$BR_D" \
           "$TAP_RL" "$TAP_RW" "$VETH_R" "$BR_R"; do
    ip link del "$l" 2>/dev/null
  done
  declare -F hardware_cleanup >/dev/null && hardware_cleanup
  [ -n "${HWUP_PID:-}" ] && kill "$HWUP_PID" 2>/dev/null
  rm -rf "$ART"/*.qcow2 "$ART"/*.sock "$ART/sat-disk.img" "$ART/hwup-work" "$ART"/www/*.hwup "$ART"/household-*.hwbak
}
trap cleanup EXIT
trap 'echo "image-test: interrupted"; exit 130' INT TERM

# ------------------------------------------------------------------ image
# Updates are signed: the image bakes in the public key of the key its .hwup files are signed
# with. The test uses a development key of its own, made on first use in the image work dir
# (outside git, never the release key; kept so the image cache stays valid between runs).
export HOMEWORK_SIGNING_KEY=${HOMEWORK_SIGNING_KEY:-${HOMEWORK_IMAGE_WORK:-$TOP/image/work}/boottest-signing-key}
if [ -n "${HOMEWORK_IMAGE:-}" ]; then
  IMG=$HOMEWORK_IMAGE
else
  log "building the image (reused from cache when inputs are unchanged)"
  if ! HOMEWORK_IMAGE_NOCOMPRESS=1 bash image/build.sh 2>&1 | tee "$ART/build.log" | sed 's/^/    /'; then
    fail "image build" "see $ART/build.log"; summary; exit 1
  fi
  IMG=$(readlink -f out/homework-latest-amd64.img)
fi
[ -f "$IMG" ] || { fail "image build" "no image at $IMG"; summary; exit 1; }
pass "image built: ${IMG##*/} ($(du -h --apparent-size "$IMG" | cut -f1) raw)"
qemu-img create -q -f qcow2 -F raw -b "$IMG" "$ART/disk.qcow2" 6G   # bigger disk: the data partition grows
echo "$ART/disk.qcow2" > "$ART/disk.top"     # the main chain's top layer (snapshot_disk moves it)
cp "$OVMF_VARS" "$ART/ovmf-vars.fd"

# The update file of this build (next to the image), and a second build made from it in the
# background while boot 1 runs: the same system with a bumped version and sequence. The ISP's
# web server hands them to the router.
HWUP=${IMG%.img}.hwup
V1="" S1="" HWUP_PID=""
if [ -f "$HWUP" ]; then
  V1=$(tar -xOf "$HWUP" manifest.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')
  S1=$(tar -xOf "$HWUP" manifest.json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sequence"])')
fi
V2=$V1-bt2 S2=$((S1 + 1)) V3=$V1-bt3-broken S3=$((S1 + 2))   # V3: made by hand in the guest (below)
V4=$V1-bt4 S4=$((S1 + 3))                                      # V4: a good build once more (A/B 3)
make_test_hwups() {
  set -e
  local d=$ART/hwup-work
  rm -rf "$d"; mkdir -p "$d" "$ART/www"
  tar -C "$d" -xf "$HWUP" vmlinuz initrd.img root.img.zst
  zstd -dq --sparse "$d/root.img.zst" -o "$d/root.img"; rm "$d/root.img.zst"
  edit_root() {  # edit_root VERSION SEQUENCE: a new /etc/homework/version in the root image
    printf '%s\nsequence %s\n' "$1" "$2" > "$d/version"; chmod 644 "$d/version"
    printf '%s\n' "rm /etc/homework/version" "write $d/version /etc/homework/version" > "$d/cmds"
    debugfs -w -f "$d/cmds" "$d/root.img"
    debugfs -R "cat /etc/homework/version" "$d/root.img" | grep -qx "sequence $2"
    echo "root.img: version $1, sequence $2"
  }
  mkhwup() {  # mkhwup VERSION SEQUENCE OUT
    python3 scripts/make-hwup.py --root "$d/root.img" --kernel "$d/vmlinuz" --initrd "$d/initrd.img" \
      --version "$1" --sequence "$2" --arch amd64 --key "$HOMEWORK_SIGNING_KEY" --zstd-level 3 -o "$3"
  }
  edit_root "$V2" "$S2"
  mkhwup "$V2" "$S2" "$ART/www/update-good.hwup"
  edit_root "$V4" "$S4"
  mkhwup "$V4" "$S4" "$ART/www/update-next.hwup"
  rm -rf "$d"
}
if [ -n "$V1" ] && [ -z "${HOMEWORK_BOOT_TEST_ONLY:-}" ]; then
  (make_test_hwups) >"$ART/hwup-make.log" 2>&1 &
  HWUP_PID=$!
fi

# ------------------------------------------------------------------ accelerator
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
  kvm) ACCEL=kvm ;;
  tcg) ACCEL=tcg ;;
  *) if { probe_kvm; } 2>/dev/null; then ACCEL=kvm; else ACCEL=tcg; fi ;;
esac
if [ "$ACCEL" = kvm ]; then ACCEL_ARGS=(-accel kvm -cpu host); BOOT_TIMEOUT=150
else
  # TCG: every feature QEMU emulates, except AVX/AVX2. Given those, glibc, OpenSSL and zstd
  # take their AVX2 code, which TCG runs through slow helpers: sha256 (an update's checks and
  # read-back hash over a gigabyte) ran 2.2-2.9x slower in the guest than without them.
  ACCEL_ARGS=(-accel "tcg,thread=multi" -cpu "max,avx=off,avx2=off"); BOOT_TIMEOUT=900   # a busy machine (load 12 here) took over 420 s for a first boot
fi
log "accelerator: $ACCEL$( [ "$ACCEL" = tcg ] && { [ -d /sys/module/kvm_pvm ] && echo " (this machine's KVM is PVM, which runs only kernels built for it)" || echo ' (KVM probe failed or disabled: a kernel did not boot under KVM)'; })"

# ------------------------------------------------------------------ the ISP and the device
host_bridge() {  # host_bridge NAME: a Linux bridge for one test link, up
  ip link add "$1" type bridge
  ip link set "$1" type bridge stp_state 0 forward_delay 0
  # the host's own firewall (if br_netfilter is loaded) must not see these frames
  ip link set "$1" type bridge nf_call_iptables 0 nf_call_ip6tables 0 nf_call_arptables 0 2>/dev/null || true
  echo 0 > "/sys/class/net/$1/bridge/multicast_snooping" || true
  ip link set "$1" up
}
qemu_link() {  # qemu_link PREFIX NS: bridge PREFIX-br joining tap PREFIX-tap (a VM's NIC) and
  # veth PREFIX-v, whose peer is eth0 of namespace NS
  local br=$1-br tap=$1-tap veth=$1-v peer=${1/hb/hbp}
  host_bridge "$br"
  ip tuntap add dev "$tap" mode tap
  ip link set "$tap" master "$br"
  ip link add "$veth" type veth peer name "$peer"
  ip link set "$veth" master "$br"
  ip link set "$peer" netns "$2"
  ip -n "$2" link set "$peer" name eth0
  ip link set "$tap" up; ip link set "$veth" up
  ip -n "$2" link set lo up; ip -n "$2" link set eth0 up
  ip netns exec "$2" ethtool -K eth0 tx off >/dev/null 2>&1 || true
}
netup() {
  set -e
  for side in W L; do
    local ns=$NS_ISP; [ $side = L ] && ns=$NS_DEV
    ip netns add "$ns"
    qemu_link "hb${side,,}$SUF" "$ns"
  done
  # the satellite's cable: the router's third NIC on a bridge of its own (the satellite plugs in later)
  host_bridge "$BR_S"
  ip tuntap add dev "$TAP_S" mode tap; ip link set "$TAP_S" master "$BR_S"; ip link set "$TAP_S" up
  # ISP: DHCP + DNS (dnsmasq) and a web server
  ip -n "$NS_ISP" addr add "$ISP_IP/24" dev eth0
  mkdir -p "$ART/www"; echo "hello from the ISP namespace $SUF" > "$ART/www/index.html"
  ip netns exec "$NS_ISP" dnsmasq --conf-file=/dev/null --keep-in-foreground --user=root \
    --interface=eth0 --bind-interfaces --no-resolv --no-hosts \
    --dhcp-range=198.51.100.50,198.51.100.99,255.255.255.0,1h --dhcp-option=3,$ISP_IP \
    --dhcp-option=6,$ISP_IP --dhcp-leasefile="$ART/isp.leases" --address=/isp.example/$ISP_IP \
    --log-dhcp --log-queries --log-facility="$ART/isp-dnsmasq.log" --pid-file="$ART/isp-dnsmasq.pid" \
    >"$ART/isp-dnsmasq.out" 2>&1 &
  ip netns exec "$NS_ISP" python3 -m http.server 80 --bind "$ISP_IP" --directory "$ART/www" \
    >"$ART/isp-http.log" 2>&1 &
  echo $! > "$ART/isp-http.pid"
  isp6_up
}
isp6_up() {  # the ISP's IPv6: RAs on the link (the router's WAN address and default route), a
  # web server, kea-dhcp6 delegating a /48 from $PD_POOL (DHCPv6-PD)
  ip netns exec "$NS_ISP" sysctl -q -w net.ipv6.conf.all.forwarding=1
  ip -n "$NS_ISP" addr add "$ISP6_IP/64" dev eth0 nodad
  # the device is a host, not a router: it takes the RAs its router sends (accept_ra=1)
  ip netns exec "$NS_DEV" sysctl -q -w net.ipv6.conf.all.forwarding=0
  cat > "$ART/isp-radvd.conf" <<CONF
interface eth0 {
  AdvSendAdvert on;
  MinRtrAdvInterval 3;
  MaxRtrAdvInterval 10;
  prefix ${ISP6_IP%::1}::/64 { AdvOnLink on; AdvAutonomous on; };
};
CONF
  ip netns exec "$NS_ISP" radvd -n -C "$ART/isp-radvd.conf" -p "$ART/isp-radvd.pid" -m logfile -l "$ART/isp-radvd.log" \
    >"$ART/isp-radvd.out" 2>&1 &
  ip netns exec "$NS_ISP" python3 -m http.server 80 --bind "$ISP6_IP" --directory "$ART/www" \
    >"$ART/isp-http6.log" 2>&1 &
  echo $! > "$ART/isp-http6.pid"
  cat > "$ART/kea-dhcp6.conf" <<CONF
{"Dhcp6": {
  "interfaces-config": {"interfaces": ["eth0"]},
  "lease-database": {"type": "memfile", "persist": false},
  "server-id": {"type": "LL", "persist": false},
  "preferred-lifetime": 3000, "valid-lifetime": 4000, "renew-timer": 1000, "rebind-timer": 2000,
  "subnet6": [{"id": 1, "subnet": "${ISP6_IP%::1}::/64", "interface": "eth0",
               "pd-pools": [{"prefix": "${PD_POOL%/*}", "prefix-len": ${PD_POOL#*/}, "delegated-len": 48}]}],
  "loggers": [{"name": "kea-dhcp6", "severity": "INFO", "output_options": [{"output": "$ART/kea-dhcp6.log"}]}]
}}
CONF
  # kea binds the link-local address: only once duplicate address detection is over
  local n=0
  until ip -n "$NS_ISP" -6 addr show dev eth0 scope link | grep -q inet6 &&
        ! ip -n "$NS_ISP" -6 addr show dev eth0 scope link | grep -q tentative; do
    n=$((n+1)); [ $n -lt 100 ] || { echo "isp eth0: no usable link-local address"; return 1; }
    sleep 0.1
  done
  KEA_PIDFILE_DIR=$ART KEA_LOCKFILE_DIR=$ART ip netns exec "$NS_ISP" kea-dhcp6 -c "$ART/kea-dhcp6.conf" \
    >"$ART/kea-dhcp6.out" 2>&1 &
  echo $! > "$ART/isp-kea.pid"
}
if ! (netup) >"$ART/netup.log" 2>&1; then
  fail "test network set-up" "see $ART/netup.log"; summary; exit 1
fi
log "ISP namespace $NS_ISP ($ISP_IP: DHCP, DNS, web; $ISP6_IP: RA, DHCPv6-PD from $PD_POOL, web), device namespace $NS_DEV"

# ------------------------------------------------------------------ QEMU helpers
# The disk sits at one PCI address in every VM that boots it: the firmware's boot entry (in the
# UEFI variables a recovery VM inherits from the cut) names the disk by its device path, and a
# router whose disk moved would not find it either.
DISK_PCI_ADDR=0x10
# The router VM's NICs (virtio-net, LAN first) and no screen, so the Guest Board's kiosk stays
# off (image/boot-test-hardware.sh, HOMEWORK_BOOT_TEST_ONLY=hardware, sets other NIC models and
# a screen).
NIC_ARGS=(-vga none
  -netdev "tap,id=lan,ifname=$TAP_L,script=no,downscript=no" -device "virtio-net-pci,netdev=lan,mac=$LAN_MAC"
  -netdev "tap,id=wan,ifname=$TAP_W,script=no,downscript=no" -device "virtio-net-pci,netdev=wan,mac=$WAN_MAC"
  -netdev "tap,id=sat,ifname=$TAP_S,script=no,downscript=no" -device "virtio-net-pci,netdev=sat,mac=$SATCABLE_MAC")
VM_MEM=1024
boot() {  # boot uefi|bios N [extra QEMU args]
  local fw=$1 n=$2 fwargs=(); shift 2
  [ "$fw" = uefi ] && fwargs=(-drive "if=pflash,format=raw,readonly=on,file=$OVMF_CODE"
                              -drive "if=pflash,format=raw,file=$ART/ovmf-vars.fd")
  rm -f "$ART/agent.sock" "$ART/qmp.sock"
  BOOT_T0=$(date +%s)
  qemu-system-x86_64 -machine q35 "${ACCEL_ARGS[@]}" -smp 2 -m "$VM_MEM" -display none -no-reboot \
    "${fwargs[@]}" -drive "file=$(cat "$ART/disk.top"),if=none,format=qcow2,id=disk0" \
    -device "virtio-blk-pci,drive=disk0,addr=$DISK_PCI_ADDR" \
    -qmp "unix:$ART/qmp.sock,server=on,wait=off" "${NIC_ARGS[@]}" \
    -serial "file:$ART/ttyS0-boot$n.log" -serial "file:$ART/ttyS1-boot$n.log" \
    -device virtio-serial-pci -chardev "socket,id=agent,path=$ART/agent.sock,server=on,wait=off" \
    -device virtserialport,chardev=agent,name=org.homework.test \
    -fw_cfg name=opt/org.homework.test,string=1 "$@" \
    -pidfile "$ART/qemu.pid" -daemonize >"$ART/qemu-boot$n.log" 2>&1 || return 1
  QEMU_PID=$(cat "$ART/qemu.pid")
}
wait_ready() {  # wait_ready N: seconds from QEMU's start to HOMEWORK-READY + agent, or fail
  local n=$1 t0
  t0=${BOOT_T0:-$(date +%s)}
  while :; do
    if grep -q '^HOMEWORK-READY' "$ART/ttyS1-boot$n.log" 2>/dev/null &&
       grep -q '^HOMEWORK-AGENT ready' "$ART/ttyS1-boot$n.log" 2>/dev/null; then
      echo $(( $(date +%s) - t0 )); return 0
    fi
    kill -0 "$QEMU_PID" 2>/dev/null || { echo "qemu exited"; return 1; }
    [ $(( $(date +%s) - t0 )) -lt "$BOOT_TIMEOUT" ] || { boot_diag "$n"; echo "timeout ${BOOT_TIMEOUT}s; see $ART/boot$n-diag.log"; return 1; }
    sleep 1
  done
}
boot_diag() {  # boot_diag N: why boot N is not ready, from the guest's agent when it runs (-> bootN-diag.log)
  grep -q '^HOMEWORK-AGENT ready' "$ART/ttyS1-boot$1.log" 2>/dev/null || { echo "no agent in boot $1" >"$ART/boot$1-diag.log"; return; }
  GT=90 g "cat /proc/uptime /proc/loadavg; systemctl --failed --no-pager; systemctl list-jobs --no-pager | head -20
    for u in \$(systemctl --failed --plain --no-legend | awk '{print \$1}') homework-dnsd.service homework-controller.service; do
      echo \"== \$u\"; systemctl status --no-pager -n 0 \$u | head -12; journalctl -b -u \$u --no-pager | tail -25; done
    systemd-analyze blame --no-pager | head -20" >"$ART/boot$1-diag.log" 2>&1
}
wait_line() {  # wait_line PATTERN FILE [INTERVAL]: 0 once PATTERN is in FILE; 1 if QEMU exits or BOOT_TIMEOUT passes
  local t0; t0=$(date +%s)
  until grep -q "$1" "$2" 2>/dev/null; do
    kill -0 "$QEMU_PID" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$BOOT_TIMEOUT" ] || return 1
    sleep "${3:-1}"
  done
}
# ------------------------------------------------------------------ power cuts
# A cut is captured, not made: snapshot_disk freezes the main chain's disk file as a power cut at
# that instant would leave it (QMP external snapshot) and the VM goes on, on a new top layer. The
# recovery runner (recovery_runner, in the background) boots each captured disk in a VM of its
# own, one at a time, beside the main chain, and checks that it comes back serving within two
# boots: HOMEWORK-READY, a LAN device gets its /30 and the router serves it (the ISP's page if
# the device is permitted in that state, else the waiting page), and the router stays up through
# its marking step (no reboot loop). Results come back as lines in $ART/recovery.results.
POWERCUT=${HOMEWORK_POWERCUT:-subset}
CUT_EVERY=${HOMEWORK_POWERCUT_EVERY:-8}
snapshot_disk() {  # snapshot_disk NAME FIRMWARE WHAT: capture the disk as a cut now would leave it
  local name=$1 top frozen
  frozen=$(cat "$ART/disk.top")
  top="$ART/disk-$name.qcow2"
  if python3 "$TOP/image/boot-test-qmp.py" "$ART/qmp.sock" snapshot disk0 "$top" >>"$ART/powercut.log" 2>&1; then
    echo "$top" > "$ART/disk.top"
    cp "$ART/ovmf-vars.fd" "$ART/cut-$name.vars" 2>/dev/null
    echo "$frozen" > "$ART/cut-$name.path"
    echo "$(date +%s) captured $name ($2 boot, $3): $frozen" >>"$ART/powercut.log"
    return 0
  fi
  echo "$(date +%s) capture $name FAILED" >>"$ART/powercut.log"
  return 1
}
recover() {  # recover NAME FIRMWARE WHAT: queue the captured disk NAME for a recovery boot under FIRMWARE
  [ -f "$ART/cut-$1.path" ] || { echo "FAIL  power cut $3: the disk was not captured (see $ART/powercut.log)" >>"$ART/recovery.results"; return; }
  echo "$1 $2 $3" >>"$ART/recovery.queue"
}
capture_boot_window() {  # capture_boot_window N FIRMWARE: cuts through boot N, kernel to ready + 10 s
  # subset: one point (the services starting); wide: one every CUT_EVERY seconds
  local n=$1 fw=$2 i=0 t
  if [ "$POWERCUT" = subset ]; then
    wait_line 'homework-net: WAN=' "$ART/ttyS0-boot$n.log" 0.3 &&
      snapshot_disk "boot$n-services" "$fw" "its services starting" && recover "boot$n-services" "$fw" "in boot $n ($fw), its services starting"
    return
  fi
  [ "$POWERCUT" = wide ] || return 0
  while kill -0 "$QEMU_PID" 2>/dev/null; do
    sleep "$CUT_EVERY"; i=$((i + 1)); t=$(( $(date +%s) - BOOT_T0 ))
    snapshot_disk "boot$n-${t}s" "$fw" "${t} s after QEMU started" && recover "boot$n-${t}s" "$fw" "in boot $n ($fw), ${t} s after QEMU started"
    if grep -q '^HOMEWORK-READY' "$ART/ttyS1-boot$n.log" 2>/dev/null; then
      [ -n "${ready_at:-}" ] || ready_at=$(date +%s)
      [ $(( $(date +%s) - ready_at )) -ge 10 ] && break
    fi
    [ "$i" -lt 60 ] || break
  done
  unset ready_at
}
capture_marking() {  # capture_marking N FIRMWARE: cuts inside boot N's marking step; prints the names
  # (mark-good pauses before each ESP write when the test's drop-in says so: HOMEWORK-MARK lines)
  [ "$POWERCUT" = none ] && return 0
  local n=$1 fw=$2 seen=0 lines what t0; t0=$(date +%s)
  while kill -0 "$QEMU_PID" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$BOOT_TIMEOUT" ]; do
    lines=$(grep -c '^HOMEWORK-MARK before' "$ART/ttyS1-boot$n.log" 2>/dev/null)
    if [ "${lines:-0}" -gt "$seen" ]; then
      seen=$((seen + 1))
      what=$(grep '^HOMEWORK-MARK before' "$ART/ttyS1-boot$n.log" | sed -n "${seen}p" | awk '{print $3}' | tr -d '\r')
      snapshot_disk "mark$n-$seen-$what" "$fw" "marking, before its $what write" && echo "mark$n-$seen-$what"
      continue
    fi
    grep -q '^HOMEWORK-SLOT' "$ART/ttyS1-boot$n.log" 2>/dev/null && break
    sleep 0.2
  done
}
rec_boot() {  # rec_boot FIRMWARE OVERLAY VARS LOG: start the recovery VM (the power came back)
  local fw=$1 fwargs=()
  [ "$fw" = uefi ] && fwargs=(-drive "if=pflash,format=raw,readonly=on,file=$OVMF_CODE" -drive "if=pflash,format=raw,file=$3")
  qemu-system-x86_64 -machine q35 "${ACCEL_ARGS[@]}" -smp 2 -m 1024 -display none -vga none -no-reboot \
    "${fwargs[@]}" -drive "file=$2,if=none,format=qcow2,id=disk0" -device "virtio-blk-pci,drive=disk0,addr=$DISK_PCI_ADDR" \
    -netdev "tap,id=lan,ifname=$TAP_RL,script=no,downscript=no" -device "virtio-net-pci,netdev=lan,mac=$REC_LAN_MAC" \
    -netdev "tap,id=wan,ifname=$TAP_RW,script=no,downscript=no" -device "virtio-net-pci,netdev=wan,mac=$REC_WAN_MAC" \
    -serial "file:$4-ttyS0.log" -serial "file:$4-ttyS1.log" \
    -pidfile "$ART/qemu-rec.pid" -daemonize >"$4-qemu.log" 2>&1
}
recovery_once() {  # recovery_once NAME FIRMWARE WHAT: one captured disk, booted until it serves (two boots at most)
  # A boot counts when it is ready and its marking step keeps it (a tried slot that is not ready
  # is given up: "HOMEWORK-SLOT failed=", and the router reboots into the good slot: the next boot).
  local name=$1 fw=$2 what=$3 overlay="$ART/rec-$1-$2.qcow2" vars="$ART/rec-$1-$2.vars" log boot t0 pid state="" why=""
  local base; base=$(cat "$ART/cut-$name.path")
  rm -f "$overlay"; qemu-img create -q -f qcow2 -b "$base" -F qcow2 "$overlay" || { echo "FAIL  power cut $what: no overlay"; return; }
  cp "$ART/cut-$name.vars" "$vars" 2>/dev/null || cp "$OVMF_VARS" "$vars"
  for boot in 1 2; do
    log="$ART/rec-$name-$fw-boot$boot"
    t0=$(date +%s); state=""
    rec_boot "$fw" "$overlay" "$vars" "$log" || { why="QEMU did not start"; break; }
    pid=$(cat "$ART/qemu-rec.pid")
    while kill -0 "$pid" 2>/dev/null && ! grep -q '^HOMEWORK-READY' "$log-ttyS1.log" 2>/dev/null; do
      [ $(( $(date +%s) - t0 )) -lt "$BOOT_TIMEOUT" ] || { why="not ready in ${BOOT_TIMEOUT}s"; break; }
      sleep 1
    done
    if ! grep -q '^HOMEWORK-READY' "$log-ttyS1.log" 2>/dev/null; then
      if ! kill -0 "$pid" 2>/dev/null; then why="it rebooted by itself"; continue; fi   # the next boot
      kill -9 "$pid" 2>/dev/null; break
    fi
    why=""
    # ready: wait for the marking step's verdict (or the reboot it decides)
    local end=$(( $(date +%s) + 240 ))
    while kill -0 "$pid" 2>/dev/null && ! grep -q '^HOMEWORK-SLOT' "$log-ttyS1.log" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 2; done
    state=$(grep '^HOMEWORK-SLOT' "$log-ttyS1.log" 2>/dev/null | tail -1 | tr -d '\r')
    if [[ "$state" == *failed=* ]] && [ "$boot" = 1 ]; then
      end=$(( $(date +%s) + 180 ))      # it reboots into the good slot: QEMU (-no-reboot) exits
      while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 2; done
      if kill -0 "$pid" 2>/dev/null; then why="marking said '$state' but the router did not reboot"; kill -9 "$pid"; break; fi
      continue
    fi
    break
  done
  if [ -n "$why" ] || ! kill -0 "$pid" 2>/dev/null; then
    echo "FAIL  power cut $what, back under $fw: not serving within two boots (${why:-QEMU gone}${state:+, marking '$state'}; see $log-ttyS0.log)"
    kill -9 "$pid" 2>/dev/null; rm -f "$overlay"; return
  fi
  local ready=$(( $(date +%s) - t0 )) slot served=""
  slot=$(sed -n 's/.*root=PARTLABEL=hw-root-\([ab]\) .*/\1/p' "$log-ttyS0.log" | head -1)
  # served: the device gets its /30; the ISP's page if it is permitted in that state, else the waiting page
  if NS=$NS_RDEV LEASE_ENV=$ART/rec-lease.env dev_dhcp; then
    if ip netns exec "$NS_RDEV" curl -s -m 15 "http://$ISP_IP/" 2>/dev/null | grep -q 'hello from the ISP'; then served="reaches the ISP"
    elif ip netns exec "$NS_RDEV" curl -s -m 15 "http://$ROUTER/" 2>/dev/null | grep -q 'Waiting for approval'; then served="gets the waiting page"; fi
  fi
  # no reboot loop: the marking step kept this boot and the router stays up
  sleep 5
  if [ -n "$served" ] && kill -0 "$pid" 2>/dev/null && [[ "$state" != *failed=* ]]; then
    echo "PASS  power cut $what, back under $fw: serving in boot $boot (ready ${ready}s, slot ${slot:-?}; a LAN device $served; ${state:-no marking line})"
  else
    echo "FAIL  power cut $what, back under $fw: boot $boot ready, but served='${served:-no lease or no answer}', marking '${state:-none}', VM $(kill -0 "$pid" 2>/dev/null && echo up || echo gone) (see $log-ttyS1.log)"
  fi
  kill -9 "$pid" 2>/dev/null; rm -f "$ART/qemu-rec.pid" "$overlay" "$vars"
}
recovery_net() {  # the recovery VM's links and its LAN device (the household's device's MAC: its approval holds)
  set -e
  host_bridge "$BR_R"
  ip tuntap add dev "$TAP_RL" mode tap; ip link set "$TAP_RL" master "$BR_R"; ip link set "$TAP_RL" up
  ip tuntap add dev "$TAP_RW" mode tap; ip link set "$TAP_RW" master "$BR_W"; ip link set "$TAP_RW" up
  ip netns add "$NS_RDEV"
  ip link add "$VETH_R" type veth peer name hbpr$SUF
  ip link set "$VETH_R" master "$BR_R"; ip link set "$VETH_R" up
  ip link set "hbpr$SUF" netns "$NS_RDEV"
  ip -n "$NS_RDEV" link set "hbpr$SUF" name eth0
  ip -n "$NS_RDEV" link set eth0 address "$DEV_MAC"
  ip -n "$NS_RDEV" link set lo up; ip -n "$NS_RDEV" link set eth0 up
  ip netns exec "$NS_RDEV" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1
  ip netns exec "$NS_RDEV" ethtool -K eth0 tx off >/dev/null 2>&1 || true
}
recovery_runner() {  # in the background: recovery boots of the queued captures, in order, until END
  local line name fw what n=0
  (recovery_net) >>"$ART/powercut.log" 2>&1 || { echo "FAIL  power cuts: the recovery VM's network" >>"$ART/recovery.results"; return; }
  while :; do
    n=$((n + 1))
    while [ "$(wc -l < "$ART/recovery.queue" 2>/dev/null || echo 0)" -lt "$n" ]; do sleep 2; done
    line=$(sed -n "${n}p" "$ART/recovery.queue")
    [ "$line" = END ] && break
    read -r name fw what <<<"$line"
    while [ -e "$ART/recovery.hold" ]; do sleep 2; done   # the main chain's timing-tight checks run alone
    echo "$(date +%s) recovering $name under $fw" >>"$ART/powercut.log"
    recovery_once "$name" "$fw" "$what" >>"$ART/recovery.results" 2>>"$ART/powercut.log"
  done
}
recovery_report() {  # wait for the runner, then report its results as checks
  [ -n "${RECOVERY_PID:-}" ] || return 0
  echo END >>"$ART/recovery.queue"
  log "waiting for the recovery boots of the power cuts ($(grep -vc END "$ART/recovery.queue") queued)"
  wait "$RECOVERY_PID"; RECOVERY_PID=""
  local line
  while IFS= read -r line; do
    case "$line" in PASS*) pass "${line#PASS  }" ;; FAIL*) fail "${line#FAIL  }" ;; esac
  done <"$ART/recovery.results"
}

g() {  # run a shell command in the guest (the router's VM, or AGENT_SOCK's); output to stdout
  python3 "$TOP/image/boot-test-agent.py" "${AGENT_SOCK:-$ART/agent.sock}" "${GT:-60}" "$*"
}
gq() { g "$@" >>"$ART/checks.log" 2>&1; }
controller_diag() {  # controller_diag WHEN: the controller's state now (answering? busy or stuck? restarted?) -> controller-diag.log
  { echo "== $1 (+$(( $(date +%s) - T_START ))s)"
    GT=60 g "p=\$(systemctl show -p MainPID --value homework-controller); echo \"MainPID \$p\"; systemctl show homework-controller -p ActiveState -p SubState -p NRestarts -p ActiveEnterTimestampMonotonic
      ps -o pid,stat,pcpu,rss,etime,wchan:20,args -p \$p; for t in /proc/\$p/task/*; do echo \"\$(cat \$t/comm) \$(cut -d' ' -f3 \$t/stat) \$(cat \$t/wchan)\"; done | sort | uniq -c
      timeout 20 homework devices >/dev/null 2>&1 && echo 'control socket answers' || echo 'control socket: no answer in 20 s'
      free -m; dmesg | grep -iE 'out of memory|killed process' | tail -3; journalctl -u homework-controller --no-pager | tail -25"
  } >>"$ART/controller-diag.log" 2>&1
}
cred() { sed -n "s/^HOMEWORK-CRED $1=//p" "$ART/ttyS1-boot$2.log" | tr -d '\r' | tail -1; }
dev() { ip netns exec "$NS_DEV" "$@"; }
v6_in() {  # v6_in NET_OR_ADDR NET: inside it?
  python3 -c 'import ipaddress as i, sys; sys.exit(0 if i.ip_network(sys.argv[1], strict=False).subnet_of(i.ip_network(sys.argv[2])) else 1)' "$1" "$2" 2>/dev/null
}
dev_v6() {  # the device's global IPv6 address (usable: not tentative)
  ip -n "$NS_DEV" -6 -o addr show dev eth0 scope global | grep -v -e tentative -e dadfailed | awk '{print $4}' | cut -d/ -f1 | head -1
}
dev_rs() {  # the device restarts IPv6 on its port, as on a link-up: it sends Router Solicitations
  dev sysctl -q -w net.ipv6.conf.eth0.disable_ipv6=1; dev sysctl -q -w net.ipv6.conf.eth0.disable_ipv6=0
}
dev_slaac() {  # wait up to 40 s for the device's SLAAC address; fills DEV6
  local i
  DEV6=""
  dev_rs
  for i in $(seq 1 40); do DEV6=$(dev_v6); [ -n "$DEV6" ] && return 0; [ "$i" = 20 ] && dev_rs; sleep 1; done
  return 1
}
dev_prefix6() {  # the device's /64 as `homework --json devices` shows it
  g "homework --json devices" 2>/dev/null | python3 -c 'import json, sys
for d in json.load(sys.stdin):
    if d.get("mac", "").lower() == sys.argv[1].lower():
        print(d.get("ipv6_prefix") or (d.get("lease") or {}).get("ipv6_prefix") or "")' "$1" 2>/dev/null
}
delegated_prefix() {  # what the router's dhcpcd hook wrote (waits up to 90 s for the first delegation)
  GT=100 g 'for i in $(seq 1 90); do [ -s /run/homework/ipv6-delegated-prefix ] && exec cat /run/homework/ipv6-delegated-prefix; sleep 1; done' | tr -d '\r\n'
}
isp_route6() {  # the ISP routes the prefix it delegated to the router's WAN (via its link-local address)
  local ll
  ll=$(g ". /run/homework/interfaces.env; ip -6 -o addr show dev \$WAN scope link | awk '{print \$4}' | cut -d/ -f1 | head -1" | tr -d '\r\n')
  echo "router WAN link-local: '$ll'; route $1" >>"$ART/checks.log"
  [ -n "$ll" ] && ip -n "$NS_ISP" -6 route replace "$1" via "$ll" dev eth0
}

# DHCP in the device namespace (udhcpc with our own hook: touches nothing on the host)
cat > "$ART/dev-dhcp.sh" <<EOF
#!/bin/sh
case "\$1" in
  deconfig) ip -4 addr flush dev "\$interface"; ip link set "\$interface" up ;;
  bound|renew)
    ip -4 addr flush dev "\$interface"
    ip addr add "\$ip/\$mask" dev "\$interface"
    [ -n "\$router" ] && ip route replace default via \${router%% *} dev "\$interface"
    printf 'IP=%s\nMASK=%s\nROUTER=%s\nDNS="%s"\nLEASE=%s\n' "\$ip" "\$mask" "\${router%% *}" "\$dns" "\$lease" > "\${LEASE_ENV:-$ART/dev-lease.env}" ;;
esac
exit 0
EOF
chmod +x "$ART/dev-dhcp.sh"
dev_dhcp() {  # one DHCP exchange from the device (namespace $NS, the LAN's device by default; host name
  # $DHCP_NAME, testdevice by default); fills IP/MASK/ROUTER
  local env=${LEASE_ENV:-$ART/dev-lease.env}
  rm -f "$env"
  LEASE_ENV=$env ip netns exec "${NS:-$NS_DEV}" timeout 40 udhcpc -i eth0 -f -q -n -t 8 -T 3 -A 2 -x "hostname:${DHCP_NAME:-testdevice}" -s "$ART/dev-dhcp.sh" \
    >>"$ART/dev-dhcp.log" 2>&1 || return 1
  # shellcheck disable=SC1090  # the lease file this exchange wrote
  . "$env"
}
DEV_MAC=$(ip -n "$NS_DEV" link show eth0 | awk '/link\/ether/{print $2}')
RECOVERY_PID=""
if [ "$POWERCUT" != none ]; then
  : >"$ART/recovery.queue"; : >"$ART/recovery.results"
  recovery_runner & RECOVERY_PID=$!
fi

# The household's steps, from its device (the namespace behind the LAN NIC, $HH_NS): what the
# board's page does, with curl. The session's cookie jar is on this host, so it outlives
# reboots and updates of the router, as a browser's does.
HOUSEHOLD_PW="our router $SUF"    # what the household chooses at the set-up (and after a reset)
JAR=$ART/household.cookies
API_CSRF=""
hh() {  # curl from the household's device (its gateway's certificate is the router's own: -k)
  ip netns exec "${HH_NS:-$NS_DEV}" curl -sk -m "${HH_TIMEOUT:-30}" "$@"
}
json_field() {  # json_field FIELD: a field of the JSON on the first line of stdin ('' if none)
  head -1 | python3 -c 'import json, sys
try: v = json.load(sys.stdin).get(sys.argv[1], "")
except Exception: v = ""
print("" if v is None else v)' "$1" 2>/dev/null
}
hh_setup() {  # hh_setup PASSWORD: the first hour from the waiting page (/ws.v1/setup through the captive
  # server, plain HTTP to its gateway), then the board's first call, the ticket -> a session
  local out ticket
  out=$(hh -H 'Content-Type: application/json' -d "{\"password\": \"$1\"}" -w '\nHTTP %{http_code}\n' "http://$ROUTER/ws.v1/setup")
  echo "set-up: $out" >>"$ART/checks.log"
  ticket=$(echo "$out" | json_field ticket)
  [ -n "$ticket" ] || return 1
  out=$(hh -c "$JAR" -H 'Content-Type: application/json' -d "{\"ticket\": \"$ticket\"}" -w '\nHTTP %{http_code}\n' "https://$ROUTER/ws.v1/setup/session")
  echo "set-up session: $out" >>"$ART/checks.log"
  API_CSRF=$(echo "$out" | json_field csrf)
  [ -n "$API_CSRF" ]
}
api_login() {  # api_login [PASSWORD]: the board's login form, from the household's device
  local out
  out=$(hh -c "$JAR" -H 'Content-Type: application/json' -d "{\"password\": \"${1:-$HOUSEHOLD_PW}\"}" -w '\nHTTP %{http_code}\n' "https://$ROUTER/ws.v1/login")
  echo "login: $out" >>"$ART/checks.log"
  API_CSRF=$(echo "$out" | json_field csrf)
  [ -n "$API_CSRF" ]
}
api_json() {  # api_json METHOD PATH JSON: the board's call, with the household's session
  local body=()
  [ "$1" = POST ] && body=(-d "$3")
  hh -b "$JAR" -c "$JAR" -H "X-CSRF-Token: $API_CSRF" -H 'Content-Type: application/json' -X "$1" \
    "${body[@]}" -w '\nHTTP %{http_code}\n' "https://$ROUTER/ws.v1$2"
}
api() {  # api METHOD PATH: the same with an empty body
  api_json "$1" "$2" '{}'
}
decide() {  # decide permit|blacklist|whitelist MAC: the board's drag (its API call), from the household's device
  local verb=$1 mac=$2 out
  [ -n "$API_CSRF" ] || api_login || return 1
  out=$(api POST "/$verb/$mac"); echo "$verb $mac: $out" >>"$ART/checks.log"
  # no answer, or lighttpd's 502/503/504: the controller is restarting (a satellite's permit
  # restarts it; under TCG that takes minutes). The board waits for it; so does the test.
  local tries=0
  while echo "$out" | grep -q '^HTTP \(000\|502\|503\|504\)' && [ $tries -lt 8 ]; do
    tries=$((tries + 1)); sleep 10
    # no answer at all: the device's own lease may have lapsed meanwhile (its one-shot client
    # renews only when asked), as a real client's would not: it renews first
    echo "$out" | grep -q '^HTTP 000' && dev_dhcp >>"$ART/checks.log" 2>&1
    out=$(api POST "/$verb/$mac"); echo "$verb $mac (again, the controller was restarting): $out" >>"$ART/checks.log"
  done
  if echo "$out" | grep -q '^HTTP 401'; then   # the session ended: log in again
    api_login || return 1
    out=$(api POST "/$verb/$mac"); echo "$verb $mac (after a new login): $out" >>"$ART/checks.log"
  fi
  echo "$out" | grep -q '^HTTP 2'
}
device_state() {  # device_state MAC -> pending|permitted|... via the CLI in the guest
  g "homework --json status $1" 2>/dev/null | python3 -c 'import json,sys
try:
    d=json.load(sys.stdin)
    d=d[0] if isinstance(d,list) else d
    print(d.get("state","?"))
except Exception: print("?")'
}

# ================================================================== boot 1: UEFI
if [ "${HOMEWORK_BOOT_TEST_ONLY:-}" = hardware ]; then   # boot 1 with other NIC models and a screen, then the hardware part alone
  . "$TOP/image/boot-test-hardware.sh"; hardware_boot1_args
fi
log "boot 1: UEFI (OVMF + systemd-boot), $ACCEL"
boot uefi 1 || { fail "boot 1 (UEFI) QEMU start" "see $ART/qemu-boot1.log"; summary; exit 1; }
if READY1=$(wait_ready 1); then
  pass "boot 1 (UEFI): ready in ${READY1}s ($(sed -n 's/^HOMEWORK-READY uptime=\([0-9.]*\).*/\1/p' "$ART/ttyS1-boot1.log")s guest uptime)"
else
  fail "boot 1 (UEFI) reaches HOMEWORK-READY" "$READY1; see $ART/ttyS0-boot1.log"; READY1=""; summary; exit 1
fi
READY_LINE=$(grep '^HOMEWORK-READY' "$ART/ttyS1-boot1.log" | tail -1)
log "$READY_LINE"

# First-boot output on the second serial port
ADMIN_PW=$(cred admin-password 1) SSID=$(cred wifi-ssid 1) PSK=$(cred wifi-passphrase 1)
if [ ${#ADMIN_PW} -ge 12 ] && [ ${#PSK} -ge 12 ] && [ -n "$SSID" ] && [ -n "$(cred tls-sha256 1)" ]; then
  pass "first boot printed admin credential, Wi-Fi SSID/passphrase, TLS fingerprint on ttyS1"
else
  fail "first-boot credentials on ttyS1" "admin=${#ADMIN_PW} chars, psk=${#PSK} chars, ssid='$SSID'"
fi
if [ "${HOMEWORK_BOOT_TEST_ONLY:-}" = satellite ]; then   # developing the satellite phase: it alone
  . "$TOP/image/boot-test-satellite.sh"; satellite_start; satellite_phase; summary; [ "$FAILED" -eq 0 ]; exit
fi
if [ "${HOMEWORK_BOOT_TEST_ONLY:-}" = hardware ]; then
  hardware_phase; summary; [ "$FAILED" -eq 0 ]; exit
fi
check "no shared secrets: credentials differ from the image (generated at first boot)" \
  sh -c "! grep -rqs -- '$ADMIN_PW' '$TOP/image' '$TOP/conf'"

# Units
units_check() {  # units_check BOOT
  local bad="" u s
  local list="homework-firstboot homework-net homework-wan homework-wan6 homework-controller homework-dns homework-resolver homework-web openvswitch-switch homework-hwdbd homework-dnsd homework-captive"
  for u in $list; do
    s=$(g "systemctl is-active $u.service" | tr -d '\r\n')
    [ "$s" = active ] || bad="$bad $u=$s"
  done
  [ -z "$bad" ] || { echo "not active:$bad"; g "systemctl --no-pager status 'homework-*' | tail -60"; return 1; }
}
if units_check 1 >>"$ART/checks.log" 2>&1; then
  pass "units active: homework-firstboot, -net, -wan, -wan6, -dns, -resolver, -web, openvswitch, -controller, -hwdbd, -dnsd, -captive"
else fail "all Homework units active" "$(grep 'not active' "$ART/checks.log" | tail -1)"; fi
# the fresh image runs slot A, blessed, with its build sequence and the update key
if [ -n "$V1" ]; then
  GT=120 g "for i in \$(seq 1 110); do systemctl is-active -q homework-mark-good && break; sleep 1; done" >/dev/null 2>&1
  check "fresh image: slot A (root=PARTLABEL=hw-root-a), sequence $S1 in /etc/homework/version, update key baked in, ESP (automounted) has homework-a.conf and grubenv good_slot=a, homework-mark-good done" \
    g "grep -q 'root=PARTLABEL=hw-root-a ' /proc/cmdline && grep -qx 'sequence $S1' /etc/homework/version && [ -s /usr/share/homework/update-key.pub ] \
       && ls /boot/efi/loader/entries/ | grep -qx homework-a.conf && grep -qx good_slot=a /boot/efi/grub/grubenv && [ -z \"\$(blkid -o value -s TYPE /dev/disk/by-partlabel/hw-root-b)\" ] \
       && systemctl is-active homework-mark-good"
else
  fail "the build made an update file next to the image" "no $HWUP (scripts/make-hwup.py missing?)"
fi
check "hwdbd answers on udp/987" g "ss -Hluln | grep -q '127.0.0.1:987 '"
check "remote access runs on the kernel's WireGuard, its UDP port the WAN's only opening; miniupnpd runs for the devices allowed to open ports" \
  python3 "$TOP/image/boot-test-agent.py" "$ART/agent.sock" 240 "end=\$((\$(date +%s) + 200)); while [ \$(date +%s) -lt \$end ]; do s=\$(homework call remote-status); echo \"\$s\" | grep -q '\"backend\": \"kernel\"' && echo \"\$s\" | grep -q '\"running\": true' && nft list chain inet homework remote_input | grep -q 'udp dport 51820 accept' && pgrep -x miniupnpd && exit 0; sleep 2; done; echo \"\$s\"; exit 1"
check "homework-dnsd listens on IPv6 too ([fd00:53::53]:5300, [ipv6] enabled)" g "ss -Hluln | grep -qF '[fd00:53::53]:5300 '"

# Data plane
check "kernel datapath in use (system@ovs-system, bridge datapath_type=system)" \
  g "ovs-dpctl show | grep -q 'system@ovs-system' && [ \"\$(ovs-vsctl get bridge br0 datapath_type)\" = system ]"
check "the connection table holds at least 65,536 connections on this $VM_MEM MiB router (the kernel alone sizes it from memory: 7,680 at 1 GiB)" \
  g "[ \$(cat /proc/sys/net/netfilter/nf_conntrack_max) -ge 65536 ] && [ \$(cat /sys/module/nf_conntrack/parameters/hashsize) -ge 16384 ]"
check "WAN found by its DHCP answer (the 2nd NIC, $WAN_MAC) and the LAN NIC is on br0" \
  g ". /run/homework/interfaces.env; [ \"\$(cat /sys/class/net/\$WAN/address)\" = $WAN_MAC ] && ovs-vsctl list-ports br0 | xargs -I{} cat /sys/class/net/{}/address | grep -q $LAN_MAC"
check "WAN got an address from the ISP and the router reaches the ISP web server" \
  g "ip -4 addr show | grep -q 'inet 198.51.100.' && curl -s -m 10 http://$ISP_IP/ | grep -q 'hello from the ISP'"
check "the router resolves names through the ISP's resolver (from its WAN lease)" \
  g "getent hosts isp.example | grep -q $ISP_IP"
check "HTTPS (lighttpd) serves the Guest Board with the first-boot certificate" \
  g "curl -sk -m 10 https://127.0.0.1/ | grep -qi '<html\|<!doctype' && openssl s_client -connect 127.0.0.1:443 </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256 | grep -qi '$(cred tls-sha256 1)'"
WAN_IP=$(g ". /run/homework/interfaces.env; ip -4 -o addr show dev \$WAN | awk '{print \$4}' | cut -d/ -f1 | head -1" | tr -d '\r\n')
check "WAN side closed: from the ISP, the router ($WAN_IP) answers ping but not its web server (443, 80)" \
  sh -c "ip netns exec $NS_ISP ping -c1 -W5 '$WAN_IP' && ! ip netns exec $NS_ISP curl -sk -m 5 https://$WAN_IP/ && ! ip netns exec $NS_ISP curl -s -m 5 http://$WAN_IP/"
PD=$(delegated_prefix)
if [ -n "$PD" ] && v6_in "$PD" "$PD_POOL"; then
  pass "WAN asks for a prefix: the ISP delegated $PD (DHCPv6-PD, dhcpcd -> /run/homework/ipv6-delegated-prefix)"
  isp_route6 "$PD" >>"$ART/checks.log" 2>&1
else
  fail "router gets a delegated prefix from the ISP (DHCPv6-PD)" "got '$PD'; see $ART/kea-dhcp6.log"; PD=""
  g "systemctl --no-pager status homework-wan6; journalctl -u homework-wan6 --no-pager | tail -30" >>"$ART/checks.log" 2>&1
fi
check "the router reaches the ISP over IPv6 (WAN address and default route from the ISP's RAs)" \
  g "curl -6 -s -m 10 http://[$ISP6_IP]/ | grep -q 'hello from the ISP'"
check "data partition (hw-data) mounted on /var/lib/homework and grown to the disk" \
  g "findmnt -n -o SOURCE /var/lib/homework | grep -q vda5 && [ \$(df -m --output=size /var/lib/homework | tail -1) -gt 1000 ]"

# The device on the LAN
DEV_OK=no
if dev_dhcp && [[ "$IP" == 10.2.* ]] && [ "$MASK" = 30 ]; then
  pass "device got $IP/$MASK from the router (gateway $ROUTER)"; DEV_OK=yes
else
  fail "device gets a 10.2.x.y/30" "got '${IP:-nothing}/${MASK:-}'; see $ART/dev-dhcp.log"
  g "journalctl -u homework-controller --no-pager | tail -40" >>"$ART/checks.log" 2>&1
fi
APPROVED=no
if [ "$DEV_OK" = yes ]; then
  st=$(device_state "$DEV_MAC")
  if [ "$st" = pending ]; then pass "device $DEV_MAC is pending"; else fail "device is pending" "state '$st'"; fi
  check "pending device cannot reach the ISP" sh -c "! ip netns exec $NS_DEV curl -s -m 5 http://$ISP_IP/"
  DEV6="" DEV_P6=""
  if [ -n "$PD" ]; then
    dev_slaac
    DEV_P6=$(dev_prefix6 "$DEV_MAC")
    if [ -n "$DEV6" ] && [ "${DEV_P6#*/}" = 64 ] && v6_in "$DEV_P6" "$PD" && v6_in "$DEV6" "$DEV_P6"; then
      pass "device got $DEV6 by SLAAC (kernel, accept_ra=1) in its own /64 $DEV_P6 of the delegated prefix"
    else
      fail "device gets an IPv6 address in its own /64 of the delegated prefix" "address '$DEV6', homework devices: ipv6_prefix '$DEV_P6'"
      DEV6=""
    fi
    check "pending device cannot reach the ISP over IPv6" sh -c "! ip netns exec $NS_DEV curl -6 -s -m 5 http://[$ISP6_IP]/"
  else
    fail "device IPv6 checks" "no delegated prefix (see above)"
  fi
  # The first hour: no screen, no keyboard, nobody knows a secret of the router's yet; the
  # household plugged this device into a LAN port (image/README.md, "The first hour").
  offer=$(hh "http://$ROUTER/ws.v1/setup"); echo "offer: $offer" >>"$ART/checks.log"
  if hh "http://$ROUTER/any/page" | grep -q 'This is my router: set it up' &&
     echo "$offer" | python3 -c 'import json, sys; o = json.load(sys.stdin); sys.exit(not (o["open"] and o["wired"] and o["needs"] == "nothing"))'; then
    pass "the first hour: the pending device's waiting page (any http:// address) offers 'This is my router: set it up' (open, a wired port: nothing more needed)"
  else fail "the waiting page offers the set-up to the pending wired device" "offer '$offer'"; fi
  # a cut-off device's HTTPS goes to the captive server (RFC 8908: its API and the page for
  # any URL), never to the Guest Board's lighttpd: the router's own address included
  check "over HTTPS the pending device gets its waiting page, never the Guest Board or its API" \
    sh -c "ip netns exec $NS_DEV curl -sk -m 10 https://$ROUTER/ | grep -q 'Waiting for approval' && ! ip netns exec $NS_DEV curl -sk -m 10 https://$ROUTER/ws.v1/devices | grep -q '\"state\"'"
  if hh_setup "$HOUSEHOLD_PW" && [ "$(device_state "$DEV_MAC")" = permitted ]; then
    APPROVED=yes
    pass "the first hour: the device sets the router up from its waiting page (the household's password), is let in, and its one-time ticket opens the board's session over HTTPS"
    # A pending lease lasts 30 s and a real device's client renews it at half that; this
    # device's one-shot udhcpc does not, so it renews now, as its daemon would have, and
    # takes the permitted device's lease.
    dev_dhcp >/dev/null 2>&1 || true
    check "ws.v1 API refuses a change without credentials (401), from the household's device" \
      sh -c "[ \"\$(ip netns exec $NS_DEV curl -sk -m 20 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' -d '{}' https://$ROUTER/ws.v1/permit/02:00:00:00:00:99)\" = 401 ]"
    if ! api_login "$ADMIN_PW" && api_login; then
      pass "the router's first password (its console's) no longer logs in; the household's does (the board's login, from its device)"
    else fail "only the household's password logs in after the set-up" "see $ART/checks.log"; fi
    offer=$(hh "https://$ROUTER/ws.v1/setup"); echo "offer after the set-up: $offer" >>"$ART/checks.log"
    if echo "$offer" | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin)["open"])'; then
      pass "the set-up offer is gone once the household has its password (GET /ws.v1/setup: open false)"
    else fail "the set-up offer closes" "'$offer'"; fi
    sleep 2
    if dev curl -s -m 15 "http://$ISP_IP/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP'; then
      pass "approved device fetches a page from the ISP namespace through NAT"
    else
      dev_dhcp >/dev/null 2>&1   # some designs move the device on its next lease
      if dev curl -s -m 15 "http://$ISP_IP/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP'; then
        pass "approved device fetches a page from the ISP namespace through NAT (after renewing its lease)"
      else fail "approved device fetches a page through NAT" "see $ART/checks.log"; fi
    fi
    check "approved device reaches the Guest Board over HTTPS on its gateway" \
      sh -c "ip netns exec $NS_DEV curl -sk -m 10 https://$ROUTER/ | grep -qi 'html'"
    check "http://<gateway>/ redirects the device to HTTPS" \
      sh -c "ip netns exec $NS_DEV curl -s -m 10 -o /dev/null -w '%{http_code} %{redirect_url}' http://$ROUTER/ | grep -q '^30[18] https://'"
    check "approved device resolves names through the router" \
      sh -c "ip netns exec $NS_DEV dig +short +time=3 +tries=2 @$ROUTER isp.example | grep -q $ISP_IP"
    # The ISP's dnsmasq here knows no DNSSEC (it refuses the root's keys): the router's
    # validating resolver says so and pauses validation rather than fail every answer.
    check "the router's resolver (unbound) asks the ISP in plain DNS and says validation is paused there" \
      g "homework dns-upstream | grep -q 'plain DNS' && homework dnssec | grep -q 'paused'"
    check "approved device resolves names over TLS (853, homework-dnsd) and HTTPS (/dns-query, lighttpd -> dnsd)" \
      sh -c "ip netns exec $NS_DEV kdig @$ROUTER +tls +time=5 +retry=1 +short isp.example | grep -q $ISP_IP && ip netns exec $NS_DEV kdig @$ROUTER +https +time=5 +retry=1 +short isp.example | grep -q $ISP_IP"
    if [ -n "$DEV6" ]; then
      ok=no
      for _ in 1 2 3; do
        dev curl -6 -s -m 10 "http://[$ISP6_IP]/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP' && { ok=yes; break; }
        sleep 2
      done
      if [ $ok = yes ] && grep -qF "$DEV6" "$ART/isp-http6.log"; then
        pass "approved device fetches the ISP's page over IPv6, routed: the ISP sees $DEV6 (no NAT66)"
      else fail "approved device fetches the ISP's page over IPv6" "curl ok=$ok; see $ART/isp-http6.log"; fi
      dev python3 -m http.server 8081 --bind :: >"$ART/dev-listen6.log" 2>&1 &
      LISTENER=$!; PIDS+=("$LISTENER")
      for _ in $(seq 1 50); do dev ss -Hltn 'sport = :8081' | grep -q . && break; sleep 0.2; done
      # the port answers locally and the ISP's ping reaches the device (ICMPv6 echo passes, RFC
      # 4890), so the refused connection is the router's doing, not a missing route
      check "nothing from the ISP opens a TCP connection to the device ([$DEV6]:8081 listens; the ISP's ping reaches it)" \
        sh -c "ip netns exec $NS_DEV curl -s -m 5 -o /dev/null http://[$DEV6]:8081/ && ip netns exec $NS_ISP ping -6 -c1 -W5 $DEV6 && ! ip netns exec $NS_ISP curl -s -m 5 -o /dev/null http://[$DEV6]:8081/"
      # reaching in: a forward opens exactly this device, over IPv4 (DNAT on the WAN address)
      # and IPv6 (a pinhole on its own address); removed, both close again
      gq "homework forward add $DEV_MAC 9000 --to 8081 --description boot-test"
      reach_isp() {  # reach_isp URL: the ISP gets an answer within 10 s
        for _ in $(seq 1 10); do ip netns exec "$NS_ISP" curl -s -m 3 -o /dev/null "$1" && return 0; sleep 1; done
        return 1
      }
      check "a port forward opens the device to the ISP: $WAN_IP:9000 (DNAT to its port 8081) and [$DEV6]:8081 (pinhole)" \
        sh -c "$(declare -f reach_isp); NS_ISP=$NS_ISP; reach_isp http://$WAN_IP:9000/ && reach_isp 'http://[$DEV6]:8081/'"
      FWD_ID=$(g "homework --json forward list" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])' 2>/dev/null)
      gq "homework forward remove ${FWD_ID:-0}"
      check "the forward removed: the ISP is refused again" \
        sh -c "sleep 2; ! ip netns exec $NS_ISP curl -s -m 5 -o /dev/null http://$WAN_IP:9000/ && ! ip netns exec $NS_ISP curl -s -m 5 -o /dev/null 'http://[$DEV6]:8081/'"
      kill "$LISTENER" 2>/dev/null
    fi
    # on the image's Debian kernel the shaper's leaves are fq_codel (the dev/CI
    # kernel has only pfifo); turned on here, checked on both trees, turned off again
    check "priorities on: HTB with fq_codel leaves on the WAN and on br0, and the nftables classifier" \
      g ". /run/homework/interfaces.env; homework qos link --down 100000 --up 20000 --on >/dev/null \
         && for i in \$(seq 1 20); do homework --json qos | grep -q '\"active\": true' && break; sleep 1; done \
         && tc qdisc show dev \$WAN | grep -q 'qdisc htb 1: root' && tc qdisc show dev \$WAN | grep -q 'qdisc fq_codel' \
         && tc qdisc show dev br0 | grep -q 'qdisc htb 1: root' && tc qdisc show dev br0 | grep -q 'qdisc fq_codel' \
         && nft list table inet homework_qos >/dev/null \
         && homework --json qos | grep -q '\"leaf\": \"fq_codel\"'"
    dev_dhcp >/dev/null 2>&1   # a fresh lease: the checks above may have outlasted the last one
    check "the approved device fetches a page with shaping on" \
      sh -c "ip netns exec $NS_DEV curl -s -m 15 http://$ISP_IP/ | grep -q 'hello from the ISP'"
    g "homework qos link --off >/dev/null; tc qdisc show dev br0" >>"$ART/checks.log" 2>&1
  else
    fail "the first hour: the device sets the router up from its waiting page" "see $ART/checks.log"
  fi
fi

if [ -n "${HOMEWORK_BOOTTEST_HOLD:-}" ]; then   # debugging: keep boot 1 running
  touch "$ART/hold"
  log "holding; guest shell: python3 image/boot-test-agent.py $ART/agent.sock 60 'CMD'; continue: rm $ART/hold"
  while [ -e "$ART/hold" ]; do sleep 2; done
fi

# ================================================================== reboot -> boot 2: legacy BIOS
# The satellite boots later, plugged into the router's third NIC, a LAN port that
# nothing lists (image/boot-test-satellite.sh).
. "$TOP/image/boot-test-satellite.sh"

# boot 2's Wi-Fi checks have tight timings (a prober heard within 30 s): no recovery VM beside them
touch "$ART/recovery.hold"
log "rebooting the guest (systemctl reboot); it comes back with legacy BIOS (SeaBIOS + GRUB)"
GT=5 g "systemctl reboot" >/dev/null 2>&1
for _ in $(seq 1 120); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 1; done
if kill -0 "$QEMU_PID" 2>/dev/null; then fail "guest reboot" "did not shut down in 120s"; kill "$QEMU_PID"; sleep 1; fi
boot bios 2 -fw_cfg name=opt/org.homework.hwsim,string=1 || { fail "boot 2 (BIOS) QEMU start" "see $ART/qemu-boot2.log"; summary; exit 1; }
capture_boot_window 2 bios & CAPTURE_PID=$!    # power cuts in a normal BIOS boot
if READY2=$(wait_ready 2); then
  pass "boot 2 (legacy BIOS, GRUB): ready in ${READY2}s"
else
  fail "boot 2 (legacy BIOS) reaches HOMEWORK-READY" "$READY2; see $ART/ttyS0-boot2.log"; READY2=""; summary; exit 1
fi
wait "$CAPTURE_PID"
log "$(grep '^HOMEWORK-READY' "$ART/ttyS1-boot2.log" | tail -1)"
if [ "$(cred wifi-passphrase 2)" = "$PSK" ] && grep -q '^HOMEWORK-CRED admin-password=(set by the household' "$ART/ttyS1-boot2.log"; then
  pass "state kept across the reboot (the same Wi-Fi passphrase); the console no longer shows the router's first password, the household has its own"
else fail "state kept across the reboot" "Wi-Fi passphrase or the console's password line: $(grep -a 'HOMEWORK-CRED admin-password' "$ART/ttyS1-boot2.log" | tail -1)"; fi
if [ -n "$API_CSRF" ] && api GET /session | grep -q '^HTTP 200'; then
  pass "the household's board session survives the reboot"
else fail "the household's board session survives the reboot" "see $ART/checks.log"; fi
if units_check 2 >>"$ART/checks.log" 2>&1; then pass "units active after the reboot"; else fail "units active after the reboot"; fi
if [ "$APPROVED" = yes ]; then
  st=$(device_state "$DEV_MAC")
  if [ "$st" = permitted ]; then pass "approval kept across the reboot (state permitted)"
  else fail "approval kept across the reboot" "state '$st'"; fi
  if dev_dhcp && [[ "$IP" == 10.2.* ]] && dev curl -s -m 15 "http://$ISP_IP/" | grep -q 'hello from the ISP'; then
    pass "after the reboot the device gets $IP/$MASK again and reaches the ISP without a new approval"
  else fail "device reaches the ISP after the reboot" "lease '${IP:-none}'"; fi
  if [ -n "${DEV6:-}" ]; then
    PD2=$(delegated_prefix); OLD6=$DEV6
    [ -n "$PD2" ] && isp_route6 "$PD2" >>"$ART/checks.log" 2>&1
    dev_slaac; P2=$(dev_prefix6 "$DEV_MAC")
    if [ "$PD2" = "$PD" ] && [ "$P2" = "$DEV_P6" ] && [ "$DEV6" = "$OLD6" ] &&
       dev curl -6 -s -m 15 "http://[$ISP6_IP]/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP'; then
      pass "after the reboot: the same delegated prefix and /64, and the device reaches the ISP over IPv6"
    else fail "IPv6 after the reboot" "prefix '$PD2' (was $PD), /64 '$P2' (was $DEV_P6), address '$DEV6' (was $OLD6)"; fi
  fi
else
  skip "a reboot keeps the approval" "no approval was made in boot 1 (see above)"
fi

# ================================================================== Wi-Fi (mac80211_hwsim in the guest)
log "Wi-Fi: three mac80211_hwsim radios loaded at boot 2 (homework-test-hwsim): hostapd (nl80211, WPA2) on wlan0, wpa_supplicant on wlan1 in a guest namespace, a prober on wlan2 in another"
PROBE_MAC=""
check "Wi-Fi interface found at boot: wlan0 on br0, hostapd active, controller config lists it" \
  g "grep -q 'wlan0' /run/homework/interfaces.env && ovs-vsctl list-ports br0 | grep -qx wlan0 && systemctl is-active -q homework-hostapd@wlan0 && grep -q '\"wlan0\"' /run/homework/homework.toml"
GT=90 g "$(cat <<EOF
set -e
STA_PHY=\$(cat /sys/class/net/wlan1/phy80211/name)
ip netns add sta
iw phy \$STA_PHY set netns name sta
. /var/lib/homework/wifi.env
cat > /run/sta-wpa.conf <<CONF
ctrl_interface=/run/sta-wpa
network={
  ssid="\$SSID"
  psk="\$PASSPHRASE"
  key_mgmt=WPA-PSK
  proto=RSN
}
CONF
for i in \$(seq 1 60); do systemctl is-active -q homework-hostapd@wlan0.service && break; sleep 0.5; done
systemctl is-active homework-hostapd@wlan0.service
ip netns exec sta ip link set lo up
ip netns exec sta wpa_supplicant -B -D nl80211 -i wlan1 -c /run/sta-wpa.conf -P /run/sta-wpa.pid -f /run/sta-wpa.log
for i in \$(seq 1 60); do
  ip netns exec sta wpa_cli -p /run/sta-wpa -i wlan1 status | grep -q wpa_state=COMPLETED && break; sleep 0.5
done
ip netns exec sta wpa_cli -p /run/sta-wpa -i wlan1 status
ip netns exec sta cat /sys/class/net/wlan1/address > /run/sta-mac
EOF
)" >"$ART/wifi.log" 2>&1
if grep -q 'wpa_state=COMPLETED' "$ART/wifi.log"; then
  pass "Wi-Fi station associates with the Homework AP (WPA2-PSK handshake completed, hostapd on br0 port wlan0)"
  STA_MAC=$(g "cat /run/sta-mac" | tr -d '\r\n')
  WIFI_OK=yes
else
  fail "Wi-Fi station associates (WPA2)" "see $ART/wifi.log"
  g "journalctl -u 'homework-hostapd@*' --no-pager | tail -30; cat /run/sta-wpa.log | tail -30" >>"$ART/wifi.log" 2>&1
  WIFI_OK=no
fi
if [ "$WIFI_OK" = yes ]; then
  # (should be immediate: the controller had wlan0 in its config from boot)
  GT=200 g 'for i in $(seq 1 180); do [ "$(ovs-vsctl get controller br0 is_connected)" = true ] && homework devices >/dev/null 2>&1 && exit 0; sleep 1; done; exit 1' >>"$ART/wifi.log" 2>&1
  sta_dhcp='ip netns exec sta udhcpc -i wlan1 -f -q -n -t 6 -T 3 -s /bin/true 2>&1 | grep -o "lease of [0-9.]* obtained"'
  GT=60 g "$sta_dhcp" >"$ART/wifi-dhcp-pending.log" 2>&1   # first lease: pending
  if decide permit "$STA_MAC" >/dev/null && GT=60 g "$sta_dhcp; ip netns exec sta true" >"$ART/wifi-dhcp.log" 2>&1 \
     && grep -q 'lease of 10\.2\.' "$ART/wifi-dhcp.log" && [ "$(device_state "$STA_MAC")" = permitted ]; then
    pass "Wi-Fi station gets a /30 after approval ($(grep -o '10\.2\.[0-9.]*' "$ART/wifi-dhcp.log" | head -1), state permitted)"
  else fail "Wi-Fi station gets a /30 after approval" "see $ART/wifi-dhcp.log, $ART/controller-diag.log"; controller_diag "the Wi-Fi station was not let in"; fi
  # the radio component reads the kernel's station dump into hwdb's Links
  sta_view() {  # sta_view MAC FIELD: one field of the device view (homework --json status)
    g "homework --json status $1" 2>/dev/null | python3 -c 'import json,sys
try:
    d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; v=d.get(sys.argv[1]); print("" if v is None else v)
except Exception: print("")' "$2"
  }
  GT=40 g "for i in \$(seq 1 30); do hwdb --json -q \"select mac, rssi from Links [range 30 seconds] where mac = '$STA_MAC'\" > /run/sta-links.json && grep -q '\"rssi\"' /run/sta-links.json && break; sleep 1; done; cat /run/sta-links.json; echo; iw dev wlan0 station dump" >"$ART/wifi-links.log" 2>&1
  RSSI=$(head -1 "$ART/wifi-links.log" | python3 -c 'import json,sys
try: print(min(r["rssi"] for r in json.load(sys.stdin)["rows"]))
except Exception: print("")' 2>/dev/null)
  if [ -n "$RSSI" ] && python3 -c "import sys; sys.exit(not -100 < float('$RSSI') < 0)"; then
    pass "hwdb's Links has rows for the station $STA_MAC with a real signal from the kernel's station dump (rssi $RSSI dBm)"
  else fail "hwdb's Links has rows for the Wi-Fi station with a negative dBm signal" "rssi '$RSSI'; see $ART/wifi-links.log"; fi
  STA_RADIO=$(sta_view "$STA_MAC" radio); STA_BAND=$(sta_view "$STA_MAC" band)
  if [ "$STA_RADIO" = wlan0 ] && [ -n "$STA_BAND" ]; then
    pass "the station's device view says radio $STA_RADIO${STA_BAND:+, band $STA_BAND}"
  else fail "the station's device view names its radio (wlan0) and band" "radio '$STA_RADIO' band '$STA_BAND'"; fi
  # a radio that only probes (wlan2, its own guest namespace) is heard, not associated
  PROBE_MAC=00:16:3e:16:00:02   # wlan2 gets it: a vendor's MAC (hwsim's own 02:... are randomised ones, grouped)
  GT=30 g "$(cat <<EOF
set -e
ip netns add probe
iw phy \$(cat /sys/class/net/wlan2/phy80211/name) set netns name probe
ip netns exec probe ip link set wlan2 address $PROBE_MAC
ip netns exec probe ip link set wlan2 up
setsid sh -c 'while :; do ip netns exec probe iw dev wlan2 scan >/dev/null 2>&1; sleep 1; done' </dev/null >/dev/null 2>&1 &
echo \$! > /run/probe-loop.pid
EOF
)" >"$ART/wifi-probe.log" 2>&1
  # 30 s from the first probe (the loop is timed: a CLI call alone takes seconds under TCG)
  GT=60 g "end=\$(( \$(date +%s) + 30 )); while [ \$(date +%s) -lt \$end ]; do homework --json nearby > /run/nearby.json 2>&1 && grep -qi '$PROBE_MAC' /run/nearby.json && break; sleep 1; done; cat /run/nearby.json; echo; echo stations:; iw dev wlan0 station dump | grep -i '^Station'" >>"$ART/wifi-probe.log" 2>&1
  if grep -qi "\"mac\": *\"$PROBE_MAC\"" "$ART/wifi-probe.log" && ! grep -qi "^Station $PROBE_MAC" "$ART/wifi-probe.log"; then
    pass "a probing, non-associated radio ($PROBE_MAC, iw scan on wlan2) is in homework nearby within 30 s"
  else
    fail "a probing radio appears in homework nearby within 30 s, not associated" "see $ART/wifi-probe.log"
    # what hostapd's control socket says meanwhile (its events go to the action script)
    GT=60 g "$(cat <<'EOF'
echo "probe loop: $(cat /run/probe-loop.pid) $(pgrep -af 'iw dev wlan2' | head -3)"
ip netns exec probe ip link show wlan2; ip netns exec probe iw dev wlan2 info
printf '#!/bin/sh\necho "$*" >> /run/hostapd-events.log\n' > /run/hostapd-ev.sh; chmod +x /run/hostapd-ev.sh
timeout 15 hostapd_cli -p /run/hostapd -i wlan0 -a /run/hostapd-ev.sh & sleep 1
ip netns exec probe iw dev wlan2 scan 2>&1 | grep -E 'BSS |SSID|failed' | head -5
wait; echo "hostapd events:"; cat /run/hostapd-events.log
journalctl -u homework-controller --no-pager | grep -i 'radio\|nearby\|hostapd' | tail -20
EOF
)" >>"$ART/wifi-probe.log" 2>&1
  fi
  # the station leaves: its station-dump entry goes and radio_seen_at stops advancing
  SEEN0=$(sta_view "$STA_MAC" radio_seen_at)
  GT=60 g "$sta_dhcp; sleep 2" >>"$ART/wifi-leave.log" 2>&1   # frames from the station: it is heard again
  SEEN1=$(sta_view "$STA_MAC" radio_seen_at)
  GT=30 g "ip netns exec sta wpa_cli -p /run/sta-wpa -i wlan1 disconnect; for i in \$(seq 1 20); do iw dev wlan0 station dump | grep -qi '^Station $STA_MAC' || { echo gone; break; }; sleep 0.5; done; sleep 2" >>"$ART/wifi-leave.log" 2>&1
  SEEN2=$(sta_view "$STA_MAC" radio_seen_at); sleep 5; SEEN3=$(sta_view "$STA_MAC" radio_seen_at)
  echo "radio_seen_at: before traffic $SEEN0, after $SEEN1, after leaving $SEEN2, 5 s later $SEEN3" >>"$ART/wifi-leave.log"
  if grep -qx gone "$ART/wifi-leave.log" && [ -n "$SEEN2" ] && [ "$SEEN2" = "$SEEN3" ] &&
     python3 -c "import sys; sys.exit(not float('$SEEN0') < float('$SEEN1'))" 2>/dev/null; then
    pass "the station disconnects: gone from wlan0's station dump, radio_seen_at stops advancing (it advanced while associated)"
  else fail "a disconnected station leaves the station dump and its radio_seen_at stops advancing" "see $ART/wifi-leave.log"; fi
  if decide blacklist "$STA_MAC" >/dev/null; then
    GT=60 g "ip netns exec sta wpa_cli -p /run/sta-wpa -i wlan1 disconnect >/dev/null; sleep 1; ip netns exec sta wpa_cli -p /run/sta-wpa -i wlan1 reconnect >/dev/null; sleep 15; ip netns exec sta wpa_cli -p /run/sta-wpa -i wlan1 status" >"$ART/wifi-blacklist.log" 2>&1
    if grep -q 'wpa_state=COMPLETED' "$ART/wifi-blacklist.log"; then
      fail "blacklist stops the station's key handshake" "still COMPLETED; see $ART/wifi-blacklist.log"
    else pass "blacklisted station cannot complete its key handshake ($(grep -o 'wpa_state=[A-Z_0-9]*' "$ART/wifi-blacklist.log"))"; fi
  else fail "blacklist the station" "the API refused"; fi
fi

# the settings page's Wi-Fi passphrase change (POST /ws.v1/wifi) restarts the AP
NEW_PSK="boot-test new passphrase 18"
sta_try() {  # sta_try PASSPHRASE SECONDS [KEY_MGMT]: wpa_supplicant on wlan2 (namespace probe); prints its
  # wpa_state (and, with KEY_MGMT, the key management it associated with: "wpa_state=... key_mgmt=...")
  local km=${3:-WPA-PSK} fields='wpa_state=[A-Z_0-9]*'
  [ -n "${3:-}" ] && fields='wpa_state=[A-Z_0-9]*\|^key_mgmt=[A-Z0-9-]*'
  GT=$(( $2 + 20 )) g "$(cat <<EOF
kill \$(cat /run/probe-loop.pid 2>/dev/null) 2>/dev/null; [ -f /run/probe-wpa.pid ] && kill \$(cat /run/probe-wpa.pid) 2>/dev/null; sleep 0.5
printf 'ctrl_interface=/run/probe-wpa\nnetwork={\n ssid="%s"\n psk="%s"\n key_mgmt=$km\n proto=RSN\n}\n' '$SSID' '$1' > /run/probe-wpa.conf
ip netns exec probe wpa_supplicant -B -D nl80211 -i wlan2 -c /run/probe-wpa.conf -P /run/probe-wpa.pid -f /run/probe-wpa.log
for i in \$(seq 1 $(( $2 * 2 ))); do ip netns exec probe wpa_cli -p /run/probe-wpa -i wlan2 status | grep -q wpa_state=COMPLETED && break; sleep 0.5; done
ip netns exec probe wpa_cli -p /run/probe-wpa -i wlan2 status | grep -o '$fields' | tr '\n' ' ' | sed 's/ \$//'; echo
kill \$(cat /run/probe-wpa.pid); rm -f /run/probe-wpa.pid; sleep 0.5
EOF
)" 2>>"$ART/wifi-passphrase-err.log" | tr -d '\r' | tee -a "$ART/wifi-passphrase.log" | tail -1
}
roaming_check() {  # 802.11r/k/v: an FT-PSK station associates; the AP's beacon offers neighbour reports and BSS transition
  local ft caps
  ft=$(sta_try "$1" 30 FT-PSK)
  caps=$(GT=40 g "ip netns exec probe ip link set wlan2 up; for i in 1 2 3; do ip netns exec probe iw dev wlan2 scan 2>/dev/null > /run/probe-scan.txt && grep -q 'BSS Transition' /run/probe-scan.txt && break; sleep 2; done; grep -o 'BSS Transition\|Neighbor Report\|FT/PSK' /run/probe-scan.txt | sort -u | tr '\n' ','" | tr -d '\r')
  echo "fast roaming: station '$ft', beacon '$caps'" >>"$ART/wifi-passphrase.log"
  if [[ " $ft " == *" wpa_state=COMPLETED "* ]] && [[ " $ft " == *" key_mgmt=FT-PSK "* ]] && [[ "$caps" == *"BSS Transition"* ]] &&
     [[ "$caps" == *"Neighbor Report"* ]] && [[ "$caps" == *"FT/PSK"* ]]; then
    pass "802.11r/k/v: a station associates with FT-PSK (fast roaming), and the AP offers FT/PSK, neighbour reports (k) and BSS transition (v)"
  else fail "802.11r/k/v offered and an FT-PSK station associates" "station '$ft', beacon '$caps'; see $ART/wifi-passphrase.log"; fi
}
if [ -n "$PROBE_MAC" ] && { [ -n "$API_CSRF" ] || api_login; }; then
  out=$(api_json POST /wifi "{\"ssid\": \"$SSID\", \"passphrase\": \"short77\"}"); echo "short passphrase: $out" >>"$ART/wifi-passphrase.log"
  if echo "$out" | grep -q '^HTTP 400' && echo "$out" | grep -q 'passphrase'; then
    pass "POST /ws.v1/wifi refuses a 7-character passphrase (400 with a message)"
  else fail "POST /ws.v1/wifi refuses a 7-character passphrase" "see $ART/wifi-passphrase.log"; fi
  out=$(api_json POST /wifi "{\"ssid\": \"$SSID\", \"passphrase\": \"$NEW_PSK\"}"); echo "change: $out" >>"$ART/wifi-passphrase.log"
  for _ in $(seq 1 30); do   # the settings page polls until hostapd has the new passphrase
    w=$(api GET /wifi); echo "$w" | grep -q '"ok": *true' && break; sleep 1
  done
  echo "wifi: $w" >>"$ART/wifi-passphrase.log"
  if echo "$out" | grep -q '^HTTP 200' && ! echo "$out" | grep -qF "$NEW_PSK"; then
    NEW_STATE=$(sta_try "$NEW_PSK" 30); OLD_STATE=$(sta_try "$PSK" 15)
    if [ "$NEW_STATE" = wpa_state=COMPLETED ] && [ -n "$OLD_STATE" ] && [ "$OLD_STATE" != wpa_state=COMPLETED ]; then
      pass "after POST /ws.v1/wifi a station with the new passphrase associates (COMPLETED), one with the old does not ($OLD_STATE)"
    else fail "the new Wi-Fi passphrase is used: new associates, old does not" "new '$NEW_STATE', old '$OLD_STATE'; see $ART/wifi-passphrase.log"; fi
    roaming_check "$NEW_PSK"
  else fail "POST /ws.v1/wifi changes the passphrase (200, passphrase not echoed)" "see $ART/wifi-passphrase.log"; fi
else fail "change the Wi-Fi passphrase through the API" "no prober radio or no API login; see $ART/wifi-probe.log"; fi

# the settings page's WAN status (GET /ws.v1/system "wan", from udhcpc-wan's lease file)
[ -n "$API_CSRF" ] || api_login
out=$(api GET /system); echo "system: $out" >>"$ART/checks.log"
if echo "$out" | head -1 | python3 -c 'import json, sys
w = json.load(sys.stdin)["wan"]
sys.exit(not (w["up"] and w["address"].startswith("198.51.100.") and sys.argv[1] in w["dns"] and w["up_for"] >= 0))' "$ISP_IP"; then
  pass "GET /ws.v1/system shows the WAN lease (address, DNS $ISP_IP, up for $(echo "$out" | head -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["wan"]["up_for"])') s)"
else fail "GET /ws.v1/system shows the WAN lease" "see $ART/checks.log"; fi

rm -f "$ART/recovery.hold"

# Diagnostics for the record (boot time per unit, the controller's log)
g "systemd-analyze; systemd-analyze critical-chain homework-ready.service; systemd-analyze blame | head -25; journalctl -b -o short-monotonic -u homework-firstboot -u homework-net --no-pager | tail -30; journalctl -u homework-controller --no-pager | tail -40; echo '== memory and restarts'; free -m; dmesg | grep -iE 'out of memory|killed process|oom' | tail; systemctl show homework-controller -p NRestarts -p ActiveEnterTimestampMonotonic -p MainPID; journalctl -b -u homework-controller --no-pager | grep -iE 'starting|stopped|traceback|error|restart' | tail -30" \
  >"$ART/guest-diagnostics.log" 2>&1

# ================================================================== A/B updates
# Boot 2 (BIOS, slot A): the update to completion -> boot 3 (BIOS: GRUB's one-shot try_slot):
# slot B with the new version, marked good once ready -> slot A made into a build that never
# becomes ready and offered once -> boot 4 (UEFI, systemd-boot boot counting): tried once,
# reboots by itself -> boot 5: slot B again -> power cuts in a slot's read-back (boot 6) and in
# its first boot (boots 7, 8).
# Updates are started with the controller's update-start command over its control socket (what
# the CLI and the API's upload call), the file fetched by the router from the ISP's web server.
ctl() {  # ctl CMD [JSON]: the controller's JSON answer to one command
  local args=${2:-}
  [ -n "$args" ] || args='{}'
  GT=130 g "python3 /var/lib/homework/bt-ctl.py $1 '$args'"
}
ctl_install() {  # the guest-side client of the control socket (on the data partition: every boot has it)
  g "cat > /var/lib/homework/bt-ctl.py <<'EOF'
import json, socket, sys, time


def call(cmd, args, timeout=110):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect('/run/homework/control.sock')
    s.sendall((json.dumps({'cmd': cmd, 'args': args}) + '\\n').encode())
    buf = b''
    while b'\\n' not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf.split(b'\\n')[0])


if sys.argv[1] == 'wait':   # wait MIN_PERCENT SECONDS: update-status once the update is no longer
    # being written, or has reached MIN_PERCENT, or SECONDS passed (one process, not one per poll).
    # A call that fails (no answer in 110 s, refused, an error answer) is logged with its time
    # in bt-ctl.log and tried again: the failure is evidence, not the end of the wait.
    end = time.monotonic() + float(sys.argv[3])
    r = {'state': 'no-answer', 'percent': 0}
    while True:
        try:
            answer = call('update-status', {}, timeout=30)
            if 'result' not in answer:
                raise RuntimeError(answer)
            r = answer['result']
        except Exception as exc:
            with open('/var/lib/homework/bt-ctl.log', 'a') as log:
                log.write(time.strftime('%H:%M:%S') + ' update-status failed: ' + repr(exc) + '\\n')
            if time.monotonic() > end:
                break
            time.sleep(1)
            continue
        busy = r['state'] in ('receiving', 'verifying', 'writing')
        if not busy or r['percent'] >= int(sys.argv[2]) or time.monotonic() > end:
            break
        time.sleep(1)
    print(json.dumps(r))
    sys.exit(0)
r = call(sys.argv[1], json.loads(sys.argv[2]))
print(json.dumps(r))
sys.exit(0 if r.get('ok') else 1)
EOF"
}
ustatus() {  # ustatus MIN_PERCENT SECONDS: "state percent error" once done, at MIN_PERCENT or after SECONDS
  GT=$(( $2 + 45 )) g "python3 /var/lib/homework/bt-ctl.py wait $1 $2" | python3 -c 'import json, sys
r = json.loads(sys.stdin.readline())
print(r.get("state"), r.get("percent"), r.get("error"))' 2>/dev/null
}
uphase() {  # uphase MIN_PERCENT SECONDS: "phase percent" (writing, verifying, boot-loader, ...), as ustatus waits
  GT=$(( $2 + 45 )) g "python3 /var/lib/homework/bt-ctl.py wait $1 $2" | python3 -c 'import json, sys
r = json.loads(sys.stdin.readline())
print(r.get("phase") or r.get("state"), r.get("percent"))' 2>/dev/null
}
fetch_hwup() {  # fetch_hwup NAME: the router downloads $ART/www/NAME from the ISP's web server
  GT=125 g "rm -f /var/lib/homework/bt-update.hwup; curl -sf -m 115 -o /var/lib/homework/bt-update.hwup http://$ISP_IP/$1 && sync && ls -l /var/lib/homework/bt-update.hwup" >>"$ART/update.log" 2>&1
}
update_start() { ctl update-start '{"path": "/var/lib/homework/bt-update.hwup"}'; }
wait_update() {  # wait_update SECONDS: until ready-to-reboot (0), or failed/idle/timeout (1)
  local end=$(( $(date +%s) + $1 )) st
  while [ "$(date +%s)" -lt "$end" ]; do
    st=$(ustatus 101 90)
    echo "update-status: ${st:-no answer within the agent bound (a starved guest), asking again}" >>"$ART/update.log"
    # No answer is not an answer: a guest starved by its own slot write (TCG beside the e2e
    # suite) may not run the status call within the agent's bound; the caller's bound decides.
    case "$st" in ready-to-reboot*) return 0 ;; writing*|verifying*|receiving*|"") ;; *) return 1 ;; esac
  done
  return 1
}
entries() { g "ls /boot/efi/loader/entries/; grep -v '^#' /boot/efi/grub/grubenv" | tr -d '\r' | tr '\n' ' '; }
in_slot() {  # in_slot SLOT VERSION SEQUENCE: the guest runs that slot with that build
  g "grep -q 'root=PARTLABEL=hw-root-$1 ' /proc/cmdline && [ \"\$(head -1 /etc/homework/version)\" = '$2' ] && grep -qx 'sequence $3' /etc/homework/version"
}
wait_gone() {  # wait_gone SECONDS: QEMU exits (the guest rebooted: -no-reboot) within SECONDS
  local i
  for i in $(seq 1 "$1"); do kill -0 "$QEMU_PID" 2>/dev/null || return 0; sleep 1; done
  return 1
}
ab_boot() {  # ab_boot uefi|bios N WHAT: boot and wait for readiness, or fail (return 1)
  boot "$1" "$2" || { fail "boot $2 ($1) QEMU start" "see $ART/qemu-boot$2.log"; return 1; }
  start_marking_capture "$2" "$1"
  local t
  if t=$(wait_ready "$2"); then pass "boot $2 ($1, $3): ready in ${t}s"; return 0; fi
  fail "boot $2 ($1, $3) reaches HOMEWORK-READY" "$t; see $ART/ttyS0-boot$2.log"; return 1
}
state_kept() {  # state_kept WHEN: the approval (and the device's way out) survived
  [ "$APPROVED" = yes ] || { skip "approval kept $1" "no approval was made in boot 1"; return; }
  local st
  st=$(device_state "$DEV_MAC")
  if [ "$st" = permitted ] && dev_dhcp && dev curl -s -m 15 "http://$ISP_IP/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP'; then
    pass "$1: the device is still permitted and reaches the ISP ($IP)"
  else fail "$1: the device is still permitted and reaches the ISP" "state '$st', lease '${IP:-none}'"; fi
}
full_update() {  # full_update FILE SLOT SEQUENCE: install the downloaded FILE into SLOT; the ESP points at it once
  local t0 out
  t0=$(date +%s)
  out=$(update_start); echo "update-start $1: $out" >>"$ART/update.log"
  if wait_update 1800; then
    UPDATE_TIME=$(( $(date +%s) - t0 ))
    local e; e=$(entries)
    if [[ " $e " == *" homework-$2+1.conf "* ]] && [[ "$e" == *"try_slot=$2"* ]] &&
       g "grep -qx 'version $3' '/boot/efi/loader/entries/homework-$2+1.conf'" >/dev/null; then
      pass "$1 verified and written to slot ${2^^} in ${UPDATE_TIME}s: ready-to-reboot, entry homework-$2+1.conf (version $3), grubenv try_slot=$2"
      return 0
    fi
    fail "$1 written: the ESP points at slot $2 once" "ESP: $e"
  else fail "$1 installs (ready-to-reboot)" "$(ustatus 0 0); see $ART/update.log, $ART/controller-diag.log"; controller_diag "$1 did not install"; fi
  g "journalctl -u homework-controller --no-pager | grep -i update | tail -20" >>"$ART/update.log" 2>&1
  return 1
}
finish_written_update() {  # finish_written_update FILE SLOT SEQUENCE: the ESP step for a written slot
  local out e t0; t0=$(date +%s)
  out=$(GT=600 g "PYTHONPATH=/usr/lib/homework/nox-modules python3 -c 'import sys
from pathlib import Path
from homework.update import apply, hwup, slots
bundle = hwup.verify(Path(\"/var/lib/homework/bt-update.hwup\"), hwup.load_public_key(Path(\"/usr/share/homework/update-key.pub\")),
                     hwup.read_running(Path(\"/etc/homework/version\")))
target = apply.Target(sys.argv[1], slots.slot_device(\"/dev/disk/by-partlabel/hw-root-{slot}\", sys.argv[1]), Path(\"/boot/efi\"))
apply.point_boot_at(bundle, target)
print(\"finished\", bundle.version, bundle.sequence)' $2" 2>&1)
  echo "finish $1 in slot $2: $out" >>"$ART/update.log"
  e=$(entries)
  if [[ "$out" == *"finished "*" $3"* ]] && [[ " $e " == *" homework-$2+1.conf "* ]] && [[ "$e" == *"try_slot=$2"* ]]; then
    pass "$1, whose system slot ${2^^} holds (written before the power cut), verified again and offered once ($(( $(date +%s) - t0 ))s): entry homework-$2+1.conf, grubenv try_slot=$2"
    return 0
  fi
  fail "$1's written slot $2 is offered once" "output '$out', ESP: $e"
  return 1
}
ctl_reboot() {  # the controller's reboot command (POST /ws.v1/system/reboot), then QEMU exits
  ctl reboot >>"$ART/update.log" 2>&1
  wait_gone 120 || { fail "guest reboot" "did not shut down in 120s"; kill "$QEMU_PID"; sleep 1; }
}

ab_updates() {
  if [ -z "$V1" ]; then fail "A/B update checks" "no update file next to the image"; return; fi
  if ! wait "$HWUP_PID"; then fail "make the second build's update file (version bump)" "see $ART/hwup-make.log"; return; fi
  HWUP_PID=""
  pass "second build made from ${HWUP##*/}: $V2 (sequence $S2), signed with the test key"
  ctl_install >>"$ART/update.log" 2>&1
  local out p e

  # A power cut while the slot is written is A/B 3's cut in the read-back: the same rule (the
  # ESP never points at a slot before it is whole), one boot fewer.
  # (1) the update to completion, then the new slot boots once and is marked good
  log "A/B 1: to completion, reboot (boot 3, BIOS: GRUB's try_slot)"
  fetch_hwup update-good.hwup || { fail "the router downloads update-good.hwup" "see $ART/update.log"; return; }
  full_update update-good.hwup b "$S2" || return
  plant_mark_pause
  local t_reboot; t_reboot=$(date +%s)
  ctl_reboot
  ab_boot bios 3 "slot B tried once by GRUB" || return
  # downtime seen by the permitted device: from the reboot command to its next page from the ISP
  if dev curl -s -m 5 "http://$ISP_IP/" 2>/dev/null | grep -q 'hello from the ISP' ||
     { dev_dhcp >/dev/null 2>&1 && dev curl -s -m 10 "http://$ISP_IP/" 2>/dev/null | grep -q 'hello from the ISP'; }; then
    DOWNTIME=$(( $(date +%s) - t_reboot ))
  fi
  check "boot 3 runs slot B with the new build: $V2 (sequence $S2) in /etc/homework/version" in_slot b "$V2" "$S2"
  if units_check 4 >>"$ART/checks.log" 2>&1; then pass "units active on the new version"; else fail "units active on the new version"; fi
  state_kept "after the update"
  wait_mark_good
  e=$(entries)
  if [[ " $e " == *" homework-b.conf "* ]] && [[ "$e" != *"homework-b+"* ]] && [[ "$e" == *"good_slot=b "* ]] && [[ "$e" == *"try_slot= "* ]]; then
    pass "slot B marked good once ready (homework-mark-good): blessed entry homework-b.conf, grubenv good_slot=b, try_slot cleared"
  else fail "slot B marked good once ready" "ESP: $e"; g "journalctl -u homework-mark-good --no-pager | tail -20" >>"$ART/checks.log" 2>&1; fi
  # the same file again (now the running build): refused as too old, nothing written
  out=$(update_start); echo "update-start, the running build: $out" >>"$ART/update.log"
  if echo "$out" | grep -q 'too old' && [ "$(entries)" = "$e" ]; then
    pass "the running build's own .hwup is refused: $(echo "$out" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline()).get("error"))' 2>/dev/null); ESP unchanged"
  else fail "the running build's .hwup is refused as too old, nothing written" "answer '$out', ESP: $(entries)"; fi

  # The satellite VM boots now, beside A/B 2 and 3: it waits, pending, through their five
  # restarts of the router (three reboots, two power cuts). Booted earlier, it idled beside
  # A/B 1's write and slowed it by minutes under TCG.
  satellite_start

  # (2) a new version that never becomes ready goes back to the good slot by itself. Slot A (the
  # old build) is turned into one by hand: a newer version and sequence, its controller exits at
  # once (drop-in ExecStart=/bin/false; its mark-good waits 20 s, not 180 s), and it is offered to
  # the boot loaders the way an update does it, with the update code's own functions (entry
  # homework-a+1.conf, try_slot=a). Writing a second whole .hwup would add ~3 min; (1) covers that.
  log "A/B 2: slot A made into a build whose controller exits, tried once; boot 4 (UEFI) must fall back by itself"
  GT=120 g "set -e; mkdir -p /run/bt-a; mount /dev/disk/by-partlabel/hw-root-a /run/bt-a
    printf '%s\nsequence %s\n' '$V3' '$S3' > /run/bt-a/etc/homework/version
    d=/run/bt-a/etc/systemd/system; mkdir -p \$d/homework-controller.service.d \$d/homework-mark-good.service.d
    printf '[Service]\nExecStart=\nExecStart=/bin/false\nRestart=no\n' > \$d/homework-controller.service.d/boottest-broken.conf
    printf '[Service]\nEnvironment=HOMEWORK_READY_WAIT=20\n' > \$d/homework-mark-good.service.d/boottest-short-wait.conf
    umount /run/bt-a
    PYTHONPATH=/usr/lib/homework/nox-modules python3 -c 'import sys; from pathlib import Path; from homework.update import slots; esp = Path(\"/boot/efi\")
with slots.writable(esp): slots.add_try_entry(esp, \"a\", sys.argv[1], int(sys.argv[2])); slots.update_grubenv(esp, try_slot=\"a\")' '$V3' '$S3'" >>"$ART/update.log" 2>&1
  e=$(entries)
  if [[ " $e " == *" homework-a+1.conf "* ]] && [[ "$e" == *"try_slot=a"* ]]; then
    pass "slot A holds $V3 (sequence $S3, its controller exits) and is offered once: $e"
  else fail "offer the broken slot A once" "ESP: $e; see $ART/update.log"; return; fi
  GT=5 g "systemctl reboot" >/dev/null 2>&1
  wait_gone 120 || { fail "guest reboot" "did not shut down in 120s"; kill "$QEMU_PID"; sleep 1; }
  boot uefi 4 || { fail "boot 4 (UEFI) QEMU start" "see $ART/qemu-boot4.log"; return; }
  if wait_gone $((BOOT_TIMEOUT + 120)) && grep -q '^HOMEWORK-SLOT failed=a' "$ART/ttyS1-boot4.log"; then
    pass "boot 4 (UEFI): systemd-boot tried slot A ($V3) once; not ready, homework-mark-good rebooted by itself"
  else
    fail "boot 4: the broken slot A is tried once and reboots by itself" "see $ART/ttyS0-boot4.log, ttyS1-boot4.log"
    kill -0 "$QEMU_PID" 2>/dev/null && { kill -9 "$QEMU_PID"; wait_gone 10; }
  fi
  # boot 5: which slot the boot loader chose is known as soon as the agent answers
  boot uefi 5 || { fail "boot 5 (UEFI) QEMU start" "see $ART/qemu-boot5.log"; return; }
  start_marking_capture 5 uefi
  capture_boot_window 5 uefi & local window=$!     # power cuts in a UEFI boot
  wait_line '^HOMEWORK-AGENT ready' "$ART/ttyS1-boot5.log"
  e=$(entries)
  if in_slot b "$V2" "$S2" >>"$ART/checks.log" 2>&1 && [[ " $e " == *" homework-a+0-1.conf "* ]] && [[ " $e " == *" homework-b.conf "* ]]; then
    pass "boot 5: back on slot B ($V2) by itself within two boots; slot A's entry used its one try (ESP: $e)"
  else fail "back on the good slot B within two boots" "ESP: $e"; fi
  wait_mark_good
  wait "$window"
  e=$(entries)
  if [[ "$e" == *"good_slot=b "* ]] && [[ "$e" == *"try_slot= "* ]]; then
    pass "once boot 5 is ready, GRUB's half of the spent offer is withdrawn too (try_slot cleared: a BIOS boot will not try slot A again)"
  else fail "the spent offer of slot A withdrawn from GRUB once the good slot is ready" "ESP: $e"; fi

  # (3) power cuts late in writing a slot (its read-back) and during the new slot's first boot
  # (BIOS: GRUB's one-shot try was taken), a good build once more, into slot A
  log "A/B 3: power cut while slot A is verified (read back), then during its first boot (boot 7, BIOS)"
  fetch_hwup update-next.hwup || { fail "the router downloads update-next.hwup" "see $ART/update.log"; return; }
  out=$(update_start); echo "update-start update-next.hwup: $out" >>"$ART/update.log"
  p=$(uphase 92 1800)    # as long as a whole update may take on a loaded machine (full_update)
  echo "power cut at: $p" >>"$ART/update.log"
  if [[ "$p" == verifying* ]]; then
    kill -9 "$QEMU_PID"; wait_gone 10
    pass "power cut (QEMU killed) while slot A was read back after writing (update-status: $p%)"
  else
    GT=30 g "cat /var/lib/homework/bt-ctl.log; journalctl -b -u homework-controller -n 80 --no-pager" >>"$ART/update.log" 2>&1
    fail "an update is being read back when the power is cut" "update-status '$p'; see $ART/update.log"; return; fi
  ab_boot uefi 6 "after the power cut in the read-back" || return
  e=$(entries)
  if in_slot b "$V2" "$S2" >>"$ART/checks.log" 2>&1 && [[ "$e" != *"homework-a"* ]] && [[ "$e" == *"try_slot= "* ]]; then
    pass "after the power cut in the read-back the router runs slot B, $V2 (slot A has no boot entry while it is written: $e)"
  else fail "after the power cut in the read-back: slot B, the ESP not pointing at slot A" "ESP: $e"; fi
  if units_check 7 >>"$ART/checks.log" 2>&1; then pass "units active after the second power cut"; else fail "units active after the second power cut"; fi
  state_kept "after the power cut in the read-back"

  # Slot A already holds every byte of update-next.hwup's system: the write had finished (and
  # was synced) when the power went in its read-back. The update's last step finishes it, run
  # by hand with the update code's own functions: the bundle verified again (signature,
  # checksums), then the ESP (kernel, try-once entry, try_slot). Boot 7 reaching slot A's
  # services shows the slot holds a whole system. Writing it again would add 4-6 minutes
  # under TCG, reading it back ~2; (1) covers an update written and read back to completion.
  g "[ -s /var/lib/homework/bt-update.hwup ]" >/dev/null 2>&1 || fetch_hwup update-next.hwup
  finish_written_update update-next.hwup a "$S4" || return
  ctl_reboot
  boot bios 7 || { fail "boot 7 (BIOS) QEMU start" "see $ART/qemu-boot7.log"; return; }
  # the power goes once slot A's own system is up and the data partition is in use
  local t0; t0=$(date +%s)
  wait_line 'homework-net: WAN=' "$ART/ttyS0-boot7.log" 0.5
  if grep -q 'root=PARTLABEL=hw-root-a ' "$ART/ttyS0-boot7.log" && grep -q 'homework-net: WAN=' "$ART/ttyS0-boot7.log" &&
     kill -0 "$QEMU_PID" 2>/dev/null; then
    kill -9 "$QEMU_PID"; wait_gone 10
    pass "power cut (QEMU killed) during the first boot of slot A ($V4), its services starting, $(( $(date +%s) - t0 ))s into boot 7"
  else
    fail "a power cut during the first boot of the new slot A" "see $ART/ttyS0-boot7.log"
    kill -0 "$QEMU_PID" 2>/dev/null && { kill -9 "$QEMU_PID"; wait_gone 10; }
    return
  fi
  ab_boot bios 8 "after the power cut in the new slot's first boot" || return
  check "boot 8 (BIOS) is back on slot B ($V2) by itself: GRUB's one try of slot A was spent" in_slot b "$V2" "$S2"
  if units_check 9 >>"$ART/checks.log" 2>&1; then pass "units active after the third power cut"; else fail "units active after the third power cut"; fi
  state_kept "after the power cut in the new slot's first boot"
  wait_mark_good
  e=$(entries)
  if [[ " $e " == *" homework-a+0-1.conf "* ]] && [[ " $e " == *" homework-b.conf "* ]] && [[ "$e" == *"good_slot=b "* ]] && [[ "$e" == *"try_slot= "* ]]; then
    pass "the offer of slot A that GRUB spent is withdrawn from systemd-boot too (homework-a+0-1.conf: a UEFI boot will not try it)"
  else fail "the offer GRUB spent withdrawn from systemd-boot" "ESP: $e"; fi
}
wait_mark_good() {  # until this boot's homework-mark-good has run (it waits for readiness)
  GT=150 g "for i in \$(seq 1 140); do systemctl is-active -q homework-mark-good && break; sleep 1; done; systemctl is-active homework-mark-good; journalctl -u homework-mark-good --no-pager | tail -3" >>"$ART/checks.log" 2>&1
  finish_marking_capture
}
# The marking step's cuts: slot B carries the test's drop-in (plant_mark_pause), so its mark-good
# says each ESP write on ttyS1 before making it and waits; capture_marking freezes the disk there.
MARK_CAPTURE_PID="" MARK_BOOT="" MARK_FW=""
start_marking_capture() {  # start_marking_capture N FIRMWARE (beside the boot's checks)
  [ "$POWERCUT" = none ] && return 0
  MARK_BOOT=$1 MARK_FW=$2
  capture_marking "$1" "$2" >"$ART/marks-boot$1.txt" & MARK_CAPTURE_PID=$!
}
finish_marking_capture() {  # wait for the capture, queue the recoveries the policy wants
  [ -n "$MARK_CAPTURE_PID" ] || return 0
  wait "$MARK_CAPTURE_PID"; MARK_CAPTURE_PID=""
  local name last="" other=uefi
  [ "$MARK_FW" = uefi ] && other=bios
  while read -r name; do
    [ -n "$name" ] || continue
    last=$name
    if [ "$POWERCUT" = wide ]; then
      recover "$name" "$MARK_FW" "in boot $MARK_BOOT's marking step ($MARK_FW, before its ${name##*-} write)"
      recover "$name" "$other" "in boot $MARK_BOOT's marking step ($MARK_FW, before its ${name##*-} write)"
    fi
  done <"$ART/marks-boot$MARK_BOOT.txt"
  [ "$POWERCUT" = subset ] && [ -n "$last" ] || return 0
  # subset: the last write of the marking step (after the ones before it), back under both
  # firmwares where the slot was tried (boot 3), under the other where it withdraws an offer (boot 5)
  case $MARK_BOOT in
    3) recover "$last" bios "in boot 3's marking step (BIOS, a tried slot: its entry blessed, before the grubenv write)"
       recover "$last" uefi "in boot 3's marking step (BIOS, a tried slot: its entry blessed, before the grubenv write)" ;;
    5) recover "$last" bios "in boot 5's marking step (UEFI, withdrawing a spent offer: before the grubenv write)" ;;
  esac
}
plant_mark_pause() {  # the test's drop-in in slot B (just written): its mark-good pauses before each write
  [ "$POWERCUT" = none ] && return 0
  GT=60 g "set -e; mkdir -p /run/bt-b; mount /dev/disk/by-partlabel/hw-root-b /run/bt-b
    d=/run/bt-b/etc/systemd/system/homework-mark-good.service.d; mkdir -p \$d
    printf '[Service]\nEnvironment=HOMEWORK_MARK_GOOD_PAUSE=6\n' > \$d/boottest-mark-pause.conf; umount /run/bt-b" >>"$ART/update.log" 2>&1
}
# ================================================================== the household's upkeep
# From its device, as the settings page does it: a backup, a factory reset (every device a
# stranger, this one too: the first hour again, from its waiting page), then the restore.
BACKUP_PASS="the household's backup 48"
controller_back() {  # controller_back WHAT: seconds until the device's gateway answers WHAT again (max 600)
  local t0; t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt 600 ]; do
    case "$1" in
      offer) hh -m 10 "http://$ROUTER/ws.v1/setup" 2>/dev/null | grep -q '"open": true' && break ;;
      api) case "$(hh -m 10 -o /dev/null -w '%{http_code}' "https://$ROUTER/ws.v1/session" 2>/dev/null)" in 200|401) break ;; esac ;;
    esac
    sleep 2
  done
  echo $(( $(date +%s) - t0 ))
}
restore_applied() {  # restore_applied AT: seconds until GET /ws.v1/restore/status says the restore of AT is in force (max 600)
  local t0; t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt 600 ]; do
    hh -m 10 "https://$ROUTER/ws.v1/restore/status" 2>/dev/null | python3 -c 'import json, sys
r = (json.load(sys.stdin) or {}).get("restore") or {}
sys.exit(not (r.get("applied") and str(r.get("at")) == sys.argv[1]))' "$1" 2>/dev/null && break
    sleep 2
  done
  echo $(( $(date +%s) - t0 ))
}
household_upkeep() {
  [ "$APPROVED" = yes ] || { fail "the household's backup, factory reset and restore" "no household device (see boot 1)"; return; }
  dev_dhcp >/dev/null 2>&1
  { [ -n "$API_CSRF" ] && api GET /session | grep -q '^HTTP 200'; } || api_login
  local code out back
  code=$(hh -b "$JAR" -H "X-CSRF-Token: $API_CSRF" -H 'Content-Type: application/json' -d "{\"passphrase\": \"$BACKUP_PASS\"}" \
         -o "$ART/household-backup.hwbak" -w '%{http_code}' "https://$ROUTER/ws.v1/backup")
  if [ "$code" = 200 ] && python3 -c 'import json, sys
doc = json.load(open(sys.argv[1]))
sys.exit(not (doc["format"] == "homework-backup" and any(d["mac"] == sys.argv[2] and d["state"] == "permitted"
                                                        for d in doc["settings"]["devices"])))' "$ART/household-backup.hwbak" "$DEV_MAC"; then
    pass "backup: the household's device downloads the settings (POST /ws.v1/backup; its own approval in it)"
  else fail "backup from the household's device" "HTTP $code"; return; fi

  out=$(api_json POST /factory-reset '{"confirm": "erase everything"}'); echo "factory reset: $out" >>"$ART/checks.log"
  local code_shown; code_shown=$(echo "$out" | json_field setup_code)
  if echo "$out" | grep -q '^HTTP 200' && [ ${#code_shown} = 9 ]; then
    pass "factory reset from the household's device: the answer says it restarts and gives the set-up code ($code_shown)"
  else fail "factory reset from the household's device" "see $ART/checks.log"; return; fi
  back=$(controller_back offer)
  if [ "$(device_state "$DEV_MAC")" = pending ] && hh "http://$ROUTER/" | grep -q 'This is my router: set it up'; then
    pass "after the factory reset (the controller back in ${back}s) the household's device, a pending stranger on its own address, gets the set-up offer again"
  else fail "after the factory reset the device's waiting page offers the set-up" "state $(device_state "$DEV_MAC")"; fi
  if hh_setup "$HOUSEHOLD_PW-2" && [ "$(device_state "$DEV_MAC")" = permitted ]; then
    pass "the first hour again: the device sets the reset router up from its waiting page and is let in"
  else fail "the device sets the reset router up" "see $ART/checks.log"; return; fi

  python3 -c 'import json, sys; print(json.dumps({"passphrase": sys.argv[2], "backup": json.load(open(sys.argv[1]))}))' \
    "$ART/household-backup.hwbak" "$BACKUP_PASS" >"$ART/household-restore.json"
  out=$(hh -b "$JAR" -c "$JAR" -H "X-CSRF-Token: $API_CSRF" -H 'Content-Type: application/json' -d "@$ART/household-restore.json" \
        -w '\nHTTP %{http_code}\n' "https://$ROUTER/ws.v1/restore"); echo "restore: $out" >>"$ART/checks.log"
  if echo "$out" | grep -q '^HTTP 200'; then pass "restore from the household's device: the backup is taken, the controller restarts"
  else fail "restore from the household's device" "see $ART/checks.log"; return; fi
  # as the board does: wait until the restarted router says this restore is in force
  local at; at=$(echo "$out" | json_field at)
  if [ -n "$at" ]; then back=$(restore_applied "$at"); else sleep 3; back=$(controller_back api); fi
  if api_login && ! api_login "$HOUSEHOLD_PW-2" && api_login && [ "$(device_state "$DEV_MAC")" = permitted ] &&
     { [ -z "${STA_MAC:-}" ] || [ "$(device_state "$STA_MAC")" = blacklisted ]; }; then
    pass "after the restore (back in ${back}s) the backup's password logs in, the one chosen after the reset does not, and the decisions are the backup's"
  else fail "the restore brings the backup's password and decisions back" "device $(device_state "$DEV_MAC"), station $(device_state "${STA_MAC:-none}")"; fi
  if dev curl -s -m 15 "http://$ISP_IP/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP'; then
    pass "after the restore the household's device reaches the ISP"
  elif dev_dhcp >>"$ART/checks.log" 2>&1 && dev curl -s -m 15 "http://$ISP_IP/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP'; then
    pass "after the restore the household's device reaches the ISP (after renewing its lease)"
  else fail "after the restore the household's device reaches the ISP" "lease $(cat "$ART/dev-lease.env" 2>/dev/null | tr '\n' ' ')"; fi
}

ab_updates          # starts the satellite VM half way (satellite_start)
[ -n "${SAT_T0:-}" ] || satellite_start   # ab_updates ended before it got there
satellite_phase
g "rm -f /var/lib/homework/bt-update.hwup /var/lib/homework/bt-ctl.py /var/lib/homework/bt-ctl.log" >/dev/null 2>&1
log "the household's upkeep: backup, factory reset, restore (from its device)"
household_upkeep
recovery_report

log "powering off"
GT=5 g "systemctl poweroff" >/dev/null 2>&1
for _ in $(seq 1 60); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 1; done
summary
[ "$FAILED" -eq 0 ]
