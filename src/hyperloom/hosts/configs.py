"""Adding and removing one MCP server entry in a host's config file, touching nothing else.

A file that does not parse is refused with the reason and left as it is. JSON gains the member as text in
the file's own indentation (json_text) and TOML a block appended; removing what was added restores the bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from hyperloom.core.errors import HyperloomError
from hyperloom.hosts import json_text

JSON_KEY, TOML_TABLE = "mcpServers", "mcp_servers"


def _refuse(path: Path, reason: str) -> HyperloomError:
    return HyperloomError(f"{path} {reason}; nothing was written", f"fix or move {path} by hand, then run the command again")


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise _refuse(path, f"cannot be read ({exc})") from exc


# --- JSON (Claude Code) -------------------------------------------------------------------------------------------


def _json_document(path: Path, text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _refuse(path, f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc
    if not isinstance(data, dict):
        raise _refuse(path, "does not hold a JSON object at the top")
    if not isinstance(data.get(JSON_KEY, {}), dict):
        raise _refuse(path, f"has a `{JSON_KEY}` that is not an object")
    return data


def _json_new(data: dict[str, Any]) -> str:
    """A new file: 2-space indentation and a final newline, as the hosts write theirs."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def json_entry(path: Path, text: str, name: str) -> Any:
    return _json_document(path, text).get(JSON_KEY, {}).get(name)


def json_with_entry(path: Path, text: str, name: str, entry: dict[str, Any]) -> tuple[str, str]:
    """The new text and the exact text inserted into it (so that removing it restores the file byte for byte).
    A new or blank file is written whole, indented by 2 spaces; an existing one only gains the member."""
    data = _json_document(path, text)
    if not text.strip():
        return _json_new({JSON_KEY: {name: entry}}), ""
    if name in data.get(JSON_KEY, {}):
        raise _refuse(path, f"already has a `{name}` entry")  # callers remove ours first and refuse a foreign one
    at, inserted = json_text.insert_member(text, (JSON_KEY,), name, entry)
    after = text[:at] + inserted + text[at:]
    if json_entry(path, after, name) != entry:
        raise _refuse(path, f"could not take a `{name}` entry in its `{JSON_KEY}` as text")
    return after, inserted


def json_without_entry(path: Path, text: str, name: str, drop_empty_container: bool, inserted: str = "") -> str:
    """Remove the text install inserted, verbatim when it is still there; else cut the member (and the container
    when asked and it is left empty) out of the text as it is now."""
    data = _json_document(path, text)
    if name not in data.get(JSON_KEY, {}):
        return text
    at = text.find(inserted) if inserted else -1
    if at >= 0:
        remaining = text[:at] + text[at + len(inserted):]
        try:
            if name not in _json_document(path, remaining).get(JSON_KEY, {}):
                return remaining
        except HyperloomError:
            pass  # the same text stands somewhere else now: cut the member instead
    servers = json_text.object_at(text, (JSON_KEY,))
    assert servers is not None  # the document has the member, so it has the container
    remaining = json_text.remove_member(text, servers, name)
    if drop_empty_container and _json_document(path, remaining).get(JSON_KEY) == {}:
        remaining = json_text.remove_member(remaining, json_text.object_at(remaining, ()) or 0, JSON_KEY)
    return remaining


def json_snippet(name: str, entry: dict[str, Any]) -> str:
    return json.dumps({JSON_KEY: {name: entry}}, indent=2)


# --- TOML (Codex) -------------------------------------------------------------------------------------------------


def _toml_document(path: Path, text: str) -> tomlkit.TOMLDocument:
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise _refuse(path, f"is not valid TOML ({exc})") from exc
    if not isinstance(doc.get(TOML_TABLE, {}), dict):
        raise _refuse(path, f"has a `{TOML_TABLE}` that is not a table")
    return doc


def toml_entry(path: Path, text: str, name: str) -> Any:
    entry = _toml_document(path, text).get(TOML_TABLE, {}).get(name)
    return entry.unwrap() if hasattr(entry, "unwrap") else entry


def toml_block(name: str, entry: dict[str, Any]) -> str:
    lines = [f"[{TOML_TABLE}.{name}]"] + [f"{key} = {tomlkit.item(value).as_string()}" for key, value in entry.items()]
    return "\n".join(lines) + "\n"


def toml_with_entry(path: Path, text: str, name: str, entry: dict[str, Any]) -> tuple[str, str]:
    """The new text and the exact text appended (so that removing it restores the file)."""
    _toml_document(path, text)
    separator = "" if not text else "\n" if text.endswith("\n") else "\n\n"
    added = separator + toml_block(name, entry)
    try:
        appended_entry = toml_entry(path, text + added, name)
    except HyperloomError:
        appended_entry = None  # e.g. `mcp_servers = { ... }` inline: TOML forbids extending it with a table
    if appended_entry != entry:
        raise _refuse(path, f"defines `{TOML_TABLE}` in a form a `[{TOML_TABLE}.{name}]` block cannot extend")
    return text + added, added


def toml_without_entry(path: Path, text: str, name: str, appended: str) -> str:
    """Remove the block this install appended, verbatim when it is still there, else the table alone."""
    doc = _toml_document(path, text)
    at = text.rfind(appended)
    if appended and at >= 0:
        remaining = text[:at] + text[at + len(appended):]
        if name not in _toml_document(path, remaining).get(TOML_TABLE, {}):
            return remaining
    doc.get(TOML_TABLE, {}).pop(name, None)
    return tomlkit.dumps(doc)


# --- one interface over both formats ------------------------------------------------------------------------------


def entry_in(fmt: str, path: Path, text: str, name: str) -> Any:
    """The server entry called `name`, as plain data, or None."""
    return json_entry(path, text, name) if fmt == "json" else toml_entry(path, text, name)


def add_entry(fmt: str, path: Path, text: str, name: str, entry: dict[str, Any]) -> tuple[str, str]:
    """(new text, the text added to it): removing the second gives the file back as it was."""
    return json_with_entry(path, text, name, entry) if fmt == "json" else toml_with_entry(path, text, name, entry)


def remove_entry(fmt: str, path: Path, text: str, name: str, appended: str, drop_empty_container: bool) -> str:
    if fmt == "json":
        return json_without_entry(path, text, name, drop_empty_container, appended)
    return toml_without_entry(path, text, name, appended)


def snippet(fmt: str, name: str, entry: dict[str, Any]) -> str:
    return json_snippet(name, entry) if fmt == "json" else toml_block(name, entry)


def has_container(fmt: str, path: Path, text: str) -> bool:
    """Whether the file already has the `mcpServers` object / `mcp_servers` table."""
    doc = _json_document(path, text) if fmt == "json" else _toml_document(path, text)
    return (JSON_KEY if fmt == "json" else TOML_TABLE) in doc


def is_empty(text: str) -> bool:
    return text.strip() in ("", "{}")
