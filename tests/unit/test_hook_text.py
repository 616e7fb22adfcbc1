"""What a hook git runs as the person names (hook_text.py, red team 26f): each hook is read
as the shells' startup files are, from the work tree's top; what it names is held like
what they name, a virtual environment whose program it runs whole, and what cannot be
bounded refuses. Real files, random names, no privileges, nothing run; the hook texts
are the real tools' (pre-commit, husky, lefthook, git-lfs, git-secrets), each read
without a refusal."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from supervisor.dotfiles import analyze
from supervisor.errors import SpecError
from supervisor.hook_text import read_hook
from supervisor.settings_named import hook_refusals, named_by_settings
from support.person_home import person_home, snapshot


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return person_home(tmp_path, monkeypatch)


def name() -> str:
    return "h" + secrets.token_hex(4)


def hook(folder: Path, text: str, hook_name: str = "pre-commit") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / hook_name
    path.write_text(text)
    path.chmod(0o755)
    return path


def repository(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(folder),
                        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"})
    return folder


def venv(folder: Path) -> Path:
    """A virtual environment's layout (PEP 405): pyvenv.cfg, bin/python3 a link."""
    (folder / "bin").mkdir(parents=True)
    (folder / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (folder / "bin" / "python3").symlink_to("/usr/bin/python3")
    return folder


def kept(top: Path, home: Path) -> dict[str, str]:
    return {p.path: p.reason for p in analyze(str(top), home=str(home)).protected}


# -- the reading ---------------------------------------------------------------------------


def test_absolute_and_home_paths_are_held_missing_or_not(home: Path) -> None:
    team, other = f"~/{name()}/lint.sh", f"/{name()}/x"
    path = hook(home / "hooks", f"#!/bin/sh\n{team} \"$@\" && cat {other}\n")
    held = {p: k for p, k, _ in read_hook(str(path), str(home), None).held}
    assert held == {f"{home}{team[1:]}": "file", other: "file"}


def test_a_relative_path_is_found_from_the_top_where_a_file_is(tmp_path: Path,
                                                               home: Path) -> None:
    """`exec ./scripts/x.sh`, an interpreter's script argument, a sourced file (read in
    turn): each from the top where a file is; a word that is no file there (`src/`, a
    sed expression, a missing script) holds nothing; read with no top, none."""
    top = tmp_path / "top"
    (top / "scripts").mkdir(parents=True)
    (top / "src").mkdir()
    for file in ("run.sh", "check.py", "env.sh"):
        (top / "scripts" / file).write_text("")
    named = f"~/{name()}/from-sourced.sh"
    (top / "scripts" / "env.sh").write_text(f"{named}\n")
    path = hook(tmp_path / "hooks", "#!/bin/sh\n. scripts/env.sh\n"
                "python3 scripts/check.py src/ | sed s/a/b/\nexec ./scripts/run.sh\n"
                "./scripts/missing.sh\n")
    text = read_hook(str(path), str(home), str(top))
    assert {p for p, _ in text.there} == {f"{top}/scripts/{f}" for f in (
        "run.sh", "check.py", "env.sh")}
    assert f"{home}{named[1:]}" in {p for p, _, _ in text.held}
    assert text.refusals == ()
    assert read_hook(str(path), str(home), None)[:3] == ((), (), ())


@pytest.mark.parametrize("form", [
    '[ -x "$(git rev-parse --git-dir)/hooks/pre-commit" ] && '
    'exec "$(git rev-parse --git-dir)/hooks/pre-commit" "$@"',
    'LOCAL="$(git rev-parse --git-common-dir)/hooks/$(basename "$0")"\n'
    '[ -x "$LOCAL" ] && exec "$LOCAL" "$@"',
    'local_hook="$GIT_DIR/hooks/$(basename "$0")"\n[ -f "$local_hook" ] && . "$local_hook"',
    'h=$(git rev-parse --show-toplevel)/.git/hooks/`basename $0`\n[ -x "$h" ] && exec "$h"',
    '. "$(git rev-parse --git-path hooks)/pre-commit.local"',
    '[ -e .git/hooks/pre-commit ] && . .git/hooks/pre-commit',
    'exec "`git rev-parse --show-cdup`.git/hooks/$(basename "$0")" "$@"',
])
def test_a_global_hook_chaining_to_the_repositorys_own_refuses_nothing(
        tmp_path: Path, home: Path, form: str) -> None:
    """The forms a person's global hook runs the repository's own with (git's folders
    as a hook finds them): the repository's git directory, held by its own analysis
    and read as hooks there; nothing is refused or held by the global hook."""
    top = repository(tmp_path / "top")
    hook(top / ".git" / "hooks", "#!/bin/sh\necho local\n")
    path = hook(home / ".config" / "git" / "hooks", f"#!/bin/sh\n{form}\n")
    for where in (str(top), None):
        text = read_hook(str(path), str(home), where)
        assert text.refusals == ()
        assert not [p for p, _ in text.there if "/.git/" in p]
        assert not [p for p, _, _ in text.held if "/.git/" in p]


@pytest.mark.parametrize("named", ["absolute", "relative", "on PATH"])
def test_a_program_of_a_virtual_environment_holds_it_whole(tmp_path: Path, home: Path,
                                                           named: str) -> None:
    """pre-commit's stub runs INSTALL_PYTHON, the project's .venv/bin/python3 (a link
    out of the environment): the environment is held whole (its site-packages run at
    its start), not the link, which would refuse the launch."""
    top = tmp_path / "top"
    env = venv(top / ".venv")
    line = {"absolute": f"INSTALL_PYTHON={env}/bin/python3\nexec \"$INSTALL_PYTHON\" -m x",
            "relative": "exec .venv/bin/python3 -m pre_commit",
            "on PATH": f"PATH={env}/bin:$PATH\npre-commit run"}[named]
    path = hook(tmp_path / "hooks", f"#!/bin/sh\n{line}\n")
    text = read_hook(str(path), str(home), str(top))
    assert [(p, k) for p, k, _ in text.held if p.startswith(str(top))] == [
        (str(env), "folder")]
    assert text.there == ()


def test_what_the_package_manager_installs_is_not_held(tmp_path: Path,
                                                       home: Path) -> None:
    """The stated gap: below node_modules (husky's PATH, lefthook's index.js), which
    every install writes and `npm ci` removes whole."""
    top = tmp_path / "top"
    (top / "node_modules" / "lefthook" / "bin").mkdir(parents=True)
    (top / "node_modules" / "lefthook" / "bin" / "index.js").write_text("")
    path = hook(tmp_path / "hooks", HOOKS["husky 9 (.husky/_/h)"] + HOOKS["lefthook"])
    text = read_hook(str(path), str(home), str(top))
    assert not [p for p in (*(p for p, _, _ in text.held), *(p for p, _ in text.there))
                if "node_modules" in p]
    assert text.refusals == ()


@pytest.mark.parametrize("line", [
    '. "$(cat ~/.where)/x.sh"', 'source "$TEAM_HOOKS/lint.sh"', '. "./$(hostname).sh"',
])
def test_what_cannot_be_bounded_refuses(tmp_path: Path, home: Path, line: str) -> None:
    path = hook(tmp_path / "hooks", f"#!/bin/sh\n{line}\n")
    for top in (str(tmp_path / "top"), None):
        (where, what, change), = read_hook(str(path), str(home), top).refusals
        assert where.endswith("pre-commit line 2") and what and change


def test_a_program_and_the_readers_bound(tmp_path: Path, home: Path) -> None:
    """A hook that is a program (a NUL in its start) names nothing read; one longer
    than the reader's bound (1 MiB) refuses, as a startup file does."""
    path = hook(tmp_path / "hooks", "")
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"/home/x/work/y.sh\n" * 80_000)
    assert read_hook(str(path), str(home), None)[:3] == ((), (), ())
    path.write_text("#!/bin/sh\n" + "# padding\n" * 110_000)
    (_, what, _), = read_hook(str(path), str(home), None).refusals
    assert "longer than" in what


