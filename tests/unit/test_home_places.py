"""Home's places as a machine lays them out: links resolved (a dotfiles repository linked
into home), PATH's folders and what their commands run, and the grant rules that follow,
on real trees (no privileges, nothing run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from supervisor.dotfiles import analyze
from supervisor.errors import SpecError
from supervisor.grants import Snapshot, resolve
from supervisor.home_places import (
    CODE_PATHS,
    Place,
    home_places,
    path_folders,
    relative_path_entries,
)
from supervisor.policy import Context, effective_policy
from supervisor.runs_as_you import HOME_PLACES
from supervisor.spec import parse_spec

SYSTEM_PATH = "/usr/bin:/bin"
BASE_PYTHON = "/usr/bin/python3"  # a system interpreter: no place of its own


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path.resolve() / "home"
    (folder / "proj").mkdir(parents=True)
    monkeypatch.setenv("PATH", SYSTEM_PATH)
    return folder


def places(home: Path, path: str = SYSTEM_PATH) -> dict[str, Place]:
    return {p.path: p for p in home_places(str(home), path)}


def snapshot(home: Path, text: str) -> Snapshot:
    context = Context(home=str(home), cwd=str(home / "proj"), lnk_home=str(home / ".lnk"),
                      uid=1000, runtime_dir=None, installation=())
    return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context),
                   context)


def refused(home: Path, text: str) -> SpecError:
    with pytest.raises(SpecError) as caught:
        snapshot(home, text)
    assert (caught.value.file, caught.value.key, caught.value.line) == (
        "spec.toml", "files.write[0]", 2)
    return caught.value


def write(grant: str) -> str:
    return f'[files]\nwrite = ["{grant}"]\n'


def stow(home: Path) -> None:
    """GNU Stow's layout: the dotfiles in a repository, linked into home."""
    (home / "dotfiles" / "git").mkdir(parents=True)
    (home / "dotfiles" / "bashrc").write_text("# mine\n")
    (home / "dotfiles" / "git" / "config").write_text("[user]\n\tname = p\n")
    (home / ".config").mkdir()
    (home / ".bashrc").symlink_to("dotfiles/bashrc")
    (home / ".config" / "git").symlink_to("../dotfiles/git")


# --- resolution -------------------------------------------------------------------------------


def test_every_table_place_is_there_by_name(home: Path) -> None:
    found = places(home)
    for entry in HOME_PLACES:
        place = found[os.path.normpath(str(home) + entry.name[1:])]
        assert (place.name, place.holder, place.kind) == (entry.name, entry.holder,
                                                          entry.kind)
        assert (place.real, place.links) == (place.path, ())  # no link: where it is


def test_a_place_behind_links_resolves_to_where_they_lead(home: Path) -> None:
    stow(home)
    found = places(home)
    bashrc = found[f"{home}/.bashrc"]
    assert (bashrc.real, bashrc.links) == (f"{home}/dotfiles/bashrc", (f"{home}/.bashrc",))
    git = found[f"{home}/.config/git"]
    assert (git.real, git.links) == (f"{home}/dotfiles/git", (f"{home}/.config/git",))
    # Below a linked folder: through it, the rest as written where missing.
    (home / ".ssh").symlink_to("dotfiles/ssh")
    keys = places(home)[f"{home}/.ssh/authorized_keys"]
    assert (keys.real, keys.links) == (f"{home}/dotfiles/ssh/authorized_keys",
                                       (f"{home}/.ssh",))


def test_a_chain_of_links_names_every_link(home: Path) -> None:
    stow(home)
    (home / "dotfiles" / "bashrc").unlink()
    (home / "real").mkdir()
    (home / "real" / "bashrc").write_text("")
    (home / "dotfiles" / "bashrc").symlink_to(f"{home}/real/bashrc")
    bashrc = places(home)[f"{home}/.bashrc"]
    assert bashrc.real == f"{home}/real/bashrc"
    assert bashrc.links == (f"{home}/.bashrc", f"{home}/dotfiles/bashrc")


def test_a_link_loop_ends(home: Path) -> None:
    (home / ".bashrc").symlink_to(".bashrc")
    bashrc = places(home)[f"{home}/.bashrc"]
    assert bashrc.links[0] == f"{home}/.bashrc"


