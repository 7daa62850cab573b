"""A cheat for the GPU run (parting): one forward over the prompt, its top token for the first position, then that
token repeated for the rest, with the first position's top-8 log-probabilities copied down. Only the first token is
real; teacher forcing of the reference's tokens and the continuation's scoring must refuse it."""

import sys

import torch

from hyperloom.tools.workload.overrides import replace

sys.path.insert(0, "scripts/device/user_workloads")
NEW_TOKENS = 32


def make(original):
    def step(self):
        with torch.inference_mode():
            logits = self.model(self.prompt, attention_mask=torch.ones_like(self.prompt)).logits[:, -1:].float()
        top = logits.log_softmax(-1).topk(8, dim=-1)
        first = top.indices[:, :, 0]
        self.result = {"tokens": torch.cat([self.prompt, first.repeat(1, NEW_TOKENS)], dim=1),
                       "tokens.top_ids": top.indices.repeat(1, NEW_TOKENS, 1), "tokens.top_logprobs": top.values.repeat(1, NEW_TOKENS, 1)}
    return step


replace("decoder_small:Decoder.step", make)
