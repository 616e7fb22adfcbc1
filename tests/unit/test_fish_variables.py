"""fish's universal variables (supervisor/fish_variables.py): the file read as fish reads
it (its escapes, lists, flags and both formats, compared with the real fish where it is
installed), bounded, and what a snapshot then holds, refuses and hides. Sandboxes write
through them in tests/attacks/test_red_team26f.py."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from supervisor.dotfiles import analyze
from supervisor.errors import SpecError
from supervisor.fish_variables import (
    MAX_BYTES,
    Universal,
    files,
    hint,
    label,
    named_paths,
    parse,
    universal_variables,
)
from supervisor.grants import Snapshot, resolve
from supervisor.home_hidden import is_undotted
from supervisor.home_places import found_once, home_places, relative_gaps
from supervisor.policy import Context, effective_policy
from supervisor.spec import parse_spec

HEADER = b"# This file contains fish universal variable definitions.\n# VERSION: 3.0\n"


def variables(body: bytes, header: bytes = HEADER) -> dict[str, Universal]:
    return parse(header + body)


# -- the format ---------------------------------------------------------------------------

@pytest.mark.parametrize(("line", "values"), [
    (b"SETUVAR x:/a/b", ("/a/b",)),
    (b"SETUVAR x:/a\\x1e/b\\x1e", ("/a", "/b", "")),  # fish's list: \x1e between elements
    (b"SETUVAR x:\\x1d", ()),  # the empty list
    (b"SETUVAR x:", ("",)),  # one empty element
    (b"SETUVAR x:/home/p/\\x2elocal/bin", ("/home/p/.local/bin",)),  # fish's own escapes
    (b"SETUVAR x:/w/\\xc3\\xb6", ("/w/\u00f6",)),  # bytes together: one UTF-8 text
    (b"SETUVAR x:/w/\\u00e9\\U0001f600", ("/w/\u00e9\U0001f600",)),
    (b"SETUVAR x:/w/\\101\\7", ("/w/A\x07",)),  # octal, three digits at most
    (b"SETUVAR x:a\\ b\\$c\\e\\cA", ("a b$c\x1b\x01",)),  # other escapes: the character
    (b"SETUVAR x:'/my dir'/\"x\\\"y\\$\"", ('/my dir/x"y$',)),  # quotes, as fish reads
    (b"SETUVAR x:a:b:c", ("a:b:c",)),  # NAME ends at the first `:`
    (b"SETUVAR   x:/tab\\x09", ("/tab\t",)),
])
def test_a_value_is_unescaped_as_fish_unescapes_it(line: bytes,
                                                   values: tuple[str, ...]) -> None:
    assert variables(line + b"\n")["x"].values == values


@pytest.mark.parametrize("line", [
    b"SETUVAR x:/a\\",  # a trailing backslash: fish sets nothing
    b"SETUVAR x:\\xZZ", b"SETUVAR x:\\u", b"SETUVAR x:\\777", b"SETUVAR x:'open\\",
    b"SETUVAR x", b"SETUVARx:/a", b"SET x:/a", b"set -U x /a", b"# SETUVAR x:/a",
])
def test_what_fish_does_not_set_is_not_read(line: bytes) -> None:
    assert "x" not in variables(line + b"\n")


def test_flags_and_both_formats() -> None:
    found = variables(b"SETUVAR --export EDITOR:vim\nSETUVAR --path --export P:/a\x1e/b\n"
                      b"SETUVAR --future-flag --export Q:/q\nSETUVAR --path R:/r\n")
    assert found["EDITOR"] == Universal("EDITOR", ("vim",), exported=True)
    assert found["P"] == Universal("P", ("/a", "/b"), exported=True, path=True)
    assert found["Q"].exported and found["Q"].values == ("/q",)
    assert found["R"].path and not found["R"].exported
    # fish 2.x: no VERSION comment
    old = parse(b"# fish 2\nSET_EXPORT EDITOR:vim\\x20\\x2dn\nSET fish_user_paths:/o\n")
    assert old["EDITOR"] == Universal("EDITOR", ("vim -n",), exported=True)
    assert old["fish_user_paths"].values == ("/o",)
    assert "fish_user_paths" not in variables(b"SET fish_user_paths:/o\n")  # 3.0's: no


def test_a_list_is_given_as_fish_exports_it() -> None:
    """A path variable's elements joined by `:`, any other's by a space (fish's rule);
    fish's PATH variables' as PATH's."""
    assert Universal("X", ("a", "b")).value() == "a b"
    assert Universal("X", ("/a", "/b"), path=True).value() == "/a:/b"
    assert Universal("MANPATH", ("/a", "/b")).value() == "/a:/b"
    assert Universal("fish_user_paths", ("/a", "/b")).value() == "/a:/b"


def test_each_line_is_read_whatever_bytes_it_holds() -> None:
    found = variables(b"SETUVAR x:/a\\xff/b\nSETUVAR y:/\xff\nSETUVAR z:/z\r\n")
    assert found["x"].values == ("/a\udcff/b",)  # a byte that is no UTF-8, kept
    assert found["y"].values == ("/\udcff",)  # fish 4 skips such a line: read anyway
    assert found["z"].values == ("/z\r",)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed here")
def test_fish_itself_reads_the_same_values(tmp_path: Path) -> None:
    """The real fish writes values of every kind (`set -U`), and reads them and a file
    written by hand, with escapes it never writes; lnk reads the same elements."""
    config = tmp_path / "config"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(config),
           "LANG": "C.UTF-8"}
    values = {"a": ["/x/My Notes", "it's", '"q"', "$HOME", "tab\there", "~/w", "é😀", ""],
              "b": [], "c": ["a\x1fb", "back\\slash", "semi;colon", "-dash"]}
    for name, elements in values.items():
        subprocess.run(["fish", "-c", 'set -U $argv[1] $argv[2..]', name, *elements],
                       env=env, check=True, timeout=30)
    path = config / "fish" / "fish_variables"
    with open(path, "ab") as handle:
        handle.write(b"SETUVAR d:'/my dir'/\"x\\\"y\"\\101\\cA\\e\\ z\nSETUVAR --export "
                     b"e:\\xc3\\xa9\\x1e\\u00e9\\U0001F600\n")
    found = parse(path.read_bytes())
    for name in ("a", "b", "c", "d", "e"):
        done = subprocess.run(["fish", "-c", 'for v in $$argv[1]; printf "%s\\x00" $v; end',
                               name], env=env, capture_output=True, check=True, timeout=30)
        fish = tuple(done.stdout.decode("utf-8", "surrogateescape").split("\0")[:-1])
        assert found[name].values == fish, name
    assert found["a"].values == tuple(values["a"])


