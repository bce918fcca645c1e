# shellcheck shell=bash disable=SC2154  # sourced by image/boot-test.sh, whose variables and helpers it uses
# The image as a satellite, sourced by image/boot-test.sh. A second VM boots the
# same image with the role file on its ESP, as a household would write it after flashing. Its
# uplink NIC is cabled (a host bridge) to the router VM's third NIC, and its second NIC to a
# device namespace:
#   router VM NIC 3 -- hbs bridge -- satellite VM NIC 1 (uplink)
#   satellite VM NIC 2 -- hbd bridge -- veth -- namespace "sdev" (a device behind the satellite)
# Nobody lists the satellite: its cable is the router's third NIC, an ordinary LAN port. The
# satellite finds the router behind its uplink (a lease there, the pairing path behind its
# gateway), asks to pair as a pending device and prints its code; the router shows a pending
# access point plugged into that port; the household permits it through the API the Guest
# Board uses, the controller restarts and the port becomes its cable (management link at
# fe80::1); then a device behind it gets a lease from the router, is pending, is permitted
# and reaches the ISP. Forgotten, the port goes back to the LAN and the satellite asks again.
# It boots while the router's A/B updates run (satellite_start) and waits there, pending,
# through the router's reboots; its checks run once the router's own are done (satellite_phase).

SAT_UP_MAC=52:54:00:48:57:11 SAT_PORT_MAC=52:54:00:48:57:12
SAT_DISK=$ART/sat-disk.img SAT_AGENT=$ART/sat-agent.sock
SAT_QEMU_PID=""

gs() {  # run a shell command in the satellite VM
  AGENT_SOCK=$SAT_AGENT g "$@"
}
sat_line() {  # sat_line PATTERN SECONDS: the satellite's last line matching ^PATTERN, once there
  local t0; t0=$(date +%s)
  until sat_has "$1"; do
    kill -0 "$SAT_QEMU_PID" 2>/dev/null && [ $(( $(date +%s) - t0 )) -lt "$2" ] || return 1
    sleep 1
  done
  sat_lines "$1" | tail -1
}
sat_has() { sat_lines "$1" | grep -q .; }

# Its announcements go to the console (ttyS0) and to ttyS1, where the guest gives a write
# 2 s (a serial port nobody reads must not hold its boot up): a guest starved by TCG beside
# another VM may drop the ttyS1 copy, and the console's may follow a login prompt on its line.
sat_lines() {  # sat_lines ^PATTERN: the lines from either port, the console's last
  cat "$ART/ttyS1-sat.log" "$ART/ttyS0-sat.log" 2>/dev/null | tr -d '\r' | grep -o "${1#^}.*"
}

sat_net_up() {  # the satellite's uplink on the cable's bridge; its port's bridge and a device namespace
  set -e
  ip tuntap add dev "$TAP_SU" mode tap; ip link set "$TAP_SU" master "$BR_S"; ip link set "$TAP_SU" up
  ip netns add "$NS_SDEV"
  qemu_link "hbd$SUF" "$NS_SDEV"
}

