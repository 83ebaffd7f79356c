"""The local inference service (Starlette + uvicorn) and its browser console.

This module imports only its siblings (``artifact``, ``inputs`` and the input and output modules
it names, ``predictor``, ``preprocess``, ``runtime``; numpy, Pillow, onnxruntime, starlette): the deploy
bundle copies these files verbatim, so the bundle serves through exactly this code. What a request
may carry follows the model's input kind (``inputs.ModelInput``), never a task name.

Endpoints: ``POST /v1/predict`` (multipart files, JSON, or a raw body of the input's type), ``GET /v1/model``,
``GET /healthz``, ``GET /readyz``, ``GET /openapi.json``, ``GET /docs`` and the console at ``GET /``.
Configuration comes from arguments, else the environment (``MODELDESK_TOKEN``,
``MODELDESK_MAX_REQUEST_BYTES``, ``MODELDESK_MAX_PIXELS``, ``MODELDESK_THREADS``).
"""

from __future__ import annotations

import contextlib
import hmac
import html
import json
import logging
import os
import time
from pathlib import Path

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from .artifact import ModelArtifact, load_artifact
from .inputs import InputError, ModelInput, input_for
from .predictor import Predictor
from .preprocess import ImageDecodeError

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
DEFAULT_MAX_REQUEST_BYTES = 20 * 1024 * 1024
DEFAULT_MAX_PIXELS = 40_000_000
DEFAULT_MAX_IMAGES = 32
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
PUBLIC_PATHS = {"/healthz"}


