"""Private caches as data: the spec's key, the snapshot, the plan's mounts."""

from __future__ import annotations

import json

import pytest

from supervisor.caches import Cache, scope, store_for
from supervisor.errors import SpecError
from supervisor.grants import Snapshot
from supervisor.linux.placeholders import Wanted
from supervisor.linux.plan import HostLayout, MountOp, build_plan
from supervisor.permissions import digest
from supervisor.spec import parse_spec
from support.snapshots import a_snapshot
from support.views import linux_view


def spec(text: str) -> SpecError:
    with pytest.raises(SpecError) as caught:
        parse_spec(text.encode(), "s.toml")
    return caught.value


def test_the_key_takes_folders_in_home_each_once() -> None:
    parsed = parse_spec(b'[files]\ncaches = ["~/.npm/", "~/.cache//pip"]\n', "s.toml")
    assert [c.path for c in parsed.files.caches] == ["~/.npm", "~/.cache/pip"]
    error = spec('[files]\ncaches = ["/var/cache/x"]\n')
    assert (error.key, error.line, error.message) == (
        "files.caches[0]", 2, "'/var/cache/x': a cache is a folder in home, written '~/...'")
    error = spec('[files]\nread = ["~/.npm"]\ncaches = ["~/.npm"]\n')
    assert (error.key, error.message, error.hint) == (
        "files.caches[0]", "'~/.npm' is also listed at files.read[0]",
        "a folder is either a private cache or granted; keep one of the two")
    assert spec('[files]\ncaches = ["~/.npm", "~/.npm"]\n').message == \
        "'~/.npm' is also listed at files.caches[0]"
    assert spec('[files]\ncaches = "~/.npm"\n').hint == \
        'write a list, even of one: caches = ["~/.npm"]'
    assert spec('[files]\ncaches = ["~"]\n').message == \
        "'~': a cache is a folder in home, written '~/...'"


def test_a_store_per_spec_file_or_per_agent() -> None:
    assert scope("/a/s.toml", "builder") == "agent-builder"
    assert scope("/a/s.toml", None) == scope("/a/./s.toml", None) != scope("/b/s.toml", None)
    assert store_for("/h/.lnk", "/a/s.toml", "x", "~/.cache/pip") == \
        "/h/.lnk/caches/agent-x/~%2F.cache%2Fpip"


SNAPSHOT = a_snapshot()
NPM = Cache("~/.npm", "/h/.npm", "/h/.lnk/caches/spec-1/~%2F.npm", "files.caches[0]", 3)


def test_caches_survive_a_saved_snapshot_and_count_in_what_is_allowed() -> None:
    cached = SNAPSHOT._replace(caches=(NPM,))
    assert Snapshot.from_json(cached.to_json()) == cached
    data = json.loads(SNAPSHOT.to_json())
    del data["caches"]  # saved before the key existed
    assert Snapshot.from_json(json.dumps(data)) == SNAPSHOT
    assert digest(cached) != digest(SNAPSHOT)
    assert digest(cached) == digest(cached._replace(caches=(NPM._replace(line=9),)))


LAYOUT = HostLayout(system={"/usr": None}, inner_source="/i", interpreter="/usr/bin/python3",
                    interpreter_prefix="/usr")


def test_a_cache_is_bound_and_a_missing_one_under_a_read_grant_is_held() -> None:
    from supervisor.grants import Grant

    pip = Cache("~/.cache/pip", "/h/.cache/pip", "/h/.lnk/caches/spec-1/~%2F.cache%2Fpip",
                "files.caches[1]", 3)
    home = Grant("~", "/h", "read", "files.read[0]", "files.read[0]", 2)
    snap = SNAPSHOT._replace(grants=(home,), caches=(NPM, pip), cwd="/h")
    layout = LAYOUT._replace(cache_missing={"/h/.cache/pip": "/h/.cache"})
    plan = build_plan(linux_view(snap), layout, root_mode=False)
    ops = [op for op in plan.ops if op.dest.startswith("/h/.")]
    assert ops == [
        MountOp("bind", "/h/.npm", NPM.store, "files.caches[0]: ~/.npm: a private cache of "
                "lnk-sandbox's own, kept across runs"),
        MountOp("tmpfs", "/h/.cache", reason="files.caches[1]: ~/.cache/pip: missing here, "
                "held empty for the run, the cache's folder made inside"),
        MountOp("bind", "/h/.cache/pip", pip.store, "files.caches[1]: ~/.cache/pip: a "
                "private cache of lnk-sandbox's own, kept across runs"),
        MountOp("remount-ro", "/h/.cache", reason="files.caches[1]: ~/.cache/pip: the folder "
                "held for the cache"),
    ]
    assert plan.holds == (Wanted("/h/.cache", "folder"),)
    # Run by root, the sandbox writes it as root's: idmapped.
    rooted = build_plan(linux_view(snap), layout, root_mode=True)
    assert all(op.idmapped for op in rooted.ops if op.kind == "bind" and "caches" in
               (op.source or ""))
    # Where nothing of the host is shown, bwrap makes the path in the sandbox's own root.
    bare = build_plan(linux_view(snap._replace(grants=())), layout, root_mode=False)
    assert bare.holds == ()
    assert [op.kind for op in bare.ops if op.dest.startswith("/h/.")] == ["bind", "bind"]
