"""Report of profile: the same text the tool writes to report.md, so the terminal and the file never differ."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hyperloom.tools.profile.models import ProfileResult


def profile_report(result: ProfileResult) -> str:
    from hyperloom.tools.profile.report import render

    return render(result)