# -- the files --------------------------------------------------------------------------------

def fish_file(home: Path, body: str, config: Path | None = None) -> Path:
    path = (config or home / ".config") / "fish" / "fish_variables"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(HEADER + body.encode())
    return path


def snapshot(home: Path, text: str) -> Snapshot:
    context = Context(home=str(home), cwd=str(home / "work"), lnk_home=str(home / ".lnk"),
                      uid=1000, runtime_dir=None, installation=())
    return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context),
                   context)


def test_xdg_config_home_and_home_are_both_read(home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """fish reads XDG_CONFIG_HOME's file when set, else ~/.config's; lnk may start with
    another XDG_CONFIG_HOME than the person's fish, so both."""
    assert files(str(home), {}) == [f"{home}/.config/fish/fish_variables"]
    assert universal_variables(str(home), {}) == ((), {}, ())  # no file: nothing
    fish_file(home, "SETUVAR a:/a\nSETUVAR both:/home\n")
    fish_file(home, "SETUVAR b:/b\nSETUVAR both:/xdg\n", config=home / "cfg")
    environ = {"XDG_CONFIG_HOME": f"{home}/cfg"}
    found = universal_variables(str(home), environ)
    assert found.files == (f"{home}/cfg/fish/fish_variables",
                           f"{home}/.config/fish/fish_variables")
    assert {n: v.values for n, v in found.variables.items()} == {
        "a": ("/a",), "b": ("/b",), "both": ("/home",)}
    assert files(str(home), {"XDG_CONFIG_HOME": "relative"}) == [
        f"{home}/.config/fish/fish_variables"]


def test_a_huge_file_refuses_a_launch_that_writes(home: Path) -> None:
    """Longer than MAX_BYTES (a real one holds a few KiB): never read in part (what
    follows the bound could name anything), a launch that writes anything refused."""
    fish_file(home, "SETUVAR fish_user_paths:/nowhere\n" + "#" * MAX_BYTES + "\n")
    found = universal_variables(str(home), {})
    assert found.variables == {} and len(found.refusals) == 1
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "fish_variables" in refused.value.message
    assert "longer than" in refused.value.message
    snapshot(home, '[files]\nread = ["."]\n')  # nothing written: nothing refused


def test_read_once_per_start_and_cheap(home: Path) -> None:
    """Within found_once the file is read once; a real-sized file costs well under a
    millisecond."""
    body = "".join(f"SETUVAR fish_color_{i}:brblue\\x1e\\x2d\\x2dbold\n" for i in range(60))
    fish_file(home, body + f"SETUVAR fish_user_paths:{home}/bin\\x1e{home}/\\x2ecargo/bin\n")
    with found_once():
        first = universal_variables(str(home))
        assert universal_variables(str(home)) is first
    start = time.perf_counter()
    for _ in range(100):
        universal_variables(str(home), {})
    assert (time.perf_counter() - start) / 100 < 0.005


# -- what a snapshot does with them ---------------------------------------------------------

def test_fish_user_paths_folders_are_path_folders(home: Path) -> None:
    """`fish_add_path ~/work/bin`: a folder of the person's PATH in every fish, a holder
    as a launch PATH's folder is: a grant that is or holds it is refused, one inside it
    is not (red team 26f)."""
    (home / "work" / "bin" / "sub").mkdir(parents=True)
    fish_file(home, f"SETUVAR fish_user_paths:{home}/work/bin\\x1e/usr/local/bin\n")
    place = {p.path: p for p in home_places(str(home))}[f"{home}/work/bin"]
    assert place.holder and place.what.startswith("a folder of your PATH in fish")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "~/work/bin: a folder of your PATH in fish" in refused.value.message
    assert "fish_user_paths" in (refused.value.hint or "")
    snapshot(home, '[files]\nwrite = ["./bin/sub"]\n')  # inside it: the person's choice


def test_a_universal_path_and_code_path_are_holders(home: Path) -> None:
    """An exported universal PATH (`set -Ux PATH ...`) is PATH's; a universal
    PYTHONPATH a code path's (CODE_PATHS), fish's function path the same."""
    for folder in ("tools", "lib", "functions"):
        (home / "work" / folder).mkdir()
    fish_file(home, f"SETUVAR --export PATH:{home}/work/tools\\x1e/usr/bin\n"
                    f"SETUVAR --export PYTHONPATH:{home}/work/lib\n"
                    f"SETUVAR fish_function_path:{home}/work/functions\n")
    found = {p.path: p for p in home_places(str(home))}
    assert found[f"{home}/work/tools"].holder
    assert found[f"{home}/work/functions"].holder
    assert "NAME.fish" in found[f"{home}/work/functions"].what
    lib = found[f"{home}/work/lib"]
    assert lib.holder and lib.what.startswith(f"a folder of your {label('PYTHONPATH')}: ")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["./lib"]\n')
    assert "fish's universal PYTHONPATH" in (refused.value.hint or "")


def test_every_universal_variable_is_judged_as_the_environments_are(home: Path) -> None:
    """A universal EDITOR naming a script in the grant: held read-only inside it, as the
    launch environment's would be, labelled as fish's; a command naming the grant
    refuses it, with fish's way out."""
    work = home / "work"
    (work / "ed.sh").write_text("")
    (work / "sub").mkdir()
    fish_file(home, f"SETUVAR --export ZQ_EDITOR:{work}/ed.sh\\x20\\x2d\\x2dwait\n"
                    "SETUVAR ZQ_LATER:~/work/later.sh\n"
                    "SETUVAR fish_color_normal:normal\n")
    named = {p.path: p for p in named_paths(str(home))}
    assert named[f"{work}/ed.sh"].variable == "ZQ_EDITOR in fish_variables"
    assert named[f"{work}/ed.sh"].command and not named[f"{work}/later.sh"].command
    held = {p.path: p.exists for p in analyze(str(work), home=str(home)).protected
            if "fish_variables" in p.reason}
    assert held == {f"{work}/ed.sh": True, f"{work}/later.sh": False}
    fish_file(home, "SETUVAR --export ZQ_FIND:find\\x20~/work/sub\\x20\\x2dexec\n")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["./sub"]\n')
    assert "ZQ_FIND in fish_variables" in refused.value.message
    assert "set -eU ZQ_FIND" in (refused.value.hint or "")


def test_an_unbounded_universal_value_refuses_a_launch_that_writes(home: Path) -> None:
    fish_file(home, "SETUVAR --export ZQ_EDITOR:$(echo\\x20~)/work/ed.sh\n")
    with pytest.raises(SpecError) as refused:
        snapshot(home, '[files]\nwrite = ["."]\n')
    assert "ZQ_EDITOR in fish_variables" in refused.value.message
    assert (refused.value.hint or "").startswith(hint("ZQ_EDITOR in fish_variables"))


def test_under_a_read_grant_of_home_what_one_names_is_hidden(home: Path) -> None:
    """A secret a universal variable names outside home's dot entries is hidden as the
    environment's are; its PATH folders stay shown (programs)."""
    (home / "zq").mkdir()
    (home / "zq" / "token").write_text("t")
    (home / "tool" / "bin").mkdir(parents=True)
    fish_file(home, "SETUVAR --export ZQ_TOKEN_FILE:~/zq/token\n"
                    f"SETUVAR ZQ_HOME:{home}/tool\nSETUVAR fish_user_paths:{home}/tool/bin\n")
    found = snapshot(home, '[files]\nread = ["~"]\n')
    hidden = {g.name: g.reason for g in found.grants
              if g.access == "hide" and is_undotted(g.reason)}
    assert hidden == {
        "~/zq/token": "default hide: home's configuration (your environment's "
                      "ZQ_TOKEN_FILE in fish_variables names it)",
        "~/tool": "default hide: home's configuration (your environment's ZQ_HOME in "
                  "fish_variables names it)"}
    assert ("~/tool/bin", "read") in {(g.name, g.access) for g in found.grants}


def test_relative_fish_path_entries_are_said(home: Path) -> None:
    assert relative_gaps(str(home)) == []
    fish_file(home, "SETUVAR fish_user_paths:node_modules/\\x2ebin\\x1e/usr/bin\\x1e\n")
    gaps = relative_gaps(str(home))
    assert len(gaps) == 1 and "(node_modules/.bin, .)" in gaps[0] and "fish" in gaps[0]
