"""`hyperloom validate-skill PATH`: a skill folder against amd/skills' rules and the open Agent Skills spec."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hyperloom.cli.exits import EXIT_FAILED_VERDICT, EXIT_OK
from hyperloom.core.errors import HyperloomError
from hyperloom.validators.skill import validate_skill


def run(args: argparse.Namespace) -> int:
    skill_dir = Path(args.path)
    if not skill_dir.is_dir():
        raise HyperloomError(f"{args.path!r} is not a folder", "pass the skill folder, the one that holds SKILL.md")
    repo = Path(args.repo) if args.repo else None
    if repo is not None and not repo.is_dir():
        raise HyperloomError(f"--repo {args.repo!r} is not a folder", "pass the repository root, the folder that holds .claude-plugin/")
    report = validate_skill(skill_dir, repo)
    if args.json:
        print(json.dumps({"skill": report.skill, "valid": report.valid, "cases": report.cases,
                          "findings": [f.model_dump() for f in report.findings]}, indent=2))
    else:
        print(f"[{'OK  ' if report.valid else 'FAIL'}] {skill_dir.resolve().name} ({report.cases} eval case(s))")
        for f in report.findings:
            print(f"    {f.severity} {f.rule} [{f.origin}] {f.file}: {f.message}")
        errors = sum(f.severity == "error" for f in report.findings)
        print(f"{errors} error(s), {len(report.findings) - errors} warning(s)")
    return EXIT_OK if report.valid else EXIT_FAILED_VERDICT


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Check SKILL.md (frontmatter, name, description, body length), skill-card.md and evals/evals.json with "
        "every structural rule of amd/skills' validate_skills.py and run_evals.py --validate, plus the open Agent "
        "Skills spec (agentskills validate). Exit 0 when valid, 1 when a rule is broken."
    )
    parser.add_argument("path", help="the skill folder (holds SKILL.md)")
    parser.add_argument("--repo", help="repository root: also check .claude-plugin/marketplace.json and repository-wide case ids")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON")
    parser.set_defaults(handler=run)
