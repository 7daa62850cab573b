"""isa_census, isa_probe and isa_audit against the real llvm-mc-19 (CI installs it), the
committed results/isa files, and bad input."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from pydantic import ValidationError

from helpers import FIXTURES, REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.isa.api import run_audit, run_census, run_probe
from hyperloom.tools.isa.census import census, census_many
from hyperloom.tools.isa.models import AuditRequest, Census, CensusRequest, ProbeRequest
from hyperloom.tools.isa.results import drift, read_committed
from hyperloom.tools.isa.targets import DEFAULT_TARGETS, find_llvm_mc
from hyperloom.validators.schemas import schema_errors

LLVM_MC_19 = shutil.which("llvm-mc-19")
needs_llvm = pytest.mark.skipif(LLVM_MC_19 is None, reason="llvm-mc-19 is not installed; .ci/run installs llvm-19")
RESULTS = REPO / "results" / "isa"
TESTED = ("gfx1201", "gfx1200", "gfx1100", "gfx942", "gfx90a")


@pytest.fixture(scope="module")
def censuses(tmp_path_factory) -> dict[str, Census]:
    """One cold census per target, measured once for this module, with LLVM 19 pinned."""
    if LLVM_MC_19 is None:
        pytest.skip("llvm-mc-19 is not installed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYPERLOOM_CACHE_DIR", str(tmp_path_factory.mktemp("isa-cache")))
        patch.setenv("HYPERLOOM_LLVM_DIR", str(Path(LLVM_MC_19).resolve().parent))
        return {c.target: c for c in census_many(list(TESTED), refresh=True)}


@pytest.fixture
def llvm19(monkeypatch):
    if LLVM_MC_19 is None:
        pytest.skip("llvm-mc-19 is not installed")
    monkeypatch.setenv("HYPERLOOM_LLVM_DIR", str(Path(LLVM_MC_19).resolve().parent))


def _entry(census_: Census, name: str):
    return next((i for i in census_.instructions if i.name == name), None)


# ---------------------------------------------------------------- facts verified in toolchain.md


@pytest.mark.parametrize(
    ("target", "present", "absent"),
    [
        ("gfx1201", ["v_dot8_i32_iu4", "v_dot4_i32_iu8", "v_swmmac_i32_16x16x64_iu4", "v_wmma_i32_16x16x32_iu4", "v_dot4_f32_fp8_fp8"],
         ["v_dot8_i32_i4", "v_mfma_i32_16x16x32_i8", "v_pk_fma_f32"]),
        ("gfx1100", ["v_dot8_i32_iu4", "v_wmma_f32_16x16x16_f16", "v_wmma_i32_16x16x16_iu4"],
         ["v_dot4_f32_fp8_fp8", "v_wmma_i32_16x16x32_iu4"]),
        ("gfx942", ["v_mfma_i32_16x16x32_i8", "v_mfma_f32_16x16x16_f16", "v_dot8_i32_i4", "v_dot8c_i32_i4", "v_pk_fma_f32"],
         ["v_dot8_i32_iu4", "v_wmma_f32_16x16x16_f16"]),
        ("gfx90a", ["v_mfma_f32_16x16x16f16", "v_dot4_i32_i8", "v_pk_fma_f32"],
         ["v_mfma_f32_16x16x16_f16", "v_mfma_i32_16x16x32_i8", "v_dot8_i32_iu4"]),
    ],
)
def test_the_sweep_finds_what_toolchain_md_verified(censuses, target, present, absent):
    found = censuses[target]
    for name in present:
        entry = _entry(found, name)
        assert entry is not None and entry.kind == "canonical", f"{target} should have {name}"
    for name in absent:
        assert _entry(found, name) is None, f"{target} should lack {name}"
    assert not [n for n in found.names() if n.startswith("v_swmmac_")] or target == "gfx1201"


def test_gfx1200_and_gfx1201_have_identical_instruction_sets_in_llvm_19(censuses):
    assert censuses["gfx1200"].names() == censuses["gfx1201"].names()
    assert censuses["gfx1200"].names("alias") == censuses["gfx1201"].names("alias")


@pytest.mark.parametrize("target", TESTED)
def test_the_self_checks_hold_on_every_target(censuses, target):
    checks = censuses[target].checks
    assert checks.sweep_subset_of_probe and not checks.sweep_not_in_probe
    assert checks.crashed_runs == 0 and not checks.dropped_groups  # LLVM 19 never crashed (toolchain.md 6.2)
    assert checks.mnemonic_source.startswith("libLLVM")
    canonical = [i for i in censuses[target].instructions if i.kind == "canonical"]
    assert checks.examples_reassembled + len(checks.examples_not_reassembled) == len(canonical)
    assert checks.examples_reassembled >= 0.95 * len(canonical)  # toolchain.md 6.7: a few percent do not


def test_aliases_are_the_names_only_the_assembler_knows(censuses):
    assert _entry(censuses["gfx1201"], "s_max_f32").kind == "alias"  # printed as s_max_num_f32
    assert _entry(censuses["gfx1201"], "s_max_num_f32").kind == "canonical"
    assert _entry(censuses["gfx1201"], "buffer_load_dword").kind == "alias"
    assert {i.name for i in censuses["gfx90a"].instructions if i.kind == "alias"} == {"v_mul_lo_i32"}
    assert _entry(censuses["gfx942"], "v_mfma_f32_16x16x16f16").kind == "alias"  # the gfx90a spelling


def test_vopd_second_slot_names_are_accepted_through_their_example(censuses):
    checks = censuses["gfx1201"].checks
    assert "v_dual_add_nc_u32" in checks.checked_by_example
    entry = _entry(censuses["gfx1201"], "v_dual_add_nc_u32")
    assert " :: v_dual_add_nc_u32 " in entry.example and entry.reassembles and entry.families == ["VOPD"]


def test_examples_carry_the_bytes_the_assembler_gives_them(censuses, llvm19, workspace):
    entry = _entry(censuses["gfx1201"], "v_swmmac_i32_16x16x64_iu4")
    assert entry.families == ["VOP3P"] and entry.reassembles
    again = run_probe(ProbeRequest(target="gfx1201", lines=[entry.example]), workspace)
    assert again.lines[0].encoding == entry.encoding and entry.encoding.startswith("[0x")


def test_the_capability_summary_proves_each_feature_with_instructions(censuses):
    caps = {c.name: c for c in censuses["gfx1201"].capabilities}
    assert caps["dot8_int4_mixed_sign"].instructions == ["v_dot8_i32_iu4"]
    assert caps["swmmac"].present and not caps["mfma"].present and not caps["packed_fp32"].present
    gfx942 = {c.name: c for c in censuses["gfx942"].capabilities}
    assert gfx942["mfma_int8"].present and gfx942["smfmac"].present and not gfx942["dot8_int4_mixed_sign"].present


# ---------------------------------------------------------------- the tool as an agent calls it


def test_the_default_answer_is_a_summary_and_lists_come_on_request(llvm19, workspace):
    summary = run_census(CensusRequest(target="gfx1201"), workspace)
    assert summary.instructions == [] and summary.listed_total == 0 and summary.next_offset is None
    assert "swmmac" in {c.name for c in summary.capabilities_present} and "30 of 45 known capabilities" in summary.summary
    assert summary.evidence.tag.value == "MEASURED" and not summary.from_cache
    first_page = run_census(CensusRequest(target="gfx1201", detail=True), workspace)
    assert len(first_page.instructions) == 15 and first_page.capabilities_present == []  # a page carries the page, not the summary again
    for answer in (summary, first_page):  # an MCP answer sends this JSON twice (text and structured): under 16 KB in all
        assert len(json.dumps(answer.model_dump(mode="json"), separators=(",", ":"))) < 8_000
    page = run_census(CensusRequest(target="gfx1201", detail=True, offset=100, limit=50), workspace)
    assert len(page.instructions) == 50 and page.next_offset == 150 and page.from_cache
    assert page.listed_total == summary.canonical_count + summary.alias_count
    matched = run_census(CensusRequest(target="gfx1201", match="swmmac"), workspace)
    assert matched.listed_total == 11 and all("swmmac" in i.name for i in matched.instructions)


def test_compare_to_names_what_each_target_lacks(llvm19, workspace):
    result = run_census(CensusRequest(target="gfx1201", compare_to="gfx1100", limit=1000), workspace)
    assert "v_swmmac_i32_16x16x64_iu4" in result.compare.only_in_target
    assert "swmmac" in result.compare.capabilities_only_in_target and "Against gfx1100" in result.summary


def test_compare_to_reports_renamed_operations_as_renamed_not_as_missing(llvm19, workspace):
    result = run_census(CensusRequest(target="gfx1201", compare_to="gfx942", limit=1000), workspace)
    cmp = result.compare
    assert ("buffer_load_b32", "buffer_load_dword") in cmp.renamed and ("global_load_b32", "global_load_dword") in cmp.renamed
    renamed_here, renamed_there = {a for a, _ in cmp.renamed}, {b for _, b in cmp.renamed}
    assert not renamed_here & set(cmp.only_in_target) and not renamed_there & set(cmp.only_in_other)
    assert "v_swmmac_i32_16x16x64_iu4" in cmp.only_in_target and "v_mfma_f32_32x32x8_f16" in cmp.only_in_other  # truly missing
    assert cmp.only_in_target_count + cmp.renamed_count + cmp.common_count == result.canonical_count
    assert f"{cmp.renamed_count} renamed" in result.summary
    backwards = run_census(CensusRequest(target="gfx942", compare_to="gfx1201", limit=1000), workspace).compare
    assert sorted((b, a) for a, b in backwards.renamed) == cmp.renamed and backwards.only_in_other == cmp.only_in_target


def test_a_repeat_is_served_from_the_cache_keyed_by_the_llvm_binary(llvm19, private_cache):
    first, cached = census("gfx90a")
    again, cached_again = census("gfx90a")
    assert (cached, cached_again) == (False, True) and again == first
    (path,) = (private_cache / "isa").glob("gfx90a-*.json")
    assert Census.model_validate_json(path.read_text()) == first
    _, refreshed = census("gfx90a", refresh=True)
    assert refreshed is False


def test_probe_lines_are_accepted_or_rejected_with_the_error_class(llvm19, workspace):
    result = run_probe(
        ProbeRequest(
            target="gfx1201",
            lines=[
                "v_dot8_i32_iu4 v1, v2, v3, v4",
                "v_wmma_f32_16x16x16_f16 v[16:23], v[0:7], v[8:15], v[16:23]",
                "v_mfma_i32_16x16x32_i8 v[0:3], v[4:5], v[6:7], v[0:3]",
                "complete garbage",
            ],
        ),
        workspace,
    )
    assert [line.error_class for line in result.lines] == [None, "operands_not_valid_for_gpu_or_mode", "not_supported_on_this_gpu",
                                                           "unknown_mnemonic"]
    assert result.lines[0].encoding == "[0x01,0x40,0x18,0xcc,0x02,0x07,0x12,0x1c]"
    wave64 = run_probe(ProbeRequest(target="gfx1201", lines=["v_wmma_f32_16x16x16_f16 v[4:7], v[0:1], v[2:3], v[4:7]"], wave64=True),
                       workspace)
    assert wave64.accepted == 1  # toolchain.md 4: wave64 changes register widths, not mnemonics
    gfx942 = run_probe(ProbeRequest(target="gfx942", lines=["v_dot8_i32_iu4 v1, v2, v3, v4"]), workspace)
    assert gfx942.lines[0].error_class == "not_supported_on_this_gpu"


def test_the_audit_names_the_capabilities_a_kernel_leaves_unused(llvm19, workspace):
    for name in ("dot8_lds.gfx1201.hsaco", "scale.gfx1201+gfx942.bundle"):
        shutil.copy(FIXTURES / "codeobj" / name, workspace.root / name)
    result = run_audit(AuditRequest(target="gfx1201", paths=["."]), workspace)
    used = {c.name: c for c in result.capabilities}
    assert used["dot8_int4_mixed_sign"].used and used["dot8_int4_mixed_sign"].kernels == ["dot8k"]
    assert {"wmma_int4", "swmmac", "dot4_fp8_bf8"} <= set(result.unused_capabilities)
    assert "mfma" not in used  # gfx1201 has none: not something the kernels left unused
    assert result.not_in_census == []
    assert any("built for gfx942" in s for s in result.skipped)
    gfx942 = run_audit(AuditRequest(target="gfx942", paths=["scale.gfx1201+gfx942.bundle"]), workspace)
    assert [o.kernels for o in gfx942.code_objects] == [["scale"]] and "mfma" in gfx942.unused_capabilities


# ---------------------------------------------------------------- committed results


@pytest.mark.parametrize("target", DEFAULT_TARGETS)
def test_every_default_target_has_a_committed_census_that_follows_the_schema(target):
    doc = json.loads((RESULTS / f"{target}.json").read_text())
    assert schema_errors("isa_census", doc) == []
    assert doc["target"] == doc["evidence"]["target"] == target and doc["evidence"]["tag"] == "MEASURED"
    kinds = [i["kind"] for i in doc["instructions"]]
    assert kinds.count("canonical") == doc["canonical_count"] and kinds.count("alias") == doc["alias_count"]
    assert doc["checks"]["sweep_subset_of_probe"] and "LLVM version" in doc["version_note"]


def test_a_broken_committed_file_is_refused_by_its_schema(tmp_path):
    doc = json.loads((RESULTS / "gfx942.json").read_text())
    doc["instructions"][0]["kind"] = "maybe"
    (tmp_path / "gfx942.json").write_text(json.dumps(doc))
    with pytest.raises(HyperloomError, match="does not follow the isa_census format"):
        read_committed(tmp_path / "gfx942.json")


@pytest.mark.parametrize("target", TESTED)
def test_a_fresh_census_matches_the_committed_file(censuses, target):
    committed = read_committed(RESULTS / f"{target}.json")
    if committed["llvm"]["version"] != censuses[target].llvm.version:
        pytest.skip(f"committed with LLVM {committed['llvm']['version']}, this machine has {censuses[target].llvm.version}")
    report = drift(censuses[target], committed)
    assert not report.drifted, report.differences


# ---------------------------------------------------------------- crashes and bad input


def _script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_crashing_llvm_mc_is_bisected_and_the_group_dropped(llvm19, tmp_path, monkeypatch, workspace):
    # VOP3P op 0x33 with all-SGPR operands: the group that crashes llvm-mc-22 on gfx1250 (toolchain.md 6.2).
    poison = "[0x00,0x00,0x33,0xcc,0x00,0x00,0x00,0x00,0x00,0x00,0x80,0xbf]"
    real = Path(LLVM_MC_19).resolve()
    _script(tmp_path / "bin", "llvm-mc",
            f'input=$(cat)\ncase "$input" in *"{poison}"*) kill -SEGV $$;; esac\nprintf "%s\\n" "$input" | exec {real} "$@"\n')
    monkeypatch.setenv("HYPERLOOM_LLVM_DIR", str(tmp_path / "bin"))
    crashed, _ = census("gfx1201", parallel=False)
    assert [g.encoding for g in crashed.checks.dropped_groups] == [poison]
    assert crashed.checks.crashed_runs >= 2 and crashed.checks.dropped_groups[0].family == "VOP3P"
    assert _entry(crashed, "v_dot8_i32_iu4") is not None  # the rest of the sweep survived
    assert "dropped" in run_census(CensusRequest(target="gfx1201"), workspace).summary


def test_an_unknown_target_is_refused_with_the_targets_llvm_knows(llvm19, workspace):
    with pytest.raises(HyperloomError) as caught:
        run_census(CensusRequest(target="gfx9999"), workspace)
    assert "does not know the target 'gfx9999'" in str(caught.value) and "gfx1201" in str(caught.value) and "gfx90a" in str(caught.value)
    with pytest.raises(HyperloomError, match="gfx9 to gfx12 only"):
        run_census(CensusRequest(target="gfx803"), workspace)
    with pytest.raises(HyperloomError, match="does not know the target"):
        run_probe(ProbeRequest(target="gfx9999", lines=["s_nop 0"]), workspace)


def test_no_llvm_mc_at_all_is_an_error_with_a_next_step(tmp_path, monkeypatch, workspace):
    empty = tmp_path / "empty"
    empty.mkdir()
    for variable in ("HYPERLOOM_LLVM_DIR", "ROCM_PATH", "PATH"):
        monkeypatch.setenv(variable, str(empty))
    with pytest.raises(HyperloomError, match=r"llvm-mc was not found\. Next step: apt-get install llvm-19"):
        run_census(CensusRequest(target="gfx1201"), workspace)


def test_an_llvm_mc_without_the_amdgcn_target_is_refused(tmp_path, monkeypatch, workspace):
    # The real `--version` output with the AMDGPU lines removed, and llvm-mc's real "unable to get target" error.
    version = "\n".join(l for l in (FIXTURES / "versions" / "llvm-mc-19.txt").read_text().splitlines() if "amdgcn" not in l
                        and "r600" not in l)
    no_target = (FIXTURES / "isa" / "no-target.llvm-mc-19.txt").read_text().replace("foo-bar-baz", "amdgcn-amd-amdhsa").strip()
    (tmp_path / "version.txt").write_text(version + "\n")
    _script(tmp_path / "bin", "llvm-mc",
            f'if [ "$1" = --version ]; then cat {tmp_path / "version.txt"}; exit 0; fi\necho "{no_target}" >&2\nexit 1\n')
    monkeypatch.setenv("HYPERLOOM_LLVM_DIR", str(tmp_path / "bin"))
    with pytest.raises(HyperloomError, match="built without the AMDGPU \\(amdgcn\\) target.*Next step: install Debian's llvm-19"):
        run_census(CensusRequest(target="gfx1201"), workspace)


@pytest.mark.parametrize(
    "arguments",
    [
        {"target": "gfx1201; rm -rf /"},
        {"target": "GFX1201"},
        {"target": "gfx1201", "limit": 0},
        {"target": "gfx1201", "limit": 100_000},
        {"target": "gfx1201", "offset": -1},
        {"target": "gfx1201", "bogus": 1},
    ],
)
def test_malformed_census_requests_fail_validation(arguments):
    with pytest.raises(ValidationError):
        CensusRequest.model_validate(arguments)


def test_probe_requests_with_too_many_or_too_long_lines_fail_validation():
    with pytest.raises(ValidationError):
        ProbeRequest(target="gfx1201", lines=["s_nop 0"] * 501)
    with pytest.raises(ValidationError):
        ProbeRequest(target="gfx1201", lines=["s_nop " + "0" * 400])
    with pytest.raises(ValidationError):
        ProbeRequest(target="gfx1201", lines=[])


def test_a_directive_in_a_probe_is_refused_before_llvm_mc_sees_it(llvm19, workspace):
    with pytest.raises(HyperloomError, match="directives such as .include are refused"):
        run_probe(ProbeRequest(target="gfx1201", lines=["v_nop", '.incbin "/etc/passwd"']), workspace)


def test_audit_paths_stay_inside_the_workspace_and_must_hold_code_objects(llvm19, workspace, tmp_path):
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_audit(AuditRequest(target="gfx1201", paths=["/etc"]), workspace)
    (workspace.root / "notes").mkdir()
    (workspace.root / "notes" / "a.txt").write_text("not a code object")
    with pytest.raises(HyperloomError, match="no code objects"):
        run_audit(AuditRequest(target="gfx1201", paths=["notes"]), workspace)
    shutil.copy(FIXTURES / "codeobj" / "dot8_lds.gfx1201.hsaco", workspace.root / "k.hsaco")
    with pytest.raises(HyperloomError, match="none of the code objects is built for gfx942"):
        run_audit(AuditRequest(target="gfx942", paths=["k.hsaco"]), workspace)
    outside = tmp_path / "outside.hsaco"
    shutil.copy(FIXTURES / "codeobj" / "dot8_lds.gfx1201.hsaco", outside)
    os.symlink(outside, workspace.root / "notes" / "link.hsaco")
    with pytest.raises(HyperloomError, match="no code objects"):
        run_audit(AuditRequest(target="gfx1201", paths=["notes"]), workspace)  # a link out of the workspace is not followed


def test_the_llvm_found_is_recorded_in_every_census(censuses):
    llvm = censuses["gfx942"].llvm
    assert llvm.version.startswith("19.") and len(llvm.sha256) == 64
    assert "llvm-mc" in censuses["gfx942"].evidence.toolchain


def test_find_llvm_mc_prefers_the_configured_folder(llvm19):
    assert find_llvm_mc().found_by == "HYPERLOOM_LLVM_DIR"


@pytest.mark.skipif(shutil.which("llvm-mc-22") is None, reason="llvm-mc-22 is not installed (optional: apt-get install llvm-22)")
def test_llvm_22_really_crashes_on_the_known_gfx1250_group_and_the_sweep_survives():
    from hyperloom.tools.isa.layouts import PAD
    from hyperloom.tools.isa.sweep import Group, llvm_mc_runner, sweep

    crash = Group("VOP3P", (0xCC330000, 0x18000000))  # toolchain.md 6.2: [0x00,0x00,0x33,0xcc,0x00,0x00,0x00,0x18]
    groups = [Group("VOP3P", (0xCC184000, 0x1C621100, PAD)), crash, Group("SOP1", (0xBE800000, PAD))]
    outcome = sweep(groups, llvm_mc_runner(shutil.which("llvm-mc-22"), "gfx1250"))
    assert outcome.dropped == [crash] and outcome.crashed_runs >= 2
    assert [d.text.split()[0] for d in outcome.decoded] == ["v_dot8_i32_iu4", "s_mov_b32"]
