"""ISA census pieces that need no LLVM: layouts, sentinel parsing, the mnemonic table, error
classes, probe-line policy, capability derivation, comparison and drift of committed files."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from helpers import FIXTURES, REPO
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.isa.capabilities import CAPABILITIES
from hyperloom.tools.isa.measure import capabilities_of, mnemonics_in
from hyperloom.tools.isa.compare import compare
from hyperloom.tools.isa.layouts import GENERATIONS, PAD, Family, encode_group
from hyperloom.tools.isa.mnemonics import walk_table
from hyperloom.tools.isa.models import Census
from hyperloom.tools.isa.probe import check_line, classify, first_errors, parse_assembled
from hyperloom.tools.isa.results import document_text, drift
from hyperloom.tools.isa.sweep import Group, decode, split_at_sentinels, split_encoding, sweep
from hyperloom.tools.isa.targets import generation, parse_cpu_help

ISA = FIXTURES / "isa"
RESULTS = REPO / "results" / "isa"


def committed(target: str) -> Census:
    return Census.model_validate_json((RESULTS / f"{target}.json").read_text())


# ---------------------------------------------------------------- layouts


def _family(gen: str, name: str, prefix_bits: int | None = None) -> Family:
    return next(f for f in GENERATIONS[gen] if f.name == name and (prefix_bits is None or f.prefix & prefix_bits))


def _word0(family: Family, op: int, variant: int = 0) -> int:
    return family.prefix | op << family.op_lsb | family.variants[variant]


# dword0 of instructions llvm-mc-19 assembled with --show-encoding, operand bits cleared: the
# opcode lands where each layout says it does.
@pytest.mark.parametrize(
    ("gen", "family", "op", "variant", "expected", "instruction"),
    [
        ("gfx12", "VOP3P", 0x18, 0, 0xCC184000, "v_dot8_i32_iu4 (cc184001 with vdst v1)"),
        ("gfx12", "VOP3P", 0x56, 0, 0xCC564000, "v_swmmac_i32_16x16x64_iu4 (cc564006)"),
        ("gfx12", "SMEM", 0x01, 0, 0xF4002000, "s_load_b64 (f4002101)"),
        ("gfx12", "VGLOBAL", 0x14, 0, 0xEE05007C, "global_load_b32 v1, v[2:3], off (ee05007c)"),
        ("gfx11", "FLAT", 0x14, 2, 0xDC520000, "global_load_b32 (dc520000)"),
        ("gfx11", "DS", 0x3F, 1, 0xD8FE0000, "ds_ordered_count ... gds (d8fe0000)"),
        ("gfx10", "DS", 0x01, 0, 0xD8040000, "ds_sub_u32 (d8040000)"),
        ("gfx10", "FLAT", 0x0C, 2, 0xDC308000, "global_load_dword (dc308000)"),
        ("gfx10", "VOP3P", 0x13, 0, 0xCC134000, "v_dot2_f32_f16 (cc134000)"),
        ("gfx9", "DS", 0x01, 0, 0xD8020000, "ds_sub_u32 on gfx908 (d8020000)"),
        ("gfx9", "VOP3P", 0x42, 0, 0xD3C20000, "v_mfma_f32_4x4x1f32 on gfx908 (d3c20000)"),
        ("gfx9", "FLAT", 0x14, 2, 0xDC508000, "global_load_dword on gfx90a (dc508000)"),
        ("gfx9", "MUBUF", 0x3D, 1, 0xE0F50000, "buffer_store_lds_dword ... lds on gfx90a (e0f50000)"),
    ],
)
def test_each_layout_puts_the_opcode_where_the_assembler_does(gen, family, op, variant, expected, instruction):
    candidates = [f for f in GENERATIONS[gen] if f.name == family]
    words = {_word0(f, op, variant) for f in candidates if variant < len(f.variants)}
    assert expected in words, f"{instruction}: {sorted(hex(w) for w in words)}"


@pytest.mark.parametrize("gen", sorted(GENERATIONS))
def test_families_of_one_generation_never_emit_the_same_dword0(gen):
    owners: dict[int, set[str]] = defaultdict(set)
    for family in GENERATIONS[gen]:
        for words in family.groups():
            owners[words[0]].add(family.name)
    shared = {hex(word): names for word, names in owners.items() if len(names) > 1}
    assert not shared, list(shared.items())[:5]


def test_every_group_ends_with_the_pad_and_counts_match():
    for gen, families in GENERATIONS.items():
        for family in families:
            groups = list(family.groups())
            assert len(groups) == family.size and all(g[-1] == PAD for g in groups), (gen, family.name)


@pytest.mark.parametrize(
    ("words", "text"),
    [
        ((0xCC184000, 0x1C621100), "[0x00,0x40,0x18,0xcc,0x00,0x11,0x62,0x1c]"),
        ((0xB0640005,), "[0x05,0x00,0x64,0xb0]"),
        ((PAD,), "[0x00,0x00,0x80,0xbf]"),
    ],
)
def test_groups_are_written_as_little_endian_bracketed_bytes(words, text):
    assert encode_group(words) == text


# ---------------------------------------------------------------- sentinel parsing


def test_a_real_sweep_output_splits_into_one_segment_per_group():
    stdout = (ISA / "sweep.gfx1201.out.txt").read_text()
    segments = split_at_sentinels(stdout, 6)
    assert segments[0] == ["v_dot8_i32_iu4 v0, v0, v8, v24", "s_nop 0"]
    assert segments[1] == []  # the invalid VOP3 opcode decoded to nothing (its warning is on stderr)
    assert segments[2][0] == "v_cndmask_b32_e32 v0, v0, v0, vcc_lo"
    assert segments[3][0] == "v_dual_mul_f32 v0, v1, v2 :: v_dual_mul_f32 v3, v4, v5"
    assert segments[5] == ["v_fmamk_f32 v0, v0, 0xbf800000, v0"]  # the pad was consumed as the literal
    assert "invalid instruction encoding" in (ISA / "sweep.gfx1201.err.txt").read_text()


def test_output_out_of_step_with_its_sentinels_is_an_error():
    stdout = (ISA / "sweep.gfx1201.out.txt").read_text()
    with pytest.raises(HyperloomError, match="printed 6 of 7 sentinels"):
        split_at_sentinels(stdout, 7)
    with pytest.raises(HyperloomError, match="lost step"):
        split_at_sentinels(stdout.replace("s_movk_i32 s100, 0x2", "s_movk_i32 s100, 0x9"), 6)


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        ("v_nop                                   ; encoding: [0x00,0x00,0x00,0x7e]", ("v_nop", "[0x00,0x00,0x00,0x7e]")),
        ("s_nop 0", ("s_nop 0", "")),
    ],
)
def test_printed_encodings_are_split_from_the_text(line, parts):
    assert split_encoding(line) == parts


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("v_dual_mul_f32 v0, v1, v2 :: v_dual_add_nc_u32 v3, v4, v5", ["v_dual_mul_f32", "v_dual_add_nc_u32"]),
        ("v_cndmask_b32_e32 v0, v0, v0, vcc_lo", ["v_cndmask_b32"]),
        ("v_add_f32_e64_dpp v0, v1, v2", ["v_add_f32"]),
        ("s_endpgm", ["s_endpgm"]),
    ],
)
def test_printed_instructions_give_their_base_mnemonics(text, names):
    assert mnemonics_in(text) == names


# ---------------------------------------------------------------- crash bisection


def _fake_llvm_mc(poison: str, calls: list[int]):
    """Decodes every group as `v_nop` and echoes sentinels, like llvm-mc; 'crashes' (None) on `poison`."""

    def run(text: str) -> str | None:
        calls.append(text.count("\n"))
        if poison in text:
            return None
        out = ["\t.text"]
        for line in text.splitlines():
            words = [int(b, 16) for b in line.strip("[]").split(",")]
            if len(words) == 4 and words[2:] == [0x64, 0xB0]:
                out.append(f"\ts_movk_i32 s100, 0x{words[1] << 8 | words[0]:x}")
            else:
                out.append("\tv_nop")
        return "\n".join(out) + "\n"

    return run


def test_a_crashing_group_is_bisected_out_and_reported():
    groups = [Group("VOP1", (0x7E000000 | op << 9, PAD)) for op in range(100)]
    poison = encode_group(groups[37].words)
    calls: list[int] = []
    outcome = sweep(groups, _fake_llvm_mc(poison, calls))
    assert [g.words for g in outcome.dropped] == [groups[37].words]
    assert len(outcome.decoded) == 99 and outcome.crashed_runs == 7  # 100 → 50 → 25 → 13 → 7 → 4 → 2 → 1
    assert len(calls) == 1 + 2 * 6  # every crashing run but the last (one group) is split in two


def test_a_run_without_crash_is_decoded_once():
    groups = [Group("SOP1", (0xBE800000 | op << 8, PAD)) for op in range(10)]
    calls: list[int] = []
    decoding = decode(groups, _fake_llvm_mc("never", calls))
    assert len(calls) == 1 and decoding.crashed_runs == 0 and all(lines == ["v_nop"] for lines in decoding.lines)


# ---------------------------------------------------------------- the mnemonic table


def test_the_length_prefixed_table_is_walked_both_ways_from_an_entry():
    excerpt = (ISA / "libLLVM-19.1.7.mnemonics-excerpt.bin").read_bytes()
    anchor = excerpt.find(b"\x19v_swmmac_i32_16x16x64_iu4")
    names = walk_table(excerpt, anchor)
    assert "v_swmmac_i32_16x16x64_iu4" in names and names == sorted(names)
    assert names[-1] == "v_xor_b32"  # the walk stops at the table's end, before the next symbol
    # length bytes 0x09 and 0x0d are whitespace to `strings`; the walk reads them as lengths
    assert {"v_sub_f32", "v_swaprel_b32"} <= set(names)
    assert all(re.fullmatch(r"[a-z0-9_.]+", n) for n in names)


# ---------------------------------------------------------------- assembler errors and lines


@pytest.mark.parametrize(
    ("message", "error_class"),
    [
        ("invalid instruction", "unknown_mnemonic"),
        ("instruction not supported on this GPU", "not_supported_on_this_gpu"),
        ("operands are not valid for this GPU or mode", "operands_not_valid_for_gpu_or_mode"),
        ("invalid operand for instruction", "invalid_operand"),
        ("not a valid operand.", "invalid_operand"),
        ("too few operands for instruction", "too_few_operands"),
        ("unknown token in expression", "other"),
    ],
)
def test_llvm_messages_map_to_their_error_class(message, error_class):
    assert classify(message) == error_class


def test_the_first_error_of_each_line_is_read_from_real_stderr():
    errors = first_errors((ISA / "probe.gfx1201.err.txt").read_text())
    names = (ISA / "probe.gfx1201.in.txt").read_text().split()
    by_name = {names[line - 1]: classify(message) for line, message in errors.items()}
    assert by_name == {
        "v_dot8_i32_iu4": "too_few_operands",
        "v_mfma_i32_16x16x32_i8": "not_supported_on_this_gpu",
        "nonsense_op": "unknown_mnemonic",
        "s_max_f32": "too_few_operands",
        "v_dual_add_nc_u32": "unknown_mnemonic",
    }  # s_endpgm (line 4) needs no operands: no error at all


def test_assembled_lines_are_attributed_through_their_sentinels():
    lines = [l for l in (ISA / "lines.gfx1201.in.txt").read_text().splitlines() if not l.startswith(".long")]
    results = parse_assembled(lines, (ISA / "lines.gfx1201.out.txt").read_text(), (ISA / "lines.gfx1201.err.txt").read_text())
    assert [r.error_class for r in results] == [
        None, "operands_not_valid_for_gpu_or_mode", "too_few_operands", "other", None, "not_supported_on_this_gpu", None
    ]
    assert results[0].encoding == "[0x01,0x40,0x18,0xcc,0x02,0x07,0x12,0x1c]"
    assert results[4].printed == "s_max_num_f32 s0, s1, s2"  # an alias prints under its canonical name
    assert results[6].encoding == "[0x06,0x40,0x56,0xcc,0x00,0x05,0x3a,0x1c]"  # toolchain.md section 4


@pytest.mark.parametrize(
    "line",
    [
        '.incbin "/etc/passwd"',
        ".fill 1000000000",
        "  .rept 100000",
        "foo: .fill 10",
        "lbl :",
        "v_nop\n.fill 10",
        "v_nop\x00",
        's_nop 0 ; "quoted"',
        "",
        "   ",
        "v_add_f32 " + "v0, " * 100,
        "0x7e000000",
    ],
)
def test_probe_lines_that_are_not_one_instruction_are_refused(line):
    with pytest.raises(HyperloomError, match="Next step"):
        check_line(line)


@pytest.mark.parametrize(
    "line",
    ["v_dot8_i32_iu4 v1, v2, v3, v4 neg_lo:[1,1,0]", "v_dual_mul_f32 v0, v1, v2 :: v_dual_mul_f32 v3, v4, v5", "s_endpgm", "hello world"],
)
def test_instruction_lines_pass_the_probe_policy(line):
    assert check_line(line) == line.strip()


# ---------------------------------------------------------------- targets


def test_the_targets_come_from_a_real_cpu_help_listing():
    targets = parse_cpu_help((ISA / "cpu-help.llvm-mc-19.txt").read_text())
    assert {"gfx1201", "gfx1200", "gfx1151", "gfx1100", "gfx1030", "gfx942", "gfx90a", "gfx908"} <= set(targets)
    assert "gfx950" not in targets and "gfx1250" not in targets  # LLVM 19 predates them
    assert all(t.startswith("gfx") for t in targets) and "tahiti" not in targets


@pytest.mark.parametrize(
    ("target", "gen"),
    [
        ("gfx1201", "gfx12"), ("gfx1250", "gfx12"), ("gfx12-generic", "gfx12"), ("gfx1151", "gfx11"), ("gfx1100", "gfx11"),
        ("gfx1030", "gfx10"), ("gfx10-3-generic", "gfx10"), ("gfx942", "gfx9"), ("gfx90a", "gfx9"), ("gfx908", "gfx9"),
        ("gfx950", "gfx9"), ("gfx9-4-generic", "gfx9"), ("gfx803", None), ("gfx600", None), ("tahiti", None),
    ],
)
def test_targets_map_to_the_generation_whose_layouts_they_use(target, gen):
    assert generation(target) == gen


# ---------------------------------------------------------------- capabilities


@pytest.mark.parametrize(
    ("names", "present", "absent"),
    [
        ({"v_dot8_i32_iu4"}, {"dot8_int4_mixed_sign"}, {"dot8_int4_signed", "dot8_int4_unsigned"}),
        ({"v_dot8_i32_i4", "v_dot8c_i32_i4"}, {"dot8_int4_signed"}, {"dot8_int4_mixed_sign"}),
        ({"v_dot4_u32_u8"}, {"dot4_int8_unsigned"}, {"dot4_int8_signed", "dot4_int8_mixed_sign"}),
        ({"v_wmma_i32_16x16x32_iu4"}, {"wmma_int4"}, {"wmma_f16_bf16", "wmma_int8", "swmmac"}),
        ({"v_wmma_f32_16x16x16_bf8_fp8"}, {"wmma_fp8_bf8"}, {"wmma_f16_bf16"}),
        ({"v_swmmac_i32_16x16x64_iu4"}, {"swmmac"}, {"wmma_int4", "smfmac"}),
        ({"v_mfma_f32_32x32x16_fp8_bf8"}, {"mfma", "mfma_fp8_bf8"}, {"mfma_int8", "wmma_fp8_bf8"}),
        ({"v_mfma_f32_16x16x8_xf32", "v_mfma_f32_16x16x8xf32"}, {"mfma_xf32"}, {"mfma_f64"}),
        ({"v_pk_fma_f16"}, {"packed_fp16"}, {"packed_fp32"}),
        ({"v_pk_mov_b32"}, {"packed_fp32"}, set()),
        ({"global_load_tr_b64", "ds_read_b64_tr_b8"}, {"transpose_loads"}, set()),
        ({"ds_read_addtid_b32", "ds_load_addtid_b32"}, set(), {"transpose_loads"}),
        ({"global_load_lds_dword"}, {"lds_direct_loads"}, set()),
        ({"global_atomic_add"}, set(), {"atomic_add_f32"}),
        ({"global_atomic_add_f32", "flat_atomic_fmax_x2"}, {"atomic_add_f32", "atomic_f64"}, {"atomic_min_max_f32"}),
        ({"v_dual_mov_b32"}, {"vopd_dual_issue"}, set()),
        ({"v_cvt_pk_fp8_f32"}, {"fp8_bf8_conversions"}, {"dot4_fp8_bf8"}),
        ({"s_add_f32"}, {"scalar_float_alu"}, set()),
        ({"s_add_u32", "s_wait_idle", "s_waitcnt"}, set(), {"scalar_float_alu", "split_wait_counters"}),
    ],
)
def test_capabilities_follow_from_the_instruction_names(names, present, absent):
    found = {c.name: c for c in capabilities_of(names)}
    assert {n for n in present if found[n].present} == present
    assert not {n for n in absent if found[n].present}
    for name in present:
        assert set(found[name].instructions) <= names and found[name].instructions


def test_every_capability_is_proved_on_some_committed_target():
    proved = {c.name for path in RESULTS.glob("*.json") for c in Census.model_validate_json(path.read_text()).capabilities if c.present}
    unproved = {c.name for c in CAPABILITIES} - proved
    # microscaling and bf16 conversions arrive with gfx950 (LLVM 22), absent from LLVM 19's targets
    assert unproved <= {"microscaling", "bf16_conversions"}, unproved


# ---------------------------------------------------------------- comparison and drift (committed files)


def test_gfx1201_against_gfx1100_shows_what_rdna4_added():
    result = compare(committed("gfx1201"), committed("gfx1100"), 0, 5000)
    assert "v_swmmac_i32_16x16x64_iu4" in result.only_in_target and "v_wmma_i32_16x16x32_iu4" in result.only_in_target
    assert {"swmmac", "dot4_fp8_bf8", "wmma_fp8_bf8"} <= set(result.capabilities_only_in_target)
    assert "v_dot8_i32_iu4" not in result.only_in_target + result.only_in_other  # both have it
    assert result.only_in_target_count == len(result.only_in_target)
    page = compare(committed("gfx1201"), committed("gfx1100"), 10, 5)
    assert page.only_in_target == result.only_in_target[10:15] and page.only_in_target_count == result.only_in_target_count


def test_a_renamed_pair_leaves_both_only_lists_and_is_counted_once():
    plain = compare(committed("gfx1201"), committed("gfx942"), 0, 5000)
    assert "buffer_load_b32" in plain.only_in_target and "buffer_load_dword" in plain.only_in_other
    pairs = [("buffer_load_b32", "buffer_load_dword"), ("s_load_b32", "s_load_dword")]
    renamed = compare(committed("gfx1201"), committed("gfx942"), 0, 5000, pairs)
    assert renamed.renamed == sorted(pairs) and renamed.renamed_count == 2
    assert renamed.only_in_target_count == plain.only_in_target_count - 2 and renamed.only_in_other_count == plain.only_in_other_count - 2
    assert "buffer_load_b32" not in renamed.only_in_target and "buffer_load_dword" not in renamed.only_in_other


def test_an_unchanged_census_has_no_drift_and_a_changed_one_says_how():
    census = committed("gfx942")
    doc = json.loads(document_text(census))
    assert not drift(census, doc).drifted
    changed = json.loads(json.dumps(doc))
    changed["instructions"] = [i for i in changed["instructions"] if i["name"] != "v_mfma_i32_16x16x32_i8"]
    changed["llvm"]["version"] = "22.1.8"
    changed["evidence"]["at"] = "2020-01-01T00:00:00Z"
    report = drift(census, changed)
    assert report.drifted
    assert any("LLVM version 22.1.8 (committed) → 19.1.7" in d for d in report.differences)
    assert any(d.startswith("instructions added: v_mfma_i32_16x16x32_i8") for d in report.differences)
    only_time = json.loads(json.dumps(doc))
    only_time["evidence"]["at"] = "2020-01-01T00:00:00Z"
    only_time["llvm"]["sha256"] = "0" * 64
    assert not drift(census, only_time).drifted  # the time and the binary's hash are not drift