class ServiceError(Exception):
    """An error caused by the request; becomes a 4xx JSON response ``{"error": message}``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message = message
        self.status = status


def _env_int(name: str, default):
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


class _Limits:
    """Middleware: the auth check and the request-size cap, before any route reads the body."""

    def __init__(self, app, *, token: str | None, max_request_bytes: int):
        self.app = app
        self.token = token
        self.max_request_bytes = max_request_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        if self.token and scope["path"] not in PUBLIC_PATHS and not self._authorized(request):
            response = _login_page() if scope["path"] == "/" and scope["method"] == "GET" else \
                _error("missing or wrong access token: send 'Authorization: Bearer <token>'", 401)
            response.headers["WWW-Authenticate"] = "Bearer"
            return await response(scope, receive, send)
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return await _error("bad Content-Length header", 400)(scope, receive, send)
            if int(length) > self.max_request_bytes:
                return await _too_large(self.max_request_bytes)(scope, receive, send)
        received = 0
        limit = self.max_request_bytes

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise ServiceError(f"request body is over the limit of {limit:,} bytes", 413)
            return message

        await self.app(scope, limited_receive, send)

    def _authorized(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        offered = header[7:].strip() if header.lower().startswith("bearer ") else request.query_params.get("token", "")
        return bool(offered) and hmac.compare_digest(offered.encode(), self.token.encode())


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _too_large(limit: int) -> JSONResponse:
    return _error(f"request body is over the limit of {limit:,} bytes", 413)


def _login_page() -> HTMLResponse:
    page = (STATIC / "login.html").read_text(encoding="utf-8")
    return HTMLResponse(page, status_code=401)


async def _read_inputs(request: Request, model_input: ModelInput, max_items: int) -> list[tuple[str, object]]:
    """The (name, source) items of a predict request, whatever its content type.

    Multipart files and raw bodies are taken as bytes when the model's input accepts uploads; a
    JSON body carries one item or a list under the input's ``json_fields`` (base64 for media).
    """
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    single, plural = model_input.json_fields
    noun = model_input.noun
    uploads = model_input.upload_types
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
                if hasattr(value, "read"):
                    items.append((value.filename or key, await value.read()))
                elif key in (single, plural, "file", "files"):
                    raise ServiceError(f"form field {key!r} must be a file upload", 422)
        finally:
            await form.close()
    elif ctype == "application/json":
        body = await request.body()
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ServiceError(f"malformed JSON ({exc})", 400) from None
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
                items = [(f"{plural}[{i}]", model_input.from_json_value(v, f'"{plural}[{i}]"'))
                         for i, v in enumerate(payload[plural])]
        except InputError as exc:
            raise ServiceError(str(exc), 422) from None
    elif uploads and (ctype.startswith(uploads) or ctype == "application/octet-stream"):
        items = [(noun, await request.body())]
    else:
        accepted = ", ".join(["multipart/form-data"] * bool(uploads) + ["application/json"]
                             + [f"{t}*" if t.endswith("/") else t for t in uploads])
        raise ServiceError(f"unsupported content type {ctype or '(none)'!r}: send {accepted}", 415)
    if not items:
        raise ServiceError(f"no {noun} in the request", 422)
    if len(items) > max_items:
        raise ServiceError(f"at most {max_items} {noun}s per request", 413)
    empty = [name for name, data in items if isinstance(data, (bytes, bytearray)) and not data]
    if empty:
        raise ServiceError(f"{empty[0]}: empty file", 422)
    return items


def openapi_document(card: dict) -> dict:
    """The OpenAPI 3 description of the service (what a request carries follows the input kind)."""
    model_input = input_for(card)
    single, plural = model_input.json_fields
    noun = model_input.noun
    if model_input.upload_types:
        value_schema = {"type": "string", "format": "byte"}
        body = {"multipart/form-data": {"schema": {"type": "object", "properties": {
                    "file": {"type": "array", "items": {"type": "string", "format": "binary"}}}}}}
        for upload in model_input.upload_types:
            body[f"{upload}*" if upload.endswith("/") else upload] = {"schema": {"type": "string", "format": "binary"}}
    else:
        value_schema, body = {"type": "string"}, {}
    body["application/json"] = {"schema": {"type": "object", "properties": {
        single: value_schema, plural: {"type": "array", "items": value_schema}}}}
    prediction = {"type": "object", "properties": {
        "label": {"type": "string"}, "score": {"type": "number"},
        "scores": {"type": "object", "additionalProperties": {"type": "number"}}}}
    error = {"description": "request error", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"error": {"type": "string"}}}}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": f"ModelDesk model {card.get('id', '')}", "version": "1",
                 "description": f"Predicts for each {noun} one of {len(card.get('labels', []))} labels: "
                                f"{', '.join(map(str, card.get('labels', [])[:20]))}"},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/v1/predict": {"post": {
                "summary": f"Predict for one or several {noun}s",
                "requestBody": {"required": True, "content": body},
                "responses": {
                    "200": {"description": f"one prediction per {noun}, in order", "content": {"application/json": {
                        "schema": {"type": "object", "properties": {
                            "predictions": {"type": "array", "items": prediction},
                            "latency_ms": {"type": "number"}}}}}},
                    "400": error, "401": error, "413": error, "415": error, "422": error}}},
            "/v1/model": {"get": {"summary": "The model card", "responses": {"200": {"description": "model card"}}}},
            "/healthz": {"get": {"summary": "Liveness (no token needed)", "security": [],
                                 "responses": {"200": {"description": "alive"}}}},
            "/readyz": {"get": {"summary": "Readiness: the model is loaded",
                                "responses": {"200": {"description": "ready"}, "503": {"description": "loading"}}}},
            "/openapi.json": {"get": {"summary": "This document", "responses": {"200": {"description": "OpenAPI"}}}},
            "/docs": {"get": {"summary": "Human-readable API page", "responses": {"200": {"description": "HTML"}}}},
            "/": {"get": {"summary": "Browser console", "responses": {"200": {"description": "HTML"}}}},
        },
    }


def _docs_page(document: dict) -> str:
    rows = []
    for path, methods in document["paths"].items():
        for method, spec in methods.items():
            rows.append(f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                        f"<td>{html.escape(spec.get('summary', ''))}</td></tr>")
    template = (STATIC / "docs.html").read_text(encoding="utf-8")
    return (template.replace("{{TITLE}}", html.escape(document["info"]["title"]))
            .replace("{{DESCRIPTION}}", html.escape(document["info"]["description"]))
            .replace("{{ROWS}}", "\n".join(rows))
            .replace("{{JSON}}", html.escape(json.dumps(document, indent=2))))


def _console_page() -> str:
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    css = (STATIC / "console.css").read_text(encoding="utf-8")
    js = (STATIC / "console.js").read_text(encoding="utf-8")
    return page.replace("/*{{CSS}}*/", css).replace("/*{{JS}}*/", js)


def create_app(artifact, *, token: str | None = None, max_request_bytes: int | None = None,
               max_pixels: int | None = None, threads: int | None = None, device: str = "auto",
               max_images: int = DEFAULT_MAX_IMAGES) -> Starlette:
    """Build the service for ``artifact`` (an artifact, its folder, model.json or model.onnx).

    The inference session is created once, at startup (lifespan); inference runs in Starlette's
    thread pool so the event loop stays responsive and requests are served in parallel.
    With ``token`` every request except ``/healthz`` needs ``Authorization: Bearer <token>``
    (or ``?token=`` for the console page).
    """
    artifact = artifact if isinstance(artifact, ModelArtifact) else load_artifact(artifact)
    token = token if token is not None else (os.environ.get("MODELDESK_TOKEN") or None)
    max_request_bytes = max_request_bytes or _env_int("MODELDESK_MAX_REQUEST_BYTES", DEFAULT_MAX_REQUEST_BYTES)
    max_pixels = max_pixels or _env_int("MODELDESK_MAX_PIXELS", DEFAULT_MAX_PIXELS)
    threads = threads or _env_int("MODELDESK_THREADS", None)
    card = artifact.card
    document = openapi_document(card)
    console, docs = _console_page(), _docs_page(document)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        app.state.predictor = await run_in_threadpool(
            Predictor, artifact, device, threads, max_pixels=max_pixels)
        log.info("serving model %s on %s", artifact.id, app.state.predictor.providers[0])
        yield
        app.state.predictor = None

    async def predict(request: Request):
        predictor = getattr(request.app.state, "predictor", None)
        if predictor is None:
            raise ServiceError("the model is still loading", 503)
        items = await _read_inputs(request, predictor.input, max_images)
        start = time.perf_counter()
        predictions = await run_in_threadpool(
            predictor.predict, [data for _, data in items], names=[name for name, _ in items])
        latency = (time.perf_counter() - start) * 1000.0
        return JSONResponse({"predictions": predictions, "latency_ms": round(latency, 3)})

    async def model(request: Request):
        return JSONResponse(card)

    async def healthz(request: Request):
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request):
        predictor = getattr(request.app.state, "predictor", None)
        if predictor is None:
            return JSONResponse({"status": "loading"}, status_code=503)
        return JSONResponse({"status": "ready", "model": artifact.id, "providers": predictor.providers})

    async def openapi(request: Request):
        return JSONResponse(document)

    async def docs_page(request: Request):
        return HTMLResponse(docs)

    async def index(request: Request):
        return HTMLResponse(console, headers={"Cache-Control": "no-store"})

    async def service_error(request: Request, exc: ServiceError):
        return _error(exc.message, exc.status)

    async def http_error(request: Request, exc: HTTPException):
        return _error(exc.detail or "error", exc.status_code)

    async def decode_error(request: Request, exc: ValueError):
        return _error(str(exc), 422)

    async def unexpected(request: Request, exc: Exception):
        log.error("unexpected error serving %s %s", request.method, request.url.path, exc_info=exc)
        return _error("internal server error", 500)

    app = Starlette(
        routes=[
            Route("/v1/predict", predict, methods=["POST"]),
            Route("/v1/model", model, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/openapi.json", openapi, methods=["GET"]),
            Route("/docs", docs_page, methods=["GET"]),
            Route("/", index, methods=["GET"]),
        ],
        exception_handlers={ServiceError: service_error, HTTPException: http_error,
                            ImageDecodeError: decode_error, InputError: decode_error, Exception: unexpected},
        lifespan=lifespan,
    )
    app.add_middleware(_Limits, token=token, max_request_bytes=max_request_bytes)
    return app


def check_bind(host: str, token: str | None) -> None:
    """Refuse to expose the service beyond this machine without a token."""
    if host not in LOCAL_HOSTS and not token:
        raise ValueError(f"binding {host!r} makes the service reachable from other machines; "
                         "set a token (--token or MODELDESK_TOKEN) or bind 127.0.0.1")


def serve(artifact, host: str = "127.0.0.1", port: int = 8000, token: str | None = None, *,
          threads: int | None = None, device: str = "auto", log_level: str = "info") -> None:
    """Run the service with uvicorn until interrupted."""
    import uvicorn

    token = token if token is not None else (os.environ.get("MODELDESK_TOKEN") or None)
    check_bind(host, token)
    app = create_app(artifact, token=token, threads=threads, device=device)
    uvicorn.run(app, host=host, port=int(port), log_level=log_level)
