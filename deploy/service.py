"""The local inference service (Starlette + uvicorn) and its browser console.

This module imports only its siblings (``artifact``, ``guards``, ``inputs`` and the input and output
modules it names, ``openapi``, ``predictor``, ``preprocess``, ``runtime``, ``server``; numpy, Pillow,
onnxruntime, starlette, uvicorn): the deploy bundle copies these files verbatim, so the bundle serves
through exactly this code. What a request may carry follows the model's input kind
(``inputs.ModelInput``), never a task name.

Endpoints: ``POST /v1/predict`` (multipart files, JSON, or a raw body of the input's type), ``GET /v1/model``,
``GET /healthz``, ``GET /readyz``, ``GET /openapi.json``, ``GET /docs`` and the console at ``GET /``.
Configuration comes from arguments, else the environment (``MODELDESK_TOKEN``,
``MODELDESK_MAX_REQUEST_BYTES``, ``MODELDESK_MAX_PIXELS``, ``MODELDESK_MAX_DECODE_BYTES``,
``MODELDESK_THREADS``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import logging
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from .artifact import ArtifactError, ModelArtifact, load_artifact
from .batching import MicroBatcher
from .guards import LOCAL_NAMES, DecodeBudget, GuardError, RequestGuard, error_response
from .inputs import InputError, ModelInput, input_for
from .openapi import docs_page, openapi_document
from .predictor import Predictor
from .preprocess import ImageDecodeError
from .server import check_bind, port_is_free, server_config

try:
    from modeldesk.safejson import JSONLimitError
    from modeldesk.safejson import loads as safe_loads
except ImportError:  # inside a deploy bundle, which ships safejson beside this module
    from .safejson import JSONLimitError  # type: ignore[no-redef]  # the same module, copied
    from .safejson import loads as safe_loads  # type: ignore[no-redef]

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
DEFAULT_MAX_REQUEST_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_PIXELS = 40_000_000
DEFAULT_MAX_DECODE_BYTES = 512 * 1024 * 1024
DEFAULT_MAX_IMAGES = 32
INFERENCE_THREADS = 8  # requests decoded and run at once (Starlette's default pool has 40 threads)
BIG_DECODE_BYTES = 64 * 1024 * 1024
LOCAL_HOSTS = LOCAL_NAMES


class ServiceError(Exception):
    """An error caused by the request; becomes a 4xx JSON response ``{"error": message}``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


