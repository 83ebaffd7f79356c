"""A job function an attacker's workspace database might name: it leaves a marker when it runs."""

from pathlib import Path


def plant(params, ctx):
    Path(params["marker"]).write_text("ran")
    return {"ran": True}
