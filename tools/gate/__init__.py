"""correctness_gate: candidate outputs against references, under a tolerance declared in advance."""
