"""Run the edge server with this bundle's models on http://127.0.0.1:8765 (console at /).

Usage: python run_edge.py [--host HOST] [--port PORT] [--token TOKEN] [--data FOLDER]
Binding an address other than 127.0.0.1 needs a token (or MODELDESK_TOKEN in the environment).
The models under models/ are added on the first start; the server keeps them (and its pipelines,
rules and events) in the data folder, so a restart comes back as it was.
"""

import argparse
import json
import logging
import os
import sys
import threading
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from modeldesk_server.edge.server import DEFAULT_PORT, serve_edge  # noqa: E402 (after the sys.path line)

log = logging.getLogger("run_edge")


def _call(base, token, method, path, body=None):
    request = urllib.request.Request(
        base + path, data=None if body is None else json.dumps(body).encode(), method=method
    )
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read() or b"{}")


def add_bundled_models(base, token, timeout=60.0):
    """Once the server answers, add each model under models/ that it does not have yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _call(base, token, "GET", "healthz")
            break
        except OSError:
            if time.monotonic() > deadline:
                log.error("the server did not answer within %.0f s; the models were not added", timeout)
                return
            time.sleep(0.2)
    known = {m["name"] for m in _call(base, token, "GET", "v1/edge/models").get("models", [])}
    for folder in sorted((HERE / "models").iterdir()):
        if folder.is_dir() and folder.name not in known:
            try:
                answer = _call(
                    base, token, "POST", "v1/edge/models", {"source": str(folder), "name": folder.name}
                )
                log.info("added model %s (version %s)", answer.get("name"), answer.get("version"))
            except OSError as exc:
                log.error("model %s was not added: %s", folder.name, exc)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Run the edge server with the bundled models.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--token", default=None, help="require 'Authorization: Bearer TOKEN'")
    parser.add_argument(
        "--data", default=str(HERE / "edge-data"), help="where models, rules and events are kept"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    token = args.token if args.token is not None else (os.environ.get("MODELDESK_TOKEN") or None)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    local = "127.0.0.1" if args.host in ("0.0.0.0", "::") else shown
    base = f"http://{local}:{args.port}/"
    threading.Thread(target=add_bundled_models, args=(base, token), daemon=True).start()
    try:
        serve_edge(Path(args.data), host=args.host, port=args.port, token=token)
    except ValueError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
