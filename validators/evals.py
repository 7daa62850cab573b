"""A skill's `evals/evals.json` against amd/skills' dataset check (`run_evals.py --validate`).

Mirrors `eval/datasets.py` (which enforces) and `eval/schema/evals.schema.json` (which documents
the `comment` field): allowed keys per kind of case, real booleans, non-empty ids and prompts,
string lists, staged workspaces that exist, unique ids, and Tier 0 (3 trigger cases, 2 near misses).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from hyperloom.validators.findings import Finding, finding

DATASET = "evals/evals.json"
TRIGGER = "skill_should_trigger"
DATASET_KEYS = {"evaluations", "comment"}
LIST_FIELDS = ("expected_behavior", "unexpected_behavior", "logs_contain", "files_exist")
NEAR_MISS_KEYS = {"id", "prompt", TRIGGER, "note"}
TRIGGER_KEYS = NEAR_MISS_KEYS | set(LIST_FIELDS) | {"workspace"}
MIN_TRIGGER_CASES, MIN_NEAR_MISS_CASES = 3, 2


@dataclass(frozen=True)
class EvalCase:
    id: str
    should_trigger: bool


def validate_evals(skill_dir: Path) -> tuple[list[Finding], list[EvalCase]]:
    """The dataset's findings and the cases that parsed (duplicates and Tier 0 counted over them)."""
    path = skill_dir / DATASET
    if not path.is_file():
        return [finding("evals.missing", DATASET, f"{DATASET} is missing; every skill needs {MIN_TRIGGER_CASES} trigger and "
                        f"{MIN_NEAR_MISS_CASES} near-miss cases")], []
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return [finding("evals.json", DATASET, f"{DATASET} is not valid JSON: {exc}")], []
    out: list[Finding] = []
    cases = _dataset(payload, skill_dir, out)
    ids = Counter(case.id for case in cases)
    for case_id in sorted(i for i, n in ids.items() if n > 1):
        out.append(finding("evals.duplicate-id", DATASET,
                           f"case id {case_id!r} is used {ids[case_id]} times; ids are unique across the whole repository"))
    out += tier0(cases)
    return out, cases


def tier0(cases: list[EvalCase]) -> list[Finding]:
    positive = sum(case.should_trigger for case in cases)
    out = []
    if positive < MIN_TRIGGER_CASES:
        out.append(finding("evals.tier0-trigger", DATASET,
                           f"{positive} case(s) with `{TRIGGER}: true`; at least {MIN_TRIGGER_CASES} are needed"))
    if len(cases) - positive < MIN_NEAR_MISS_CASES:
        out.append(finding("evals.tier0-near-miss", DATASET,
                           f"{len(cases) - positive} case(s) with `{TRIGGER}: false`; at least {MIN_NEAR_MISS_CASES} are needed"))
    return out


def _dataset(payload: object, skill_dir: Path, out: list[Finding]) -> list[EvalCase]:
    if not isinstance(payload, dict):
        out.append(finding("evals.top-level", DATASET, "the top level must be an object with an `evaluations` array"))
        return []
    if unknown := sorted(set(payload) - DATASET_KEYS):
        out.append(finding("evals.unknown-key", DATASET, f"unknown top-level key(s): {', '.join(unknown)}; allowed: evaluations, comment"))
    comment = payload.get("comment")
    if comment is not None and not (isinstance(comment, str) or (isinstance(comment, list) and all(isinstance(c, str) for c in comment))):
        out.append(finding("evals.comment", DATASET, "`comment` must be a string or an array of strings", "amd/skills evals.schema.json"))
    raw = payload.get("evaluations")
    if not isinstance(raw, list) or not raw:
        out.append(finding("evals.evaluations", DATASET, "`evaluations` must be a non-empty array"))
        return []
    cases = []
    for index, entry in enumerate(raw):
        case = _case(entry, f"evaluations[{index}]", skill_dir, out)
        if case is not None:
            cases.append(case)
    return cases


def _case(entry: object, label: str, skill_dir: Path, out: list[Finding]) -> EvalCase | None:
    if not isinstance(entry, dict):
        out.append(finding("evals.case-object", DATASET, f"{label} must be an object"))
        return None
    should_trigger = entry.get(TRIGGER)
    if not isinstance(should_trigger, bool):
        out.append(finding("evals.trigger-flag", DATASET, f"{label} needs `{TRIGGER}` as a JSON true or false"))
        return None
    allowed = TRIGGER_KEYS if should_trigger else NEAR_MISS_KEYS
    unknown = set(entry) - allowed
    if misplaced := sorted(unknown & (TRIGGER_KEYS - NEAR_MISS_KEYS)):
        out.append(finding("evals.near-miss-behavior", DATASET,
                           f"{label} uses {', '.join(misplaced)}, which apply only when `{TRIGGER}` is true"))
    if unknown := sorted(unknown - TRIGGER_KEYS):
        out.append(finding("evals.case-key", DATASET,
                           f"{label} has unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}"))
    case_id = entry.get("id")
    if not isinstance(case_id, str) or not case_id.strip():
        out.append(finding("evals.id", DATASET, f"{label} needs a non-empty string `id`"))
        return None
    prompt = entry.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        out.append(finding("evals.prompt", DATASET, f"{label} ({case_id}) needs a non-empty string `prompt`"))
        return None
    for key in LIST_FIELDS:
        value = entry.get(key, [])
        if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
            out.append(finding("evals.list-field", DATASET, f"{label} ({case_id}): `{key}` must be an array of non-empty strings"))
            return None
    workspace = entry.get("workspace")
    if workspace is not None:
        if not isinstance(workspace, str) or not workspace.strip():
            out.append(finding("evals.workspace", DATASET, f"{label} ({case_id}): `workspace` must be a directory path"))
            return None
        if should_trigger and not (skill_dir / workspace.strip()).is_dir():
            out.append(finding("evals.workspace-missing", DATASET,
                               f"{label} ({case_id}): `workspace` {workspace!r} is not a directory under the skill"))
    if not isinstance(entry.get("note", ""), str):
        out.append(finding("evals.note", DATASET, f"{label} ({case_id}): `note` must be a string"))
        return None
    return EvalCase(id=case_id.strip(), should_trigger=should_trigger)
