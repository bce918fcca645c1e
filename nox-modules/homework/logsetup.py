"""The controller's log lines, cheaply.

A new device costs two INFO lines ("new device ... asks to join", "lease ... for 30s"), and
in a burst of a hundred devices the logging module was a third of the controller's CPU:
every record looked up the current (green) thread and process, and formatted its time
with localtime + strftime. Our format uses neither thread nor process, so they are not
collected; and the time text is made once per second and reused."""
from __future__ import annotations

import logging
import time

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class SecondCachedFormatter(logging.Formatter):
    """logging.Formatter's default time text ("2026-11-26 14:05:09,123"), with the part up to
    the second computed once per second."""

    def __init__(self, fmt: str = FORMAT):
        super().__init__(fmt)
        self._second: int | None = None
        self._text = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        second = int(record.created)
        if second != self._second:
            self._text = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = second
        return f"{self._text},{int(record.msecs):03d}"


def configure(level: int, stream) -> None:
    logging.logThreads = False          # the format names no thread, process or task:
    logging.logProcesses = False        # records need not look them up (a green thread's
    logging.logMultiprocessing = False  # lookup is the costly one under eventlet)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(SecondCachedFormatter())
    logging.basicConfig(level=level, handlers=[handler])
