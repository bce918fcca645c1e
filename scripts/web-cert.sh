#!/usr/bin/env bash
# Make the Guest Board's self-signed TLS certificate on first start (idempotent):
#   scripts/web-cert.sh DIR [NAME-OR-ADDRESS...]
# writes DIR/server.key (0600) and DIR/server.crt (EC P-256, 10 years, subjectAltName
# = homework.home, homework.home.arpa (the name of the router's encrypted DNS) + the given
# names/addresses). An existing pair is kept.
set -euo pipefail
dir=${1:?usage: web-cert.sh DIR [NAME-OR-ADDRESS...]}
shift
if [ -s "$dir/server.key" ] && [ -s "$dir/server.crt" ]; then
  exit 0
fi
mkdir -p "$dir"
chmod 700 "$dir"
san="DNS:homework.home,DNS:homework.home.arpa,DNS:localhost,IP:127.0.0.1"
for n in "$@"; do
  if [[ $n =~ ^[0-9.]+$ || $n == *:* ]]; then san+=",IP:$n"; else san+=",DNS:$n"; fi
done
umask 077
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
  -subj "/CN=Homework router" -addext "subjectAltName=$san" \
  -addext "basicConstraints=critical,CA:FALSE" -addext "extendedKeyUsage=serverAuth" \
  -keyout "$dir/server.key.new" -out "$dir/server.crt.new" 2>/dev/null
mv "$dir/server.key.new" "$dir/server.key"
mv "$dir/server.crt.new" "$dir/server.crt"
chmod 644 "$dir/server.crt"
echo "web-cert: made a self-signed certificate in $dir ($san)"
