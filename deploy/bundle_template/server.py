"""Serve this bundle's model on http://127.0.0.1:8000 (console at /, API at /v1/predict).

Usage: python server.py [--host HOST] [--port PORT] [--token-file FILE] [--threads N]
Binding an address other than 127.0.0.1 needs a token: --token-file FILE (the token on its first line,
the file readable by you only), or MODELDESK_TOKEN in the environment. --token TOKEN works too, but
every user of the machine can read it in the process list.
"""

import argparse
import logging
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from modeldesk_server.server import resolve_token  # noqa: E402  (after the path setup above)
from modeldesk_server.service import serve  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Serve the bundled model.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--token", default=None, help="require 'Authorization: Bearer TOKEN' (prefer --token-file)"
    )
    parser.add_argument("--token-file", default=None, help="read the token from FILE's first line")
    parser.add_argument("--threads", type=int, default=None, help="inference threads (default: all cores)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, ...")
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let web pages from ORIGIN call the API (CORS); repeatable",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        serve(
            HERE / "model",
            host=args.host,
            port=args.port,
            token=resolve_token(args.token, args.token_file),
            threads=args.threads,
            allowed_origins=args.allow_origin,
            device=args.device,
        )
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
