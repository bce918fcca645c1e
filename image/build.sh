#!/usr/bin/env bash
# Build the flashable Homework router image:
#   out/homework-<version>-amd64.img       raw GPT disk (UEFI: systemd-boot, legacy BIOS: GRUB)
#   out/homework-<version>-amd64.img.zst   compressed copy (what people download and flash)
#   out/homework-<version>-amd64.hwup      signed update file (scripts/make-hwup.py) for a running router
# from Debian bookworm with mmdebstrap, without loop devices, as root.
#
# Stages: prep, rootfs (cached on image/packages.txt), overlay, esp, root-fs, data-fs, disk,
# bootloader, hwup, compress. The finished image is cached too, keyed on a hash of every input
# (image/, conf/, nox-modules/, hwdb binaries + schema, guestboard-ui/, scripts/router-net.sh,
# scripts/make-hwup.py, the update public key): a second `make image` with nothing changed
# takes a second.
#
# Environment: HOMEWORK_IMAGE_NOCACHE=1 rebuilds everything; HOMEWORK_IMAGE_NOCOMPRESS=1 skips
# the .zst (the boot test uses the raw image); HOMEWORK_IMAGE_WORK=DIR puts the work dir and
# its caches (base rootfs ~850 MB, last image) in DIR instead of image/work;
# HOMEWORK_SIGNING_KEY=FILE the update signing key (default ~/.config/homework/signing-key,
# made on first use); VERSION_SEQUENCE=N the build sequence (default: the input commit's time).
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
WORK=${HOMEWORK_IMAGE_WORK:-$TOP/image/work}   # build dir + caches (set it outside the tree to share them between clones)
OUT=$TOP/out
LOGS=$WORK/logs
mkdir -p "$WORK" "$OUT" "$LOGS"
T0=$(date +%s)

# ---- layout (fixed: an update writes one system slot and keeps the rest; see image/README.md)
ESP_START_MIB=1;       ESP_MIB=128      # p2: FAT32, label HWBOOT (systemd-boot, kernels per slot, entries, grubenv)
ROOT_A_START_MIB=129;  ROOT_MIB=2048    # p3: ext4, label hw-root, PARTLABEL hw-root-a (system slot A)
ROOT_B_START_MIB=2177                   # p4: PARTLABEL hw-root-b (system slot B: empty in a fresh image)
DATA_START_MIB=4225;   DATA_MIB=64      # p5: ext4, label hw-data (/var/lib/homework; grows at first boot)
DISK_MIB=$((DATA_START_MIB + DATA_MIB + 1))   # + room for the backup GPT
# p1: BIOS boot partition, LBA 34..2047 (GRUB core.img for legacy BIOS)
# The kernel command line names the slot (root=PARTLABEL=hw-root-<slot>): both slots carry the
# same file system label, so nothing may mount "/" by label.
cmdline() { echo "root=PARTLABEL=hw-root-$1 rw console=tty0 console=ttyS0,115200n8 net.ifnames=1"; }

say() { printf '%s\n' "$*"; }
stage() {   # stage NAME FUNCTION: run with its output in image/work/logs/NAME.log
  local name=$1 fn=$2 s log=$LOGS/$1.log
  s=$(date +%s)
  printf '[image] %-10s ... ' "$name"
  if ( set -euo pipefail; "$fn" ) >"$log" 2>&1; then
    printf 'ok (%ss)\n' "$(( $(date +%s) - s ))"
  else
    printf 'FAILED\n'
    say "[image] stage '$name' failed; log: $log" >&2
    tail -n 25 "$log" | sed 's/^/    /' >&2
    exit 1
  fi
}

