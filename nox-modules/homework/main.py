"""`homework-controller --config FILE`: one process, the configured components, os-ken
listening for the bridge on 127.0.0.1:6653 (OpenFlow 1.3)."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from .config import ConfigError, load
from .migrations import StateVersionError


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="homework-controller", description=__doc__)
    parser.add_argument("--config", required=True, help="TOML configuration file")
    parser.add_argument("--log-level", default=os.environ.get("HOMEWORK_LOG_LEVEL", "INFO"))
    parser.add_argument("--check", action="store_true", help="validate the configuration and exit")
    args = parser.parse_args(argv)

    try:
        config = load(args.config)
    except ConfigError as exc:
        print(f"homework-controller: {exc}", file=sys.stderr)
        sys.exit(2)
    if args.check:
        print("configuration ok")
        return

    # eventlet must patch the standard library before anything else creates sockets/threads.
    from os_ken.lib import hub
    # NB: eventlet.monkey_patch(thread=True) patches *only* threads (any True argument
    # turns the others off), leaving socket/select blocking: the control socket's accept()
    # then froze the hub and the OpenFlow listener never started. Patch everything.
    import eventlet
    eventlet.monkey_patch()
    hub.patch(thread=True)  # os-ken's current_thread fix-up on top

    from . import logsetup
    logsetup.configure(getattr(logging, args.log_level.upper(), logging.INFO), sys.stderr)
    for noisy in ("os_ken.controller.controller", "os_ken.base.app_manager", "os_ken.lib.hub"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    log = logging.getLogger("homework")

    from os_ken import cfg
    from os_ken.base.app_manager import AppManager
    from os_ken.controller import controller as _registers_ofp_options  # noqa: F401

    from . import control, gcwatch
    from .adapter import osken_app, router_ports
    from .core import Core
    from .events import Restart
    from .restart import REQUESTED_ENV, Estimate, InPlace, process_age

    def spawn_periodic(seconds, fn):
        def loop():
            while True:
                hub.sleep(seconds)
                fn()
        hub.spawn(loop)

    # Restore and factory reset restart the controller in place (restart.py); a real switch
    # and bridge (the DHCP fast path may read the bridge's LOCAL interface); a satellite's
    # port goes back to the router's bridge between two processes (adapter/router_ports.py).
    def stop_for_restart() -> None:
        core.stop()
        control_server.close()
    # The board says so and when it expects the controller back (a `restart` event, the
    # answers' back_in).
    estimate = Estimate(config.state_dir)
    restart = InPlace(stop_for_restart, hub.spawn_after, estimate=estimate,
                      announce=lambda why, back_in: core.bus.publish(Restart(why=why, back_in=back_in)))
    try:
        core = Core(config, spawn_periodic=spawn_periodic, restart=restart, switch_is_real=True,
                    give_back_port=router_ports.give_back)
    except StateVersionError as exc:
        print(f"homework-controller: {exc}", file=sys.stderr)
        sys.exit(2)
    osken_app.CORE = core
    core.load_components()
    control_server = control.ControlServer(core, config.control_socket)
    hub.spawn(control_server.serve_forever)

    cfg.CONF(args=["--ofp-listen-host", config.of_listen, "--ofp-tcp-listen-port", str(config.of_port)],
             project="os_ken", default_config_files=[])
    manager = AppManager.get_instance()
    manager.load_apps(["homework.adapter.osken_app"])
    services = list(manager.instantiate_apps(**manager.create_contexts()))
    # Everything made so far lives as long as the process: later full collections skip it.
    frozen = gcwatch.freeze_startup()
    core.ctx.count("controller.gc_frozen_objects", frozen)
    gcwatch.FullCollections(core.ctx.count).install()
    log.info("controller listening on %s:%d (OpenFlow 1.3); control socket %s",
             config.of_listen, config.of_port, config.control_socket)
    estimate.started_in = process_age()
    took = estimate.back(os.environ.pop(REQUESTED_ENV, None))
    if took is not None:
        log.info("back %.1f s after the restart in place was asked for", took)

    def stop_and_exit():
        try:
            core.stop()
            control_server.close()
        finally:
            logging.shutdown()
            os._exit(0)

    stopping: list[int] = []

    def shutdown(signum, frame):
        # Under eventlet an exception raised here lands in the hub, not in joinall, so
        # stop explicitly. The handler may run in the hub itself, which must not block
        # (components join threads and close sockets when they stop): the stopping runs
        # in a green thread of its own. A second signal exits at once. Every state write
        # is already committed, so exiting is safe.
        log.info("signal %d: stopping", signum)
        if stopping:
            os._exit(0)
        stopping.append(signum)
        hub.spawn(stop_and_exit)
    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    try:
        hub.joinall(services)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        core.stop()
        control_server.close()
        manager.close()
