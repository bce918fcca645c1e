# shellcheck shell=bash
# The hardware part of the image boot test, sourced by image/boot-test.sh (image/README.md,
# "The boot test"): NIC models, the hardware report, the Guest Board on the router's own
# screen and a wall tablet's pairing, all in boots the test makes anyway.
#
# - Boot 1 has its WAN on QEMU's e1000e and its LAN device on virtio-net, a screen (QEMU's
#   virtio-vga, 1024x600: its std VGA's bochs-drm cannot import buffers (PRIME), which
#   bookworm's wlroots 0.15 requires of every screen) and a pointer (usb-tablet) for taps. After the router's own checks an
#   rtl8139 card is hot-plugged (QMP device_add, into a PCIe root port) with a second device
#   behind it; it asks to join, the router's screen shows it (QMP screendump, read by OCR) with
#   its device icon drawn, a finger on a touch screen (one the guest's kernel makes: QEMU 7.2
#   has none, image/boot-test-touch.py) drags it to "In range" (kept out), a tap on its label
#   and one on Let in let it in, and it reaches the ISP.
# - Boot 2 (BIOS) has no screen, its WAN on rtl8139 and its LAN device on e1000e: nothing of
#   the kiosk runs; the WAN is found by its DHCP answer on rtl8139, and the device is routed.
# The ISP's DHCP server is on the WAN NIC's link only; the other links have none, so only the
# intended NIC can become the WAN.
# The NICs keep their PCI slots (addr=) whatever the models and the screen, so their names
# (enp0s2 LAN, enp0s3 WAN, enp0s4 the satellite's cable) are the same in every boot.
# HOMEWORK_BOOT_TEST_ONLY=hardware runs it: boot 1 (UEFI) with a screen, then boot 2 (BIOS).

HW_W=1024 HW_H=600                          # the screen: a 7" panel's 1024x600
NS_DEV2=hwbt-dev2-$SUF                      # the device behind the hot-plugged card
BR_H=hbh$SUF-br TAP_H=hbh$SUF-tap VETH_H=hbh$SUF-v
HP_MAC=52:54:00:48:57:04 DEV2_NAME=lounge   # the card's MAC; the device's DHCP host name
WAN_NIC=virtio-net-pci LAN_NIC=virtio-net-pci SCREEN=no

hw_boot_args() {  # NIC_ARGS for boot(): the NICs' models and slots, the screen (or none), a root port to hot-plug into
  NIC_ARGS=(-netdev "tap,id=lan,ifname=$TAP_L,script=no,downscript=no" -device "$LAN_NIC,netdev=lan,mac=$LAN_MAC,addr=0x2"
            -netdev "tap,id=wan,ifname=$TAP_W,script=no,downscript=no" -device "$WAN_NIC,netdev=wan,mac=$WAN_MAC,addr=0x3"
            -netdev "tap,id=sat,ifname=$TAP_S,script=no,downscript=no" -device "virtio-net-pci,netdev=sat,mac=$SATCABLE_MAC,addr=0x4"
            -device "pcie-root-port,id=hwhp,chassis=11,addr=0x12" -vga none)
  if [ "$SCREEN" = yes ]; then
    NIC_ARGS+=(-device "virtio-vga,xres=$HW_W,yres=$HW_H,addr=0x5" -device "qemu-xhci,addr=0x11" -device usb-tablet)
  fi
}

