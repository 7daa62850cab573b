"""The linter over the whole tree, as .ci/run runs it: ruff check with pyproject.toml's [tool.ruff] (pyflakes, syntax
errors, whitespace, lines up to 140 characters), so a new long line or an unused import fails the suite too.

ruff comes with the test extra; without it these tests are skipped. Both run in well under a second.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> str | None:
    """The ruff of this interpreter's environment (the test extra installs it there), else one on PATH."""
    try:
        from ruff.__main__ import find_ruff_bin
    except ImportError:
        return shutil.which("ruff")
    try:
        return str(find_ruff_bin())
    except FileNotFoundError:
        return shutil.which("ruff")


RUFF = _ruff()
pytestmark = pytest.mark.skipif(RUFF is None, reason="ruff is not installed (the test extra brings it: pip install -e '.[test]')")


def _check(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # --no-cache: no .ruff_cache left in the repository; the whole tree takes a fraction of a second anyway.
    return subprocess.run([RUFF, "check", "--no-cache", "--output-format", "concise", *args], cwd=REPO, input=stdin,
                          capture_output=True, text=True, timeout=120)


def test_the_tree_passes_ruff_check():
    result = _check(".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_line_over_140_characters_fails_the_check():
    """The repository's configuration is the one in force: 140 characters pass, 141 do not."""
    ok = 'x = "' + "a" * 134 + '"\n'
    assert len(ok) - 1 == 140
    assert _check("--stdin-filename", "tools/long_line_probe.py", "-", stdin=ok).returncode == 0
    long = 'x = "' + "a" * 135 + '"\n'
    result = _check("--stdin-filename", "tools/long_line_probe.py", "-", stdin=long)
    assert result.returncode == 1 and "E501" in result.stdout, result.stdout + result.stderr
