#!/usr/bin/env bash
# Put Homework into a bookworm rootfs directory: whatever the source tree has at build time.
#   install-overlay.sh TOP ROOTFS VERSION INPUT_HASH [SEQUENCE [UPDATE_PUBLIC_KEY]]
set -euo pipefail
TOP=$1 R=$2 VERSION=$3 KEY=$4 SEQUENCE=${5:-0} UPDATE_PUB=${6:-}
cd "$TOP"
inst() { install -D -m "$1" "$2" "$R$3"; }
copytree() {   # copytree SRC DEST: copy without caches, tests' node_modules, bytecode
  mkdir -p "$R$2"
  tar -C "$1" --exclude=__pycache__ --exclude='*.pyc' --exclude=node_modules --exclude=.pytest_cache \
      --owner=0 --group=0 -cf - . | tar -C "$R$2" -xf -
}

# --- our software
if [ -d nox-modules ] && [ -n "$(ls -A nox-modules)" ]; then
  copytree nox-modules /usr/lib/homework/nox-modules
  [ -d hwdb/python ] && copytree hwdb/python /usr/lib/homework/nox-modules   # hwdb_client, for hwdb_sync
  # The link simulator (components/linksim) stays although the image never loads it (it reads
  # the real radio): the manifests import every known component's (tests/unit/test_image_modules.py).
  # Bytecode, made once here by the image's own python3: the services and the CLI run with
  # PYTHONDONTWRITEBYTECODE (the system slot is not theirs to write), so without it every
  # controller start and every `homework` command compiled 20,000 lines again (seconds on
  # a slow box, each boot). checked-hash: a changed source is never run from stale bytecode.
  chroot "$R" python3 -m compileall -q --invalidation-mode checked-hash /usr/lib/homework/nox-modules >/dev/null
  echo "installed nox-modules -> /usr/lib/homework/nox-modules (compiled)"
fi
if [ -f nox-modules/homework/cli.py ]; then   # the admin CLI, over the controller's control socket
  mkdir -p "$R/usr/bin"
  printf '%s\n' '#!/bin/sh' 'export PYTHONPATH=/usr/lib/homework/nox-modules PYTHONDONTWRITEBYTECODE=1' \
    "exec python3 -c 'import sys; from homework.cli import main; sys.exit(main())' \"\$@\"" > "$R/usr/bin/homework"
  chmod 755 "$R/usr/bin/homework"
fi
for b in hwdbd hwdb; do
  if [ -x "hwdb/target/release/$b" ]; then
    inst 755 "hwdb/target/release/$b" "/usr/bin/$b"; echo "installed $b"
  fi
done
if [ -x dnsd/target/release/homework-dnsd ]; then
  inst 755 dnsd/target/release/homework-dnsd /usr/bin/homework-dnsd; echo "installed homework-dnsd"
fi
if [ -x dhcpd/target/release/homework-dhcpd ]; then
  inst 755 dhcpd/target/release/homework-dhcpd /usr/bin/homework-dhcpd; echo "installed homework-dhcpd"
fi
[ -d hwdb/schema ] && [ -n "$(ls -A hwdb/schema)" ] && copytree hwdb/schema /usr/share/homework/hwdb/schema
if [ -d guestboard-ui ] && [ -n "$(ls -A guestboard-ui)" ]; then
  copytree guestboard-ui /usr/share/homework/guestboard-ui
  echo "installed guestboard-ui"
else
  mkdir -p "$R/usr/share/homework/guestboard-ui"
  cat > "$R/usr/share/homework/guestboard-ui/index.html" <<'EOF'
<!doctype html><meta charset="utf-8"><title>Homework router</title>
<h1>Homework router</h1><p>The Guest Board is not part of this build. The ws.v1 API is at <a href="/ws.v1/">/ws.v1/</a>.</p>
EOF
fi
# conf/: the controller's templates (conf/*.toml etc.) for reference, the image's own files in /etc/homework
mkdir -p "$R/usr/share/homework/conf" "$R/etc/homework"
find conf -maxdepth 1 -type f -exec install -m 644 {} "$R/usr/share/homework/conf/" \;
install -m 644 conf/image/homework.toml.in "$R/etc/homework/"
# The router's component list (homework-net keeps those whose needs the box meets).
PYTHONPATH=nox-modules python3 -m homework.lineup --needs > "$R/usr/share/homework/lineup"
inst 755 scripts/router-net.sh /usr/lib/homework/scripts/router-net.sh   # homework-net brings the network up with it
inst 755 scripts/wan-pd-hook.sh /usr/lib/homework/scripts/wan-pd-hook.sh   # homework-wan6's dhcpcd hook
inst 755 scripts/captive-conf.sh /usr/lib/homework/scripts/captive-conf.sh   # homework-captive's lighttpd config

