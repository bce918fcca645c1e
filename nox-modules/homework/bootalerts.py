"""Alerts from the router's own start-up (the image's boot scripts run before the
controller, or while it is down): each leaves a JSON file {kind, detail, at} in
`<control socket's directory>/alerts` (/run/homework/alerts on the image:
image/guest/homework-esp-check, python3 -m homework.update mark-good). The controller
publishes each one once as an `alert` about no device, which the Guest Board's
notifications show, and renames it `*.told`. Looked for every CHECK_SECONDS while the
controller runs, as such a file may come at any time (mark-good waits for it to be ready)."""
from __future__ import annotations

import json
import logging
from pathlib import Path

from .events import Alert, AlertKind

log = logging.getLogger(__name__)
CHECK_SECONDS = 5.0
MAX_DETAIL = 500


def alert_dir(config) -> Path:
    return Path(config.control_socket).parent / "alerts"


def publish_new(directory: Path, bus) -> int:
    """Publish the alert files not told yet; returns how many."""
    try:
        files = sorted(p for p in directory.glob("*.json") if p.is_file())
    except OSError:
        return 0
    told = 0
    for path in files:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            detail = str(doc["detail"])[:MAX_DETAIL]
            kind = AlertKind(doc.get("kind", AlertKind.ROUTER_BOOT))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("boot alert %s unreadable (%s): told as it is", path.name, exc)
            detail, kind = f"The router's start-up left a message it could not read ({path.name}).", \
                AlertKind.ROUTER_BOOT
        try:
            path.replace(path.with_name(path.name + ".told"))
        except OSError as exc:
            log.error("boot alert %s cannot be marked told (%s): not published, or it would repeat", path, exc)
            continue
        log.warning("the router's start-up: %s", detail)
        bus.publish(Alert(mac="", kind=kind, detail=detail, data={"file": path.name}))
        told += 1
    return told


def register(core) -> None:
    directory = alert_dir(core.config)
    core.every(CHECK_SECONDS, lambda: publish_new(directory, core.bus))
