"""The `log stream` parser against every verbatim Seatbelt line the project's reference
quotes (ndjson messages and records, compact and `log show` lines, `(with report)` allow
lines, duplicate reports), and against malformed and cut-off lines: ignored, never a
crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from supervisor.macos.logparse import (
    KERNEL_IMAGE,
    SANDBOX_SENDER,
    Report,
    parse_line,
    parse_message,
    parse_record,
)


def kernel(message: object, **changes: object) -> str:
    """An ndjson record as the kernel's Sandbox extension logs one, with `changes`."""
    record: dict[str, object] = {"processID": 0, "userID": 0, "processImagePath": KERNEL_IMAGE,
                                 "senderImagePath": SANDBOX_SENDER, "messageType": "Error",
                                 "eventMessage": message}
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v is not DROP})


DROP = object()

# eventMessage values, verbatim (the reference's fixture lines, its notes left out).
MESSAGES = {
    "Sandbox: sandbox-exec(38493) deny(1) process-exec* /Users/achyland/Desktop/VM-BRIDGE/"
    "SANDBOX_LORE/book/experiments/shrink-trace/out/sandbox_target":
        Report("sandbox-exec", 38493, "deny", "process-exec*",
               "/Users/achyland/Desktop/VM-BRIDGE/SANDBOX_LORE/book/experiments/shrink-trace/"
               "out/sandbox_target"),
    "Sandbox: sandbox_target(60680) deny(1) network-outbound remote:*:2000":
        Report("sandbox_target", 60680, "deny", "network-outbound", "remote:*:2000"),
    "Sandbox: mlhostd(79785) deny(1) mach-lookup com.apple.SystemConfiguration.configd":
        Report("mlhostd", 79785, "deny", "mach-lookup",
               "com.apple.SystemConfiguration.configd"),
    "4 duplicate reports for Sandbox: sandbox_target(60680) deny(1) ipc-posix-shm-read-data "
    "apple.shm.notification_center":
        Report("sandbox_target", 60680, "deny", "ipc-posix-shm-read-data",
               "apple.shm.notification_center", repeats=4),
    "Sandbox: touch(1234) deny(1) file-write-create /private/tmp/nope":
        Report("touch", 1234, "deny", "file-write-create", "/private/tmp/nope"),
    "Sandbox: cat(96728) deny(1) file-read-data /private/var/folders/…/forbidden/read.txt":
        Report("cat", 96728, "deny", "file-read-data",
               "/private/var/folders/…/forbidden/read.txt"),
    "Sandbox: bash(96731) deny(1) file-write-create …/forbidden/write.txt":
        Report("bash", 96731, "deny", "file-write-create", "…/forbidden/write.txt"),
    "Sandbox: codex(14485) deny(1) mach-lookup com.apple.logd":
        Report("codex", 14485, "deny", "mach-lookup", "com.apple.logd"),
    "3 duplicate reports for Sandbox: git(5678) deny(1) file-read-data /etc/gitconfig":
        Report("git", 5678, "deny", "file-read-data", "/etc/gitconfig", repeats=3),
    # (with report) allow lines, macOS 15.7.7
    "Sandbox: curl(38711) allow network-outbound /private/var/run/mDNSResponder":
        Report("curl", 38711, "allow", "network-outbound", "/private/var/run/mDNSResponder"),
    "Sandbox: curl(38711) allow network-outbound remote:*:443":
        Report("curl", 38711, "allow", "network-outbound", "remote:*:443"),
    "Sandbox: Python(44431) allow network-inbound local:*:57793":
        Report("Python", 44431, "allow", "network-inbound", "local:*:57793"),
}

# A whole ndjson record, verbatim (Protonk iter_1.log).
RECORD = (
    '{"timezoneName":"","messageType":"Error","eventType":"logEvent","source":null,'
    '"formatString":"%s","userID":0,"activityIdentifier":0,"subsystem":"","category":"",'
    '"threadID":20159157,"senderImageUUID":"274C4541-1E1C-3002-9418-7532DA123B8B",'
    '"backtrace":{"frames":[{"imageOffset":149364,"imageUUID":"274C4541-1E1C-3002-9418-'
    '7532DA123B8B"}]},"bootUUID":"","processImagePath":"\\/kernel","senderImagePath":'
    '"\\/System\\/Library\\/Extensions\\/Sandbox.kext\\/Contents\\/MacOS\\/Sandbox",'
    '"timestamp":"2025-12-24 17:30:40.717646-0800","machTimestamp":80443284535391,'
    '"eventMessage":"Sandbox: sandbox-exec(38493) deny(1) process-exec* \\/Users\\/achyland'
    '\\/Desktop\\/VM-BRIDGE\\/SANDBOX_LORE\\/book\\/experiments\\/shrink-trace\\/out\\/'
    'sandbox_target","processImageUUID":"81DAE146-7A58-3A72-839B-E0840E1CC03A","traceID":'
    '639168443584516,"processID":0,"senderProgramCounter":149364,'
    '"parentActivityIdentifier":0}'
)