qmp() { python3 "$TOP/image/boot-test-qmp.py" "$ART/qmp.sock" "$@"; }
screen() { python3 "$TOP/image/boot-test-screen.py" "$@"; }
shot() {  # shot NAME: the router's screen now, as $ART/screen-NAME.ppm (and .png for people)
  rm -f "$ART/screen-$1.ppm"
  qmp screendump "$ART/screen-$1.ppm" >>"$ART/hardware.log" 2>&1 && screen png "$ART/screen-$1.ppm" "$ART/screen-$1.png"
}
# ------------------------------------------------------------------ boot 1
hw_report_checks() {  # the report on ttyS1 (at every boot) and in GET /ws.v1/system
  local n=$1 want_wan=$2 want_lan=$3
  wait_line '^HOMEWORK-HW summary' "$ART/ttyS1-boot$n.log"
  grep '^HOMEWORK-HW' "$ART/ttyS1-boot$n.log" >>"$ART/hardware.log"
  if grep -q "^HOMEWORK-HW port enp0s3: WAN (it got an answer from a DHCP server (the modem) at boot); driver $want_wan" "$ART/ttyS1-boot$n.log" &&
     grep -q "^HOMEWORK-HW port enp0s2: LAN (on the household's network (bridge br0)); driver $want_lan.*; MAC $LAN_MAC; link up" "$ART/ttyS1-boot$n.log" &&
     grep -q '^HOMEWORK-HW summary ports=3 .* problems=0' "$ART/ttyS1-boot$n.log"; then
    pass "boot $n: the hardware report on the console: the WAN on $want_wan (found by its DHCP answer), the LAN on $want_lan, no problems"
  else fail "boot $n: the hardware report on the console names each port's driver and role" "see $ART/hardware.log"; fi
}

hw_api_report() {  # GET /ws.v1/system's "hardware" holds the same facts, from the controller (one try)
  local out
  [ -n "$API_CSRF" ] || api_login
  out=$(api GET /system | head -1)
  echo "system hardware: $out" >>"$ART/hardware.log"
  echo "$out" | python3 -c 'import json, sys
h = json.load(sys.stdin)["hardware"]
ports = {p["name"]: p for p in h["ports"]}
wan, lan = ports["enp0s3"], ports["enp0s2"]
ok = (wan["role"], wan["driver"], lan["role"], lan["driver"]) == ("wan", "e1000e", "lan", "virtio_net")
ok = ok and wan["role_reason"].startswith("it got an answer from a DHCP server") and wan["mac"] == sys.argv[1]
ok = ok and wan["carrier"] is True and not [p for p in h["problems"] if p["severity"] == "error"]
sys.exit(not ok)' "$WAN_MAC"
}
hw_api_check() {
  check_within 90 "GET /ws.v1/system carries the hardware report: enp0s3 the WAN (e1000e, why), enp0s2 the LAN (virtio_net), no errors" \
    hw_api_report
}

hw_hotplug() {  # an rtl8139 card plugged into the running router, a device behind it
  ip netns add "$NS_DEV2" && qemu_link "hbh$SUF" "$NS_DEV2" >>"$ART/hardware.log" 2>&1 || { fail "hot-plug network set-up"; return 1; }
  qmp run netdev_add "{\"type\": \"tap\", \"id\": \"hp\", \"ifname\": \"$TAP_H\", \"script\": \"no\", \"downscript\": \"no\"}" >>"$ART/hardware.log" 2>&1
  qmp run device_add "{\"driver\": \"rtl8139\", \"id\": \"hpnic\", \"netdev\": \"hp\", \"mac\": \"$HP_MAC\", \"bus\": \"hwhp\"}" >>"$ART/hardware.log" 2>&1
  if GT=120 g "for i in \$(seq 1 110); do for d in /sys/class/net/*; do [ \"\$(cat \$d/address 2>/dev/null)\" = $HP_MAC ] && ovs-vsctl list-ports br0 | grep -qx \"\${d##*/}\" && { echo \"\${d##*/} \$(basename \$(readlink \$d/device/driver))\"; exit 0; }; done; sleep 1; done; exit 1" >"$ART/hotplug.txt" 2>>"$ART/hardware.log"; then
    pass "an rtl8139 card hot-plugged into the running router joins the LAN: $(cat "$ART/hotplug.txt") on br0"
  else
    fail "a hot-plugged rtl8139 card joins the LAN" "see $ART/hardware.log"
    g "journalctl -b --no-pager -u 'homework-port@*' | tail -20; ip -br link" >>"$ART/hardware.log" 2>&1
    return 1
  fi
  NS=$NS_DEV2 dev_dhcp_named "$DEV2_NAME" && [[ "$IP" == 10.2.* ]] && [ "$(device_state "$(ip -n "$NS_DEV2" link show eth0 | awk '/link\/ether/{print $2}')")" = pending ]
}

