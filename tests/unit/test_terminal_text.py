"""What lnk writes reaches a terminal escaped: `terminal.shown`, fuzzed, and each way lnk
writes (say, an error, describe, check, learn's table) given text a sandbox could choose."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor import terminal
from supervisor.errors import SandboxError, SpecError
from supervisor.events import EventLog, say
from supervisor.learn import Learned, render
from supervisor.terminal import shell_line, shell_word, shown, shown_lines, shown_text

LNK = Path(sys.executable).parent / "lnk"
HOSTILE = "a\x1b]0;pwned\x07\x1b[2J\u009b31m\r\nlnk-sandbox: fine\u202e\udcff\x00\x7f\ufeff"
# Characters a fuzzer should meet often: escapes, C1, bidi, lone surrogates of
# os.fsdecode, line breaks of every kind, the backslash.
NASTY = st.sampled_from(["\x1b", "\x07", "\x9b", "\x85", "\u202e", "\u2028", "\udcff",
                         "\udc80", "\ud800", "\n", "\r", "\t", "\\", "\x00", "\x7f",
                         "\U000e0041", "\u00a0", "\u200b", "é", "中"])
TEXTS = st.text(alphabet=st.one_of(st.characters(), NASTY), max_size=60)
_ESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}|[ntr])")


def _unescaped(text: str) -> str:
    """What `shown` escaped, read back (for a text that held no backslash)."""
    def one(found: re.Match[str]) -> str:
        code = found.group(1)
        if code in "ntr":
            return {"n": "\n", "t": "\t", "r": "\r"}[code]
        value = int(code[1:], 16)
        return chr(0xDC00 + value) if code[0] == "x" and value >= 0x80 else chr(value)
    return _ESCAPE.sub(one, text)


def _terminal_safe(text: str, *, utf8: bool) -> bool:
    """Nothing a terminal would obey: only printable characters (ASCII alone where the
    terminal is not UTF-8), so no C0, DEL, C1, format or separator character."""
    return all(c.isprintable() for c in text) and (utf8 or text.isascii())


@settings(max_examples=400, deadline=None)
@given(TEXTS, st.booleans())
def test_shown_leaves_nothing_a_terminal_obeys_and_loses_nothing(text: str, utf8: bool
                                                                ) -> None:
    out = shown(text, utf8=utf8)
    assert _terminal_safe(out, utf8=utf8), repr(out)
    assert shown(out, utf8=utf8) == out  # shown twice: the same
    written = f"lnk-sandbox: {out}\n".encode()  # strict: no lone surrogate is left
    assert written.count(b"\n") == 1
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", written)
    if "\\" not in text:
        assert _unescaped(out) == text


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, max_size=5))
def test_lines_stay_lines(lines: list[str]) -> None:
    out = shown_lines(lines)
    assert out.count("\n") == len(lines)
    assert all(_terminal_safe(line, utf8=terminal.utf8_terminal())
               for line in out.split("\n"))
    text = "\n".join(lines)
    assert shown_text(text).count("\n") == text.count("\n")


def test_the_forms_a_person_reads() -> None:
    assert shown(HOSTILE, utf8=True) == (
        "a\\x1b]0;pwned\\x07\\x1b[2J\\u009b31m\\r\\nlnk-sandbox: fine\\u202e\\xff\\x00"
        "\\x7f\\ufeff")
    assert shown("/home/zoé/中/x\U0001f600", utf8=True) == "/home/zoé/中/x\U0001f600"
    assert shown("/home/zoé", utf8=False) == "/home/zo\\u00e9"
    assert shown("\U000e0041", utf8=True) == "\\U000e0041"  # a tag character: invisible
    assert shown("plain ascii, untouched") == "plain ascii, untouched"


def _a_word(text: str) -> bool:
    """A string a program can be handed as an argument (a path): no NUL, and each lone
    surrogate one of os.fsdecode's (a byte that was not UTF-8)."""
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return "\x00" not in text


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXTS.filter(_a_word), min_size=1, max_size=6))
def test_a_shell_reads_back_each_word_lnk_prints(words: list[str]) -> None:
    """`plan`'s bwrap line: one line, nothing a terminal obeys, and bash (in a UTF-8
    locale) reads back every word's exact bytes, whatever a name holds."""
    line = shell_line(words, utf8=True)
    assert "\n" not in line and _terminal_safe(line, utf8=True), repr(line)
    done = subprocess.run(["/bin/bash", "-c", 'printf "%s\\0" ' + line],
                          env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin"},
                          capture_output=True, timeout=30, check=True)
    assert done.stdout == b"".join(os.fsencode(word) + b"\0" for word in words)
    ascii_line = shell_line(words, utf8=False)
    assert _terminal_safe(ascii_line, utf8=False), repr(ascii_line)


