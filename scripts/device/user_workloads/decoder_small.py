"""A small Llama-family decoder for the GPU cheat run (issue 45): decoder_llama.py's workload (a plain greedy generate,
its top-8 log-probabilities, inputs(seed)) at 4 layers, hidden 512."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from decoder_llama import Decoder  # noqa: E402

SMALL = dict(hidden_size=512, intermediate_size=2048, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, vocab_size=32000)


def build():
    return Decoder(SMALL)
