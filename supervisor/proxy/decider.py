"""Decisions at run time: a harness asked about a destination no list names.

`--decide-fd N` (the Python API's `decide_fd`) hands lnk-sandbox one end of a socket;
the harness holds the other. For a destination that neither `[network] deny` nor `allow`
names, the proxy holds the connection, writes one JSON line and waits for one back:

    -> {"t": "hello", "proto": 1, "allow": [...], "deny": [...]}         (once, first)
    -> {"t": "ask", "id": 7, "host": "api.example.com", "port": 443,
        "process": {"pid": 4242, "exe": "/usr/bin/curl", "argv": ["curl", "..."]}}
    <- {"t": "verdict", "id": 7, "action": "allow", "remember": true}
    <- {"t": "verdict", "id": 7, "action": "deny", "reason": "not today"}

Fail closed: the connection goes on only on an allow for its id within the timeout
(`--decide-timeout`, 30 seconds by default). No verdict in time refuses it (a late one
is dropped); a line that breaks the protocol, or the end of the descriptor, refuses every
pending and later question, and says so once. `remember` keeps the verdict for the rest
of the run for that host and port, so it is not asked again; questions for one host and
port asked while one is pending wait for the same verdict. Nothing is looked up before
an allow, and an allow does not open what the address guard refuses (a private address
the spec does not name): the decider decides on names, the spec on addresses.

Modelled on sandbox-runtime's decider (its docs/srt-proxy.md and test/control-fd.test.ts);
where it differs, and why:
- JSON lines on one descriptor, not length-prefixed frames on a socket or two pipes: the
  questions are small, and a shell harness can speak lines.
- One question per destination (host and port) when a connection is opened, not one per
  HTTP request: lnk-sandbox does not terminate TLS, so it sees no method, path or headers
  (no `need_body`, no header sets, no credentials).
- The spec's lists decide first, and the decider is asked only about what they leave
  out; sandbox-runtime's decider decides every request its lists let through.
- A verdict may be remembered for the run; sandbox-runtime asks again every time.
- The question names the process asking (its pid as the host sees it, its program and
  arguments), where it can be found (Linux); sandbox-runtime's does not.
- The default wait is 30 seconds, set per run, since a person may be the one deciding;
  sandbox-runtime's is a fixed 5. A refusal here is the proxy's usual one (HTTP 403,
  SOCKS5 reply 2), reported with the rule `network.decide`, not a 503.
- A decider that breaks the protocol or goes away refuses what it would have been asked,
  and the run goes on with its lists; sandbox-runtime's proxy exits.
- The sandbox's own DNS never asks: it answers names the lists (or a remembered allow)
  let through, and refuses the rest without a question, since a name is of no use inside
  but through the proxy, which asks.
"""

from __future__ import annotations

import errno
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from .rules import DECIDE, Decision

PROTOCOL = 1
DEFAULT_TIMEOUT = 30.0
MAX_LINE = 65536
FORGET_AFTER = 4096  # ids of ended questions kept, so that a late verdict is dropped

Peer = tuple[str, int]
DescribePeer = Callable[[Peer], dict[str, Any] | None]


class _Question:
    def __init__(self, ident: int):
        self.ident = ident
        self.done = anyio.Event()
        self.decision: Decision | None = None