dev_dhcp_named() { DHCP_NAME=$1 dev_dhcp; }  # with a host name of its own (the label the board shows)

# The device behind the hot-plugged port renews its 30 s pending lease every 10 s, as a real
# one's DHCP client does at half-time, while the screen's checks run (on a loaded machine they
# take minutes, and an expired lease moves its label to "In range, not connected" by itself).
HW_RENEW_PID=""
hw_renewing() {  # hw_renewing on|off
  if [ "$1" = on ]; then
    ( while :; do NS=$NS_DEV2 LEASE_ENV=$ART/dev2-lease.env dev_dhcp_named "$DEV2_NAME" >/dev/null 2>&1; sleep 10; done ) &
    HW_RENEW_PID=$!
  elif [ -n "$HW_RENEW_PID" ]; then
    kill "$HW_RENEW_PID" 2>/dev/null; wait "$HW_RENEW_PID" 2>/dev/null; HW_RENEW_PID=""
  fi
}

hw_state() {  # hw_state MAC STATE: STATE once the device is in it (within 180 s), else its status
  GT=210 g "end=\$((\$(date +%s) + 180)); while [ \$(date +%s) -lt \$end ]; do s=\$(homework --json status $1); echo \"\$s\" | grep -q '\"state\": \"$2\"' && { echo $2; exit 0; }; sleep 2; done; echo \"\$s\"" | tail -1
}
hw_permitted() { hw_state "$1" permitted; }
until_button() {  # until_button NAME SECONDS: screendumps until the dialog's green button shows; "x y" in $ART/button.txt
  local t0; t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt "$2" ]; do
    shot "$1" && screen button "$ART/screen-$1.ppm" >"$ART/button.txt" && return 0
    sleep 3
  done
  return 1
}

until_pending_on_screen() {  # until_pending_on_screen SECONDS: "x y" of DEV2's label in the middle column
  # The board's columns are thirds of the screen: in range (left), asking to join (middle), on
  # the network (right); the name alone could be read in any of them. The device renews its
  # 30 s pending lease as a real one does at half-time, however long the kiosk takes to draw:
  # an expired lease moves it to "In range, not connected".
  local t0 leased=0 xy x
  t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt "$1" ]; do
    if [ $(( $(date +%s) - leased )) -ge 12 ]; then
      NS=$NS_DEV2 dev_dhcp_named "$DEV2_NAME" >/dev/null 2>&1
      leased=$(date +%s)
    fi
    if shot pending && xy=$(screen find "$ART/screen-pending.ppm" "$DEV2_NAME"); then
      x=${xy%% *}
      if [ "$x" -gt $((HW_W / 3)) ] && [ "$x" -lt $((HW_W * 2 / 3)) ]; then echo "$xy"; return 0; fi
    fi
    sleep 3
  done
  screen text "$ART/screen-pending.ppm" >>"$ART/hardware.log" 2>&1
  return 1
}

label_on_screen() {  # label_on_screen LEFT RIGHT SECONDS: "x y" of DEV2's label once the screen shows it between x LEFT and RIGHT
  local t0 xy x
  t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt "$3" ]; do
    if shot label && xy=$(screen find "$ART/screen-label.ppm" "$DEV2_NAME"); then
      x=${xy%% *}
      if [ "$x" -ge "$1" ] && [ "$x" -lt "$2" ]; then echo "$xy"; return 0; fi
    fi
    sleep 3
  done
  return 1
}

hw_touch() {  # hw_touch drag X1 Y1 X2 Y2 W H: a finger on the router's touch screen (image/boot-test-touch.py, in the guest)
  GT=120 g "modprobe uinput && echo $(base64 -w0 "$TOP/image/boot-test-touch.py") | base64 -d > /run/hw-touch.py && python3 /run/hw-touch.py $*"
}

