"""smi: what the vendor management tools (nvidia-smi, amd-smi, rocm-smi) print, read into plain types; imports no other tool."""
