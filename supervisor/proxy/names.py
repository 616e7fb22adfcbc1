"""The name service the helper's DNS asks: decided here, looked up here, never forwarded.

One JSON line per question (`{"id", "name", "type"}`), one per answer (`{"id", "rcode",
"addresses"}`), answered as each lookup ends (a slow name holds up no other). A name the
allow list refuses is answered REFUSED and reported, and nothing is looked up for it. An
allowed name is looked up once for every address family, and the helper keeps the family
asked for, so a name with only IPv4 addresses answers AAAA with no records (NOERROR)
rather than NXDOMAIN, as a DNS server would. Other record types of an allowed name get
no records: the proxy connects by address, so nothing more is needed.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.abc

from .resolver import LookupFailed
from .upstream import CHUNK, Gate

A, AAAA = 1, 28
MAX_LINE = 4096


async def answer(gate: Gate, name: str, rdtype: int) -> tuple[str, list[str]]:
    """The rcode and addresses for one question."""
    decision = gate.allowlist.decide_name(name)
    if not decision.allowed:
        gate.refuse(decision)
        return "REFUSED", []
    if rdtype not in (A, AAAA):
        return "NOERROR", []
    try:
        return "NOERROR", await gate.resolver.resolve(decision.host)
    except LookupFailed as err:
        return err.rcode, []


async def handle(stream: anyio.abc.ByteStream, gate: Gate) -> None:
    """Serve the helper's questions on one connection until it closes."""
    lock = anyio.Lock()

    async def reply(question: dict[str, Any]) -> None:
        ident = question.get("id")
        name, rdtype = question.get("name"), question.get("type")
        if isinstance(name, str) and isinstance(rdtype, int) and len(name) <= 255:
            rcode, addresses = await answer(gate, name, rdtype)
        else:
            rcode, addresses = "REFUSED", []
        line = json.dumps({"id": ident, "rcode": rcode, "addresses": addresses}) + "\n"
        async with lock:
            try:
                await stream.send(line.encode())
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass

    buffer = b""
    async with anyio.create_task_group() as group:
        while True:
            try:
                buffer += await stream.receive(CHUNK)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                break
            *lines, buffer = buffer.split(b"\n")
            if len(buffer) > MAX_LINE:
                break
            for line in lines:
                try:
                    question = json.loads(line)
                except ValueError:
                    continue
                if isinstance(question, dict):
                    group.start_soon(reply, question)
