"""Where each agent host keeps its skills and its MCP server configuration, per scope.

Claude Code: user scope `~/.claude.json` (or `$CLAUDE_CONFIG_DIR/.claude.json`) top-level
`mcpServers` and `~/.claude/skills/`; project scope `.mcp.json` and `.claude/skills/`.
Codex: `$CODEX_HOME/config.toml` (default `~/.codex`) `[mcp_servers.<name>]` and
`$CODEX_HOME/skills/`; project scope `.codex/config.toml` (trusted projects) and `.agents/skills/`.
All verified against Claude Code 2.1.197 and Codex 0.171.0 (`claude mcp add`, `codex mcp add`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Host = Literal["claude", "codex"]
Scope = Literal["user", "project"]
SERVER_NAME = "hyperloom"
SKILL_NAME = "hyperloom-kernel-optimizer"


@dataclass(frozen=True)
class Location:
    """One host and scope: the skill folder to create and the config file holding the server entry."""

    host: Host
    scope: Scope
    skill_dir: Path
    config: Path
    config_format: Literal["json", "toml"]

    @property
    def label(self) -> str:
        return f"{'Claude Code' if self.host == 'claude' else 'Codex'} ({self.scope} scope)"


def locate(host: Host, scope: Scope, project: Path | None = None, env: dict[str, str] | None = None) -> Location:
    """The paths for `host` at `scope`; `project` (default the working directory) is used for project scope."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME") or Path.home())
    root = (project or Path.cwd()).resolve()
    if host == "claude":
        config_dir = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else None
        if scope == "user":
            skills = (config_dir or home / ".claude") / "skills"
            config = (config_dir or home) / ".claude.json"
        else:
            skills, config = root / ".claude" / "skills", root / ".mcp.json"
        return Location(host, scope, skills / SKILL_NAME, config, "json")
    codex_home = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    if scope == "user":
        return Location(host, scope, codex_home / "skills" / SKILL_NAME, codex_home / "config.toml", "toml")
    return Location(host, scope, root / ".agents" / "skills" / SKILL_NAME, root / ".codex" / "config.toml", "toml")
