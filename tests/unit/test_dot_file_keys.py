"""The keys narrower than `write_dot_files` on a folder (issue 31): one dot file of a
written folder opened by its own path (`write_dot_files = ["./.env"]`), each other one
still held; the permission it is remembered by says so, and a spec without it keeps
the digest it always had."""

from __future__ import annotations

from pathlib import Path

import pytest

from supervisor.errors import SpecError
from supervisor.grants import resolve
from supervisor.permissions import digest
from supervisor.policy import LINUX_SYSTEM_FOLDERS, Context, effective_policy
from supervisor.spec import parse_spec
from supervisor.view import view_for


def snapshot_of(text: str, root: Path):  # type: ignore[no-untyped-def]
    home, proj = root / "home", root / "home" / "proj"
    proj.mkdir(parents=True, exist_ok=True)
    context = Context(home=str(home), cwd=str(proj), lnk_home=str(home / ".lnk"), uid=0,
                      runtime_dir=None, installation=())
    return resolve(effective_policy(parse_spec(text.encode(), "spec.toml"), context), context)


def kept(text: str, root: Path) -> dict[str, bool]:
    """Each protected name at the project's top: whether a placeholder holds it."""
    view = view_for(snapshot_of(text, root), LINUX_SYSTEM_FOLDERS)
    top = str(root / "home" / "proj")
    return {item.path[len(top) + 1:]: item.placeholder is not None
            for _, item in view.protections}


def test_one_dot_file_opened_by_its_path_and_no_other(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    default = kept('[files]\nwrite = ["."]\n', root)
    assert default[".env"] and default[".vscode"] and default[".git"]
    opened = kept('[files]\nwrite = ["."]\nwrite_dot_files = ["./.env"]\n', root)
    assert ".env" not in opened
    assert {k: v for k, v in default.items() if k != ".env"} == opened


def test_a_folder_opened_by_its_path_opens_what_is_inside(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    vscode = root / "home" / "proj" / ".vscode"
    vscode.mkdir(parents=True)
    (vscode / "settings.json").write_text("{}\n")
    held = kept('[files]\nwrite = ["."]\n', root)
    assert held[".vscode"] is False  # there: read-only as it is, no placeholder
    opened = kept('[files]\nwrite = ["."]\nwrite_dot_files = ["./.vscode"]\n', root)
    assert not any(name == ".vscode" or name.startswith(".vscode/") for name in opened)
    assert ".git" in opened and ".env" in opened


def test_a_name_outside_every_written_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as refused:
        snapshot_of('[files]\nwrite = ["./a"]\nwrite_dot_files = ["./b/.env"]\n',
                    tmp_path.resolve())
    assert (refused.value.key, refused.value.line) == ("files.write_dot_files[0]", 3)
    assert refused.value.message == "'./b/.env' is not one of files.write, nor inside one"


def test_the_permission_names_the_opening_and_is_unchanged_without_it(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    plain = snapshot_of('[files]\nwrite = ["."]\n', root)
    opened = snapshot_of('[files]\nwrite = ["."]\nwrite_dot_files = ["./.env"]\n', root)
    assert digest(plain) != digest(opened)
    assert [g.opened for g in opened.grants if g.access == "write"] == [(".env",)]
    # A snapshot's JSON reads back the same, and a grant without `opened` digests as it
    # always did (the key is absent from what is remembered).
    from supervisor.grants import Snapshot
    from supervisor.permissions import _allowed_content

    assert Snapshot.from_json(opened.to_json()) == opened
    assert all("opened" not in g for g in _allowed_content(plain)["grants"])
    assert [g["opened"] for g in _allowed_content(opened)["grants"] if "opened" in g] == [
        [".env"]]


def test_the_deepest_write_grant_is_the_one_opened(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    (root / "home" / "proj" / "sub").mkdir(parents=True)
    snap = snapshot_of('[files]\nwrite = [".", "./sub"]\nwrite_dot_files = ["./sub/.env"]\n',
                       root)
    assert {g.name: g.opened for g in snap.grants if g.access == "write"} == {
        ".": (), "./sub": (".env",)}
