# Shared helpers for the Homework image scripts (sourced, POSIX sh).
STATE=/var/lib/homework
RUN=/run/homework
HW=/usr/lib/homework
mkdir -p "$RUN"

# Settings: image defaults, then the household's overrides (persistent, on the data partition;
# /etc/homework/router.conf is a symlink to it).
load_router_conf() {
  WAN=auto; BRIDGE=br0; DATAPATH=system; WIFI=auto; WIFI_COUNTRY=GB; LAN_EXCLUDE=""; SATELLITES=""
  [ -f /usr/share/homework/image/router.conf.default ] && . /usr/share/homework/image/router.conf.default
  [ -f "$STATE/etc/router.conf" ] && . "$STATE/etc/router.conf"
  [ -f "$RUN/router.conf" ] && . "$RUN/router.conf"    # runtime override (tests)
  # A satellite's bridge has a name of its own: the router's controller refuses, as a
  # satellite, a switch whose bridge is named like its own.
  if [ -e "$RUN/satellite" ]; then BRIDGE=${SATELLITE_BRIDGE:-sat0}; fi
  return 0
}

# Physical wired Ethernet ports (a device behind them, ARP type 1, not Wi-Fi).
wired_ifaces() {
  for d in /sys/class/net/*; do
    n=${d##*/}
    [ -e "$d/device" ] || continue
    [ -e "$d/phy80211" ] && continue
    [ -d "$d/wireless" ] && continue
    [ "$(cat "$d/type" 2>/dev/null)" = 1 ] || continue
    echo "$n"
  done
}

# Wi-Fi interfaces Homework serves: all (WIFI=auto), none (WIFI=off) or the ones listed.
wifi_ifaces() {
  for d in /sys/class/net/*; do
    [ -e "$d/phy80211" ] || continue
    wifi_allowed "${d##*/}" && echo "${d##*/}"
  done
  return 0
}
wifi_allowed() {
  case "${WIFI:-auto}" in
    auto) return 0 ;;
    off) return 1 ;;
    *) for w in $WIFI; do [ "$w" = "$1" ] && return 0; done; return 1 ;;
  esac
}

# Print to the console and to the second serial port (read by the boot test; harmless elsewhere).
announce() {
  msg="$*"
  echo "$msg"
  [ -w /dev/console ] && echo "$msg" > /dev/console 2>/dev/null || true
  if [ -c /dev/ttyS1 ]; then timeout 2 sh -c 'echo "$1" > /dev/ttyS1' _ "$msg" 2>/dev/null || true; fi
}

# The router ports that satellites' cables plug into (router.conf's SATELLITES, DPID:UPLINK:PORT;
# a PORT hws<i>p<n> is a port of another satellite, a tree, not one of ours).
satellite_cables() {
  for s in $SATELLITES; do
    case "${s##*:}" in hws*) ;; *) echo "${s##*:}" ;; esac
  done
}

# The role this box was given (homework-firstboot): the kernel command line's homework.role=,
# else the ESP's homework-role file, else the one recorded at an earlier boot, else router.
role_choice() {
  r=$(sed -n 's/.*homework\.role=\([a-z]*\).*/\1/p' "${CMDLINE:-/proc/cmdline}")
  [ -n "$r" ] || r=$(timeout 20 cat "${ESP:-/boot/efi}/homework-role" 2>/dev/null | tr -dc 'a-z' || true)
  [ -n "$r" ] || r=$(cat "$STATE/etc/role" 2>/dev/null || true)
  case "$r" in
    satellite) echo satellite ;;
    ""|router) echo router ;;
    *) announce "homework-firstboot: unknown role '$r' (router or satellite): booting as a router" >&2; echo router ;;
  esac
}
