"""A worker's family in the process table: the worker, its process group and session, and its descendants wherever
they moved (a child that started a session of its own leaves the group a group kill reaches, not its parent's tree).
Read from /proc; where there is none, the worker alone."""

from __future__ import annotations

import os
import signal


def family(pid: int) -> list[int]:
    """`pid`, the members of its process group and session, and its descendants by parent link (sorted; never this
    process). Taken while `pid` lives: once it exits, its children belong to init and the link is gone."""
    if not os.path.isdir("/proc"):
        return [pid]
    table: dict[int, tuple[int, int, int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = _stat(int(entry.name))
            if stat is not None:
                table[int(entry.name)] = stat
    members = {pid} | {p for p, (_, group, session) in table.items() if group == pid or session == pid}
    grew = True
    while grew:
        more = {p for p, (parent, _, _) in table.items() if parent in members and p not in members}
        members |= more
        grew = bool(more)
    members.discard(os.getpid())
    return sorted(members)


def signal_all(members: list[int], sig: signal.Signals) -> None:
    """Send `sig` to each of `members` still there (one gone meanwhile, or not ours, is passed over)."""
    for member in members:
        try:
            os.kill(member, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_all(members: list[int]) -> None:
    """SIGKILL each of `members` still there."""
    signal_all(members, signal.SIGKILL)


def state(pid: int) -> str | None:
    """The process's state letter from /proc/PID/stat ("R", "S", "T" stopped, "Z" zombie...), or None when it is gone."""
    fields = _fields(pid)
    return fields[0] if fields else None


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(parent, process group, session) from /proc/PID/stat, or None for a process gone meanwhile."""
    fields = _fields(pid)
    return (int(fields[1]), int(fields[2]), int(fields[3])) if fields else None


def _fields(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (which may hold spaces and parentheses), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()