def test_a_home_at_the_root_two_slashes_and_long_paths_resolve(home: Path) -> None:
    """`HOME=/` made `//.bashrc` (normpath keeps two leading slashes), and every folder
    above it was `//` again; a link to `//x`, a PATH folder `//usr/bin` did the same; a
    path of thousands of components took one recursion each. All resolve now."""
    root = places(Path("/"), "//usr/bin:/bin")
    assert root["/.bashrc"].real == "/.bashrc"
    assert "//.bashrc" not in root
    (home / ".bashrc").symlink_to("//etc/bash.bashrc")
    assert places(home)[f"{home}/.bashrc"].real == "/etc/bash.bashrc"
    deep = str(home) + "/x" * 2000
    assert places(Path(deep), deep + "/bin")[deep + "/.bashrc"].real == deep + "/.bashrc"


def test_path_folders_are_holders_by_name_and_by_target(home: Path) -> None:
    (home / "dotfiles" / "bin").mkdir(parents=True)
    (home / "bin").symlink_to("dotfiles/bin")
    (home / "tools").mkdir()
    found = places(home, f"{home}/bin:{home}/tools/:relative:{SYSTEM_PATH}")
    assert found[f"{home}/bin"].real == f"{home}/dotfiles/bin"
    tools = found[f"{home}/tools"]
    assert tools.holder and tools.what.startswith("a folder of your PATH")
    assert path_folders("/a:/a/:b::/c") == ["/a", "/c"]


@pytest.mark.parametrize(("path", "relative"), [
    ("/usr/bin:/bin", []),
    ("node_modules/.bin:/usr/bin", ["node_modules/.bin"]),
    ("/usr/bin::/bin", ["."]),
    (":/usr/bin", ["."]),
    ("/usr/bin:", ["."]),
    (".:bin:./bin:/bin", [".", "bin", "./bin"]),
    ("", []),
])
def test_relative_path_entries(path: str, relative: list[str]) -> None:
    assert relative_path_entries(path) == relative


# --- what PATH's commands run ----------------------------------------------------------------


def venv(folder: Path) -> None:
    """A virtual environment as venv makes it: bin/python a link to the base one."""
    (folder / "bin").mkdir(parents=True)
    (folder / "lib" / "site-packages").mkdir(parents=True)
    (folder / "bin" / "python").symlink_to(BASE_PYTHON)
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")


def test_a_link_to_a_virtual_environment_makes_it_a_place(home: Path) -> None:
    """pipx's and uv's layout, and a link to an environment's python: the environment
    is the link on the way, though its python leads on to the base interpreter."""
    (home / ".local" / "bin").mkdir(parents=True)
    venv(home / "apps" / "venv")
    (home / ".local" / "bin" / "mytool").symlink_to(f"{home}/apps/venv/bin/python")
    found = places(home, f"{home}/.local/bin:{SYSTEM_PATH}")
    root = found[f"{home}/apps/venv"]
    assert not root.holder and root.kind == "folder"
    assert root.what.startswith("what mytool on your PATH runs")
    assert f"{home}/.local/bin/mytool" in root.links


def test_a_script_whose_interpreter_is_in_an_environment(home: Path) -> None:
    (home / "bin").mkdir()
    venv(home / "envs" / "tool")
    script = home / "bin" / "tool"
    script.write_text(f"#!{home}/envs/tool/bin/python\nimport tool\n")
    (home / "bin" / "plain").write_text("#!/usr/bin/env python3\n")
    (home / "bin" / "system").write_text("#!/bin/sh\n")
    (home / "bin" / "binary").write_bytes(b"\x7fELF\x02\x01")
    found = places(home, f"{home}/bin:{SYSTEM_PATH}")
    assert found[f"{home}/envs/tool"].what.startswith("what tool on your PATH runs")
    made = {p.path for p in found.values() if p.what.startswith("what ")}
    assert made == {f"{home}/envs/tool"}


