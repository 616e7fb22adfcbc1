"""Fuzzing the spec and the resolver: for any input, a result or a SpecError, nothing else.

A person's bad spec must end as one message and status 125; any other exception would
reach them as a traceback. Three layers: raw bytes, TOML documents built over the real
keys (with wrong types and unknown keys mixed in), and the resolver on a real tree.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from supervisor.errors import SpecError
from supervisor.grants import Snapshot, is_within, resolve
from supervisor.linux.bwrap import BwrapInfo, bwrap_args
from supervisor.linux.plan import HostLayout, build_plan
from supervisor.policy import Context, effective_policy
from supervisor.spec import Spec, parse_spec
from support.views import linux_view

FUZZ = settings(max_examples=300, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])

ROOT_TOKEN = "@ROOT@"


def parse_or_error(data: bytes) -> Spec | None:
    """The spec, or None after checking the SpecError is well formed."""
    try:
        spec = parse_spec(data, "fuzz.toml")
    except SpecError as err:
        assert err.file == "fuzz.toml"
        assert err.line is None or err.line >= 1
        assert err.render().startswith("fuzz.toml")
        return None
    assert isinstance(spec, Spec)
    return spec


# --- (a) arbitrary bytes --------------------------------------------------------------------

TOMLISH = st.text(alphabet='[]{}="\',.#\n\t \\0123456789abefilnorstuwxyz_-~/*:$+', max_size=300)


@FUZZ
@given(st.one_of(st.binary(max_size=600), TOMLISH.map(str.encode),
                 st.text(max_size=300).map(str.encode)))
def test_any_bytes_give_a_spec_or_a_spec_error(data: bytes) -> None:
    parse_or_error(data)


# --- (b) TOML documents over the real keys -----------------------------------------------

SCALARS = st.one_of(
    st.booleans(),
    st.integers(),
    st.integers(0, 9).map(lambda n: 10**4400 + n),  # more digits than int() converts
    st.floats(allow_nan=True),
    st.text(max_size=20),
)
ANY_VALUE = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)

PATHS = st.sampled_from([
    "~", "~/", ".", "./", "/", "//", "/usr", "/tmp", "/nonexistent-lnk-fuzz", "~/proj",
    "~/link", "~/link/sub", "~/link/sub/deeper", "~/loop", "~/file", "~/file/x", "~/.ssh",
    "~/.ssh/config", "~/.lnk", "~/.lnk/agents/a", "./out", "./out/x", "./src", "~/data",
    "..", "../x", "~/../x", "/a/../b", "~root", "~root/x", "rel", "rel/x", "", "$LNK_HOME",
    "~/.netrc", "~/.aws", f"{ROOT_TOKEN}/home", f"{ROOT_TOKEN}/home/proj",
    f"{ROOT_TOKEN}/data", f"{ROOT_TOKEN}/data/d", f"{ROOT_TOKEN}", "/a\x00b",
])
GRANT = st.one_of(
    PATHS,
    st.fixed_dictionaries({"path": PATHS}, optional={"optional": st.booleans()}),
    st.fixed_dictionaries({}, optional={"path": st.one_of(PATHS, ANY_VALUE),
                                        "optional": st.one_of(st.booleans(), ANY_VALUE),
                                        "other": ANY_VALUE}),
    ANY_VALUE,
)
NAMES = st.one_of(st.sampled_from(["a", "reviewer", "s", "2026-11-30-a", "", "../x", "a b",
                                   "x" * 65, ".hidden"]), st.text(max_size=10), ANY_VALUE)
PROGRAMS = st.one_of(
    st.lists(st.one_of(st.sampled_from(["sh", "true", "git", "/bin/sh", "/usr/bin/env",
                                        "~/bin/x", "bin/x", "./x", "/usr/../bin/sh", "",
                                        "no-such-program-lnk", "/", "a\x00b"]),
                       st.text(max_size=10)), max_size=4),
    ANY_VALUE,
)
HOSTS = st.sampled_from([
    "pypi.org", "*.githubusercontent.com", "*", "*.com", "*.co.uk", "a.org:443",
    "a.org:99999", "[::1]:8080", "[::1", "10.0.0.1", "com", "", " x.org", "*x.org",
    "a.*.org", "PyPI.org.", "a.org:", "::1",
])
ENV_NAMES = st.one_of(st.sampled_from(["PATH", "HOME", "LANG", "LD_PRELOAD", "GCONV_PATH",
                                       "A", "1X", "A-B", "", "MALLOC_CHECK_"]),
                      st.text(max_size=6))


def maybe_wrong(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the right shape, sometimes any value at all."""
    return st.one_of(*[strategy] * 7, ANY_VALUE)


