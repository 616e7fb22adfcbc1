"""The spec: TOML validated into frozen plain data, every error naming file, key and line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from supervisor.errors import SpecError
from supervisor.hostnames import parse_host_pattern
from supervisor.spec import (
    DEFAULT_SPEC_NAME,
    Commands,
    Env,
    Files,
    Network,
    PathGrant,
    Spec,
    load_spec,
    parse_spec,
)


def parse(text: str) -> Spec:
    return parse_spec(text.encode(), "spec.toml")


def refused(text: str | bytes) -> SpecError:
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(SpecError) as caught:
        parse_spec(data, "spec.toml")
    assert caught.value.file == "spec.toml"
    return caught.value


# --- what a valid spec becomes -------------------------------------------------------------


def test_default_spec_is_the_working_directory_writable_and_nothing_else() -> None:
    assert load_spec(None) == Spec(
        source=DEFAULT_SPEC_NAME,
        files=Files(write=(PathGrant(".", False, "files.write[0]", 6),)),
        network=Network("none"),
    )


def test_empty_spec_is_the_least_that_still_runs() -> None:
    spec = parse("")
    assert spec == Spec(source="spec.toml")
    # Absent keys: no grants, any program, no network, the default environment list.
    assert spec.files == Files((), (), (), ())
    assert spec.commands == Commands(None, None)
    assert spec.network == Network("none", ())
    assert spec.env == Env(None, ())


def test_every_key_parses_into_exact_data() -> None:
    text = """\
agent = "reviewer"
session = "2026-11-30-a"

[files]
read  = ["~", "/srv/data", { path = "~/.cache/pip", optional = true }]
write = [".", "~/out/"]
hide  = ["~/.ssh"]
write_dot_files = ["./"]

[commands]
programs = ["git", "python3", "/usr/bin/make", "~/bin/tool"]

[network]
mode  = "proxy"
allow = ["pypi.org", "*.githubusercontent.com:443"]

