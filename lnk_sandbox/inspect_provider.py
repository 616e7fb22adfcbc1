"""An Inspect sandbox provider: every tool call of an Inspect eval runs in lnk-sandbox.

Installed with `pip install 'lnk-sandbox[inspect]'`, registered through Inspect's
extension entry point (`inspect_ai` group), and chosen by name in a task:

    Task(..., sandbox="lnk")                      # the embedded default spec
    Task(..., sandbox=("lnk", "spec.toml"))       # a spec file

Each sample gets a working folder of its own (made in the host's temp folder, removed
at cleanup): the spec's `.` is that folder, relative paths resolve there, and the
sample's /tmp is one folder kept from one call to the next (a `lnk_sandbox.Sandbox`
session). Naming the spec in the task is the allowing: an eval runs unattended, with
its own display on the terminal, so the spec is not asked about (`yes`).

How Inspect's contract maps onto lnk-sandbox:
- `exec`: `Sandbox.run` with the call's cwd, env, input and timeout; the timeout is the
  supervisor's (the whole tree killed), raised as TimeoutError, and never retried (a
  command with side effects run twice is not the same command: `timeout_retry` is
  accepted and not acted on); a command that could not be run for its permissions is
  PermissionError; each output stream keeps its last `MAX_EXEC_OUTPUT_SIZE` bytes.
- `read_file` and `write_file`: done by the sandbox itself, so a path the spec does not
  grant is never touched; the kernel's errno there is the exception (FileNotFoundError,
  PermissionError, IsADirectoryError), and a file over `MAX_READ_FILE_SIZE` is
  OutputLimitExceededError.
- `user`: only the user running the eval (as Inspect's local provider): a sandbox has no
  capability to become another one. Inspect's `test_exec_as_user` therefore cannot
  hold, by design (see README, "Inspect").
"""

from __future__ import annotations

import errno
import os
import tempfile
from typing import Any, Literal, overload

from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUserUnsupportedError,
    concurrency,
    sandboxenv,
)
from pydantic import BaseModel
from typing_extensions import override

from ._api import Sandbox, SpecSource, remove_tree


class LnkSandboxConfig(BaseModel, frozen=True):
    """A task's configuration of the provider, beside a plain spec path: `spec` as a
    path or a dict (a spec's tables)."""

    spec: str | dict[str, Any] | None = None


def _spec(config: SandboxEnvironmentConfigType | None) -> SpecSource:
    if config is None:
        return None
    if isinstance(config, str):
        return config
    if isinstance(config, LnkSandboxConfig):
        return config.spec
    raise ValueError(f"the lnk sandbox takes a spec path or LnkSandboxConfig, not "
                     f"{type(config).__name__}")


def _is_current_user(user: str) -> bool:
    import pwd

    try:
        uid = int(user) if user.isdecimal() else pwd.getpwnam(user).pw_uid
    except KeyError:
        return False
    return uid == os.geteuid()


@sandboxenv(name="lnk")
class LnkSandboxEnvironment(SandboxEnvironment):
    """One sample's sandbox: a `lnk_sandbox.Sandbox` over the sample's working folder."""

    def __init__(self, sandbox: Sandbox, folder: str) -> None:
        super().__init__()
        self.sandbox = sandbox
        self.folder = folder

    @override
    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return LnkSandboxConfig(**config)

    @override
    @classmethod
    async def sample_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                          metadata: dict[str, str]) -> dict[str, SandboxEnvironment]:
        folder = os.path.realpath(tempfile.mkdtemp(prefix="lnk-inspect-"))
        sandbox = Sandbox(_spec(config), cwd=folder, yes=True)
        try:
            await sandbox.__aenter__()
        except BaseException:
            remove_tree(folder)
            raise
        return {"default": cls(sandbox, folder)}

    @override
    @classmethod
    async def sample_cleanup(cls, task_name: str, config: SandboxEnvironmentConfigType | None,
                             environments: dict[str, SandboxEnvironment],
                             interrupted: bool) -> None:
        for environment in environments.values():
            if isinstance(environment, LnkSandboxEnvironment):
                await environment.sandbox.aclose()
                remove_tree(environment.folder)

    @override
    async def exec(self, cmd: list[str], input: str | bytes | None = None,
                   cwd: str | None = None, env: dict[str, str] | None = None,
                   user: str | None = None, timeout: int | None = None,
                   timeout_retry: bool = True, concurrency: bool = True) -> ExecResult[str]:
        if user is not None and not _is_current_user(user):
            raise SandboxUserUnsupportedError(
                f"the lnk sandbox runs commands as the user running the eval, not {user!r}: "
                "a sandbox has no capability to become another user")
        if concurrency:
            async with _throttle():
                done = await self._run(cmd, input, cwd, env, timeout)
        else:
            done = await self._run(cmd, input, cwd, env, timeout)
        if done.timed_out:
            raise TimeoutError(f"{cmd[0]} ran past its timeout of {timeout} s: the command and "
                               "everything it started were killed")
        if done.returncode == 126 and done.exec_errno == errno.EACCES:
            raise PermissionError(errno.EACCES, "permission denied", cmd[0])
        return ExecResult(success=done.returncode == 0, returncode=done.returncode,
                          stdout=(done.stdout or b"").decode("utf-8", "replace"),
                          stderr=(done.stderr or b"").decode("utf-8", "replace"))

    async def _run(self, cmd: list[str], input: str | bytes | None, cwd: str | None,
                   env: dict[str, str] | None, timeout: int | None) -> Any:
        return await self.sandbox.run(cmd, cwd=cwd, env=env, stdin=input,
                                      timeout=None if timeout is None else float(timeout),
                                      output_limit=SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE)

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        await self.sandbox.write_file(file, contents)

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        try:
            data = await self.sandbox.read_file(
                file, limit=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE)
        except OSError as err:
            if err.errno == errno.EFBIG:
                raise OutputLimitExceededError(
                    limit_str=SandboxEnvironmentLimits.MAX_READ_FILE_SIZE_STR,
                    truncated_output=None) from None
            raise
        # newline="" as Inspect asks: the bytes as they are, \r\n kept.
        return data.decode("utf-8") if text else data

    @override
    def default_polling_interval(self) -> float:
        return 0.2


def _throttle() -> Any:
    """At most one sandboxed command per CPU at once, as Inspect's local provider
    throttles its subprocesses."""
    return concurrency("lnk-sandbox", max(1, os.cpu_count() or 1), visible=False)


__all__ = ["LnkSandboxConfig", "LnkSandboxEnvironment"]
