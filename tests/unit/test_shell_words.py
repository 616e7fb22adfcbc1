"""What a shell script sources, read as the shell reads it (shell_words.py), and what the
person's startup files leave open where a name is not all literal (issue 26, item 5)."""

from __future__ import annotations

import random
import secrets
from pathlib import Path

import pytest

from supervisor.person_settings import MAX_FOLDER_FILES, Sources, shell_sources
from supervisor.shell_words import ARGUMENT, BESIDE, MAX_SCRIPTS, UNKNOWN, commands, values

HOME = "/h"


def sourced(text: str, environ: dict[str, str] | None = None) -> list[list[str]]:
    script = commands(text)
    variables: dict[str, list[str]] = {}
    for name, word in script.assigned:
        variables[name] = variables.get(name, []) + values(word.parts, variables,
                                                           environ or {}, HOME)
    return [values(w.parts, variables, environ or {}, HOME) for w in script.sourced]


# Where a command's first word is: before each, any of these; after, `.` or `source`.
BEFORE = ["", "; ", "&& ", "|| ", "| ", "& ", "( ", "{ ", "! ", "then ", "do ", "else ",
          "case x in *) ", "builtin ", "command ", "command -p ", "exec ", "time -p ",
          "noglob ", "A=1 ", ">/dev/null ", "2>/dev/null ", "if true; then ",
          "while false; do :; done; ", "f() { ", "$(true) && "]
COMMAND = [".", "source", "\\.", '"."', "'source'", "\\source", "so''urce"]
QUOTED = ["~/{n}", '~/"{n}"', "~/'{n}'", '"$HOME/{n}"', "${{HOME}}/{n}", '"${{HOME}}"/{n}',
          "$HOME/\\{n}", "~/{n} --", "-- ~/{n}"]


def test_every_form_of_sourcing_is_found_with_random_names() -> None:
    """The class: each way to reach a command word, each spelling of `.`/`source`, each
    quoting of the name, with a random name, on one line or split."""
    rng = random.Random(secrets.randbits(32))
    for _ in range(300):
        name = "w" + secrets.token_hex(3)
        before, command, word = rng.choice(BEFORE), rng.choice(COMMAND), rng.choice(QUOTED)
        line = f"{before}{command} {word.format(n=name)}".replace(" -- ~", " -- ~")
        if word.startswith("-- "):
            line = f"{before}{command} -- ~/{name}"
        elif word.endswith(" --"):
            line = f"{before}{command} ~/{name}"
        text = f"# a comment . ~/not{name}\n echo . ~/no{name} # . ~/neither\n{line}\n"
        assert sourced(text) == [[f"{HOME}/{name}"]], text


@pytest.mark.parametrize("text", [
    "echo . ~/x", "# . ~/x", "'then' . ~/x", "echo \\\n. ~/x", "[ -f . ] && echo ok",
])
def test_what_is_no_command_is_not_sourcing(text: str) -> None:
    assert sourced(text) == []


@pytest.mark.parametrize("text", [
    "printf '%s\\n' '. ~/x'", "cat <<EOF\n. ~/x\nEOF\n", "alias s='. ~/x'", 'x=". ~/x"',
    "eval '. ~/x'", "trap '. ~/x' EXIT", "PROMPT_COMMAND='. ~/x'",
    "cat <<'E' | . /dev/stdin\n. ~/x\nE\n",
])
def test_a_string_the_shell_may_run_later_is_read_as_a_script(text: str) -> None:
    """Fail closed: a quoted string (and a here-document) may be run as a script later
    (eval, a trap, an alias, a prompt command, `. /dev/stdin`), so what it sources is
    followed; a string that stays text only makes more held."""
    assert [f"{HOME}/x"] in sourced(text)


def test_what_a_variable_holds_is_followed() -> None:
    assert sourced('export NVM_DIR="$HOME/.nvm"\n[ -s "$NVM_DIR/nvm.sh" ] && '
                   '\\. "$NVM_DIR/nvm.sh"') == [[f"{HOME}/.nvm/nvm.sh"]]
    assert sourced('. "${XDG_CONFIG_HOME:-$HOME/.config}/x"') == [[f"{HOME}/.config/x"]]
    assert sourced('. "${XDG_CONFIG_HOME:-$HOME/.config}/x"',
                   {"XDG_CONFIG_HOME": "/c"}) == [["/c/x", f"{HOME}/.config/x"]]
    assert sourced(". $ZSH/oh-my-zsh.sh", {"ZSH": "/z"}) == [["/z/oh-my-zsh.sh"]]
    assert sourced(". $UNSET/x") == [[f"{UNKNOWN}/x"]]
    assert sourced('. "$(dirname "$0")"/lib.sh') == [[f"{BESIDE}/lib.sh"]]
    assert sourced('. "${BASH_SOURCE%/*}/lib.sh"') == [[f"{BESIDE}/lib.sh"]]
    assert sourced('. "$1"') == [[ARGUMENT]]
    assert sourced("x=$(. ~/inside; echo)") == [[f"{HOME}/inside"]]


