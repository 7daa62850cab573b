"""Where a shared Optuna study lives: a database server's URL, or an SQLite file inside the workspace.

An SQLite URL names a file the server would create or write; like every path a caller names, it
must resolve inside the workspace (relative paths start at the workspace root, not the server's
working directory). A server URL (postgresql://, mysql://) names no local file and is passed on.
"""

from __future__ import annotations

from hyperloom.core.errors import HyperloomError
from hyperloom.core.workspace import Workspace

MEMORY = ("", ":memory:")


def storage_url(raw: str | None, workspace: Workspace) -> str | None:
    """The URL Optuna is given: an SQLite file's path checked and made absolute; other URLs unchanged."""
    if raw is None:
        return None
    scheme, sep, rest = raw.partition("://")
    if not sep or not scheme:
        raise HyperloomError(f"storage {raw[:80]!r} is not a database URL",
                             "pass e.g. postgresql+psycopg://user@host/db, or sqlite:///tune.db (a file in the workspace)")
    if not scheme.split("+", 1)[0].lower() == "sqlite":
        return raw
    if not rest.startswith("/"):
        raise HyperloomError(f"storage {raw[:80]!r} is not an SQLite URL",
                             "write sqlite:///relative/file.db or sqlite:////absolute/file.db")
    path, qmark, query = rest[1:].partition("?")
    if path in MEMORY:
        return raw
    real = workspace.resolve(path, must_exist=False, kind="file", what="the storage's SQLite file")
    return f"{scheme}:///{real}{qmark}{query}"
