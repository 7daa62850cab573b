"""Types and policies every Hyperloom tool shares: evidence, errors, toolchain, workspace."""
