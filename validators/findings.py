"""What a structural check reports: one finding per broken rule, and the report that collects them."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Finding(BaseModel):
    """One rule a file breaks, named so a test (or a person) can tell the rules apart."""

    rule: str = Field(description="Stable rule id, e.g. 'name.directory' or 'evals.tier0-negative'.")
    file: str = Field(description="The file the rule is about, relative to the checked folder.")
    message: str = Field(description="What is wrong and what the rule asks for.")
    origin: str = Field(description="Whose rule it is: 'amd/skills', 'agentskills spec', 'anthropics/skills'.")
    severity: str = Field(default="error", description="'error' fails validation; 'warning' does not.")


class SkillReport(BaseModel):
    """Every finding for one skill folder; valid when none is an error."""

    skill: str = Field(description="The checked folder.")
    findings: list[Finding] = Field(default_factory=list)
    cases: int = Field(default=0, description="Evaluations read from evals/evals.json.")

    @property
    def valid(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def rules(self) -> set[str]:
        return {f.rule for f in self.findings}


AMD = "amd/skills"
SPEC = "agentskills spec"
ANTHROPIC = "anthropics/skills"


def finding(rule: str, file: str, message: str, origin: str = AMD, severity: str = "error") -> Finding:
    return Finding(rule=rule, file=file, message=message, origin=origin, severity=severity)
