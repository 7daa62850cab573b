"""The life of a server the sweep starts: refuse a busy address, start it under the watchdog, wait until it serves,
and end its whole process group, whatever happens to the sweep."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2

from hyperloom.core.errors import HyperloomError
from hyperloom.core.hashing import sha256_file

WATCHDOG = Path(__file__).with_name("watchdog.py")
_POLL_S = 0.25
_STOP_GRACE_S = 15.0


@dataclass
class StartedServer:
    command: list[str]
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:] if line.strip()) or "(empty log)"


def resolve_program(command: list[str], cwd: Path) -> Path:
    """The program the command runs, as a real file: a name is looked up on PATH, a path is taken from `cwd`."""
    program = command[0]
    found = (cwd / program) if "/" in program else (Path(p) if (p := shutil.which(program)) else None)
    if found is None or not found.is_file() or not os.access(found, os.X_OK):
        raise HyperloomError(f"server_command's program {program!r} was not found or is not executable",
                             "give its full path, or install it (scripts/serve/llama_server.sh builds llama.cpp's llama-server)")
    return found.resolve()


def command_identity(command: list[str], cwd: Path) -> dict[str, object]:
    """What makes a started server what it is, for the cache key: the arguments, the program's sha256, and the size
    and modification time of every argument that names a file (a model: hashing gigabytes on every call would cost more than the sweep)."""
    program = resolve_program(command, cwd)
    files = {}
    for arg in command[1:]:
        path = cwd / arg
        try:
            if len(arg) < 1024 and path.is_file():
                stat = path.stat()
                files[arg] = [stat.st_size, stat.st_mtime_ns]
        except OSError:
            continue
    return {"argv": command, "program_sha256": sha256_file(program), "files": files}


async def refuse_if_busy(client: httpx2.AsyncClient, base_url: str) -> None:
    """Something already answering at base_url would be swept instead of the server we start."""
    try:
        response = await client.get("/models", timeout=3.0)
    except httpx2.HTTPError:
        return
    raise HyperloomError(f"something already answers at {base_url} (HTTP {response.status_code} for /models) before server_command started",
                         "stop that server, or give server_command and base_url another port")


def start(command: list[str], cwd: Path, log_path: Path) -> StartedServer:
    """Start `command` in a new process group under the watchdog, its output into `log_path`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-I", str(WATCHDOG), str(os.getpid()), "--", *command],
            cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    return StartedServer(command, process, log_path)


async def wait_ready(server: StartedServer, client: httpx2.AsyncClient, base_url: str, timeout_s: float) -> None:
    """Poll base_url/models until it lists a model; the server exiting or the timeout is an error with its log."""
    deadline = time.monotonic() + timeout_s
    last = "no answer yet"
    while time.monotonic() < deadline:
        if (code := server.process.poll()) is not None:
            raise HyperloomError(f"server_command exited with status {code} before serving: {server.log_tail()}",
                                 f"run the command by hand to see why; its log is {server.log_path}")
        try:
            response = await client.get("/models", timeout=5.0)
            if response.status_code == 200 and isinstance(response.json().get("data"), list):
                return
            last = f"HTTP {response.status_code}"
        except (httpx2.HTTPError, ValueError, AttributeError) as exc:
            last = type(exc).__name__
        await anyio.sleep(_POLL_S)
    raise HyperloomError(f"the started server did not serve {base_url}/models within {timeout_s:g} s (last: {last}): {server.log_tail()}",
                         "check that server_command listens where base_url points, or raise ready_timeout_s")


def stop(server: StartedServer) -> None:
    """End the server's process group: SIGTERM through the watchdog, then SIGKILL to the group. Safe to call twice."""
    process = server.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=_STOP_GRACE_S + 5)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