# compact and `log show` default lines, verbatim; the third is the first line of a
# two-line message (sandbox-runtime's tag follows on its own line).
LINES = {
    "2026-03-05 21:26:41.625 E  kernel[0:1fa47b2] (Sandbox) Sandbox: cat(63674) deny(1) "
    "file-read-data /private/etc/hosts":
        Report("cat", 63674, "deny", "file-read-data", "/private/etc/hosts"),
    "2026-09-10 13:06:05.618 E  kernel[0:4c65736] (Sandbox) Sandbox: security(89425) "
    "deny(1) mach-lookup com.apple.SecurityServer":
        Report("security", 89425, "deny", "mach-lookup", "com.apple.SecurityServer"),
    "2026-09-23 04:27:07.182 E  kernel[0:2b6708] (Sandbox) Sandbox: curl(53468) deny(1) "
    "network-outbound <detail>":
        Report("curl", 53468, "deny", "network-outbound", "<detail>"),
    "2026-02-19 22:02:53.228416+0300 0xc912c6   Error       0x0                  0      0"
    "    kernel: (Sandbox) Sandbox: mobileassetd(45396) deny(1) file-write-create "
    "/private/var/run/bootSessionMA.txt":
        Report("mobileassetd", 45396, "deny", "file-write-create",
               "/private/var/run/bootSessionMA.txt"),
}

NOT_REPORTS = [
    "CMD64_c2g=_END__qlvxb5sax_SBX",
    'Filtering the log data using "processID == 0"',
    "2025-12-24 17:30:40.7 Df kernel[0:1] (Sandbox) Sandbox apply: sandbox-exec[38493] 9876",
    "2025-12-24 17:30:40.7 E  kernel[0:1] (Sandbox) System Policy: deny(1) file-read-data /x",
    # text that looks like a report, logged by a process that is not the kernel
    "2026-03-05 21:26:41.625 E  evil[1:2] (evil) kernel: (Sandbox) Sandbox: cat(6) deny(1) "
    "process-exec* /x",
    # a program named `kernel`, with a pid of its own, in both plain styles
    "2026-03-05 21:26:41.625 E  kernel[4242:1fa47b2] (Sandbox) Sandbox: cat(6) deny(1) "
    "process-exec* /x",
    "2026-02-19 22:02:53.228416+0300 0xc912c6   Error       0x0                  4242   0"
    "    kernel: (Sandbox) Sandbox: cat(6) deny(1) process-exec* /x",
    '{"processID":4242,"eventMessage":"Sandbox: cat(6) deny(1) process-exec* /x"}',
    "",
    "\n",
    "Sandbox: cat(63674) deny(1) file-read-data /private/etc/hosts",  # no sender: not a line
]


@pytest.mark.parametrize("message", sorted(MESSAGES))
def test_each_reference_message_parses_exactly(message: str) -> None:
    assert parse_message(message) == MESSAGES[message]
    assert parse_line(kernel(message) + "\n") == MESSAGES[message]


def test_the_whole_ndjson_record_parses() -> None:
    report = parse_line(RECORD)
    assert report == MESSAGES[next(iter(MESSAGES))]
    assert report is not None and report.program == report.target


@pytest.mark.parametrize("line", sorted(LINES))
def test_each_compact_line_parses_exactly(line: str) -> None:
    assert parse_line(line) == LINES[line]


@pytest.mark.parametrize("line", NOT_REPORTS)
def test_what_is_not_a_report_is_ignored(line: str) -> None:
    assert parse_line(line) is None


def test_the_ready_line_is_no_report() -> None:
    assert parse_line('Filtering the log data using "(((processID == 0) AND ...)"') is None


def test_only_the_first_line_of_a_message_counts() -> None:
    message = ("Sandbox: curl(53468) deny(1) network-outbound <detail>\n"
               "CMD64_c2g=_END__qlvxb5sax_SBX")
    assert parse_message(message) == Report("curl", 53468, "deny", "network-outbound",
                                            "<detail>")


