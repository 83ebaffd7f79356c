"""Copying what can still be read out of a damaged workspace database into a fresh one.

SQLite cannot read a table past a damaged page, but rows before and after it usually still are:
every table is read in key order (rowid, or the primary key of a WITHOUT ROWID table) until the read
fails, then backwards from its end down to the last row read, so a damaged page costs the rows on it
(two or more damaged regions in one table also cost the rows between them). Rows are copied with foreign keys off; rows whose parent was lost (a label of a
lost sample) are removed afterwards, so the new database is consistent.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from urllib.parse import quote

log = logging.getLogger(__name__)


class _TargetError(Exception):
    """Writing the new database failed: not damage in the old one, so the salvage stops."""


def _tables(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rootpage"
    )
    return [name for (name,) in rows]


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]


def _key(conn: sqlite3.Connection, table: str) -> list[str]:
    """The columns rows are ordered by: ``rowid``, or the primary key of a WITHOUT ROWID table."""
    try:
        conn.execute(f'SELECT rowid FROM "{table}" LIMIT 0')
        return ["rowid"]
    except sqlite3.OperationalError:
        rows = conn.execute(f'PRAGMA table_info("{table}")').fetchall()
        return [name for _cid, name, *_rest, pk in sorted(rows, key=lambda r: r[-1]) if pk]


def _copy_table(source: sqlite3.Connection, target: sqlite3.Connection, table: str) -> tuple[int, int]:
    """Copy the readable rows of ``table``; returns (rows copied, damaged regions met).

    Rows are read in key order until a damaged page stops the read, then backwards from the end down
    to the last row read, so one damaged region costs only the rows stored in it.
    """
    wanted = _columns(target, table)
    try:
        have = set(_columns(source, table))
    except sqlite3.DatabaseError:
        have = set(wanted)
    key = _key(target, table)
    fields = (["rowid"] if key == ["rowid"] else []) + [c for c in wanted if c in have]
    if not key or any(k not in fields for k in key):
        return 0, 0
    at = [fields.index(k) for k in key]
    quoted = ", ".join(f'"{c}"' for c in fields)
    keys = ", ".join(f'"{k}"' for k in key)
    insert = f'INSERT OR IGNORE INTO "{table}"({quoted}) VALUES ({", ".join("?" * len(fields))})'
    copied = regions = 0
    last: tuple | None = None
    for descending in (False, True):
        query = f'SELECT {quoted} FROM "{table}"'
        if last is not None:
            query += f" WHERE ({keys}) > ({', '.join('?' * len(key))})"
        query += f" ORDER BY {keys}" + (" DESC" if descending else "")
        try:
            for row in source.execute(query, last or ()):
                if not descending:
                    last = tuple(row[i] for i in at)
                try:
                    target.execute(insert, row)
                except sqlite3.IntegrityError as exc:  # a damaged row (NULL where a value must be)
                    log.warning("salvage: %s: a row was not kept (%s)", table, exc)
                    continue
                except sqlite3.Error as exc:  # the new database cannot be written (a full disk)
                    raise _TargetError(exc) from exc
                copied += 1
            if not descending:
                return copied, regions
        except sqlite3.DatabaseError as exc:
            regions += 1
            log.warning("salvage: %s: a damaged part stopped the read (%s)", table, exc)
    return copied, regions


def _drop_orphans(target: sqlite3.Connection) -> int:
    """Delete rows whose parent row was lost; returns how many (repeated until none are left)."""
    removed = 0
    while True:
        problems = target.execute("PRAGMA foreign_key_check").fetchall()
        if not problems:
            return removed
        for table, rowid, _parent, _fk in problems:
            target.execute(f'DELETE FROM "{table}" WHERE rowid = ?', (rowid,))
            removed += 1


def salvage_rows(damaged: Path, target: sqlite3.Connection) -> dict:
    """Copy every row still readable in the ``damaged`` database file into ``target`` (a new, empty
    database with the current schema); never raises for damage.

    Returns ``{"tables": {name: rows copied}, "damaged_regions": n, "dropped": n, "error": str | None}``
    (``error`` says why nothing could be read, e.g. its table list is damaged).
    """
    result: dict = {"tables": {}, "damaged_regions": 0, "dropped": 0, "error": None}
    try:
        source = sqlite3.connect(f"file:{quote(str(damaged))}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        result["error"] = str(exc)
        return result
    try:
        target.execute("PRAGMA foreign_keys=OFF")
        target.execute("BEGIN IMMEDIATE")
        for table in _tables(target):
            try:
                copied, regions = _copy_table(source, target, table)
            except _TargetError as exc:
                cause = exc.__cause__
                assert cause is not None  # _TargetError is always raised `from` the write error
                raise cause from None
            except sqlite3.DatabaseError as exc:  # the table list or a whole table cannot be read
                log.warning("salvage: %s cannot be read: %s", table, exc)
                result["error"] = str(exc)
                copied, regions = 0, 1
            result["tables"][table] = copied
            result["damaged_regions"] += regions
        result["dropped"] = _drop_orphans(target)
        target.execute("COMMIT")
    except BaseException:
        if target.in_transaction:
            target.execute("ROLLBACK")
        raise
    finally:
        target.execute("PRAGMA foreign_keys=ON")
        source.close()
    return result
