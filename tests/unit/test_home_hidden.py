"""Home's configuration without a dot (home_hidden.py), judged without a sandbox: which
hides the snapshot gets, where the spec's own rules decide instead, and what describe
and check say. Sandboxes read through them in tests/attacks/test_home_configuration_elsewhere.py."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from supervisor.check import home_lines
from supervisor.describe import describe, render
from supervisor.grants import Snapshot, resolve
from supervisor.home_hidden import (
    LINKED_HOLDER_REASON,
    LINKED_REASON,
    PREFIX_REASON,
    UNDOTTED_REASONS,
    XDG_REASON,
    found,
    xdg_homes,
)
from supervisor.policy import Context, effective_policy
from supervisor.spec import parse_spec

READ_HOME = '[files]\nread = ["~"]\nwrite = ["."]\n'


class Home:
    def __init__(self, root: Path) -> None:
        self.home = root / "home" / "u"
        self.proj = self.home / "src" / "proj"
        self.proj.mkdir(parents=True)
        self.dotfiles = self.home / ("d" + secrets.token_hex(3))
        (self.dotfiles / "nvim").mkdir(parents=True)
        (self.dotfiles / "bashrc").write_text("")
        (self.home / ".config").mkdir()
        (self.home / ".config" / "nvim").symlink_to(f"../{self.dotfiles.name}/nvim")
        (self.home / ".bashrc").symlink_to(f"{self.dotfiles.name}/bashrc")
        conda = self.home / "miniconda3"
        (conda / "conda-meta").mkdir(parents=True)
        (conda / "bin").mkdir()
        (conda / "pip.conf").write_text("")
        (conda / "condarc.d").mkdir()
        (conda / "envs" / "ml" / "conda-meta").mkdir(parents=True)
        (conda / "envs" / "ml" / ".condarc").write_text("")
        venv = self.home / "venvs" / "tool"
        (venv / "bin").mkdir(parents=True)
        (venv / "pyvenv.cfg").write_text("")
        (venv / "uv-receipt.toml").write_text("")
        (self.home / "cfg" / "nvim").mkdir(parents=True)
        (self.home / "Documents").mkdir()

    def snapshot(self, text: str, **changes: Any) -> Snapshot:
        context = Context(home=str(self.home), cwd=str(self.proj), lnk_home=str(
            self.home / ".lnk"), uid=1000, runtime_dir=None, installation=())._replace(
                **changes)
        return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context),
                       context)


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path.resolve())


def _hidden(snapshot: Snapshot) -> dict[str, tuple[str | None, str, bool]]:
    return {g.name: (g.target, g.reason, g.is_dir) for g in snapshot.grants
            if g.reason in UNDOTTED_REASONS}


def test_each_layout_gets_its_hide(home: Home) -> None:
    h = str(home.home)
    d = home.dotfiles.name
    config = XDG_REASON.format(variable="XDG_CONFIG_HOME")
    assert _hidden(home.snapshot(READ_HOME, xdg=(("XDG_CONFIG_HOME", f"{h}/cfg"),))) == {
        f"~/{d}/nvim": (f"{h}/{d}/nvim", LINKED_REASON, True),
        f"~/{d}/bashrc": (f"{h}/{d}/bashrc", LINKED_REASON, False),
        "~/cfg": (f"{h}/cfg", config, True),
        "~/miniconda3/pip.conf": (f"{h}/miniconda3/pip.conf", PREFIX_REASON, False),
        "~/miniconda3/condarc.d": (f"{h}/miniconda3/condarc.d", PREFIX_REASON, True),
        "~/miniconda3/envs/ml/.condarc": (f"{h}/miniconda3/envs/ml/.condarc",
                                          PREFIX_REASON, False),
        "~/venvs/tool/uv-receipt.toml": (f"{h}/venvs/tool/uv-receipt.toml",
                                         PREFIX_REASON, False),
    }


def test_only_where_a_read_grant_holding_home_decides(home: Home) -> None:
    assert _hidden(home.snapshot('[files]\nwrite = ["."]\n')) == {}
    assert _hidden(home.snapshot('[files]\nread = ["~/Documents"]\nwrite = ["."]\n')) == {}
    d = home.dotfiles.name
    # named, or a folder between it and home named: the spec's rule decides
    named = _hidden(home.snapshot(f'[files]\nread = ["~", "~/{d}"]\nwrite = ["."]\n'))
    assert not any(name.startswith(f"~/{d}/") for name in named)
    itself = _hidden(home.snapshot(f'[files]\nread = ["~", "~/{d}/nvim"]\nwrite = ["."]\n'))
    assert f"~/{d}/nvim" not in itself and f"~/{d}/bashrc" in itself
    # a grant inside decides there, below the hide
    inside = home.snapshot('[files]\nread = ["~", "~/cfg/nvim"]\nwrite = ["."]\n',
                           xdg=(("XDG_CONFIG_HOME", str(home.home / "cfg")),))
    assert "~/cfg" in _hidden(inside)


def test_xdg_folders_in_dot_entries_or_outside_home_add_nothing(home: Home) -> None:
    h = str(home.home)
    xdg = (("XDG_CONFIG_HOME", f"{h}/.config"), ("XDG_DATA_HOME", "/srv/data"),
           ("XDG_CACHE_HOME", h))
    assert not any(reason.startswith("default hide: home's configuration (the person's")
                   for _, reason, _ in _hidden(home.snapshot(READ_HOME, xdg=xdg)).values())
    assert xdg_homes({"XDG_CONFIG_HOME": "cfg", "XDG_DATA_HOME": "/a//b/",
                      "XDG_STATE_HOME": ""}) == (("XDG_DATA_HOME", "/a/b"),)


def test_a_link_in_a_place_of_code_leads_to_a_program(home: Home) -> None:
    (home.home / ".local" / "bin").mkdir(parents=True)
    (home.proj / "tool.py").write_text("")
    (home.home / ".local" / "bin" / "tool").symlink_to(home.proj / "tool.py")
    assert "~/src/proj/tool.py" not in _hidden(home.snapshot(
        '[files]\nread = ["~"]\nwrite = ["~/Documents"]\n'))


def test_describe_and_check_name_them(home: Home) -> None:
    snapshot = home.snapshot(READ_HOME)
    text = render(describe(snapshot))
    assert "~/miniconda3/pip.conf" in text, text
    assert any("~/miniconda3/pip.conf" in line and "a Python prefix's settings" in line
               for line in home_lines(snapshot))


@pytest.mark.parametrize(("layout", "links", "marks", "hidden"), [
    # Stow's mirror without a repository: the target alone (a synced folder, Dropbox,
    # looks the same and holds the person's documents)
    ("stow", {".config/tool": "../dotfiles/tool/.config/tool"}, (), None),
    ("stow in a repository", {".config/tool": "../dotfiles/tool/.config/tool"},
     ("dotfiles/.git",), "dotfiles"),
    # the dotfiles' repository, above the target's folder: its history hidden with it
    ("a repository", {".vimrc": "src/dots/vim/vimrc"}, ("src/dots/.git",), "src/dots"),
    ("Mercurial's", {".vimrc": "src/dots/vim/vimrc"}, ("src/dots/.hg",), "src/dots"),
    # no repository and no mirror: the target alone (its folder may be ~/Documents)
    ("a plain folder", {".vimrc": "src/dots/vim/vimrc"}, (), None),
    # never home itself (a target at its top, home a repository of its own: yadm)
    ("home's top", {".vimrc": "vimrc"}, (".git",), None),
])
def test_the_folder_a_dot_link_leads_into_is_hidden_whole(
        tmp_path: Path, layout: str, links: dict[str, str], marks: tuple[str, ...],
        hidden: str | None) -> None:
    """Where a link among home's dot entries leads is configuration, and so is what
    keeps it: its repository's history, the stow folder's other packages."""
    home = tmp_path / "home"
    for name, target in links.items():
        link = home / name
        real = (link.parent / target).resolve()
        real.parent.mkdir(parents=True, exist_ok=True)
        real.write_text("token = x\n")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    for mark in marks:
        (home / mark).mkdir(parents=True)
    held = [f.path for f in found(str(home), (), [str(home / n) for n in links], ())
            if f.reason == LINKED_HOLDER_REASON]
    assert held == ([str(home / hidden)] if hidden else []), layout
