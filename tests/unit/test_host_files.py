"""host_files on real folders: no link followed on the way to a file lnk-sandbox writes,
wherever it is (each component, the last one), nothing but a regular file of the
caller's with one name written, and `$LNK_HOME` reached from a trusted start."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from supervisor.errors import LaunchError
from supervisor.events import report_line
from supervisor.host_files import PrivateFolder, open_report
from supervisor.state import private_folder, read, write_atomically
from support.capabilities import missing


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path.resolve()
    (folder / "victim").mkdir()
    (folder / "victim" / "report.jsonl").write_text("the person's\n")
    (folder / "home").mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(folder / "home"))
    return folder


def _refused(path: str, *words: str) -> LaunchError:
    with pytest.raises(LaunchError) as caught:
        fd = open_report(path)
        os.close(fd)
    for word in words:
        assert word in caught.value.render(), caught.value.render()
    assert caught.value.exit_status == 125
    return caught.value


def test_a_report_is_made_private_and_emptied(base: Path) -> None:
    path = base / "r.jsonl"
    path.write_text("an earlier run's\n")
    path.chmod(0o600)
    fd = open_report(str(path))
    os.write(fd, b"x\n")
    os.close(fd)
    assert path.read_text() == "x\n"
    fd = open_report(str(base / "new.jsonl"))
    os.close(fd)
    assert stat.S_IMODE(os.stat(base / "new.jsonl").st_mode) == 0o600


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_link_in_any_folder_of_the_path_is_refused(base: Path, depth: int) -> None:
    """`out -> victim` planted by an earlier run, at each depth of `a/b/out`."""
    parts = ["a", "b", "out"][:depth + 1]
    real = base.joinpath(*parts[:-1])
    real.mkdir(parents=True, exist_ok=True)
    (real / parts[-1]).symlink_to(base / "victim")
    path = base.joinpath(*parts, "report.jsonl")
    _refused(str(path), f"{real / parts[-1]} is a link (to {base / 'victim'})",
             str(base / "victim" / "report.jsonl"))  # the hint names the real path
    assert (base / "victim" / "report.jsonl").read_text() == "the person's\n"


def test_a_relative_path_through_a_link_is_refused(base: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (base / "proj").mkdir()
    (base / "proj" / "out").symlink_to(base / "victim")
    monkeypatch.chdir(base / "proj")
    _refused("out/report.jsonl", f"{base}/proj/out is a link")
    assert (base / "victim" / "report.jsonl").read_text() == "the person's\n"


def test_a_link_at_the_name_itself_is_refused(base: Path) -> None:
    (base / "r.jsonl").symlink_to(base / "victim" / "report.jsonl")
    _refused(str(base / "r.jsonl"), "r.jsonl is a link")
    (base / "dangling.jsonl").symlink_to(base / "victim" / "made-by-the-link")
    _refused(str(base / "dangling.jsonl"), "dangling.jsonl is a link")
    assert not (base / "victim" / "made-by-the-link").exists()
    assert (base / "victim" / "report.jsonl").read_text() == "the person's\n"


def test_a_pipe_is_refused_without_blocking(base: Path) -> None:
    os.mkfifo(base / "r.jsonl")
    _refused(str(base / "r.jsonl"), "is a pipe")


def test_a_pipe_with_a_reader_is_refused(base: Path) -> None:
    os.mkfifo(base / "r.jsonl")
    reader = os.open(base / "r.jsonl", os.O_RDONLY | os.O_NONBLOCK)
    try:
        _refused(str(base / "r.jsonl"), "not a regular file")
    finally:
        os.close(reader)


def test_a_hard_link_is_refused(base: Path) -> None:
    os.link(base / "victim" / "report.jsonl", base / "r.jsonl")
    _refused(str(base / "r.jsonl"), "2 names (a hard link)")
    assert (base / "victim" / "report.jsonl").read_text() == "the person's\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file away needs root")
def test_a_file_of_another_owner_is_refused(base: Path) -> None:
    path = base / "r.jsonl"
    path.write_text("someone else's\n")
    os.chown(path, 12345, 12345)
    _refused(str(path), "belongs to uid 12345")
    assert path.read_text() == "someone else's\n"


def test_a_folder_is_refused(base: Path) -> None:
    _refused(str(base) + "/", "names a folder")
    _refused(str(base / "victim" / ".."), "names a folder")


def test_links_on_the_way_to_home_are_the_persons(base: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME through a link (/home -> /var/home on some systems): no sandbox writes a
    folder holding home, so the way there is trusted; below it, nothing is followed."""
    (base / "homelink").symlink_to(base / "home")
    monkeypatch.setenv("HOME", str(base / "homelink"))
    fd = open_report(str(base / "homelink" / "r.jsonl"))
    os.close(fd)
    assert (base / "home" / "r.jsonl").exists()
    (base / "home" / "logs").symlink_to(base / "victim")
    _refused(str(base / "homelink" / "logs" / "report.jsonl"), "logs is a link")


def test_the_systems_links_in_root_are_followed() -> None:
    if not os.path.islink("/bin"):
        missing("needs /bin -> usr/bin (usrmerge)")
    with PrivateFolder.anywhere("/bin") as folder:
        assert folder.path == "/usr/bin"


