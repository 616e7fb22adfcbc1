"""What the launch environment names (supervisor/environment_paths.py), judged without a
sandbox: every form a value takes, what is left out by structure, and what a snapshot
then hides, reopens and holds. Sandboxes read and write through them in
tests/attacks/test_environment_paths.py."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from supervisor.described import home_configuration
from supervisor.dotfiles import analyze
from supervisor.environment_paths import (
    NOT_PATHS,
    EnvironmentPath,
    environment_paths,
    read_value,
    value_paths,
)
from supervisor.errors import SpecError
from supervisor.grants import Snapshot, resolve
from supervisor.home_hidden import PROGRAMS_REASON, is_undotted
from supervisor.home_places import home_places
from supervisor.policy import Context, effective_policy
from supervisor.spec import parse_spec
from supervisor.view import view_for

H = "/home/u"


@pytest.mark.parametrize(("value", "paths"), [
    ("/a/b", ["/a/b"]),
    ("~/kube/config", [f"{H}/kube/config"]),
    ("/a:/b c:~/d:", ["/a", f"{H}/d", "/b"]),  # a list; `/b c` is missing: its words
    ("|~/bin/lessfilter %s", [f"{H}/bin/lessfilter"]),
    ("nvim -u ~/x.vim", [f"{H}/x.vim"]),
    ("source $HOME/work/t.vim", [f"{H}/work/t.vim"]),
    ("${HOME}/k", [f"{H}/k"]),
    ("--max-old-space-size=100 --require=/p/hook.js", ["/p/hook.js"]),
    ("-I/x/lib -Mstrict", ["/x/lib"]),
    ("unix:path=/run/x.sock", ["/run/x.sock"]),
    ("ssh -i '/home/u/my keys/id' -o X=1", ["/home/u/my keys/id"]),
    ("/home/u/bin/ed --wait", ["/home/u/bin/ed"]),  # a command: the blank ends the path
    ("file:///srv/f", ["/srv/f"]),
    ('["/srv/a.sh", "~/b"]', ["/srv/a.sh", f"{H}/b"]),  # a JSON list
    ('{"hook": "/srv/h"}', ["/srv/h"]),
    ("@/srv/args.txt", ["/srv/args.txt"]),
    ("sh -c 'col -bx | ~/work/pager.sh'", [f"{H}/work/pager.sh"]),  # a script in a word
    ("""sh -c "bash -c 'x=1 /srv/deep.sh'" """, ["/srv/deep.sh"]),
    ("https://host/path", []),  # a URL's authority is no path
    ("*.tar=01;31:*.tgz=01;31", []),
    ("/", []), ("~", []), ("en_US.UTF-8", []),
])
def test_each_form_of_a_value_names_its_paths(value: str, paths: list[str]) -> None:
    assert value_paths(value, H, {"HOME": H}) == paths


def test_a_listed_part_with_a_blank_is_kept_where_it_is(tmp_path: Path) -> None:
    folder = tmp_path / "My Notes"
    folder.mkdir()
    found = value_paths(f"{folder}:/x", H, {})
    assert found[:2] == [str(folder), "/x"]  # and its words' (`.../My`), fail closed


def test_what_is_left_out_by_structure() -> None:
    """Where the person is, scratch folders, lnk's own, and home or what holds it."""
    environ = {**dict.fromkeys(NOT_PATHS, f"{H}/work"), "LNK_HOME": f"{H}/lnk",
               "A": H, "B": "/home", "C": f"{H}/work/x", "D": "/"}
    assert environment_paths(environ, H) == (("C", f"{H}/work/x", False),)


# -- a snapshot ---------------------------------------------------------------------------

def snapshot(home: Path, text: str) -> Snapshot:
    context = Context(home=str(home), cwd=str(home / "work"), lnk_home=str(home / ".lnk"),
                      uid=1000, runtime_dir=None, installation=())
    return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context),
                   context)


def hidden(found: Snapshot) -> dict[str, str]:
    return {g.name: g.reason for g in found.grants if g.access == "hide"
            and is_undotted(g.reason)}


