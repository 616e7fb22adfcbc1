"""The decider's protocol, in-process: one question per destination at a time, verdicts
by id, a late verdict dropped, remembered verdicts, and failing closed."""

from __future__ import annotations

import json
import socket

import anyio
import pytest

from supervisor.proxy.decider import Decider
from supervisor.proxy.rules import DECIDE, NetworkLists

LISTS = NetworkLists.from_texts(["allowed.example"])


async def _lines(sock: socket.socket, count: int) -> list[dict[str, object]]:
    data = b""
    while data.count(b"\n") < count:
        await anyio.wait_readable(sock)
        data += sock.recv(65536)
    return [json.loads(line) for line in data.splitlines()]


def _run(test: object) -> None:
    async def main() -> None:
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        gone: list[str] = []
        decider = Decider(theirs.fileno(), timeout=0.5, allow=("allowed.example",),
                          on_gone=gone.append)
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(decider.serve)
                with anyio.fail_after(10):
                    await test(decider, ours, gone)  # type: ignore[operator]
                group.cancel_scope.cancel()
        finally:
            ours.close()
            theirs.close()

    anyio.run(main)


def test_questions_for_one_destination_wait_for_one_verdict() -> None:
    async def test(decider: Decider, harness: socket.socket, gone: list[str]) -> None:
        (hello,) = await _lines(harness, 1)
        assert hello == {"t": "hello", "proto": 1, "allow": ["allowed.example"], "deny": []}
        decision = LISTS.decide("new.example", 443)
        answers = []

        async def ask() -> None:
            answers.append(await decider.ask(decision, None))

        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(ask)
            (question,) = await _lines(harness, 1)
            assert question == {"t": "ask", "id": 1, "host": "new.example", "port": 443,
                                "process": None}
            harness.send(b'{"t": "verdict", "id": 1, "action": "allow", "remember": true}\n')
        assert [(a.allowed, a.rule, a.reason) for a in answers] == [
            (True, DECIDE, "the decider allowed it")] * 3
        again = await decider.ask(decision, None)
        assert (again.allowed, again.reason) == (True, "the decider allowed it for the run")
        assert decider.remembered == {("new.example", 443): True}
        assert gone == []

    _run(test)


def test_no_verdict_in_time_refuses_and_a_late_one_is_dropped() -> None:
    async def test(decider: Decider, harness: socket.socket, gone: list[str]) -> None:
        await _lines(harness, 1)
        late = await decider.ask(LISTS.decide("slow.example", 80), None)
        assert (late.allowed, late.reason) == (False, "no verdict within 0.5 seconds")
        assert [m["id"] for m in await _lines(harness, 1)] == [1]
        harness.send(b'{"t": "verdict", "id": 1, "action": "allow"}\n')
        await anyio.sleep(0.1)
        assert gone == []  # dropped, not a break of the protocol
        async with anyio.create_task_group() as group:
            result = []

            async def ask() -> None:
                result.append(await decider.ask(LISTS.decide("other.example", 80), None))

            group.start_soon(ask)
            (question,) = await _lines(harness, 1)
            assert question["id"] == 2
            harness.send(b'{"t": "verdict", "id": 2, "action": "deny", "reason": "no"}\n')
        assert (result[0].allowed, result[0].reason) == (False, "the decider refused it: no")

    _run(test)


@pytest.mark.parametrize(("line", "why"), [
    (b"[1, 2]\n", 'a line that is not {"t": "verdict", ...}'),
    (b'{"t": "verdict", "id": 1, "action": "maybe"}\n',
     "a verdict without an integer id, an action of allow or deny, a true or false "
     "remember, or a text reason"),
    (b'{"t": "verdict", "id": true, "action": "allow"}\n',
     "a verdict without an integer id, an action of allow or deny, a true or false "
     "remember, or a text reason"),
    (b"x" * 70000, "a line longer than 65536 bytes"),
])
def test_a_broken_protocol_refuses_what_is_pending_and_what_comes(line: bytes,
                                                                   why: str) -> None:
    async def test(decider: Decider, harness: socket.socket, gone: list[str]) -> None:
        await _lines(harness, 1)
        answers = []

        async def ask() -> None:
            answers.append(await decider.ask(LISTS.decide("pending.example", 443), None))

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            await _lines(harness, 1)
            harness.sendall(line)
        assert gone == [f"the decider is gone ({why})"]
        later = await decider.ask(LISTS.decide("later.example", 443), None)
        assert [(a.allowed, a.reason) for a in (*answers, later)] == [
            (False, f"the decider is gone ({why})")] * 2

    _run(test)
