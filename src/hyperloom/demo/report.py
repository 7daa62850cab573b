"""The demo's report: every step's result and every figure with its evidence tag."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Figure(BaseModel):
    name: str
    value: str
    tag: str = Field(description="MEASURED or ASSUMED.")
    source: str = Field(description="The tool (and version) or datasheet behind it.")


class Step(BaseModel):
    phase: str
    tool: str
    arguments: dict[str, Any]
    summary: str = Field(description="The tool's whole summary (report.md shows its first sentences).")
    ok: bool


class DemoReport(BaseModel):
    target: str
    gpu: str
    steps: list[Step]
    figures: list[Figure]
    not_measured: list[str] = Field(description="Claims that stay ASSUMED, and why.")


def brief(text: str, limit_chars: int = 400) -> str:
    """`text` when it fits in `limit_chars`, else its first sentences that fit, or else its first words, then '…'."""
    if len(text) <= limit_chars:
        return text
    head = text[: limit_chars - 1]
    sentence_end = head.rfind(". ")
    if sentence_end >= limit_chars // 2:
        return head[: sentence_end + 1] + " …"
    return head[: head.rfind(" ")].rstrip(",;:") + " …" if " " in head else head + "…"


def markdown(report: DemoReport) -> str:
    lines = [
        f"# Hyperloom demo: decode GEMV for {report.target}",
        "",
        f"GPU found by detect: {report.gpu}",
        "",
        "## Steps (each a real MCP tool call over stdio)",
        "",
        "| phase | tool | ok | result |",
        "|---|---|---|---|",
    ]
    lines += [f"| {s.phase} | `{s.tool}` | {'yes' if s.ok else 'NO'} | {brief(s.summary).replace('|', '/')} |" for s in report.steps]
    lines += ["", "## Figures", "", "| figure | value | tag | source |", "|---|---|---|---|"]
    lines += [f"| {f.name} | {f.value} | **{f.tag}** | {f.source} |" for f in report.figures]
    if report.not_measured:
        lines += ["", "## Not measured here (these stay ASSUMED)", ""]
        lines += [f"- {claim}" for claim in report.not_measured]
    return "\n".join(lines) + "\n"
