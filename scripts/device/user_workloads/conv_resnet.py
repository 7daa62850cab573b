"""A user's conv net: torchvision's ResNet-50 with random weights in fp16, eval mode, batch 64 x 3 x 224 x 224, its
logits returned; inputs(seed) draws a new batch of images in place (the gate's fresh inputs). No knobs, no tolerance
declared."""

import torch
import torchvision


class Conv:
    def __init__(self):
        torch.manual_seed(0)
        self.model = torchvision.models.resnet50(weights=None).to(device="cuda", dtype=torch.float16).eval()
        self.images = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.float16)

    def inputs(self, seed):
        generator = torch.Generator(device="cuda").manual_seed(seed)
        self.images.copy_(torch.randn(self.images.shape, generator=generator, device="cuda", dtype=torch.float16))

    def step(self):
        with torch.inference_mode():
            self.logits = self.model(self.images)

    def outputs(self):
        return {"logits": self.logits}


def build():
    return Conv()
