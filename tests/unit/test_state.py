"""Files in $LNK_HOME: private folders, atomic writes, nothing a killed writer left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.errors import LaunchError
from supervisor.state import private_folder, remove_stale_temps, write_atomically


def _gone_pid() -> str:
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_a_temp_file_a_killed_writer_left_is_removed_by_the_next_write(tmp_path: Path) -> None:
    lnk_home = tmp_path / "lnk"
    lnk_home.mkdir(mode=0o700)
    gone = _gone_pid()
    (lnk_home / f"checks.json.{gone}.tmp").write_text("half")
    (lnk_home / "checks.json.1.tmp").write_text("pid 1 is alive: its writer may finish")
    (lnk_home / "other.json.999999999.tmp").write_text("another file's")
    write_atomically(str(lnk_home), "checks.json", b"{}")
    assert sorted(p.name for p in lnk_home.iterdir()) == [
        "checks.json", "checks.json.1.tmp", "other.json.999999999.tmp"]


def test_a_temp_file_is_removed_without_a_write(tmp_path: Path) -> None:
    """A complete file no start writes again: each start looks for its leftovers."""
    lnk_home = tmp_path / "lnk"
    (lnk_home / "cache").mkdir(mode=0o700, parents=True)
    lnk_home.chmod(0o700)
    (lnk_home / "cache" / f"checks.json.{_gone_pid()}.tmp").write_text("half")
    remove_stale_temps(str(lnk_home), "cache/checks.json")
    assert list((lnk_home / "cache").iterdir()) == []


def test_every_folder_made_is_private(tmp_path: Path) -> None:
    lnk_home = tmp_path / "lnk"
    with private_folder(str(lnk_home), "a/b/c") as made:
        assert made.path == str(lnk_home / "a" / "b" / "c")
    for folder in (lnk_home, lnk_home / "a", lnk_home / "a" / "b", lnk_home / "a/b/c"):
        assert folder.stat().st_mode & 0o777 == 0o700
    (lnk_home / "file").write_text("")
    with pytest.raises(LaunchError, match="file"):
        private_folder(str(lnk_home), "file")
