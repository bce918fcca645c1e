#!/bin/bash
# sat-ap.sh DIR IFACE...: (re)start the emulated satellite's access points, a real hostapd
# (driver=wired: no radios here) on each IFACE, with the SSID its agent wrote into
# DIR/state/wifi.env and the deny list in DIR/state/hostapd.deny. The agent runs this as its
# Wi-Fi apply command (the image's is `homework-wifi apply`), inside the satellite's namespace.
set -eu
dir=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091  # written by the agent
. "$dir/state/wifi.env"
mkdir -p "$dir/ctrl"
touch "$dir/state/hostapd.deny"
printf '"household" MD5 "correct horse battery staple"\n' > "$dir/eap_users"
ssid_hex=$(printf '%s' "$SSID" | od -An -tx1 | tr -d ' \n')
for ifc in "$@"; do
  conf=$dir/hostapd-$ifc.conf pidfile=$dir/hostapd-$ifc.pid
  sed -e "s|@IFACE@|$ifc|" -e "s|@CTRL_DIR@|$dir/ctrl|" -e "s|@EAP_USERS@|$dir/eap_users|" \
      -e "s|@DENY_FILE@|$dir/state/hostapd.deny|" "$here/../../conf/hostapd-wired.conf.in" > "$conf"
  printf 'ssid2=%s\nutf8_ssid=1\n' "$ssid_hex" >> "$conf"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")"
    for _ in $(seq 50); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$dir/ctrl/$ifc"
  hostapd -B -P "$pidfile" -f "$dir/hostapd-$ifc.log" "$conf"
done
