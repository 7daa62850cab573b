"""A user's conv net left in float32 (no `.half()`): torchvision's EfficientNet-B0 with random weights, eval mode,
batch 32 x 3 x 224 x 224, its logits returned; inputs(seed) draws a new batch of images in place. No knobs, no
tolerance declared. Before session 34 its twin on a GPU was float32, the model itself: the freeze was exact."""

import torch
import torchvision


class Conv:
    def __init__(self):
        torch.manual_seed(0)
        self.model = torchvision.models.efficientnet_b0(weights=None).to("cuda").eval()
        self.images = torch.randn(32, 3, 224, 224, device="cuda")

    def inputs(self, seed):
        generator = torch.Generator(device="cuda").manual_seed(seed)
        self.images.copy_(torch.randn(self.images.shape, generator=generator, device="cuda"))

    def step(self):
        with torch.inference_mode():
            self.logits = self.model(self.images)

    def outputs(self):
        return {"logits": self.logits}


def build():
    return Conv()