# --- image scripts and units
mkdir -p "$R/usr/lib/homework/image"
for f in image/guest/*; do install -m 755 "$f" "$R/usr/lib/homework/image/"; done
chmod 644 "$R/usr/lib/homework/image/lib.sh" "$R/usr/lib/homework/image/router.conf.default"
inst 644 image/guest/router.conf.default /usr/share/homework/image/router.conf.default
for f in conf/systemd/*.service conf/systemd/*.target; do inst 644 "$f" "/usr/lib/systemd/system/${f##*/}"; done
inst 644 conf/systemd/90-homework-wifi.rules /usr/lib/udev/rules.d/90-homework-wifi.rules
# The Guest Board on the router's own screen: its user and the display watch
inst 644 conf/systemd/91-homework-kiosk.rules /usr/lib/udev/rules.d/91-homework-kiosk.rules
inst 644 conf/image/homework-sysusers.conf /usr/lib/sysusers.d/homework.conf
chroot "$R" systemd-sysusers /usr/lib/sysusers.d/homework.conf
inst 644 image/README.md /usr/share/doc/homework/README.image.md
ln -sfn /var/lib/homework/etc/router.conf "$R/etc/homework/router.conf"
# dhcpcd's DUID (the ISP ties the delegated prefix to it) on the data partition: an upgrade keeps it.
rm -rf "$R/var/lib/dhcpcd"; ln -sfn /var/lib/homework/dhcpcd "$R/var/lib/dhcpcd"
# first line: the version; `sequence N` grows with every build (an update must have a higher one)
printf '%s\nsequence %s\ninputs %s\nbuilt %s\n' "$VERSION" "$SEQUENCE" "$KEY" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$R/etc/homework/version"
# the public half of the update signing key: the router accepts only .hwup files it verifies
if [ -n "$UPDATE_PUB" ] && [ -s "$UPDATE_PUB" ]; then
  inst 644 "$UPDATE_PUB" /usr/share/homework/update-key.pub; echo "installed the update public key"
fi

# --- system configuration
echo homework > "$R/etc/hostname"
cat > "$R/etc/hosts" <<'EOF'
127.0.0.1	localhost
127.0.1.1	homework homework.lan
::1		localhost ip6-localhost ip6-loopback
EOF
# No "/" line: both system slots carry the label hw-root; the kernel command line names the
# slot (root=PARTLABEL=hw-root-a|b) and mounts it rw. The ESP is mounted on first access (the
# update code, mark-good) and unmounted when idle, so it is rarely mounted at a power cut;
# homework-esp-check.service checks and repairs it (fsck.fat -a) before its automount exists.
# Read-only: reading it writes nothing (a read-write FAT mount sets its dirty flag); the update
# code remounts it read-write only for a change (homework.update.slots.writable).
cat > "$R/etc/fstab" <<'EOF'
# Homework router. Partitions: 1 BIOS boot, 2 ESP (HWBOOT), 3-4 system slots (hw-root-a, -b), 5 state (hw-data).
LABEL=hw-data  /var/lib/homework  ext4  defaults,noatime,nofail,x-systemd.device-timeout=90s  0 2
LABEL=HWBOOT   /boot/efi          vfat  ro,nofail,x-systemd.automount,x-systemd.idle-timeout=30s,umask=0077  0 0
EOF
mkdir -p "$R/var/lib/homework" "$R/boot/efi"
# (dnsmasq listens on 127.0.0.1:5353 only, so the router uses the ISP's resolvers directly.)
rm -f "$R/etc/resolv.conf"; ln -s /run/homework/resolv.upstream "$R/etc/resolv.conf"
cat > "$R/etc/sysctl.d/90-homework.conf" <<'EOF'
net.ipv4.ip_forward = 1
net.ipv4.conf.all.send_redirects = 0
net.ipv4.conf.default.send_redirects = 0
kernel.panic = 10
EOF
# Journald: keep logs in RAM-sized bounds; persistent journal on the root fs is fine but capped.
mkdir -p "$R/etc/systemd/journald.conf.d"
printf '[Journal]\nSystemMaxUse=64M\nForwardToConsole=no\n' > "$R/etc/systemd/journald.conf.d/homework.conf"
# Boot must not wait for "network online" (openvswitch pulls it in).
mkdir -p "$R/etc/systemd/system"
ln -sfn /dev/null "$R/etc/systemd/system/systemd-networkd-wait-online.service"
# Per-machine identity is created on first boot; no shared secrets or passwords in the image.
: > "$R/etc/machine-id"; rm -f "$R/var/lib/dbus/machine-id"
rm -f "$R/etc/openvswitch/conf.db" "$R/etc/openvswitch/system-id.conf" "$R/var/lib/openvswitch/conf.db"
sed -i 's/^root:[^:]*:/root:*:/' "$R/etc/shadow"   # root locked: no login password at all
rm -rf "$R/var/cache/apt/archives/"*.deb "$R/var/lib/apt/lists/"* 2>/dev/null || true

# --- units: ours on, Debian's own instances of the same daemons off (ours replace them)
systemctl --root="$R" enable homework.target homework-esp-check.service homework-firstboot.service homework-net.service \
  homework-wan.service homework-wan6.service homework-hwdbd.service homework-controller.service homework-dns.service \
  homework-resolver.service homework-dnsd.service homework-captive.service homework-web.service homework-ready.service homework-mark-good.service homework-hardware.service homework-kiosk-check.service homework-satellite.service homework-test-agent.service \
  homework-test-hwsim.service openvswitch-switch.service
for u in hostapd.service lighttpd.service unbound.service unbound-resolvconf.service radvd.service wpa_supplicant.service systemd-networkd.service seatd.service \
         apt-daily.timer apt-daily-upgrade.timer e2scrub_reap.service; do
  systemctl --root="$R" disable "$u" 2>/dev/null || true
done
systemctl --root="$R" mask hostapd.service lighttpd.service unbound.service 2>/dev/null || true
systemctl --root="$R" set-default multi-user.target
echo "overlay done: $(du -sh "$R" | cut -f1)"
