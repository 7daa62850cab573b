"""Core policies: workspace containment, atomic writes, toolchain discovery, evidence."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from helpers import FIXTURES
from hyperloom.core import toolchain
from hyperloom.core.atomic import staged_directory, write_bytes_atomic
from hyperloom.core.errors import HyperloomError
from hyperloom.core.evidence import Tag, measured
from hyperloom.core.workspace import Workspace


# ---------------------------------------------------------------- workspace


def test_relative_and_absolute_paths_inside_the_root_resolve(workspace):
    (workspace.root / "a").mkdir()
    (workspace.root / "a/f.npy").write_bytes(b"")
    assert workspace.resolve("a/f.npy") == workspace.root / "a/f.npy"
    assert workspace.resolve(str(workspace.root / "a/../a/f.npy")) == workspace.root / "a/f.npy"
    assert workspace.relative(workspace.resolve("a/f.npy")) == "a/f.npy"


@pytest.mark.parametrize("raw", ["..", "../x", "/etc/passwd", "a/../../x", "~/x"])
def test_paths_that_leave_the_root_are_refused(workspace, raw):
    with pytest.raises(HyperloomError, match="outside the workspace"):
        workspace.resolve(raw, must_exist=False)


def test_a_symlinked_folder_pointing_outside_is_refused(workspace, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/f.npy").write_bytes(b"")
    os.symlink(tmp_path / "elsewhere", workspace.root / "door")
    with pytest.raises(HyperloomError, match="outside the workspace"):
        workspace.resolve("door/f.npy")


@pytest.mark.parametrize("raw", ["", "   ", "a\x00b"])
def test_empty_or_nul_paths_are_refused(workspace, raw):
    with pytest.raises(HyperloomError):
        workspace.resolve(raw, must_exist=False)


def test_the_workspace_defaults_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("HYPERLOOM_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert Workspace.from_env().root == Path(os.path.realpath(tmp_path))


# ---------------------------------------------------------------- atomic writes


def test_an_atomic_write_replaces_the_file_whole(tmp_path):
    target = tmp_path / "f.json"
    write_bytes_atomic(target, b"one")
    write_bytes_atomic(target, b"two")
    assert target.read_bytes() == b"two" and [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_a_staged_directory_that_fails_leaves_the_old_one_untouched(tmp_path):
    final = tmp_path / "set"
    final.mkdir()
    (final / "keep").write_text("old")
    with pytest.raises(RuntimeError), staged_directory(final) as staging:
        (staging / "keep").write_text("new")
        raise RuntimeError("killed half way")
    assert (final / "keep").read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["set"]
    with staged_directory(final) as staging:
        (staging / "keep").write_text("new")
    assert (final / "keep").read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["set"]


# ---------------------------------------------------------------- toolchain


def _fake_tool(folder: Path, name: str, version_text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f"#!/bin/sh\n/bin/cat <<'EOF'\n{version_text}\nEOF\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def clean_path(tmp_path, monkeypatch):
    """A PATH holding only a folder of fake tools, with no LLVM or ROCm override set."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv(toolchain.LLVM_DIR_ENV, raising=False)
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "no-rocm"))
    return bin_dir


def test_llvm_dir_wins_over_versioned_names_which_win_over_plain_names(tmp_path, clean_path, monkeypatch):
    llvm19 = (FIXTURES / "versions/llvm-mc-19.txt").read_text()
    _fake_tool(clean_path, "llvm-mc", llvm19.replace("19.1.7", "15.0.0"))
    assert toolchain.find_tool("llvm-mc").found_by == "PATH"
    _fake_tool(clean_path, "llvm-mc-19", llvm19)
    _fake_tool(clean_path, "llvm-mc-20", llvm19.replace("19.1.7", "20.1.2"))
    newest = toolchain.find_tool("llvm-mc")
    assert newest.version == "20.1.2" and newest.found_by == "PATH (llvm-mc-20)"
    _fake_tool(tmp_path / "no-rocm/llvm/bin", "llvm-mc", llvm19.replace("19.1.7", "18.0.0"))
    assert toolchain.find_tool("llvm-mc").found_by == "ROCM_PATH/llvm/bin"
    _fake_tool(tmp_path / "mine", "llvm-mc", llvm19.replace("19.1.7", "22.1.8"))
    monkeypatch.setenv(toolchain.LLVM_DIR_ENV, str(tmp_path / "mine"))
    chosen = toolchain.find_tool("llvm-mc")
    assert (chosen.found_by, chosen.version) == (toolchain.LLVM_DIR_ENV, "22.1.8")


