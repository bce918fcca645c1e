#!/bin/sh
# The captive pages' lighttpd config for this router: conf/lighttpd-captive.conf with its
# variables, plus the listeners this router can have. Used by homework-captive.service
# on the image and by the emulated home (tests/homelab/dns.py), so both serve the same.
#
#   captive-conf.sh CONF ROOT STATE BIND [BIND6 [TLS_DIR]] > lighttpd.conf
#
#   CONF     conf/lighttpd-captive.conf            ROOT   guestboard-ui/captive
#   STATE    pid file and error log directory      BIND   dnsd's IPv4 address (169.254.53.53)
#   BIND6    dnsd's IPv6 address (fd00:53::53), "" without IPv6: cut-off devices' IPv6 web
#            traffic is sent to it
#   TLS_DIR  holding server.crt and server.key (the router's certificate), "" for none:
#            then port 8443 (cut-off devices' HTTPS, the captive portal API) is not served
set -eu
conf=$1 root=$2 state=$3 bind=$4 bind6=${5:-} tls=${6:-}
printf 'var.captive_root = "%s"\nvar.captive_bind = "%s"\nvar.captive_state = "%s"\ninclude "%s"\n' \
  "$root" "$bind" "$state" "$conf"
tls_block() {   # tls_block SOCKET
  printf '$SERVER["socket"] == "%s" {\n  ssl.engine = "enable"\n  ssl.pemfile = "%s/server.crt"\n' "$1" "$tls"
  printf '  ssl.privkey = "%s/server.key"\n  ssl.openssl.ssl-conf-cmd = ("MinProtocol" => "TLSv1.2")\n}\n' "$tls"
}
if [ -n "$bind6" ]; then
  printf '$SERVER["socket"] == "[%s]:8088" { }\n' "$bind6"
fi
if [ -n "$tls" ] && [ -s "$tls/server.crt" ] && [ -s "$tls/server.key" ]; then
  tls_block "$bind:8443"
  [ -n "$bind6" ] && tls_block "[$bind6]:8443"
fi
exit 0
