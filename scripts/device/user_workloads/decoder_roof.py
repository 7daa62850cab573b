"""Issue 46's workload, written as a user would from the skill's workload page: a Llama-3.2-1B-shaped decoder with
random weights in bf16 (tied embeddings), a plain greedy `generate` of 64 tokens after a 128-token prompt on the
default cache, its tokens and their top-8 log-probabilities returned; `inputs(seed)` writes a new prompt in place. One
knob, the batch, and the sweep's points at 8 and 32 (the roof's batch points); no tolerance in the workload (freeze
declares one: `--k`)."""

from typing import Literal

import torch
from transformers import LlamaConfig, LlamaForCausalLM

LLAMA_1B = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                vocab_size=128256)


class Decoder:
    points = [{"batch": "8"}, {"batch": "32"}]

    def __init__(self, batch):
        torch.manual_seed(0)
        config = LlamaConfig(**LLAMA_1B, max_position_embeddings=4096, tie_word_embeddings=True, rope_theta=500000.0)
        self.model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
        self.prompt = torch.randint(0, config.vocab_size, (batch, 128), device="cuda")

    def inputs(self, seed):
        generator = torch.Generator(device="cuda").manual_seed(seed)
        self.prompt.copy_(torch.randint(0, self.model.config.vocab_size, self.prompt.shape, generator=generator, device="cuda"))

    def step(self):
        with torch.inference_mode():
            out = self.model.generate(self.prompt, attention_mask=torch.ones_like(self.prompt), max_new_tokens=64, do_sample=False,
                                      pad_token_id=0, return_dict_in_generate=True, output_logits=True)
        top = torch.stack(out.logits, dim=1).float().log_softmax(-1).topk(8, dim=-1)
        self.result = {"tokens": out.sequences, "tokens.top_ids": top.indices, "tokens.top_logprobs": top.values}

    def outputs(self):
        return self.result


def build(batch: Literal["1", "8", "32"] = "1"):
    return Decoder(int(batch))