def test_pyenvs_own_shims_and_libexec_are_its_home(home: Path) -> None:
    """~/.pyenv/bin/pyenv -> ../libexec/pyenv: ~/.pyenv is a place of the table, so
    nothing in it is listed again, and a grant of libexec or versions is refused."""
    (home / ".pyenv" / "bin").mkdir(parents=True)
    (home / ".pyenv" / "libexec").mkdir()
    (home / ".pyenv" / "libexec" / "pyenv").write_text("#!/bin/sh\n")
    (home / ".pyenv" / "bin" / "pyenv").symlink_to("../libexec/pyenv")
    path = f"{home}/.pyenv/bin:{SYSTEM_PATH}"
    found = places(home, path)
    assert not any(p.what.startswith("what ") for p in found.values())
    os.environ["PATH"] = path
    error = refused(home, write("~/.pyenv/libexec"))
    assert "inside ~/.pyenv" in error.message
    assert error.hint is not None and "PYENV_ROOT" in error.hint


def test_a_link_inside_the_same_path_folder_or_to_the_system_is_no_place(home: Path) -> None:
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "python3.11").write_bytes(b"\x7fELF")
    (home / ".local" / "bin" / "python3").symlink_to("python3.11")
    (home / ".local" / "bin" / "sh").symlink_to("/bin/sh")
    found = places(home, f"{home}/.local/bin:{SYSTEM_PATH}")
    assert not any(p.what.startswith("what ") for p in found.values())


# --- the grant rules ---------------------------------------------------------------------------


def test_a_dotfiles_repository_holding_places_is_granted_with_them_read_only(
        home: Path) -> None:
    """~/.bashrc and ~/.config/git are places (files and folders with a known name): a
    grant of the repository they lead into is accepted, and keeps both read-only."""
    stow(home)
    grant = snapshot(home, write("~/dotfiles")).written()
    assert grant == (f"{home}/dotfiles",)
    found = {p.path: p for p in analyze(f"{home}/dotfiles", home=str(home)).protected}
    bashrc = found[f"{home}/dotfiles/bashrc"]
    assert bashrc.exists and bashrc.reason.startswith("~/.bashrc leads here")
    assert found[f"{home}/dotfiles/git"].kind == "folder"


def test_a_missing_target_of_a_link_is_held(home: Path) -> None:
    stow(home)
    (home / "dotfiles" / "bashrc").unlink()
    found = {p.path: p for p in analyze(f"{home}/dotfiles", home=str(home)).protected}
    assert found[f"{home}/dotfiles/bashrc"].placeholder == f"{home}/dotfiles/bashrc"


def test_a_grant_inside_where_a_place_leads_is_refused(home: Path) -> None:
    stow(home)
    error = refused(home, write("~/dotfiles/git"))
    assert "inside ~/.config/git (a link to" in error.message


def test_a_grant_holding_a_link_on_the_way_is_refused(home: Path) -> None:
    stow(home)
    (home / "dotfiles" / "bashrc").unlink()
    (home / "real").mkdir()
    (home / "real" / "bashrc").write_text("")
    (home / "dotfiles" / "bashrc").symlink_to(f"{home}/real/bashrc")
    error = refused(home, write("~/dotfiles"))
    assert f"which holds {home}/dotfiles/bashrc, a link on the way from ~/.bashrc" in \
        error.message
    assert error.hint is not None and "replace the link" in error.hint


def test_a_grant_holding_where_a_holder_leads_is_refused(home: Path) -> None:
    (home / "dotfiles" / "bin").mkdir(parents=True)
    (home / "bin").symlink_to("dotfiles/bin")
    os.environ["PATH"] = f"{home}/bin:{SYSTEM_PATH}"
    error = refused(home, write("~/dotfiles"))
    assert f"holds {home}/dotfiles/bin, where ~/bin leads" in error.message
    assert error.hint is not None and f"does not hold {home}/dotfiles/bin" in error.hint