# ---- version: VERSION file, else git describe of the last commit touching an input path
INPUT_PATHS=(image conf nox-modules hwdb/schema hwdb/src dnsd/src dhcpd/src guestboard-ui scripts/router-net.sh)
version() {
  if [ -f VERSION ]; then tr -d ' \n' < VERSION; return; fi
  local c v
  c=$(git log -1 --format=%H -- "${INPUT_PATHS[@]}" 2>/dev/null || true)
  [ -n "$c" ] || c=$(git rev-parse -q --verify HEAD 2>/dev/null || true)
  if [ -z "$c" ]; then echo "0.0.0-dev"; return; fi
  v=$(git describe --always --tags "$c" 2>/dev/null || git rev-parse --short "$c")
  if [ -n "$(git status --porcelain -- "${INPUT_PATHS[@]}" 2>/dev/null | grep -v '^??' || true)" ]; then
    v="$v-dirty"
  fi
  echo "$v"
}
VERSION=$(version)
sequence() {   # an integer that grows with every build: VERSION_SEQUENCE, else the input commit's time
  local t=${VERSION_SEQUENCE:-}
  [ -n "$t" ] || t=$(git log -1 --format=%ct -- "${INPUT_PATHS[@]}" 2>/dev/null || true)
  [[ "$t" =~ ^[0-9]+$ ]] || t=0
  echo "$t"
}
SEQUENCE=$(sequence)

# ---- update signing key: outside the repo; made on first use by scripts/make-hwup.py (0600).
# Its public half is baked into the image (the running router checks updates against it).
SIGNING_KEY=${HOMEWORK_SIGNING_KEY:-$HOME/.config/homework/signing-key}
UPDATE_PUB=$WORK/update-key.pub
MAKE_HWUP=$TOP/scripts/make-hwup.py
if [ -f "$MAKE_HWUP" ]; then
  mkdir -p "$(dirname "$SIGNING_KEY")"
  rm -f "$UPDATE_PUB"
  # make-hwup.py's own key functions (so the key format is the one it signs with), before the
  # root fs is made: the public key goes into the image, the image into the .hwup
  python3 - "$MAKE_HWUP" "$SIGNING_KEY" "$UPDATE_PUB" >"$LOGS/signing-key.log" 2>&1 <<'PY' \
    || { say "[image] scripts/make-hwup.py could not make/read the signing key $SIGNING_KEY; log: $LOGS/signing-key.log" >&2; exit 1; }
import importlib.util, sys
from pathlib import Path
spec = importlib.util.spec_from_file_location("make_hwup", sys.argv[1])
make_hwup = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_hwup)
key, created = make_hwup.load_or_create_key(Path(sys.argv[2]))
Path(sys.argv[3]).write_bytes(make_hwup.public_pem(key))
print(("created " if created else "using ") + "signing key " + sys.argv[2])
PY
else
  say "[image] WARNING: scripts/make-hwup.py missing: no update key in the image and no .hwup" >&2
  rm -f "$UPDATE_PUB"
fi

hash_tree() {   # stable hash of file names + contents under the given paths (missing paths ok)
  local p
  for p in "$@"; do
    [ -e "$p" ] || { echo "absent $p"; continue; }
    find "$p" \( -name __pycache__ -o -name node_modules -o -name '*.pyc' -o -name .pytest_cache \
                 -o -path image/work -o -path 'hwdb/target' \) -prune -o -type f -print0 \
      | LC_ALL=C sort -z | xargs -0 -r sha256sum
    find "$p" \( -name __pycache__ -o -name node_modules -o -path image/work \) -prune -o -type f \
      -perm -u+x -print | LC_ALL=C sort | sed 's/^/exec /'
  done | sha256sum | cut -c1-16
}

HWDB_BINS=()
for b in hwdb/target/release/hwdbd hwdb/target/release/hwdb dnsd/target/release/homework-dnsd dhcpd/target/release/homework-dhcpd; do [ -x "$b" ] && HWDB_BINS+=("$b"); done
BASE_KEY=$( (cat image/packages.txt image/firmware-prune.py; sed -n '/^# BASE-BEGIN/,/^# BASE-END/p' "$0"; cat /etc/apt/sources.list.d/debian.sources 2>/dev/null) | sha256sum | cut -c1-16)
IMAGE_KEY=$( (echo "$BASE_KEY $VERSION $SEQUENCE"; sha256sum "$UPDATE_PUB" 2>/dev/null || echo "no update key"; hash_tree scripts/make-hwup.py image/build.sh image/install-overlay.sh image/packages.txt image/README.md image/guest conf nox-modules \
             guestboard-ui hwdb/schema "${HWDB_BINS[@]}" scripts/router-net.sh) | sha256sum | cut -c1-16)