hw_icon() {  # the pending device's icon is drawn (a colour emoji), not an empty box (within 60 s: the guess may come later)
  local t0 n=0
  t0=$(date +%s)
  while [ $(( $(date +%s) - t0 )) -lt 60 ]; do
    n=$(screen icon "$ART/screen-pending.ppm" "$DEV2_NAME") && break
    sleep 3; shot pending
  done
  if [ "${n:-0}" -ge 12 ] 2>/dev/null; then
    pass "the router's screen draws $DEV2_NAME's device icon (💡, a smart-home device's: $n coloured pixels; without an emoji font it was an empty box)"
  else fail "the router's screen draws the device icon, not an empty box" "${n:-0} coloured pixels under $DEV2_NAME's name; see $ART/screen-pending.png"; fi
}

hw_kiosk() {  # the router's own screen: the board, the pending device, a finger keeps it out, then lets it in
  local dev2_mac xy x y tx ty out how
  dev2_mac=$(ip -n "$NS_DEV2" link show eth0 | awk '/link\/ether/{print $2}')
  # its start takes a panel code from the controller, then starts cage and cog (minutes under TCG)
  if GT=310 g "for i in \$(seq 1 300); do systemctl is-active -q homework-kiosk.service && pgrep -x cage && pgrep -x cog && exit 0; sleep 1; done; systemctl is-active homework-kiosk.service; exit 1" >>"$ART/hardware.log" 2>&1; then
    pass "a display is connected: the kiosk runs (homework-kiosk: cage and cog, as its own user)"
  else
    fail "the kiosk runs when a display is connected" "see $ART/hardware.log"
    g "journalctl -b --no-pager -u homework-kiosk -u homework-kiosk-check | tail -40" >>"$ART/hardware.log" 2>&1
    return
  fi
  if xy=$(until_pending_on_screen 300); then
    pass "the router's screen shows the Guest Board with $DEV2_NAME in its \"Asking to join\" column (screendump, OCR: $ART/screen-pending.png)"
  else fail "the router's screen shows the board with the pending device asking to join" "see $ART/screen-pending.png"; return; fi
  read -r x y <<<"$xy"
  hw_renewing on
  hw_icon
  # a finger drags the label left, to "In range" (the board's "drag them right or left"): kept out
  hw_touch drag "$x" "$y" $((HW_W / 6)) $((HW_H / 2)) "$HW_W" "$HW_H" >>"$ART/hardware.log" 2>&1
  out=$(hw_state "$dev2_mac" denied)
  if [ "$out" = denied ] && xy=$(label_on_screen 0 $((HW_W / 3)) 120); then
    pass "a finger on the router's touch screen drags $DEV2_NAME to \"In range\": it is kept out, and shown there (touch events, the panel role)"
  else fail "a finger's drag on the router's touch screen keeps the device out" "state: $out; see $ART/hardware.log and $ART/screen-label.png"; fi
  # wherever the label is now (in the middle still if the drag did not take), a tap on it opens its
  # Let in / Keep out dialog: the panel's other gesture; then a tap on Let in
  [ -n "$xy" ] || xy=$(label_on_screen 0 "$HW_W" 120) || xy="$x $y"
  read -r x y <<<"$xy"
  qmp drag "$x" "$y" "$x" "$y" "$HW_W" "$HW_H" >>"$ART/hardware.log" 2>&1
  how="taps $DEV2_NAME, then Let in"
  out="no Let in button on the screen"
  if until_button letin 240; then
    read -r tx ty <"$ART/button.txt"
    qmp drag "$tx" "$ty" "$tx" "$ty" "$HW_W" "$HW_H" >>"$ART/hardware.log" 2>&1
    out=$(hw_permitted "$dev2_mac")
  fi
  hw_renewing off
  if [ "$out" = permitted ]; then
    pass "a finger on the router's screen $how: it is let in (the panel role)"
  else fail "a finger on the router's screen lets the device in" "state: $out; see $ART/hardware.log"; shot after-tap; return; fi
  NS=$NS_DEV2 dev_dhcp_named "$DEV2_NAME" >/dev/null 2>&1
  if ip netns exec "$NS_DEV2" curl -s -m 15 "http://$ISP_IP/" | grep -q 'hello from the ISP'; then
    pass "the device behind the hot-plugged rtl8139 port reaches the ISP (routed)"
  else fail "the device behind the rtl8139 port reaches the ISP" "lease '${IP:-none}'"; fi
  g "homework --json panel list" >>"$ART/hardware.log" 2>&1
  check "the screen's session is a panel's, not the admin's (homework panel list: the router's screen)" \
    g "homework --json panel list | grep -q '\"kind\": \"screen\"'"
}

