"""What an allowance for a folder and the folders inside it is kept by: the snapshot's
relative form (supervisor/permissions.py), the same wherever a `.` grant resolves inside
the working directory, and different as soon as anything else differs."""

from __future__ import annotations

from pathlib import Path

from supervisor.grants import Snapshot, resolve
from supervisor.permissions import digest, relative_digest
from supervisor.policy import Context, effective_policy
from supervisor.spec import parse_spec


def snapshot_in(text: str, home: Path, cwd: Path) -> Snapshot:
    context = Context(home=str(home), cwd=str(cwd), lnk_home=str(home / ".lnk"), uid=1000,
                      runtime_dir=None, installation=())
    return resolve(effective_policy(parse_spec(text.encode(), "/specs/a.toml"), context),
                   context)


def test_the_relative_form_is_the_same_in_every_folder_and_nothing_else(
        tmp_path: Path) -> None:
    root = tmp_path.resolve()
    home, one, two = root / "home", root / "src" / "one", root / "src" / "two" / "deep"
    for folder in (home / "data", home / "other", one / "out", two / "out"):
        folder.mkdir(parents=True)
    text = '[files]\nwrite = [".", "./out"]\nread = ["~/data"]\n'
    here, there = snapshot_in(text, home, one), snapshot_in(text, home, two)
    assert digest(here) != digest(there)  # an exact answer is for one folder
    assert relative_digest(here) == relative_digest(there)
    # Anything that is not named from the working directory counts as it is.
    for other in ('[files]\nwrite = [".", "./out"]\nread = ["~/other"]\n',
                  '[files]\nwrite = [".", "./out"]\nread = ["~/data"]\n[network]\n'
                  'mode = "host"\n',
                  '[files]\nwrite = ["."]\nread = ["~/data", "./out"]\n'):
        assert relative_digest(snapshot_in(other, home, one)) != relative_digest(here)


def test_a_dot_grant_leading_out_of_the_folder_keeps_its_target(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    home, one, two = root / "home", root / "src" / "one", root / "src" / "two"
    for folder in (home, one, two, root / "t1", root / "t2"):
        folder.mkdir(parents=True, exist_ok=True)
    (one / "out").symlink_to(root / "t1")
    (two / "out").symlink_to(root / "t2")
    text = '[files]\nwrite = ["./out"]\n'
    assert relative_digest(snapshot_in(text, home, one)) != \
        relative_digest(snapshot_in(text, home, two))
    (two / "out").unlink()
    (two / "out").symlink_to(root / "t1")
    assert relative_digest(snapshot_in(text, home, one)) == \
        relative_digest(snapshot_in(text, home, two))
