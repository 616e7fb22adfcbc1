"""A real unprivileged Docker container with lnk-sandbox installed, for the run without
namespaces (tests/integration/test_container.py).

Docker as Debian ships it (docker.io, 20.10): its daemon started here when none runs
(no iptables and no bridge: the container has no network at all, which is what a wheel
installed offline needs), an image imported from a debootstrap root
(ci/container-image.sh, cached in /var/cache/lnk-docker), the default seccomp profile
and capabilities, and lnk-sandbox installed from a wheel of this checkout with its
dependencies' wheels, downloaded here, so that the container needs no network.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOCKET = "/run/docker.sock"
DAEMON_LOG = "/var/log/lnk-test-dockerd.log"
LNK = "/opt/lnk/bin/lnk"
PROBE = "/opt/lnk-probe.py"
USER = "lnk-user"  # the image's unprivileged user (ci/container-image.sh)


def docker() -> str:
    """Debian's docker CLI (docker.io), which speaks its daemon's API."""
    return "/usr/bin/docker" if os.access("/usr/bin/docker", os.X_OK) else (
        shutil.which("docker") or "docker")


def _ready() -> bool:
    return subprocess.run([docker(), "info"], capture_output=True).returncode == 0


_started: list[subprocess.Popen[bytes]] = []


@functools.cache
def daemon_problem() -> str | None:
    """Find Docker's daemon, or start it: None when it answers."""
    if os.geteuid() != 0:
        return "the container test starts Docker's daemon, which needs root"
    if not shutil.which("dockerd"):
        return "Docker is not installed (apt-get install docker.io; ci/setup.sh --test)"
    if not shutil.which("debootstrap"):
        return "debootstrap is not installed (ci/setup.sh --test)"
    if _ready():
        return None
    with open(DAEMON_LOG, "ab") as log:
        # No iptables and no bridge: this machine may have neither, and the container
        # runs with --network none.
        _started.append(subprocess.Popen(
            ["dockerd", "--iptables=false", "--ip6tables=false", "--bridge=none",
             "--host", f"unix://{SOCKET}"], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            start_new_session=True))
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if _ready():
            return None
        if _started[-1].poll() is not None:
            break
        time.sleep(0.5)
    return f"Docker's daemon did not start (see {DAEMON_LOG})"


def stop_daemon() -> None:
    """Stop the daemon this process started, if it did."""
    for daemon in _started:
        daemon.terminate()
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait()
    _started.clear()


def image() -> str:
    """The image's tag, made (once, cached) by ci/container-image.sh."""
    done = subprocess.run([str(REPO / "ci" / "container-image.sh")], capture_output=True,
                          text=True, env={**os.environ, "LNK_DOCKER": docker()})
    if done.returncode != 0:
        raise RuntimeError(f"ci/container-image.sh failed:\n{done.stderr}")
    return done.stdout.strip().splitlines()[-1]


def wheels(folder: Path) -> None:
    """A wheel of this checkout, and its dependencies' wheels, in `folder`."""
    python = "/usr/bin/python3"  # the container's own Python is Debian 12's too
    quiet = ["-q", "--disable-pip-version-check"]
    build = Path(tempfile.mkdtemp(prefix="lnk-wheel-"))
    try:
        shutil.copytree(REPO, build / "src", ignore=shutil.ignore_patterns(
            ".venv", ".git", "build", "*.egg-info", "__pycache__", ".ruff_cache",
            ".mypy_cache", ".pytest_cache", ".hypothesis"))
        subprocess.run([python, "-m", "pip", "wheel", *quiet, "--no-deps", "-w", str(folder),
                        str(build / "src")], check=True, capture_output=True)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    wheel = next(folder.glob("lnk_sandbox-*.whl"))
    subprocess.run([python, "-m", "pip", "download", *quiet, "-d", str(folder), str(wheel)],
                   check=True, capture_output=True)


@dataclass
class Container:
    name: str

    def sh(self, script: str, *, user: str = "root", env: dict[str, str] | None = None,
           timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """`sh -c script` in the container as `user`, in their home."""
        home = "/root" if user == "root" else f"/home/{user}"
        options = ["-u", user, "-w", home, "-e", f"HOME={home}"]
        for name, value in (env or {}).items():
            options += ["-e", f"{name}={value}"]
        return subprocess.run([docker(), "exec", *options, self.name, "sh", "-c", script],
                              capture_output=True, text=True, timeout=timeout)

    def remove(self) -> None:
        subprocess.run([docker(), "rm", "-f", self.name], capture_output=True)


def start(tag: str, wheel_folder: Path) -> Container:
    """A container of `tag` as a new user runs one: no network, Docker's default seccomp
    profile and capabilities, lnk-sandbox installed from the wheels, offline."""
    name = f"lnk-test-{os.getpid()}-{os.urandom(3).hex()}"
    subprocess.run([docker(), "run", "-d", "--name", name, "--network", "none",
                    "-v", f"{wheel_folder}:/wheels:ro", tag, "sleep", "infinity"],
                   check=True, capture_output=True)
    box = Container(name)
    done = box.sh("python3 -m venv /opt/lnk && /opt/lnk/bin/pip install -q --no-index "
                  "--disable-pip-version-check --find-links /wheels lnk-sandbox")
    if done.returncode != 0:
        box.remove()
        raise RuntimeError(f"installing lnk-sandbox in the container failed:\n{done.stderr}")
    subprocess.run([docker(), "cp", str(REPO / "tests" / "support" / "probe.py"),
                    f"{name}:{PROBE}"], check=True, capture_output=True)
    box.sh(f"chmod 644 {PROBE}")
    return box


