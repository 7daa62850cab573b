"""How far a float32 model's baseline sits from its twin, the twin made as before session 34 (float32, cuDNN's TF32
default) and as now (float64, TF32 off): the first is the model itself, so the freeze's bound was one float32 epsilon.
Run ON THE DEVICE: python3 lab/twin-exactness/twin_exactness.py [OUT.json]"""

import copy
import json
import sys

import torch
import torchvision

from hyperloom.tools.workload.gate.twin import errors


def rel_l2(c: torch.Tensor, t: torch.Tensor) -> float:
    """The twin rule's own measure (twin.errors), on the host."""
    return errors(c.cpu().numpy(), t.cpu().numpy())["rel_l2"]


def main() -> None:
    torch.manual_seed(0)
    model = torchvision.models.efficientnet_b0(weights=None).cuda().eval()
    images = torch.randn(32, 3, 224, 224, device="cuda")
    with torch.inference_mode():
        baseline = model(images)
        old_twin = copy.deepcopy(model)(images)  # float32, TF32 as torch defaults it (cuDNN on)
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        f32_exact = copy.deepcopy(model)(images)
        new_twin = copy.deepcopy(model).double()(images.double())
        compiled = torch.compile(copy.deepcopy(model))
        torch.backends.cudnn.allow_tf32 = True
        candidate = compiled(images)
    row = {"cudnn_allow_tf32_default": True, "baseline_vs_old_twin": rel_l2(baseline, old_twin),
           "baseline_vs_f32_no_tf32": rel_l2(baseline, f32_exact), "baseline_vs_new_twin": rel_l2(baseline, new_twin),
           "compile_vs_new_twin": rel_l2(candidate, new_twin), "float32_eps": torch.finfo(torch.float32).eps}
    print(json.dumps(row, indent=1))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(row, f, indent=1)


if __name__ == "__main__":
    main()
