"""bench: kernel-only timing of a gated kernel, or of any command that prints its samples."""
