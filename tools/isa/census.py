"""One target's census: sweep (canonical set) ∪ probe (aliases), self-checked, cached by
(llvm-mc sha256, target, definitions)."""

from __future__ import annotations

import logging
import os
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from hyperloom import __version__
from hyperloom.core.atomic import write_bytes_atomic
from hyperloom.core.cache import cache_dir
from hyperloom.core.evidence import measured
from hyperloom.core.hashing import sha256_json
from hyperloom.core.progress import ProgressFn
from hyperloom.tools.codeobj.disasm import base_mnemonic
from hyperloom.tools.isa.capabilities import CAPABILITIES
from hyperloom.tools.isa.examples import choose_examples, rank
from hyperloom.tools.isa.layouts import GENERATIONS, UNSWEPT, encode_group
from hyperloom.tools.isa.mnemonics import MnemonicTable, find_table
from hyperloom.tools.isa.models import (
    FORMAT,
    CapabilityEntry,
    Census,
    CensusChecks,
    DroppedGroup,
    InstructionEntry,
    LlvmInfo,
)
from hyperloom.tools.isa.probe import ABSENT, probe_mnemonics
from hyperloom.tools.isa.sweep import Decoded, SweepOutcome, llvm_mc_runner, plan, sweep
from hyperloom.tools.isa.targets import VERIFIED_TARGETS, LlvmMc, check_target, find_llvm_mc, generation

log = logging.getLogger(__name__)
STEPS = 4  # sweep, probe, re-assembly, capabilities


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


def definitions_digest(gen: str) -> str:
    """Changes whenever the layouts, their known gaps, the capability patterns or the format change."""
    return sha256_json(
        [FORMAT, __version__, repr(GENERATIONS[gen]), UNSWEPT, [(c.name, c.description, c.patterns) for c in CAPABILITIES]]
    )


def _cache_path(llvm: LlvmMc, target: str, gen: str) -> Path:
    key = sha256_json([llvm.sha256, target, definitions_digest(gen)])
    return cache_dir("isa") / f"{target}-{key[:32]}.json"


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
    _step(progress, 1)

    probed = probing.result() if probing else (probe_mnemonics(llvm.path, target, table.names) if table else {})
    if rest := sorted(set(canonical) - set(probed)):
        probed |= probe_mnemonics(llvm.path, target, rest)
    accepted = {base_mnemonic(name) for name, error in probed.items() if error not in ABSENT}
    _step(progress, 2)

    examples = choose_examples({n: c.candidates for n, c in canonical.items()}, llvm.path, target, pool, shares)
    _step(progress, 3)

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
    _step(progress, 4)
    return census


def _step(progress: ProgressFn | None, done: int) -> None:
    if progress is not None:
        progress(done, STEPS)


def census(
    target: str,
    *,
    refresh: bool = False,
    llvm: LlvmMc | None = None,
    parallel: bool = True,
    progress: ProgressFn | None = None,
) -> tuple[Census, bool]:
    """The census of `target` and whether it came from the cache; measured (and cached) when absent.

    `parallel` splits the sweep over one llvm-mc process per CPU.
    """
    llvm = llvm or find_llvm_mc()
    # A cached census was measured by this very binary for this target: no need to ask llvm-mc again.
    if not refresh and (gen := generation(target)) is not None:
        path = _cache_path(llvm, target, gen)
        if path.is_file():
            try:
                cached = Census.model_validate_json(path.read_bytes())
                _step(progress, STEPS)
                return cached, True
            except (ValidationError, OSError) as exc:
                log.warning("ignoring the unreadable census cache %s: %s", path, exc)
    gen = check_target(target, llvm)
    path = _cache_path(llvm, target, gen)
    if parallel:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="sweep") as pool:
            fresh = measure(target, llvm, gen, pool, progress)
    else:
        fresh = measure(target, llvm, gen, None, progress)
    write_bytes_atomic(path, fresh.model_dump_json().encode())
    return fresh, False


def census_many(targets: list[str], *, refresh: bool = False, progress: ProgressFn | None = None) -> list[Census]:
    """Several targets side by side (one llvm-mc process per target at a time), in the order given."""
    llvm = find_llvm_mc()
    for target in targets:
        check_target(target, llvm)  # refuse a bad list before measuring anything
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="census") as pool:
        futures = {pool.submit(census, t, refresh=refresh, llvm=llvm, parallel=False): t for t in targets}
        for done, future in enumerate(as_completed(futures), start=1):
            future.result()
            if progress is not None:
                progress(done, len(targets))
        return [future.result()[0] for future in futures]
