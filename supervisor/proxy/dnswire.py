"""DNS's wire format: questions out of the sandbox's queries, answers into replies.

Only the format (dnspython); whether a name is answered, and with which addresses, is
`names.py`'s. A query that cannot be read is answered FORMERR (or dropped when not even
its header is there); anything but one IN-class question of a standard query is refused
without a decision: no name of it is ever looked up.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import dns.exception
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

TTL = 30
MAX_ADDRESSES = 16
UDP_LIMIT = 512  # without EDNS, a UDP reply larger than this is truncated (TC)


@dataclass(frozen=True)
class Question:
    """One query's question: the name as asked (no final dot) and its type number."""

    query: dns.message.Message
    name: str
    rdtype: int


def read_query(wire: bytes) -> Question | bytes | None:
    """The question to ask the supervisor, or a reply to send at once, or None (drop)."""
    try:
        query = dns.message.from_wire(wire)
    except dns.exception.DNSException:
        return _formerr(wire)
    except Exception:  # dnspython raises plain errors on some malformed input
        return _formerr(wire)
    if query.flags & dns.flags.QR:
        return None  # a response sent to us: never answer one
    if query.opcode() != dns.opcode.QUERY or len(query.question) != 1:
        return _reply(query, dns.rcode.NOTIMP)
    question = query.question[0]
    if question.rdclass != dns.rdataclass.IN:
        return _reply(query, dns.rcode.REFUSED)
    name = question.name.to_text(omit_final_dot=True)
    return Question(query, name, int(question.rdtype))


def answer(question: Question, rcode: str, addresses: list[str], *, udp: bool) -> bytes:
    """The reply: the supervisor's rcode, and its addresses as A or AAAA records."""
    code = dns.rcode.from_text(rcode) if rcode in _RCODES else dns.rcode.SERVFAIL
    response = dns.message.make_response(question.query)
    response.flags |= dns.flags.RA
    response.set_rcode(code)
    if code == dns.rcode.NOERROR and question.rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA):
        version = 4 if question.rdtype == dns.rdatatype.A else 6
        wanted = []
        for text in addresses:
            try:
                if ipaddress.ip_address(text).version == version:
                    wanted.append(text)
            except ValueError:
                continue
        if wanted:
            rrset = dns.rrset.from_text_list(question.query.question[0].name, TTL, "IN",
                                             dns.rdatatype.to_text(dns.rdatatype.RdataType.make(question.rdtype)),
                                             wanted[:MAX_ADDRESSES])
            response.answer.append(rrset)
    limit = _udp_limit(question.query) if udp else 65535
    try:
        return response.to_wire(max_size=limit)
    except dns.exception.TooBig:
        response.answer.clear()
        response.flags |= dns.flags.TC
        return response.to_wire()


_RCODES = frozenset({"NOERROR", "REFUSED", "NXDOMAIN", "SERVFAIL"})


def _udp_limit(query: dns.message.Message) -> int:
    return max(UDP_LIMIT, query.payload) if query.edns >= 0 else UDP_LIMIT


def _reply(query: dns.message.Message, rcode: dns.rcode.Rcode) -> bytes:
    response = dns.message.make_response(query)
    response.set_rcode(rcode)
    return response.to_wire()


def _formerr(wire: bytes) -> bytes | None:
    """FORMERR with the query's id, or None when there is no whole header to answer."""
    if len(wire) < 12 or wire[2] & 0x80:
        return None
    # id, flags (QR set, opcode kept, RD kept), rcode FORMERR, no sections.
    flags = 0x8000 | (wire[2] & 0x79) << 8 | dns.rcode.FORMERR
    return wire[:2] + flags.to_bytes(2, "big") + bytes(8)