class StrictJSONResponse(JSONResponse):
    """JSON that is always valid: a NaN or an infinity is a bug, never sent as ``NaN``."""

    def render(self, content) -> bytes:
        return json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def _env_int(name: str, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def _give_memory_back() -> None:
    """Return freed heap pages to the system after a large decode (glibc keeps them otherwise)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _held_bytes(prepared) -> int:
    """Bytes the decoded items of a request hold (arrays, their (array, size) pairs, strings)."""
    total = 0
    for item in prepared:
        for part in item if isinstance(item, tuple) else (item,):
            total += getattr(part, "nbytes", 0) or (4 * len(part) if isinstance(part, str) else 0)
    return total


async def _read_inputs(request: Request, model_input: ModelInput, max_items: int) -> list[tuple[str, object]]:
    """The (name, source) items of a predict request, whatever its content type.

    Multipart files and raw bodies are taken as bytes when the model's input accepts uploads; a
    JSON body carries one item or a list under the input's ``json_fields`` (base64 for media).
    """
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    single, plural = model_input.json_fields
    noun = model_input.noun
    uploads = model_input.upload_types
    items: list[tuple[str, object]]
    if ctype == "multipart/form-data" and uploads:
        try:
            form = await request.form(max_files=max_items, max_fields=max_items)
        except ServiceError:
            raise
        except Exception as exc:  # the multipart parser raises several types for malformed bodies
            raise ServiceError(f"malformed multipart body ({getattr(exc, 'detail', exc)})", 400) from None
        try:
            items = []
            for key, value in form.multi_items():
                if isinstance(value, UploadFile):
                    items.append((value.filename or key, await value.read()))
                elif key in (single, plural, "file", "files"):
                    raise ServiceError(f"form field {key!r} must be a file upload", 422)
        finally:
            await form.close()
    elif ctype == "application/json":
        body = await request.body()
        try:
            payload = safe_loads(body)
        except JSONLimitError as exc:
            raise ServiceError(f"the JSON body cannot be read: {exc}", 400) from None
        if not isinstance(payload, dict) or (single not in payload) == (plural not in payload):
            raise ServiceError(f'JSON body must be an object with "{single}" or "{plural}" (a list)', 422)
        try:
            if single in payload:
                items = [(single, model_input.from_json_value(payload[single], f'"{single}"'))]
            else:
                if not isinstance(payload[plural], list):
                    raise ServiceError(f'"{plural}" must be a list', 422)
                if len(payload[plural]) > max_items:
                    raise ServiceError(f"at most {max_items} {noun}s per request", 413)
                items = [
                    (f"{plural}[{i}]", model_input.from_json_value(v, f'"{plural}[{i}]"'))
                    for i, v in enumerate(payload[plural])
                ]
        except InputError as exc:
            raise ServiceError(str(exc), 422) from None
    elif uploads and (ctype.startswith(uploads) or ctype == "application/octet-stream"):
        items = [(noun, await request.body())]
    else:
        accepted = ", ".join(
            ["multipart/form-data"] * bool(uploads)
            + ["application/json"]
            + [f"{t}*" if t.endswith("/") else t for t in uploads]
        )
        raise ServiceError(f"unsupported content type {ctype or '(none)'!r}: send {accepted}", 415)
    if not items:
        raise ServiceError(f"no {noun} in the request", 422)
    if len(items) > max_items:
        raise ServiceError(f"at most {max_items} {noun}s per request", 413)
    empty = [name for name, data in items if isinstance(data, (bytes, bytearray)) and not data]
    if empty:
        raise ServiceError(f"{empty[0]}: empty file", 422)
    return items


def body_bytes(headers, max_request_bytes: int) -> int:
    """Bytes reading and parsing a request body holds at most: the body twice (its chunks, then
    joined) and, for JSON, what parsing makes of it (a string takes up to 4 bytes a character)."""
    length = headers.get("content-length", "")
    size = int(length) if length.isdigit() else max_request_bytes
    size = min(size, max_request_bytes)
    json_body = headers.get("content-type", "").split(";")[0].strip().lower() == "application/json"
    return size * (6 if json_body else 2)


def _console_page() -> str:
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    css = "\n".join((STATIC / name).read_text(encoding="utf-8") for name in ("base.css", "console.css"))
    js = (STATIC / "console.js").read_text(encoding="utf-8")
    live = (STATIC / "live.js").read_text(encoding="utf-8")  # the webcam / microphone live mode
    rows = (STATIC / "rows.js").read_text(encoding="utf-8")  # table models: the form and CSV upload
    page = page.replace("/*{{CSS}}*/", css).replace("/*{{JS}}*/", js).replace("/*{{LIVE_JS}}*/", live)
    return page.replace("/*{{ROWS_JS}}*/", rows)


def load_checked(
    artifact, *, device: str = "auto", threads: int | None = None, max_pixels: int = DEFAULT_MAX_PIXELS
) -> Predictor:
    """A predictor whose card agrees with its graph and that answered one warm-up prediction.

    Raises ArtifactError in one sentence otherwise: a service must not say it is ready and then
    answer every request with an error.
    """
    predictor = Predictor(artifact, device, threads, max_pixels=max_pixels)
    example = predictor.input.example()
    if example is not None:
        try:
            outputs = predictor.session.run(
                predictor.output.names, predictor.input.feeds([example], predictor.input_name)
            )
        except Exception as exc:  # onnxruntime raises its own types for a graph that does not run
            raise ArtifactError(
                f"{predictor.artifact.path}: the model does not run on a test input "
                f"({str(exc).splitlines()[0][:200]})"
            ) from None
        scored = getattr(predictor.output, "one_score_per_label", True)  # not so for detections
        width = outputs[0].shape[-1] if outputs[0].ndim == 2 and scored else None
        if width is not None and width != len(predictor.labels):
            raise ArtifactError(
                f"{predictor.artifact.path}: the model gives {width} scores but its card "
                f"names {len(predictor.labels)} labels"
            )
        if not all(math.isfinite(float(v)) for v in outputs[0].ravel()[:1000]):
            raise ArtifactError(
                f"{predictor.artifact.path}: the model gives NaN or infinite scores on a "
                "test input (check the card's preprocessing)"
            )
    return predictor


def create_app(
    artifact,
    *,
    token: str | None = None,
    max_request_bytes: int | None = None,
    max_pixels: int | None = None,
    threads: int | None = None,
    device: str = "auto",
    max_images: int = DEFAULT_MAX_IMAGES,
    local_only: bool = True,
    allowed_origins=(),
    max_decode_bytes: int | None = None,
    predictor: Predictor | None = None,
) -> Starlette:
    """Build the service for ``artifact`` (an artifact, its folder, model.json or model.onnx).

    The inference session is created once, at startup (lifespan; or pass a ``predictor`` from
    :func:`load_checked`); inference runs in a bounded thread pool so the event loop stays
    responsive and requests are served in parallel. With ``token`` every request except the pages
    and ``/healthz`` needs ``Authorization: Bearer <token>``. ``local_only``: answer only requests
    addressed to a loopback name (set it False when bound to another interface).
    """
    artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
    token = token if token is not None else (os.environ.get("MODELDESK_TOKEN") or None)
    max_request_bytes = max_request_bytes or _env_int(
        "MODELDESK_MAX_REQUEST_BYTES", DEFAULT_MAX_REQUEST_BYTES
    )
    max_pixels = max_pixels or _env_int("MODELDESK_MAX_PIXELS", DEFAULT_MAX_PIXELS)
    budget = DecodeBudget(
        max_decode_bytes or _env_int("MODELDESK_MAX_DECODE_BYTES", DEFAULT_MAX_DECODE_BYTES)
    )
    threads = threads or _env_int("MODELDESK_THREADS", None)
    card = artifact.card
    document = openapi_document(card, token_required=bool(token))
    # the card, and what the console needs to take this model's input (``ModelInput.describe``)
    described = {**card, "input": input_for(card).describe()}
    console, docs = _console_page(), docs_page(document)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        anyio.to_thread.current_default_thread_limiter().total_tokens = INFERENCE_THREADS
        app.state.predictor = predictor or await run_in_threadpool(
            load_checked, artifact, device=device, threads=threads, max_pixels=max_pixels
        )
        app.state.batcher = MicroBatcher(
            app.state.predictor.run_items, max_batch=app.state.predictor.batch_size * 2
        )
        log.info("serving model %s on %s", artifact.id, app.state.predictor.providers[0])
        yield
        app.state.batcher.stop()
        app.state.predictor = None

    def decode(active: Predictor, items) -> tuple[list, int]:
        """Decoded items within the decode budget, and the bytes of the budget they still hold (the
        caller releases those when done). The decoder's working set is handed back to the system
        before the rest of the budget is released: glibc keeps a thread's freed heap otherwise, and
        the next decode, on another thread, would come on top of it."""
        cost = sum(active.input.cost(source) for _, source in items)
        budget.acquire(cost)
        try:
            prepared = active.prepare([data for _, data in items], names=[name for name, _ in items])
        except BaseException:
            budget.release(cost)
            raise
        finally:
            if cost > BIG_DECODE_BYTES:
                _give_memory_back()
        held = min(cost, _held_bytes(prepared))
        budget.release(cost - held)
        return prepared, held

    async def predict(request: Request):
        active = getattr(request.app.state, "predictor", None)
        if active is None:
            raise ServiceError("the model is still loading", 503)
        # The body and what parsing it makes are budgeted before a byte of it is read.
        reserved = body_bytes(request.headers, max_request_bytes)
        await run_in_threadpool(budget.acquire, reserved, "reading this request body takes {} MB")
        try:
            return await _predict(request, active)
        finally:
            budget.release(reserved)

    async def _predict(request: Request, active: Predictor):
        items = await _read_inputs(request, active.input, max_images)
        start = time.perf_counter()
        batcher = request.app.state.batcher
        batcher.expect()  # so that requests arriving together wait for each other, briefly
        try:
            prepared, held = await run_in_threadpool(decode, active, items)
        except BaseException:
            batcher.forget()
            raise
        try:
            predictions = await asyncio.wrap_future(batcher.submit(prepared))
        finally:
            budget.release(held)
        respond = getattr(active.output, "respond", None)  # outputs with arrays (heatmaps) shape their answer
        if respond is not None:
            predictions = [respond(p, request.query_params) for p in predictions]
        latency = (time.perf_counter() - start) * 1000.0
        return StrictJSONResponse({"predictions": predictions, "latency_ms": round(latency, 3)})

    async def model(request: Request):
        return StrictJSONResponse(described)

    async def healthz(request: Request):
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request):
        active = getattr(request.app.state, "predictor", None)
        if active is None:
            return JSONResponse({"status": "loading"}, status_code=503)
        return JSONResponse({"status": "ready", "model": artifact.id, "providers": active.providers})

    async def openapi(request: Request):
        return JSONResponse(document)

    async def docs_route(request: Request):
        return HTMLResponse(docs)

    async def index(request: Request):
        return HTMLResponse(console, headers={"Cache-Control": "no-store"})

    async def service_error(request: Request, exc: ServiceError):
        return error_response(exc.message, exc.status)

    async def guard_error(request: Request, exc: GuardError):
        return error_response(exc.message, exc.status, exc.headers)

    async def http_error(request: Request, exc: HTTPException):
        return error_response(exc.detail or "error", exc.status_code, exc.headers)  # 405 keeps its Allow

    async def decode_error(request: Request, exc: ValueError):
        return error_response(str(exc), 422)

    async def unexpected(request: Request, exc: Exception):
        log.error("unexpected error serving %s %s", request.method, request.url.path, exc_info=exc)
        return error_response("internal server error", 500)

    # Starlette types each handler as taking any Exception; ours take the class they are registered for.
    handlers: dict[Any, Callable[..., Any]] = {
        ServiceError: service_error,
        GuardError: guard_error,
        HTTPException: http_error,
        ImageDecodeError: decode_error,
        InputError: decode_error,
        Exception: unexpected,
    }
    app = Starlette(
        routes=[
            Route("/v1/predict", predict, methods=["POST"]),
            Route("/v1/model", model, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/docs", docs_route, methods=["GET"]),
            Route("/", index, methods=["GET"]),
        ],
        exception_handlers=handlers,
        lifespan=lifespan,
    )
    app.add_middleware(
        RequestGuard,
        token=token,
        max_request_bytes=max_request_bytes,
        local_only=local_only,
        allowed_origins=allowed_origins,
    )
    return app


def serve(
    artifact,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    *,
    threads: int | None = None,
    device: str = "auto",
    log_level: str = "info",
    allowed_origins=(),
    on_ready=None,
) -> None:
    """Check everything that can be checked before binding, then serve with uvicorn until interrupted.

    Raises ValueError (ArtifactError for the model) in one sentence for a bad port, a public bind
    without a long token, a port in use or a model that cannot serve; ``on_ready()`` is called once
    all that passed, just before the server binds.
    """
    import uvicorn

    token = token if token is not None else (os.environ.get("MODELDESK_TOKEN") or None)
    check_bind(host, port, token)
    if port and not port_is_free(host, port):
        raise ValueError(f"port {port} on {host} is in use (another service?); pick another with --port")
    ready = load_checked(artifact, device=device, threads=threads)
    app = create_app(
        ready.artifact,
        token=token,
        threads=threads,
        device=device,
        predictor=ready,
        local_only=host.strip("[]") in LOCAL_NAMES,
        allowed_origins=allowed_origins,
    )
    if on_ready is not None:
        on_ready()
    uvicorn.Server(server_config(app, host, port, log_level=log_level, token=token)).run()
