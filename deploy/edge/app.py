"""The edge server's HTTP API (``docs/EDGE_API.md``): Starlette routes over an :class:`EdgeServer`.

The guards are the service's: Host and Origin checks, a cap on bodies and on decoded bytes
(``deploy/guards.py``); with a token, every state-changing call (POST, PUT, DELETE) needs
``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from modeldesk.safejson import JSONLimitError
from modeldesk.safejson import loads as safe_loads

from ..guards import DecodeBudget, GuardError, RequestGuard, error_response
from ..inputs import InputError
from ..preprocess import ImageDecodeError
from ..service import (
    DEFAULT_MAX_DECODE_BYTES,
    DEFAULT_MAX_IMAGES,
    DEFAULT_MAX_REQUEST_BYTES,
    ServiceError,
    StrictJSONResponse,
    _read_inputs,
)
from . import oip
from .registry import RegistryError
from .server import EdgeError, EdgeServer, device_load

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")
# the palette and type the model console uses too: deploy/static's, copied beside edge/ in a bundle
SHARED_CSS = Path(__file__).parents[1] / "static" / "base.css"
STATE_CHANGING = {"POST", "PUT", "DELETE", "PATCH"}


class TokenGuard:
    """With a token set, refuse state-changing calls that do not carry it (reads stay open, so the
    console's ``<img>`` live view and snapshots work; binding beyond loopback needs the token)."""

    def __init__(self, app, *, token: str | None):
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and self.token and scope["method"] in STATE_CHANGING:
            header = Request(scope).headers.get("authorization", "")
            offered = header[7:].strip() if header.lower().startswith("bearer ") else ""
            if not offered or not hmac.compare_digest(offered.encode(), self.token.encode()):
                response = error_response(
                    "missing or wrong access token: send 'Authorization: Bearer <token>'",
                    401,
                    {"WWW-Authenticate": "Bearer"},
                )
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)


async def _json_body(request: Request) -> dict:
    body = await request.body()
    if not body:
        return {}
    try:
        value = safe_loads(body)
    except (UnicodeDecodeError, ValueError, JSONLimitError, RecursionError) as exc:
        raise EdgeError(f"malformed JSON ({exc})", 400) from None
    if not isinstance(value, dict):
        raise EdgeError("the body must be a JSON object", 422)
    return value


