"""System updates: signed .hwup files written to the inactive A/B slot.

    hwup.py     read and verify a .hwup (nothing written)
    slots.py    which slot runs, the other slot's device, ESP loader entries, GRUB env, mark-good
    apply.py    write a verified update into the inactive slot, then point the boot loaders at it once
    service.py  the controller's update-start / update-status / reboot commands (API, CLI, board)
    __main__    `python3 -m homework.update mark-good [--wait-ready SECONDS]` (run by the image's unit)

The layout and formats are the image's contract: image/README.md "Disk layout and upgrades".
"""
