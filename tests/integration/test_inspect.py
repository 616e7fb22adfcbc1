"""The Inspect provider against Inspect's own conformance suite, and in a real eval.

Inspect ships the checks every sandbox provider runs (`inspect_ai.util._sandbox.
self_check`); importing them here collects each as a test of this module, run against
a `LnkSandboxEnvironment` made as Inspect makes it (`sample_init`, `sample_cleanup`),
with anyio's own pytest plugin. A check that cannot hold by design is marked xfail here
with the reason, strictly (it must fail), and named in the README; every other passes.

Run as root the provider is root mode's sandbox; `test_self_check_as_an_unprivileged_user`
runs the same suite as the unprivileged test user, in a pytest of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the inspect extra is not installed")

from inspect_ai import Task, eval_async
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    Target,
    accuracy,
    scorer,
)
from inspect_ai.solver import TaskState, generate, use_tools
from inspect_ai.tool import bash, python
from inspect_ai.util import SandboxEnvironment, sandbox
from inspect_ai.util._sandbox.registry import registry_find_sandboxenv
from inspect_ai.util._sandbox.self_check import *  # noqa: F403 - Inspect's checks, collected here

from lnk_sandbox.inspect_provider import LnkSandboxEnvironment
from support import capabilities as caps

pytestmark = [pytest.mark.requires_bwrap, pytest.mark.requires_userns, pytest.mark.anyio]

# Checks that cannot hold by design, with why (README, "Inspect").
BY_DESIGN = {
    "test_exec_as_user": (
        "exec as another user needs adduser run as root inside with root's capabilities "
        "(it writes /etc/passwd): a sandbox drops every capability and keeps /etc "
        "read-only, and runs commands as the user running the eval alone"),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def sandbox_env(request: pytest.FixtureRequest) -> AsyncIterator[SandboxEnvironment]:
    """One sample's sandbox, as Inspect makes it: the name is looked up in Inspect's own
    registry (through the extension entry point), then sample_init and sample_cleanup."""
    reason = BY_DESIGN.get(request.node.originalname)
    if reason is not None:
        request.node.add_marker(pytest.mark.xfail(reason=reason, strict=True))
    provider = registry_find_sandboxenv("lnk")
    assert provider is LnkSandboxEnvironment
    environments = await provider.sample_init("self_check", None, {})
    try:
        yield environments["default"]
    finally:
        await provider.sample_cleanup("self_check", None, environments, False)
        folder = environments["default"].as_type(LnkSandboxEnvironment).folder
        assert not os.path.exists(folder)


async def test_a_timed_out_command_leaves_no_process_on_the_host(
        sandbox_env: SandboxEnvironment) -> None:
    """Inspect's own timeout checks look with `ps` inside a later sandbox, which has its
    own PID namespace and would not see a survivor: this looks from the host."""
    marker = f"lnk-inspect-{os.getpid()}-timeout"
    with pytest.raises(TimeoutError):
        # ": marker" keeps each shell from exec'ing its last command, so the marker
        # stays in a process's command line: a child in the background, and its parent.
        await sandbox_env.exec(["sh", "-c", f"trap '' TERM; sh -c 'sleep 300; : {marker}' & "
                                f"sleep 301; : {marker}"], timeout=2)
    survivors = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True)
    assert survivors.stdout == "", survivors.stdout


async def test_a_spec_from_the_task_config_is_the_samples(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text('[files]\nwrite = ["."]\n[commands]\nprograms = ["sh", "cat"]\n')
    provider = registry_find_sandboxenv("lnk")
    environments = await provider.sample_init("spec", str(spec), {})
    try:
        env = environments["default"]
        await env.write_file("in.txt", "from the config\n")
        done = await env.exec(["sh", "-c", "cat in.txt; ls"])
        assert done.stdout == "from the config\n"
        assert "refused /usr/bin/ls (not in [commands])" in done.stderr
    finally:
        await provider.sample_cleanup("spec", str(spec), environments, False)


@scorer(metrics=[accuracy()])
def note_written() -> Scorer:
    """Reads what the tool calls left, through the same sample's sandbox."""

    async def score(state: TaskState, target: Target) -> Score:
        note = await sandbox().read_file("note.txt")
        return Score(value=CORRECT if note == target.text else INCORRECT, answer=note)

    return score


# Inspect's own, not the provider's (the same with its "local" provider): its model retry
# passes tenacity a parameter tenacity deprecates, and its tool-call plumbing leaves a
# memory stream for the collector.
@pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore:Exception ignored in. <function MemoryObjectReceiveStream"
                            ".__del__:pytest.PytestUnraisableExceptionWarning")
async def test_an_eval_runs_its_tool_calls_in_the_sandbox(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An eval end to end with Inspect's mock model (no network, no key): its tool calls
    run through the provider, and its scorer reads the sample's file back through it."""
    calls = [
        ModelOutput.for_tool_call("mockllm/model", "bash", {
            "command": "echo inside > note.txt; cat note.txt; touch /etc/x 2>&1; pwd"}),
        ModelOutput.for_tool_call("mockllm/model", "python", {
            "code": "print(open('note.txt').read().upper())"}),
        ModelOutput.from_content("mockllm/model", "done"),
    ]
    for output in calls:  # given, so the mock model counts no tokens (tiktoken downloads)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    task = Task(dataset=[Sample(input="write a note", target="inside\n")],
                solver=[use_tools([bash(), python()]), generate()], scorer=note_written(),
                sandbox="lnk")
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    logs = await eval_async(task, model=get_model("mockllm/model", custom_outputs=calls),
                            log_dir=str(tmp_path), log_level="warning")
    log = logs[0]
    assert log.status == "success", log.error
    assert log.samples is not None
    sample = log.samples[0]
    tool_results = [m.text for m in sample.messages if m.role == "tool"]
    bash_out, python_out = tool_results
    assert bash_out.startswith("inside\n")
    assert "touch: cannot touch '/etc/x'" in bash_out  # EROFS, or EACCES as root mode's uid
    assert bash_out.rstrip().rsplit("\n", 1)[-1].startswith(tempfile.gettempdir() + "/lnk-inspect-")
    assert python_out.strip() == "INSIDE"
    assert sample.scores is not None
    assert sample.scores["note_written"].value == CORRECT


@pytest.mark.timeout(900)  # Inspect's ~30 checks, each a sandbox started as the user
def test_self_check_as_an_unprivileged_user() -> None:
    """The same suite, run by the unprivileged test user (not root mode)."""
    if os.geteuid() != 0:
        pytest.skip("this run is the unprivileged user's already")
    if reason := caps.test_user_problem():
        caps.missing(reason)
    home = Path(tempfile.mkdtemp(prefix="lnk-test-inspect-", dir="/tmp"))
    try:
        os.chown(home, *caps.user_ids())
        done = subprocess.run(
            [*caps.as_test_user(), str(caps.VENV_BIN / "python"), "-m", "pytest", "-q",
             "-p", "no:cacheprovider", "--basetemp", str(home / "pytest"),
             "-k", "not unprivileged", "-o", "addopts=--strict-markers -ra", __file__],
            cwd=Path(__file__).resolve().parent.parent.parent, capture_output=True,
            text=True, timeout=900,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                 "PYTHONDONTWRITEBYTECODE": "1", "CI": os.environ.get("CI", "")})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "1 xfailed" in done.stdout and "failed" not in done.stdout.replace("xfailed", "")
