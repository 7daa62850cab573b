"""`hyperloom validate-skill`: our skill passes, and every rule fails on a copy broken just for it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import FIXTURES, REPO
from hyperloom.cli.main import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK, main
from hyperloom.validators.skill import validate_skill

SKILL = REPO / "skill" / "hyperloom-kernel-optimizer"
NAME = SKILL.name
AGENTSKILLS = Path(sys.executable).parent / "agentskills"
RULE_RE = re.compile(
    r'"((?:skill-md|frontmatter|name|description|license|allowed-tools|compatibility|metadata|body|card|evals|marketplace|repository)\.[a-z0-9-]+)"'
)


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "skills" / NAME
    shutil.copytree(SKILL, target)
    return target


def _frontmatter(skill: Path, edit: Callable[[str], str]) -> None:
    path = skill / "SKILL.md"
    text = path.read_text()
    head, body = text.split("\n---\n", 1)
    path.write_text(edit(head + "\n") .rstrip("\n") + "\n---\n" + body)


def _replace_line(key: str, new: str) -> Callable[[Path], None]:
    """Replace the frontmatter entry `key` (with its folded continuation lines) by `new`."""

    def edit(skill: Path) -> None:
        def change(head: str) -> str:
            return re.sub(rf"^{key}:.*?(?=^\S|\Z)", new + "\n" if new else "", head, count=1, flags=re.M | re.S)

        _frontmatter(skill, change)

    return edit


def _add_line(line: str) -> Callable[[Path], None]:
    return lambda skill: _frontmatter(skill, lambda head: head + line + "\n")


def _evals(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def apply(skill: Path) -> None:
        path = skill / "evals" / "evals.json"
        data = json.loads(path.read_text())
        result = edit(data)
        path.write_text(json.dumps(data if result is None else result))

    return apply


def _case(data: dict, trigger: bool) -> dict:
    return next(c for c in data["evaluations"] if c["skill_should_trigger"] is trigger)


def _card(edit: Callable[[str], str]) -> Callable[[Path], None]:
    def apply(skill: Path) -> None:
        path = skill / "skill-card.md"
        path.write_text(edit(path.read_text()))

    return apply


def _drop_cases(trigger: bool, keep: int) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        same = [c for c in data["evaluations"] if c["skill_should_trigger"] is trigger][keep:]
        data["evaluations"] = [c for c in data["evaluations"] if c not in same]

    return edit


BROKEN: dict[str, Callable[[Path], None]] = {
    "skill-md.missing": lambda s: (s / "SKILL.md").unlink(),
    "skill-md.encoding": lambda s: (s / "SKILL.md").write_bytes("---\nname: caf\xe9\n---\n".encode("latin-1")),
    "frontmatter.block": lambda s: (s / "SKILL.md").write_text((s / "SKILL.md").read_text().removeprefix("---\n")),
    "frontmatter.yaml": _add_line("broken: [unclosed"),
    "frontmatter.mapping": lambda s: (s / "SKILL.md").write_text("---\n- just\n- a list\n---\nbody\n"),
    "frontmatter.flow-style": _add_line("metadata: {team: kernels}"),
    "frontmatter.duplicate-key": _add_line(f"name: {NAME}"),
    "frontmatter.unknown-key": _add_line("version: 1.0.0"),
    "name.missing": _replace_line("name", ""),
    "name.length": _replace_line("name", "name: " + "a" * 65),
    "name.pattern": _replace_line("name", "name: Hyperloom_Kernel--Optimizer"),
    "name.reserved": _replace_line("name", "name: claude-kernel-helper"),
    "name.directory": _replace_line("name", "name: hyperloom-other-skill"),
    "description.missing": _replace_line("description", 'description: ""'),
    "description.length": _replace_line("description", "description: " + "x" * 1025),
    "description.angle-brackets": _replace_line("description", "description: Tunes <kernels> on ROCm."),
    "license.type": _replace_line("license", "license:\n  - MIT\n  - Apache-2.0"),
    "allowed-tools.type": _add_line("allowed-tools: 3"),
    "compatibility.type": _replace_line("compatibility", "compatibility: 12"),
    "compatibility.length": _replace_line("compatibility", "compatibility: " + "y" * 501),
    "metadata.type": _add_line("metadata:\n  owner:\n    team: kernels"),
    "body.length": lambda s: (s / "SKILL.md").write_text((s / "SKILL.md").read_text() + "line\n" * 501),
    "card.missing": lambda s: (s / "skill-card.md").unlink(),
    "card.section-missing": _card(lambda t: t.replace("## Owner", "## Maintainer")),
    "card.section-empty": _card(lambda t: re.sub(r"## License\n.*", "## License\n\n", t, flags=re.S)),
    "evals.missing": lambda s: (s / "evals" / "evals.json").unlink(),
    "evals.json": lambda s: (s / "evals" / "evals.json").write_text('{"evaluations": [,]}'),
    "evals.top-level": _evals(lambda d: d["evaluations"]),
    "evals.unknown-key": _evals(lambda d: d.update(version=2)),
    "evals.comment": _evals(lambda d: d.update(comment={"why": "notes"})),
    "evals.evaluations": _evals(lambda d: d.update(evaluations=[])),
    "evals.case-object": _evals(lambda d: d["evaluations"].append("a prompt on its own")),
    "evals.trigger-flag": _evals(lambda d: _case(d, True).update(skill_should_trigger="true")),
    "evals.near-miss-behavior": _evals(lambda d: _case(d, False).update(files_exist=["report.md"])),
    "evals.case-key": _evals(lambda d: _case(d, True).update(expected_behaviour=["typo in the key"])),
    "evals.id": _evals(lambda d: _case(d, True).update(id="  ")),
    "evals.prompt": _evals(lambda d: _case(d, False).update(prompt="")),
    "evals.list-field": _evals(lambda d: _case(d, True).update(logs_contain="hyperloom gate")),
    "evals.workspace": _evals(lambda d: _case(d, True).update(workspace=""),),
    "evals.workspace-missing": _evals(lambda d: _case(d, True).update(workspace="evals/files/nowhere")),
    "evals.note": _evals(lambda d: _case(d, False).update(note=["not", "a", "string"])),
    "evals.duplicate-id": _evals(lambda d: d["evaluations"].append(dict(_case(d, False)))),
    "evals.tier0-trigger": _evals(_drop_cases(True, 2)),
    "evals.tier0-near-miss": _evals(_drop_cases(False, 1)),
}


def test_our_skill_breaks_no_rule():
    report = validate_skill(SKILL)
    assert report.findings == [] and report.valid and report.cases >= 5


def test_the_root_skill_md_validates_as_the_same_skill():
    assert (REPO / "SKILL.md").resolve() == (SKILL / "SKILL.md").resolve()


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_a_copy_broken_for_one_rule_fails_with_that_rule(tmp_path, rule):
    skill = _copy(tmp_path)
    BROKEN[rule](skill)
    report = validate_skill(skill)
    assert not report.valid
    assert rule in report.rules, [f.rule for f in report.findings]


def test_every_rule_the_validators_can_report_has_a_breaking_case():
    source = "".join(p.read_text() for p in (REPO / "validators").glob("*.py"))
    rules = set(RULE_RE.findall(source))
    covered = set(BROKEN) | set(REPOSITORY_BROKEN) | {"repository.outside", "marketplace.unlisted"}  # both tested on their own below
    assert rules and rules <= covered, sorted(rules - covered)


# --- repository-wide rules: the skill placed into an amd/skills-shaped catalog -------------------------------------


def _catalog(tmp_path: Path) -> Path:
    """An amd/skills-shaped repository: skills/<name>, a sibling skill, and the one-plugin bundle listing ours."""
    skill = _copy(tmp_path)
    sibling = skill.parent / "local-ai-use"
    sibling.mkdir()
    (sibling / "SKILL.md").write_text("---\nname: local-ai-use\ndescription: Runs local models.\n---\nBody.\n")
    (sibling / "evals").mkdir()
    cases = [{"id": f"local-ai-{i}", "prompt": "Transcribe this audio locally.", "skill_should_trigger": i < 3} for i in range(5)]
    (sibling / "evals" / "evals.json").write_text(json.dumps({"evaluations": cases}))
    (tmp_path / ".claude-plugin").mkdir()
    bundle = {"name": "amd-skills", "source": "./", "version": "0.1.0", "strict": False,
              "skills": ["./skills/local-ai-use", f"./skills/{NAME}"], "description": "AMD's verified Agent Skills in one plugin."}
    _write_marketplace(tmp_path, {"name": "amd-skills", "owner": {"name": "AMD"}, "plugins": [bundle]})
    return skill


def _write_marketplace(root: Path, data: object) -> None:
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps(data))


def _bundle(edit: Callable[[dict], object]) -> Callable[[Path], None]:
    def apply(root: Path) -> None:
        path = root / ".claude-plugin" / "marketplace.json"
        data = json.loads(path.read_text())
        edit(data["plugins"][0])
        path.write_text(json.dumps(data))

    return apply


REPOSITORY_BROKEN: dict[str, Callable[[Path], None]] = {
    "marketplace.missing": lambda r: (r / ".claude-plugin" / "marketplace.json").unlink(),
    "marketplace.json": lambda r: (r / ".claude-plugin" / "marketplace.json").write_text("{plugins: []}"),
    "marketplace.plugins": lambda r: _write_marketplace(r, {"name": "amd-skills"}),
    "marketplace.one-plugin": lambda r: _write_marketplace(r, {"plugins": [{"name": "a"}, {"name": "b"}]}),
    "marketplace.plugin-object": lambda r: _write_marketplace(r, {"plugins": ["amd-skills"]}),
    "marketplace.name": _bundle(lambda p: p.pop("name")),
    "marketplace.source": _bundle(lambda p: p.update(source="./plugins/amd")),
    "marketplace.strict": _bundle(lambda p: p.pop("strict")),
    "marketplace.description": _bundle(lambda p: p.update(description=" ")),
    "marketplace.skills": _bundle(lambda p: p.update(skills=[])),
    "marketplace.skill-path": _bundle(lambda p: p["skills"].append(f"skills/{NAME}")),
    "marketplace.skill-single": _bundle(lambda p: p["skills"].append(f"./skills/{NAME}/evals")),
    "marketplace.skill-duplicate": _bundle(lambda p: p["skills"].append(f"./skills/{NAME}/")),
    "marketplace.skill-missing": _bundle(lambda p: p["skills"].append("./skills/not-vendored")),
    "evals.duplicate-id": lambda r: (r / "skills" / "local-ai-use" / "evals" / "evals.json").write_text(
        json.dumps({"evaluations": json.loads((r / "skills" / NAME / "evals" / "evals.json").read_text())["evaluations"][:1]})
    ),
}


def test_our_skill_passes_the_repository_rules_inside_an_amd_shaped_catalog(tmp_path):
    skill = _catalog(tmp_path)
    assert validate_skill(skill, tmp_path).findings == []


@pytest.mark.parametrize("rule", sorted(REPOSITORY_BROKEN))
def test_a_broken_catalog_fails_with_that_rule(tmp_path, rule):
    skill = _catalog(tmp_path)
    REPOSITORY_BROKEN[rule](tmp_path)
    report = validate_skill(skill, tmp_path)
    assert not report.valid and rule in report.rules, [f.rule for f in report.findings]


def test_an_unlisted_skill_is_a_warning_not_an_error(tmp_path):
    skill = _catalog(tmp_path)
    _bundle(lambda p: p.update(skills=["./skills/local-ai-use"]))(tmp_path)
    report = validate_skill(skill, tmp_path)
    assert report.valid and [(f.rule, f.severity) for f in report.findings] == [("marketplace.unlisted", "warning")]


def test_a_skill_outside_the_repository_is_reported(tmp_path):
    skill = _copy(tmp_path / "elsewhere")
    (tmp_path / "repo").mkdir()
    assert "repository.outside" in validate_skill(skill, tmp_path / "repo").rules


# --- amd/skills itself: its catalog holds hyperloom-workload-optimizer, AMD's serving optimizer --------------------


def _amd_checkout(tmp_path: Path) -> Path:
    """A checkout shaped like amd/skills at 0a8a3e52 (tests/fixtures/amd_skills, captured from it) with this skill added,
    its bundle listing both Hyperloom skills as it would once both are published."""
    root = tmp_path / "amd-skills"
    shutil.copytree(FIXTURES / "amd_skills", root)
    shutil.copytree(SKILL, root / "skills" / NAME)
    _bundle(lambda p: p.update(skills=[f"./skills/{s.name}" for s in sorted((root / "skills").iterdir())]))(root)
    return root


def test_both_hyperloom_skills_pass_the_catalog_rules_of_an_amd_skills_checkout(tmp_path, capsys):
    root = _amd_checkout(tmp_path)
    for name in (NAME, "hyperloom-workload-optimizer"):
        report = validate_skill(root / "skills" / name, root)
        assert report.valid and report.findings == [], (name, [f.message for f in report.findings])
    assert main(["validate-skill", str(root / "skills" / NAME), "--repo", str(root)]) == EXIT_OK
    assert capsys.readouterr().out.startswith(f"[OK  ] {NAME}")


def test_a_case_id_taken_by_the_catalogs_shared_negatives_is_refused(tmp_path):
    root = _amd_checkout(tmp_path)
    pool = root / "eval" / "negatives.json"
    data = json.loads(pool.read_text())
    ours = json.loads((SKILL / "evals" / "evals.json").read_text())["evaluations"][0]["id"]
    data["evaluations"].append({"id": ours, "skill_should_trigger": False, "prompt": "What is the capital of Peru?"})
    pool.write_text(json.dumps(data))
    report = validate_skill(root / "skills" / NAME, root)
    assert not report.valid and [f.rule
                                 for f in report.findings] == ["evals.duplicate-id"] and "negatives.json" in report.findings[0].message


def test_each_skill_says_where_the_other_fits():
    ours = (SKILL / "SKILL.md").read_text()
    theirs = (FIXTURES / "amd_skills" / "skills" / "hyperloom-workload-optimizer" / "SKILL.md").read_text()
    assert "use hyperloom-workload-optimizer" in ours.split("\n---\n", 1)[0]
    assert "run a one-off\n  kernel/benchmark or trace analysis without the optimization loop" in theirs  # where ours takes over
    their_ids = {c["id"] for c in json.loads((FIXTURES / "amd_skills" / "skills" / "hyperloom-workload-optimizer" / "evals"
                                              / "evals.json").read_text())["evaluations"]}
    our_cases = json.loads((SKILL / "evals" / "evals.json").read_text())["evaluations"]
    assert not their_ids & {c["id"] for c in our_cases}
    boundary = [c for c in our_cases if c["skill_should_trigger"] and ("vLLM" in c["prompt"] or "no GPU" in c["prompt"])]
    assert len(boundary) >= 2, "trigger cases at the boundary: a served model's kernel, ISA work offline"


# --- the command line ----------------------------------------------------------------------------------------------


def test_the_command_exits_by_verdict_and_names_each_broken_rule(tmp_path, capsys):
    assert main(["validate-skill", str(SKILL)]) == EXIT_OK
    assert capsys.readouterr().out.startswith(f"[OK  ] {NAME}")
    skill = _copy(tmp_path)
    BROKEN["name.directory"](skill)
    BROKEN["evals.tier0-near-miss"](skill)
    assert main(["validate-skill", str(skill), "--json"]) == EXIT_FAILED_VERDICT
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False and {f["rule"] for f in report["findings"]} == {"name.directory", "evals.tier0-near-miss"}


def test_the_command_refuses_a_path_that_is_not_a_folder(tmp_path, capsys):
    assert main(["validate-skill", str(tmp_path / "nope")]) == EXIT_INPUT_ERROR
    assert "is not a folder" in capsys.readouterr().err


# --- the open Agent Skills validator (pip skills-ref) agrees --------------------------------------------------------

needs_agentskills = pytest.mark.skipif(not AGENTSKILLS.exists(), reason="skills-ref is not installed; it comes with the test extra")


def _agentskills(skill: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(AGENTSKILLS), "validate", str(skill)], capture_output=True, text=True, timeout=60, check=False)


@needs_agentskills
def test_agentskills_validate_accepts_our_skill():
    proc = _agentskills(SKILL)
    assert proc.returncode == 0 and "Valid skill" in proc.stdout, proc.stdout + proc.stderr


@needs_agentskills
@pytest.mark.parametrize("rule", ["frontmatter.unknown-key", "frontmatter.flow-style", "frontmatter.duplicate-key", "name.directory",
                                  "compatibility.length"])
def test_agentskills_validate_rejects_what_we_reject_for_the_spec(tmp_path, rule):
    skill = _copy(tmp_path)
    BROKEN[rule](skill)
    assert rule in validate_skill(skill).rules
    assert _agentskills(skill).returncode != 0
