"""`hyperloom install` / `uninstall` against real host config files, and the real hosts reading the result."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit

from helpers import FIXTURES, REPO
from hyperloom.cli.main import EXIT_INPUT_ERROR, EXIT_OK, main
from hyperloom.core.errors import HyperloomError
from hyperloom.hosts.install import RECORD, apply_install, plan_install, uninstall
from hyperloom.hosts.locations import SKILL_NAME, locate

HOSTS = FIXTURES / "hosts"
SERVER = str(Path(sys.executable).parent / "hyperloom-mcp")
CLAUDE, CODEX = shutil.which("claude"), shutil.which("codex")


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private home folder; the hosts' own location variables are cleared."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return folder


def _install(host: str, *options: str) -> int:
    return main(["install", host, *options])


def test_claude_user_install_keeps_other_servers_and_uninstall_restores_the_file_byte_for_byte(home, capsys):
    config = home / ".claude.json"
    shutil.copy(HOSTS / "claude.json", config)
    config.chmod(0o600)
    original = config.read_bytes()
    assert _install("claude") == EXIT_OK
    data = json.loads(config.read_text())
    assert data["mcpServers"]["greeter"]["command"] == "/usr/bin/python3" and data["machineID"]
    assert data["mcpServers"]["hyperloom"] == {"type": "stdio", "command": SERVER, "args": [], "env": {}}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    skill = home / ".claude" / "skills" / SKILL_NAME
    assert (skill / "SKILL.md").read_bytes() == (REPO / "skill" / SKILL_NAME / "SKILL.md").read_bytes()
    assert (skill / RECORD).is_file() and stat.S_IMODE(skill.stat().st_mode) == 0o755
    assert main(["uninstall", "claude"]) == EXIT_OK
    assert config.read_bytes() == original and not skill.exists()
    assert "removed the skill folder" in capsys.readouterr().out


def test_codex_user_install_appends_one_table_and_uninstall_restores_the_file_byte_for_byte(home):
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    shutil.copy(HOSTS / "codex-config.toml", config)
    original = config.read_text()
    assert _install("codex") == EXIT_OK
    text = config.read_text()
    assert text.startswith(original) and text.endswith(f'\n[mcp_servers.hyperloom]\ncommand = "{SERVER}"\n')
    doc = tomlkit.parse(text).unwrap()
    assert doc["mcp_servers"]["hyperloom"] == {"command": SERVER} and doc["mcp_servers"]["greeter"]["env"] == {"LOG_LEVEL": "info"}
    assert (home / ".codex" / "skills" / SKILL_NAME / "SKILL.md").is_file()
    assert main(["uninstall", "codex"]) == EXIT_OK
    assert config.read_text() == original and not (home / ".codex" / "skills" / SKILL_NAME).exists()


def test_project_scope_creates_mcp_json_and_skills_folder_and_uninstall_deletes_only_what_it_created(home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    assert _install("claude", "--scope", "project", "--project", str(project)) == EXIT_OK
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["hyperloom"]["command"] == SERVER
    assert (project / ".claude" / "skills" / SKILL_NAME / "SKILL.md").is_file()
    assert _install("codex", "--scope", "project", "--project", str(project)) == EXIT_OK
    assert (project / ".agents" / "skills" / SKILL_NAME / "SKILL.md").is_file()
    assert "hyperloom" in tomlkit.parse((project / ".codex" / "config.toml").read_text())["mcp_servers"]
    for host in ("claude", "codex"):
        assert main(["uninstall", host, "--scope", "project", "--project", str(project)]) == EXIT_OK
    assert not (project / ".mcp.json").exists() and not (project / ".codex" / "config.toml").exists()
    assert not (project / ".claude" / "skills" / SKILL_NAME).exists() and not (project / ".agents" / "skills" / SKILL_NAME).exists()


def test_an_existing_project_mcp_json_keeps_its_servers(home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(HOSTS / "mcp.json", project / ".mcp.json")
    original = (project / ".mcp.json").read_bytes()
    assert _install("claude", "--scope", "project", "--project", str(project)) == EXIT_OK
    assert set(json.loads((project / ".mcp.json").read_text())["mcpServers"]) == {"p1", "hyperloom"}
    assert main(["uninstall", "claude", "--scope", "project", "--project", str(project)]) == EXIT_OK
    assert (project / ".mcp.json").read_bytes() == original


def test_a_hand_laid_out_mcp_json_keeps_its_layout_and_uninstall_gives_back_its_bytes(home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(HOSTS / "mcp-by-hand.json", project / ".mcp.json")
    original = (project / ".mcp.json").read_text()
    assert _install("claude", "--scope", "project", "--project", str(project)) == EXIT_OK
    installed = (project / ".mcp.json").read_text()
    assert json.loads(installed)["mcpServers"]["hyperloom"]["command"] == SERVER
    assert '"docs": { "command": "npx", "args": ["-y", "docs-mcp@1.2.0"] },' in installed  # the user's lines as they were
    assert main(["uninstall", "claude", "--scope", "project", "--project", str(project)]) == EXIT_OK
    assert (project / ".mcp.json").read_text() == original


def test_an_mcp_json_edited_since_install_loses_only_our_entry(home, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(HOSTS / "mcp-by-hand.json", project / ".mcp.json")
    assert _install("claude", "--scope", "project", "--project", str(project)) == EXIT_OK
    config = project / ".mcp.json"
    edited = config.read_text().replace('"docs": {', '"more": { "command": "more-mcp" },\n        "docs": {')
    config.write_text(edited)
    assert main(["uninstall", "claude", "--scope", "project", "--project", str(project)]) == EXIT_OK
    after = config.read_text()
    assert set(json.loads(after)["mcpServers"]) == {"more", "docs", "files"}
    assert after.startswith(edited.split('"hyperloom"')[0].rstrip().rstrip(",")) and after.endswith("    }\n}")


def test_uninstall_removes_the_folders_install_created_and_keeps_those_it_found(home, tmp_path):
    project = tmp_path / "project"
    (project / ".agents").mkdir(parents=True)  # the user's own, empty
    for host in ("claude", "codex"):
        assert _install(host, "--scope", "project", "--project", str(project)) == EXIT_OK
    for host in ("claude", "codex"):
        assert main(["uninstall", host, "--scope", "project", "--project", str(project)]) == EXIT_OK
    assert sorted(p.name for p in project.iterdir()) == [".agents"] and not any((project / ".agents").iterdir())
    assert _install("claude") == EXIT_OK and main(["uninstall", "claude"]) == EXIT_OK
    assert not (home / ".claude").exists()


@pytest.mark.parametrize(("host", "expected"), [("claude", ["Pending approval", "/mcp"]), ("codex", ["trust"])])
def test_a_project_install_says_what_the_host_asks_before_it_runs_the_server(home, tmp_path, capsys, host, expected):
    assert _install(host, "--scope", "project", "--project", str(tmp_path)) == EXIT_OK
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last.startswith("next: restart") and all(word in last for word in expected), last


def test_print_shows_the_entry_and_the_files_and_writes_nothing(home, capsys):
    assert _install("codex", "--print") == EXIT_OK
    out = capsys.readouterr().out
    assert f'[mcp_servers.hyperloom]\ncommand = "{SERVER}"' in out and "SKILL.md" in out and RECORD in out
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    ("host", "relative", "content", "reason"),
    [
        ("claude", ".claude.json", '{"mcpServers": {"greeter": {"command": "x",}}}', "is not valid JSON"),
        ("claude", ".claude.json", '["not", "an", "object"]', "JSON object at the top"),
        ("claude", ".claude.json", '{"mcpServers": ["hyperloom"]}', "`mcpServers` that is not an object"),
        ("codex", ".codex/config.toml", '[mcp_servers.greeter]\ncommand = "python\n', "is not valid TOML"),
        ("codex", ".codex/config.toml", 'mcp_servers = "none"\n', "`mcp_servers` that is not a table"),
        ("codex", ".codex/config.toml", 'mcp_servers = { greeter = { command = "x" } }\n', "cannot extend"),
    ],
)
def test_a_malformed_config_is_refused_with_its_reason_and_nothing_is_written(home, capsys, host, relative, content, reason):
    config = home / relative
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(content)
    assert _install(host) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err
    assert reason in err and "nothing was written" in err and err.count("\n") == 1
    assert config.read_text() == content
    assert not any(home.rglob("SKILL.md"))


def test_a_server_entry_or_skill_folder_that_install_did_not_write_is_never_replaced(home, capsys):
    foreign = {"mcpServers": {"hyperloom": {"command": "/opt/other/hyperloom-mcp"}}}
    (home / ".claude.json").write_text(json.dumps(foreign))
    assert _install("claude") == EXIT_INPUT_ERROR
    assert "did not write" in capsys.readouterr().err and json.loads((home / ".claude.json").read_text()) == foreign
    (home / ".claude.json").unlink()
    own_skill = home / ".claude" / "skills" / SKILL_NAME
    own_skill.mkdir(parents=True)
    (own_skill / "SKILL.md").write_text("my own notes")
    assert _install("claude") == EXIT_INPUT_ERROR
    assert "was not installed by hyperloom" in capsys.readouterr().err
    assert (own_skill / "SKILL.md").read_text() == "my own notes" and not (home / ".claude.json").exists()


def test_uninstall_leaves_what_the_user_changed_since_install(home, capsys):
    assert _install("claude") == EXIT_OK
    config, skill = home / ".claude.json", home / ".claude" / "skills" / SKILL_NAME
    data = json.loads(config.read_text())
    data["mcpServers"]["hyperloom"]["env"] = {"HYPERLOOM_WORKSPACE": "/work"}
    config.write_text(json.dumps(data))
    (skill / "notes.md").write_text("mine")
    assert main(["uninstall", "claude"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.count("left in place") == 2
    assert json.loads(config.read_text())["mcpServers"]["hyperloom"]["env"] and (skill / "notes.md").exists()


def test_a_changed_skill_is_not_overwritten_by_a_second_install(home, capsys):
    assert _install("codex") == EXIT_OK
    skill = home / ".codex" / "skills" / SKILL_NAME / "SKILL.md"
    skill.write_text(skill.read_text() + "\nmy addition\n")
    assert _install("codex") == EXIT_INPUT_ERROR
    assert "was changed since hyperloom installed it" in capsys.readouterr().err and skill.read_text().endswith("my addition\n")


def test_install_twice_changes_nothing_and_an_older_entry_of_ours_is_updated(home):
    assert _install("codex") == EXIT_OK
    config = home / ".codex" / "config.toml"
    first = config.read_text()
    assert _install("codex") == EXIT_OK and config.read_text() == first
    record_path = home / ".codex" / "skills" / SKILL_NAME / RECORD
    record = json.loads(record_path.read_text())
    record["config"]["entry"] = {"command": "/old/venv/bin/hyperloom-mcp"}
    record["config"]["appended"] = '\n[mcp_servers.hyperloom]\ncommand = "/old/venv/bin/hyperloom-mcp"\n'
    record_path.write_text(json.dumps(record))
    config.write_text(first.replace(SERVER, "/old/venv/bin/hyperloom-mcp"))
    assert _install("codex") == EXIT_OK
    assert (config.read_text().count("[mcp_servers.hyperloom]") == 1
            and tomlkit.parse(config.read_text())["mcp_servers"]["hyperloom"]["command"] == SERVER)


def test_uninstall_without_a_recorded_install_touches_nothing(home, capsys):
    (home / ".claude.json").write_text('{"mcpServers": {"hyperloom": {"command": "x"}}}')
    assert main(["uninstall", "claude"]) == EXIT_OK
    assert "nothing to remove" in capsys.readouterr().out and "hyperloom" in (home / ".claude.json").read_text()


def test_a_failed_skill_write_puts_the_config_back(home):
    shutil.copy(HOSTS / "claude.json", home / ".claude.json")
    original = (home / ".claude.json").read_bytes()
    (home / ".claude").mkdir()
    (home / ".claude" / "skills").write_text("a file where a folder belongs")
    plan = plan_install(locate("claude", "user"))
    with pytest.raises(HyperloomError, match="could not write the skill"):
        apply_install(plan)
    assert (home / ".claude.json").read_bytes() == original


def test_claude_config_dir_and_codex_home_are_honoured(home, tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    claude, codex = locate("claude", "user"), locate("codex", "user")
    assert claude.config == tmp_path / "claude-config" / ".claude.json" and claude.skill_dir.parent == tmp_path / "claude-config" / "skills"
    assert codex.config == tmp_path / "codex-home" / "config.toml" and codex.skill_dir.parent == tmp_path / "codex-home" / "skills"
    assert uninstall(claude) == [f"nothing to remove: no hyperloom install is recorded in {claude.skill_dir}"]


# --- the real hosts read what install wrote ---------------------------------------------------------------------


def _run_plugin_server(root: Path, path: str) -> subprocess.CompletedProcess[str]:
    (root / "scripts").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "scripts" / "plugin-server.sh", root / "scripts" / "plugin-server.sh")
    return subprocess.run([str(root / "scripts" / "plugin-server.sh"), "--flag"], capture_output=True, text=True, timeout=30,
                          env={"PATH": path, "HOME": str(root)}, check=False)


def _fake_server(folder: Path, says: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hyperloom-mcp").write_text(f'#!/bin/sh\necho "{says} $*"\n')
    (folder / "hyperloom-mcp").chmod(0o755)


def test_the_plugin_server_runs_the_clones_venv_then_path_and_else_says_what_to_do(tmp_path):
    _fake_server(tmp_path / "bin", "from PATH")
    path = f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin"
    _fake_server(tmp_path / "clone" / ".venv" / "bin", "from the venv")
    assert _run_plugin_server(tmp_path / "clone", path).stdout == "from the venv --flag\n"
    assert _run_plugin_server(tmp_path / "bare", path).stdout == "from PATH --flag\n"
    missing = _run_plugin_server(tmp_path / "alone", f"/usr/bin{os.pathsep}/bin")
    assert missing.returncode == 127 and "bash scripts/setup.sh" in missing.stderr and "Next step" in missing.stderr


def _host_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "CODEX", "ANTHROPIC"))}
    return env | {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code is not installed (npm install -g @anthropic-ai/claude-code)")
def test_claude_code_connects_to_the_server_install_registered(home):
    assert _install("claude") == EXIT_OK
    proc = subprocess.run([CLAUDE, "mcp", "list"], capture_output=True, text=True, timeout=120, env=_host_env(home), cwd=home, check=False)
    line = next((row for row in proc.stdout.splitlines() if row.startswith("hyperloom:")), proc.stdout + proc.stderr)
    assert SERVER in line and "Connected" in line, line


@pytest.mark.skipif(CODEX is None, reason="Codex is not installed (npm install -g @openai/codex)")
def test_codex_lists_the_server_install_registered(home):
    (home / ".codex").mkdir()
    shutil.copy(HOSTS / "codex-config.toml", home / ".codex" / "config.toml")
    assert _install("codex") == EXIT_OK
    proc = subprocess.run([CODEX, "mcp", "get", "hyperloom", "--json"], capture_output=True, text=True, timeout=60, env=_host_env(home),
                          cwd=home, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["transport"]["command"] == SERVER


@pytest.mark.skipif(CLAUDE is None, reason="Claude Code is not installed (npm install -g @anthropic-ai/claude-code)")
def test_the_repository_is_a_valid_claude_marketplace_whose_plugin_brings_skill_and_server(home, tmp_path):
    # As after the README's setup: a clone with its .venv, and no hyperloom-mcp on PATH.
    env = _host_env(home) | {"PATH": os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                     if Path(p) != Path(sys.executable).parent)}

    def claude(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLAUDE, *args], capture_output=True, text=True, timeout=120, env=env, cwd=home, check=False)

    checkout = tmp_path / "checkout"
    subprocess.run(["git", "clone", "-q", str(REPO), str(checkout)], check=True, timeout=60)
    (checkout / ".venv").symlink_to(Path(sys.prefix))
    for tracked in (".claude-plugin", "skill", "scripts"):  # the working tree, not only the last commit
        target = checkout / tracked
        shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        (shutil.copytree if (REPO / tracked).is_dir() else shutil.copy)(REPO / tracked, target)
    validated = claude("plugin", "validate", str(checkout))
    assert validated.returncode == 0 and "Validation passed" in validated.stdout, validated.stdout + validated.stderr
    assert claude("plugin", "marketplace", "add", str(checkout)).returncode == 0
    installed = claude("plugin", "install", "hyperloom@hyperloom")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    details = claude("plugin", "details", "hyperloom@hyperloom").stdout
    assert f"Skills (1)  {SKILL_NAME}" in details and "MCP servers (1)  hyperloom" in details, details
    listed = next(line for line in claude("mcp", "list").stdout.splitlines() if line.startswith("plugin:hyperloom:hyperloom:"))
    assert "scripts/plugin-server.sh" in listed and "Connected" in listed, listed


def test_the_clone_registers_no_server_of_its_own_beside_the_plugins():
    # A root .mcp.json made Claude Code, started in the clone, list a project-scope `hyperloom` (hyperloom-mcp on PATH),
    # which clashed there with the one `claude mcp add` or `hyperloom install` registers; the plugin declares its server
    # in .claude-plugin/plugin.json.
    assert not (REPO / ".mcp.json").exists()
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["mcpServers"]["hyperloom"]["command"] == "${CLAUDE_PLUGIN_ROOT}/scripts/plugin-server.sh"