def test_any_text_is_read_without_error() -> None:
    """Text no shell would take (unbalanced quotes, stray operators, bytes) is read to
    its end, never raising or looping."""
    alphabet = " \t\n;&|()<>'\"\\$`*?[]{}#=~.source-_/abc0123"
    rng = random.Random(secrets.randbits(32))
    for _ in range(500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 80)))
        commands(text)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path.resolve() / "home"
    folder.mkdir()
    return folder


def test_a_name_not_all_literal_leaves_its_folder_open(home: Path) -> None:
    """Fail closed: the folder a pattern or an unknown part may lead into is named (the
    literal part's folder; for a name that starts unknown, the sourcing file's own
    folder), and the files a pattern's folder holds are read for what they source."""
    (home / "rc.d").mkdir()
    (home / "rc.d" / "a.sh").write_text(". ~/from-a\n")
    (home / "team").mkdir()
    (home / "team" / "init.sh").write_text('. "$(dirname "$0")/lib.sh"\n')
    (home / ".bashrc").write_text(
        "for f in ~/rc.d/*.sh; do . \"$f\"; done\n"
        ". ~/team/init.sh\n"
        ". ~/work/sub/$(hostname).sh\n")
    found = shell_sources(str(home), environ={})
    folders = dict(found.folders)
    assert sorted(f for f in folders if f.startswith(f"{home}/")) == [
        f"{home}/rc.d", f"{home}/team", f"{home}/work/sub"]
    files = dict(found.files)
    assert files[f"{home}/from-a"] == "sourced by ~/rc.d/a.sh"
    assert f"{home}/rc.d/a.sh" in files


# -- the rule by structure (issue 26, red team 2): every word, what cannot be bounded --


def test_forms_of_a_name_are_followed_to_their_values() -> None:
    assert sourced('t=(~/a ~/b)\n. "${t[1]}"') == [[f"{HOME}/a", f"{HOME}/b"]]
    assert sourced('t=~/w/\n. "${t%/}/x"') == [[f"{HOME}/w/x"]]
    assert sourced('t=~/w/x.sh\n. "${t%.sh}.zsh"') == [[f"{HOME}/w/x.zsh"]]
    assert sourced('t=/a/b/c\n. "${t##*/}"') == [["c"]]
    assert sourced(". ~/.{path,exports}") == [[f"{HOME}/.path", f"{HOME}/.exports"]]
    assert sourced(". ~+/x") == [["./x"]]
    assert sourced('. "${${(%):-%x}:a:h}/x"') == [[f"{BESIDE}/x"]]


def _sources(home: Path, bashrc: str) -> Sources:
    (home / ".bashrc").write_text(bashrc)
    return shell_sources(str(home), environ={"PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("line", [
    'eval "$(cat ~/w/x)"', ". <(cat ~/w/x)", "source /dev/stdin < ~/w/x", "eval '. ~/w/x'",
    "trap '~/w/x' EXIT", "PROMPT_COMMAND='~/w/x'", "complete -C ~/w/x git",
    "bind -x '\"\\C-t\": ~/w/x'", "f() { exec ~/w/x; }", "[ -x ~/w/x ] && ~/w/x",
    "alias a='~/w/x --flag'", "export EDITOR=~/w/x", "cmd --config=~/w/x",
    "cat <<E | sh\n~/w/x\nE",
])
def test_every_word_that_names_a_path_is_named(home: Path, line: str) -> None:
    named = dict(_sources(home, line + "\n").named)
    assert f"{home}/w/x" in named, line


@pytest.mark.parametrize(("line", "said"), [
    (". ./x", "~/.bashrc line 1: `. ./x`"), (". x", "`. x` is found from the folder"),
    (". ~+/x", "found from the folder"), ("cd ~/w && . ./x", "found from the folder"),
    ('. "$(cat ~/.where)/x"', "whose start only"), ('. "$NOWHERE/x"', "whose start only"),
    ("PATH=.:$PATH", "PATH gets '.', found from the folder"),
    ("PATH=node_modules/.bin:$PATH", "found from the folder the shell"),
])
def test_what_cannot_be_bounded_is_a_refusal_naming_the_line(home: Path, line: str,
                                                             said: str) -> None:
    refusals = _sources(home, "\n" * 0 + line + "\n").refusals
    assert any(said in f"{where}: {what}" for where, what, _ in refusals), refusals


@pytest.mark.parametrize("line", [
    ". ~/x", '. "$(dirname "$0")/lib.sh"', '. "${BASH_SOURCE%/*}/lib.sh"',
    'load() { . "$1"; }\nload ~/x', "alias va='. .venv/bin/activate'",
    "va() { . .venv/bin/activate; }", ". bash_completion_on_path",
    'x=~/a\n. "$x"', "echo . ./x",
])
def test_what_is_bounded_is_no_refusal(home: Path, line: str) -> None:
    (home / "bin").mkdir()
    (home / "bin" / "bash_completion_on_path").write_text("\n")
    (home / ".bashrc").write_text(line + "\n")
    found = shell_sources(str(home), environ={"PATH": f"{home}/bin:/usr/bin"})
    assert found.refusals == [], line


