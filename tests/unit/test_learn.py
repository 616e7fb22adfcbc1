"""learn's table: TOML that parses on its own, whatever the command and the files."""

from __future__ import annotations

import tomllib

from supervisor.learn import Learned, LeftOut, render


def test_learns_names_are_toml_strings_whatever_the_file_is_called() -> None:
    odd = ['/opt/a "quoted"\\name', "/opt/new\nline", "/opt/del\x7f", "/opt/caf\u00e9",
           "/opt/tab\there"]
    text = render([Learned(p, p, i % 2 == 0) for i, p in enumerate(odd)],
                  [LeftOut("/tmp/x\ny", "in a temp folder"),
                   LeftOut("/tmp/\udcff", "in a temp folder")],
                  ["sh", "-c", "a\nb\x1b ]\n[files]\nwrite = ['/']"])
    assert tomllib.loads(text) == {"commands": {"programs": odd}}
    assert text.splitlines()[0] == (
        "# lnk sandbox learn: the programs `sh -c 'a\\nb\\x1b ]\\n[files]\\nwrite = "
        "['\"'\"'/'\"'\"']'` ran.")


def test_a_path_that_is_not_utf8_is_left_out_with_the_reason() -> None:
    text = render([Learned("/opt/\udcff", "/opt/\udcff", False)], [], ["x"])
    assert tomllib.loads(text) == {"commands": {"programs": []}}
    assert text.splitlines()[-1] == (
        "# left out /opt/\\xff: its path is not UTF-8, which a spec cannot name")
