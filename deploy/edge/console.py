"""The edge console's routes: ``GET /`` (the page) and ``/static/...`` (its script and style).

The console is plain files in ``static/`` (no build step, nothing fetched from elsewhere); the edge app
adds :func:`console_routes` to its routes.
"""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).with_name("static")
#: the page is not cached, so that a new version of the console shows after an update
NO_STORE = {"Cache-Control": "no-store"}


async def _index(request: Request) -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8", headers=NO_STORE)


def console_routes() -> list:
    """``GET /`` and ``/static/...``; these need no token (they hold no data: the page's calls do)."""
    return [
        Route("/", _index, methods=["GET"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="edge-static"),
    ]
