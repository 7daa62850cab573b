"""A Llama-style decoder built from a transformers config with random weights (nothing downloaded), for profile.

`setup()` reads its options from sys.argv (profile passes `args`), builds the model on the GPU (the CPU when
there is none) and returns the step: one prefill of --prompt tokens, then --decode greedy decode steps with the
KV cache, under torch.inference_mode. The default shape is Llama 3.2 1B's (16 layers, hidden 2048, GQA 32/8).
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable

import torch


def options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="llama_workload")
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--intermediate", type=int, default=8192)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=128256)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt", type=int, default=512, help="prefill tokens")
    parser.add_argument("--decode", type=int, default=8, help="decode steps after the prefill")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    parser.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    return parser.parse_args(argv)


def build(o: argparse.Namespace) -> tuple[torch.nn.Module, torch.Tensor]:
    from transformers import LlamaConfig, LlamaForCausalLM

    device = "cuda" if torch.cuda.is_available() else "cpu"
    config = LlamaConfig(hidden_size=o.hidden, intermediate_size=o.intermediate, num_hidden_layers=o.layers,
                         num_attention_heads=o.heads, num_key_value_heads=o.kv_heads, vocab_size=o.vocab,
                         max_position_embeddings=max(4096, o.prompt + o.decode + 1))
    config._attn_implementation = o.attn
    torch.manual_seed(0)
    dtype = getattr(torch, o.dtype)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # random weights made in bf16 on the device: no fp32 copy, no host round trip
    try:
        with torch.device(device):
            model = LlamaForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(previous)
    prompt = torch.randint(0, o.vocab, (o.batch, o.prompt), device=device)
    return model, prompt


def setup() -> Callable[[], torch.Tensor]:
    o = options(sys.argv[1:])
    model, prompt = build(o)
    keep = {}
    parameters = inspect.signature(model.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):  # as generate() does: the LM head only for the last token
        if name in parameters:
            keep = {name: 1}
            break

    @torch.inference_mode()
    def step() -> torch.Tensor:
        out = model(input_ids=prompt, use_cache=True, **keep)
        cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(o.decode):
            out = model(input_ids=token, past_key_values=cache, use_cache=True, **keep)
            cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        return token

    return step
