"""`hyperloom install` / `uninstall`: put the skill and the server entry into a host, and take back only those.

Install plans everything first and refuses before writing anything (a malformed config, a
server entry or skill folder of the same name that this command did not write). What it wrote
is recorded in the installed skill folder; uninstall removes exactly that, and leaves anything
changed since in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from hyperloom import __version__
from hyperloom.core.atomic import staged_directory, write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.hosts import configs
from hyperloom.hosts.locations import SERVER_NAME, SKILL_NAME, Location

RECORD = ".hyperloom-install.json"
RECORD_FORMAT = "hyperloom.install/1"


def server_command() -> str:
    """The `hyperloom-mcp` of this installation, as an absolute path when it can be found."""
    beside = Path(sys.executable).parent / "hyperloom-mcp"
    found = str(beside) if beside.exists() else shutil.which("hyperloom-mcp")
    return str(Path(found).absolute()) if found else "hyperloom-mcp"


def server_entry(location: Location) -> dict[str, Any]:
    if location.config_format == "json":
        return {"type": "stdio", "command": server_command(), "args": [], "env": {}}
    return {"command": server_command()}


def packaged_skill() -> dict[str, bytes]:
    """The skill shipped inside the package: relative path → bytes."""
    root = resources.files("hyperloom").joinpath("skill", SKILL_NAME)
    if not root.joinpath("SKILL.md").is_file():
        raise HyperloomError("this installation of hyperloom ships no skill files",
                             "reinstall hyperloom from a wheel or a clone (pip install .)")
    files: dict[str, bytes] = {}

    def walk(node: Any, prefix: str) -> None:  # an importlib.resources Traversable
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name != RECORD and not child.name.endswith(".pyc"):
                files[prefix + child.name] = child.read_bytes()

    walk(root, "")
    return files


def _digest(files: dict[str, bytes]) -> dict[str, str]:
    return {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}


def _files_on_disk(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != RECORD}


def read_record(location: Location) -> dict[str, Any] | None:
    path = location.skill_dir / RECORD
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise HyperloomError(f"the install record {path} cannot be read ({exc})",
                             f"remove {location.skill_dir} and the server entry by hand") from exc
    return record if isinstance(record, dict) and record.get("format") == RECORD_FORMAT else None


@dataclass
class InstallPlan:
    location: Location
    entry: dict[str, Any]
    files: dict[str, bytes]
    config_before: str
    config_after: str | None  # None: the config needs no change
    record: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def plan_install(location: Location) -> InstallPlan:
    """Everything install would do, checked; raises HyperloomError (and writes nothing) when it must refuse."""
    previous = read_record(location)
    files = packaged_skill()
    skill_dir = location.skill_dir
    if skill_dir.exists() or skill_dir.is_symlink():
        if previous is None:
            raise HyperloomError(
                f"{skill_dir} exists and was not installed by hyperloom",
                "move it away (or delete it) if it is an old copy, then run install again"
            )
        if _digest(_files_on_disk(skill_dir)) != previous.get("files"):
            raise HyperloomError(f"{skill_dir} was changed since hyperloom installed it",
                                 "keep your changes elsewhere, remove the folder, then run install again")
    path, fmt = location.config, location.config_format
    text = configs.read_text(path)
    entry = server_entry(location)
    current = configs.entry_in(fmt, path, text, SERVER_NAME)
    old = (previous or {}).get("config", {})
    notes, after, appended = [], None, old.get("appended", "")
    if current == entry:
        notes.append(f"{path}: the {SERVER_NAME} server entry is already there")
    elif current is not None and current != old.get("entry"):
        raise HyperloomError(
            f"{path} already has an MCP server named {SERVER_NAME!r} that hyperloom install did not write ({json.dumps(current)})",
            f"remove that entry first ({location.host} mcp remove {SERVER_NAME}), or keep it and skip install",
        )
    else:
        base = text if current is None else configs.remove_entry(fmt, path, text, SERVER_NAME, appended, drop_empty_container=False)
        after, appended = configs.add_entry(fmt, path, base, SERVER_NAME, entry)
    record = {
        "format": RECORD_FORMAT,
        "hyperloom": __version__,
        "host": location.host,
        "scope": location.scope,
        "files": _digest(files),
        "config": {
            "path": str(path),
            "entry": entry,
            "appended": appended,
            "created_file": old.get("created_file", not path.exists()),
            "created_container": old.get("created_container", not configs.has_container(fmt, path, text)),
        },
        "created_dirs": (previous or {}).get("created_dirs") or _missing_folders(skill_dir, path),
    }
    return InstallPlan(location, entry, files, text, after, record, notes)


def _missing_folders(*paths: Path) -> list[str]:
    """The folders above `paths` that do not exist yet (install creates them), deepest first."""
    missing = {parent for path in paths for parent in path.parents if not parent.exists()}
    return [str(p) for p in sorted(missing, key=lambda p: len(p.parts), reverse=True)]


def next_steps(location: Location) -> list[str]:
    """What the user does after install for the host to load the skill and the server."""
    if location.host == "claude" and location.scope == "project":
        return [
            f"restart Claude Code in {location.config.parent}; it lists servers from a project's .mcp.json as \"Pending approval\" "
            f"(claude mcp list) until you approve them: accept the prompt it shows at start, or approve {SERVER_NAME} under /mcp"
        ]
    if location.host == "codex" and location.scope == "project":
        return [f"restart Codex in {location.config.parent.parent}; Codex reads .codex/config.toml only in a project it trusts: trust "
                "it when asked"]
    return [f"restart {location.label.split(' (')[0]} to load the skill and the server"]


def describe(plan: InstallPlan) -> str:
    """What install would write, for --print."""
    loc = plan.location
    lines = [f"hyperloom install {loc.host} --scope {loc.scope}: {loc.label}", "", f"skill → {loc.skill_dir}/"]
    lines += [f"  {name} ({len(data)} bytes)" for name, data in sorted(plan.files.items())]
    lines += [f"  {RECORD} (what was installed, for uninstall)", ""]
    if plan.config_after is None:
        lines += plan.notes
    else:
        action = "create" if not loc.config.exists() else "add to"
        lines += [f"server → {action} {loc.config}:", configs.snippet(loc.config_format, SERVER_NAME, plan.entry).rstrip()]
    return "\n".join(lines)


def _write_config(path: Path, text: str, private: bool) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else (0o600 if private else 0o644)
    write_bytes_atomic(path, text.encode("utf-8"))
    os.chmod(path, mode)


def apply_install(plan: InstallPlan) -> list[str]:
    """Write the config entry, then the skill folder; if the folder fails, the config goes back as it was."""
    loc, done = plan.location, list(plan.notes)
    existed = loc.config.exists()
    if plan.config_after is not None:
        _write_config(loc.config, plan.config_after, private=loc.scope == "user")
        done.append(f"registered the {SERVER_NAME} MCP server in {loc.config}")
    try:
        with staged_directory(loc.skill_dir) as staging:
            staging.chmod(0o755)
            for name, data in plan.files.items():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                (staging / name).write_bytes(data)
            (staging / RECORD).write_text(json.dumps(plan.record, indent=2) + "\n")
    except BaseException as exc:
        if plan.config_after is not None:
            if existed:
                _write_config(loc.config, plan.config_before, private=loc.scope == "user")
            else:
                loc.config.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise HyperloomError(f"could not write the skill into {loc.skill_dir} ({exc}); the config was put back as it was",
                                 "check that folder's permissions") from exc
        raise
    done.append(f"installed the {SKILL_NAME} skill into {loc.skill_dir}")
    return done


def uninstall(location: Location) -> list[str]:
    """Remove what the recorded install added; leave (and say so) whatever changed since."""
    record = read_record(location)
    if record is None:
        return [f"nothing to remove: no hyperloom install is recorded in {location.skill_dir}"]
    done = []
    config = record.get("config", {})
    path, fmt = Path(config.get("path", location.config)), location.config_format
    text = configs.read_text(path)
    current = configs.entry_in(fmt, path, text, SERVER_NAME)
    if current is None:
        done.append(f"{path}: no {SERVER_NAME} server entry left to remove")
    elif current != config.get("entry"):
        done.append(f"{path}: the {SERVER_NAME} server entry was changed since install; left in place")
    else:
        after = configs.remove_entry(fmt, path, text, SERVER_NAME, config.get("appended", ""), bool(config.get("created_container")))
        if config.get("created_file") and configs.is_empty(after):
            path.unlink()
            done.append(f"removed {path} (install had created it)")
        else:
            _write_config(path, after, private=location.scope == "user")
            done.append(f"removed the {SERVER_NAME} server entry from {path}")
    if _digest(_files_on_disk(location.skill_dir)) == record.get("files"):
        shutil.rmtree(location.skill_dir)
        done.append(f"removed the skill folder {location.skill_dir}")
    else:
        done.append(f"{location.skill_dir} was changed since install; left in place (delete it by hand if you no longer need it)")
    if removed := _remove_empty(record.get("created_dirs", [])):
        done.append(f"removed the folders install had created, now empty: {', '.join(removed)}")
    return done


def _remove_empty(folders: list[str]) -> list[str]:
    """Remove each folder (deepest first) that is empty now; keep any that holds something."""
    removed = []
    for folder in folders:
        try:
            Path(folder).rmdir()
            removed.append(folder)
        except OSError:  # not empty, or gone already
            continue
    return removed
