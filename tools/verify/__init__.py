"""disasm_verify: prove from the disassembly which instructions a kernel does and does not use."""
