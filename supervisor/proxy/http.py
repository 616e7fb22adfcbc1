"""The HTTP proxy: CONNECT tunnels and absolute-URI requests, parsed with h11.

One request per connection, and the proxy says so (`Connection: close`): the sandbox's
clients open a connection per request, which keeps each decision tied to the one name it
was made for. CONNECT is answered 200 and becomes a byte relay; an absolute-URI request
(`GET http://host/path`) goes upstream in origin form with `Connection: close`, the
hop-by-hop headers dropped and `Host` set from the URL. Its response's head comes back
the same way (hop-by-hop headers dropped, `Connection: close`), and its body as the
server framed it, relayed like a tunnel's bytes until the server closes, as it was asked
to; only an HTTP/1.0 client's chunked answer is re-framed, through h11. A name not allowed
gets 403 before anything is looked up; an allowed name whose every address the guard
refuses gets 403 naming the address; one that does not resolve or answer gets 502 (504
on a timeout).
"""

from __future__ import annotations

from urllib.parse import urlsplit

import anyio
import anyio.abc
import h11

from ..hostnames import parse_port, split_host_port
from .relay import relay, relay_one_way
from .streams import CHUNK, RawStream
from .upstream import Gate, Refused, Unreachable

MAX_HEAD = 65536
HEAD_TIMEOUT = 60.0

# Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: never passed on.
_HOP_BY_HOP = frozenset({
    b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization",
    b"proxy-authenticate", b"te", b"trailer", b"upgrade",
})

_REASONS = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway", 504: "Gateway Timeout"}


class BadRequest(Exception):
    """A request the proxy cannot serve; the text goes back in a 400."""


async def handle(stream: RawStream, gate: Gate) -> None:
    """Serve one connection from the sandbox."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    try:
        with anyio.fail_after(HEAD_TIMEOUT):
            event = await _next_event(conn, stream)
    except h11.RemoteProtocolError as err:
        await _respond(stream, err.error_status_hint, f"bad request: {err}")
        return
    except TimeoutError:
        return
    if not isinstance(event, h11.Request):
        return
    try:
        if event.method == b"CONNECT":
            await _tunnel(stream, conn, event, gate)
        else:
            await _forward(stream, conn, event, gate)
    except BadRequest as err:
        await _respond(stream, 400, str(err))
    except Refused as err:
        await _respond(stream, 403, err.text)
    except Unreachable as err:
        await _respond(stream, 504 if err.kind == "timeout" else 502, f"cannot reach {err}")


async def _tunnel(stream: RawStream, conn: h11.Connection, request: h11.Request,
                  gate: Gate) -> None:
    host, port = split_authority(request.target.decode("ascii", "replace"), default=None)
    upstream = await gate.open(host, port, stream)
    async with upstream:
        stream.buffer = bytes(conn.trailing_data[0])  # sent right behind the CONNECT
        await stream.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await relay(stream, upstream)


async def _forward(stream: RawStream, conn: h11.Connection,
                   request: h11.Request, gate: Gate) -> None:
    target = request.target.decode("ascii", "replace")
    if target.startswith("/"):
        raise BadRequest("this is a proxy: ask for an absolute URL (http://host/path)")
    parts = urlsplit(target)
    if parts.scheme != "http":
        raise BadRequest(f"{parts.scheme or 'no'} scheme: only http:// URLs are forwarded; "
                         "https goes through CONNECT")
    host, port = split_authority(parts.netloc.rpartition("@")[2], default=80)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    headers = _end_to_end(request.headers)
    authority = f"[{host}]" if ":" in host else host
    headers = [(b"host", (authority if port == 80 else f"{authority}:{port}").encode()),
               *((k, v) for k, v in headers if k != b"host"), (b"connection", b"close")]
    upstream = await gate.open(host, port, stream)
    async with upstream:
        out = h11.Connection(h11.CLIENT)
        pending = out.send(h11.Request(method=request.method, target=path,
                                       headers=headers)) or b""
        while True:  # the request's body, re-framed by h11; one send where it is all here
            event = await _next_event(conn, stream)
            if isinstance(event, h11.Data):
                await upstream.send(pending + (out.send(event) or b""))
                pending = b""
            elif isinstance(event, h11.EndOfMessage):
                await upstream.send(pending + (out.send(h11.EndOfMessage()) or b""))
                break
            else:
                return
        if request.http_version == b"1.0":
            await _answer(stream, conn, upstream, out)
        else:
            await _pass_back(stream, upstream, out, request.method)


async def _pass_back(stream: RawStream, upstream: RawStream, out: h11.Connection,
                     method: bytes) -> None:
    """The response's head rewritten, its body relayed as it comes: as many bytes as its
    Content-Length says, else until the server or the client closes."""
    while True:
        head = await _read_head(upstream)
        if head is None:
            await _respond(stream, 502, "the server closed without an answer")
            return
        out.receive_data(head)
        try:
            event = out.next_event()
        except h11.RemoteProtocolError as err:
            await _respond(stream, 502, f"the server's answer is not HTTP: {err}")
            return
        if isinstance(event, h11.InformationalResponse):
            if event.status_code != 101:
                await stream.send(_head(event.status_code, event.reason, event.headers,
                                        close=False))
            continue
        if not isinstance(event, h11.Response):
            await _respond(stream, 502, "the server's answer is not HTTP")
            return
        head = _head(event.status_code, event.reason, event.headers, close=True)
        length = _body_length(event, method)
        if length is not None and len(upstream.buffer) >= length:
            # The whole body came with the head (a small answer): one send, no relay.
            await stream.send(head + upstream.buffer[:length])
            return
        await stream.send(head)
        await relay_one_way(upstream, stream, length)
        return


def _body_length(response: h11.Response, method: bytes) -> int | None:
    """How many bytes the response's body is, where its head says (RFC 9112 6.3)."""
    if method == b"HEAD" or response.status_code in (204, 304):
        return 0
    lengths = set()
    for name, value in response.headers:
        if name == b"transfer-encoding":
            return None
        if name == b"content-length":
            lengths.add(value)
    if len(lengths) == 1:
        (value,) = lengths
        if value.isdigit():
            return int(value)
    return None


