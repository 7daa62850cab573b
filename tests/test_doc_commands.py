"""Every command README.md, the pages under docs/ and SKILL.md give in a fenced shell block runs as written, after setup,
in a fresh shell; and every `hyperloom …` command README.md, docs/, the skill's pages and the examples' docstrings write,
usage lines included, is one the CLI's parser takes (tests/doc_usage.py reads them).

After setup means a clone with its `.venv` (scripts/setup.sh's); the clone here is a copy of this working tree whose
`.venv` is the environment running these tests (in CI, the clone's own .venv; on a development machine, whatever runs
pytest, with PYTHONPATH passed on so that it imports this tree). A fresh shell is `bash --noprofile --norc` with a bare
environment and a new HOME, which activates the venv first, as README says to in each new shell.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from doc_usage import documented, expansions, lenient
from helpers import FIXTURES, REPO
from hyperloom.cli.tree import build_parser, choose

SKILL_MD = REPO / "skill" / "hyperloom-kernel-optimizer" / "SKILL.md"
PAGES = sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))  # README's pages by topic; run from the clone
DOCS = {"README.md": REPO / "README.md", **{page: REPO / page for page in PAGES}, "SKILL.md": SKILL_MD}
SHELL_BLOCKS = {"bash", "sh", "shell"}
FRESH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Debian's default for a login shell
FENCE_RE = re.compile(r"^(?P<indent> *)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)

_CLAUDE = "needs Claude Code, installed from npm (network); tests/test_hosts.py runs it where `claude` is installed"
# Commands that cannot run here, with the reason. Every other line of a fenced shell block must run.
SKIPPED = {
    "bash scripts/demo.sh": "network: its setup.sh installs LLVM 19 with apt-get and the package with pip from the index "
                            "(tests/test_demo.py runs the demo)",
    "bash .ci/run": "network (apt-get, pip, the llama.cpp sdist), and it runs this test suite itself",
    "bash scripts/setup.sh --llvm": "network: apt-get and pip; these commands run in the environment it made",
    ".venv/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu": "network: pip downloads torch (the test extra's "
                                                                                    "environment has it)",
    ".venv/bin/pip install transformers": "network: pip downloads transformers (the test extra's environment has it)",
    "claude plugin marketplace add /path/to/hyperloom": _CLAUDE,
    "claude plugin install hyperloom@hyperloom": _CLAUDE,
    "hyperloom bench --spec norm/rms_norm_f32 --target sm_90": "needs an NVIDIA GPU (sm_90)",
    "hyperloom bench --spec kernels/decode/w4a8 --target sm_90 --shape 0": "needs an H200 (sm_90)",
    "lemonade-server serve --ctx-size 8192": "needs Lemonade Server installed, and a model it downloads",
    "llama-server -m qwen2.5-7b-instruct-q4_k_m.gguf --jinja -c 8192 --port 8080": "needs a real instruct GGUF (gigabytes, "
                                                                                   "from the network)",
    ".venv/bin/pip install -q --no-deps --no-build-isolation . && .venv/bin/python -m pytest -q":
        "reinstalls the package into the environment running these tests, then runs the whole suite, this test included",
}
# Commands whose documented outcome is a failing verdict (exit 1), with why. Every other command must exit 0.
FAILING_VERDICT = {
    "hyperloom spec check --spec norm/rms_norm_f32 --target sm_90": "a fresh spec_init draft has placeholders to fill, which "
                                                                    "the check lists",
}


@dataclass(frozen=True)
class Command:
    doc: str
    line: int
    text: str  # without its trailing comment

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def shell_commands(doc: str) -> list[Command]:
    """The command lines of the doc's fenced shell blocks (comments and blank lines left out, continuations joined)."""
    text = DOCS[doc].read_text()
    out = []
    for block in FENCE_RE.finditer(text):
        if block.group("info").strip() not in SHELL_BLOCKS:
            continue
        first = text.count("\n", 0, block.start("body")) + 1
        pending = ""
        for offset, raw in enumerate(block.group("body").splitlines()):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            pending += line.removesuffix("\\").rstrip() + " " if line.endswith("\\") else line
            if line.endswith("\\"):
                continue
            out.append(Command(doc, first + offset, re.split(r"\s{2,}#|\s#\s", pending, maxsplit=1)[0].strip()))
            pending = ""
    return out


