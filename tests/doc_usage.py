"""The `hyperloom …` commands the docs write, found and read as usage lines, so the real CLI parser can judge each.

A usage line may hold placeholders (TARGET, N, F.py:build), optional groups ([--x A], [--a | --b]), alternatives
(status|stop|report, 32|64) and repetition (TARGET…, ARG …, a bare … for more options). `expansions` turns one into
every concrete command it stands for (each optional group left out, or each of its alternatives put in), and
`lenient` lets a parser take a placeholder wherever it takes a value.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PLACEHOLDER_RE = re.compile(r"[A-Z][A-Z0-9_]*")
ELLIPSIS = "…"
MOST_EXPANSIONS = 512  # a usage line standing for more commands than this is a mistake in the line (or in this reader)
INLINE_RE = re.compile(r"`((?:\S*/)?hyperloom [^`\n]+)`")
COMMAND_LINE_RE = re.compile(r"^\s*((?:\S*/)?hyperloom [^#\n]+?)(?:\s+#.*)?$")
FENCE_RE = re.compile(r"^ *```[^\n`]*\n(?P<body>.*?)^ *```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Documented:
    """One `hyperloom …` command as a doc writes it."""

    doc: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text}"


def joined(lines: list[str]) -> Iterator[tuple[int, str]]:
    """Each line with its offset, a shell continuation (a line ending in a backslash) joined to the lines it continues."""
    start, pending = 0, ""
    for offset, raw in enumerate(lines):
        if not pending:
            start = offset
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip().removesuffix("\\").rstrip() + " "
            continue
        yield start, pending + (raw.strip() if pending else raw)
        pending = ""
    if pending:
        yield start, pending.rstrip()


def in_markdown(doc: str, text: str) -> list[Documented]:
    """Inline code spans naming `hyperloom …`, and lines of fenced blocks that start with it (a trailing comment left out)."""
    found = [Documented(doc, _line_of(text, m.start()), m.group(1)) for m in INLINE_RE.finditer(text)]
    for block in FENCE_RE.finditer(text):
        first = _line_of(text, block.start("body"))
        for offset, raw in joined(block.group("body").splitlines()):
            command = COMMAND_LINE_RE.match(raw)
            if command:
                found.append(Documented(doc, first + offset, command.group(1).strip()))
    return found


def in_docstrings(doc: str, source: str) -> list[Documented]:
    """The commands a Python file's docstrings give: indented lines that start with `hyperloom`, and inline code spans."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) or not node.body:
            continue
        first = node.body[0]
        if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)):
            continue
        docstring = first.value.value
        for offset, raw in joined(docstring.splitlines()):
            command = COMMAND_LINE_RE.match(raw)
            if command and not INLINE_RE.search(raw):
                found.append(Documented(doc, first.lineno + offset, command.group(1).strip()))
            found += [Documented(doc, first.lineno + offset, m.group(1)) for m in INLINE_RE.finditer(raw)]
    return found


def documented(root: Path, docs: Iterable[str]) -> list[Documented]:
    """Every command the named files give (Markdown, or Python through its docstrings), in order."""
    found = []
    for name in docs:
        text = (root / name).read_text()
        found += in_docstrings(name, text) if name.endswith(".py") else in_markdown(name, text)
    return found


def _line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


# --- a usage line as the commands it stands for ---------------------------------------------------------------------


@dataclass(frozen=True)
class Word:
    text: str
    quoted: bool = False


def tokens(usage: str) -> list[Word | str]:
    """The line's words (quoted ones kept whole, unquoted) and its grammar: '[', ']' and a bare '|'."""
    lexer = shlex.shlex(usage.replace("\\|", "|"), posix=False)
    lexer.whitespace_split = True
    out: list[Word | str] = []
    for raw in lexer:
        if raw[:1] in ("'", '"'):
            out.append(Word(shlex.split(raw)[0], quoted=True))
            continue
        opened = len(raw) - len(raw.lstrip("["))
        closed = len(raw) - len(raw.rstrip("]"))
        core = raw[opened: len(raw) - closed] if closed else raw[opened:]
        out += ["["] * opened
        if core == "|":
            out.append("|")
        elif core:
            out.append(Word(core))
        out += ["]"] * closed
    return out


def expansions(usage: str) -> list[list[str]]:
    """Every command `usage` stands for, as argv lists without the program's name."""
    words = tokens(usage)
    alternatives, rest = _alternatives(words, 0)
    assert rest == len(words), f"unbalanced ']' in {usage!r}"
    found = [_concrete(each) for each in alternatives]
    assert len(found) <= MOST_EXPANSIONS, f"{usage!r} stands for {len(found)} commands"
    assert all(argv and argv[0].endswith("hyperloom") for argv in found), usage
    return [argv[1:] for argv in found]


def _alternatives(words: list[Word | str], at: int) -> tuple[list[list[str]], int]:
    """The sequences from `at` to the next unmatched ']' (or the end), split at bare '|'."""
    options: list[list[str]] = []
    current: list[list[str]] = [[]]
    while at < len(words) and words[at] != "]":
        word = words[at]
        if word == "|":
            options += current
            current, at = [[]], at + 1
            continue
        if word == "[":
            inner, at = _alternatives(words, at + 1)
            assert at < len(words), "an optional group without its ']'"
            choices = [[], *inner]
            at += 1
        else:
            assert isinstance(word, Word)
            choices = [[word.text]] if word.quoted or "|" not in word.text else [[w] for w in word.text.split("|")]
            at += 1
        current = [head + tail for head, tail in itertools.product(current, choices)]
        assert len(current) <= MOST_EXPANSIONS
    return options + current, at


def _concrete(words: list[str]) -> list[str]:
    """Repetition marks read: `X…` is X once; a bare … is a value after an option (`--scope …`), else left out."""
    out: list[str] = []
    for word in words:
        if word == ELLIPSIS:
            if out and out[-1].startswith("-") and out[-1] != "--":
                out.append("VALUE")
            continue
        out.append(word.removesuffix(ELLIPSIS))
    return out


# --- the parser, taking placeholders ---------------------------------------------------------------------------------


def is_placeholder(text: str) -> bool:
    return PLACEHOLDER_RE.fullmatch(text) is not None


class _OrPlaceholder(list):
    """An option's choices, and any placeholder."""

    def __contains__(self, item: object) -> bool:
        return (isinstance(item, str) and is_placeholder(item)) or super().__contains__(item)


def lenient(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`parser` (and its subcommands') with every typed or chosen value taking a placeholder too (N for an int)."""
    for action in _actions(parser):
        if isinstance(action, argparse._SubParsersAction):
            continue
        if callable(action.type):
            action.type = _or_placeholder(action.type)
        if action.choices is not None:
            action.choices = _OrPlaceholder(action.choices)
    return parser


def _or_placeholder(convert):  # type: ignore[no-untyped-def]
    def either(text: str):  # type: ignore[no-untyped-def]
        return text if is_placeholder(text) else convert(text)

    either.__name__ = getattr(convert, "__name__", "value")  # argparse names the type in its error
    return either


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                yield from _actions(sub)