async def _read_head(upstream: RawStream) -> bytes | None:
    """Bytes up to the end of one response head; what follows stays in its buffer."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            return None
        try:
            data += await upstream.receive(CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return None
    head, _, rest = data.partition(b"\r\n\r\n")
    upstream.buffer = rest + upstream.buffer
    return head + b"\r\n\r\n"


def _head(status: int, reason: bytes, headers: h11._headers.Headers, *,
          close: bool) -> bytes:
    lines = [b"HTTP/1.1 %d %s" % (status, reason)]
    lines += [name + b": " + value for name, value in _end_to_end(headers)]
    if close:
        lines.append(b"connection: close")
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def _answer(stream: anyio.abc.ByteStream, conn: h11.Connection,
                  upstream: anyio.abc.ByteStream, out: h11.Connection) -> None:
    """Pass the upstream's response back re-framed for an HTTP/1.0 client, closing after
    it (a chunked answer cannot go to it as it is)."""
    started = False
    try:
        while True:
            event = await _next_event(out, upstream)
            if isinstance(event, h11.InformationalResponse):
                if event.status_code != 101:
                    await stream.send(conn.send(event) or b"")
            elif isinstance(event, h11.Response):
                headers = [*_end_to_end(event.headers), (b"connection", b"close")]
                started = True
                await stream.send(conn.send(h11.Response(
                    status_code=event.status_code, headers=headers, reason=event.reason,
                    http_version=b"1.1")) or b"")
            elif isinstance(event, h11.Data):
                await stream.send(conn.send(event) or b"")
            elif isinstance(event, h11.EndOfMessage):
                await stream.send(conn.send(h11.EndOfMessage()) or b"")
                return
            else:
                return
    except h11.RemoteProtocolError as err:
        if not started:
            await _respond(stream, 502, f"the server's answer is not HTTP: {err}")


def _end_to_end(headers: list[tuple[bytes, bytes]] | h11._headers.Headers) -> list[
        tuple[bytes, bytes]]:
    named: set[bytes] = set()
    for name, value in headers:
        if name == b"connection":
            named |= {token.strip().lower() for token in value.split(b",")}
    return [(name, value) for name, value in headers
            if name not in _HOP_BY_HOP and name not in named]


def split_authority(text: str, *, default: int | None) -> tuple[str, int]:
    """`host:port` or `[v6]:port` into its parts; BadRequest when malformed."""
    try:
        host, port_text = split_host_port(text)
        if ":" in host and not text.startswith("["):
            raise ValueError("put an IPv6 address in brackets")
        if not host:
            raise ValueError("no host given")
        if port_text:
            return host, parse_port(port_text)
        if default is None:
            raise ValueError("no port given")
        return host, default
    except ValueError as err:
        raise BadRequest(f"{text!r}: {err}") from None


async def _next_event(conn: h11.Connection, stream: anyio.abc.ByteStream) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        try:
            data = await stream.receive(CHUNK)
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            data = b""
        conn.receive_data(data)


async def _respond(stream: anyio.abc.ByteStream, status: int, text: str) -> None:
    body = f"lnk-sandbox: {text}\n".encode("utf-8", "replace")
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
            "Content-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    try:
        await stream.send(head.encode() + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
