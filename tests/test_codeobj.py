"""Code objects: recognised by their headers, disassembled per kernel, bundles unpacked."""

from __future__ import annotations

import os
import shutil
from collections import Counter
import sys
from pathlib import Path

import pytest

from helpers import FIXTURES
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.codeobj.disasm import Listing, base_mnemonic, disassemble, split_objdump
from hyperloom.tools.codeobj.formats import Kind, read_members

CODEOBJ = FIXTURES / "codeobj"
needs_llvm = pytest.mark.skipif(shutil.which("llvm-objdump-19") is None and shutil.which("llvm-objdump") is None,
                                reason="LLVM (llvm-objdump) is not installed; .ci/run installs llvm-19")


def test_objdump_text_splits_into_kernels_without_padding():
    listing = Listing("gfx1201", split_objdump((CODEOBJ / "dot8_lds.gfx1201.objdump.txt").read_text()))
    symbols = listing.symbols
    assert set(symbols) == {"dot8k", "ldsk"}
    assert symbols["dot8k"][-1].mnemonic == "s_endpgm" and symbols["ldsk"][-1].mnemonic == "s_endpgm"
    dot = next(i for i in symbols["dot8k"] if i.mnemonic.startswith("v_dot8"))
    assert dot.text == "v_dot8_i32_iu4 v1, v1, v2, v3 neg_lo:[1,1,0]" and dot.encoding == "CC184001 7C0E0501"
    assert dot.address == 0x1848 and listing.counts("ldsk")["s_code_end"] == 0
    assert listing.counts("dot8k") == Counter(i.mnemonic for i in symbols["dot8k"])
    assert [i.address for i in listing.find("dot8k", {"global_load_b32"}, 2)] == [0x1820, 0x182C]


@pytest.mark.parametrize(
    ("mnemonic", "base"),
    [("v_lshlrev_b32_e32", "v_lshlrev_b32"), ("v_add_f32_e64_dpp", "v_add_f32"), ("v_dot4c_i32_i8_e32", "v_dot4c_i32_i8"),
     ("s_endpgm", "s_endpgm")],
)
def test_encoding_suffixes_are_stripped_to_the_base_name(mnemonic, base):
    assert base_mnemonic(mnemonic) == base


@needs_llvm
def test_a_real_code_object_names_its_target_and_kernels():
    (listing,) = disassemble(CODEOBJ / "dot8_lds.gfx1201.hsaco", "dot8_lds")
    assert listing.target == "gfx1201" and set(listing.symbols) == {"dot8k", "ldsk"}
    assert "ds_load_b32" in {i.mnemonic for i in listing.symbols["ldsk"]}


@needs_llvm
def test_an_offload_bundle_yields_one_listing_per_gfx_target():
    listings = disassemble(CODEOBJ / "scale.gfx1201+gfx942.bundle", "bundle")
    assert sorted(listing.target for listing in listings) == ["gfx1201", "gfx942"]
    assert all("scale" in listing.symbols for listing in listings)


def test_files_that_are_not_code_objects_are_refused(tmp_path):
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(HyperloomError, match="not a code object"):
        read_members(tmp_path / "x.txt", "x.txt")
    host_binary = Path(os.path.realpath(sys.executable))  # a real host ELF executable
    with pytest.raises(HyperloomError, match=r"machine \d+, not a GPU code object"):
        read_members(host_binary, "python")


def test_a_real_bundle_header_parses_without_llvm():
    members = read_members(CODEOBJ / "scale.gfx1201+gfx942.bundle", "bundle")
    assert [m.kind for m in members] == [Kind.AMDGPU, Kind.AMDGPU]
    assert sorted(m.bundle_triple.rsplit("-", 1)[-1] for m in members) == ["gfx1201", "gfx942"]


def test_cuobjdump_sass_parses_into_functions_and_opcodes():
    from hyperloom.tools.codeobj.sass import parse_resource_usage, parse_sass, sass_base

    listing = parse_sass((CODEOBJ / "dp4a.sm_90.sass.txt").read_text())
    assert listing.target == "sm_90" and list(listing.texts) == ["dp4a"]
    counts = listing.counts("dp4a")
    idp = [m for m in counts if sass_base(m) == "IDP"]
    assert idp == ["IDP.4A.S8.S8"] and counts["EXIT"] >= 1
    (first,) = listing.find("dp4a", {"LDC"}, 1)
    assert (first.address, first.operands) == (0, "R1, c[0x0][0x28]")
    usage = parse_resource_usage((CODEOBJ / "dp4a.sm_90.res-usage.txt").read_text())
    assert usage["dp4a"] == {"REG": 12, "STACK": 0, "SHARED": 0, "LOCAL": 0}


def test_local_memory_traffic_shows_in_the_spilling_kernel_sass():
    from hyperloom.tools.codeobj.sass import parse_resource_usage, parse_sass, sass_base

    listing = parse_sass((CODEOBJ / "spill.sm_90.sass.txt").read_text())
    assert set(listing.texts) == {"spill", "privarr"}
    local = {m for name in listing.texts for m in listing.counts(name) if sass_base(m) in ("STL", "LDL")}
    assert local
    usage = parse_resource_usage((CODEOBJ / "spill.sm_90.res-usage.txt").read_text())
    assert usage["privarr"]["STACK"] == 1024 and usage["spill"]["STACK"] == 0


def test_a_disassembler_that_hangs_is_killed_at_the_deadline_and_named(monkeypatch):
    import time

    from hyperloom.tools.codeobj import disasm

    monkeypatch.setattr(disasm, "TIMEOUT_S", 0.3)
    started = time.monotonic()
    with pytest.raises(HyperloomError, match="disassembling big.hsaco did not finish within 0.3 s"):
        disasm._objdump_all([["sleep", "30"], ["true"]], "big.hsaco")
    assert time.monotonic() - started < 5
    assert disasm._objdump_all([["echo", "listing"], ["true"]], "small.hsaco") == ["listing\n", ""]  # no deadline left behind
    with pytest.raises(HyperloomError, match=r"llvm-objdump failed on bad.hsaco \(exit code 1\)"):
        disasm._objdump_all([["false"]], "bad.hsaco")
