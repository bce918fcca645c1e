"""ispedge run --config FILE | ispedge ca --config FILE | ispedge issue --config FILE --household NAME --csr FILE"""
from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

from . import config as config_mod
from .api import EdgeServer
from .edge import Edge
from .pki import EdgeCA, PkiError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="ispedge", description="An ISP edge: households place their flows "
                                 "in their own three queues.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, text in (("run", "set up the bridge and serve the households' control interface"),
                       ("ca", "make the CA and the edge's certificate if missing; print the CA certificate"),
                       ("issue", "sign a household router's certificate request")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--config", required=True, type=Path)
        if name == "issue":
            p.add_argument("--household", required=True)
            p.add_argument("--csr", required=True, type=Path, help="the router's request (PEM); - for stdin")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        cfg = config_mod.load(args.config)
    except (OSError, config_mod.ConfigError) as exc:
        print(f"ispedge: {exc}", file=sys.stderr)
        return 2
    ca = EdgeCA(cfg.pki_dir).ensure()
    if args.cmd == "ca":
        sys.stdout.write(ca.ca_cert_path.read_text())
        return 0
    if args.cmd == "issue":
        if cfg.household(args.household) is None:
            print(f"ispedge: no household {args.household!r} in {args.config}", file=sys.stderr)
            return 2
        csr = sys.stdin.read() if str(args.csr) == "-" else args.csr.read_text()
        try:
            sys.stdout.write(ca.sign_household(csr, args.household))
        except PkiError as exc:
            print(f"ispedge: {exc}", file=sys.stderr)
            return 2
        return 0
    edge = Edge(cfg).start()
    server = EdgeServer(edge, ca.server_context(), cfg.listen_host, cfg.listen_port)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(SystemExit(0)))
    logging.getLogger("ispedge").info("edge %s up: %d households, epoch %s, listening on %s:%d",
                                      cfg.bridge, len(cfg.households), edge.epoch, cfg.listen_host, cfg.listen_port)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