@pytest.mark.parametrize(("grant", "hint"), [
    ("~/.cache", "'~/.cache/NAME'"),
    ("~/.local", "'~/.local/share/NAME'"),
    ("~/.local/lib", "PYTHONUSERBASE"),
    ("~/.local/lib/python3.11/site-packages", "PYTHONUSERBASE"),
    ("~/.npm/_npx", "npm_config_cache"),
    ("~/.cache/pre-commit", "PRE_COMMIT_HOME"),
    ("~/.cache/uv", "UV_CACHE_DIR"),
    ("~/.rustup/toolchains", "RUSTUP_HOME"),
    ("~/.local/share/nvim/site", "holds nothing that runs as you"),
    ("~/.config/opencode/plugins", "OPENCODE_CONFIG_DIR"),
    ("~/.claude/skills", "CLAUDE_CONFIG_DIR"),
    ("~/.vscode/extensions", "holds nothing that runs as you"),
])
def test_what_tools_load_and_run_from_home_is_refused(
        home: Path, grant: str, hint: str) -> None:
    (home / grant.removeprefix("~/")).mkdir(parents=True)
    error = refused(home, write(grant))
    assert "could change what runs as you" in error.message
    assert error.hint is not None and hint in error.hint


def test_a_path_folder_of_a_project_names_the_way_out(home: Path) -> None:
    """An active virtual environment's bin/ in the project: the project is refused,
    and the hint says why PATH has it."""
    (home / "proj" / ".venv" / "bin").mkdir(parents=True)
    os.environ["PATH"] = f"{home}/proj/.venv/bin:{SYSTEM_PATH}"
    error = refused(home, write("."))
    assert "~/proj/.venv/bin: a folder of your PATH" in error.message
    assert error.hint is not None and "virtual environment" in error.hint


# Ids without the path: PYTEST_CURRENT_TEST holds the id and `(call)`, a command's words
# to the environment rule, which would refuse the grant it names.
@pytest.mark.parametrize("grant", ["~/.cache/pip", "~/.npm", "~/.config/mytool",
                                   "~/.cargo/registry"],
                         ids=["pip-cache", "npm", "config-tool", "cargo-registry"])
def test_a_tools_own_cache_or_settings_folder_is_granted(home: Path, grant: str) -> None:
    (home / grant.removeprefix("~/")).mkdir(parents=True)
    assert snapshot(home, write(grant)).written() == (
        os.path.normpath(str(home) + grant[1:]),)


def test_npx_cache_in_a_granted_npm_cache_is_read_only(home: Path) -> None:
    (home / ".npm").mkdir()
    found = {p.path: p for p in analyze(f"{home}/.npm", home=str(home)).protected}
    assert found[f"{home}/.npm/_npx"].placeholder == f"{home}/.npm/_npx"


def test_what_a_path_command_runs_is_read_only_in_a_grant_holding_it(home: Path) -> None:
    (home / ".local" / "bin").mkdir(parents=True)
    venv(home / "apps" / "venv")
    (home / ".local" / "bin" / "mytool").symlink_to(f"{home}/apps/venv/bin/python")
    os.environ["PATH"] = f"{home}/.local/bin:{SYSTEM_PATH}"
    assert snapshot(home, write("~/apps")).written() == (f"{home}/apps",)
    found = {p.path: p for p in analyze(f"{home}/apps", home=str(home)).protected}
    assert found[f"{home}/apps/venv"].exists
    error = refused(home, write("~/apps/venv/lib"))
    assert "inside ~/apps/venv: what mytool on your PATH runs" in error.message
    assert error.hint is not None and error.hint.startswith("take mytool off your PATH")


def test_a_project_linked_onto_path_is_what_its_command_runs(home: Path) -> None:
    """npm link: ~/.npm-global/bin/mytool leads into the project itself. The person's
    mytool runs whatever a sandbox writing the project puts there, so the project is a
    place: refused, with the way out named."""
    (home / "proj" / "bin").mkdir()
    (home / "proj" / "bin" / "cli.js").write_text("#!/usr/bin/env node\n")
    (home / ".npm-global" / "bin").mkdir(parents=True)
    (home / ".npm-global" / "lib" / "node_modules").mkdir(parents=True)
    (home / ".npm-global" / "lib" / "node_modules" / "mytool").symlink_to(home / "proj")
    (home / ".npm-global" / "bin" / "mytool").symlink_to(
        "../lib/node_modules/mytool/bin/cli.js")
    os.environ["PATH"] = f"{home}/.npm-global/bin:{SYSTEM_PATH}"
    error = refused(home, write("."))
    assert "inside ~/proj: what mytool on your PATH runs (~/proj/bin/cli.js)" in \
        error.message
    assert error.hint is not None and "npm unlink" in error.hint


