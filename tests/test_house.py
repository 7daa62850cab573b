"""The house's proportions, kept: small modules, short parameter lists, and the workload's two rooms (the controller
and the worker) apart, with what crosses between them declared once in tools/workload/wire.py.

Each check reads the source (ast), so it costs nothing at run time and fails on the file and line that break it."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from test_layers import imported

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO / "tools"
WORKLOAD = TOOLS / "workload"
WORKER = WORKLOAD / "worker"
MAX_LINES = 600  # a module past this is two ideas (STYLE.md: about 400 is the sign)
MAX_PARAMETERS = 10  # a function past this wants a parameter object (STYLE.md: about 8)
MAX_WORKLOAD_MODULES = 25  # tools/workload/'s top level; the rest by room and idea (worker/, gate/, checks/)
# What both rooms read: the wire, the lever catalog (kinds the worker applies), a profiled step's work (weighed in the
# worker on a CPU, read by the controller) and the models it is made of.
SHARED = {"hyperloom.tools.workload.wire", "hyperloom.tools.workload.levers", "hyperloom.tools.workload.work",
          "hyperloom.tools.workload.models"}
DOORS = {"overrides.py"}  # the public name an overrides module imports `replace` by (the code is worker/overrides.py)


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """A function's parameters by name, *args and **kwargs included, a method's self or cls left out."""
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)] + [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def too_many_parameters(root: Path, limit: int) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and len(parameters(node)) > limit:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} takes {len(parameters(node))}")
    return found


def too_long(root: Path, limit: int) -> list[str]:
    return [f"{path.relative_to(root)}: {n} lines" for path in sorted(root.rglob("*.py"))
            if (n := len(path.read_text().splitlines())) > limit]


def workload_imports(path: Path, package: str | None = None) -> set[str]:
    """The modules of hyperloom.tools.workload that `path` (a file of `package`, by default its folder's) imports: every
    import, a function's too; `from a.b import name` counts as a.b where a/b/name.py is no file of the repository."""
    package = package or ".".join(["hyperloom", *path.parent.relative_to(REPO).parts])
    names = {candidates[0] for candidates in imported(path, package)}
    found = set()
    for name in names:
        if not name.startswith("hyperloom.tools.workload."):
            continue
        module = name
        while module.count(".") > 3 and not (REPO / Path(*module.split(".")[1:])).with_suffix(".py").is_file() \
                and not (REPO / Path(*module.split(".")[1:]) / "__init__.py").is_file():
            module = module.rpartition(".")[0]  # `from a.b import name`: the module a.b
        found.add(module)
    return found


def test_no_module_under_tools_passes_600_lines():
    assert too_long(TOOLS, MAX_LINES) == []


def test_no_function_under_tools_takes_more_than_10_parameters():
    assert too_many_parameters(TOOLS, MAX_PARAMETERS) == []


def test_the_checks_find_a_long_module_and_a_long_parameter_list(tmp_path):
    (tmp_path / "long.py").write_text("x = 1\n" * 7)
    (tmp_path / "wide.py").write_text("class A:\n    def m(self, a, b, *c, d, **e):\n        pass\n\ndef f(a, b, c):\n    pass\n")
    assert too_long(tmp_path, 6) == ["long.py: 7 lines"]
    assert too_many_parameters(tmp_path, 4) == ["wide.py:2 m takes 5"]


def test_the_workload_folder_keeps_at_most_25_modules_at_its_top_level():
    top = sorted(p.name for p in WORKLOAD.glob("*.py"))
    assert len(top) <= MAX_WORKLOAD_MODULES, top


def test_the_worker_imports_only_its_own_room_and_what_both_rooms_share():
    wrong = {f"{path.relative_to(TOOLS)} imports {module}" for path in WORKER.rglob("*.py") for module in workload_imports(path)
             if not module.startswith("hyperloom.tools.workload.worker") and module not in SHARED}
    assert not wrong, sorted(wrong)


def test_the_controller_reaches_the_worker_only_through_the_wire():
    controller = [p for p in TOOLS.rglob("*.py") if WORKER not in p.parents and not (p.parent == WORKLOAD and p.name in DOORS)]
    wrong = {f"{path.relative_to(TOOLS)} imports {module}" for path in controller for module in workload_imports(path)
             if module.startswith("hyperloom.tools.workload.worker")}
    assert not wrong, sorted(wrong)


def test_the_rooms_check_sees_a_function_level_import_of_the_worker_and_a_name_from_the_wire(tmp_path):
    reaching = tmp_path / "ab.py"
    reaching.write_text("from hyperloom.tools.workload.wire import RUNNER\n\ndef f():\n    from hyperloom.tools.workload.worker.runner "
                        "import time_steps\n")
    assert workload_imports(reaching, "hyperloom.tools.workload") == {"hyperloom.tools.workload.wire",
                                                                      "hyperloom.tools.workload.worker.runner"}


def test_every_entry_the_controller_calls_is_on_the_wire_and_in_the_runner():
    from hyperloom.tools.workload import wire
    from hyperloom.tools.workload.worker import runner

    called = {node.args[0].value for node in ast.walk(ast.parse((WORKLOAD / "process.py").read_text()))
              if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "_call" and isinstance(node.args[0], ast.Constant)}
    assert called == set(wire.ENTRIES), called ^ set(wire.ENTRIES)
    assert all(callable(getattr(runner, entry, None)) for entry in wire.ENTRIES)
    assert wire.RUNNER == runner.__name__


# What every device run uses (prepare.sh here, env.sh there) and the workloads nobody here wrote with their two
# drivers; a probe goes to lab/<question>/, a past results page's driver to lab/device-runs/.
DEVICE_KIT = {"prepare.sh", "env.sh", "user_workloads", "user_workloads.sh", "user_campaign.sh"}


def tracked(pattern: str) -> list[str]:
    return subprocess.run(["git", "ls-files", "--", pattern], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def test_the_device_folder_holds_only_what_every_run_uses_and_no_session_log_or_pid_is_kept():
    assert {p.name for p in (REPO / "scripts" / "device").iterdir()} - {"__pycache__"} == DEVICE_KIT
    assert tracked("*.pid") == [] and tracked("*.run[0-9]*.sh") == [], "session logs and pid files live in git history, not the tree"
