"""The same math in torch (unpack, then torch._int_mm), for torch.compile's figure beside the Triton kernel."""

import torch


def make(inputs: dict[str, torch.Tensor], shape: dict[str, int]):  # noqa: ANN201
    def int2mm(a: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
        weights = torch.cat([((packed >> (2 * i)) & 3).to(torch.int8) - 1 for i in range(4)], dim=0)
        return torch._int_mm(a, weights)

    return int2mm, (inputs["a_ptr"], inputs["b_ptr"])
