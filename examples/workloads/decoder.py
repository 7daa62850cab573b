"""A workload for `hyperloom workload freeze|bench`: a transformers Qwen2-shaped decoder with random weights (nothing
is downloaded), greedy generation after a fixed prompt. One step is one `generate` call; outputs() returns the tokens,
gated exactly. With the knob `top_logprobs` (e.g. 8) it returns as well each generated token's top-k log-probabilities
(`tokens.top_ids`, `tokens.top_logprobs`), and the gate holds the candidate's log-probabilities within the declared
0.04 nats of the reference's and lets its tokens part only at a near tie (tools/workload/gate/generated.py): in bf16 a
faithful kernel flips near ties, and greedy decoding goes on from there. 0.04 nats is about two bf16 steps of a
logit between 2 and 4: on this repository's CPU run (results/cpu/near_tie) faithful candidates drifted 0.016 and a
layer whose MLP output was 10 % too large 0.055; on a GPU it is ASSUMED until lab/near-tie/near_tie.py measures it.

    hyperloom workload freeze --workload examples/workloads/decoder.py:build --name qwen2
    hyperloom workload bench --name qwen2 --candidate knob:cache=static --candidate compile \\
        --candidate '["knob:cache=static", "decode_loop"]'

(decode_loop acts on generate with a static cache: one graph-replayed step per token; on the H200 2.38x the static
cache, results/h200/optimize/README.md.)

Knobs (the factory's keyword arguments; a Literal lists a knob's values): `cache` picks generate's KV cache, the
rest shape the run (`batch` prompts at once: more device work per host step, where the static cache's decode is
host-bound at batch 1 on the H200; `top_logprobs` above 0: the near-tie gate). On a CPU pass small sizes:
--knobs '{"layers": "2", "hidden": "256"}'.
"""

from __future__ import annotations

from typing import Literal

import torch


class Decoder:
    """step(): greedy tokens after the prompt; outputs(): the tokens of the last step with their top-k log-probabilities;
    model: what levers wrap; points: where optimize's sweep re-times its final stack (knob values over the campaign's);
    tolerances: what freeze declares for the outputs unless its caller says otherwise."""

    points = [{"prompt_tokens": "1024"}, {"new_tokens": "64"}, {"batch": "8"}]

    def __init__(self, model: torch.nn.Module, prompt: torch.Tensor, new_tokens: int, cache: str, top_logprobs: int) -> None:
        self.model, self.prompt, self.new_tokens, self.cache, self.top_logprobs = model, prompt, new_tokens, cache, top_logprobs
        self.tokens, self.logits = prompt, ()
        self.tolerances = {"tokens.top_logprobs": {"atol": 0.04}} if top_logprobs else {}

    def inputs(self, seed: int) -> None:
        """A new prompt of the same shape, drawn from `seed` on the prompt's device and written into the tensor step()
        reads (the gate's fresh inputs; in place, so a captured graph sees it). Drawn outside the timed step: on the
        device it costs a leg little wall time."""
        device = self.prompt.device
        fresh = torch.randint(1, self.model.config.vocab_size, tuple(self.prompt.shape), device=device,
                              generator=torch.Generator(device=device).manual_seed(seed))
        self.prompt.copy_(fresh)

    def step(self) -> None:
        options = {"cache_implementation": "static"} if self.cache == "static" else {}
        with torch.inference_mode():
            out = self.model.generate(self.prompt, attention_mask=torch.ones_like(self.prompt), max_new_tokens=self.new_tokens,
                                      min_new_tokens=self.new_tokens, do_sample=False, pad_token_id=0, return_dict_in_generate=True,
                                      output_logits=self.top_logprobs > 0, **options)
        self.tokens, self.logits = out.sequences, out.logits

    def outputs(self) -> dict[str, torch.Tensor]:
        if not self.top_logprobs:
            return {"tokens": self.tokens}
        top = torch.stack(self.logits, dim=1).float().log_softmax(-1).topk(self.top_logprobs, dim=-1)  # [batch, steps, k]
        return {"tokens": self.tokens, "tokens.top_ids": top.indices, "tokens.top_logprobs": top.values}


def build(cache: Literal["dynamic", "static"] = "dynamic", layers: int = 8, hidden: int = 1536, prompt_tokens: int = 256,
          new_tokens: int = 16, dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16", batch: int = 1,
          top_logprobs: int = 0) -> Decoder:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    heads = max(1, hidden // 128)
    config = Qwen2Config(hidden_size=hidden, intermediate_size=hidden * 35 // 6, num_hidden_layers=layers, num_attention_heads=heads,
                         num_key_value_heads=max(1, heads // 6), vocab_size=151936, max_position_embeddings=4096, tie_word_embeddings=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = Qwen2ForCausalLM(config).to(device=device, dtype=getattr(torch, dtype)).eval()
    model.generation_config.pad_token_id = 0
    prompt = torch.randint(1, config.vocab_size, (batch, prompt_tokens), generator=torch.Generator().manual_seed(1)).to(device)
    return Decoder(model, prompt, new_tokens, cache, top_logprobs)
