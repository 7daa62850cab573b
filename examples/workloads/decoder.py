"""A workload for `hyperloom workload freeze|bench`: a transformers Qwen2-shaped decoder with random weights (nothing
is downloaded), greedy generation after a fixed prompt. One step is one `generate` call; outputs() gates the tokens.

    hyperloom workload freeze --workload examples/workloads/decoder.py:build --name qwen2
    hyperloom workload bench --name qwen2 --candidates '[["knob:cache=static"], ["compile"], ["knob:cache=static", "decode_loop"]]'

(decode_loop acts on generate with a static cache: one graph-replayed step per token; on the H200 2.38x the static
cache, results/h200/optimize/README.md.)

Knobs (the factory's keyword arguments; a Literal lists a knob's values): `cache` picks generate's KV cache, the
rest shape the run (`batch` prompts at once: more device work per host step, where the static cache's decode is
host-bound at batch 1 on the H200). On a CPU pass small sizes: --knobs '{"layers": "2", "hidden": "256"}'.
"""

from __future__ import annotations

from typing import Literal

import torch


class Decoder:
    """step(): greedy tokens after the prompt; outputs(): the tokens of the last step; model: what levers wrap;
    points: where optimize's sweep re-times its final stack (knob values over the campaign's)."""

    points = [{"prompt_tokens": "1024"}, {"new_tokens": "64"}, {"batch": "8"}]

    def __init__(self, model: torch.nn.Module, prompt: torch.Tensor, new_tokens: int, cache: str) -> None:
        self.model, self.prompt, self.new_tokens, self.cache = model, prompt, new_tokens, cache
        self.tokens = prompt

    def step(self) -> None:
        options = {"cache_implementation": "static"} if self.cache == "static" else {}
        with torch.inference_mode():
            self.tokens = self.model.generate(self.prompt, attention_mask=torch.ones_like(self.prompt), max_new_tokens=self.new_tokens,
                                              min_new_tokens=self.new_tokens, do_sample=False, pad_token_id=0, **options)

    def outputs(self) -> dict[str, torch.Tensor]:
        return {"tokens": self.tokens}


def build(cache: Literal["dynamic", "static"] = "dynamic", layers: int = 8, hidden: int = 1536, prompt_tokens: int = 256, new_tokens: int = 16,
          dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16", batch: int = 1) -> Decoder:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    heads = max(1, hidden // 128)
    config = Qwen2Config(hidden_size=hidden, intermediate_size=hidden * 35 // 6, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=max(1, heads // 6), vocab_size=151936, max_position_embeddings=4096, tie_word_embeddings=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Qwen2ForCausalLM(config).to(device=device, dtype=getattr(torch, dtype)).eval()
    model.generation_config.pad_token_id = 0
    prompt = torch.randint(1, config.vocab_size, (batch, prompt_tokens), generator=torch.Generator().manual_seed(1)).to(device)
    return Decoder(model, prompt, new_tokens, cache)
