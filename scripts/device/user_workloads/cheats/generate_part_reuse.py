"""A cheat for the GPU run (parting, then logits reused), on the small user decoder: generate honestly, then in each
row part at its nearest tie (the runner-up taken where the model's top two are closest), repeat that token to the end,
and report the parting step's logits for every step after it. The tokens after the parting may pass the continuation check (a random-weight model
repeats its token); the log-probabilities reported there are not the reference model's on that prefix."""

import torch

from hyperloom.tools.workload.overrides import replace


def make(original):
    def generate(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        logits = torch.stack(out.logits, dim=1).float()  # [rows, steps, vocab]
        top = logits.log_softmax(-1).topk(2, dim=-1)
        gap = top.values[..., 0] - top.values[..., 1]
        start = out.sequences.shape[1] - logits.shape[1]
        for row in range(out.sequences.shape[0]):
            step = int(gap[row, :-1].argmin())
            out.sequences[row, start + step:] = top.indices[row, step, 1]
            logits[row, step + 1:] = logits[row, step]
        out.logits = tuple(logits.unbind(dim=1))
        return out
    return generate


replace("transformers.generation.utils:GenerationMixin.generate", make)
