"""Shared fixtures: a fresh workspace per test and a one-line way to run the gate."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
import pytest

from hyperloom.core.workspace import WORKSPACE_ENV, Workspace


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setenv(WORKSPACE_ENV, str(root))
    monkeypatch.chdir(root)
    return Workspace(Path(os.path.realpath(root)))


@pytest.fixture
def user(workspace: Workspace) -> Workspace:
    """A workspace holding the workloads a user writes from the skill's page (tests/fixtures/twin: a plain decoder, a conv
    net, and the wrong candidates the twin rule must refuse)."""
    for source in (Path(__file__).parent / "fixtures" / "twin").glob("*.py"):
        shutil.copy(source, workspace.root / source.name)
    return workspace


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache folder, so no test sees another's (or the user's) cache."""
    folder = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("HYPERLOOM_CACHE_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def llama_server() -> str:
    """The llama-server's path, once a build .ci/run started beside the suite has ended (tests/llama_build.py)."""
    from llama_build import ready

    return ready()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that drive a llama-server run last, so a build .ci/run started beside the suite overlaps the rest
    (tests/llama_build.py); the order is otherwise kept."""
    from llama_build import FIXTURE

    items.sort(key=lambda item: FIXTURE in getattr(item, "fixturenames", ()))