def test_a_made_up_variables_secret_is_hidden_and_said(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = "ZQ" + secrets.token_hex(3).upper()
    (home / "zq").mkdir()
    (home / "zq" / "creds.json").write_text("{}")
    monkeypatch.setenv(name, "~/zq/creds.json")
    found = snapshot(home, '[files]\nread = ["~"]\nwrite = ["."]\n')
    assert hidden(found) == {"~/zq/creds.json": "default hide: home's configuration "
                             f"(your environment's {name} names it)"}
    said = home_configuration(view_for(found, ()))
    assert said is not None and "~/zq/creds.json" in said.hidden
    # the person names it: shown (a spec's rule between it and home decides)
    assert hidden(snapshot(home, '[files]\nread = ["~", "~/zq"]\nwrite = ["."]\n')) == {}
    # no read grant of home: nothing of this
    assert hidden(snapshot(home, '[files]\nwrite = ["."]\n')) == {}


def test_a_folder_of_programs_stays_shown(home: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A program on PATH is not hidden; a tool home holding a PATH folder is, but the
    PATH folder is reopened; the working directory is never hidden."""
    for folder in ("bin", "tool/bin"):
        (home / folder).mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{home}/bin:{home}/tool/bin:/usr/bin")
    monkeypatch.setenv("ZQ_EDITOR", f"{home}/bin/ed --wait")
    monkeypatch.setenv("ZQ_HOME", f"{home}/tool")
    monkeypatch.setenv("ZQ_HERE", f"{home}/work")
    found = snapshot(home, '[files]\nread = ["~"]\n')
    assert set(hidden(found)) == {"~/tool"}
    assert [(g.name, g.access) for g in found.grants if g.reason == PROGRAMS_REASON] == [
        ("~/tool/bin", "read")]


def test_inside_a_write_grant_it_is_held_and_never_refused(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held read-only strictly inside the grant (missing ones too); the grant itself
    named, or a folder holding it, refuses nothing and holds nothing."""
    work = home / "work"
    (work / "hook.sh").write_text("")
    (work / "zqdir").mkdir()
    monkeypatch.setenv("ZQ_HOOK", f"{work}/hook.sh")
    monkeypatch.setenv("ZQ_DIR", "~/work/zqdir")
    monkeypatch.setenv("ZQ_LATER", f"{work}/later.sh")
    monkeypatch.setenv("ZQ_TOP", str(work))
    monkeypatch.setenv("ZQ_ABOVE", str(home))
    snapshot(home, '[files]\nwrite = ["."]\n')  # not refused
    snapshot(home, '[files]\nwrite = ["./zqdir"]\n')  # a grant inside what one names
    places = {p.path: p for p in home_places(str(home)) if p.environment}
    assert places[f"{work}/zqdir"].kind == "folder"
    assert places[f"{work}/hook.sh"].kind == "file"
    held = {p.path: p.exists for p in analyze(str(work), home=str(home)).protected
            if "your environment's" in p.reason}
    assert held == {f"{work}/hook.sh": True, f"{work}/zqdir": True,
                    f"{work}/later.sh": False}
    assert analyze(str(work / "zqdir"), home=str(home)).protected == () or all(
        "your environment's" not in p.reason
        for p in analyze(str(work / "zqdir"), home=str(home)).protected)


def test_a_link_on_the_way_inside_the_grant_refuses(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox could point a link on the way elsewhere before the next run: as for
    every place, the grant holding it is refused, naming the variable."""
    work = home / "work"
    (work / "v2").mkdir()
    (work / "current").symlink_to("v2")
    monkeypatch.setenv("ZQ_CONFIG", f"{work}/current/app.toml")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "ZQ_CONFIG" in refused.value.message
    assert "env -u ZQ_CONFIG" in (refused.value.hint or "")


def test_a_named_users_home_is_expanded_as_sh_expands_it() -> None:
    """`~name/` (red team 3): sh expands it to name's home, so a value naming the
    person's own home that way names the same files."""
    import pwd

    root = pwd.getpwuid(0).pw_dir.rstrip("/")
    assert value_paths("~root/work/ed --wait", H, {}) == [f"{root}/work/ed"]
    assert value_paths("vim -u ~root/x.vim", H, {}) == [f"{root}/x.vim"]
    assert value_paths("~no-such-user-zq/x", H, {}) == []


@pytest.mark.parametrize(("value", "paths"), [
    ("${HOME%/}/w/ed", [f"{H}/w/ed"]),  # red team 4: each form sh expands
    ("${HOME%%/}/w/ed", [f"{H}/w/ed"]),
    ("${X%/*}/ed", [f"{H}/ed"]),  # X = ~/w: the shortest suffix matching /* trimmed
    ("${X%%/w}/ed", [f"{H}/ed"]),
    ("${X#/home}/ed", ["/u/w/ed"]),
    ("${Y##*/}/ed", []),  # Y's last name: relative
    ("${A:-${B:-$HOME}}/w/ed", [f"{H}/w/ed"]),  # nested defaults
    ("${HOME%${Z:-/}}/w/ed", [f"{H}/w/ed"]),  # a pattern from a default
    ("$HOME${UNSET}/w/ed", [f"{H}/w/ed"]),  # unset is empty, as sh makes it
    ('~/w/te""am/ed', [f"{H}/w/team/ed"]),  # quotes in a listed path: words
    ("~/w/te\\am/ed", [f"{H}/w/team/ed"]),
    ("~/w/team/$(hostname).sh", [f"{H}/w/team"]),  # its known folder
    ("vi ~/w/`id -u`/x", [f"{H}/w"]),
    ('git -c x="$1" ${#HOME}', []),  # an argument, a length: no path
])
def test_a_value_is_expanded_as_sh_expands_it(value: str, paths: list[str]) -> None:
    environ = {"HOME": H, "X": f"{H}/w", "Y": "/a/b"}
    assert value_paths(value, H, environ) == paths


@pytest.mark.parametrize(("value", "refused"), [
    ("$(echo ~)/w/ed", True), ("`echo ~`/w/ed", True), ("${HOME:0}/w/ed", True),
    ("${HOME/#/}/w/ed", True), ("vi $( cd ~ && pwd )/w/x", True),
    ("~/w/$(hostname).sh", True),  # red team 5: what it prints may hold `/` and `..`
    (r"\u@\h:\w$(__git_ps1 ' (%s)')\$ ", False),  # no path after it
    ("${HOME%/}/w/ed", False),
])
def test_a_path_whose_start_only_the_shell_knows_is_unbounded(value: str,
                                                              refused: bool) -> None:
    """red team 4: `$(echo ~)/w/ed` may be any file; the launch that writes is refused."""
    from supervisor.environment_paths import unbounded

    assert bool(unbounded({"HOME": H, "V": value})) is refused


def test_a_write_launch_is_refused_for_an_unbounded_value(home: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("ZQ_EDITOR", "$(echo ~)/work/ed.sh")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "ZQ_EDITOR" in refused.value.message
    assert "env -u ZQ_EDITOR" in (refused.value.hint or "")


def test_what_a_substitution_runs_is_named() -> None:
    """A command substitution is UNKNOWN for the path it makes, but the script in it is
    read as a value of its own (red team 3's `!git log -1 $(~/w/x.sh)`)."""
    environ = {"HOME": H}
    assert value_paths("git log -1 $(~/w/x.sh)", H, environ) == [f"{H}/w/x.sh"]
    assert value_paths("vi `cat ~/w/list`", H, environ) == [f"{H}/w/list"]
    assert value_paths("x $(y $(~/w/deep.sh))", H, environ) == [f"{H}/w/deep.sh"]


# -- differential: lnk's reading against the real sh's and bash's (red team 5) ------------

# Pieces a value is made of: each a form sh (or bash, sh on many systems and the person's
# shell) rewrites, and path names that exist in the home below (patterns match them).
PIECES = [
    "/", "//", "work", "team", "ed.sh", "x", "..", ".", "~", "~/", "$HOME", "${HOME}",
    "${HOME%/}", "${HOME%%/*}", "${HOME#/}", "${X##*/}", "${X%/*}", "${U:-$HOME}",
    "${U-$HOME}", "${HOME:+$HOME}", "${HOME+x}", "${HOME:=y}", "${HOME:?}", "${#HOME}",
    "$U", '"', "'", '""', "''", "\\", "\\\n", " ", "\t", "*", "?", "[a]", "t*m",
    "{team,x}", "$'/'", "$'\\x2f'", '$"/"', "${!V}", "$0", "${0%% *}", "$(echo /)",
    "`echo ~`", "$((1))", "=", ":", "-", "Q", "e", ",", "a,b", "c:d",
    # red team 26g: what sh sets itself, a blank a substitution prints, blanks sh does
    # not split at
    "${IFS}", "${PS4#+}", '$(echo " ")', "\r", "\u00a0",
]


_PUNCTUATION = re.compile("[,:;]")


def _shell_words(shell: str, value: str, home: Path) -> list[str] | None:
    """The words `shell` makes of `value` run as git runs an editor (`sh -c 'VALUE
    "$@"' VALUE`), printed by printf; None when it refuses the syntax."""
    try:
        done = subprocess.run(
            [shell, "-c", f"printf '%s\\0' {value}", value], capture_output=True,
            env={"HOME": str(home), "X": f"{home}/work", "V": "HOME", "PATH": "/usr/bin:/bin"},
            cwd=home, timeout=10)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home").resolve()
    (home / "work" / "team").mkdir(parents=True)
    (home / "work" / "x").mkdir()
    (home / "work" / "team" / "ed.sh").write_text("")
    for odd in ("a,b", "c:d"):  # a folder whose name holds the settings' punctuation
        (home / "work" / odd).mkdir()
        (home / "work" / odd / "ed.sh").write_text("")
    return home


@pytest.mark.parametrize("shell", ["sh", "bash"])
@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=8))
def test_each_path_sh_makes_is_named_or_bounded_or_refused(
        tree: Path, shell: str, pieces: list[str]) -> None:
    """Every absolute path inside ~/work the real shell makes of a value (a word of the
    command it runs) is one lnk names, lies inside a pattern's folder lnk bounds it by, or lnk
    finds the value unbounded (refused): never a path lnk reads differently."""
    from supervisor.environment_paths import Cuts

    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    value = "".join(pieces)
    words = _shell_words(shell, value, tree)
    if words is None:
        return
    home = str(tree)
    cuts: Cuts = []
    environ = {"HOME": home, "X": f"{home}/work", "V": "HOME"}
    named = value_paths(value, home, environ, cuts=cuts)
    if None in cuts:
        return  # refused: what only the running shell knows starts a path or program
    for word in words:
        if not word.startswith("/"):
            continue
        path = "/" + os.path.normpath(word).lstrip("/")
        if not path.startswith(f"{home}/work/"):
            continue  # what matters: a path inside the folder a run writes, ~/work
        if _PUNCTUATION.search(path[len(home):]) and not os.path.lexists(path):
            continue  # a stated gap: read past `,` or `:` only where it is there
        assert path in named or any(b is not None and (path == b or path.startswith(
            b.rstrip("/") + "/")) for b in cuts), (value, word, named, cuts)


def test_common_exported_values_launch() -> None:
    """Values people export (Fedora's PROMPT_COMMAND, Debian's PS1 and lesspipe, a
    which function, fzf's commands) name nothing unbounded: an empty word before a
    substitution's argument is not a command's end."""
    from supervisor.environment_paths import unbounded

    environ = {
        "HOME": "/home/u",
        "PROMPT_COMMAND": 'history -a; printf "\\033]0;%s@%s:%s\\007" "${USER}" '
                          '"${HOSTNAME%%.*}" "${PWD/#$HOME/\\~}"',
        "PS1": "${debian_chroot:+($debian_chroot)}\\u@\\h:\\w\\$ ",
        "LESSOPEN": "| /usr/bin/lesspipe %s", "LESSCLOSE": "/usr/bin/lesspipe %s %s",
        "MANPAGER": "sh -c 'col -bx | bat -l man -p'",
        "BASH_FUNC_which%%": "() {  ( alias;\n eval ${which_declare} ) | /usr/bin/which "
                             "--tty-only --read-alias --show-tilde --show-dot \"$@\"\n}",
        "FZF_CTRL_T_COMMAND": "command find -L . -mindepth 1 \\( -path '*/\\.*' \\) "
                              "-prune -o -type f -print",
        "DOCKER_HOST": "unix:///run/user/1000/docker.sock",
        "CDPATH": ".:~:~/src",
    }
    assert unbounded(environ, "/home/u") == []
    assert unbounded({"HOME": "/home/u", "X": 'a "" $(printf /x)'}, "/home/u") == []
    assert unbounded({"HOME": "/home/u", "X": "true; $(printf /x)"}, "/home/u") != []


def test_a_program_in_a_folder_whose_name_holds_punctuation_is_named(tree: Path) -> None:
    """`,` and `:` end a path in a list (`--paths=~/w/p,~/w/q`), but a program the shell
    runs takes the whole word: where that is there, it is named (and its cut is not,
    unless it is there too)."""
    home = str(tree)
    environ = {"HOME": home}
    for odd in ("a,b", "c:d"):
        program = f"{home}/work/{odd}/ed.sh"
        assert value_paths(f"~/work/{odd}/ed.sh --wait", home, environ) == [program]
        assert value_paths(f"{program}", home, environ) == [program]
    assert value_paths("tool --paths=~/work/p,~/work/q", home, environ) == [
        f"{home}/work/p", f"{home}/work/q"]


# -- red team 6: what the value does to its shell before it names a path -------------------

_TEAM = "~/work/team/ed.sh"


@pytest.mark.parametrize("value", [
    "cd ~/work && team/ed.sh", "cd ~/work;team/ed.sh", "cd;cd work/team;./ed.sh",
    "cd && work/team/ed.sh", "sh -c 'cd ~/work && team/ed.sh'", "(cd ~/work && exec team/ed.sh)",
    "bash -c 'cd $HOME/work; ./team/ed.sh'", "CDPATH=~/work cd team && ./ed.sh",
    "cd ~/work/team && ./ed.sh", "cd ~/work/team && sh ed.sh", "cd team && ./ed.sh",
    "pushd ~/work >/dev/null; team/ed.sh", "cd - && team/ed.sh", "cd ~/work; ~+/team/ed.sh",
    "PATH=~/work:$PATH team-ed", "env PATH=~/work:/usr/bin team-ed",
    "X=~/work; $X/team/ed.sh", 'X=$HOME/work; "$X"/team/ed.sh', "w=work; ~/$w/team/ed.sh",
    "for d in ~/work; do $d/team/ed.sh; done", "read d; $d/team/ed.sh",
    'set -- ~/work; "$1"/team/ed.sh', 'f() { "$1"/team/ed.sh; }; f ~/work',
    "HOME=~/work; ~/team/ed.sh", "eval \\$HOME/work/team/ed.sh",
    'sh -c "\\$HOME/work/team/ed.sh"', f"{_TEAM}&", f"{_TEAM};true", f"{_TEAM}|cat",
    '"${1%/*}"/../../../work/team/ed.sh', "env -C ~/work team/ed.sh",
    "env --chdir=$HOME/work team/ed.sh", "git -C ~/work x", "eval cd ~/work; team/ed.sh",
    "sh -c 'X=~/work; $X/team/ed.sh'", "bash -c 'w=work; ~/$w/team/ed.sh'",
    "sh -c 'PATH=~/work:$PATH; team-ed'", 'sh -c "X=\\$HOME/work; \\$X/team/ed.sh"',
    ": ${X:=~/work}; $X/team/ed.sh", "cd ~/work; $PWD/team/ed.sh", "$OLDPWD/team/ed.sh",
    # red team 26e: an attached -C, getopt's abbreviated long option, a function's
    # positional as a cd's folder, a relative way out of the folder git runs it in
    "env -C$HOME/work team/ed.sh", "git -C$HOME/work x", "env --chd=$HOME/work team/ed.sh",
    'f() { cd "$1"; }; f ~/work; team/ed.sh', 'f() { env -C "$1" team/ed.sh; }; f ~/work',
    "cd ../../work/team && ./ed.sh", "cd >&2 ~/work; team/ed.sh",
    "cd 2>/dev/null ~/work; team/ed.sh", "cd ~/work>&2; team/ed.sh",
    "exec 3<~/work; cd /proc/self/fd/3; team/ed.sh", "IFS=:; c=cd:$HOME/work; $c; team/ed.sh",
    "c=cd,$HOME/work; IFS=,; $c; team/ed.sh", "W=~/work; shopt -s cdable_vars; cd W; team/ed.sh",
    "bash -c 'source /dev/stdin <<<\"cd ~/work\"; team/ed.sh'",
    "alias c='cd ~/work'\nc; team/ed.sh",
    # red team 26g: what sh sets itself (IFS whatever the environment says, the prompts),
    # a blank a substitution prints, a substitution a builtin or a shell's -c runs, the
    # shell's own root by its pid
    "cd${IFS}$HOME/work&&team/ed.sh", "cd${PS4#+}$HOME/work&&team/ed.sh",
    "cd${PS2#?}$HOME/work&&team/ed.sh", "cd${PS1#?}$HOME/work&&team/ed.sh",
    "bash -c 'cd $HOME${BASH%%u*}work && team/ed.sh'",
    'cd$(echo " ")$HOME/work&&team/ed.sh', 'cd`echo " "`$HOME/work&&team/ed.sh',
    "exec $(printf %s/work/team/ed.sh ~)", "command $(printf %s/work/team/ed.sh ~)",
    "eval \"$(printf 'cd %s/work && team/ed.sh' ~)\"", ". \"$(printf %s/work/x ~)\"",
    "sh -c \"$(printf 'cd %s/work && team/ed.sh' ~)\"",
    "find /proc/$$/root$HOME/work -name ed.sh -exec {} \\;",
    "cd /proc/$PPID/cwd && team/ed.sh", "sh -c 'cat /proc/$$/root$HOME/work/team/ed.sh'",
])
def test_what_a_value_does_first_is_bounded_or_refused(
        tree: Path, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Red team 6: a change of folder, an assignment, a PATH of its own, positional
    parameters it sets, an escaped `$` another shell expands, an operator in a path's
    word: ~/work/team/ed.sh is named, bounded (a grant that is ~/work is refused) or the
    value refused, for the environment and for git."""
    from supervisor.environment_paths import Cuts
    from supervisor.person_settings import SettingsUnbounded
    from supervisor.person_settings import value_paths as git_paths

    home = str(tree)
    team = f"{home}/work/team/ed.sh"
    cuts: Cuts = []
    monkeypatch.setenv("CDPATH", f"{home}/work")  # people export one (`cd team`)
    named = value_paths(value, home, {"HOME": home, "CDPATH": f"{home}/work"}, cuts=cuts)

    work = f"{home}/work"

    def covered(paths: list[str], bounds: list[str | None]) -> bool:
        """Refused; or held, by a named path strictly inside the grant (~/work) that is
        it or holds it; or bounded, the grant inside a bound (refused)."""
        return None in bounds or any(p != work and p.startswith(work + "/") and (
            team == p or team.startswith(p + "/")) for p in paths) or any(
            b is not None and (work == b or work.startswith(b.rstrip("/") + "/"))
            for b in bounds)

    assert covered(named, cuts), (named, cuts)
    bounds: list[str] = []
    try:
        found = git_paths("core.editor", value, home, bounds=bounds)
    except SettingsUnbounded:
        return
    assert covered(found + bounds, list(bounds)), (found, bounds)  # git: a bound is held


@pytest.mark.parametrize("value", [
    "!git log --graph --pretty=format:'%Cred%h%Creset -%C(yellow)%d%Creset %s' --abbrev-commit",
    '!f() { git checkout -b "$1" && git push -u origin "$1"; }; f',
    "!cd -- ${GIT_PREFIX:-.} && git status", '!cd "${GIT_PREFIX:-.}" && pwd',
    "!sh -c 'cd \"$(git rev-parse --show-toplevel)\" && git ls-files -o'",
    "!f() { local branch=${1-$(git symbolic-ref --short HEAD)}; git push origin $branch; }; f",
    "!f() { for b in $(git branch --merged | grep -v '\\*'); do git branch -d $b; done; }; f",
    "!git for-each-ref --format='%(refname:short)' refs/heads | while read b; do echo $b; done",
    "!f() { REV=${1:-HEAD}; git diff $REV^..$REV; }; f", "!set -e; git fetch; git rebase",
    "!f() { cd $(git rev-parse --show-toplevel) && git clean -fdx; }; f",
    '!f() { d=${1:-.}; git -C "$d" status; }; f', "!ls $(git rev-parse --git-dir)/hooks",
    "vim -c 'set ft=gitcommit'", "cache --timeout=3600", "!exec ",
    # GitAlias's (gitalias.txt): a command held in a name it assigns, and a relative
    # word a name it assigns is in
    '!f(){ branch="$(git current-branch)"; cmd="git branch $branch --set-upstream-to='
    '${1:-origin}/${2:-$branch}"; echo "$cmd"; $cmd; }; f',
    '!    local_ref="$(git symbolic-ref HEAD)";     local_name="${local_ref##refs/heads/}";'
    '     remote_ref="$(git config branch."$local_name".merge)";     remote_name="'
    '${remote_ref##refs/heads/}";     echo "remotes/$remote/$remote_name" #',
])
def test_git_aliases_people_use_are_not_refused(value: str) -> None:
    """Red team 6's rules refuse no alias of popular dotfiles (a function's `"$1"`, a
    `cd` to the repository's top or GIT_PREFIX, `read` in a loop)."""
    from supervisor.person_settings import value_paths as git_paths

    bounds: list[str] = []
    git_paths("alias.x", value, H, bounds=bounds)
    assert bounds == []


def test_a_cds_folder_inside_the_grant_is_named(tree: Path) -> None:
    """A `cd` to a folder inside the grant (through the person's CDPATH too) names it,
    so it is held whole: what follows runs files there by relative names."""
    home = str(tree)
    environ = {"HOME": home, "CDPATH": f"{home}/work", "ZQ_EDITOR": "cd team && ./ed.sh",
               "ZQ_PAGER": "cd ~/work/x; sh pager.sh"}
    named = {(n.variable, n.path) for n in environment_paths(environ, home)}
    assert {("ZQ_EDITOR", f"{home}/work/team"), ("ZQ_PAGER", f"{home}/work/x")} <= named


# -- issue 26, fail closed: a value read as a command names a folder its program may run ---

@pytest.mark.parametrize(("value", "command"), [
    ("~/src", False), ("/a:~/b:", False),  # a path, a list: PATH's form
    (".:~:~/src", False), ("node_modules/.bin:/usr/bin", False),  # CDPATH's, relative parts
    ("-/home/u/src/proj", False),  # DIRENV_DIR's one word
    ("--require=/x/hook.js", False), ("unix:path=/run/x.sock", False),  # an option's word
    ("/home/u/bin/ed", False), ("https://host/p", False),
    ("fd . ~/src", True), ("/usr/bin/find ~/w -exec {} ;", True),  # several words
    ("nvim -u ~/x.vim", True), ("sh -c 'col -bx | ~/pager'", True),
    ("~/w/ed.sh&", True), ("~/w/ed.sh;true", True),  # an operator: a script
    ("~/w/$(hostname).sh", True), ("`cat ~/w/x`", True),  # a substitution
    ("X='~/w'", True), ("/x/My Notes:/y", True),  # a quote; a blank part not there
    ("$ED_ARGS", True),  # several words once expanded
])
def test_a_value_is_read_as_a_command_or_as_paths(value: str, command: bool) -> None:
    assert read_value(value, H, {"HOME": H, "ED_ARGS": "ed -x ~/w"}).command is command


def test_a_list_whose_blank_part_is_there_is_a_list(tmp_path: Path) -> None:
    """`~/My Notes:/x` is a list where `~/My Notes` is there, as the list reading
    keeps that part whole; a command where it is not (`/x/ed --wait`)."""
    (tmp_path / "My Notes").mkdir()
    assert read_value(f"{tmp_path}/My Notes:/x", H, {}).command is False
    assert read_value(f"{tmp_path}/My Notes --wait", H, {}).command is True


def test_each_path_carries_how_its_value_is_read() -> None:
    environ = {"HOME": H, "PROJECTS": "~/src", "FZF_CTRL_T_COMMAND": "fd . ~/src",
               "FZF_ALT_C_COMMAND": "fd -t d . ~", "ZQ_ROOT": "/srv/x"}
    assert environment_paths(environ, H) == (
        EnvironmentPath("FZF_CTRL_T_COMMAND", f"{H}/src", True),
        EnvironmentPath("PROJECTS", f"{H}/src", False),
        EnvironmentPath("ZQ_ROOT", "/srv/x", False))


@pytest.mark.parametrize("value", [
    "sh -c 'find ~/work -name x.sh -exec {} \"$1\" \\;' sh",
    "python3 -c \"import os,sys; os.chdir('{home}/work'); os.execv('t/x.sh', ['x'])\"",
    "perl -e 'chdir \"{home}/work\"; exec \"t/x.sh\", @ARGV'",
    "sh -c 'echo ~/work | xargs -I@ run-parts @'", "run-parts ~/work",
    "fd . ~",  # home: not refused
], ids=["find", "python", "perl", "xargs", "run-parts", "home"])  # PYTEST_CURRENT_TEST
# holds the id, a command's words to the rule: one naming ~/work would refuse
def test_a_command_naming_the_grant_refuses_it(home: Path, value: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A value read as a command that names the write grant, or a folder holding it,
    refuses the launch naming the variable and what it runs; one naming home does
    not (every grant of home's lies there)."""
    monkeypatch.setenv("ZQ_CMD", value.replace("{home}", str(home)))
    if value == "fd . ~":
        snapshot(home, '[files]\nwrite = ["."]\n')
        return
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "ZQ_CMD" in refused.value.message and "runs a command" in refused.value.message
    assert refused.value.key == "files.write[0]" and refused.value.line == 2
    assert "env -u ZQ_CMD" in (refused.value.hint or "")


def test_the_refusal_names_the_variable_never_its_value(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A command line may carry a token (`curl -H 'Authorization: ...'`): lnk's message,
    which an agent's log may keep, says the variable's name alone."""
    monkeypatch.setenv("ZQ_CMD", f"curl -H 'Authorization: Bearer zq-s3cr3t' -T {home}/work")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "ZQ_CMD" in refused.value.message
    assert "s3cr3t" not in f"{refused.value.message} {refused.value.hint}"


def test_a_command_naming_a_folder_holding_the_grant_refuses_it(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`fd . ~/src` with a grant of ~/src/x: refused (a list of programs would tell fd
    from find); `PROJECTS=~/src` the same is the person's choice, in either order of
    names; a command naming a folder inside the grant holds it instead."""
    (home / "src" / "x" / "inner").mkdir(parents=True)
    spec = '[files]\nwrite = ["~/src/x"]\n'
    monkeypatch.setenv("PROJECTS", "~/src")
    snapshot(home, spec)
    for name in ("AA_CMD", "ZZ_CMD"):  # before or after PROJECTS: one place, refused
        monkeypatch.setenv(name, "fd . ~/src")
        with pytest.raises(SpecError) as refused:
            snapshot(home, spec)
        assert name in refused.value.message
        monkeypatch.delenv(name)
    monkeypatch.setenv("ZQ_CMD", "run-parts ~/src/x/inner")
    snapshot(home, spec)
    held = [p.path for p in analyze(str(home / "src" / "x"), home=str(home)).protected
            if "ZQ_CMD" in p.reason]
    assert held == [f"{home}/src/x/inner"]


def test_a_command_through_a_link_to_home_is_home(home: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """What a command names is judged where it leads too: a link to home is home."""
    (home / "work" / "sub").mkdir()
    link = home.parent / "to-home"
    link.symlink_to(home)
    monkeypatch.setenv("ZQ_CMD", f"fd . {link}")
    snapshot(home, '[files]\nwrite = ["./sub"]\n')


# -- red team 26g: what sh has that the reading had not ------------------------------------

def test_ifs_is_shs_own_whatever_the_environment_says() -> None:
    """dash and bash set IFS when they start: one the environment gives is not theirs."""
    environ = {"HOME": H, "IFS": "x"}
    assert read_value("cd${IFS}$HOME/w&&t/ed", H, environ) == ([f"{H}/w"], True)


def test_a_one_word_program_is_read_whole(tmp_path: Path) -> None:
    """One word sh runs as one program: a folder whose name holds `:` is named whole
    where it is there (its first part too, as a list's), and a path is split only at
    sh's blanks: `\r` (a value from a CRLF file) or a no-break space is in the name,
    kept when missing (a blank to sh is not: `/x/ed --wait` names /x/ed)."""
    home = str(tmp_path)
    (tmp_path / "w" / "t:").mkdir(parents=True)
    (tmp_path / "w" / "t:" / "ed.sh").write_text("")
    environ = {"HOME": home}
    assert f"{home}/w/t:/ed.sh" in value_paths("~/w/t:/ed.sh", home, environ)
    assert value_paths("/usr/bin:/bin", home, environ) == ["/usr/bin", "/bin"]
    for odd in ("\r", "\u00a0x"):
        assert f"{home}/w/ed.sh{odd}" in value_paths(f"~/w/ed.sh{odd}", home, environ)
        assert f"{home}/w/x.vim{odd}" in value_paths(f"vim -u ~/w/x.vim{odd}", home,
                                                      environ)
    assert value_paths("~/w/ed --wait", home, environ) == [f"{home}/w/ed"]


def test_a_cd_through_a_link_bounds_where_it_leads(home: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`cd ~/links/h && work/t/ed` with ~/links/h a link to home is `cd ~`: refused as
    it is, where the bound's text alone held no grant."""
    (home / "links").mkdir()
    (home / "links" / "h").symlink_to(home)
    monkeypatch.setenv("ZQ_EDITOR", "cd ~/links/h && work/t/ed.sh")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "ZQ_EDITOR" in refused.value.message


def test_values_people_use_are_still_bounded() -> None:
    """The fixes' controls: a substitution as an argument, in a quoted word or after a
    relative word's `/`, IFS printed, a log on a descriptor, a file of /proc read."""
    from supervisor.environment_paths import unbounded

    environ = {
        "HOME": H,
        "A": "git push origin $(git branch --show-current)",
        "B": 'git log "refs/heads/$(git branch --show-current)/x"',
        "C": 'printf "%s" "$IFS" | od -c', "D": "/proc/self/fd/1", "E": "/dev/fd/2",
        "F": "read load rest < /proc/loadavg; echo $load",
        "G": 'printf "\\033]0;%s\\007" "$(basename "$PWD")"',
        "I": "vim -c \"$(cat ~/.vimcmd)\"",
    }
    assert unbounded(environ, H) == []


@pytest.mark.parametrize(("variable", "value"), [
    ("CFLAGS", "-O2 -I{home}/work"),
    ("PYTEST_ADDOPTS", "--rootdir={home}/work -q"),
    ("MAKEFLAGS", " -- PROJECT={home}/work"),  # lnk run from a make recipe
    ("SUDO_COMMAND", "{lnk} sandbox run -- make -C {home}/work test"),  # sudo lnk ...
], ids=["cflags", "pytest", "makeflags", "sudo"])  # PYTEST_CURRENT_TEST holds the id
def test_options_and_this_launch_are_no_command(home: Path, variable: str, value: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Options a program is given (they are read, not run) and the command sudo
    records for this very launch name the grant without refusing it (red team 26g's
    false refusals); a program's command naming it is refused, the control."""
    lnk = str(home.parent / "venv" / "bin" / "lnk")
    monkeypatch.setattr("sys.argv", [lnk, "sandbox", "run"])
    monkeypatch.setenv(variable, value.format(home=home, lnk=lnk))
    snapshot(home, '[files]\nwrite = ["."]\n')
    monkeypatch.setenv(variable, f"/usr/bin/make -C {home}/work")
    with pytest.raises(SpecError):
        snapshot(home, '[files]\nwrite = ["."]\n')


def test_only_sudos_record_is_this_launch(home: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    """A setting of the person's that runs lnk first, then a script naming the grant, is
    judged: only SUDO_COMMAND is this launch's own command line (red team 26h)."""
    lnk = str(home.parent / "venv" / "bin" / "lnk")
    monkeypatch.setattr("sys.argv", [lnk, "sandbox", "run"])
    monkeypatch.setenv("PROMPT_COMMAND", f"{lnk} --version\ncd {home}/work && t/ed")
    with pytest.raises(SpecError):
        snapshot(home, '[files]\nwrite = ["."]\n')
