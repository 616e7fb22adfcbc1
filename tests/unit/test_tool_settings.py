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


def test_what_it_names_is_followed_patterns_fail_closed_and_folders_are_held(
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
    # A folder that is there may hold what the tool runs (gdb's safe-path, vim's
    # runtimepath): held, as a folder, where it lies inside a grant below its top.
    assert found[f"{home}/work/proj"] == "folder"
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


# Blanks, quotes, escapes and punctuation: each way a path is written in a settings file.
SPELLED = [  # (the line, whether the folder's name may have blanks in it)
    ("source {e}", True), ('Include "{p}"', True), ("Include '{p}'", True),
    ("run-shell '{p} --flag  two'", True), ("LESSOPEN=|{p} %s", False),
    ("x=@{p}", False), ("k: [{p}]", False), ("\tk\t=\t{p}\t# a tab", False),
    ('dofile(os.getenv("HOME") .. "/{r}")', True),
    ("execute 'source ' . $HOME . '/{r}'", True),
    ("let g:x = expand('~') . '/{r}'", True),
]


def test_a_path_with_blanks_or_after_any_punctuation_is_found(tmp_path: Path) -> None:
    """A folder with two blanks in its name, escaped or quoted; a path after a pipe or
    `@`; a tab between words; the home folder joined to a path in vim's and lua's own
    syntax: each names the file, in a settings file of a random tool."""
    home = tmp_path / "home"
    rng = random.Random(secrets.randbits(32))
    for form, blanks in SPELLED:
        name = secrets.token_hex(3)
        folder = home / "work" / (rng.choice([f"my  team {name}", f"my\tteam{name}"])
                                  if blanks else f"team{name}")
        folder.mkdir(parents=True)
        target = folder / f"{name}.rc"
        target.write_text("# the team\n")
        relative = str(target.relative_to(home))
        spelled = "~/" + relative
        escaped = spelled.replace(" ", "\\ ").replace("\t", "\\\t")
        settings = home / rng.choice(["~/.tmux.conf", "~/.config/nvim/init.vim", "~/.hgrc",
                                      "~/.ssh/config", "~/.gdbinit"])[2:]
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(form.format(p=spelled, e=escaped, r=relative) + "\n")
        found = {path: kind for path, _, kind in tool_paths(str(home))}
        assert found.get(str(target)) == "file", (form, settings, found)
        assert not any(p.startswith(f"{home}/work/my") and p != str(target)
                       and not p.startswith(str(folder)) for p in found), found
        settings.unlink()


def test_a_folder_past_the_bound_refuses_the_launch(tmp_path: Path) -> None:
    """Every file of a pattern's folder is read; past MAX_FOLDER_FILES the launch is
    refused, the folder and the bound named, never the rest dropped unsaid."""
    import pytest

    from supervisor.errors import LaunchError
    from supervisor.tool_settings import MAX_FOLDER_FILES

    home = tmp_path / "home"
    folder = home / ".ssh" / "config.d"
    folder.mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Include ~/.ssh/config.d/*\n")
    for index in range(MAX_FOLDER_FILES - 1):
        (folder / f"a{index:04d}").write_text("Host x\n")
    (folder / "zz").write_text("Include ~/work/last.conf\n")
    assert f"{home}/work/last.conf" in {p for p, _, _ in tool_paths(str(home))}
    (folder / "zzz").write_text("Host y\n")
    with pytest.raises(LaunchError) as refused:
        tool_paths(str(home))
    assert str(folder) in refused.value.message and "MAX_FOLDER_FILES" in \
        refused.value.message and refused.value.hint


def test_every_file_below_nvims_folder_is_read_through_links_and_bounded(
        tmp_path: Path) -> None:
    """Red team 4: nvim runs plugin/*.vim at each start and lua/NAME.lua for a
    require("NAME"), by no path: every file below its folder is read, at any depth and
    through a linked folder; past the bound the launch is refused, never cut short."""
    import pytest

    from supervisor import tool_settings

    home = tmp_path / "home"
    deep = home / ".config" / "nvim" / "lua" / secrets.token_hex(2) / secrets.token_hex(2)
    deep.mkdir(parents=True)
    (deep / "x.lua").write_text('dofile(vim.env.HOME .. "/work/deep.lua")\n')
    elsewhere = tmp_path / "dotfiles" / "after"
    elsewhere.mkdir(parents=True)
    (elsewhere / "y.vim").write_text("source ~/work/linked.vim\n")
    (home / ".config" / "nvim" / "after").symlink_to(elsewhere)
    (home / ".config" / "nvim" / "loop").symlink_to(home / ".config" / "nvim")
    found = {path for path, _, _ in tool_paths(str(home))}
    assert {f"{home}/work/deep.lua", f"{home}/work/linked.vim"} <= found
    for index in range(tool_settings.MAX_FOLDER_FILES + 1):
        (deep / f"{index}.lua").write_text("")
    with pytest.raises(tool_settings.SettingsBound):
        tool_paths(str(home))