NAME=homework-$VERSION-amd64
IMG=$OUT/$NAME.img
HWUP=$OUT/$NAME.hwup
CACHE=$WORK/cache/$IMAGE_KEY

say "[image] version $VERSION, inputs $IMAGE_KEY, base rootfs $BASE_KEY"
say "[image] installs: nox-modules/$( [ -d nox-modules/homework ] && echo ' yes' || echo ' (absent)'), binaries: ${HWDB_BINS[*]:-(none built)}, guestboard-ui: $( [ -n "$(ls -A guestboard-ui 2>/dev/null)" ] && echo yes || echo '(empty)'), router-net.sh: $( [ -f scripts/router-net.sh ] && echo yes || echo '(absent, built-in fallback)')"

if [ -z "${HOMEWORK_IMAGE_NOCACHE:-}" ] && [ -f "$CACHE/disk.img" ]; then
  say "[image] inputs unchanged: reusing cached build $CACHE"
  cp --sparse=always --reflink=auto "$CACHE/disk.img" "$IMG.tmp" && mv "$IMG.tmp" "$IMG"
  if [ -z "${HOMEWORK_IMAGE_NOCOMPRESS:-}" ]; then
    if [ -f "$CACHE/disk.img.zst" ]; then cp "$CACHE/disk.img.zst" "$IMG.zst"
    else zstd -q -T0 -6 -f "$IMG" -o "$IMG.zst" && cp "$IMG.zst" "$CACHE/disk.img.zst"; fi
  fi
  if [ -f "$CACHE/update.hwup" ]; then cp "$CACHE/update.hwup" "$HWUP"; else rm -f "$HWUP"; fi
  ln -sfn "$NAME.img" "$OUT/homework-latest-amd64.img"
  say "[image] $IMG ($(du -h --apparent-size "$IMG" | cut -f1) raw, $(du -h "$IMG" | cut -f1) allocated)"
  exit 0
fi

# ---------------------------------------------------------------- stages
BASE=$WORK/base-$BASE_KEY
ROOTFS=$WORK/rootfs
PARTS=$WORK/parts

# BASE-BEGIN (this block is part of the base rootfs cache key)
st_rootfs() {
  if [ -f "$BASE/.complete" ] && [ -z "${HOMEWORK_IMAGE_NOCACHE:-}" ]; then echo "cached: $BASE"; return; fi
  rm -rf "$WORK"/base-*
  local pkgs
  pkgs=$(grep -v '^\s*#' image/packages.txt | grep -v '^\s*$' | paste -sd, -)
  # The machine's Debian mirror with the non-free-firmware component added (the firmware
  # packages live there; Debian's own installer has used it since bookworm).
  local mirror=/etc/apt/sources.list.d/debian.sources
  local mirrors=()
  if [ -f "$mirror" ]; then
    sed -E 's/^(Components:.*\bmain\b)(.*)$/\1\2 non-free-firmware/; s/(non-free-firmware.*) non-free-firmware$/\1/' \
      "$mirror" > "$WORK/image.sources"
    mirrors=("$WORK/image.sources")
  else mirrors=("deb http://deb.debian.org/debian bookworm main non-free-firmware"
                "deb http://deb.debian.org/debian bookworm-updates main non-free-firmware"
                "deb http://deb.debian.org/debian-security bookworm-security main non-free-firmware"); fi
  mmdebstrap --mode=root --variant=minbase --format=directory \
    --include="$pkgs" \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='rm -f "$1"/etc/hostname "$1"/etc/ssh/ssh_host_*' \
    --customize-hook='chroot "$1" dpkg --purge usrmerge libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl perl perl-modules-5.36 libperl5.36' \
    bookworm "$BASE.tmp" "${mirrors[@]}"
  trim_modules "$BASE.tmp"
  # shellcheck disable=SC2046  # one word per package
  python3 image/firmware-prune.py "$BASE.tmp" $(grep -o '^firmware-[a-z0-9-]*' image/packages.txt)
  rm -rf "$BASE"; mv "$BASE.tmp" "$BASE"; touch "$BASE/.complete"
}

