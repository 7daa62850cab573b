"""A user's conv net: torchvision's ResNet-50 with random weights in fp16, eval mode, batch 64 x 3 x 224 x 224, its
logits returned. No knobs, no tolerance declared."""

import torch
import torchvision


class Conv:
    def __init__(self):
        torch.manual_seed(0)
        self.model = torchvision.models.resnet50(weights=None).to(device="cuda", dtype=torch.float16).eval()
        self.images = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.float16)

    def step(self):
        with torch.inference_mode():
            self.logits = self.model(self.images)

    def outputs(self):
        return {"logits": self.logits}


def build():
    return Conv()
