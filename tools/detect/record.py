"""Record a root: run detect on this machine and keep every file it read and every command's output.

The folder replays with `hyperloom detect --root DIR`; attach it to a bug report, or add it to the
test fixtures. Only the environment variables detect's traps look at are kept.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from hyperloom.tools.detect.detect import detect
from hyperloom.tools.detect.root import FileRead, Output, SystemView, recorded_name

TRAP_VARIABLES = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "HSA_OVERRIDE_GFX_VERSION")


@dataclass
class RecordingSystem(SystemView):
    """The live system, with a copy of each read kept under `into`."""

    into: Path = Path("recorded")

    def read(self, absolute: str) -> FileRead:
        read = super().read(absolute)
        if read.text is not None:
            target = self.into / absolute.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(read.text, encoding="utf-8")
        return read

    def listdir(self, absolute: str) -> list[str]:
        names = super().listdir(absolute)
        if names:
            (self.into / absolute.lstrip("/")).mkdir(parents=True, exist_ok=True)
        return names

    def run(self, tool: str, *args: str) -> Output:
        output = super().run(tool, *args)
        if output.text is not None:
            target = self.into / "commands" / recorded_name(output.command)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(output.text, encoding="utf-8")
        return output


def record(into: Path, timeout_s: float = 10.0) -> None:
    system = RecordingSystem(timeout_s=timeout_s, into=into)
    detect(system)
    kept = {name: value for name in TRAP_VARIABLES if (value := system.environ().get(name)) is not None}
    (into / "proc/self").mkdir(parents=True, exist_ok=True)
    (into / "proc/self/environ").write_text("".join(f"{k}={v}\0" for k, v in kept.items()), encoding="utf-8")


if __name__ == "__main__":
    record(Path(sys.argv[1] if len(sys.argv) > 1 else "recorded"))