def create_edge_app(
    server: EdgeServer,
    *,
    token: str | None = None,
    local_only: bool = True,
    allowed_origins=(),
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
    max_decode_bytes: int = DEFAULT_MAX_DECODE_BYTES,
) -> Starlette:
    """The Starlette app of ``server``."""
    budget = DecodeBudget(max_decode_bytes)

    def ok(content, status: int = 200):
        return StrictJSONResponse(content, status_code=status)

    def version_of(request: Request):
        raw = request.path_params.get("version")
        if raw is None:
            return None
        try:
            return int(raw)
        except ValueError:
            raise EdgeError(f"version {raw!r} is not a number", 404) from None

    async def run_model(predictor, name: str, version: int, items: list, names: list, protocol: str):
        """Predictions of one model version for encoded items, within the decode budget, counted in the
        metrics (the predictor is the one taken when the request arrived: a switch does not touch it)."""
        started = time.perf_counter()

        def work():
            cost = sum(predictor.input.cost(source) for source in items)
            budget.acquire(cost)
            try:
                return predictor.run_items(predictor.prepare(items, names=names))
            finally:
                budget.release(cost)

        try:
            predictions = await run_in_threadpool(work)
        except BaseException:
            server.metrics.observe(name, version, protocol, time.perf_counter() - started, ok=False)
            raise
        elapsed = time.perf_counter() - started
        for _ in predictions:
            server.metrics.observe(name, version, protocol, elapsed / max(1, len(predictions)))
        return predictions, elapsed

    # server and device
    async def healthz(request):
        return JSONResponse({"ok": True})

    async def status(request):
        return ok(await run_in_threadpool(server.status))

    async def device(request):
        return ok(await run_in_threadpool(device_load))

    async def logs(request):
        try:
            lines = max(1, min(int(request.query_params.get("lines", 200)), 2000))
        except ValueError:
            raise EdgeError("lines must be a number", 422) from None
        return ok({"lines": list(server.logs.lines)[-lines:]})

    # models
    async def models(request):
        return ok({"models": await run_in_threadpool(server.registry.describe)})

    async def add_model(request):
        body = await _json_body(request)
        if not isinstance(body.get("source"), str) or not isinstance(body.get("name"), str):
            raise EdgeError('send {"source": model id or folder, "name": NAME}', 422)
        return ok(await run_in_threadpool(server.add_model, body["source"], body["name"]))

    async def set_live(request):
        body = await _json_body(request)
        return ok(await run_in_threadpool(server.set_live, request.path_params["name"], body.get("version")))

    async def remove_model(request):
        return ok(await run_in_threadpool(server.remove_model, request.path_params["name"]))

    async def workspace_models(request):
        return ok({"models": await run_in_threadpool(server.list_workspace_models)})

    async def predict(request):
        name = request.path_params["name"]
        predictor, version = await run_in_threadpool(server.registry.predictor, name, version_of(request))
        items = await _read_inputs(request, predictor.input, DEFAULT_MAX_IMAGES)
        predictions, elapsed = await run_model(
            predictor, name, version, [source for _, source in items], [n for n, _ in items], "v1"
        )
        respond = getattr(predictor.output, "respond", None)  # answers with arrays (masks) as the service's
        if respond is not None:
            predictions = [respond(p, request.query_params) for p in predictions]
        return ok(
            {
                "predictions": predictions,
                "latency_ms": round(elapsed * 1000, 3),
                "model": name,
                "version": version,
            }
        )

    # Open Inference Protocol v2
    async def v2_live(request):
        return JSONResponse({"live": True})

    async def v2_ready(request):
        return JSONResponse({"ready": True})

    async def v2_server(request):
        from modeldesk import __version__

        return JSONResponse(
            {"name": "modeldesk-edge", "version": __version__, "extensions": ["binary_tensor_data"]}
        )

    async def v2_model(request):
        name = request.path_params["name"]
        predictor, _ = await run_in_threadpool(server.registry.predictor, name, version_of(request))
        record = next(m for m in server.store.models() if m["name"] == name)
        return JSONResponse(oip.model_metadata(name, [v["version"] for v in record["versions"]], predictor))

    async def v2_model_ready(request):
        name = request.path_params["name"]
        await run_in_threadpool(server.registry.predictor, name, version_of(request))
        return JSONResponse({"name": name, "ready": True})

    async def v2_infer(request):
        name = request.path_params["name"]
        parsed, chunks = oip.parse_infer(await request.body(), request.headers.get(oip.HEADER))
        predictor, version = await run_in_threadpool(server.registry.predictor, name, version_of(request))
        items = oip.input_items(parsed, chunks, predictor.input)
        names = [f"{predictor.input.noun} {i + 1}" for i in range(len(items))]
        predictions, _ = await run_model(predictor, name, version, items, names, "v2")
        payload, headers = oip.infer_response(
            parsed, name, version, oip.output_tensors(predictions, predictor.labels)
        )
        media = headers.pop("content-type")
        return Response(payload, media_type=media, headers=headers)

    async def metrics(request):
        from prometheus_client import CONTENT_TYPE_LATEST

        return Response(server.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    # pipelines
    async def pipelines(request):
        return ok({"pipelines": await run_in_threadpool(server.list_pipelines)})

    async def add_pipeline(request):
        return ok(await run_in_threadpool(server.add_pipeline, await _json_body(request)))

    async def pipeline_start(request):
        return ok(await run_in_threadpool(server.start_pipeline, request.path_params["id"]))

    async def pipeline_stop(request):
        return ok(await run_in_threadpool(server.stop_pipeline, request.path_params["id"]))

    async def pipeline_delete(request):
        return ok(await run_in_threadpool(server.delete_pipeline, request.path_params["id"]))

    async def pipeline_frame(request):
        pipeline = server.pipeline(request.path_params["id"])
        jpeg = await run_in_threadpool(pipeline.latest_jpeg)
        if jpeg is None:
            raise EdgeError("no frame yet", 404)
        return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "no-store"})

    async def add_rule(request):
        return ok(
            await run_in_threadpool(server.add_rule, request.path_params["id"], await _json_body(request))
        )

    async def delete_rule(request):
        return ok(
            await run_in_threadpool(
                server.delete_rule, request.path_params["id"], request.path_params["rule"]
            )
        )

    # events and charts
    async def events(request):
        q = request.query_params
        try:
            limit = int(q.get("limit", 100))
        except ValueError:
            raise EdgeError("limit must be a number", 422) from None
        found = await run_in_threadpool(
            server.store.events,
            pipeline=q.get("pipeline"),
            model=q.get("model"),
            label=q.get("label"),
            since=q.get("since"),
            limit=limit,
        )
        return ok({"events": found})

    async def snapshot(request):
        try:
            event_id = int(request.path_params["id"])
        except ValueError:
            raise EdgeError("no such event", 404) from None
        jpeg = await run_in_threadpool(server.store.snapshot, event_id)
        if not jpeg:
            raise EdgeError(f"event {event_id} has no snapshot", 404)
        return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "max-age=3600"})

    async def stats(request):
        try:
            minutes = max(1.0, min(float(request.query_params.get("minutes", 15)), 60.0))
        except ValueError:
            raise EdgeError("minutes must be a number", 422) from None
        return ok(server.metrics.stats(minutes))

    async def index(request):
        page = STATIC / "index.html"
        if not page.is_file():
            return HTMLResponse("<p>The edge server is running; its console is not installed.</p>")
        return FileResponse(page, headers={"Cache-Control": "no-store"})

    # errors
    async def known_error(request, exc):
        return error_response(exc.message, exc.status, getattr(exc, "headers", None))

    async def http_error(request, exc: HTTPException):
        return error_response(exc.detail or "error", exc.status_code, exc.headers)

    async def input_error(request, exc: ValueError):
        return error_response(str(exc), 422)

    async def unexpected(request, exc: Exception):
        log.error("unexpected error serving %s %s", request.method, request.url.path, exc_info=exc)
        return error_response("internal server error", 500)

    v2 = "/v2/models/{name}"
    routes: list[BaseRoute] = [
        Route("/healthz", healthz),
        Route("/v1/edge/status", status),
        Route("/v1/edge/device", device),
        Route("/v1/edge/logs", logs),
        Route("/v1/edge/models", models),
        Route("/v1/edge/models", add_model, methods=["POST"]),
        Route("/v1/edge/models/{name}/live", set_live, methods=["POST"]),
        Route("/v1/edge/models/{name}", remove_model, methods=["DELETE"]),
        Route("/v1/edge/workspace-models", workspace_models),
        Route("/v1/models/{name}/predict", predict, methods=["POST"]),
        Route("/v1/models/{name}/versions/{version}/predict", predict, methods=["POST"]),
        Route("/v2/health/live", v2_live),
        Route("/v2/health/ready", v2_ready),
        Route("/v2", v2_server),
        Route(v2, v2_model),
        Route(v2 + "/versions/{version}", v2_model),
        Route(v2 + "/ready", v2_model_ready),
        Route(v2 + "/versions/{version}/ready", v2_model_ready),
        Route(v2 + "/infer", v2_infer, methods=["POST"]),
        Route(v2 + "/versions/{version}/infer", v2_infer, methods=["POST"]),
        Route("/metrics", metrics),
        Route("/v1/edge/pipelines", pipelines),
        Route("/v1/edge/pipelines", add_pipeline, methods=["POST"]),
        Route("/v1/edge/pipelines/{id}/start", pipeline_start, methods=["POST"]),
        Route("/v1/edge/pipelines/{id}/stop", pipeline_stop, methods=["POST"]),
        Route("/v1/edge/pipelines/{id}", pipeline_delete, methods=["DELETE"]),
        Route("/v1/edge/pipelines/{id}/frame.jpg", pipeline_frame),
        Route("/v1/edge/pipelines/{id}/rules", add_rule, methods=["POST"]),
        Route("/v1/edge/pipelines/{id}/rules/{rule}", delete_rule, methods=["DELETE"]),
        Route("/v1/edge/events", events),
        Route("/v1/edge/events/{id}/snapshot.jpg", snapshot),
        Route("/v1/edge/stats", stats),
        Route("/", index),
    ]
    if SHARED_CSS.is_file():
        routes.append(
            Route("/static/base.css", lambda request: FileResponse(SHARED_CSS, media_type="text/css"))
        )
    if STATIC.is_dir():
        routes.append(Mount("/static", StaticFiles(directory=STATIC), name="static"))
    # Starlette types each handler as taking any Exception; ours take the class they are registered for.
    handlers: dict[Any, Callable[..., Any]] = {
        EdgeError: known_error,
        RegistryError: known_error,
        ServiceError: known_error,
        GuardError: known_error,
        oip.ProtocolError: known_error,
        HTTPException: http_error,
        ImageDecodeError: input_error,
        InputError: input_error,
        Exception: unexpected,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    app.state.edge = server
    app.add_middleware(TokenGuard, token=token)
    # the service's guard, without its token check (TokenGuard above makes reads open, writes locked)
    app.add_middleware(
        RequestGuard,
        token=None,
        max_request_bytes=max_request_bytes,
        local_only=local_only,
        allowed_origins=allowed_origins,
    )
    return app