hw_kiosk_memory() {  # what the kiosk costs the router: RSS (and PSS) of cage, cog and WebKit's processes
  g "for p in \$(pgrep -u homework-panel); do n=\$(cat /proc/\$p/comm); r=\$(awk '/^VmRSS/{print \$2}' /proc/\$p/status); s=\$(awk '/^Pss:/{print \$2}' /proc/\$p/smaps_rollup); echo \"\$n \$r \$s\"; done" \
    >"$ART/kiosk-memory.txt" 2>>"$ART/hardware.log"
  KIOSK_RSS=$(awk '{r += $2; s += $3} END {printf "%d MiB RSS (%d MiB PSS)", r / 1024, s / 1024}' "$ART/kiosk-memory.txt")
  KIOSK_PROCS=$(awk '{printf "%s%s %d MiB", (NR > 1 ? ", " : ""), $1, $2 / 1024}' "$ART/kiosk-memory.txt")
  log "kiosk memory: $KIOSK_RSS: $KIOSK_PROCS"
}

hw_dim() {  # the screen dims at night: a night window around now, the screen darker; back by day
  local bright dark
  shot day; bright=$(screen brightness "$ART/screen-day.ppm")
  gq "homework panel night --from 00:00 --to 23:59 --brightness 20"
  sleep 1
  for _ in $(seq 1 30); do
    shot night; dark=$(screen brightness "$ART/screen-night.ppm")
    python3 -c "import sys; sys.exit(not float('$dark') < float('$bright') * 0.5)" && break
    sleep 3
  done
  gq "homework panel night --off"
  if python3 -c "import sys; sys.exit(not float('$dark') < float('$bright') * 0.5)"; then
    pass "the screen dims at night ([panel] night window): mean brightness $bright by day, $dark at night (20 %)"
  else fail "the screen dims at night" "brightness $bright by day, $dark in the night window"; fi
}

hardware_boot1() {
  # Panels dim at night (22:00-07:00 of the router's clock, the host's by default), and a
  # dimmed screen's colours and first tap are not the day's: the screen's checks get the day
  # whatever the hour the test runs at (hw_dim makes its own night).
  gq "homework panel night --off" || fail "the screen's night window turned off for the day's checks" "see $ART/checks.log"
  hw_report_checks 1 e1000e virtio_net
  hw_api_check
  if hw_hotplug; then
    pass "the device behind the hot-plugged rtl8139 port got $IP/$MASK and is pending"
    hw_kiosk
  else fail "a device behind the hot-plugged port gets an address and is pending"; fi
  hw_kiosk_memory
  hw_dim
}

# ------------------------------------------------------------------ boot 2
hardware_no_screen() {  # boot N: no display, nothing of the kiosk runs
  local n=$1
  if g "systemctl is-active -q homework-kiosk-check.service || [ \"\$(systemctl show -p Result --value homework-kiosk-check)\" = success ]; \
        ! systemctl is-active -q homework-kiosk.service && ! pgrep -x cage && ! pgrep -x cog && ! pgrep -u homework-panel" >>"$ART/hardware.log" 2>&1; then
    pass "boot $n has no display: nothing of the kiosk runs (no cage, no cog, no process of its user)"
  else fail "boot $n without a display runs nothing of the kiosk" "see $ART/hardware.log"; fi
}