# The real tools' hooks, as they write them (each read with no refusal; husky's and
# lefthook's from their repositories' templates; git-lfs's as `git lfs install` writes
# it; pre-commit's two templates: bash since 3.x, Python before).
PRE_COMMIT = """#!/usr/bin/env bash
# File generated by pre-commit: https://pre-commit.com
# ID: 138fd403232d2ddd5efb44317e38bf03

# start templated
INSTALL_PYTHON=/usr/bin/python3
ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)
# end templated

HERE="$(cd "$(dirname "$0")" && pwd)"
ARGS+=(--hook-dir "$HERE" -- "$@")

if [ -x "$INSTALL_PYTHON" ]; then
    exec "$INSTALL_PYTHON" -mpre_commit "${ARGS[@]}"
elif command -v pre-commit > /dev/null; then
    exec pre-commit "${ARGS[@]}"
else
    echo '`pre-commit` not found.  Did you forget to activate your virtualenv?' 1>&2
    exit 1
fi
"""
HOOKS = {
    "pre-commit": PRE_COMMIT,
    "pre-commit (Python template)": """#!/usr/bin/env python3
# File generated by pre-commit: https://pre-commit.com
import os
import sys
if sys.version_info < (3, 3):
    from distutils.spawn import find_executable as which
else:
    from shutil import which
os.environ.pop('__PYVENV_LAUNCHER__', None)
# start templated
INSTALL_PYTHON = '/usr/bin/python3'
ARGS = ['hook-impl', '--config=.pre-commit-config.yaml', '--hook-type=pre-commit']
# end templated
ARGS.extend(('--hook-dir', os.path.realpath(os.path.dirname(__file__))))
ARGS.append('--')
ARGS.extend(sys.argv[1:])
DNE = '`pre-commit` not found.  Did you forget to activate your virtualenv?'
if os.access(INSTALL_PYTHON, os.X_OK):
    CMD = [INSTALL_PYTHON, '-mpre_commit']
elif which('pre-commit'):
    CMD = ['pre-commit']
else:
    raise SystemExit(DNE)
CMD.extend(ARGS)
os.execvp(CMD[0], CMD)
""",
    "husky 9 (.husky/_/pre-commit)": '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n',
    "husky 9 (.husky/_/h)": """#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n

[ ! -f "$s" ] && exit 0

if [ -f "$HOME/.huskyrc" ]; then
	echo "husky - '~/.huskyrc' is DEPRECATED, please move your code to ~/.config/husky/init.sh"
fi
i="${XDG_CONFIG_HOME:-$HOME/.config}/husky/init.sh"
[ -f "$i" ] && . "$i"

[ "${HUSKY-}" = "0" ] && exit 0

export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?

[ $c != 0 ] && echo "husky - $n script failed (code $c)"
[ $c = 127 ] && echo "husky - command not found in PATH=$PATH"
exit $c
""",
    "husky 9.1.0 (.husky/_/h)": """#!/usr/bin/env sh
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
[ "${HUSKY-}" = "0" ] && exit 0
c=0
h() {
	[ $c = 0 ] && return
	exit 1
}
trap 'c=$?; h' EXIT
set -e
PATH=node_modules/.bin:$PATH
. "$s"
""",
    "husky 4": '#!/bin/sh\n# husky\n. "$(dirname "$0")/husky.sh"\n',
    "lefthook": r"""#!/bin/sh

if [ "$LEFTHOOK" = "0" ]; then
  exit 0
fi

call_lefthook()
{
  dir="$(git rev-parse --show-toplevel)"
  osArch=$(echo "$(uname)" | tr '[:upper:]' '[:lower:]')
  cpuArch=$(echo "$(uname -m)" | sed 's/aarch64/arm64/')

  if lefthook -h >/dev/null 2>&1
  then
    eval lefthook $@
  elif test -f "$dir/node_modules/lefthook/bin/index.js"
  then
    eval "\"$dir/node_modules/lefthook/bin/index.js\" $@"
  elif test -f "$dir/@BIN@"
  then
    eval "\"$dir/@BIN@\" $@"
  elif bundle exec lefthook -h >/dev/null 2>&1
  then
    bundle exec lefthook $@
  elif yarn lefthook -h >/dev/null 2>&1
  then
    yarn lefthook $@
  elif pnpm lefthook -h >/dev/null 2>&1
  then
    pnpm lefthook $@
  elif npx @evilmartians/lefthook -h >/dev/null 2>&1
  then
    npx @evilmartians/lefthook $@
  else
    echo "Can't find lefthook in PATH"
  fi
}

call_lefthook "run pre-commit $@"
""".replace("@BIN@", "node_modules/@evilmartians/lefthook/bin/"
            "lefthook_${osArch}_${cpuArch}/lefthook"),
    "git-lfs": """#!/bin/sh
command -v git-lfs >/dev/null 2>&1 || { printf >&2 "\\n%s\\n\\n" "This repository is \
configured for Git LFS but 'git-lfs' was not found on your path. If you no longer wish \
to use Git LFS, remove this hook by deleting the 'pre-push' file in the hooks directory \
(set by 'core.hookspath'; usually '.git/hooks')."; exit 2; }
git lfs pre-push "$@"
""",
    "git-secrets": '#!/usr/bin/env bash\ngit secrets --pre_commit_hook -- "$@"\n',
}