ALL = [c for doc in DOCS for c in shell_commands(doc)]


def test_every_fenced_block_says_what_it_holds():
    for doc, path in DOCS.items():
        for block in FENCE_RE.finditer(path.read_text()):
            assert block.group("info").strip(), (f"{doc}: a fenced block without a language (bash for commands, text, toml …): "
                                                 f"{block.group('body')[:80]!r}")


def test_the_skip_lists_name_only_commands_the_docs_give():
    given = {c.text for c in ALL}
    assert set(SKIPPED) <= given and set(FAILING_VERDICT) <= given, (set(SKIPPED) | set(FAILING_VERDICT)) - given
    assert len([c for c in ALL if c.text not in SKIPPED]) >= 12  # the parser finds the blocks
    # The fresh shell activates the venv because README tells the reader to, in a block of its own.
    assert ". .venv/bin/activate" in {c.text for c in shell_commands("README.md")}


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """This working tree as a clone after setup: its files (tracked and new, not ignored) and a .venv."""
    root = tmp_path_factory.mktemp("docs") / "hyperloom"
    listed = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, check=True,
                            timeout=60).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name, follow_symlinks=False)
    (root / ".venv").symlink_to(Path(sys.prefix))
    _stage_user_files(root)
    return root


def _stage_user_files(root: Path) -> None:
    """The files the docs' commands name as the user's own: a kernel to bring in, and the gate example's arrays."""
    (root / "norm").mkdir()
    shutil.copy(FIXTURES / "docs" / "norm.cu", root / "norm" / "norm.cu")
    workspace = root.parent / "workspace"  # SKILL.md's commands run in the user's workspace
    workspace.mkdir()
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 256)).astype(np.float32)
    np.save(workspace / "x.npy", x)
    for case in ("case0", "edge"):
        reference = (x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)).astype(np.float32)
        reference = reference if case == "case0" else np.zeros_like(reference)
        np.save(workspace / f"ref_{case}.npy", reference)
        np.save(workspace / f"out_{case}.npy", (reference + np.float32(1e-4) * rng.standard_normal(reference.shape)).astype(np.float32))


