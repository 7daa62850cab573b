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


def kill_all(members: list[int]) -> None:
    """SIGKILL each of `members` still there (one gone meanwhile, or not ours, is passed over)."""
    for member in members:
        try:
            os.kill(member, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _stat(pid: int) -> tuple[int, int, int] | None:
    """(parent, process group, session) from /proc/PID/stat, or None for a process gone meanwhile."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode(errors="replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    return int(fields[1]), int(fields[2]), int(fields[3])
