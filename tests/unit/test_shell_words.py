"""What a shell script sources, read as the shell reads it (shell_words.py), and what the
person's startup files leave open where a name is not all literal (issue 26, item 5)."""

from __future__ import annotations

import random
import secrets
from pathlib import Path

import pytest

from supervisor.person_settings import shell_sources
from supervisor.shell_words import ARGUMENT, BESIDE, UNKNOWN, commands, values

HOME = "/h"


def sourced(text: str, environ: dict[str, str] | None = None) -> list[list[str]]:
    script = commands(text)
    variables: dict[str, list[str]] = {}
    for name, word in script.assigned:
        variables[name] = values(word.parts, variables, environ or {}, HOME)
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