hardware_boot2() {  # a reboot with other NIC models: WAN on rtl8139, the LAN device on e1000e, no screen
  WAN_NIC=rtl8139 LAN_NIC=e1000e SCREEN=no
  hw_boot_args
  local i
  g "systemctl reboot" >/dev/null 2>&1
  for i in $(seq 1 300); do kill -0 "$QEMU_PID" 2>/dev/null || break; sleep 1; done   # -no-reboot: QEMU exits
  if kill -0 "$QEMU_PID" 2>/dev/null; then fail "the router reboots (boot 1 -> 2)" "QEMU still running after ${i}s"; return; fi
  boot bios 2 || { fail "boot 2 (BIOS) QEMU start" "see $ART/qemu-boot2.log"; return; }
  if READY2=$(wait_ready 2); then pass "boot 2 (BIOS, WAN on rtl8139, LAN on e1000e, no screen): ready in ${READY2}s"
  else fail "boot 2 (BIOS) reaches HOMEWORK-READY" "$READY2"; READY2=""; return; fi
  hw_report_checks 2 8139cp e1000e    # QEMU's rtl8139 is a C+ chip: 8139cp drives it
  hardware_no_screen 2
  if dev_dhcp && [[ "$IP" == 10.2.* ]] && dev curl -s -m 15 "http://$ISP_IP/" | grep -q 'hello from the ISP'; then
    pass "boot 2: the device behind the e1000e LAN port reaches the ISP through the rtl8139 WAN (routed, NAT)"
  else fail "boot 2: the device reaches the ISP through rtl8139" "lease '${IP:-none}'"; fi
}

# ------------------------------------------------------------------ the phase
hardware_boot1_args() {  # before boot 1: WAN on e1000e, LAN on virtio-net, a 1024x600 screen
  WAN_NIC=e1000e LAN_NIC=virtio-net-pci SCREEN=yes
  hw_boot_args
  # shellcheck disable=SC2034  # boot() reads it: the kiosk (WebKit, rendering in software in the VM) beside the router
  VM_MEM=2048
}

hw_setup_offered() {  # the pending device's waiting page offers the set-up (within 180 s)
  local i offer
  for i in $(seq 1 90); do
    offer=$(hh "http://$ROUTER/ws.v1/setup")
    echo "$offer" | grep -q '"open": true' && return 0
    sleep 2
  done
  echo "offer after ${i} tries: $offer" >>"$ART/checks.log"
  return 1
}

hardware_phase() {
  BOOT1_T0=$BOOT_T0   # boot() set it: QEMU's start for boot 1
  # the household sets the router up from its device first: a panel decides nothing before that.
  # Its waiting page answers once the controller has the new device among the cut-off ones
  # (until then plain HTTP to the router is lighttpd's redirect to HTTPS).
  if dev_dhcp && hw_setup_offered && hh_setup "$HOUSEHOLD_PW" && [ "$(device_state "$DEV_MAC")" = permitted ]; then
    pass "the household set the router up from its device (the first hour) and is let in"
  else fail "the household sets the router up from its device" "see $ART/checks.log"; fi
  # its client renews the pending lease, as a device's DHCP daemon would (the main part does the same)
  dev_dhcp >/dev/null 2>&1 || true
  check_within 120 "the household's device reaches the ISP through the e1000e WAN, and the Guest Board over HTTPS" \
    sh -c "ip netns exec $NS_DEV curl -s -m 15 http://$ISP_IP/ | grep -q 'hello from the ISP' && ip netns exec $NS_DEV curl -sk -m 15 https://$ROUTER/ | grep -qi '<html\|<!doctype'"
  hardware_boot1
  local t1 t2; t1=$(date +%s)
  hardware_boot2
  t2=$(date +%s)
  # what this part costs the boot test's path (the image built or taken from the cache before)
  log "hardware part: boot 1 (first boot, a screen) ready in ${READY1:-?}s; its checks to the reboot $((t1 - BOOT1_T0 - ${READY1:-0}))s; reboot, boot 2 and its checks $((t2 - t1))s (ready in ${READY2:-?}s); QEMU's first start to the end $((t2 - BOOT1_T0))s${KIOSK_RSS:+; kiosk $KIOSK_RSS}"
}

hardware_cleanup() {
  hw_renewing off
  ip netns pids "$NS_DEV2" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns del "$NS_DEV2" 2>/dev/null
  for l in "$TAP_H" "$VETH_H" "$BR_H"; do ip link del "$l" 2>/dev/null; done
}
