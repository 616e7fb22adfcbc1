"""Home's configuration where no dot marks it, under `read = ["~"]`: the classes of
red-team escapes 9, 10 and 11 (home_hidden.py), with names nobody listed.

Each test reads inside a real sandbox (root mode and the unprivileged user): first the
person's own file beside the configuration, which must be read (the sandbox started and
home is shown), then the configuration, which must not be.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import pytest

from support.red_team import need
from support.sandbox import PYTHON_INSIDE, Sandbox

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns]

HOME_READ = '[files]\nread = ["~"]\nwrite = ["."]\n'
READER = r"""
import errno, json, sys
found = {}
for path in sys.argv[1:]:
    try:
        with open(path) as handle:
            found[path] = handle.read()
    except OSError as err:
        found[path] = errno.errorcode.get(err.errno, str(err.errno))
print("READ " + json.dumps(found), flush=True)
"""


def read_inside(box: Sandbox, *paths: Path, spec: str = HOME_READ,
                env: dict[str, str] | None = None) -> dict[str, str]:
    box.chown()
    done = box.run(PYTHON_INSIDE, "-c", READER, *map(str, paths), spec=spec, env=env)
    lines = done.stdout.splitlines()
    need(lines[-1:] and lines[-1].startswith("READ "),
         f"the reader never ran inside (exit {done.returncode}):\n{done.stderr}")
    found: dict[str, str] = json.loads(lines[-1][5:])
    return {Path(path).relative_to(box.home).as_posix(): text for path, text in found.items()}


def planted(path: Path, text: str | None = None) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = text or f"token-{secrets.token_hex(8)}\n"
    path.write_text(text)
    return text


def name() -> str:
    return "n" + secrets.token_hex(3)


# ---- 9: where a link among home's dot entries leads ----------------------------------


@pytest.mark.parametrize("layout", ["dot file", "dot folder", "two deep, absolute",
                                    "through a second link"])
def test_what_a_dot_entrys_link_leads_to_is_hidden(sandbox: Sandbox, layout: str) -> None:
    home = sandbox.home
    repo = home / name()  # the dotfiles folder: any name without a dot
    tool = name()
    if layout == "dot file":
        target = repo / tool
        (home / f".{tool}rc").symlink_to(f"{repo.name}/{tool}")
    elif layout == "dot folder":
        target = repo / tool / "token"
        (home / ".config").mkdir()
        (home / ".config" / tool).symlink_to(f"../{repo.name}/{tool}")
    elif layout == "two deep, absolute":
        target = repo / "deep" / tool / "key"
        (home / f".{name()}" / "x").mkdir(parents=True)
        next(home.glob(".n*")).joinpath("x", tool).symlink_to(repo / "deep" / tool)
    else:
        target = repo / "real" / tool
        other = home / name()
        other.mkdir()
        (other / "hop").symlink_to(repo / "real")
        (home / f".{tool}").symlink_to(other / "hop")
    text = planted(target)
    planted(repo / "notes.txt", "the person's notes\n")  # beside it, linked from nowhere
    planted(home / "src" / "tool.py", "print('code')\n")
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / tool).symlink_to(home / "src" / "tool.py")  # on PATH: code
    found = read_inside(sandbox, repo / "notes.txt", target, home / "src" / "tool.py")
    need(found[f"{repo.name}/notes.txt"] == "the person's notes\n", found)
    assert text not in found.values(), found
    assert found["src/tool.py"] == "print('code')\n", found  # a program's link: shown


def test_a_spec_that_names_the_folder_reads_it(sandbox: Sandbox) -> None:
    """The person named the dotfiles folder: it is read, as `~/.config/pip` is."""
    repo = sandbox.home / name()
    text = planted(repo / "nvim" / "init.vim")
    (sandbox.home / ".config").mkdir()
    (sandbox.home / ".config" / "nvim").symlink_to(f"../{repo.name}/nvim")
    hidden = read_inside(sandbox, repo / "nvim" / "init.vim")
    need(text not in hidden.values(), hidden)  # hidden unless named
    spec = f'[files]\nread = ["~", "~/{repo.name}"]\nwrite = ["."]\n'
    assert read_inside(sandbox, repo / "nvim" / "init.vim", spec=spec) == \
        {f"{repo.name}/nvim/init.vim": text}


# ---- 10: the person's XDG base folders ----------------------------------------------


@pytest.mark.parametrize("variable", ["XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
                                      "XDG_CACHE_HOME"])
@pytest.mark.parametrize("depth", [1, 2])
def test_an_xdg_folder_in_home_is_hidden(sandbox: Sandbox, variable: str, depth: int
                                         ) -> None:
    folder = sandbox.home.joinpath(*(name() for _ in range(depth)))
    text = planted(folder / name() / "hosts.yml")
    planted(folder.parent / "notes.txt", "the person's notes\n")
    found = read_inside(sandbox, folder.parent / "notes.txt", folder / "x",
                        *folder.glob("*/hosts.yml"), env={variable: str(folder)})
    need("the person's notes\n" in found.values(), found)
    assert text not in found.values(), found


# ---- 11: a Python prefix's settings -------------------------------------------------


def _prefix(top: Path, mark: str) -> None:
    (top / "bin").mkdir(parents=True, exist_ok=True)
    (top / "lib").mkdir(exist_ok=True)
    if mark == "conda":
        (top / "conda-meta").mkdir()
        (top / "bin" / "conda").write_text("#!/bin/sh\n")
    elif mark == "venv":
        (top / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (top / "bin" / "activate").write_text("# activate\n")
    else:
        (top / "bin" / mark).write_text("#!/bin/sh\n")


@pytest.mark.parametrize("mark", ["conda", "venv", "python3.12", "python"])
@pytest.mark.parametrize("where", ["home's top", "one below", "a conda environment"])
def test_a_python_prefixs_top_files_are_hidden(sandbox: Sandbox, mark: str, where: str
                                               ) -> None:
    if where == "home's top":
        top = sandbox.home / name()
    elif where == "one below":
        top = sandbox.home / name() / name()
    else:
        _prefix(sandbox.home / name(), "conda")
        top = next(sandbox.home.glob("n*")) / "envs" / name()
    _prefix(top, mark)
    texts = [planted(top / "pip.conf"), planted(top / f"{name()}.conf"),
             planted(top / ".condarc"), planted(top / "condarc.d" / "channels.yml")]
    planted(top / "lib" / "site.py", "# the library\n")
    found = read_inside(sandbox, top / "lib" / "site.py", top / "pip.conf",
                        *(top / t for t in os.listdir(top) if t.endswith(".conf")),
                        top / ".condarc", top / "condarc.d" / "channels.yml",
                        *([top / "pyvenv.cfg"] if mark == "venv" else []))
    rel = top.relative_to(sandbox.home).as_posix()
    need(found[f"{rel}/lib/site.py"] == "# the library\n", found)
    assert not set(texts) & set(found.values()), found
    if mark == "venv":  # Python reads it to start in the environment
        assert found[f"{rel}/pyvenv.cfg"] == "home = /usr/bin\n", found
