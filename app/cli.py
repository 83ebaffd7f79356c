"""The ``modeldesk`` command line: the headless face of the app (DESIGN.md, "Command line").

Every command prints human text by default and one JSON object with ``--json``, and exits
non-zero with a one-line message on error (the traceback goes to the workspace log).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sqlite3
import sys
import time

from modeldesk.app import about, cli_cluster, cli_edge, cli_models, formatting
from modeldesk.app.paths import ENV_WORKSPACE
from modeldesk.app.progress import TerminalProgress
from modeldesk.datasets import EXPORT_FORMATS
from modeldesk.datasets import FORMATS as DATASET_FORMATS

log = logging.getLogger(__name__)

#: what --format takes: the importers' formats ("flat" and "zip" are found, never named)
IMPORT_FORMATS = ("auto", *(f for f in DATASET_FORMATS if f not in ("flat", "zip")))


class CommandError(Exception):
    """An error whose message is already the one line the user should read."""


def describe_error(exc: BaseException) -> str | None:
    """The one line for a mistake the user can fix (a job's recorded reason included), else None."""
    from modeldesk.errors import disk_full_message, user_message

    if isinstance(exc, (CommandError, RuntimeError)):  # RuntimeError: a job's recorded failure
        return str(exc)
    if isinstance(exc, (ValueError, KeyError, OSError)):
        return user_message(exc)
    return disk_full_message(exc)  # SQLite's "database or disk is full"


def task_names() -> list[str]:
    """The tasks the trainers' registry knows (the only list of tasks there is)."""
    from modeldesk.trainers.tasks import list_tasks

    return [task.name for task in list_tasks()]


def _common_options(*, top: bool) -> argparse.ArgumentParser:
    """``--workspace`` and ``--json``, accepted before or after the command. Below the top level they
    default to "not given" (SUPPRESS), so a subcommand never overwrites what was given before it."""
    common = argparse.ArgumentParser(add_help=False)
    workspace_default = None if top else argparse.SUPPRESS
    common.add_argument(
        "--workspace",
        metavar="DIR",
        default=workspace_default,
        help=f"workspace folder (default: ${ENV_WORKSPACE} or your user data folder)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="print one JSON object",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    top, common = _common_options(top=True), _common_options(top=False)

    parser = argparse.ArgumentParser(
        prog="modeldesk",
        parents=[top],
        description="Build models from your own data, on your own machine. "
        "With no command, opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=about.version_line())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name, help_text):
        return sub.add_parser(name, parents=[common], help=help_text, description=help_text)

    command("demo", "the whole flow in a terminal on data it makes")

    project = command("project", "create or list projects")
    project_sub = project.add_subparsers(dest="project_command", metavar="ACTION", required=True)
    create = project_sub.add_parser("create", parents=[common], help="create a project")
    create.add_argument("name")
    create.add_argument(
        "--task",
        required=True,
        choices=task_names(),
        help="what the model will do (see `modeldesk templates` for what trains)",
    )
    create.add_argument("--target", metavar="COLUMN", help="tables: the column to predict")
    project_sub.add_parser("list", parents=[common], help="list projects")

    imp = command("import", "add files, folders or zip archives to a project")
    imp.add_argument("name")
    imp.add_argument("path")
    imp.add_argument("--format", default="auto", choices=IMPORT_FORMATS)
    imp.add_argument("--text-column", help="CSV column holding the text (default: text)")
    imp.add_argument("--label-column", help="CSV column holding the label (default: label)")

    stats = command("stats", "samples, labels, boxes and splits of a project")
    stats.add_argument("name")

    export_data = command("export-data", "write a project's dataset in a standard format")
    export_data.add_argument("name")
    export_data.add_argument("out")
    export_data.add_argument("--format", required=True, choices=EXPORT_FORMATS)

    train = command("train", "plan, train and evaluate a model")
    train.add_argument("name")
    train.add_argument("--template", required=True)
    train.add_argument("--time-budget", type=float, metavar="SECONDS")
    train.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="a Dask scheduler (tcp://host:8786) whose workers help; off: this computer only "
        "(default: the workspace setting, see `modeldesk cluster`)",
    )
    train.add_argument("--credentials", metavar="FILE", help="TLS credentials file for a tls:// cluster")
    train.add_argument("--device", help="auto, cpu, cuda, cuda:1, ... (default: the workspace setting, auto)")
    train.add_argument(
        "--target", metavar="COLUMN", help="tables: the column to predict (the project remembers it)"
    )

    command("templates", "list training templates")

    evaluate = command("evaluate", "evaluate a model on labeled data outside the project")
    evaluate.add_argument("model")
    evaluate.add_argument("path")
    evaluate.add_argument("--format", default="auto", choices=IMPORT_FORMATS)

    predict = command(
        "predict", "predict files with a model (a text model: texts, or .txt files with one text per line)"
    )
    predict.add_argument("model")
    predict.add_argument("files", nargs="*", metavar="FILE")
    predict.add_argument(
        "--text",
        action="append",
        default=[],
        metavar="TEXT",
        help="a text to classify (text models; repeat for several)",
    )

    export = command("export", "export a model as ONNX, compressed, or as a deploy or edge bundle")
    export.add_argument("model")
    export.add_argument(
        "out", nargs="+", metavar="OUT", help="the output (with --edge: more models, then OUT)"
    )
    export.add_argument("--compress", action="store_true")
    export.add_argument("--bundle", action="store_true")
    export.add_argument(
        "--edge",
        action="store_true",
        help="a folder that runs the edge server with these models (no ModelDesk)",
    )

    serve = command("serve", "serve a model locally with a browser console")
    serve.add_argument("model")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1; others need --token)")
    serve.add_argument("--port", type=int, help="port (default 8000)")
    serve.add_argument(
        "--token",
        help="require 'Authorization: Bearer TOKEN' (16+ characters); visible to other local users in "
        "the process list: prefer --token-file or the MODELDESK_TOKEN environment variable",
    )
    serve.add_argument(
        "--token-file", metavar="FILE", help="read the token from the first line of FILE (mode 600)"
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="let web pages from ORIGIN (e.g. http://localhost:3000) call the API; repeatable",
    )

    devices = command("devices", "CPUs, memory, GPUs and execution providers (and a cluster's workers)")
    devices.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="also list this Dask cluster's workers (default: the workspace setting)",
    )
    devices.add_argument("--credentials", metavar="FILE", help="TLS credentials file for a tls:// cluster")

    command("recover", "set a damaged workspace database aside, restore its backup and bring back media")

    cli_cluster.add_commands(command, common)
    cli_models.add_commands(command, common)
    cli_edge.add_commands(command, common)
    return parser


