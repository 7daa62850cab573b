"""The llama-server the serve tests drive: its path from HYPERLOOM_TEST_LLAMA_SERVER, and, where .ci/run builds it beside
the suite (HYPERLOOM_TEST_LLAMA_SERVER_BUILD: the build's pid, at the lowest priority, about 8 minutes on 2 cores), a
wait for that build. A module that needs it sets `pytestmark = llama_build.NEEDED`: skipped where none is here or on its
way, else run last (conftest.py orders by the fixture) and after the build, so the build overlaps the rest of the suite."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

PATH = os.environ.get("HYPERLOOM_TEST_LLAMA_SERVER", "")
BUILD_PID = int(os.environ.get("HYPERLOOM_TEST_LLAMA_SERVER_BUILD", "0") or 0)
BUILD_LOG = os.environ.get("HYPERLOOM_TEST_LLAMA_SERVER_LOG", "")
FIXTURE = "llama_server"  # conftest.py's: waits for the build; the tests that use it run last
WAIT_S = 3600.0
POLL_S = 2.0
SKIP_REASON = "no llama-server: run `bash scripts/serve/llama_server.sh` and set HYPERLOOM_TEST_LLAMA_SERVER to the path it prints"


def building() -> bool:
    """Whether the build this run started is still going (a process that ended but is not yet reaped has ended)."""
    try:
        return bool(BUILD_PID) and Path(f"/proc/{BUILD_PID}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def expected() -> bool:
    """Whether a llama-server is here or on its way: the tests that need it are collected, else skipped."""
    return bool(PATH) and (Path(PATH).is_file() or building())


def ready(wait_s: float = WAIT_S) -> str:
    """The binary's path once the build that makes it has ended; a build that ended without it fails the test with its
    log's tail, not a skip (CI asked for these tests)."""
    deadline = time.monotonic() + wait_s
    while not Path(PATH).is_file() and building() and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if not Path(PATH).is_file():
        tail = Path(BUILD_LOG).read_text(errors="replace")[-2000:] if BUILD_LOG and Path(BUILD_LOG).is_file() else "no log"
        pytest.fail(f"the llama-server build started beside the suite ended without {PATH}:\n{tail}")
    return PATH


NEEDED = [pytest.mark.skipif(not expected(), reason=SKIP_REASON), pytest.mark.usefixtures(FIXTURE)]
