"""isa_census, isa_probe, isa_audit: what an AMD GPU target's instruction set really holds, measured with LLVM."""
