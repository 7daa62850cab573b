"""The wheel installs one namespace, `hyperloom`, and works from outside the repository."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

import hyperloom
from helpers import REPO

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True, timeout=300, capture_output=True,
    )
    (built,) = out.glob("hyperloom-*.whl")
    return built


def test_the_wheel_installs_only_the_hyperloom_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names}
    assert {t for t in top_level if not t.endswith(".dist-info")} == {"hyperloom"}
    for expected in (
        "hyperloom/tools/gate/check.py",
        "hyperloom/mcp_server/server.py",
        "hyperloom/validators/reference_set.schema.json",
        "hyperloom/tools/isa/census.py",
        "hyperloom/validators/isa_census.schema.json",
        "hyperloom/cli/main.py",
        "hyperloom/skill/hyperloom-kernel-optimizer/SKILL.md",
        "hyperloom/skill/hyperloom-kernel-optimizer/evals/evals.json",
    ):
        assert expected in names
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "hyperloom = hyperloom.cli.main:main" in text and "hyperloom-mcp = hyperloom.mcp_server.server:main" in text
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert f"\nVersion: {hyperloom.__version__}\n" in metadata  # hatch reads the version from hyperloom/__init__.py


def test_the_installed_wheel_imports_from_any_directory(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)], check=True,
                   timeout=300)
    probe = (
        "import importlib.util, hyperloom.tools.gate.check, hyperloom.mcp_server.server, hyperloom.validators.schemas;"
        "assert hyperloom.__file__.startswith(%r);"
        "assert all(importlib.util.find_spec(m) is None for m in ('tools', 'validators', 'mcp_server'));"
        "print(hyperloom.validators.schemas.load_schema('reference_set')['$id'])"
    ) % str(target)
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target)}, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "hyperloom.reference_set/1"