@pytest.mark.parametrize("tool", list(HOOKS))
def test_the_real_tools_hooks_are_read_with_no_refusal(tmp_path: Path, home: Path,
                                                       tool: str) -> None:
    top = repository(tmp_path / "top")
    folder = top / ".husky" / "_" if tool.startswith("husky") else top / ".git" / "hooks"
    hook(folder, HOOKS["husky 9 (.husky/_/h)"], "h")
    hook(folder, "debug() { :; }\n. \"$(dirname \"$0\")/husky.local.sh\"\n"
         "run_command npx --no-install husky-run $hookName \"$gitParams\"\n", "husky.sh")
    path = hook(folder, HOOKS[tool])
    for where in (str(top), None):
        assert read_hook(str(path), str(home), where).refusals == ()


# -- the person's hooks, for every write grant (settings_named.py) ------------------------


def global_hook(home: Path, text: str) -> Path:
    (home / ".gitconfig").write_text("[core]\n\thooksPath = ~/.config/git/hooks\n")
    return hook(home / ".config" / "git" / "hooks", text)


def test_what_a_global_hook_names_is_held_in_a_grant_and_refuses_one_that_is_it(
        home: Path) -> None:
    """Red team 26f's (a): the person's global pre-commit runs ~/work/team/lint.sh. A
    grant of ~/work keeps it read-only, with no repository there; a grant of the script
    itself is refused, naming the hook."""
    team = home / "work" / "team"
    team.mkdir(parents=True)
    (team / "lint.sh").write_text("#!/bin/sh\n")
    global_hook(home, "#!/bin/sh\n~/work/team/lint.sh\n")
    assert "the hook ~/.config/git/hooks/pre-commit" in kept(home / "work", home)[
        str(team / "lint.sh")]
    with pytest.raises(SpecError) as caught:
        snapshot(home, "~/work/team/lint.sh")
    assert f"resolves to {team}/lint.sh, named by your settings: named by " \
           "~/.config/git/hooks/pre-commit line 2" in str(caught.value)


