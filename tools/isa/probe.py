"""The assembler side: bare-mnemonic probes and full instruction lines, with LLVM's error classes.

One llvm-mc run checks many lines, as it reports each error (`<stdin>:LINE:COL: error: MESSAGE`) and goes on (toolchain.md 5);
its output is tied to input lines by `.long` sentinels, a directive no probe line may start with."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from hyperloom.core.errors import HyperloomError
from hyperloom.core.process import run_checked
from hyperloom.tools.isa.models import ErrorClass
from hyperloom.tools.isa.sweep import split_encoding
from hyperloom.tools.isa.targets import TRIPLE

TIMEOUT_S = 60.0
MAX_LINE_CHARS = 300
SENTINEL_BASE = 0x48594C00  # a recognisable base; line i is followed by `.long SENTINEL_BASE + i`
# (message prefix, class); toolchain.md 5 lists the first five as the ones the probe meets.
ERROR_CLASSES: tuple[tuple[str, ErrorClass], ...] = (
    ("invalid instruction", "unknown_mnemonic"),
    ("instruction not supported on this GPU", "not_supported_on_this_gpu"),
    ("operands are not valid for this GPU or mode", "operands_not_valid_for_gpu_or_mode"),
    ("invalid operand for instruction", "invalid_operand"),
    ("not a valid operand", "invalid_operand"),
    ("too few operands for instruction", "too_few_operands"),
)
ABSENT: frozenset[ErrorClass] = frozenset({"unknown_mnemonic", "not_supported_on_this_gpu"})
_ERROR = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$")
_MNEMONIC = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*")
_SENTINEL = re.compile(r"^\s*\.long\s+(\d+)\s*$")


def classify(message: str) -> ErrorClass:
    """LLVM's error message → its class."""
    for prefix, error_class in ERROR_CLASSES:
        if message.startswith(prefix):
            return error_class
    return "other"


def first_errors(stderr: str) -> dict[int, str]:
    """The first error message reported for each input line (1-based)."""
    found: dict[int, str] = {}
    for line in stderr.splitlines():
        if match := _ERROR.match(line):
            found.setdefault(int(match.group(1)), match.group(2).strip())
    return found


def _assembler(llvm_mc: str, target: str, mattr: str | None, *, show: bool) -> list[str]:
    args = [llvm_mc, f"-triple={TRIPLE}", f"-mcpu={target}"]
    if mattr:
        args.append(f"-mattr={mattr}")
    return [*args, "--show-encoding"] if show else [*args, "-o", "/dev/null"]


def probe_mnemonics(llvm_mc: str, target: str, names: Sequence[str]) -> dict[str, ErrorClass | None]:
    """Each bare mnemonic → None when accepted cleanly, else its error class.

    'too_few_operands' means the mnemonic is valid on this target; ABSENT classes mean it is not.
    """
    proc = run_checked(
        _assembler(llvm_mc, target, None, show=False),
        timeout_s=TIMEOUT_S,
        what=f"the mnemonic probe of {target}",
        input_text="\n".join(names) + "\n",
        ok_codes=(0, 1),
    )
    errors = first_errors(proc.stderr)
    return {name: (classify(errors[i]) if i in errors else None) for i, name in enumerate(names, start=1)}


def check_line(line: str) -> str:
    """A probe line as given, or an error when it is anything but one instruction statement."""
    stripped = line.strip()
    problem = None
    if not stripped:
        problem = "is empty"
    elif len(line) > MAX_LINE_CHARS:
        problem = f"is longer than {MAX_LINE_CHARS} characters"
    elif any(ord(c) < 0x20 or ord(c) == 0x7F for c in line):
        problem = "contains control characters (one instruction per line)"
    elif not (match := _MNEMONIC.match(stripped)):
        problem = "does not start with an instruction mnemonic (directives such as .include are refused)"
    elif stripped[match.end() :].lstrip().startswith(":") and not stripped[match.end() :].lstrip().startswith("::"):
        problem = "starts with a label"
    elif '"' in line or "\\" in line:
        problem = "contains quotes or backslashes, which no instruction needs"
    if problem:
        raise HyperloomError(
            f"probe line {line[:80]!r} {problem}",
            "give one instruction per line, e.g. 'v_dot8_i32_iu4 v1, v2, v3, v4'",
        )
    return stripped


@dataclass(frozen=True)
class Assembled:
    """One line through the assembler: accepted with its printed form and encoding, or its error."""

    line: str
    error: str | None
    printed: str | None
    encoding: str | None

    @property
    def error_class(self) -> ErrorClass | None:
        return classify(self.error) if self.error is not None else None


def probe_input(lines: Sequence[str]) -> str:
    """Assembler input: each line, then its `.long` sentinel."""
    return "".join(f"{line}\n.long {SENTINEL_BASE + i}\n" for i, line in enumerate(lines))


def parse_assembled(lines: Sequence[str], stdout: str, stderr: str) -> list[Assembled]:
    """Each line's first error (line 2i+1 of the input) or its first printed instruction."""
    errors = first_errors(stderr)
    outputs: list[list[str]] = [[] for _ in lines]
    index = 0
    for out in stdout.splitlines():
        if match := _SENTINEL.match(out):
            if int(match.group(1)) != SENTINEL_BASE + index:
                raise HyperloomError("llvm-mc's output lost step with the probe lines", "report this llvm-mc version")
            index += 1
        elif index < len(lines) and "; encoding:" in out:
            outputs[index].append(out)
    if index != len(lines):
        tail = " | ".join(stderr.strip().splitlines()[-3:]) or "no message"
        raise HyperloomError(f"llvm-mc stopped after {index} of {len(lines)} probe lines ({tail})", "check the lines and try again")
    results = []
    for i, line in enumerate(lines):
        error = errors.get(2 * i + 1)
        printed = encoding = None
        if error is None and outputs[i]:
            printed, encoding = split_encoding(outputs[i][0])
        results.append(Assembled(line, error, printed, encoding))
    return results


def assemble_lines(llvm_mc: str, target: str, lines: Sequence[str], mattr: str | None = None) -> list[Assembled]:
    """Assemble every line in one llvm-mc process; each line's output sits before its sentinel."""
    proc = run_checked(
        _assembler(llvm_mc, target, mattr, show=True),
        timeout_s=TIMEOUT_S,
        what=f"assembling {len(lines)} line(s) for {target}",
        input_text=probe_input(lines),
        ok_codes=(0, 1),
    )
    return parse_assembled(lines, proc.stdout, proc.stderr)