[env]
keep = ["PATH", "HOME"]
set  = { PIP_NO_INPUT = "1", EMPTY = "" }
"""
    assert parse(text) == Spec(
        source="spec.toml",
        agent="reviewer",
        session="2026-11-30-a",
        files=Files(
            read=(
                PathGrant("~", False, "files.read[0]", 5),
                PathGrant("/srv/data", False, "files.read[1]", 5),
                PathGrant("~/.cache/pip", True, "files.read[2]", 5),
            ),
            write=(
                PathGrant(".", False, "files.write[0]", 6),
                PathGrant("~/out", False, "files.write[1]", 6),
            ),
            hide=(PathGrant("~/.ssh", False, "files.hide[0]", 7),),
            write_dot_files=(".",),
        ),
        commands=Commands(("git", "python3", "/usr/bin/make", "~/bin/tool"), 11),
        network=Network(
            "proxy",
            (parse_host_pattern("pypi.org"), parse_host_pattern("*.githubusercontent.com:443")),
        ),
        env=Env(("PATH", "HOME"), (("PIP_NO_INPUT", "1"), ("EMPTY", ""))),
    )


@pytest.mark.parametrize(
    ("written", "normalized"),
    [
        ("/", "/"),
        ("//", "/"),
        ("/.", "/"),
        ("/usr/", "/usr"),
        ("/usr//share///doc/", "/usr/share/doc"),
        ("/usr/./share/.", "/usr/share"),
        ("~", "~"),
        ("~/", "~"),
        ("~/.", "~"),
        ("~/a//b/", "~/a/b"),
        (".", "."),
        ("./", "."),
        ("./.", "."),
        ("./src/./x/", "./src/x"),
        ("~/.config", "~/.config"),
        ("/srv/..data", "/srv/..data"),
    ],
)
def test_paths_are_normalized_without_touching_the_disk(written: str, normalized: str) -> None:
    spec = parse(f'[files]\nread = ["{written}"]\n')
    assert spec.files.read == (PathGrant(normalized, False, "files.read[0]", 2),)


def test_grant_tables_and_their_optional_flag() -> None:
    spec = parse(
        '[files]\nwrite = [\n  { path = "~/a" },\n  { path = "~/b", optional = false },\n'
        '  { path = "~/c/", optional = true },\n]\n'
    )
    assert spec.files.write == (
        PathGrant("~/a", False, "files.write[0]", 2),
        PathGrant("~/b", False, "files.write[1]", 2),
        PathGrant("~/c", True, "files.write[2]", 2),
    )


def test_write_dot_files_matches_the_write_grant_after_normalization() -> None:
    spec = parse('[files]\nwrite = ["~/proj/"]\nwrite_dot_files = ["~/proj//"]\n')
    assert spec.files.write_dot_files == ("~/proj",)


def test_an_empty_program_list_means_no_program_and_absent_means_any() -> None:
    assert parse("[commands]\nprograms = []\n").commands == Commands((), 2)
    assert parse("[commands]\n").commands == Commands(None, None)


def test_keys_found_in_dotted_and_inline_forms() -> None:
    spec = parse('\n\nfiles.read = ["/srv"]\nenv = { keep = ["PATH"] }\n')
    assert spec.files.read == (PathGrant("/srv", False, "files.read[0]", 3),)
    assert spec.env == Env(("PATH",), ())
    error = refused('\nfiles = { read = ["/srv"], write = ["/"] }\n')
    assert (error.key, error.line) == ("files.write[0]", 2)


def test_env_set_in_its_own_table_is_located_by_its_line() -> None:
    error = refused('[env]\nkeep = ["PATH"]\n\n[env.set]\nA = "1"\nPATH = "/bin"\n')
    assert (error.key, error.line) == ("env.set.PATH", 6)
    assert error.message == "PATH is both kept and set"


def test_host_and_address_patterns_in_proxy_mode() -> None:
    spec = parse('[network]\nmode = "proxy"\nallow = ["PyPI.org.", "10.0.0.1:8080", "[::1]"]\n')
    assert [(p.name, p.wildcard, p.port, p.address) for p in spec.network.allow] == [
        ("pypi.org", False, None, None),
        ("10.0.0.1", False, 8080, "10.0.0.1"),
        ("::1", False, None, "::1"),
    ]


@pytest.mark.parametrize("mode", ["none", "proxy", "host"])
def test_every_network_mode(mode: str) -> None:
    assert parse(f'[network]\nmode = "{mode}"\n').network == Network(mode, ())  # type: ignore[arg-type]


def test_spec_data_is_frozen() -> None:
    spec = parse('[files]\nread = ["/srv"]\n')
    with pytest.raises(AttributeError):
        spec.agent = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        spec.files.read[0].path = "/"  # type: ignore[misc]
    assert isinstance(spec.files.read, tuple)


# --- what is refused, and where the error points ------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "line", "message"),
    [
        ('agent = "a"\nsurprise = 1\n', "surprise", 2, "unknown key 'surprise'"),
        ('[files]\nread = []\nexecute = ["/x"]\n', "files.execute", 3, "unknown key 'execute'"),
        ('[commands]\nprogram = ["git"]\n', "commands.program", 2, "unknown key 'program'"),
        ('[network]\nallowed = []\n', "network.allowed", 2, "unknown key 'allowed'"),
        ('[env]\nunset = []\n', "env.unset", 2, "unknown key 'unset'"),
        ('files = 3\n', "files", 1, "must be a table, not a number"),
        ('[files]\nread = "/srv"\n', "files.read", 2, "must be a list of paths, not a string"),
        ('[files]\nread = ["/a", true]\n', "files.read[1]",
         2, "must be a path or a table { path = ..., optional = ... }, not a boolean"),
        ('[files]\nread = [""]\n', "files.read[0]", 2, "must not be empty"),
        ('[files]\nread = ["srv/data"]\n', "files.read[0]", 2, "'srv/data' is a relative path"),
        ('[files]\nread = [".."]\n', "files.read[0]", 2, "'..' is a relative path"),
        ('[files]\nread = ["/srv/../etc"]\n', "files.read[0]", 2,
         "'/srv/../etc' contains '..'"),
        ('[files]\nread = ["~root/x"]\n', "files.read[0]", 2,
         "'~root/x': '~user' is not supported"),
        ('[files]\nread = ["/a", "/a/"]\n', "files.read[1]", 2,
         "'/a' is also listed at files.read[0]"),
        ('[files]\nread = ["~/x"]\nhide = ["~/x"]\n', "files.hide[0]", 3,
         "'~/x' is also listed at files.read[0]"),
        ('[files]\nwrite = ["/"]\n', "files.write[0]", 2,
         "a write grant of '/' opens every file on the machine"),
        ('[files]\nwrite = ["~/"]\n', "files.write[0]", 2,
         "a write grant of the home folder would let the sandbox change what runs at your "
         "next login (.bashrc, .profile, .ssh, autostart)"),
        ('[files]\nwrite = ["."]\nread = ["~/x"]\nwrite_dot_files = ["~/x"]\n',
         "files.write_dot_files[0]", 4, "'~/x' is not one of files.write, nor inside one"),
        ('[files]\nread = [{ optional = true }]\n', "files.read[0]", 2,
         "a grant table needs a 'path'"),
        ('[files]\nread = [{ path = "/x", optional = "yes" }]\n', "files.read[0].optional", 2,
         "must be true or false, not a string"),
        ('[files]\nread = [{ path = "/x", mode = "ro" }]\n', "files.read[0].mode", 2,
         "unknown key 'mode'"),
        ('[files]\nread = [{ path = 7 }]\n', "files.read[0].path", 2,
         "must be a string, not a number"),
        ('[files]\nread = ["/a\\u0000b"]\n', "files.read[0]", 2,
         "must not contain a NUL character"),
        ('[network]\nmode = "vpn"\n', "network.mode", 2, "'vpn' is not a network mode"),
        ('[network]\nmode = 1\n', "network.mode", 2, "must be a string, not a number"),
        ('[network]\nallow = ["pypi.org"]\n', "network.allow", 2,
         "names are allowed only in proxy mode, and mode is 'none'"),
        ('[network]\nmode = "host"\nallow = ["pypi.org"]\n', "network.allow", 3,
         "names are allowed only in proxy mode, and mode is 'host'"),
        ('[network]\nmode = "proxy"\nallow = ["*"]\n', "network.allow[0]", 3,
         "'*': '*' alone opens every name; list the names the command needs"),
        ('[network]\nmode = "proxy"\nallow = ["a.org", "*.com"]\n', "network.allow[1]", 3,
         "'*.com': '*.com' opens a whole top-level domain; name the domains inside it"),
        ('[network]\nmode = "proxy"\nallow = ["a.org", "a.org"]\n', "network.allow", 3,
         "a name is listed twice"),
        ('[network]\nmode = "proxy"\nallow = ["a.org:0"]\n', "network.allow[0]", 3,
         "'a.org:0': port '0' is not a number from 1 to 65535"),
        ('[commands]\nprograms = "git"\n', "commands.programs", 2,
         "must be a list of strings, not a string"),
        ('[commands]\nprograms = ["bin/tool"]\n', "commands.programs[0]", 2,
         "'bin/tool' is a relative path"),
        ('[commands]\nprograms = ["./tool"]\n', "commands.programs[0]", 2,
         "'./tool' is a relative path"),
        ('[commands]\nprograms = ["/usr/../bin/sh"]\n', "commands.programs[0]", 2,
         "'/usr/../bin/sh' contains '..'"),
        ('[commands]\nprograms = ["~/../bin/sh"]\n', "commands.programs[0]", 2,
         "'~/../bin/sh' contains '..'"),
        ('[commands]\nprograms = ["git", "git"]\n', "commands.programs", 2,
         "a program is listed twice"),
        ('[env]\nkeep = ["PATH", "1X"]\n', "env.keep[1]", 2, "'1X' is not a variable name"),
        ('[env]\nkeep = ["PATH", "PATH"]\n', "env.keep", 2, "a variable is listed twice"),
        ('[env]\nkeep = ["LD_PRELOAD"]\n', "env.keep[0]", 2,
         "LD_PRELOAD makes the dynamic loader or libc load chosen code; the sandbox never "
         "passes it"),
        ('[env]\nset = { GCONV_PATH = "/x" }\n', "env.set.GCONV_PATH", 2,
         "GCONV_PATH makes the dynamic loader or libc load chosen code; the sandbox never "
         "passes it"),
        ('[env]\nset = { "A-B" = "x" }\n', "env.set.A-B", 2, "'A-B' is not a variable name"),
        ('[env]\nset = { A = 1 }\n', "env.set.A", 2, "must be a string, not a number"),
        ('[env]\nset = { A = "a\\u0000" }\n', "env.set.A", 2,
         "must not contain a NUL character"),
        ('[env]\nset = ["A=1"]\n', "env.set", 2, "must be a table of strings, not a list"),
        ('agent = "../x"\n', "agent", 1, "'../x' is not a valid name"),
        ('session = ""\n', "session", 1, "must not be empty"),
        ('agent = 5\n', "agent", 1, "must be a string, not a number"),
        ('session = "' + "a" * 65 + '"\n', "session", 1, f"{'a' * 65!r} is not a valid name"),
    ],
)
def test_bad_spec_names_key_and_line(text: str, key: str, line: int, message: str) -> None:
    error = refused(text)
    assert (error.key, error.line, error.message) == (key, line, message)
    rendered = error.render()
    assert rendered.startswith(f"spec.toml:{line}: key {key}: {message}")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('agent = "a"\n\nbad = = 1\n', 3, "not valid TOML: Invalid value"),
        ('[files]\nread = [\n', 2, "not valid TOML: Invalid value"),
        ('a = 1\nb = "unterminated', 2, "not valid TOML: Unterminated string"),
        ('x = 1\nx = 2\n', 2, "not valid TOML: Cannot overwrite a value"),
        ("[files]\n[files]\n", 2, "not valid TOML: Cannot declare ('files',) twice"),
    ],
)
def test_bad_toml_names_the_line(text: str, line: int, message: str) -> None:
    error = refused(text)
    assert (error.key, error.line, error.message) == (None, line, message)
    assert error.render() == f"spec.toml:{line}: {message}"


def test_not_utf8_names_the_byte() -> None:
    error = refused(b'agent = "a"\n\xff')
    assert (error.key, error.line, error.message) == (None, None, "not UTF-8 text (byte 12)")
    assert error.render() == "spec.toml: not UTF-8 text (byte 12)\n  hint: save the spec as UTF-8"


def test_numbers_python_refuses_to_convert_are_a_spec_error() -> None:
    # tomllib lets int()'s ValueError through for more than 4300 decimal digits.
    error = refused("agent = " + "1" * 5000 + "\n")
    assert error.message.startswith("not valid TOML: Exceeds the limit (4300 digits)")
    assert "set_int_max_str_digits" not in error.render()
    # A hexadecimal one converts, but its repr would not: the mode is refused by type.
    error = refused("[network]\nmode = 0x" + "f" * 5000 + "\n")
    assert (error.key, error.message) == ("network.mode", "must be a string, not a number")


def test_deep_nesting_is_a_spec_error() -> None:
    error = refused("x = " + "[" * 5000 + "]" * 5000 + "\n")
    assert error.message == "not valid TOML: nested too deeply"


def test_unknown_key_hint_lists_the_known_keys() -> None:
    error = refused("[files]\nreed = []\n")
    assert error.hint == "known keys here: read, write, hide, write_dot_files, commit, caches"


def test_duplicate_hints_say_what_to_keep() -> None:
    assert refused('[files]\nread = ["/a", "/a"]\n').hint == "list each path once"
    assert refused('[files]\nread = ["/a"]\nwrite = ["/a"]\n').hint == (
        "a written path is also readable; keep it in files.write only"
    )
    assert refused('[files]\nwrite = ["/a"]\nhide = ["/a"]\n').hint == (
        "a path cannot be both hidden and granted; to reopen part of a hidden folder, "
        "grant a folder inside it"
    )


def test_an_item_of_a_multiline_list_is_located_at_its_key() -> None:
    error = refused('[files]\nread = [\n  "/a",\n  "rel",\n]\n')
    assert (error.key, error.line) == ("files.read[1]", 2)


# --- load_spec ---------------------------------------------------------------------------


def test_load_spec_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('[files]\nread = ["/srv"]\n')
    spec = load_spec(str(path))
    assert spec == Spec(source=str(path), files=Files(read=(PathGrant("/srv", False,
                                                                       "files.read[0]", 2),)))


def test_load_spec_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.toml")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    assert (caught.value.file, caught.value.key, caught.value.message) == (
        path, None, "cannot read the spec: No such file or directory")


def test_a_spec_that_is_not_a_regular_file_is_refused_without_opening_it(
        tmp_path: Path) -> None:
    """A FIFO's open would wait for a writer for ever, a device's read may never end (or
    its open act, as a tape's rewinds): each refused before it is read."""
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)
    for path, kind in ((tmp_path, "a folder"), (fifo, "a FIFO"), (Path("/dev/zero"),
                       "a device"), (Path("/dev/null"), "a device")):
        with pytest.raises(SpecError) as caught:
            load_spec(str(path))
        assert (caught.value.file, caught.value.message) == (
            str(path), f"cannot read the spec: it is not a regular file ({kind})")
        assert caught.value.hint and "spec file" in caught.value.hint


