"""The OpenAPI document of the service and its human-readable page, true to what the service does.

What a request carries follows the model's input kind; the bearer scheme is declared only when the
service was started with a token; every status the service answers with is declared.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from .inputs import input_for, output_for

STATIC = Path(__file__).with_name("static")


def _error(description: str) -> dict:
    return {
        "description": description,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "string"}},
                }
            }
        },
    }


def _request_body(card: dict) -> dict:
    model_input = input_for(card)
    single, plural = model_input.json_fields
    value: dict[str, Any]
    content: dict[str, Any]
    if model_input.upload_types:
        value = {"type": "string", "format": "byte", "minLength": 1}
        content = {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {
                            "type": "array",
                            "minItems": 1,
                            "items": {"type": "string", "format": "binary"},
                        }
                    },
                }
            }
        }
        for upload in model_input.upload_types:
            content[f"{upload}*" if upload.endswith("/") else upload] = {
                "schema": {"type": "string", "format": "binary"}
            }
    else:
        value, content = {"type": "string", "minLength": 1}, {}
    content["application/json"] = {
        "schema": {
            "oneOf": [
                {"type": "object", "required": [single], "properties": {single: value}},
                {
                    "type": "object",
                    "required": [plural],
                    "properties": {plural: {"type": "array", "minItems": 1, "items": value}},
                },
            ]
        }
    }
    return {"required": True, "content": content}


def openapi_document(card: dict, *, token_required: bool = False) -> dict:
    """The OpenAPI 3 description of the service for this model card."""
    noun = input_for(card).noun
    prediction: dict[str, Any] = {
        "type": "object",
        "required": ["label", "score", "scores"],
        "properties": {
            "label": {"type": "string"},
            "score": {"type": "number"},
            "scores": {"type": "object", "additionalProperties": {"type": "number"}},
        },
    }
    prediction["properties"].update(getattr(output_for(card), "schema", {}))  # e.g. a detector's boxes
    locked = {"401": _error("missing or wrong access token")} if token_required else {}
    guarded = {
        "403": _error("a web page from another origin"),
        "421": _error("a Host that is not this machine"),
    }
    labels = card.get("labels", [])
    document: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {
            "title": f"ModelDesk model {card.get('id', '')}",
            "version": "1",
            "description": f"Predicts for each {noun} one of {len(labels)} labels"
            + ("" if token_required else f": {', '.join(map(str, labels[:20]))}"),
        },
        "paths": {
            "/v1/predict": {
                "post": {
                    "summary": f"Predict for one or several {noun}s",
                    "requestBody": _request_body(card),
                    "responses": {
                        "200": {
                            "description": f"one prediction per {noun}, in order",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["predictions"],
                                        "properties": {
                                            "predictions": {"type": "array", "items": prediction},
                                            "latency_ms": {"type": "number"},
                                        },
                                    }
                                }
                            },
                        },
                        "400": _error("malformed request"),
                        **locked,
                        **guarded,
                        "413": _error("too large"),
                        "415": _error("unsupported content type"),
                        "422": _error("an input that cannot be used"),
                        "503": _error("busy or still loading"),
                    },
                }
            },
            "/v1/model": {
                "get": {
                    "summary": "The model card",
                    "responses": {
                        "200": {
                            "description": "model card",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **locked,
                        **guarded,
                    },
                }
            },
            "/healthz": {
                "get": {
                    "summary": "Liveness (no token needed)",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "alive",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **guarded,
                    },
                }
            },
            "/readyz": {
                "get": {
                    "summary": "Readiness: the model is loaded and answered a warm-up",
                    "responses": {
                        "200": {
                            "description": "ready",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **locked,
                        **guarded,
                        "503": _error("loading"),
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "summary": "This document",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "OpenAPI",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        },
                        **guarded,
                    },
                }
            },
            "/docs": {
                "get": {
                    "summary": "Human-readable API page",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "HTML",
                            "content": {"text/html": {"schema": {"type": "string"}}},
                        },
                        **guarded,
                    },
                }
            },
            "/": {
                "get": {
                    "summary": "Browser console",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "HTML",
                            "content": {"text/html": {"schema": {"type": "string"}}},
                        },
                        **guarded,
                    },
                }
            },
        },
    }
    if token_required:
        document["components"] = {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}}
        document["security"] = [{"bearer": []}]
    return document


def docs_page(document: dict) -> str:
    """The API page: a table of the endpoints and the OpenAPI JSON."""
    rows = []
    for path, methods in document["paths"].items():
        for method, spec in methods.items():
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}</code></td>"
                f"<td>{html.escape(spec.get('summary', ''))}</td></tr>"
            )
    template = (STATIC / "docs.html").read_text(encoding="utf-8")
    return (
        template.replace("{{TITLE}}", html.escape(document["info"]["title"]))
        .replace("{{DESCRIPTION}}", html.escape(document["info"]["description"]))
        .replace("{{ROWS}}", "\n".join(rows))
        .replace("{{JSON}}", html.escape(json.dumps(document, indent=2)))
    )