# Kernel modules a router never loads: sound, cameras and TV tuners, InfiniBand, Bluetooth,
# industrial sensors, file systems of other operating systems and clusters, the kernel's
# own BPF self-test, chips a router cannot use (Intel's 802.11n cards without access-point
# mode, 60 GHz WiGig, ADSL USB modems, server NICs and accelerators), and the graphics drivers of cards the kiosk does not drive (AMD,
# NVIDIA, virtual machines' others). About 150 MB of the 400 MB of modules: every update
# writes and reads back the whole system slot, so each MB here is time on every update.
# Network, Wi-Fi (staging has some), storage, USB, input, Intel graphics and small display
# drivers (the Guest Board's kiosk on a screen), and the file systems a USB stick may carry stay.
TRIMMED_MODULES="sound drivers/media drivers/infiniband drivers/iio lib/test_bpf.ko
  drivers/bluetooth net/bluetooth
  drivers/net/wireless/intel/iwlwifi/dvm drivers/net/wireless/ath/wil6210 drivers/usb/atm
  drivers/net/ethernet/chelsio drivers/scsi/csiostor drivers/scsi/cxgbi drivers/crypto/chelsio drivers/crypto/qat
  drivers/gpu/drm/amd drivers/gpu/drm/radeon drivers/gpu/drm/nouveau drivers/gpu/drm/vmwgfx
  drivers/gpu/drm/gma500 drivers/gpu/drm/hyperv drivers/gpu/drm/vboxvideo drivers/gpu/drm/qxl
  fs/btrfs fs/xfs fs/ocfs2 fs/gfs2 fs/dlm fs/nfs fs/nfsd fs/smb fs/ceph fs/jfs fs/reiserfs
  fs/nilfs2 fs/ubifs fs/jffs2 fs/orangefs fs/afs fs/coda fs/adfs fs/affs fs/befs fs/bfs fs/efs
  fs/hpfs fs/minix fs/omfs fs/qnx4 fs/qnx6 fs/sysv fs/ufs fs/freevxfs fs/vboxsf fs/zonefs"