def test_a_spec_named_by_nothing_is_refused() -> None:
    with pytest.raises(SpecError) as caught:
        load_spec("")
    assert (caught.value.file, caught.value.message) == ("<command line>",
                                                         "--spec names no file")


def test_a_byte_order_mark_is_read_as_nothing(tmp_path: Path) -> None:
    """Windows editors save UTF-8 with a BOM, which TOML does not allow: the spec is
    the text after it, with its lines as they are."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf[files]\nread = [\"/srv\"]\n")
    assert load_spec(str(path)).files.read == (PathGrant("/srv", False, "files.read[0]", 2),)
    path.write_bytes(b"\xef\xbb\xbf[files]\nread = 5\n")
    with pytest.raises(SpecError) as caught:
        load_spec(str(path))
    assert (caught.value.key, caught.value.line) == ("files.read", 2)
    path.write_bytes(b"\xef\xbb\xbf[files]\nread = [\"\xff\"]\n")
    with pytest.raises(SpecError) as caught:
        load_spec(str(path))
    assert caught.value.message == "not UTF-8 text (byte 20)"  # counted from the file's start


def test_load_spec_refuses_more_than_one_mebibyte(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * (1 << 20) + b"\n")
    with pytest.raises(SpecError) as caught:
        load_spec(str(path))
    assert caught.value.message == "a spec is limited to 1 MiB"
    path.write_bytes(b"#" * ((1 << 20) - 1) + b"\n")
    assert load_spec(str(path)) == Spec(source=str(path))


def test_spec_error_render_formats() -> None:
    assert SpecError("m", file="f").render() == "f: m"
    assert SpecError("m", file="f", line=3).render() == "f:3: m"
    assert SpecError("m", file="f", key="k").render() == "f: key k: m"
    assert SpecError("m", file="f", key="k", line=3, hint="h").render() == (
        "f:3: key k: m\n  hint: h"
    )
    assert SpecError("m", file="f").exit_status == 125


def test_the_embedded_default_is_the_default_spec_file_parsed() -> None:
    """DEFAULT_SPEC spares most runs tomllib; it must stay what the file says."""
    from supervisor.spec import DEFAULT_SPEC, DEFAULT_SPEC_NAME, DEFAULT_SPEC_PATH

    with open(DEFAULT_SPEC_PATH, "rb") as handle:
        assert parse_spec(handle.read(), DEFAULT_SPEC_NAME) == DEFAULT_SPEC
    assert load_spec(None) is DEFAULT_SPEC