def test_a_search_is_reused_until_a_folder_it_looked_in_or_the_file_it_found_changes(clean_path, monkeypatch):
    llvm19 = (FIXTURES / "versions/llvm-mc-19.txt").read_text()
    tool = _fake_tool(clean_path, "llvm-mc", llvm19)
    searches = []
    search = toolchain._search
    monkeypatch.setattr(toolchain, "_search", lambda *a: searches.append(a[0].name) or search(*a))
    an_hour_ago_ns = time.time_ns() - 3600 * 10**9

    def settle() -> None:  # changes older than the racy window, as a machine's folders are between a session's candidates
        os.utime(tool, ns=(an_hour_ago_ns, an_hour_ago_ns))
        os.utime(clean_path, ns=(an_hour_ago_ns, an_hour_ago_ns))

    settle()
    assert [toolchain.find_tool("llvm-mc").version for _ in range(3)] == ["19.1.7"] * 3 and len(searches) == 1
    _fake_tool(clean_path, "llvm-mc-20", llvm19.replace("19.1.7", "20.1.2"))  # a folder it looked in changed
    assert toolchain.find_tool("llvm-mc").version == "20.1.2" and len(searches) == 2
    (clean_path / "llvm-mc-20").unlink()
    settle()
    assert toolchain.find_tool("llvm-mc").version == "19.1.7" and len(searches) == 3
    assert toolchain.find_tool("llvm-mc").version == "19.1.7" and len(searches) == 3
    tool.write_text(tool.read_text().replace("19.1.7", "19.1.8"))  # rewritten in place: the folder is as it was
    os.utime(clean_path, ns=(an_hour_ago_ns, an_hour_ago_ns))
    assert toolchain.find_tool("llvm-mc").version == "19.1.8" and len(searches) == 4
    assert toolchain.find_tool("llvm-mc", version_timeout_s=None).version is None and len(searches) == 5  # another question


def test_a_missing_tool_says_how_to_get_it(clean_path):
    assert toolchain.find_tool("llvm-mc").path is None
    with pytest.raises(HyperloomError, match="apt-get install llvm-19.*HYPERLOOM_LLVM_DIR"):
        toolchain.require_tool("llvm-mc")


@pytest.mark.parametrize(
    ("fixture", "version"),
    [("llvm-mc-19.txt", "19.1.7"), ("clang-19.txt", "19.1.7"), ("ld.lld-19.txt", "19.1.7"), ("nvcc-13.0.txt", "13.0")],
)
def test_versions_parse_from_real_tool_output(fixture, version):
    assert toolchain.parse_version((FIXTURES / "versions" / fixture).read_text())[0] == version


# ---------------------------------------------------------------- evidence and errors


def test_measured_evidence_carries_the_tool_version_and_utc_time():
    evidence = measured("correctness_gate", inputs_sha256="0" * 64, target="gfx1201", toolchain={"numpy": "2"})
    assert evidence.tag is Tag.MEASURED and evidence.source.startswith("hyperloom.correctness_gate ")
    assert evidence.at.utcoffset().total_seconds() == 0 and evidence.toolchain["numpy"] == "2"
    assert evidence.device.startswith("host CPU")


def test_an_error_reads_as_cause_then_next_step():
    error = HyperloomError("llvm-mc was not found.", "install llvm-19")
    assert str(error) == "llvm-mc was not found. Next step: install llvm-19."


def test_a_staged_directory_gets_ordinary_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        with staged_directory(tmp_path / "set") as staging:
            (staging / "f").write_text("x")
    finally:
        os.umask(old)
    assert (tmp_path / "set").stat().st_mode & 0o777 == 0o755


def test_a_shipped_kernel_file_is_staged_once_and_restored_when_its_copy_changed(tmp_path):
    from hyperloom.core.shipped import shipped_kernels, stage_shipped_file

    shipped = shipped_kernels("runtime", "timing.hip").read_bytes()
    staged = stage_shipped_file(tmp_path / "deep" / "folder", "runtime", "timing.hip")
    assert staged == tmp_path / "deep" / "folder" / "timing.hip" and staged.read_bytes() == shipped
    mtime = staged.stat().st_mtime_ns
    assert stage_shipped_file(tmp_path / "deep" / "folder", "runtime", "timing.hip").stat().st_mtime_ns == mtime  # identical: untouched
    staged.write_bytes(b"// edited\n")
    assert stage_shipped_file(tmp_path / "deep" / "folder", "runtime", "timing.hip").read_bytes() == shipped
