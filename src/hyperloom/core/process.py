"""Running external tools: argument lists, never a shell; always a timeout; stderr kept."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from hyperloom.core.errors import HyperloomError


def run_checked(
    args: Sequence[str | Path],
    *,
    timeout_s: float,
    what: str,
    input_text: str | None = None,
    cwd: Path | None = None,
    ok_codes: Sequence[int] | None = (0,),
) -> subprocess.CompletedProcess[str]:
    """Run a tool; a timeout, a failure to start, or an exit code outside `ok_codes` is an error.

    `what` names the step for the message, e.g. "disassembling k.hsaco with llvm-objdump".
    `ok_codes=None` accepts any exit status (a caller that tells crashes from failures itself).
    """
    argv = [str(a) for a in args]
    try:
        proc = subprocess.run(
            argv, input=input_text, capture_output=True, text=True, timeout=timeout_s, cwd=cwd, check=False,
            errors="replace",
        )
    except subprocess.TimeoutExpired as exc:
        raise HyperloomError(f"{what} did not finish within {timeout_s:g} s", "check the input, or raise the timeout") from exc
    except OSError as exc:
        raise HyperloomError(f"{what} could not start {argv[0]} ({exc.strerror})", "check the tool with `hyperloom toolchain`") from exc
    if ok_codes is not None and proc.returncode not in ok_codes:
        tail = " | ".join(line for line in proc.stderr.strip().splitlines()[-5:]) or "no message"
        signal = f" (killed by signal {-proc.returncode})" if proc.returncode < 0 else ""
        raise HyperloomError(f"{what} failed with exit code {proc.returncode}{signal}: {tail}",
                             "read the message above; fix the input or the tool")
    return proc