def test_a_path_folder_and_an_open_folder_run_what_is_in_them(home: Path) -> None:
    runs = dict(_sources(home, 'PATH="$HOME/w/bin:$PATH:~/w/tools"\n'
                               ". ~/w/team/$(hostname).sh\n").runs_in)
    assert {f"{home}/w/bin", f"{home}/w/tools", f"{home}/w/team"} <= set(runs)


def test_a_readers_bound_refuses_rather_than_cutting_short(home: Path) -> None:
    (home / "rc.d").mkdir()
    for index in range(MAX_FOLDER_FILES + 1):
        (home / "rc.d" / f"{index:04d}.sh").write_text("\n")
    refusals = _sources(home, 'for f in ~/rc.d/*.sh; do . "$f"; done\n').refusals
    assert any(f"more than {MAX_FOLDER_FILES} files" in what for _, what, _ in refusals)
    (home / "big").write_text("#" * (1 << 20) + "\n")
    refusals = _sources(home, ". ~/big\n").refusals
    assert any("longer than" in what for _, what, _ in refusals)
    words = " ".join(f"'~/{i} x'" for i in range(MAX_SCRIPTS + 1))
    refusals = _sources(home, f"echo {words}\n").refusals
    assert any(f"more than {MAX_SCRIPTS} scripts" in what for _, what, _ in refusals)


def test_a_relative_program_is_held_from_home_and_each_cd(home: Path) -> None:
    named = dict(_sources(home, "cd ~/w && ./run.sh\ncase $x in lts/*) ./c.sh ;; esac\n"
                                "alias b='cd ~/p && ./build.sh'\n").named)
    assert {f"{home}/w/run.sh", f"{home}/run.sh", f"{home}/w/c.sh"} <= set(named)
    assert f"{home}/p/build.sh" not in named and f"{home}/lts" not in named


@pytest.mark.parametrize("line", [
    'PROMPT_COMMAND="${PROMPT_COMMAND:+$PROMPT_COMMAND;}~/w/x"',
    'PROMPT_COMMAND="$PROMPT_COMMAND;~/w/x"', "export BASH_ENV=~/w/x",
    "x=$'a'\n. ~/w/x", "exec 3<~/w/x; . /dev/fd/3", 'eval "$(<~/w/x)"',
    "mapfile -t a < ~/w/x", ". ~/w/x\\ ", "[[ -f ~/w/x ]] && source ~/w/x",
])
def test_more_forms_nobody_listed_are_named(home: Path, line: str) -> None:
    named = dict(_sources(home, line + "\n").named)
    assert f"{home}/w/x" in named or f"{home}/w/x " in named, line


@pytest.mark.parametrize(("line", "kind"), [
    ("export PYTHONPATH=~/w/x:$PYTHONPATH", "runs_in"), ("fpath=(~/w/x $fpath)", "runs_in"),
    ("path+=(~/w/x)", "runs_in"), ("export NODE_PATH=~/w/x", "runs_in"),
    ("export ZDOTDIR=~/w/x", "runs_in"), ("export PYTHONSTARTUP=~/w/x", "named"),
    ("export LD_LIBRARY_PATH=$HOME/w/x", "runs_in"),
])
def test_a_variable_naming_code_that_a_startup_file_sets_is_judged(home: Path, line: str,
                                                                   kind: str) -> None:
    found = _sources(home, line + "\n")
    assert f"{home}/w/x" in dict(getattr(found, kind)), line
    assert found.refusals == []


def test_a_relative_code_folder_refuses(home: Path) -> None:
    assert _sources(home, "export PYTHONPATH=src\n").refusals


def test_a_listing_is_below_the_folders_it_is_given(home: Path) -> None:
    """sdkman-init.sh's form: the files `find` prints lie below its start points."""
    (home / "s" / "src").mkdir(parents=True)
    (home / "s" / "src" / "a.sh").write_text(". ~/from-a\n")
    found = _sources(home, 'D="$HOME/s"\nscripts=($(find "${D}/src" "$D/ext" -type f))\n'
                           'for f in "${scripts[@]}"; do source "$f"; done\n')
    assert found.refusals == []
    assert {f"{home}/s/src", f"{home}/s/ext"} <= set(dict(found.runs_in))
    assert f"{home}/from-a" in dict(found.files)
    assert _sources(home, 'for f in $(find ~/s | sed s/a/b/); do . "$f"; done\n').refusals


@pytest.mark.parametrize(("line", "refused"), [
    ("PATH=$PATH:", True), ("PATH=.:$PATH", True), ("PATH=$PATH::/usr/bin", True),
    ('PATH="${PATH:+${PATH}:}$HOME/.fzf/bin"', False),
    ('p=""\nfor x in a b; do p="$p${p:+:}$x"; done\nPATH=$p', False),  # asdf.sh's loop
])
def test_a_relative_path_element_refuses_where_the_line_writes_it(home: Path, line: str,
                                                                  refused: bool) -> None:
    assert bool(_sources(home, line + "\n").refusals) == refused, line