def sometimes_unknown(
    tables: st.SearchStrategy[dict[str, Any]], name: str
) -> st.SearchStrategy[dict[str, Any]]:
    """Now and then an unknown key added to the table."""
    extra = st.one_of(*[st.just({})] * 7, st.fixed_dictionaries({name: ANY_VALUE}))
    return st.tuples(tables, extra).map(lambda pair: {**pair[0], **pair[1]})


def table(required: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A table with any subset of the real keys."""
    return sometimes_unknown(st.fixed_dictionaries({}, optional=required), "unknown_key")


FILES = table({
    "read": maybe_wrong(st.lists(GRANT, max_size=4)),
    "write": maybe_wrong(st.lists(GRANT, max_size=3)),
    "hide": maybe_wrong(st.lists(GRANT, max_size=3)),
    "write_dot_files": maybe_wrong(st.lists(PATHS, max_size=2)),
})
DOCUMENTS = sometimes_unknown(st.fixed_dictionaries({}, optional={
    "agent": NAMES,
    "session": NAMES,
    "files": maybe_wrong(FILES),
    "commands": maybe_wrong(table({"programs": PROGRAMS})),
    "network": maybe_wrong(table({
        "mode": st.one_of(st.sampled_from(["none", "proxy", "host", "vpn", ""]), ANY_VALUE),
        "allow": maybe_wrong(st.lists(st.one_of(HOSTS, st.text(max_size=12)), max_size=3)),
    })),
    "env": maybe_wrong(table({
        "keep": maybe_wrong(st.lists(ENV_NAMES, max_size=4)),
        "set": maybe_wrong(st.dictionaries(ENV_NAMES, maybe_wrong(st.text(max_size=8)),
                                           max_size=3)),
    })),
}), "surprise")


def toml_string(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or char == "\x7f":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return hex(value) if value > 10**4000 else str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


def toml_document(document: dict[str, Any], headers: bool) -> str:
    """TOML text: plain keys first, then each table under a `[header]` or inline."""
    lines = [f"{k} = {toml_value(v)}" for k, v in document.items()
             if not (headers and isinstance(v, dict))]
    for key, value in document.items():
        if headers and isinstance(value, dict):
            lines.append(f"\n[{key}]")
            lines.extend(f"{toml_string(k)} = {toml_value(v)}" for k, v in value.items())
    return "\n".join(lines) + "\n"


@FUZZ
@given(DOCUMENTS, st.booleans())
def test_generated_documents_give_a_spec_or_a_spec_error(
    document: dict[str, Any], headers: bool
) -> None:
    text = toml_document(document, headers).replace(ROOT_TOKEN, "/fuzz-root")
    # The serializer itself must be right, or this would test nothing but tomllib.
    try:
        tomllib.loads(text)
    except ValueError:
        pytest.fail(f"the test's own TOML is invalid:\n{text}")
    event("a spec" if parse_or_error(text.encode()) else "refused")


def test_the_serializer_round_trips() -> None:
    document = {"agent": "a\"b\\c\x00\x7f\n", "files": {"read": ["~", {"path": "/x",
                                                                       "optional": True}]},
                "n": [1, -2.5, 10**4400, True, {"k k": []}]}
    for headers in (False, True):
        assert tomllib.loads(toml_document(document, headers)) == document


# --- (c) the resolver on a real tree ------------------------------------------------------


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz").resolve()
    home = root / "home"
    for folder in (home / "proj" / "src", home / ".ssh", home / ".lnk" / "agents" / "a",
                   home / ".lnk" / "sessions" / "s",
                   home / "proj" / ".venv", root / "data" / "d" / "sub" / "deeper"):
        folder.mkdir(parents=True)
    (home / "link").symlink_to(root / "data" / "d")
    (home / "data").symlink_to(root / "data")
    (home / "loop").symlink_to(home / "loop")
    (home / "file").write_text("")
    (home / ".netrc").write_text("")
    (home / "proj" / "out").symlink_to(root / "data")
    (home / "proj" / "escape").symlink_to(home)
    return root


VALID_DOCUMENTS = st.fixed_dictionaries({}, optional={
    "agent": st.sampled_from(["a", "b"]),
    "session": st.just("s"),
    "files": st.fixed_dictionaries({}, optional={
        "read": st.lists(st.one_of(PATHS, st.fixed_dictionaries(
            {"path": PATHS, "optional": st.booleans()})), max_size=4, unique_by=str),
        "write": st.lists(PATHS, max_size=3, unique=True),
        "hide": st.lists(PATHS, max_size=2, unique=True),
    }),
    "commands": st.fixed_dictionaries({"programs": st.lists(
        st.sampled_from(["sh", "true", "/bin/sh", "no-such-program-lnk", "~/file"]),
        max_size=2, unique=True)}),
    "network": st.sampled_from([{"mode": "none"}, {"mode": "host"},
                                {"mode": "proxy", "allow": ["pypi.org", "*.github.com"]}]),
    "env": st.fixed_dictionaries({}, optional={"keep": st.just(["PATH", "HOME"]),
                                               "set": st.just({"A": "1"})}),
})

LAYOUT = HostLayout(system={"/usr": None, "/bin": "usr/bin", "/etc": None},
                    inner_source="/src/inner", interpreter="/usr/bin/python3",
                    interpreter_prefix="/usr")
INFO = BwrapInfo("bwrap", "0.8.0", bind_fd=True, disable_userns=True)


@FUZZ
@given(VALID_DOCUMENTS, st.booleans(), st.booleans())
def test_the_resolver_gives_a_snapshot_or_a_spec_error(
    tree: Path, document: dict[str, Any], headers: bool, runtime: bool
) -> None:
    text = toml_document(document, headers).replace(ROOT_TOKEN, str(tree))
    spec = parse_or_error(text.encode())
    if spec is None:
        event("refused by the spec")
        return
    home = tree / "home"
    context = Context(home=str(home), cwd=str(home / "proj"), lnk_home=str(home / ".lnk"),
                      uid=0, runtime_dir=str(home / ".ssh") if runtime else None,
                      installation=(str(home / "proj" / ".venv"), "/usr"))
    try:
        snapshot = resolve(effective_policy(spec, context), context)
    except SpecError as err:
        assert err.file == "fuzz.toml"
        assert err.render().startswith("fuzz.toml")
        event("refused by the resolver")
        return
    event("resolved")
    assert isinstance(snapshot, Snapshot)
    assert Snapshot.from_json(snapshot.to_json()) == snapshot
    # What resolves also compiles: no grant is ever bound by path, and a write grant's
    # target never holds home or lies in $LNK_HOME but for the agent's own folders.
    for grant in snapshot.visible():
        assert grant.target is not None
        if grant.access == "write":
            assert not is_within(str(home), grant.target)
            assert not is_within(grant.target, str(home / ".lnk")) or grant.name.startswith(
                "$LNK_HOME/")
    plan = build_plan(linux_view(snapshot), LAYOUT, root_mode=False)
    args = bwrap_args(plan, INFO, fd_of=lambda op: "3", json_status_fd="4", config_fd="5")
    assert not {"--bind", "--ro-bind"} & set(args)