def test_a_grant_inside_a_virtual_environment_a_global_hook_runs_is_refused(
        home: Path) -> None:
    env = venv(home / "tools" / "venv")
    global_hook(home, f"#!/bin/sh\nexec {env}/bin/python3 -m pre_commit\n")
    site = env / "lib" / "python3.11" / "site-packages"
    with pytest.raises(SpecError) as caught:
        snapshot(home, str(site))
    assert f"inside {env}" in str(caught.value)
    assert "a program of the virtual environment" in kept(home / "tools", home)[str(env)]
    assert str(env / "bin" / "python3") not in {n.path for n in named_by_settings(
        str(home))}


def test_a_global_hook_lnk_cannot_bound_refuses_every_writing_launch(home: Path) -> None:
    global_hook(home, '#!/bin/sh\n. "$(cat ~/.team-hooks)/pre-commit"\n')
    assert hook_refusals(str(home))
    with pytest.raises(SpecError) as caught:
        snapshot(home, "~/proj")
    assert "~/.config/git/hooks/pre-commit line 2" in str(caught.value)
    assert "a hook git runs as you in every repository" in str(caught.value)


def test_a_global_hook_chaining_to_the_local_one_refuses_no_grant(home: Path) -> None:
    global_hook(home, '#!/bin/sh\nh="$(git rev-parse --git-dir)/hooks/$(basename "$0")"\n'
                '[ -x "$h" ] && exec "$h" "$@"\n. "$GIT_DIR/hooks/pre-commit.local"\n')
    repository(home / "proj")
    assert hook_refusals(str(home)) == ()
    assert snapshot(home, "~/proj").written() == (str(home / "proj"),)


