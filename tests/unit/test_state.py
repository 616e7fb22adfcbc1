"""Files in $LNK_HOME: private folders, atomic writes, nothing a killed writer left."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from supervisor.errors import LaunchError
from supervisor.state import ensure_private_dir, write_atomically


def test_a_temp_file_a_killed_writer_left_is_removed_by_the_next_write(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    path = tmp_path / "checks.json"
    (tmp_path / f"checks.json.{gone}.tmp").write_text("half")
    (tmp_path / "checks.json.1.tmp").write_text("pid 1 is alive: its writer may finish")
    (tmp_path / "other.json.999999999.tmp").write_text("another file's")
    write_atomically(str(path), b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "checks.json", "checks.json.1.tmp", "other.json.999999999.tmp"]


def test_every_folder_made_is_private(tmp_path: Path) -> None:
    made = ensure_private_dir(str(tmp_path / "a" / "b" / "c"))
    for folder in (tmp_path / "a", tmp_path / "a" / "b", Path(made)):
        assert folder.stat().st_mode & 0o777 == 0o700
    (tmp_path / "file").write_text("")
    with pytest.raises(LaunchError, match="something else than a folder is there"):
        ensure_private_dir(str(tmp_path / "file"))
