"""The REFUSED answer mode "none" gives a name looked up (supervisor/linux/no_network.py):
exact bytes for a query, nothing for what is not one."""

from __future__ import annotations

import struct

from supervisor.linux.no_network import refused

QUESTION = b"\x07example\x03com\x00" + struct.pack("!HH", 28, 1)


def query(ident: int = 0xBEEF, flags: int = 0x0100, count: int = 1) -> bytes:
    return struct.pack("!HHHHHH", ident, flags, count, 0, 0, 1) + QUESTION + b"\0" * 11


def test_refused_copies_id_rd_and_question_and_names_nothing() -> None:
    assert refused(query()) == struct.pack("!HHHHHH", 0xBEEF, 0x8105, 1, 0, 0, 0) + QUESTION
    # RD off stays off; the opcode is kept.
    assert refused(query(flags=0x0000))[2:4] == b"\x80\x05"  # type: ignore[index]


def test_what_is_not_one_question_gets_no_answer() -> None:
    assert refused(b"") is None
    assert refused(query()[:11]) is None
    assert refused(query(flags=0x8100)) is None  # an answer
    assert refused(query(count=2)) is None
    assert refused(query()[:12] + b"\x07exam") is None  # a name cut short
    assert refused(query()[:12] + b"\xc0\x0c" + b"\0" * 4) is None  # a pointer
    assert refused(query()[:12] + b"\x00\x00") is None  # type and class cut short