def test_the_report_reads_back_and_runs_nothing_in_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    subject = f"/w/x$(touch {marker})`touch {marker}`\\$\"; touch {marker}; #\n'"
    record = {"kind": "program", "subject": subject, "resolved": subject, "pid": 1}
    line = report_line(record)
    assert json.loads(line) == record
    script = tmp_path / "report.jsonl"
    script.write_bytes(line * 2)
    subprocess.run(["bash", str(script)], capture_output=True, timeout=10)
    subprocess.run(["sh", str(script)], capture_output=True, timeout=10)
    assert not marker.exists()
    script.write_text(json.dumps(record) + "\n")  # the control: plain JSON runs it
    subprocess.run(["bash", str(script)], capture_output=True, timeout=10)
    assert marker.exists()


# -- $LNK_HOME -----------------------------------------------------------------------------------

def test_lnk_home_is_made_private_and_written_through_its_folders(base: Path) -> None:
    lnk_home = base / "home" / ".lnk"
    write_atomically(str(lnk_home), "permissions/abc", b"yes")
    assert read(str(lnk_home), "permissions/abc") == b"yes"
    assert stat.S_IMODE(os.stat(lnk_home).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(lnk_home / "permissions").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(lnk_home / "permissions" / "abc").st_mode) == 0o600
    assert sorted(os.listdir(lnk_home / "permissions")) == ["abc"]


@pytest.mark.parametrize("where", ["lnk_home", "inside", "above"])
def test_a_link_on_the_way_to_lnk_home_is_refused(base: Path, where: str) -> None:
    """$LNK_HOME itself a link, a folder in it a link, a folder above it (below home) a
    link: each refused, and nothing written where the link points."""
    home = base / "home"
    lnk_home = home / "work" / ".lnk"
    (home / "work").mkdir()
    if where == "lnk_home":
        lnk_home.symlink_to(base / "victim")
    elif where == "inside":
        lnk_home.mkdir(mode=0o700)
        (lnk_home / "permissions").symlink_to(base / "victim")
    else:
        (home / "work").rmdir()
        (home / "work").symlink_to(base / "victim")
    with pytest.raises(LaunchError) as caught:
        write_atomically(str(lnk_home), "permissions/abc", b"yes")
    assert "is a link" in caught.value.render()
    assert sorted(os.listdir(base / "victim")) == ["report.jsonl"]


def test_lnk_home_writable_by_others_is_refused(base: Path) -> None:
    lnk_home = base / "home" / ".lnk"
    lnk_home.mkdir()
    lnk_home.chmod(0o777)
    with pytest.raises(LaunchError) as caught:
        private_folder(str(lnk_home))
    assert "writable by others (mode 777)" in caught.value.render()
    lnk_home.chmod(0o1777)  # sticky: others' files would fail the owner check
    private_folder(str(lnk_home)).close()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder away needs root")
def test_lnk_home_of_another_owner_is_refused(base: Path) -> None:
    lnk_home = base / "home" / ".lnk"
    lnk_home.mkdir(mode=0o700)
    os.chown(lnk_home, 12345, 12345)
    with pytest.raises(LaunchError) as caught:
        write_atomically(str(lnk_home), "cache/x", b"{}")
    assert "belongs to uid 12345" in caught.value.render()
    assert not (lnk_home / "cache").exists()


def test_a_pipe_in_lnk_home_is_neither_read_nor_written(base: Path) -> None:
    lnk_home = base / "home" / ".lnk"
    (lnk_home / "snapshots").mkdir(parents=True, mode=0o700)
    os.mkfifo(lnk_home / "snapshots" / "x.json")
    with pytest.raises(LaunchError) as caught:
        read(str(lnk_home), "snapshots/x.json")
    assert "not a regular file" in caught.value.render()


def test_a_stale_temp_file_goes_and_a_live_ones_stays(base: Path) -> None:
    lnk_home = base / "home" / ".lnk"
    folder = lnk_home / "cache"
    folder.mkdir(parents=True, mode=0o700)
    lnk_home.chmod(0o700)
    dead = subprocess.Popen(["true"])
    dead.wait()
    (folder / f"checks.json.{dead.pid}.tmp").write_text("half")
    (folder / "checks.json.1.tmp").write_text("init's")  # pid 1 lives
    write_atomically(str(lnk_home), "cache/checks.json", b"{}")
    assert sorted(os.listdir(folder)) == ["checks.json", "checks.json.1.tmp"]


@pytest.mark.parametrize("nested", [False, True])
def test_a_tree_is_removed_with_its_links_never_followed(base: Path, nested: bool) -> None:
    """A run's folder of files goes without shutil; one holding folders by rmtree; in
    both, a link goes and what it points to stays."""
    lnk_home = str(base / "home" / ".lnk")
    with private_folder(lnk_home, "run") as run:
        made = Path(run.path) / "net-1-x"
        made.mkdir()
        (made / "resolv.conf").write_text("nameserver 127.0.0.1\n")
        (made / "out").symlink_to(base / "victim")
        (made / "file").symlink_to(base / "victim" / "report.jsonl")
        if nested:
            (made / "inner").mkdir()
            (made / "inner" / "deep").symlink_to(base / "victim")
        run.remove_tree("net-1-x")
        assert not os.path.lexists(made)
        run.remove_tree("net-1-x")  # gone already: nothing to do
    assert (base / "victim" / "report.jsonl").read_text() == "the person's\n"
