"""The controller's log formatter gives the standard formatter's text, time included."""
import io
import logging

from homework.logsetup import FORMAT, SecondCachedFormatter, configure


def record(created: float, msg: str = "lease %s") -> logging.LogRecord:
    rec = logging.LogRecord("homework.dhcp", logging.INFO, __file__, 1, msg, ("02:00:00:00:00:01",), None)
    rec.created, rec.msecs = created, (created - int(created)) * 1000
    return rec


def test_the_cached_time_text_is_the_standard_formatters_within_and_across_seconds():
    ours, standard = SecondCachedFormatter(), logging.Formatter(FORMAT)
    for created in (1795600000.001, 1795600000.5, 1795600000.999, 1795600001.0, 1795600001.25, 1795599999.75):
        assert ours.format(record(created)) == standard.format(record(created))


def test_configure_writes_formatted_lines_without_looking_up_threads(monkeypatch):
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    for flag in ("logThreads", "logProcesses", "logMultiprocessing"):
        monkeypatch.setattr(logging, flag, True)
    out = io.StringIO()
    configure(logging.INFO, out)
    logging.getLogger("homework.test").info("new device %s asks to join", "02:00:00:00:00:01")
    line = out.getvalue()
    assert line.endswith(" INFO homework.test: new device 02:00:00:00:00:01 asks to join\n")
    assert not (logging.logThreads or logging.logProcesses or logging.logMultiprocessing)
