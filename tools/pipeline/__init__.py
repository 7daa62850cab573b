"""The evaluation pipeline every judging tool runs on: a spec's variant launched, built by its language, gated on
every input set, then timed."""
