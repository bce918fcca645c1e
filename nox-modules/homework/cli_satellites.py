"""`homework satellite-pair`: sign a satellite switch's certificate (pki.py).

    homework satellite-pair DPID --csr REQ.pem [--cert-out CERT.pem] [--ca-out CA.pem]

The satellite makes its own key and certificate request (e.g. `ovs-pki req` or openssl);
only the request comes here. The answer is its certificate, for that datapath id, and the
household CA that the satellite must trust for the router; with --cert-out / --ca-out they
are written to files, else printed (PEM, certificate first).
"""
from __future__ import annotations

from pathlib import Path


def add_parsers(sub) -> None:
    pair = sub.add_parser("satellite-pair", help="sign a satellite switch's certificate request for its datapath id")
    pair.add_argument("dpid", help="the satellite's datapath id (hex), as listed in [satellites] switches")
    pair.add_argument("--csr", required=True, help="its certificate request (PEM file)")
    pair.add_argument("--cert-out", help="write its certificate here")
    pair.add_argument("--ca-out", help="write the household CA certificate here")


def run(args, call, sock: str):
    """(result, printer) for `satellite-pair`; None for any other command."""
    if args.cmd != "satellite-pair":
        return None
    result = call(sock, "satellite-pair", dpid=args.dpid, csr=Path(args.csr).read_text())

    def printer(r: dict) -> None:
        if args.cert_out:
            Path(args.cert_out).write_text(r["certificate"])
        if args.ca_out:
            Path(args.ca_out).write_text(r["ca"])
        if not args.cert_out:
            print(r["certificate"], end="")
        if not args.ca_out:
            print(r["ca"], end="")
    return result, printer
