"""spec_init, spec_check and spec_example: drafting, checking and copying kernel specs."""
