"""A user's encoder: a BERT-base-shaped model with random weights in fp16, batch 32 x 256, its last hidden state
returned; `inputs(seed)` writes new token ids in place. No knobs, no tolerance declared."""

import torch
from transformers import BertConfig, BertModel


class Encoder:
    def __init__(self):
        torch.manual_seed(0)
        self.model = BertModel(BertConfig(attn_implementation="sdpa")).to(device="cuda", dtype=torch.float16).eval()
        self.ids = torch.randint(0, 30522, (32, 256), device="cuda")
        self.mask = torch.ones_like(self.ids)

    def inputs(self, seed):
        generator = torch.Generator(device="cuda").manual_seed(seed)
        self.ids.copy_(torch.randint(0, 30522, self.ids.shape, generator=generator, device="cuda"))

    def step(self):
        with torch.inference_mode():
            self.hidden = self.model(input_ids=self.ids, attention_mask=self.mask).last_hidden_state

    def outputs(self):
        return {"hidden": self.hidden}


def build():
    return Encoder()