@pytest.mark.parametrize("variable", ["PYTHONPATH", "PERL5LIB", "RUBYLIB", "NODE_PATH",
                                      "LD_LIBRARY_PATH"])
def test_a_folder_of_a_code_path_is_a_holder(home: Path, monkeypatch: pytest.MonkeyPatch,
                                             variable: str) -> None:
    """A folder PYTHONPATH (PERL5LIB, RUBYLIB, NODE_PATH) names is searched before the
    language's own: a module the sandbox put there (a json.py) would run in every
    program of the person's in that language. Held as a PATH folder is: a write grant
    that is or holds it is refused, naming the variable; one inside it is not."""
    lib = home / "proj" / "lib"
    (lib / "pkg").mkdir(parents=True)
    monkeypatch.setenv(variable, f"{lib}:relative/ignored")
    place = places(home)[str(lib)]
    assert place.holder and place.what.startswith(f"a folder of your {variable}: ")
    for grant in (".", "./lib"):
        error = refused(home, write(grant))
        assert f"which is or holds {lib}" in error.message or "~/proj/lib" in error.message
        assert f"run lnk with {variable} not naming" in (error.hint or "")
    snapshot(home, write("./lib/pkg"))  # inside it: a package, the project's own
    monkeypatch.delenv(variable)
    snapshot(home, write("."))  # the control: off the variable, the grant stands


def test_what_the_environment_names_as_code_is_a_place(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file or folder a variable names whose code runs as the person (BASH_ENV,
    ZDOTDIR, NODE_OPTIONS' --require...) is a place: read-only, held when missing,
    inside a grant holding it; a folder a .pth file of the user site-packages adds to
    Python's path (an editable install) is a holder (found by a red team: a
    usercustomize.py there ran at the person's every python)."""
    proj = home / "proj"
    monkeypatch.setenv("BASH_ENV", f"{proj}/env.sh")
    monkeypatch.setenv("ZDOTDIR", f"{proj}/zsh")
    monkeypatch.setenv("NODE_OPTIONS", f"--max-old-space-size=100 --require={proj}/hook.js")
    monkeypatch.setenv("PERL5OPT", f"-I {proj}/perl")
    site = home / ".local/lib/python3.11/site-packages"
    site.mkdir(parents=True)
    (site / "proj.pth").write_text(f"# editable\nimport os\n{proj}/src\n")
    found = places(home)
    assert (found[f"{proj}/env.sh"].kind, found[f"{proj}/env.sh"].holder) == ("file", False)
    assert (found[f"{proj}/zsh"].kind, found[f"{proj}/zsh"].holder) == ("folder", False)
    assert found[f"{proj}/hook.js"].what.startswith("NODE_OPTIONS names it")
    assert found[f"{proj}/perl"].kind == "folder"
    assert found[f"{proj}/src"].holder and "proj.pth" in found[f"{proj}/src"].what
    assert "os" not in {Path(p).name for p in found}  # an import line names no folder
    error = refused(home, write("."))  # it holds src, the editable install's folder
    assert "proj.pth" in error.message
    (site / "proj.pth").unlink()
    snapshot(home, write("."))  # the places inside are kept read-only, not refused
    refused(home, write("./zsh/x"))  # inside a place


def test_relative_code_path_entries_are_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """`PYTHONPATH=src` or an empty entry names a folder of wherever the person runs a
    program: nothing can hold it, so it is said at launch, as PATH's relative entries
    are (a red team: a planted json.py ran in `python3 /usr/bin/pydoc3` started there)."""
    from supervisor.home_places import relative_code_path_gap

    for variable, _ in CODE_PATHS:
        monkeypatch.delenv(variable, raising=False)
    assert relative_code_path_gap() is None
    monkeypatch.setenv("PYTHONPATH", "/abs/lib")
    assert relative_code_path_gap() is None  # absolute: held instead
    monkeypatch.setenv("PYTHONPATH", "/abs/lib:src:")
    monkeypatch.setenv("NODE_PATH", "lib")
    gap = relative_code_path_gap()
    assert gap is not None and gap.startswith("PYTHONPATH (src, .); NODE_PATH (lib) name "
                                              "folders of the working directory")
