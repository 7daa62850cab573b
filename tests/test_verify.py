"""disasm_verify: instruction-level proof on real code objects built offline with LLVM 19."""

from __future__ import annotations

import shutil

import pytest
import yaml

from helpers import FIXTURES, copy_kernel
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.codeobj.metadata import kernel_resources, read_metadata
from hyperloom.tools.compile.api import compile_kernel
from hyperloom.tools.compile.models import CompileRequest
from hyperloom.tools.verify.api import verify
from hyperloom.tools.verify.models import VerifyRequest
from hyperloom.tools.verify.rules import parse_rule
from hyperloom.tools.verify.spellings import generation, spelling

needs_llvm = pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                                reason="LLVM is not installed; .ci/run installs llvm-19 and clang-19")


def built(workspace, kernel: str, target: str) -> str:
    result = compile_kernel(CompileRequest(source=copy_kernel(workspace, kernel), targets=[target]), workspace)
    assert result.ok, result.summary
    return result.builds[0].code_object


def check(workspace, code_object, **rules):
    return verify(VerifyRequest(code_object=code_object, **rules), workspace)


@needs_llvm
def test_the_dot8_kernel_is_proven_to_use_v_dot8_i32_iu4_on_gfx1201(workspace):
    result = check(workspace, built(workspace, "dot8.hip", "gfx1201"), expect=["v_dot8_i32_iu4", "@dot8_i4"], forbid=["v_dot4_*"])
    assert result.passed and result.targets == ["gfx1201"]
    hit = next(v for v in result.verdicts if v.rule == "v_dot8_i32_iu4")
    assert hit.found == 1 and hit.lines[0].split(": ", 1)[1].startswith("v_dot8_i32_iu4 ")


@needs_llvm
def test_the_swmmac_kernel_is_proven_to_use_the_sparse_int4_matrix_instruction(workspace):
    result = check(workspace, built(workspace, "swmmac.hip", "gfx1201"), expect=["v_swmmac_i32_16x16x64_iu4==1", "@swmmac"])
    assert result.passed
    assert next(v for v in result.verdicts if v.rule == "@swmmac").matched == ["v_swmmac_i32_16x16x64_iu4"]


@needs_llvm
def test_a_kernel_that_spills_is_flagged_with_its_spill_counts(workspace):
    result = check(workspace, built(workspace, "spill.hip", "gfx1201"))
    spill = next(v for v in result.verdicts if v.kernel == "spill" and v.kind == "spills")
    assert not result.passed and not spill.passed and spill.found > 0
    assert "spills" in spill.note and "VGPRs" in spill.note and spill.lines[0].split(": ", 1)[1].startswith("scratch_")
    private = next(v for v in result.verdicts if v.kernel == "privarr" and v.kind == "spills")
    assert private.passed and "declared scratch" in private.note


@needs_llvm
def test_generation_aware_sets_follow_the_target(workspace):
    rdna = check(workspace, built(workspace, "spill.hip", "gfx1201"), expect=["@barrier"], check_spills=False, kernels=["spill"])
    cdna = check(workspace, built(workspace, "spill.hip", "gfx942"), expect=["@wmma"], check_spills=False, kernels=["spill"])
    assert not rdna.passed  # the spill kernel has no barrier at all
    (verdict,) = cdna.verdicts
    assert not verdict.passed and "gfx942 has no instruction in @wmma" in verdict.note


@needs_llvm
def test_bounds_and_forbid_rules_count_instructions(workspace):
    code = built(workspace, "spill.hip", "gfx1201")
    result = check(workspace, code, kernels=["spill"], expect=["scratch_store_*>=100", "v_fma_f32<10"], forbid=["s_endpgm"],
                   check_spills=False)
    outcomes = {v.rule: v.passed for v in result.verdicts}
    assert outcomes == {"scratch_store_*>=100": True, "v_fma_f32<10": False, "s_endpgm": False}


@needs_llvm
def test_an_offload_bundle_is_verified_per_target(workspace):
    (workspace.root / "b.bundle").write_bytes((FIXTURES / "codeobj" / "scale.gfx1201+gfx942.bundle").read_bytes())
    result = check(workspace, "b.bundle", expect=["global_load_*"])
    assert result.passed and result.targets == ["gfx1201", "gfx942"] and len(result.kernels) == 2


@needs_llvm
def test_unknown_kernels_and_bad_rules_are_refused(workspace):
    code = built(workspace, "dot8.hip", "gfx1201")
    with pytest.raises(HyperloomError, match="no kernel named"):
        check(workspace, code, kernels=["nope"])
    with pytest.raises(HyperloomError, match="not a known instruction set"):
        check(workspace, code, expect=["@magic"])


def test_a_file_that_is_not_a_code_object_is_refused(workspace):
    (workspace.root / "notes.hsaco").write_text("not elf")
    with pytest.raises(HyperloomError, match="not a code object"):
        check(workspace, "notes.hsaco")


@pytest.mark.parametrize(
    ("text", "kind", "op", "count"),
    [("v_dot8_i32_iu4", "expect", ">=", 1), ("v_wmma_*>=4", "expect", ">=", 4), ("@dot4_i8 == 2", "expect", "==", 2),
     ("scratch_*", "forbid", "==", 0)],
)
def test_rules_parse_into_pattern_and_bound(text, kind, op, count):
    rule = parse_rule(text, kind)
    assert (rule.op, rule.count) == (op, count)


@pytest.mark.parametrize("text", ["v_dot8; rm -rf /", "v_x>=", "", "a b"])
def test_malformed_rules_are_refused(text):
    with pytest.raises(HyperloomError):
        parse_rule(text, "expect")


def test_forbid_rules_take_no_bound():
    with pytest.raises(HyperloomError, match="forbid rules mean 'never'"):
        parse_rule("v_dot8_i32_iu4>=2", "forbid")


@pytest.mark.parametrize(
    ("target", "expected"),
    [("gfx1201", ("v_dot4_i32_iu8",)), ("gfx1100", ("v_dot4_i32_iu8",)), ("gfx942", ("v_dot4_i32_i8", "v_dot4c_i32_i8")),
     ("gfx90a", ("v_dot4_i32_i8", "v_dot4c_i32_i8"))],
)
def test_the_int8_dot_is_spelled_per_generation(target, expected):
    assert spelling("dot4_i8", target) == expected


@pytest.mark.parametrize(("target", "gen"), [("gfx1201", "gfx12"), ("gfx1151", "gfx11"), ("gfx1030", "gfx10"), ("gfx90a", "gfx9"),
                                             ("gfx942", "gfx9"), ("sm_90", "sm")])
def test_generations_come_from_target_names(target, gen):
    assert generation(target) == gen


def test_the_in_process_metadata_reader_agrees_with_llvm_readelf():
    codeobj = FIXTURES / "codeobj"
    ours = read_metadata((codeobj / "dot8_lds.gfx1201.hsaco").read_bytes())
    text = (codeobj / "dot8_lds.gfx1201.notes.txt").read_text()
    theirs = yaml.safe_load(text[text.index("---") : text.index("\n...")])
    assert ours["amdhsa.kernels"] == theirs["amdhsa.kernels"] and ours["amdhsa.target"] == theirs["amdhsa.target"]
    assert [k.name for k in kernel_resources((codeobj / "dot8_lds.gfx1201.hsaco").read_bytes())] == ["dot8k", "ldsk"]
