"""The workload's gate, controller side: the frozen outputs a candidate is judged against (frozen.py, pinned.py), the
tolerance derived from the model's own numerics (twin.py, derived.py), generated tokens and their continuation
(generated.py, continuation.py), and every timed step's outputs proved produced (digest.py)."""