# -- a repository's hooks, where lnk analyses it (dotfiles.py) -----------------------------


def test_a_relative_name_of_a_global_hook_is_held_in_each_repository(home: Path) -> None:
    """A global hook's `./tools/lint.sh` is found at the top of each repository it runs
    in: the written folder's own and one below it, each where the file is."""
    global_hook(home, "#!/bin/sh\n./tools/lint.sh\n")
    top = repository(home / "proj")
    below = repository(top / "sub" / "app")
    for repo in (top, below):
        (repo / "tools").mkdir()
        (repo / "tools" / "lint.sh").write_text("")
    found = kept(top, home)
    for repo in (top, below):
        assert "git runs " in found[str(repo / "tools" / "lint.sh")]


def test_a_repositorys_own_hook_refuses_what_it_cannot_bound(home: Path) -> None:
    top = repository(home / "proj")
    hook(top / ".git" / "hooks", '#!/bin/sh\n. "$SHARED/hooks/pre-commit"\n')
    (where, _, _), = analyze(str(top), home=str(home)).refusals
    assert where.endswith(".git/hooks/pre-commit line 2")


def test_a_hook_of_a_repository_around_the_grant_running_a_folder_holding_it(
        home: Path) -> None:
    """`cd ~/proj/.venv/lib && lnk sandbox run`: ~/proj's pre-commit runs the
    environment's python, whose site-packages the grant is: refused."""
    top = repository(home / "proj")
    env = venv(top / ".venv")
    hook(top / ".git" / "hooks", f"#!/bin/sh\nexec {env}/bin/python3 -m pre_commit\n")
    inside = env / "lib" / "python3.11"
    (where, what, _), = analyze(str(inside), home=str(home)).refusals
    assert "the hook" in where and str(env) in what
    assert analyze(str(top), home=str(home)).refusals == ()


def test_a_folder_a_hook_puts_on_path_from_the_top_is_held_where_it_is(
        tmp_path: Path, home: Path) -> None:
    """`PATH="$(git rev-parse --show-toplevel)/tools/bin:$PATH"` then a bare name: what
    is in that folder of the work tree runs on the commit, held whole where it is (and
    nothing where it is not: no placeholder at the top); node_modules/.bin is not."""
    top = tmp_path / "top"
    (top / "tools" / "bin").mkdir(parents=True)
    (top / "node_modules" / ".bin").mkdir(parents=True)
    path = hook(tmp_path / "hooks", '#!/bin/sh\nPATH="$(git rev-parse --show-toplevel)'
                '/tools/bin:node_modules/.bin:missing/bin:$PATH"\nlint "$@"\n')
    held = read_hook(str(path), str(home), str(top)).held
    assert [(p, k) for p, k, _ in held if p.startswith(str(top))] == [
        (f"{top}/tools/bin", "folder")]
