"""Run ON THE DEVICE (tune_h200.sh visible): which GPU a worker pinned to device N reaches when the caller's
CUDA_VISIBLE_DEVICES lists the GPUs in reverse, read back from the worker's CUDA context (its PCI bus id) and compared
with nvidia-smi's bus id of the GPU the variable lists at position N; and the idle GPUs as the caller numbers them."""

from __future__ import annotations

import os
import subprocess
import sys

from hyperloom.tools.runtime.launcher import pinned_env
from hyperloom.tools.smi.nvidia import BUS_ARGS, parse_bus_ids
from hyperloom.tools.tune.devices import idle_gpus

PROBE = ("import torch; p = torch.cuda.get_device_properties(0); "
         "print(f'{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0', torch.cuda.device_count())")


def main() -> int:
    rows = subprocess.run(["nvidia-smi", *BUS_ARGS], capture_output=True, text=True, check=True).stdout
    bus_of = parse_bus_ids(rows)
    listed = sorted(bus_of, reverse=True)
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, listed))
    failures = 0
    for device, physical in enumerate(listed):
        env = pinned_env("cuda", device)
        seen, count = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True).stdout.split()
        expected = bus_of[physical][-len(seen):]
        ok = seen.lower() == expected and count == "1"
        failures += not ok
        print(f"{'OK  ' if ok else 'FAIL'} CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']} device {device}: worker's "
              f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']}, its one GPU at {seen} (nvidia-smi GPU {physical} is at "
              f"{bus_of[physical]})")
    print(f"idle GPUs as this process numbers them: {idle_gpus('cuda')} (nvidia-smi's idle ones, mapped through "
          f"{os.environ['CUDA_VISIBLE_DEVICES']})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
