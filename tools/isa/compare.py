"""What one target has that another lacks: canonical instructions and capabilities."""

from __future__ import annotations

from hyperloom.tools.isa.models import Census, Comparison


def compare(target: Census, other: Census, offset: int = 0, limit: int = 100) -> Comparison:
    """Set differences of the canonical instruction names and of the present capabilities.

    Aliases are left out: they are spellings, and they differ with the LLVM version more than the
    hardware does. Both name lists are paged by `offset` and `limit`.
    """
    mine, theirs = target.names("canonical"), other.names("canonical")
    only_mine, only_theirs = sorted(mine - theirs), sorted(theirs - mine)
    caps_mine = {c.name for c in target.capabilities if c.present}
    caps_theirs = {c.name for c in other.capabilities if c.present}
    order = [c.name for c in target.capabilities]
    return Comparison(
        other=other.target,
        only_in_target=only_mine[offset : offset + limit],
        only_in_target_count=len(only_mine),
        only_in_other=only_theirs[offset : offset + limit],
        only_in_other_count=len(only_theirs),
        common_count=len(mine & theirs),
        capabilities_only_in_target=[c for c in order if c in caps_mine - caps_theirs],
        capabilities_only_in_other=[c for c in order if c in caps_theirs - caps_mine],
    )
