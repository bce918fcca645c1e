#!/bin/sh
# dhcpcd hook on the router's WAN: writes the prefix the ISP delegated (DHCPv6-PD) to
# the file the controller reads ([ipv6] prefix_file), and empties it when the delegation
# ends. dhcpcd runs it with the lease in its environment (dhcpcd-run-hooks(8)).
#   dhcpcd -6 ... -c scripts/wan-pd-hook.sh WAN_IF
# dhcpcd clears the environment of hooks: set PREFIX_FILE with `env PREFIX_FILE=...` in
# dhcpcd.conf to write elsewhere than the default.
PREFIX_FILE=${PREFIX_FILE:-/run/homework/ipv6-delegated-prefix}

write() {
  tmp="$PREFIX_FILE.tmp"
  printf '%s\n' "$1" >"$tmp" && mv -f "$tmp" "$PREFIX_FILE"
}

# shellcheck disable=SC2154  # reason and the new_/old_ variables come from dhcpcd
case "$reason" in
  BOUND6|RENEW6|REBIND6|REBOOT6|INFORM6|DELEGATED6)
    if [ -n "${new_dhcp6_ia_pd1_prefix1:-}" ] && [ -n "${new_dhcp6_ia_pd1_prefix1_length:-}" ]; then
      write "$new_dhcp6_ia_pd1_prefix1/$new_dhcp6_ia_pd1_prefix1_length"
    fi
    ;;
  EXPIRE6|RELEASE6|STOP6|NOCARRIER)
    if [ -n "${old_dhcp6_ia_pd1_prefix1:-}" ]; then write ""; fi
    ;;
esac
exit 0
