#!/usr/bin/env bash
# Offline upgrade of a Homework router disk to a new image, keeping its state partition:
#   sudo bash image/upgrade.sh homework-<new>-amd64.img[.zst] /dev/sdX   (or a disk image file)
# For a disk that is not running (in another machine, or from a live USB stick). A running
# router updates itself with a .hwup instead (Guest Board, API, `homework update`), which is
# safe against power cuts; this path is not: it rewrites the boot code, the ESP and slot A.
#
# Writes the MBR boot code and partitions 1-3 (BIOS boot, ESP, system slot A) from the new image,
# so the disk boots slot A with the new system (the ESP's entries and grubenv are the new
# image's: good_slot=a). Leaves partition 4 (slot B, now unused until the next update) and
# partition 5 (hw-data = /var/lib/homework: approvals, leases, credentials, settings) untouched.
set -euo pipefail
die() { echo "upgrade: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: upgrade.sh NEW.img[.zst] DISK"
new=$1 disk=$2
[ -e "$new" ] || die "$new not found"
[ -e "$disk" ] || die "$disk not found"
tmp=""
trap '[ -n "$tmp" ] && rm -f "$tmp"' EXIT
if [[ $new == *.zst ]]; then
  tmp=$(mktemp --tmpdir homework-upgrade.XXXXXX.img)
  echo "upgrade: decompressing $new"
  zstd -q -d -f "$new" -o "$tmp"
  new=$tmp
fi

parts() {  # parts FILE -> "num start size name" per partition (sectors)
  sfdisk -J "$1" | python3 -c '
import json, sys
t = json.load(sys.stdin)["partitiontable"]
assert t["label"] == "gpt"
for i, p in enumerate(t["partitions"], 1):
    print(i, p["start"], p["size"], p.get("name", "-"))'
}
np=$(parts "$new") || die "$new: no GPT partition table"
op=$(parts "$disk") || die "$disk: no GPT partition table"
want="bios-boot HWBOOT hw-root-a hw-root-b hw-data"
[ "$(echo "$np" | awk '{print $4}' | xargs)" = "$want" ] || die "$new is not a Homework A/B image"
if [ "$(echo "$op" | awk '{print $4}' | xargs)" != "$want" ]; then
  die "$disk does not have the A/B layout ($want). A disk from before A/B updates cannot be converted in place: save a settings backup (Guest Board, \`homework backup\`), flash the whole image, then restore it"
fi
[ "$(echo "$np" | head -4)" = "$(echo "$op" | head -4)" ] || die "partitions 1-4 differ between $new and $disk: reflash the whole disk instead"
if [ -b "$disk" ] && lsblk -n -o MOUNTPOINTS "$disk" 2>/dev/null | grep -q .; then
  die "$disk has mounted partitions: unmount them (upgrade a disk that is not running)"
fi

dd if="$new" of="$disk" bs=440 count=1 conv=notrunc status=none     # MBR boot code only
while read -r num start size name; do
  [ "$num" -le 3 ] || continue
  echo "upgrade: writing partition $num ($name, $((size / 2048)) MiB)"
  dd if="$new" of="$disk" bs=1M iflag=skip_bytes,count_bytes oflag=seek_bytes conv=notrunc,fsync \
    skip=$((start * 512)) seek=$((start * 512)) count=$((size * 512)) status=none
done <<< "$np"
sync
echo "upgrade: done; the disk boots slot A; partitions 4 (slot B) and 5 (hw-data, /var/lib/homework) kept"
