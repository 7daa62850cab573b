"""What one target has that another lacks: canonical instructions and capabilities."""

from __future__ import annotations

from collections.abc import Sequence

from hyperloom.tools.isa.models import Census, Comparison


def compare(target: Census, other: Census, offset: int = 0, limit: int = 100, renamed: Sequence[tuple[str, str]] = ()) -> Comparison:
    """Set differences of the canonical instruction names and of the present capabilities.

    Names in `renamed` (target name, other name; renames.py) are one operation under two spellings: they
    are listed as renamed, not as something one target lacks. Other aliases are left out: they are
    spellings, and they differ with the LLVM version more than the hardware does. The three name lists
    are paged by `offset` and `limit`.
    """
    mine, theirs = target.names("canonical"), other.names("canonical")
    renamed_here, renamed_there = {a for a, _ in renamed}, {b for _, b in renamed}
    only_mine, only_theirs = sorted(mine - theirs - renamed_here), sorted(theirs - mine - renamed_there)
    pairs = sorted(renamed)
    caps_mine = {c.name for c in target.capabilities if c.present}
    caps_theirs = {c.name for c in other.capabilities if c.present}
    order = [c.name for c in target.capabilities]
    return Comparison(
        other=other.target,
        only_in_target=only_mine[offset : offset + limit],
        only_in_target_count=len(only_mine),
        only_in_other=only_theirs[offset : offset + limit],
        only_in_other_count=len(only_theirs),
        renamed=pairs[offset : offset + limit],
        renamed_count=len(pairs),
        common_count=len(mine & theirs),
        capabilities_only_in_target=[c for c in order if c in caps_mine - caps_theirs],
        capabilities_only_in_other=[c for c in order if c in caps_theirs - caps_mine],
    )
