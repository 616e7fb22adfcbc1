"""`[network] allow` patterns: what they accept, what they refuse, what they match."""

from __future__ import annotations

import pytest

from supervisor.hostnames import (
    HostPattern,
    HostPatternError,
    normalize_host,
    parse_host_pattern,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pypi.org", HostPattern("pypi.org", "pypi.org", False, None, None)),
        ("PyPI.Org.", HostPattern("PyPI.Org.", "pypi.org", False, None, None)),
        ("pypi.org:443", HostPattern("pypi.org:443", "pypi.org", False, 443, None)),
        ("*.githubusercontent.com",
         HostPattern("*.githubusercontent.com", "githubusercontent.com", True, None, None)),
        ("*.s3.amazonaws.com:443",
         HostPattern("*.s3.amazonaws.com:443", "s3.amazonaws.com", True, 443, None)),
        ("*.example.co.uk", HostPattern("*.example.co.uk", "example.co.uk", True, None, None)),
        ("localhost", HostPattern("localhost", "localhost", False, None, None)),
        ("localhost:8080", HostPattern("localhost:8080", "localhost", False, 8080, None)),
        ("my_host.internal", HostPattern("my_host.internal", "my_host.internal", False, None,
                                         None)),
        ("xn--bcher-kva.de", HostPattern("xn--bcher-kva.de", "xn--bcher-kva.de", False, None,
                                         None)),
        ("10.0.0.1", HostPattern("10.0.0.1", "10.0.0.1", False, None, "10.0.0.1")),
        ("10.0.0.1:65535", HostPattern("10.0.0.1:65535", "10.0.0.1", False, 65535, "10.0.0.1")),
        ("::1", HostPattern("::1", "::1", False, None, "::1")),
        ("[::1]", HostPattern("[::1]", "::1", False, None, "::1")),
        ("[2001:DB8::1]:8443",
         HostPattern("[2001:DB8::1]:8443", "2001:db8::1", False, 8443, "2001:db8::1")),
        ("2001:db8:0:0::1", HostPattern("2001:db8:0:0::1", "2001:db8::1", False, None,
                                        "2001:db8::1")),
    ],
)
def test_accepted_patterns(text: str, expected: HostPattern) -> None:
    assert parse_host_pattern(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "a pattern must be a non-empty name without spaces"),
        (" pypi.org", "a pattern must be a non-empty name without spaces"),
        ("pypi.org ", "a pattern must be a non-empty name without spaces"),
        ("*", "'*' alone opens every name; list the names the command needs"),
        ("*:443", "'*' alone opens every name; list the names the command needs"),
        ("*pypi.org", "'*' alone opens every name; list the names the command needs"),
        ("*.com", "'*.com' opens a whole top-level domain; name the domains inside it"),
        ("*.COM.", "'*.com' opens a whole top-level domain; name the domains inside it"),
        ("*.co.uk", "'*.co.uk' opens a suffix anyone can register under; name the domains "
         "inside it"),
        ("*.github.io", "'*.github.io' opens a suffix anyone can register under; name the "
         "domains inside it"),
        ("*.amazonaws.com", "'*.amazonaws.com' opens a suffix anyone can register under; "
         "name the domains inside it"),
        ("a.*.example.com", "a wildcard may only be the first label, as in '*.example.com'"),
        ("*.*.example.com", "a wildcard may only be the first label, as in '*.example.com'"),
        ("com", "'com' is a bare top-level domain, not a host"),
        ("pypi..org", "'pypi..org' is not a valid host name"),
        ("-pypi.org", "'-pypi.org' is not a valid host name"),
        ("pypi-.org", "'pypi-.org' is not a valid host name"),
        ("py pi.org", "'py pi.org' is not a valid host name"),
        ("bücher.de", "'bücher.de' is not a valid host name"),
        ("a" * 64 + ".org", f"'{'a' * 64}.org' is not a valid host name"),
        (":443", "'' is not a valid host name"),
        ("pypi.org:", "port '' is not a number from 1 to 65535"),
        ("pypi.org:0", "port '0' is not a number from 1 to 65535"),
        ("pypi.org:65536", "port '65536' is not a number from 1 to 65535"),
        ("pypi.org:-1", "port '-1' is not a number from 1 to 65535"),
        ("pypi.org:https", "port 'https' is not a number from 1 to 65535"),
        ("[::1", "an IPv6 address in brackets lacks its ']'"),
        ("[::1]443", "only ':PORT' may follow a bracketed address"),
        ("[::1]:0", "port '0' is not a number from 1 to 65535"),
    ],
)
def test_refused_patterns(text: str, message: str) -> None:
    with pytest.raises(HostPatternError) as caught:
        parse_host_pattern(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("pattern", "host", "port", "expected"),
    [
        ("pypi.org", "pypi.org", 443, True),
        ("pypi.org", "PYPI.ORG.", 80, True),
        ("pypi.org", "files.pypi.org", 443, False),
        ("pypi.org", "pypi.org.evil.com", 443, False),
        ("pypi.org", "evilpypi.org", 443, False),
        ("pypi.org:443", "pypi.org", 443, True),
        ("pypi.org:443", "pypi.org", 80, False),
        ("*.githubusercontent.com", "raw.githubusercontent.com", 443, True),
        ("*.githubusercontent.com", "a.b.githubusercontent.com", 443, True),
        ("*.githubusercontent.com", "githubusercontent.com", 443, False),
        ("*.githubusercontent.com", "evilgithubusercontent.com", 443, False),
        ("*.githubusercontent.com", "githubusercontent.com.evil.org", 443, False),
        ("10.0.0.1", "10.0.0.1", 22, True),
        ("10.0.0.1", "10.0.0.2", 22, False),
        ("10.0.0.1", "010.0.0.1", 22, False),
        ("10.0.0.1:22", "10.0.0.1", 23, False),
        ("::1", "[::1]", 80, True),
        ("::1", "0:0:0:0:0:0:0:1", 80, True),
        ("::1", "localhost", 80, False),
        ("[2001:db8::1]:8443", "[2001:DB8:0::1]", 8443, True),
        ("localhost", "localhost", 1, True),
        ("localhost", "127.0.0.1", 1, False),
    ],
)
def test_matches(pattern: str, host: str, port: int, expected: bool) -> None:
    assert parse_host_pattern(pattern).matches(host, port) is expected


@pytest.mark.parametrize(
    ("host", "normalized"),
    [
        ("PyPI.org", "pypi.org"),
        ("pypi.org.", "pypi.org"),
        (" pypi.org ", "pypi.org"),
        ("[::1]", "::1"),
        ("[::1", "[::1"),
        ("", ""),
    ],
)
def test_normalize_host(host: str, normalized: str) -> None:
    assert normalize_host(host) == normalized


def test_the_error_is_a_value_error() -> None:
    # spec.py catches HostPatternError; anything else escaping would be a crash there.
    assert issubclass(HostPatternError, ValueError)
