"""What the person's other tools' settings name (tool_settings.py, issue 26 item 8): the
class, every path word in any of home's configuration files, whatever the key."""

from __future__ import annotations

import random
import secrets
from pathlib import Path

from supervisor.dotfiles import analyze
from supervisor.runs_as_you import HOME_PLACES
from supervisor.tool_settings import EDITOR_STARTUP, LEFT_OUT, tool_paths

FORMS = ["{key} {path}", "{key}={path}", '{key} = "{path}"', "{key}: '{path}'",
         "{key}({path})", "{key} [{path}, x]", "{key}=/usr/bin:{path}:/bin",
         'exec "{path} --flag"']


def test_any_key_in_any_of_homes_settings_files_naming_a_path_is_found(
        tmp_path: Path) -> None:
    """Random files of the table and the editors', random keys, every way a path is
    written (`~/`, `$HOME/`, `${HOME}/`, ssh's `%d/`, absolute), in every form."""
    from supervisor.person_settings import SHELL_STARTUP

    home = tmp_path / "home"
    files = [p.name for p in HOME_PLACES if p.kind == "file" and p.name not in LEFT_OUT
             and p.name not in SHELL_STARTUP] + [e for e in EDITOR_STARTUP if e[0] == "~"]
    rng = random.Random(secrets.randbits(32))
    expected = {}
    for _ in range(40):
        settings = home / rng.choice(files)[2:]
        settings.parent.mkdir(parents=True, exist_ok=True)
        name = secrets.token_hex(3)
        spelled = rng.choice(["~/work/{n}", "$HOME/work/{n}", "${{HOME}}/work/{n}",
                              "%d/work/{n}", f"{home}/work/{{n}}"]).format(n=name)
        line = rng.choice(FORMS).format(key="k" + secrets.token_hex(2), path=spelled)
        with open(settings, "a") as out:
            out.write(line + "\n")
        expected[f"{home}/work/{name}"] = (settings, line)
    found = {path: why for path, why, _ in tool_paths(str(home))}
    for path, (settings, line) in expected.items():
        assert path in found, (settings, line)


def test_what_it_names_is_followed_patterns_fail_closed_and_folders_are_work(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / "work" / "proj").mkdir(parents=True)
    (home / "work" / "team.conf").write_text("ProxyCommand ~/work/bin/proxy %h\n")
    (home / ".ssh" / "config").write_text(
        "Include ~/work/team.conf\nInclude relative.conf\nInclude ~/work/d/*.conf\n"
        "ControlPath ~/work/cm/%r@%h\n")
    (home / ".ssh" / "relative.conf").write_text("IdentityFile ~/work/key\n")
    (home / ".tmux.conf").write_text(f"new-session -c ~/work/proj\nrun-shell {home}/work/r\n")
    found = {path: kind for path, _, kind in tool_paths(str(home))}
    assert found[f"{home}/work/team.conf"] == "file"
    assert found[f"{home}/work/bin/proxy"] == "file"  # named by the file it included
    assert found[f"{home}/work/key"] == "file"  # a relative Include is from ~/.ssh
    assert found[f"{home}/work/d"] == "folder" and found[f"{home}/work/cm"] == "folder"
    assert found[f"{home}/work/r"] == "file"
    assert f"{home}/work/proj" not in found  # a folder that is there: work, not code
    kept = {p.path: p for p in analyze(str(home / "work"), home=str(home)).protected}
    assert kept[f"{home}/work/team.conf"].exists
    assert kept[f"{home}/work/bin/proxy"].placeholder == f"{home}/work/bin"
    assert "named in ~/.ssh/config" in kept[f"{home}/work/team.conf"].reason


def test_a_program_named_is_not_read_as_settings(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "tool").write_bytes(b"\x7fELF\0\0 /never/named\n")
    (home / ".tmux.conf").write_text("run-shell ~/bin/tool\n")
    found = {path for path, _, _ in tool_paths(str(home))}
    assert f"{home}/bin/tool" in found and "/never/named" not in found
