"""A user's conv net as a newcomer writes it from the skill's page: torchvision's ResNet-50 with random weights in
fp16, eval mode, batch 64 x 3 x 224 x 224, its logits returned; inputs(seed) draws the images on the host with a
torch.Generator and copies them in (about 90 ms of host work a step on the H100's host, the model about 8 ms).
No knobs, no tolerance declared."""

import torch
import torchvision


class Conv:
    def __init__(self):
        torch.manual_seed(0)
        self.model = torchvision.models.resnet50(weights=None).to(device="cuda", dtype=torch.float16).eval()
        self.images = torch.empty(64, 3, 224, 224, device="cuda", dtype=torch.float16)
        self.inputs(0)

    def inputs(self, seed):
        images = torch.randn(64, 3, 224, 224, generator=torch.Generator().manual_seed(seed))
        self.images.copy_(images)

    def step(self):
        with torch.inference_mode():
            self.logits = self.model(self.images)

    def outputs(self):
        return {"logits": self.logits}


def build():
    return Conv()
