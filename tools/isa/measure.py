"""Measure one target's census now: the disassembler sweep (canonical set), the assembler probe
(aliases), one re-assembled example per instruction, the capabilities and the self-checks."""

from __future__ import annotations

import logging
import os
from concurrent.futures import Executor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from hyperloom.core.evidence import measured
from hyperloom.core.hashing import sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.tools.codeobj.disasm import base_mnemonic
from hyperloom.tools.isa.capabilities import CAPABILITIES
from hyperloom.tools.isa.digest import definitions_digest, step
from hyperloom.tools.isa.examples import choose_examples, rank
from hyperloom.tools.isa.layouts import GENERATIONS, UNSWEPT, encode_group
from hyperloom.tools.isa.mnemonics import MnemonicTable, find_table
from hyperloom.tools.isa.models import CapabilityEntry, Census, CensusChecks, DroppedGroup, InstructionEntry, LlvmInfo
from hyperloom.tools.isa.probe import ABSENT, probe_mnemonics
from hyperloom.tools.isa.sweep import Decoded, SweepOutcome, llvm_mc_runner, plan, sweep
from hyperloom.tools.isa.targets import VERIFIED_TARGETS, LlvmMc

log = logging.getLogger(__name__)


def mnemonics_in(text: str) -> list[str]:
    """The base mnemonics of one printed instruction; a VOPD pair `X ... :: Y ...` has two."""
    return [base_mnemonic(half.split(maxsplit=1)[0]) for half in text.split(" :: ") if half.strip()]


@dataclass
class Canonical:
    families: list[str] = field(default_factory=list)
    candidates: list[Decoded] = field(default_factory=list)


def canonical_set(outcome: SweepOutcome, family_order: list[str]) -> dict[str, Canonical]:
    """Name → the families that decode to it and its example candidates, from the sweep (plan order)."""
    found: dict[str, Canonical] = {}
    for decoded in outcome.decoded:
        for name in mnemonics_in(decoded.text):
            entry = found.setdefault(name, Canonical())
            entry.candidates.append(decoded)
            if decoded.group.family not in entry.families:
                entry.families.append(decoded.group.family)
    for entry in found.values():
        entry.families.sort(key=family_order.index)
        entry.candidates = rank(entry.candidates)
    return dict(sorted(found.items()))


def capabilities_of(canonical: set[str]) -> list[CapabilityEntry]:
    entries = []
    for definition in CAPABILITIES:
        proof = definition.matches(canonical)
        entries.append(CapabilityEntry(name=definition.name, description=definition.description, present=bool(proof), instructions=proof))
    return entries


@lru_cache(maxsize=4)
def _table(llvm_mc: str, mtime_ns: int) -> MnemonicTable | None:
    del mtime_ns  # cache key only
    return find_table(Path(llvm_mc))


def measure(target: str, llvm: LlvmMc, gen: str, pool: Executor | None, progress: ProgressFn | None = None) -> Census:
    """Run the sweep, the probe and the re-assembly check for one target, now."""
    families = GENERATIONS[gen]
    order = list(dict.fromkeys(f.name for f in families))
    real = Path(llvm.path).resolve()
    table = _table(str(real), real.stat().st_mtime_ns)
    # The probe of the library's mnemonics runs beside the sweep; the sweep's few other names follow.
    probing = pool.submit(probe_mnemonics, llvm.path, target, table.names) if pool and table else None
    shares = (os.cpu_count() or 1) if pool else 1
    outcome = sweep(plan(families), llvm_mc_runner(llvm.path, target), pool, chunks=shares)
    canonical = canonical_set(outcome, order)
    step(progress, 1)

    probed = probing.result() if probing else (probe_mnemonics(llvm.path, target, table.names) if table else {})
    if rest := sorted(set(canonical) - set(probed)):
        probed |= probe_mnemonics(llvm.path, target, rest)
    accepted = {base_mnemonic(name) for name, error in probed.items() if error not in ABSENT}
    step(progress, 2)

    examples = choose_examples({n: c.candidates for n, c in canonical.items()}, llvm.path, target, pool, shares)
    step(progress, 3)

    not_in_probe = [n for n in canonical if n not in accepted]
    by_example = [n for n in not_in_probe if "VOPD" in canonical[n].families and examples[n].reassembles]
    violations = [n for n in not_in_probe if n not in by_example]
    if violations:
        log.warning("%s: the assembler refused %d names the disassembler printed: %s", target, len(violations), violations[:10])
    aliases = sorted(accepted - set(canonical))
    instructions = [
        InstructionEntry(
            name=n,
            kind="canonical",
            families=c.families,
            example=examples[n].text,
            encoding=examples[n].encoding,
            reassembles=examples[n].reassembles,
        )
        for n, c in canonical.items()
    ] + [InstructionEntry(name=n, kind="alias", families=[]) for n in aliases]
    instructions.sort(key=lambda i: i.name)

    notes = []
    if target not in VERIFIED_TARGETS:
        notes.append(f"{target} uses the {gen} layouts verified on other targets; its own encodings were not checked bit by bit")
    if target in UNSWEPT:
        notes.append(f"known gap: {UNSWEPT[target]}; instructions only those encodings carry are listed as aliases")
    if table is None:
        notes.append("no mnemonic table was found in the LLVM library: the probe checked the sweep's own names, so aliases are not listed")
    checks = CensusChecks(
        sweep_groups=outcome.groups,
        crashed_runs=outcome.crashed_runs,
        dropped_groups=[DroppedGroup(family=g.family, encoding=encode_group(g.words)) for g in outcome.dropped],
        mnemonic_source=f"{table.source} ({len(table.names)} mnemonics)" if table else "the sweep's names (fallback)",
        sweep_subset_of_probe=not violations,
        sweep_not_in_probe=violations,
        checked_by_example=by_example,
        examples_reassembled=sum(e.reassembles for e in examples.values()),
        examples_not_reassembled=[n for n in canonical if not examples[n].reassembles],
        layouts_verified=target in VERIFIED_TARGETS,
        notes=notes,
    )
    family_counts = {f: sum(1 for c in canonical.values() if f in c.families) for f in order}
    census = Census(
        target=target,
        generation=gen,
        llvm=LlvmInfo(version=llvm.version, version_line=llvm.version_line, sha256=llvm.sha256),
        canonical_count=len(canonical),
        alias_count=len(aliases),
        families={f: n for f, n in family_counts.items() if n},
        instructions=instructions,
        capabilities=capabilities_of(set(canonical)),
        checks=checks,
        evidence=measured(
            "isa_census",
            inputs_sha256=sha256_json([llvm.sha256, target, definitions_digest(gen)]),
            target=target,
            toolchain=llvm.toolchain,
        ),
    )
    step(progress, 4)
    return census