def _fresh_shell(command: str, cwd: Path, venv: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": FRESH_PATH, "LANG": "C.UTF-8"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # a development overlay of this tree; unset in CI
    script = f". {shlex.quote(str(venv / 'bin' / 'activate'))}\n{command}\n"
    return subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.timeout(900)  # README runs a workload freeze and bench on the CPU (about 75 s alone) beside the first hour
@pytest.mark.parametrize("doc", list(DOCS))
def test_every_command_of_the_docs_runs_as_written_after_setup(clone, doc, tmp_path):
    cwd = clone.parent / "workspace" if doc == "SKILL.md" else clone  # SKILL.md's commands run in the user's workspace
    ran = []
    for command in shell_commands(doc):
        if command.text in SKIPPED:
            continue
        proc = _fresh_shell(command.text, cwd, clone / ".venv", tmp_path / "home")
        expected = 1 if command.text in FAILING_VERDICT else 0
        assert proc.returncode == expected, (f"{command}\nexit {proc.returncode}, expected "
                                             f"{expected}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
        assert "Traceback" not in proc.stderr, f"{command}\n{proc.stderr[-2000:]}"
        ran.append(command)
    assert ran or doc in PAGES, f"{doc} gives no command that runs here"  # a page may give only commands for other machines


# --- every command the docs write, run or not, usage lines included: the CLI's parser takes it --------------------------

PARSED_DOCS = ["README.md", *PAGES, *sorted(str(p.relative_to(REPO)) for p in (REPO / "skill" / "hyperloom-kernel-optimizer").glob("*.md")),
               *sorted(str(p.relative_to(REPO)) for p in (REPO / "examples").rglob("*.py"))]
DOCUMENTED = documented(REPO, PARSED_DOCS)


def cli_refusal(argv: list[str]) -> str | None:
    """What the real parser says against `argv` (placeholders taken as values); None when it takes it. A command named
    by its words alone (`hyperloom gate check`) is prose about the command: its required options may be left out."""
    chosen, words = choose(argv)
    parser = lenient(build_parser(chosen, every=False))
    error = io.StringIO()
    try:
        with contextlib.redirect_stderr(error), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(words)
    except SystemExit as exc:
        said = (error.getvalue().strip().splitlines() or [f"exit {exc.code}"])[-1]
        named_only = len(argv) <= len(chosen) and "the following arguments are required" in said
        return None if exc.code == 0 or named_only else said
    return None


def test_the_docs_give_commands_in_prose_blocks_and_docstrings_and_the_reader_finds_them():
    where = {c.doc for c in DOCUMENTED}
    assert {"README.md", "skill/hyperloom-kernel-optimizer/SKILL.md", "skill/hyperloom-kernel-optimizer/workload.md",
            "examples/workloads/decoder.py"} <= where
    assert {c.text for c in DOCUMENTED} >= {c.text for c in ALL if c.text.startswith("hyperloom ")}  # the fenced blocks' lines too
    assert len(DOCUMENTED) >= 60


def test_a_command_continued_over_lines_with_a_backslash_is_read_whole():
    from doc_usage import in_docstrings

    source = '"""Run:\n\n    hyperloom workload bench --name a \\\\\n        --candidate compile\n    hyperloom doctor\n"""\n'
    assert [(c.line, c.text) for c in in_docstrings("f.py", source)] == [
        (3, "hyperloom workload bench --name a --candidate compile"), (5, "hyperloom doctor")]


@pytest.mark.parametrize(("usage", "commands"), [
    ("hyperloom tune status|stop|report --session NAME", [["tune", s, "--session", "NAME"] for s in ("status", "stop", "report")]),
    ("hyperloom census TARGET… [--detail \\| --match TEXT]",
     [["census", "TARGET"], ["census", "TARGET", "--detail"], ["census", "TARGET", "--match", "TEXT"]]),
    ("hyperloom profile [WORKLOAD [ARG …]]", [["profile"], ["profile", "WORKLOAD"], ["profile", "WORKLOAD", "ARG"]]),
    ("hyperloom uninstall claude [--scope …]", [["uninstall", "claude"], ["uninstall", "claude", "--scope", "VALUE"]]),
    ("hyperloom workload bench --candidate '[\"a|b\"]'", [["workload", "bench", "--candidate", '["a|b"]']]),
])
def test_a_usage_line_stands_for_each_command_its_groups_and_alternatives_allow(usage, commands):
    assert expansions(usage) == commands


@pytest.mark.parametrize(("argv", "refused"), [
    (["workload", "bench", "--name", "N", "--candidates", '[["compile"]]'], "unrecognized arguments: --candidates"),  # issue 47's
    (["bench", "--spec", "S", "--target", "T", "--shape", "first"], "invalid int value: 'first'"),
    (["tune", "start", "--spec", "S", "--strategy", "annealing"], "invalid choice: 'annealing'"),
    (["gate", "check", "--candidate", "a.npy"], None),  # its references come from --reference or --reference-set
    (["workload", "bench"], None),  # the command named by its words: prose about it
    (["workload", "bench", "--candidate", '["compile"]'], "the following arguments are required: --name"),  # a call, without its session
    (["bench", "--spec", "S", "--target", "T", "--shape", "I"], None),  # a placeholder where an int goes
])
def test_the_parser_refuses_what_the_cli_refuses_and_takes_placeholders(argv, refused):
    said = cli_refusal(argv)
    assert (said is None) if refused is None else (said is not None and refused in said), said


@pytest.mark.parametrize("command", DOCUMENTED, ids=str)
def test_every_command_the_docs_skill_and_examples_write_is_one_the_cli_takes(command):
    for argv in expansions(command.text):
        said = cli_refusal(argv)
        assert said is None, f"{command}\n  as {shlex.join(argv)}\n  {said}"