def test_the_shell_words_a_person_reads() -> None:
    assert shell_word("/home/ann/src/app", utf8=True) == "/home/ann/src/app"
    assert shell_word("it's here", utf8=True) == "'it'\"'\"'s here'"
    assert shell_word("app\nlnk-sandbox: ok\x1b[2J", utf8=True) == \
        "$'app\\nlnk-sandbox: ok\\x1b[2J'"
    assert shell_word("a'\\\x07\udcff", utf8=True) == "$'a\\'\\\\\\x07\\xff'"


@pytest.mark.parametrize(("variables", "utf8"), [
    ({"LANG": "C.UTF-8"}, True), ({"LANG": "en_US.utf8"}, True), ({"LANG": "C"}, False),
    ({}, False), ({"LANG": "C.UTF-8", "LC_ALL": "C"}, False),
    ({"LANG": "C", "LC_CTYPE": "de_DE.UTF-8"}, True),
])
def test_the_locale_says_whether_the_terminal_is_utf8(
        monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], utf8: bool) -> None:
    for name in ("LC_ALL", "LC_CTYPE", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(terminal, "_UTF8", [])
    assert terminal.utf8_terminal() is utf8


def test_say_and_a_refusal_are_one_escaped_line(capfd: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(terminal, "_UTF8", [True])
    say(f"refused /p/{HOSTILE}")
    log = EventLog()
    log.add("program", "/p/x", f"/p/{HOSTILE}", "commands.programs", 7)
    log.add("network", f"{HOSTILE}:443", HOSTILE, "network.allow", 7)
    err = capfd.readouterr().err
    escaped = shown(HOSTILE, utf8=True)
    assert err.splitlines() == [
        f"lnk-sandbox: refused /p/{escaped}",
        f"lnk-sandbox: refused /p/{escaped} (not in [commands])",
        f"lnk-sandbox: refused {escaped}:443 (not in [network] allow)",
    ]


def test_an_errors_message_and_hint_are_a_line_each() -> None:
    plain = SandboxError(f"a link at {HOSTILE}", hint=f"remove {HOSTILE}").render()
    spec = SpecError(f"no folder {HOSTILE}", file=f"/s/{HOSTILE}", key="files.read[0]",
                     line=3, hint=HOSTILE).render()
    for text in (plain, spec):
        _message, second = text.split("\n")
        assert second.startswith("  hint: ")
        assert _terminal_safe(text.replace("\n", ""), utf8=terminal.utf8_terminal())
    assert "\n" not in SandboxError(HOSTILE).render()


def test_learns_table_escapes_and_still_says_the_same_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What `shown` escapes in a TOML string it writes as TOML's own escape: the table
    still names the very file (tomllib reads the same path back), in either locale."""
    path = "/opt/c1\u009b31m/bidi\u202etxt/nbsp\u00a0/zwsp\u200b/\U000e0041"
    for utf8 in (True, False):
        monkeypatch.setattr(terminal, "_UTF8", [utf8])
        text = render([Learned(path, path, False)], [], ["make", HOSTILE])
        assert tomllib.loads(text) == {"commands": {"programs": [path]}}
        assert all(_terminal_safe(line, utf8=utf8) for line in text.split("\n"))


def _lnk(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "LNK_HOME": str(home / ".lnk"), "LANG": "C.UTF-8"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return subprocess.run([str(LNK), "sandbox", *args], cwd=home, env=env,
                          capture_output=True, text=True, timeout=60,
                          errors="surrogateescape")


def test_describe_check_and_errors_name_a_hostile_folder_escaped(tmp_path: Path) -> None:
    """A folder of the host whose name a sandbox chose (it wrote it in a grant before),
    named by a spec: describe, check and an error show it escaped, one line each."""
    name = "x\x1b]0;pwned\x07\x1b[2J\u009b\nlnk-sandbox: fine"
    folder = tmp_path / name
    folder.mkdir()
    escaped = shown(name, utf8=True)
    toml_name = str(folder).replace("\x1b", "\\u001b").replace("\x07", "\\u0007") \
        .replace("\n", "\\n")
    spec = tmp_path / "spec.toml"
    spec.write_text(f'[files]\nread = ["{toml_name}"]\n')
    outputs = [_lnk(tmp_path, "describe", "--spec", str(spec)),
               _lnk(tmp_path, "check", "--spec", str(spec))]
    assert outputs[0].returncode == 0, outputs[0].stderr
    assert f"  {tmp_path}/{escaped}    (" in outputs[0].stdout
    spec.write_text(f'[files]\nread = ["{toml_name}/missing"]\n')
    failed = _lnk(tmp_path, "describe", "--spec", str(spec))
    assert failed.returncode == 125
    assert f"{tmp_path}/{escaped}/missing" in failed.stderr
    outputs.append(failed)
    for done in outputs:
        for text in (done.stdout, done.stderr):
            assert _terminal_safe(text.replace("\n", ""), utf8=True), repr(text)
            assert "lnk-sandbox: fine" not in text.splitlines()