trim_modules() {   # trim_modules ROOT
  local dir kver d before
  for dir in "$1"/usr/lib/modules/*/; do
    kver=$(basename "$dir")
    before=$(du -sm "$dir" | cut -f1)
    for d in $TRIMMED_MODULES; do rm -rf "${dir}kernel/$d"; done
    depmod -b "$1" "$kver"
    echo "kernel $kver: modules trimmed from $before MiB to $(du -sm "$dir" | cut -f1) MiB"
  done
}
# BASE-END

st_overlay() {
  rm -rf "$ROOTFS"
  cp -a --reflink=auto "$BASE" "$ROOTFS"; rm -f "$ROOTFS/.complete"
  bash image/install-overlay.sh "$TOP" "$ROOTFS" "$VERSION" "$IMAGE_KEY" "$SEQUENCE" "$UPDATE_PUB"
}

st_esp() {
  rm -rf "$PARTS"; mkdir -p "$PARTS"
  local kernel initrd
  kernel=$(ls "$ROOTFS"/boot/vmlinuz-* | sort -V | tail -1)
  initrd=$(ls "$ROOTFS"/boot/initrd.img-* | sort -V | tail -1)
  [ -f "$kernel" ] && [ -f "$initrd" ]
  cp "$kernel" "$PARTS/vmlinuz"; cp "$initrd" "$PARTS/initrd.img"   # also the .hwup's members
  mkfs.vfat -C -F 32 -n HWBOOT "$PARTS/esp.img" $((ESP_MIB * 1024))
  export MTOOLS_SKIP_CHECK=1
  local E=(-i "$PARTS/esp.img")
  mmd "${E[@]}" ::/EFI ::/EFI/BOOT ::/loader ::/loader/entries ::/homework ::/homework/a ::/homework/b ::/grub
  mcopy "${E[@]}" /usr/lib/systemd/boot/efi/systemd-bootx64.efi ::/EFI/BOOT/BOOTX64.EFI
  mcopy "${E[@]}" "$PARTS/vmlinuz" ::/homework/a/vmlinuz
  mcopy "${E[@]}" "$PARTS/initrd.img" ::/homework/a/initrd.img
  # UEFI: systemd-boot boots the first homework-* entry in its order: entries whose tries are
  # used up (homework-X+0-N.conf) last, else the highest `version` (the build sequence) first.
  printf 'timeout 0\neditor no\nconsole-mode keep\ndefault homework-*\n' > "$PARTS/loader.conf"
  printf 'title Homework router %s (slot a)\nsort-key homework\nversion %s\nlinux /homework/a/vmlinuz\ninitrd /homework/a/initrd.img\noptions %s\n' \
    "$VERSION" "$SEQUENCE" "$(cmdline a)" > "$PARTS/homework-a.conf"
  mcopy "${E[@]}" "$PARTS/loader.conf" ::/loader/loader.conf
  mcopy "${E[@]}" "$PARTS/homework-a.conf" ::/loader/entries/homework-a.conf
  # Legacy BIOS: core.img's embedded config loads /grub/grub.cfg, which takes the slot from grubenv
  grub_cfg > "$PARTS/grub.cfg"
  grub_env good_slot=a try_slot= > "$PARTS/grubenv"
  mcopy "${E[@]}" "$PARTS/grub.cfg" ::/grub/grub.cfg
  mcopy "${E[@]}" "$PARTS/grubenv" ::/grub/grubenv
  echo "homework $VERSION" > "$PARTS/homework.id"; mcopy "${E[@]}" "$PARTS/homework.id" ::/homework.id
  mdir "${E[@]}" -/ ::/
  # Room for updates: the other slot's kernel and initrd, and later, with both slots full, a
  # slot's new initrd written beside its old one before the rename (update/slots.copy_atomic).
  local free need
  free=$(mdir "${E[@]}" ::/ | sed -n 's/^ *\([0-9 ]*\) bytes free$/\1/p' | tr -d ' ')
  need=$(( $(stat -c %s "$PARTS/vmlinuz") + 2 * $(stat -c %s "$PARTS/initrd.img") ))
  echo "ESP: $free bytes free, $need needed by updates (the other slot's kernel and initrd, an initrd's copy)"
  [ "${free:-0}" -gt "$need" ] || { echo "the ESP ($ESP_MIB MiB) cannot hold both slots and an update's initrd: the initrd is too big"; return 1; }
}

grub_cfg() {   # the ESP's /grub/grub.cfg: try_slot once (cleared before it boots), else good_slot
  local opts; opts=$(cmdline '${slot}')
  cat <<EOF
# Homework A/B boot under legacy BIOS (UEFI uses systemd-boot's boot counting instead).
# grubenv: good_slot = the slot marked good; try_slot = a freshly written slot, booted once.
set timeout=0
load_env --file \$prefix/grubenv good_slot try_slot
if [ -n "\$try_slot" ]; then
  set slot="\$try_slot"
  set try_slot=
  save_env --file \$prefix/grubenv try_slot
else
  set slot="\$good_slot"
fi
if [ "\$slot" != a -a "\$slot" != b ]; then set slot=a; fi
echo "Homework: booting slot \$slot"
linux /homework/\${slot}/vmlinuz $opts
initrd /homework/\${slot}/initrd.img
boot
EOF
}

grub_env() {   # grub_env KEY=VALUE...: a GRUB environment block (1024 bytes, padded with '#')
  python3 - "$@" <<'PY'
import sys
body = "# GRUB Environment Block\n" + "".join(kv + "\n" for kv in sys.argv[1:])
sys.stdout.write(body + "#" * (1024 - len(body)))
PY
}

st_rootfs_img() {
  # Slot A's file system; the same file, compressed, is the .hwup's root.img.zst. Sized to its
  # content plus room (an update writes and reads back all of it: under 2 GiB is faster); each
  # slot's first boot grows it to its 2 GiB partition (homework-firstboot).
  local used fs_mib
  used=$(du -sm "$ROOTFS" | cut -f1)
  fs_mib=$(( (used * 9 / 8 + 128 + 63) / 64 * 64 ))   # + ext4's own (inode tables, journal)
  [ "$fs_mib" -le "$ROOT_MIB" ] || { echo "the system ($used MiB) does not fit its ${ROOT_MIB} MiB slot"; return 1; }
  echo "system: $used MiB of files, file system $fs_mib MiB (slot $ROOT_MIB MiB)"
  mkfs.ext4 -q -F -L hw-root -E lazy_itable_init=0 -d "$ROOTFS" "$PARTS/root.img" "${fs_mib}M"
  tune2fs -e remount-ro "$PARTS/root.img"   # what fstab's "/" line used to say (root is mounted by the kernel now)
  rm -rf "$ROOTFS"   # 1 GB we no longer need
}

st_data_img() {
  mkdir -p "$PARTS/data"
  cat > "$PARTS/data/README" <<EOF
Homework router state (partition hw-data, mounted at /var/lib/homework).
Kept across reboots and updates: an update writes the other system slot (hw-root-a/-b)
and the boot partition's entries, never this partition.
EOF
  mkfs.ext4 -q -F -L hw-data -d "$PARTS/data" "$PARTS/data.img" "${DATA_MIB}M"
}

st_disk() {
  local tmp=$IMG.tmp
  rm -f "$tmp"; truncate -s "${DISK_MIB}M" "$tmp"
  sfdisk -q --label gpt "$tmp" <<EOF
label: gpt
first-lba: 34
start=34, size=2014, type=21686148-6449-6E6F-744E-656564454649, name="bios-boot"
start=$((ESP_START_MIB*2048)), size=$((ESP_MIB*2048)), type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="HWBOOT"
start=$((ROOT_A_START_MIB*2048)), size=$((ROOT_MIB*2048)), type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709, name="hw-root-a"
start=$((ROOT_B_START_MIB*2048)), size=$((ROOT_MIB*2048)), type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709, name="hw-root-b"
start=$((DATA_START_MIB*2048)), size=$((DATA_MIB*2048)), type=0FC63DAF-8483-4772-8E79-3D69D8477DE4, name="hw-data"
EOF
  sfdisk -d "$tmp"
  dd if="$PARTS/esp.img"  of="$tmp" bs=1M seek=$ESP_START_MIB  conv=notrunc,sparse status=none
  dd if="$PARTS/root.img" of="$tmp" bs=1M seek=$ROOT_A_START_MIB conv=notrunc,sparse status=none
  # slot B stays empty (zeros, sparse) until the first update writes it
  dd if="$PARTS/data.img" of="$tmp" bs=1M seek=$DATA_START_MIB conv=notrunc,sparse status=none
  mv "$tmp" "$IMG.part"
}

st_bootloader() {
  # Legacy BIOS: GRUB boot.img in the MBR code area, core.img in the BIOS boot partition (LBA 34),
  # with an embedded config that loads the ESP's /grub/grub.cfg (the A/B choice from grubenv, so
  # an update changes files on the ESP, never core.img). No grub-install needed.
  local g=/usr/lib/grub/i386-pc
  cat > "$PARTS/grub-embed.cfg" <<EOF
set timeout=0
set root=(hd0,gpt2)
configfile (hd0,gpt2)/grub/grub.cfg
EOF
  grub-mkimage -O i386-pc -p '(hd0,gpt2)/grub' -c "$PARTS/grub-embed.cfg" -o "$PARTS/core.img" \
    biosdisk part_gpt fat normal configfile loadenv linux echo test boot
  local n=$(( ($(stat -c %s "$PARTS/core.img") + 511) / 512 ))
  [ "$n" -le 2014 ] || { echo "core.img too big: $n sectors"; return 1; }
  python3 - "$g/boot.img" "$PARTS/core.img" "$IMG.part" <<'PY'
import struct, sys
boot = bytearray(open(sys.argv[1], 'rb').read())
core = bytearray(open(sys.argv[2], 'rb').read())
core += b'\0' * (-len(core) % 512)
n = len(core) // 512
# boot.img: LBA of core.img's first sector (GRUB_BOOT_MACHINE_KERNEL_SECTOR = 0x5c)
struct.pack_into('<Q', boot, 0x5c, 34)
# diskboot.img (first sector of core.img): blocklist for the rest, at 0x200-12: start, length
struct.pack_into('<QH', core, 0x200 - 12, 35, n - 1)
with open(sys.argv[3], 'r+b') as f:
    f.seek(0); f.write(boot[:440])          # keep disk signature and the protective MBR table
    f.seek(34 * 512); f.write(core)
print("core.img", n, "sectors at LBA 34")
PY
  mv "$IMG.part" "$IMG"
}

st_hwup() {   # the update file: this build's slot content (root fs, kernel, initrd), signed
  rm -f "$HWUP"
  if [ ! -f "$MAKE_HWUP" ]; then echo "skipped (scripts/make-hwup.py missing)"; return; fi
  python3 "$MAKE_HWUP" --root "$PARTS/root.img" --kernel "$PARTS/vmlinuz" --initrd "$PARTS/initrd.img" \
    --version "$VERSION" --sequence "$SEQUENCE" --arch amd64 --key "$SIGNING_KEY" -o "$HWUP.tmp"
  mv "$HWUP.tmp" "$HWUP"
  ls -l "$HWUP"
}

st_compress() {
  rm -f "$IMG.zst"
  if [ -n "${HOMEWORK_IMAGE_NOCOMPRESS:-}" ]; then echo "skipped (HOMEWORK_IMAGE_NOCOMPRESS)"; return; fi
  zstd -q -T0 -6 "$IMG" -o "$IMG.zst"
}

st_cache() {
  rm -rf "$WORK/cache"; mkdir -p "$CACHE"
  cp --sparse=always --reflink=auto "$IMG" "$CACHE/disk.img"
  [ -f "$IMG.zst" ] && cp "$IMG.zst" "$CACHE/disk.img.zst" || true
  [ -f "$HWUP" ] && cp "$HWUP" "$CACHE/update.hwup" || true
  # keep only this build's image and update file in out/
  find "$OUT" -maxdepth 1 \( -name 'homework-*-amd64.img*' -o -name 'homework-*-amd64.hwup' \) ! -name "$NAME.img" \
    ! -name "$NAME.img.zst" ! -name "$NAME.hwup" ! -name homework-latest-amd64.img -delete
  rm -rf "$PARTS"
}

stage rootfs     st_rootfs
stage overlay    st_overlay
stage esp        st_esp
stage root-fs    st_rootfs_img
stage data-fs    st_data_img
stage disk       st_disk
stage bootloader st_bootloader
stage hwup       st_hwup
stage compress   st_compress
stage cache      st_cache
ln -sfn "$NAME.img" "$OUT/homework-latest-amd64.img"

say "[image] done in $(( $(date +%s) - T0 ))s: $IMG"
say "[image] raw $(du -h --apparent-size "$IMG" | cut -f1) (allocated $(du -h "$IMG" | cut -f1))$( [ -f "$IMG.zst" ] && echo ", compressed $(du -h "$IMG.zst" | cut -f1) ($IMG.zst)")"
[ -f "$HWUP" ] && say "[image] update file $HWUP ($(du -h "$HWUP" | cut -f1), version $VERSION, sequence $SEQUENCE)"
