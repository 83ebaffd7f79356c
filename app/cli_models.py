"""``modeldesk model import``: an image classifier made elsewhere, as a model of a project."""

from __future__ import annotations

from modeldesk.errors import UserError


def _floats(text: str) -> tuple[float, float, float]:
    values = tuple(float(part) for part in text.replace(" ", "").split(","))
    if len(values) == 1:
        values = values * 3
    if len(values) != 3:
        raise ValueError("give one number or three (red, green, blue), separated by commas")
    return values  # type: ignore[return-value]


def add_commands(command, common) -> None:
    """Add ``model`` with ``command(name, help) -> subparser``; ``common`` has ``--workspace``/``--json``."""
    from modeldesk.deploy.outside_onnx import NORMALISATIONS

    model = command("model", "models made elsewhere: import an ONNX image classifier or YOLO detector")
    actions = model.add_subparsers(dest="model_command", metavar="ACTION", required=True)
    imp = actions.add_parser(
        "import",
        parents=[common],
        help="import an ONNX image classifier (PyTorch, Keras via tf2onnx, another tool) or an "
        "Ultralytics YOLO detector",
        description="Import an ONNX image classifier or YOLO detector; it is evaluated on the project's "
        "labeled photos and then compressed, served and bundled like a model trained here.",
    )
    imp.add_argument("file", metavar="FILE.onnx")
    imp.add_argument(
        "--labels", required=True, metavar="FILE", help="the labels, one a line, in output order"
    )
    imp.add_argument(
        "--project", help="an image classification project (default: a new one named after FILE)"
    )
    imp.add_argument(
        "--task", default="image-classification", choices=["image-classification"], help="what the model does"
    )
    imp.add_argument(
        "--normalisation",
        default="auto",
        choices=["auto", *NORMALISATIONS],
        help="how the model's pixels were scaled in training (auto: the one that answers best on the "
        "project's labeled photos)",
    )
    imp.add_argument("--mean", type=_floats, metavar="R,G,B", help="per-channel mean on 0-255 pixels")
    imp.add_argument("--std", type=_floats, metavar="R,G,B", help="per-channel spread on 0-255 pixels")
    imp.add_argument("--bgr", action="store_true", help="the model reads blue-green-red (OpenCV, Caffe)")
    imp.add_argument("--size", type=int, help="input size for a graph that takes any size (default 224)")


def run_model(ws, args):
    """``modeldesk model import``."""
    if args.task is not None:
        kind = ws.inspect_outside_model(args.file)["kind"]
        if (args.task == "object-detection") != (kind == "detector"):
            raise UserError(f"{args.file}: the graph is a {kind}, not a model for {args.task}")
    result = ws.import_outside_model(
        args.file,
        args.labels,
        project=args.project,
        normalisation=args.normalisation,
        mean=args.mean,
        std=args.std,
        bgr=args.bgr,
        size=args.size,
    )
    lines = [f"imported {args.file} as model {result['model']} in project {result['project']!r}"]
    graph = result["graph"]
    what = f"{graph['classes']} classes" if graph["kind"] == "classifier" else "a YOLO detector"
    lines.append(
        f"  input {graph['size'] or args.size or 224} px {graph['layout']}, {what}; pixels: {result['normalisation']}"
    )
    for row in result["tried"]:
        lines.append(
            f"    {row['normalisation']:<10} right on {row['accuracy']:.0%} of {row['photos']} labeled photos"
        )
    if result["metrics"].get("accuracy") is not None:
        lines.append(
            f"  accuracy on the project's {result['metrics'].get('n', '')} labeled photos: "
            f"{result['metrics']['accuracy']:.1%}"
        )
    lines += [f"  note: {warning}" for warning in result["warnings"]]
    return result, "\n".join(lines)
