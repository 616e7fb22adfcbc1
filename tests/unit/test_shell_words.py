"""What a shell script sources, read as the shell reads it (shell_words.py), and what the
person's startup files leave open where a name is not all literal (issue 26, item 5)."""

from __future__ import annotations

import random
import secrets
from pathlib import Path

import pytest

from supervisor.person_settings import shell_sources
from supervisor.shell_words import UNKNOWN, commands, values

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
    "echo . ~/x", "printf '%s\\n' '. ~/x'", "# . ~/x", "cat <<EOF\n. ~/x\nEOF\n",
    "'then' . ~/x", "alias s='. ~/x'", "echo \\\n. ~/x", 'x=". ~/x"', "[ -f . ] && echo ok",
])
def test_what_is_no_command_is_not_sourcing(text: str) -> None:
    assert sourced(text) == []


def test_what_a_variable_holds_is_followed() -> None:
    assert sourced('export NVM_DIR="$HOME/.nvm"\n[ -s "$NVM_DIR/nvm.sh" ] && '
                   '\\. "$NVM_DIR/nvm.sh"') == [[f"{HOME}/.nvm/nvm.sh"]]
    assert sourced('. "${XDG_CONFIG_HOME:-$HOME/.config}/x"') == [[f"{HOME}/.config/x"]]
    assert sourced('. "${XDG_CONFIG_HOME:-$HOME/.config}/x"',
                   {"XDG_CONFIG_HOME": "/c"}) == [["/c/x", f"{HOME}/.config/x"]]
    assert sourced(". $ZSH/oh-my-zsh.sh", {"ZSH": "/z"}) == [["/z/oh-my-zsh.sh"]]
    assert sourced(". $UNSET/x") == [[f"{UNKNOWN}/x"]]
    assert sourced('. "$(dirname "$0")"/lib.sh') == [[f"{UNKNOWN}/lib.sh"]]
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
