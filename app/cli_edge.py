"""The edge server's commands: ``modeldesk edge serve|add|watch|events|status``."""

from __future__ import annotations

import os
import sys

from modeldesk.app import edge


def add_commands(command, common) -> None:
    """Add ``edge`` with ``command(name, help) -> subparser``; ``common`` has ``--workspace`` and ``--json``."""
    group = command("edge", "run models on cameras, streams, video files and folders, with rules and events")
    actions = group.add_subparsers(dest="edge_command", metavar="ACTION", required=True)

    def client_options(parser):
        parser.add_argument(
            "--url", help="the edge server (default: this workspace's, or http://127.0.0.1:8765)"
        )
        parser.add_argument("--token", help="the server's token (default: MODELDESK_TOKEN)")

    serve = actions.add_parser("serve", parents=[common], help="run the edge server and its console")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need --token)"
    )
    serve.add_argument(
        "--port", type=int, default=edge.DEFAULT_PORT, help=f"port (default {edge.DEFAULT_PORT})"
    )
    serve.add_argument("--token", help="require 'Authorization: Bearer TOKEN' for changes (16+ characters)")
    serve.add_argument(
        "--allow-origin", action="append", metavar="ORIGIN", help="let web pages from ORIGIN call the API"
    )
    add = actions.add_parser(
        "add", parents=[common], help="add a model (id, exported folder or bundle) as a new version"
    )
    add.add_argument("model", metavar="MODEL")
    add.add_argument(
        "--name", required=True, help="the name it answers to; adding again makes version 2, 3..."
    )
    client_options(add)
    watch = actions.add_parser(
        "watch", parents=[common], help="start a pipeline: a source, a model and a rule"
    )
    watch.add_argument("name", metavar="NAME", help="the model's name on the edge server")
    watch.add_argument(
        "--source", required=True, help="a video file, a folder, camera:0, or an rtsp:// or http:// URL"
    )
    watch.add_argument("--when", help="fire an event when LABEL>=SCORE, e.g. 'person>=0.8'")
    watch.add_argument(
        "--hold", type=int, default=1, metavar="N", help="the condition must hold N frames in a row"
    )
    watch.add_argument("--cooldown", type=float, default=10.0, metavar="S", help="seconds between two events")
    watch.add_argument("--fps", type=float, default=5.0, help="frames analysed per second at most (0: all)")
    client_options(watch)
    events = actions.add_parser("events", parents=[common], help="the latest events, newest first")
    events.add_argument("--limit", type=int, default=50)
    events.add_argument("--pipeline", help="only this pipeline's events")
    client_options(events)
    status = actions.add_parser(
        "status", parents=[common], help="models, versions and pipelines of the edge server"
    )
    client_options(status)


def _client(ws, args) -> edge.EdgeClient:
    return edge.EdgeClient(
        args.url or edge.default_url(ws.paths.root), args.token or os.environ.get("MODELDESK_TOKEN") or None
    )


def run_edge(ws, args):
    """Run one ``edge`` action; (JSON result, text)."""
    action = args.edge_command
    if action == "serve":
        return _serve(ws, args)
    client = _client(ws, args)
    if action == "add":
        result = client.call("POST", "/v1/edge/models", {"source": args.model, "name": args.name})
        return result, f"{result['name']} version {result['version']}"
    if action == "watch":
        from modeldesk.deploy.edge.rules import parse_when

        rules = []
        if args.when:
            rules.append(
                {"when": parse_when(args.when), "hold_frames": args.hold, "cooldown_s": args.cooldown}
            )
        body = {"source": args.source, "model": args.name, "fps": args.fps, "rules": rules, "start": True}
        result = client.call("POST", "/v1/edge/pipelines", body)
        return (
            result,
            f"pipeline {result['id']} ({result['name']}): {result['state']}; console at {client.url}/",
        )
    if action == "events":
        result = client.call("GET", "/v1/edge/events", query={"limit": args.limit, "pipeline": args.pipeline})
        lines = [
            f"{e['time']}  {e['label']} {float(e['score'] or 0):.2f}  {e['model']} v{e['version']}  {e['source']}"
            for e in result["events"]
        ]
        return result, "\n".join(lines) or "no events yet"
    result = client.call("GET", "/v1/edge/status")
    lines = [f"edge server {client.url} (since {result['started']}), {result['events_total']} events"]
    for model in result["models"]:
        lines.append(
            f"  model {model['name']}: version {model['live_version']} live of {len(model['versions'])}"
        )
    for pipeline in result["pipelines"]:
        lines.append(
            f"  pipeline {pipeline['id']} {pipeline['name']}: {pipeline['state']}, {pipeline['fps']} fps, "
            f"{pipeline['frames']} frames, {pipeline['dropped']} dropped"
        )
    return result, "\n".join(lines)


def _serve(ws, args):
    from modeldesk.deploy.edge import serve_edge
    from modeldesk.deploy.server import check_bind

    token = args.token or os.environ.get("MODELDESK_TOKEN") or None
    check_bind(args.host, args.port, token)
    root = ws.paths.root
    ws.close()
    shown = f"[{args.host}]" if ":" in args.host else args.host

    def ready():
        edge.write_address(root, args.host, args.port)
        print(f"edge server at http://{shown}:{args.port}/ (Ctrl+C stops)", file=sys.stderr)

    serve_edge(
        edge.edge_folder(root),
        host=args.host,
        port=args.port,
        token=token,
        resolve=edge.workspace_resolver(root),
        workspace_models=edge.workspace_lister(root),
        allowed_origins=args.allow_origin or (),
        on_ready=ready,
    )
    return {"stopped": True}, "edge server stopped"
