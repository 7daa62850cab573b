"""The code forms an acyclic graph, at two scales: the tool folders stand on a ladder (each imports only the rungs below
its own: the pipeline and the runtime low, the tools that judge candidates above them, the workload and the campaign
over it on top), and inside a folder no two files import each other, even by way of others.

Every import counts, at module level, inside functions and under TYPE_CHECKING: a cycle kept from failing at
load time by a function-level import is still a cycle. A language or backend above the pipeline plugs in by name
(tools/pipeline/languages.py, tools/runtime/worker.py), which is no import.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO / "tools"
LADDER = (  # bottom to top: a folder imports only folders on the rungs below its own
    ("smi", "codeobj"),  # what the device's management tool and a code object say
    ("isa", "detect", "gate"),  # the instruction set, the machine found, the correctness gate
    ("compile", "verify", "runtime"),  # build, check the binary's ISA, load and time it in a worker
    ("kernelspec",),  # the kernel.yaml a candidate is judged by
    ("pipeline",),  # build -> verify -> gate -> time, the same under every tool that judges a candidate
    ("bench", "spec", "triton", "allreduce", "serve"),  # the tools on the pipeline, and those beside it
    ("roofline", "tune"),  # a kernel placed against its measured roof; the search over candidates
    ("profile",),  # a model's hotspots, each against the roofline
    ("workload",),  # the user's model: freeze, levers, the gated A/B
    ("optimize",),  # the campaign over workloads
)
BELOW_THE_PIPELINE = tuple(folder for rung in LADDER[: LADDER.index(("pipeline",))] for folder in rung)
# Where the modules live, and the name each folder is imported as.
PACKAGES = {"tools": "hyperloom.tools", "src/hyperloom": "hyperloom", "mcp_server": "hyperloom.mcp_server",
            "validators": "hyperloom.validators"}


def imported(path: Path, package: str) -> list[list[str]]:
    """What each import statement in `path` (a file of `package`) names, relative imports made absolute: for
    `from a.b import c`, the candidates ["a.b.c", "a.b"] (c is a module, or a name defined in a.b), first match wins."""
    found: list[list[str]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [[alias.name] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from . import x (level 1: this file's package), from ..y import z (level 2: its parent)
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found += [[f"{base}.{alias.name}", base] for alias in node.names]
    return found


def folder_edges(tools: Path) -> dict[str, dict[str, set[str]]]:
    """{folder: {imported folder: files that import it}} over every import statement in tools/<folder>/**.py."""
    edges: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    folders = {p.name for p in tools.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    for path in tools.rglob("*.py"):
        parts = path.relative_to(tools).parts
        if len(parts) < 2:
            continue
        package = ".".join(["hyperloom", "tools", *parts[:-1]])
        for candidates in imported(path, package):
            pieces = candidates[0].split(".")
            if pieces[:2] == ["hyperloom", "tools"] and len(pieces) > 2 and pieces[2] in folders and pieces[2] != parts[0]:
                edges[parts[0]][pieces[2]].add(str(path.relative_to(tools)))
    return edges


def module_edges(root: Path, package: str) -> dict[str, dict[str, set[str]]]:
    """{module: {imported module: the importing file}} between the files under `root` (imported as `package`).

    `from a.b import c` reaches the file a/b/c.py when there is one, else a/b (c is a name defined there); a name
    that is no file of ours (`import numpy`) is left out."""
    modules: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])] = path
    edges: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for module, path in modules.items():
        here = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for candidates in imported(path, here):
            name = next((c for c in candidates if c in modules), candidates[-1])
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                edges[module][name].add(str(path.relative_to(root)))
    return edges


def cycles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in edges.get(node, {}):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def off_the_ladder(edges: dict[str, dict[str, set[str]]], ladder: tuple[tuple[str, ...], ...]) -> list[str]:
    """Each import of a folder on the same rung or a higher one, with the files that make it."""
    rung = {folder: height for height, folders in enumerate(ladder) for folder in folders}
    return [f"{a} (rung {rung[a]}) imports {b} (rung {rung[b]}): {sorted(files)}"
            for a, imported in sorted(edges.items()) for b, files in sorted(imported.items()) if rung[b] >= rung[a]]


def describe(found: list[list[str]], edges: dict[str, dict[str, set[str]]]) -> list[str]:
    return [f"{a} -> {b}: {sorted(files)}" for component in found for a in component for b, files in edges[a].items() if b in component]


def tree(root: Path, files: dict[str, str]) -> Path:
    """A package tree under `root` from {relative path: source}, every folder with its __init__.py."""
    for name, body in files.items():
        path = root / name
        for folder in [root, *reversed(path.relative_to(root).parents[:-1])]:
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / "__init__.py").touch()
        path.write_text(body)
    return root


def test_the_tool_folders_import_each_other_without_a_cycle():
    edges = folder_edges(TOOLS)
    found = cycles(edges)
    assert not found, "import cycle between tool folders:\n" + "\n".join(describe(found, edges))


def test_every_tool_folder_stands_on_exactly_one_rung_of_the_ladder():
    folders = sorted(p.name for p in TOOLS.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    placed = [folder for rung in LADDER for folder in rung]
    assert sorted(placed) == sorted(set(placed)), "a folder stands on two rungs"
    assert folders == sorted(placed), (f"not on the ladder: {sorted(set(folders) - set(placed))}; on it but gone: "
                                       f"{sorted(set(placed) - set(folders))}")


def test_each_tool_folder_imports_only_the_rungs_below_its_own():
    assert off_the_ladder(folder_edges(TOOLS), LADDER) == []


def test_the_pipeline_imports_only_what_lies_below_it():
    edges = folder_edges(TOOLS)
    assert set(edges["pipeline"]) <= set(BELOW_THE_PIPELINE), {k: sorted(v) for k, v in edges["pipeline"].items()
                                                                                   if k not in BELOW_THE_PIPELINE}


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_the_files_import_each_other_without_a_cycle(folder):
    edges = module_edges(REPO / folder, PACKAGES[folder])
    found = cycles(edges)
    assert not found, (f"import cycle between files of {folder}/ (move what both need into a module below "
                       "them):\n") + "\n".join(describe(found, edges))


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    for folder, body in {"a": "from hyperloom.tools.b.x import y\n", "b": "def late():\n    from hyperloom.tools.a.m import n\n",
                         "c": ""}.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "m.py").write_text(body)
    assert cycles(folder_edges(tmp_path)) == [["a", "b"]]


def test_a_type_checking_import_counts_too(tmp_path):
    for folder, body in {"a": "from hyperloom.tools.b import x\n",
                         "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import hyperloom.tools.a.m\n"}.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "m.py").write_text(body)
    assert cycles(folder_edges(tmp_path)) == [["a", "b"]]


def test_a_file_level_cycle_inside_one_folder_is_found_where_the_folder_check_sees_none(tmp_path):
    # census.py defers its import of measure.py into a function; measure.py imports census.py at the top (the shape
    # tools/isa had); and a three-file ring through relative imports, in a subfolder.
    root = tree(tmp_path / "tools", {
        "isa/census.py": "def census():\n    from hyperloom.tools.isa.measure import measure\n",
        "isa/measure.py": "from hyperloom.tools.isa.census import census\n",
        "isa/models.py": "FORMAT = 1\n",
        "pipeline/sub/one.py": "from .two import x\n",
        "pipeline/sub/two.py": "from . import three\n",
        "pipeline/sub/three.py": "from ..sub.one import y\nfrom hyperloom.tools.isa import models\n",
    })
    assert cycles(folder_edges(root)) == []
    edges = module_edges(root, "hyperloom.tools")
    assert cycles(edges) == [
        ["hyperloom.tools.isa.census", "hyperloom.tools.isa.measure"],
        ["hyperloom.tools.pipeline.sub.one", "hyperloom.tools.pipeline.sub.three", "hyperloom.tools.pipeline.sub.two"],
    ]
    assert "isa/census.py" in edges["hyperloom.tools.isa.census"]["hyperloom.tools.isa.measure"]
    assert set(edges["hyperloom.tools.pipeline.sub.three"]) == {"hyperloom.tools.pipeline.sub.one", "hyperloom.tools.isa.models"}


def test_an_import_of_a_name_reaches_the_module_that_defines_it_not_a_cycle_through_the_package(tmp_path):
    root = tree(tmp_path / "tools", {"a/m.py": "from hyperloom.tools.a.n import thing\n", "a/n.py": "thing = 1\n"})
    (root / "a" / "__init__.py").write_text("from hyperloom.tools.a import m\n")
    edges = module_edges(root, "hyperloom.tools")
    assert dict(edges) == {"hyperloom.tools.a": {"hyperloom.tools.a.m": {"a/__init__.py"}},
                           "hyperloom.tools.a.m": {"hyperloom.tools.a.n": {"a/m.py"}}}
    assert cycles(edges) == []


def test_a_folder_that_imports_its_own_rung_or_one_above_is_off_the_ladder(tmp_path):
    root = tree(tmp_path / "tools", {
        "gate/m.py": "from hyperloom.tools.runtime.x import y\n",  # a rung up
        "runtime/m.py": "def late():\n    from hyperloom.tools.compile import z\n",  # its own rung
        "compile/m.py": "from hyperloom.tools.gate import m\n",  # below: fine
    })
    assert off_the_ladder(folder_edges(root), (("gate",), ("compile", "runtime"))) == [
        "gate (rung 0) imports runtime (rung 1): ['gate/m.py']",
        "runtime (rung 1) imports compile (rung 1): ['runtime/m.py']",
    ]
