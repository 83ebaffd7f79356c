"""The edge server: many models with numbered versions, live sources (files, cameras, streams,
folders) feeding them, rules turning answers into events, and the HTTP API of ``docs/EDGE_API.md``.

Like the rest of ``deploy/`` it imports nothing from the app or the trainers: the edge bundle runs it
on a machine without ModelDesk.
"""

from .server import EdgeServer, serve_edge

__all__ = ["EdgeServer", "serve_edge"]
