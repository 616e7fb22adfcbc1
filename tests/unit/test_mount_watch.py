"""The mount watch's pure parts: which mounts of a plan it watches, how it reads the
kernel's mountinfo, and how a replaced path is told after the run."""

from __future__ import annotations

import os
from pathlib import Path

from supervisor.linux.mount_watch import identities, replaced, watched_mounts
from supervisor.linux.plan import SOCKET_HIDDEN, LaunchPlan, MountOp
from supervisor.mountinfo import mount_points


def test_it_watches_what_closes_something_inside_a_written_folder() -> None:
    plan = LaunchPlan(ops=(
        MountOp("ro-bind", "/usr", "/usr", "system folder"),
        MountOp("bind", "/p", "/p", "files.write[0]: ."),
        MountOp("ro-bind", "/p/.git", "/p/.git", "dot file"),
        MountOp("hide-file", "/p/agent.sock", reason="a socket"),
        MountOp("bind", "/p/tools", "/p/tools", "a mount point"),
        MountOp("tmpfs", "/tmp", reason="a fresh /tmp"),
        MountOp("remount-ro", "/", reason="nothing new at the root"),
    ), chdir="/p", root_mode=False, share_net=False, interpreter="/usr/bin/python3")
    assert watched_mounts(plan) == {"/p/.git": "dot file", "/p/agent.sock": "a socket",
                                    "/p/tools": "a mount point"}


def test_mountinfo_is_read_as_the_kernel_escapes_it() -> None:
    table = (b"22 1 0:21 / / rw,relatime - tmpfs tmpfs rw\n"
             b"40 22 8:1 /p /p rw - ext4 /dev/sda1 rw\n"
             b"41 40 8:1 /p/a\\040b /p/a\\040b ro - ext4 /dev/sda1 rw\n")
    assert mount_points(table) == {"/", "/p", "/p/a b"}


def test_a_path_replaced_or_removed_is_told_by_its_identity(tmp_path: Path) -> None:
    kept, swapped, gone = (tmp_path / n for n in ("kept", "swapped", "gone"))
    for path in (kept, swapped, gone):
        path.write_text("x")
    before = identities({str(p): "" for p in (kept, swapped, gone)})
    assert replaced(before, {}) is None
    (tmp_path / "new").write_text("y")
    os.replace(tmp_path / "new", swapped)
    assert replaced(before, {}) == str(swapped)
    gone.unlink()
    assert replaced({str(gone): before[str(gone)]}, {}) == str(gone)
    # A hidden socket merely gone is its agent's normal exit, not a way in.
    assert replaced({str(gone): before[str(gone)]}, {str(gone): SOCKET_HIDDEN}) is None


def test_a_table_that_changes_without_the_kernels_mark_is_read_again(tmp_path: Path) -> None:
    """A mount point the host renames away (an editor's backup by rename, `.mcp.json~`,
    then a new `.mcp.json`) changes no mount: the kernel marks nothing (no POLLPRI), the
    table shows the mount at the backup's path, and the new file at the watched path is
    the sandbox's to write. The watch waited only for the mark, and the run went on (red
    team 24c). A regular file never has the mark: the change is seen all the same."""
    import threading

    from supervisor.linux.mount_watch import MountWatch

    table = tmp_path / "mountinfo"
    table.write_bytes(b"40 22 8:1 /p /p rw - ext4 /dev/sda1 rw\n"
                      b"41 40 8:1 /p/.mcp.json /p/.mcp.json ro - ext4 /dev/sda1 rw\n")
    lost: list[str] = []
    seen = threading.Event()

    def on_lost(path: str, reason: str) -> None:
        lost.append(path)
        seen.set()

    watch = MountWatch(os.open(table, os.O_RDONLY), {"/p/.mcp.json": "dot file"}, on_lost)
    watch.start()
    try:
        assert not seen.wait(0.3)
        table.write_bytes(b"40 22 8:1 /p /p rw - ext4 /dev/sda1 rw\n"
                          b"41 40 8:1 /p/.mcp.json /p/.mcp.json~ ro - ext4 /dev/sda1 rw\n")
        assert seen.wait(5)
    finally:
        watch.stop()
    assert lost == ["/p/.mcp.json"]
