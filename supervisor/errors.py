"""The exception tree of lnk-sandbox.

Lower layers raise these with structured fields; only the command line turns them into
text for a person (what was wrong, where, what to do) and exit status 125. Keeping the
fields structured lets a harness using the Python API show its own message.
"""

from __future__ import annotations


class SandboxError(Exception):
    """Anything lnk-sandbox itself refused or failed at (exit status 125)."""

    exit_status = 125

    def __init__(self, message: str, *, hint: str | None = None, errno: int | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.errno = errno

    def render(self) -> str:
        """The text a person sees: the message, then what to change, each one line with
        nothing a terminal would obey (a path in it may be the sandbox's: terminal.shown)."""
        from .terminal import shown

        if self.hint:
            return f"{shown(self.message)}\n  hint: {shown(self.hint)}"
        return shown(self.message)

    def __str__(self) -> str:
        """`render()`: a harness that logs `str(err)` (or a traceback's last line) keeps
        where the error is and what to change, not the bare message."""
        return self.render()

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled whole, fields and class (a process pool hands exceptions back so):
        the keyword-only fields are not in `args`, which the default would replay."""
        return (_rebuild, (type(self), self.message, dict(self.__dict__)))


class SpecError(SandboxError):
    """A spec (or a command-line argument standing for one) is invalid.

    `file`, `key` and `line` say where; `line` is None where the TOML parser gives none
    and the key could not be found in the text.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        key: str | None = None,
        line: int | None = None,
        hint: str | None = None,
    ):
        super().__init__(message, hint=hint)
        self.file = file
        self.key = key
        self.line = line

    def render(self) -> str:
        from .terminal import shown

        where = self.file
        if self.line is not None:
            where += f":{self.line}"
        if self.key:
            where += f": key {self.key}"
        text = shown(f"{where}: {self.message}")
        if self.hint:
            text += f"\n  hint: {shown(self.hint)}"
        return text


class LaunchError(SandboxError):
    """The sandbox could not be set up: a grant changed, bubblewrap failed, a lock broke."""


class ConfinementError(SandboxError):
    """A layer the policy needs (Landlock, the seccomp listener) is missing or failed."""


class HelperError(SandboxError):
    """The network helper or the exec watch was lost or failed mid-run."""


class NotAllowedError(SandboxError):
    """The person did not allow the spec: they said no, or there was no terminal to ask
    on and no `yes`, or a saved command's permission is gone. Not a fault: a harness
    tells it from a failure by its class, and asks its person again. `command`: the
    command a person runs at a terminal to allow it (`lnk sandbox allow ...`), where
    there is one."""

    def __init__(self, message: str, *, hint: str | None = None, errno: int | None = None,
                 command: str | None = None):
        super().__init__(message, hint=hint, errno=errno)
        self.command = command


def _rebuild(kind: type[SandboxError], message: str, fields: dict[str, object]
             ) -> SandboxError:
    error = Exception.__new__(kind)
    Exception.__init__(error, message)
    error.__dict__.update(fields)
    return error
