#!/bin/sh
# udhcpc's script for a remote device's end of its veth in the away namespace (away.py):
# only the address, so its renewals go out from it and their answers come back to it.
# No default route and no resolv.conf: the namespace routes the tunnel's packets by policy,
# and the device's DNS server is in its WireGuard configuration.
# shellcheck disable=SC2154  # udhcpc sets interface, ip and mask
case "$1" in
  deconfig) ip -4 addr flush dev "$interface" ;;
  bound) ip -4 addr flush dev "$interface"; ip -4 addr add "$ip/${mask:-30}" dev "$interface" ;;
  renew) ip -4 addr replace "$ip/${mask:-30}" dev "$interface" ;;
esac
exit 0
