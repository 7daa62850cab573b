"""The tool folders form an acyclic graph: the pipeline and the runtime below, the tools that judge candidates above.

Every import counts, at module level, inside functions and under TYPE_CHECKING: a cycle kept from failing at
load time by a function-level import is still a cycle. A language or backend above the pipeline plugs in by name
(tools/pipeline/languages.py, tools/runtime/worker.py), which is no import.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO / "tools"
BELOW_THE_PIPELINE = ("runtime", "kernelspec", "compile", "gate", "verify", "codeobj", "isa", "detect")
ABOVE_THE_PIPELINE = ("bench", "tune", "spec", "triton", "roofline", "profile", "serve", "allreduce")


def folder_edges(tools: Path) -> dict[str, dict[str, set[str]]]:
    """{folder: {imported folder: files that import it}} over every import statement in tools/<folder>/**.py."""
    edges: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    folders = {p.name for p in tools.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    for path in tools.rglob("*.py"):
        parts = path.relative_to(tools).parts
        if len(parts) < 2:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                pieces = name.split(".")
                if pieces[:2] == ["hyperloom", "tools"] and len(pieces) > 2 and pieces[2] in folders and pieces[2] != parts[0]:
                    edges[parts[0]][pieces[2]].add(str(path.relative_to(tools)))
    return edges


def cycles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected components with more than one folder (Tarjan's algorithm)."""
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
    return found


def test_the_tool_folders_import_each_other_without_a_cycle():
    edges = folder_edges(TOOLS)
    found = cycles(edges)
    detail = [f"{a} -> {b}: {sorted(files)}" for component in found for a in component for b, files in edges[a].items() if b in component]
    assert not found, "import cycle between tool folders:\n" + "\n".join(detail)


def test_the_pipeline_imports_only_what_lies_below_it():
    edges = folder_edges(TOOLS)
    assert set(edges["pipeline"]) <= set(BELOW_THE_PIPELINE), {k: sorted(v) for k, v in edges["pipeline"].items() if k not in BELOW_THE_PIPELINE}
    for folder in BELOW_THE_PIPELINE:
        upward = set(edges.get(folder, {})) & {"pipeline", *ABOVE_THE_PIPELINE}
        assert not upward, f"{folder} imports {sorted(upward)}, which lie above it"


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    for folder, body in {"a": "from hyperloom.tools.b.x import y\n", "b": "def late():\n    from hyperloom.tools.a.m import n\n", "c": ""}.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "m.py").write_text(body)
    assert cycles(folder_edges(tmp_path)) == [["a", "b"]]


def test_a_type_checking_import_counts_too(tmp_path):
    for folder, body in {"a": "from hyperloom.tools.b import x\n", "b": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import hyperloom.tools.a.m\n"}.items():
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / "m.py").write_text(body)
    assert cycles(folder_edges(tmp_path)) == [["a", "b"]]