def main(argv=None, *, open_window=None) -> int:
    """Run one command; with none, ``open_window(workspace)`` opens the desktop app."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        if open_window is None:
            parser.print_help()
            return 2
        return open_window(args.workspace)
    try:
        result, text = dispatch(args)
    except KeyboardInterrupt:
        print("modeldesk: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        message = describe_error(exc)
        if message is None:  # a bug: one line for the user, the traceback in the log
            log.exception("command %s failed unexpectedly", args.command)
            print(
                f"modeldesk {args.command}: something went wrong ({type(exc).__name__}); the details are in "
                "the workspace log file (logs/modeldesk.log)",
                file=sys.stderr,
            )
        else:
            log.exception("command %s failed", args.command)
            print(f"modeldesk {args.command}: error: {message}", file=sys.stderr)
        return 1
    try:
        if args.json:
            print(json.dumps(result, ensure_ascii=False, default=str))
        elif text:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `modeldesk ... | head`: the reader left, which is not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout at exit
    return 0


def open_workspace(args):
    from modeldesk.app.workspace import Workspace

    # a command waits for the jobs it starts: killed, it must not leave them to finish unasked
    return Workspace(args.workspace, tie_jobs=True)


def dispatch(args):
    """Run one command; return (JSON-able result, human text)."""
    if args.command == "demo":
        from modeldesk.app.demo import run_demo

        result = run_demo(args.workspace, quiet=args.json)
        return result, formatting.demo_summary(result)
    if args.command == "recover":
        from modeldesk.app.paths import default_workspace
        from modeldesk.app.recovery import recover_text, recover_workspace

        result = recover_workspace(args.workspace or default_workspace())
        return result, recover_text(result)
    if args.command == "worker":
        return cli_cluster.run_worker(args)
    ws = open_workspace(args)
    for warning in getattr(ws, "warnings", ()):
        print(f"modeldesk: warning: {warning}", file=sys.stderr)
    try:
        return _dispatch_workspace(ws, args)
    except sqlite3.DatabaseError as exc:  # damage found while working: the same recovery steps
        from modeldesk.datasets.dbfile import damaged, is_corrupt

        if is_corrupt(exc):
            raise damaged(ws.store.db_path, ws.store.media.root, exc) from exc
        raise
    finally:
        ws.close()


def _progress(args, what: str):
    return None if args.json else TerminalProgress(what)


def _dispatch_workspace(ws, args):
    command = args.command
    if command == "project":
        if args.project_command == "create":
            result = ws.create_project(args.name, args.task, target_column=args.target)
            return result, f"created project {result['name']} ({result['task']}) in {ws.paths.root}"
        projects = ws.list_projects()
        return {"projects": projects}, formatting.project_table(projects)
    if command == "import":
        bar = _progress(args, "importing")
        try:
            result = ws.import_data(
                args.name,
                args.path,
                args.format,
                progress=bar and bar.update_counts,
                text_column=args.text_column,
                label_column=args.label_column,
            )
        finally:
            bar and bar.close()
        return result, formatting.import_summary(result)
    if command == "stats":
        result = ws.stats(args.name)
        return result, formatting.stats_text(args.name, result)
    if command == "export-data":
        result = ws.export_data(args.name, args.out, args.format)
        return result, formatting.export_data_text(result)
    if command == "templates":
        templates = ws.templates()
        return {"templates": templates}, formatting.templates_text(templates)
    if command == "train":
        return _train(ws, args)
    if command == "evaluate":
        result = ws.evaluate(args.model, args.path, args.format)
        return result, formatting.metrics_text(result)
    if command == "predict":
        if not args.files and not args.text:
            raise CommandError("give files to predict, or --text TEXT for a text model")
        predictions = []
        if args.text:
            predictions += ws.predict_texts(args.model, args.text)
        if args.files:
            predictions += ws.predict(args.model, args.files)
        return {"predictions": predictions}, formatting.predictions_text(predictions)
    if command == "export":
        *more, args.out = args.out
        if args.edge:
            from modeldesk.app.edge_export import export_edge

            result = export_edge(ws, [args.model, *more], args.out)
            return result, formatting.export_text(result)
        if more:
            raise CommandError("export takes one model and OUT (several models only with --edge)")
        bar = _progress(args, "exporting")

        def on_progress(done, total=0, message="", eta_s=None):
            bar.update_fraction(done / total if total else 0.0, str(message or ""), eta_s)

        try:
            result = ws.export_model(
                args.model,
                args.out,
                compress=args.compress,
                bundle=args.bundle,
                progress=on_progress if bar else None,
            )
        finally:
            bar and bar.close()
        return result, formatting.export_text(result)
    if command == "serve":
        return _serve(ws, args)
    if command == "devices":
        return cli_cluster.run_devices(ws, args)
    if command == "cluster":
        return cli_cluster.run_cluster(ws, args)
    if command == "model":
        return cli_models.run_model(ws, args)
    if command == "edge":
        return cli_edge.run_edge(ws, args)
    raise CommandError(f"unknown command {command}")


def _train(ws, args):
    device = args.device or ws.settings.device
    if args.target:
        ws.set_table_target(args.name, args.target)
    ws.check_training(args.name, args.template)  # refuse before a plan is printed
    estimate = ws.estimate_training(
        args.name, args.template, device=device, cluster=args.cluster, credentials=args.credentials
    )
    if not args.json:
        print(formatting.plan_text(estimate), file=sys.stderr)
    bar = _progress(args, "training")

    def on_event(event):
        if bar:
            bar.update_fraction(event.get("fraction") or 0.0, event.get("stage"), event.get("eta_s"))

    started = time.monotonic()
    try:
        result = ws.train(
            args.name,
            args.template,
            time_budget=args.time_budget,
            device=device,
            progress=on_event,
            cluster=args.cluster,
            credentials=args.credentials,
        )
    finally:
        bar and bar.close()
    result.setdefault("plan", {})
    if isinstance(result["plan"], dict):
        result["plan"].setdefault("eta_s", estimate.get("eta_s"))
        result["plan"]["actual_s"] = round(time.monotonic() - started, 2)  # as waited: worker start included
    return result, formatting.train_text(result)


def _serve(ws, args):
    from modeldesk.deploy.server import check_bind, resolve_token
    from modeldesk.deploy.service import serve

    host = args.host or ws.settings.service_host
    port = args.port if args.port is not None else ws.settings.service_port
    token = resolve_token(args.token, args.token_file)
    check_bind(host, port, token)
    path = ws.serving_path(args.model)  # a kept compressed copy when one is in use
    ws.close()
    shown = f"[{host}]" if ":" in host else host
    serve(
        path,
        host=host,
        port=port,
        token=token,
        allowed_origins=args.allow_origin or (),
        on_ready=lambda: print(f"serving {path} at http://{shown}:{port}/ (Ctrl+C stops)", file=sys.stderr),
    )
    return {"stopped": True}, "service stopped"


if __name__ == "__main__":
    sys.exit(main())