sat_disk() {  # a whole copy of the image, with the role chosen on its ESP (FAT, mtools)
  local start
  cp --sparse=always "$IMG" "$SAT_DISK"
  start=$(sfdisk -J "$SAT_DISK" | python3 -c 'import json, sys
parts = json.load(sys.stdin)["partitiontable"]["partitions"]
print(next(p["start"] for p in parts if p["type"].upper() == "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"))')
  echo satellite > "$ART/homework-role"
  mcopy -o -i "$SAT_DISK@@$((start * 512))" "$ART/homework-role" ::/homework-role
}

sat_boot() {  # BIOS (SeaBIOS, GRUB), one vCPU: it runs beside the router's VM
  rm -f "$SAT_AGENT"
  qemu-system-x86_64 -machine q35 "${ACCEL_ARGS[@]}" -smp 1 -m 768 -display none -no-reboot \
    -drive "file=$SAT_DISK,if=virtio,format=raw" \
    -netdev "tap,id=up,ifname=$TAP_SU,script=no,downscript=no" -device "virtio-net-pci,netdev=up,mac=$SAT_UP_MAC" \
    -netdev "tap,id=p1,ifname=$TAP_SD,script=no,downscript=no" -device "virtio-net-pci,netdev=p1,mac=$SAT_PORT_MAC" \
    -serial "file:$ART/ttyS0-sat.log" -serial "file:$ART/ttyS1-sat.log" \
    -device virtio-serial-pci -chardev "socket,id=agent,path=$SAT_AGENT,server=on,wait=off" \
    -device virtserialport,chardev=agent,name=org.homework.test \
    -fw_cfg name=opt/org.homework.test,string=1 \
    -pidfile "$ART/qemu-sat.pid" -daemonize >"$ART/qemu-sat.log" 2>&1 || return 1
  SAT_QEMU_PID=$(cat "$ART/qemu-sat.pid")
}

SAT_DPID=0000$(echo "$SAT_UP_MAC" | tr -d :) SATCABLE_PORT=""
sat_cable_port() {  # the router's name for the NIC the satellite's cable plugs into
  SATCABLE_PORT=$(g "ip -o link | grep -i '$SATCABLE_MAC' | awk -F': ' '{print \$2}'" | tr -d '\r\n')
  [ -n "$SATCABLE_PORT" ]
}

sat_state() {  # sat_state DPID: "STATE CODE FOUND ROUTER_PORT" of the satellite in the router's API
  api GET /satellites | head -1 | python3 -c 'import json, sys
for s in json.load(sys.stdin):
    if s.get("dpid") == sys.argv[1]:
        print(s.get("state"), s.get("code"), s.get("found"), s.get("router_port"))' "$1" 2>/dev/null
}
port_bridge() { g "ovs-vsctl port-to-br $SATCABLE_PORT" | tr -d '\r\n'; }
sat_connected() {  # sat_connected SECONDS: the satellite's bridge is connected to the router's controller
  GT=$(($1 + 30)) gs "for i in \$(seq 1 $1); do [ \"\$(ovs-vsctl --timeout=2 get controller sat0 is_connected)\" = true ] && exit 0; sleep 1; done; exit 1" >/dev/null 2>&1
}

sat_dev() { ip netns exec "$NS_SDEV" "$@"; }
sat_dev_dhcp() {  # the device behind the satellite's DHCP exchange: its lease in SAT_IP/SAT_MASK/SAT_GW;
  # the household device's IP/MASK/ROUTER and lease file are kept (every household call goes to ROUTER)
  local hh_ip=${IP:-} hh_mask=${MASK:-} hh_router=${ROUTER:-} ok=0
  NS=$NS_SDEV LEASE_ENV=$ART/sat-dev-lease.env dev_dhcp || ok=1
  SAT_IP=${IP:-} SAT_MASK=${MASK:-} SAT_GW=${ROUTER:-}
  IP=$hh_ip MASK=$hh_mask ROUTER=$hh_router
  return $ok
}
sat_reaches_isp() {  # within 60 s (the router, under TCG beside other VMs, installs its path slowly)
  local i
  for i in 1 2 3 4; do
    sat_dev curl -sS -m 15 "http://$ISP_IP/" 2>>"$ART/checks.log" | grep -q 'hello from the ISP' && return 0
    echo "try $i: the device behind the satellite did not reach the ISP" >>"$ART/checks.log"
  done
  return 1
}

sat_diagnostics() {  # both switches' tables and the controller's log, into sat-diagnostics.log
  {
    echo "== router"; GT=180 g "ovs-vsctl show; ovs-ofctl -O OpenFlow13 dump-flows hwsat1; ovs-ofctl -O OpenFlow13 dump-flows br0 | head -80; ovs-ofctl -O OpenFlow13 dump-ports-desc br0 | grep -A1 hws; journalctl -u homework-controller --no-pager | tail -80"
    echo "== satellite"; GT=120 gs "ovs-vsctl show; ovs-ofctl -O OpenFlow13 dump-flows sat0; ovs-ofctl -O OpenFlow13 dump-ports sat0; ip -d link; journalctl -u homework-satellite -u homework-satellite-agent --no-pager | tail -40"
  } >>"$ART/sat-diagnostics.log" 2>&1
}

satellite_start() {  # its disk, its links and its VM: booted early, it waits (pending) until the checks
  log "satellite: a second VM boots the same image in the satellite role, cabled to the router's third port"
  SAT_T0=$(date +%s) SAT_STARTED=no
  if ! (sat_net_up) >"$ART/sat-netup.log" 2>&1; then fail "satellite test network" "see $ART/sat-netup.log"; return; fi
  if ! sat_disk >"$ART/sat-disk.log" 2>&1; then fail "satellite disk with the role file on its ESP" "see $ART/sat-disk.log"; return; fi
  sat_boot || { fail "satellite VM start" "see $ART/qemu-sat.log"; return; }
  SAT_STARTED=yes
}

satellite_phase() {
  [ "$SAT_STARTED" = yes ] || return
  log "satellite: its checks ($(( $(date +%s) - SAT_T0 ))s after it was started)"
  if ! kill -0 "$QEMU_PID" 2>/dev/null; then fail "satellite phase" "the router's VM is not running"; return; fi
  local t0 line dpid code st mac out
  t0=$(date +%s)

  # Its role, from the ESP; the datapath id the household lists on the router
  if ! line=$(sat_line '^HOMEWORK-SATELLITE dpid=' "$BOOT_TIMEOUT"); then
    fail "the satellite boots and prints its datapath id" "see $ART/ttyS0-sat.log"; return; fi
  dpid=$(echo "$line" | sed 's/^HOMEWORK-SATELLITE dpid=\([0-9a-f]*\).*/\1/')
  check "the satellite took its role from the ESP file (HOMEWORK-ROLE satellite) and names its datapath $dpid" \
    sat_has '^HOMEWORK-ROLE satellite'

  check "the datapath id on the satellite's console is its lowest MAC ($SAT_DPID)" test "$dpid" = "$SAT_DPID"
  sat_cable_port || { fail "the router's NIC for the satellite's cable" "no NIC with $SATCABLE_MAC"; return; }

  # Listed nowhere: it finds the router behind a LAN port and asks as a device; its code on its console
  if ! line=$(sat_line '^HOMEWORK-SATELLITE code=' 300); then
    fail "the satellite finds the router behind its uplink (a LAN port) and asks to pair" "see $ART/ttyS1-sat.log"
    GT=30 gs "journalctl -u homework-satellite --no-pager | tail -30" >>"$ART/checks.log" 2>&1; return; fi
  code=$(echo "$line" | sed 's/^HOMEWORK-SATELLITE code=\([0-9a-f]*\).*/\1/')
  api_login >/dev/null 2>&1 || true
  st=$(sat_state "$dpid")
  if [ "$st" = "pending $code True $SATCABLE_PORT" ] && [ "$(port_bridge)" = br0 ]; then
    pass "the satellite, plugged into LAN port $SATCABLE_PORT and listed nowhere, asked to pair as a device: a pending access point in the router's API (the Guest Board's list) plugged into $SATCABLE_PORT, with the code on its console ($code); the port is still the LAN's"
  else fail "the satellite is a pending access point found on its LAN port, with its console's code" "API: '$st', console: '$code', port on '$(port_bridge)'"; return; fi

  # The household permits it: the controller restarts, the port becomes its cable, and it
  # connects over TLS with the certificate pairing gave it
  out=$(api POST "/satellites/$dpid/permit"); echo "permit $dpid: $out" >>"$ART/checks.log"
  if sat_line '^HOMEWORK-SATELLITE paired' 180 >/dev/null && sat_connected 240; then
    pass "permitted on the API: the satellite's bridge is connected to the router's controller over TLS ($(gs "ovs-vsctl get controller sat0 target" | tr -d '\r\n'))"
  else fail "once permitted the satellite connects to the controller over TLS" "see $ART/ttyS1-sat.log"
    GT=30 gs "journalctl -u homework-satellite --no-pager | tail -30; ovs-vsctl show" >>"$ART/checks.log" 2>&1
    sat_diagnostics; return; fi
  check "the permitted satellite's port became its cable: $SATCABLE_PORT on the demux bridge hwsat1, the router fe80::1 on hwsat1m" \
    g "ovs-vsctl list-ports hwsat1 | grep -qx '$SATCABLE_PORT' && ip -6 addr show dev hwsat1m | grep -q 'fe80::1/'"
  check "the satellite runs none of the router's services (no controller, DHCP, DNS, web; its agent runs)" \
    gs "! systemctl is-active -q homework-controller homework-dnsd homework-dns homework-web homework-net &&
        ! ss -Hlun | grep -q ':67 \|:53 ' && ! ss -Hltn | grep -q ':443 \|:53 ' &&
        for i in \$(seq 1 30); do systemctl is-active -q homework-satellite-agent && exit 0; sleep 1; done; exit 1"

  # A device behind it: a lease from the router, pending, then permitted out to the ISP
  mac=$(ip -n "$NS_SDEV" link show eth0 | awk '/link\/ether/{print $2}')
  if sat_dev_dhcp && v6_in "$SAT_IP" 10.2.0.0/16; then
    pass "a device behind the satellite gets its lease from the router: $SAT_IP/$SAT_MASK via $SAT_GW"
  else fail "a device behind the satellite gets a lease from the router" "lease '${SAT_IP:-none}'; see $ART/dev-dhcp.log, sat-diagnostics.log"
    sat_diagnostics; return; fi
  st=$(device_state "$mac")
  check "the device behind the satellite is pending (state '$st') and reaches nothing outside" \
    test "$st" = pending -a "$(sat_dev curl -s -m 5 "http://$ISP_IP/" 2>/dev/null | grep -c 'hello from the ISP')" = 0
  if decide permit "$mac" && sat_dev_dhcp && sat_reaches_isp; then
    pass "permitted, the device behind the satellite reaches the ISP through the router ($SAT_IP)"
  else fail "the permitted device behind the satellite reaches the ISP" "state '$(device_state "$mac")', lease '${SAT_IP:-none}'"
    sat_diagnostics; fi
  out=$(g "homework --json devices" | python3 -c 'import json, sys
for d in json.load(sys.stdin):
    if d.get("mac", "").lower() == sys.argv[1]:
        a = d.get("attached") or {}
        print(a.get("switch", ""), a.get("port", ""))' "$mac" 2>/dev/null)
  check "the router places the device on the satellite's port (attached: '$out')" test "$out" = "satellite 1 1"

  # Forgotten on the Guest Board: its port goes back to the LAN; told so over its agent's TLS
  # session, it drops its certificate and asks to pair again as a device on that port (its
  # key kept: the same code); permitted, it is whole again
  out=$(api POST "/satellites/$dpid/forget"); echo "forget $dpid: $out" >>"$ART/checks.log"
  for _ in 1 2 3 4 5 6 7 8; do    # a controller still restarting (after a satellite decision) answers nothing
    echo "$out" | grep -q '^HTTP \(000\|502\|503\|504\)' || break
    sleep 10; echo "$out" | grep -q '^HTTP 000' && dev_dhcp >>"$ART/checks.log" 2>&1   # (as in decide)
    out=$(api POST "/satellites/$dpid/forget"); echo "forget $dpid (again): $out" >>"$ART/checks.log"
  done
  st=""
  if sat_line 'no longer admits this access point (forgotten)' 180 >/dev/null; then
    for _ in $(seq 1 120); do st=$(sat_state "$dpid"); [ "$st" = "pending $code True $SATCABLE_PORT" ] && break; sleep 2; done
  fi
  check "forgotten on the API, its port is the LAN's again ($(port_bridge)) and the satellite, told, asks to pair again from it with the same code (API: '$st')" \
    test "$st" = "pending $code True $SATCABLE_PORT" -a "$(port_bridge)" = br0
  out=$(api POST "/satellites/$dpid/permit"); echo "permit $dpid again: $out" >>"$ART/checks.log"
  if sat_connected 300 && sat_reaches_isp; then
    pass "permitted again, the satellite reconnects over TLS with its new certificate and its device reaches the ISP"
  else fail "the satellite paired again reconnects and its device reaches the ISP" "see $ART/ttyS1-sat.log, sat-diagnostics.log"
    sat_diagnostics; fi
  log "satellite: done in $(( $(date +%s) - t0 ))s"
  GT=5 gs "systemctl poweroff" >/dev/null 2>&1
  for _ in $(seq 1 30); do kill -0 "$SAT_QEMU_PID" 2>/dev/null || break; sleep 1; done
  kill "$SAT_QEMU_PID" 2>/dev/null
}
