"""The plain-text pieces every renderer shares: tables, figures, the evidence line."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperloom.core.evidence import Evidence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """Columns padded to their widest cell. With `width`, the last column is wrapped (and breaks at newlines in
    a cell) so that every line fits in `width` characters, continuation lines aligned under it."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(cell) for cell in column) for column in zip(headers, *cells)]
    if width is not None and cells:
        lead = sum(widths[:-1]) + 2 * (len(widths) - 1)
        room = max(width - lead, 24)
        wrapped = [row[:-1] + ["\n".join(_wrap(row[-1], room))] for row in cells]
        widths[-1] = max(len(line) for row in wrapped for line in [headers[-1], *row[-1].split("\n")])
        cells = wrapped
    line = "  ".join("{:<%d}" % w for w in widths)
    out = [line.format(*headers), line.format(*("-" * w for w in widths))]
    for row in cells:
        first, *rest = row[-1].split("\n")
        out.append(line.format(*row[:-1], first))
        out.extend(line.format(*([""] * (len(row) - 1)), more) for more in rest)
    return "\n".join(text.rstrip() for text in out)


def _wrap(text: str, room: int) -> list[str]:
    return [piece for part in text.split("\n")
            for piece in (textwrap.wrap(part, room, break_long_words=False, break_on_hyphens=False) or [""])]


def hanging(text: str, indent: int, width: int | None = None) -> str:
    """`text` whole, wrapped at words to `width` (the terminal's), its leading spaces kept and its lines after the first
    indented by `indent`."""
    lead = " " * (len(text) - len(text.lstrip(" ")))
    return textwrap.fill(" ".join(text.split()), width or report_width(), initial_indent=lead, subsequent_indent=" " * indent,
                         break_long_words=False, break_on_hyphens=False)


def report_width() -> int:
    """The terminal's width when there is one (or $COLUMNS), else 100 characters."""
    return shutil.get_terminal_size((100, 24)).columns


def num(value: float | int | None) -> str:
    """A count as it is, a float to three significant digits, a missing figure as '-'."""
    if value is None:
        return "-"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def exact(value: float | int | str) -> str:
    """A value with every digit a float32 or float64 comparison may need."""
    return f"{value:.9g}" if isinstance(value, float) else str(value)


def evidence_line(evidence: Evidence) -> str:
    return (
        f"{evidence.tag.value} by {evidence.source} on {evidence.device}, target {evidence.target}, "
        f"at {evidence.at.isoformat(timespec='seconds')}, inputs sha256 {evidence.inputs_sha256[:16]}…"
    )