class Decider:
    """One run's decider on a descriptor: `serve()` as a task, `ask()` per question."""

    def __init__(self, fd: int, *, timeout: float = DEFAULT_TIMEOUT,
                 allow: tuple[str, ...] = (), deny: tuple[str, ...] = (),
                 describe_peer: DescribePeer | None = None,
                 on_gone: Callable[[str], None] | None = None):
        self.fd = fd
        self.timeout = timeout
        self.describe_peer = describe_peer
        self._hello = {"t": "hello", "proto": PROTOCOL, "allow": list(allow),
                       "deny": list(deny)}
        self._on_gone = on_gone
        self._next = 0
        self._pending: dict[int, _Question] = {}
        self._by_key: dict[tuple[str, int], _Question] = {}
        self._ended: OrderedDict[int, None] = OrderedDict()
        self.remembered: dict[tuple[str, int], bool] = {}
        self.gone: str | None = None
        self._write_lock = anyio.Lock()
        self._ready = anyio.Event()

    # -- the harness's side -----------------------------------------------------------

    async def serve(self) -> None:
        """Say hello, then read verdicts until the descriptor ends (a task of the run)."""
        was_blocking = os.get_blocking(self.fd)
        os.set_blocking(self.fd, False)
        try:
            await self._serve()
        finally:
            os.set_blocking(self.fd, was_blocking)  # the caller's, as it was

    async def _serve(self) -> None:
        try:
            await self._write(self._hello)
        finally:
            self._ready.set()
        buffer = b""
        while self.gone is None:
            try:
                chunk = os.read(self.fd, MAX_LINE)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            except OSError as err:
                self._lose(f"reading it failed: {err.strerror}")
                return
            if not chunk:
                self._lose("it closed its end")
                return
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    self._verdict(line)
            if len(buffer) > MAX_LINE:
                self._lose(f"a line longer than {MAX_LINE} bytes")

    def _verdict(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._lose("a line that is not JSON")
            return
        if not isinstance(message, dict) or message.get("t") != "verdict":
            self._lose('a line that is not {"t": "verdict", ...}')
            return
        ident = message.get("id")
        action = message.get("action")
        remember = message.get("remember", False)
        reason = message.get("reason")
        if (not isinstance(ident, int) or isinstance(ident, bool)
                or action not in ("allow", "deny") or not isinstance(remember, bool)
                or not (reason is None or isinstance(reason, str))):
            self._lose("a verdict without an integer id, an action of allow or deny, "
                       "a true or false remember, or a text reason")
            return
        question = self._pending.pop(ident, None)
        if question is None:
            if ident in self._ended:
                return  # late: that question was refused on its timeout already
            self._lose(f"a verdict for id {ident}, which no question has")
            return
        decision = question.decision
        assert decision is not None
        key = (decision.host, decision.port or 0)
        self._by_key.pop(key, None)
        allowed = action == "allow"
        if remember:
            self.remembered[key] = allowed
        why = "the decider allowed it" if allowed else "the decider refused it"
        if reason:
            why += f": {reason[:200]}"
        self._end(question, decision.verdict(allowed, why))

    def _lose(self, why: str) -> None:
        """The decider is gone or broke the protocol: refuse everything it holds."""
        if self.gone is not None:
            return
        self.gone = f"the decider is gone ({why})"
        if self._on_gone is not None:
            self._on_gone(self.gone)
        for question in list(self._pending.values()):
            assert question.decision is not None
            self._end(question, question.decision.verdict(False, self.gone))
        self._pending.clear()
        self._by_key.clear()

    def _end(self, question: _Question, decision: Decision) -> None:
        question.decision = decision
        self._ended[question.ident] = None
        while len(self._ended) > FORGET_AFTER:
            self._ended.popitem(last=False)
        question.done.set()

    async def _write(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message) + "\n").encode()
        async with self._write_lock:
            while data:
                try:
                    written = os.write(self.fd, data)
                except BlockingIOError:
                    await anyio.wait_writable(self.fd)
                    continue
                except OSError as err:
                    self._lose("it closed its end" if err.errno in (errno.EPIPE,
                                                                     errno.ECONNRESET)
                               else f"writing to it failed: {err.strerror}")
                    return
                data = data[written:]

    # -- the proxy's side ---------------------------------------------------------------

    async def ask(self, decision: Decision, peer: Peer | None) -> Decision:
        """The verdict on an unlisted destination: allowed, or refused with the reason."""
        key = (decision.host, decision.port or 0)
        if key in self.remembered:
            allowed = self.remembered[key]
            return decision.verdict(
                allowed, "the decider allowed it for the run" if allowed
                else "the decider refused it for the run")
        await self._ready.wait()
        if self.gone is not None:
            return decision.verdict(False, self.gone)
        question = self._by_key.get(key)
        if question is None:
            self._next += 1
            question = _Question(self._next)
            question.decision = decision
            self._pending[question.ident] = question
            self._by_key[key] = question
            process = None
            if peer is not None and self.describe_peer is not None:
                process = await anyio.to_thread.run_sync(self.describe_peer, peer)
            await self._write({"t": "ask", "id": question.ident, "host": decision.host,
                               "port": decision.port, "process": process})
        with anyio.move_on_after(self.timeout):
            await question.done.wait()
        if not question.done.is_set() and question.ident in self._pending:
            del self._pending[question.ident]
            self._by_key.pop(key, None)
            self._end(question, decision.verdict(
                False, f"no verdict within {self.timeout:g} seconds"))
        assert question.decision is not None
        answered = question.decision
        return Decision(decision.host, decision.port, None, answered.allowed, DECIDE,
                        answered.reason)
