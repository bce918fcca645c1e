"""The hardware report: what the box has (ports, Wi-Fi cards, network chips without a driver
or firmware), what each port is for, and a plain sentence for whatever cannot work.

    collect.py   facts from sysfs, `ethtool`, `iw list`, `dmesg`, pci.ids/usb.ids
    parse.py     one parser per tool's output
    report.py    the report (roles, problems) and its console lines
    cache.py     the controller's copy, gathered in a thread (GET /ws.v1/system's "hardware")
    __main__.py  `python3 -m homework.hardware`: the report at boot (console, ttyS1) or as JSON
"""