def test_program_names_only_an_exec_of_a_path() -> None:
    assert parse_message("Sandbox: sh(9) deny(1) process-exec* /usr/bin/curl") is not None
    assert Report("sh", 9, "deny", "process-exec*", "/usr/bin/curl").program == "/usr/bin/curl"
    assert Report("sh", 9, "deny", "process-exec", "/bin/ls").program == "/bin/ls"
    assert Report("sh", 9, "deny", "process-exec*", "").program is None
    assert Report("sh", 9, "deny", "file-read-data", "/usr/bin/curl").program is None


def test_names_with_parentheses_and_spaces_keep_their_pid() -> None:
    report = parse_message("Sandbox: Google Chrome (He(99) deny(1) process-exec* /a b/c")
    assert report == Report("Google Chrome (He", 99, "deny", "process-exec*", "/a b/c")


def test_every_cut_of_every_ndjson_line_is_ignored() -> None:
    lines = [RECORD, *(kernel(m) for m in MESSAGES)]
    for line in lines:
        for end in range(len(line)):
            assert parse_line(line[:end]) is None, line[:end]


def test_cut_compact_lines_never_crash_and_never_invent_a_pid() -> None:
    for line, whole in LINES.items():
        for end in range(len(line)):
            report = parse_line(line[:end])
            assert report is None or (report.pid == whole.pid and report.comm == whole.comm)


MALFORMED = [
    "Sandbox: cat(", "Sandbox: cat(12", "Sandbox: cat(12) deny(", "Sandbox: cat(12) deny(1)",
    "Sandbox: (12) deny(1) file-read-data /x", "Sandbox: cat(-1) deny(1) process-exec* /x",
    "Sandbox: cat(12) permit(1) process-exec* /x", "Sandbox: cat(12) deny(1)  /x",
    "Sandbox: cat(" + "9" * 5000 + ") deny(1) process-exec* /x",
    "9" * 5000 + " duplicate reports for Sandbox: cat(1) deny(1) process-exec* /x",
    "Sandbox: cat(12) deny(" + "1" * 5000 + ") process-exec* /x",
]


@pytest.mark.parametrize("message", MALFORMED)
def test_malformed_messages_are_ignored(message: str) -> None:
    assert parse_message(message) is None
    assert parse_line(kernel(message)) is None


@pytest.mark.parametrize("line", [
    "{", "{}", "[]", "null", '{"eventMessage": 5}', '{"eventMessage": null}',
    '{"eventMessage": ["Sandbox: a(1) deny(1) process-exec* /x"]}',
    '{"processID": "0", "eventMessage": "Sandbox: a(1) deny(1) process-exec* /x"}',
    "[" * 100_000, '{"a":' * 50_000, "\udcff\x00{}",
])
def test_malformed_records_are_ignored(line: str) -> None:
    assert parse_line(line) is None


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_any_text_gives_a_report_or_none(text: str) -> None:
    result = parse_line(text)
    assert result is None or isinstance(result, Report)
    result = parse_message(text)
    assert result is None or isinstance(result, Report)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
                    max_leaves=20))
def test_any_json_value_gives_a_report_or_none(value: object) -> None:
    for candidate in (json.dumps(value), kernel(value)):
        result = parse_line(candidate)
        assert result is None or isinstance(result, Report)


def test_a_long_line_without_a_report_is_quick() -> None:
    import time

    start = time.monotonic()
    for line in ("x " * 50_000, "a[ " * 30_000, "kernel: " * 20_000, "Sandbox: a(" * 20_000):
        assert parse_line(line) is None
    assert time.monotonic() - start < 2.0


FORGED = "Sandbox: sh(4242) allow process-exec* /usr/bin/osascript"


@pytest.mark.parametrize("changes", [
    # any process may log under the reporting subsystem, with its own pid
    {"processID": 4242, "subsystem": "com.apple.sandbox.reporting"},
    {"processID": DROP},
    {"processID": DROP, "subsystem": "com.apple.sandbox.reporting"},
    {"processID": False},
    {"processID": "0"},
    {"processID": 0.0},
    {"userID": 501},
    {"userID": DROP},
    {"senderImagePath": "/tmp/sandbox-helper"},
    {"senderImagePath": "/tmp/x/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox"},
    {"senderImagePath": DROP},
    {"processImagePath": "/usr/bin/logger"},
    {"processImagePath": DROP},
], ids=repr)
def test_a_record_the_kernel_did_not_log_is_never_a_report(changes: dict[str, object]) -> None:
    """A sandboxed program can os_log a line that looks like a report (review 10): only
    the four fields the logging system stamps tell it from the kernel's."""
    assert parse_line(kernel(FORGED)) == Report("sh", 4242, "allow", "process-exec*",
                                                "/usr/bin/osascript")
    assert parse_line(kernel(FORGED, **changes)) is None
    assert parse_record(kernel(FORGED, **changes)) is None
