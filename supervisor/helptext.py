"""The command line's help: what each command is for, an example of each, and the spec's
format, so that `lnk sandbox --help` alone is enough to write a first spec.

Plain text only; cli.py hands it to argparse. tests/unit/test_cli_help.py parses
SPEC_FORMAT as a spec, so the format shown here cannot drift from what is accepted.
"""

from __future__ import annotations

DESCRIPTION = """\
Run a command confined by a spec: it sees only the files the spec grants, runs only the
programs the spec lists, and reaches the network only as the spec says. Without --spec,
the embedded default applies: the working directory writable (its dot files read-only),
the system folders readable, no network, any program."""

SPEC_FORMAT = """\
agent = "coder"             # its own folder in $LNK_HOME; every other agent's is hidden
session = "2026-11-30-a"    # reopens $LNK_HOME/sessions/ID read-write

[files]
read  = ["~/data"]          # read-only (the system folders are always readable)
write = ["."]               # read-write; "." is the working directory
hide  = ["~/data/secret"]   # closed whatever else is open
write_dot_files = ["./.env"]  # a written folder whose dot files stay writable, or one of them
commit = ["."]              # git may commit (and git init) there; what git runs stays read-only
caches = ["~/.npm"]         # a private cache of lnk-sandbox's own, kept across runs

[commands]
programs = ["git", "python3"]  # absent: any program; []: none (lnk sandbox learn finds them)

[network]
mode  = "proxy"             # "none" (the default), "proxy" or "host"
allow = ["pypi.org", "*.pythonhosted.org"]  # proxy mode: the host names reachable
deny  = ["upload.pypi.org"]  # proxy mode: refused even where allow matches
forward = [5432]            # the host's 127.0.0.1:5432 at the sandbox's own (none, proxy)
expose  = [3000]            # the sandbox's port 3000 at the host's 127.0.0.1 (none, proxy)
unix  = ["$SSH_AUTH_SOCK"]  # the path sockets it may reach (absent: those under its grants)

[env]
keep = ["PATH", "HOME", "LANG", "TERM"]
set  = { PIP_NO_INPUT = "1" }

[limits]                    # absent: the defaults; "none" lifts one
pids = 4096                 # processes and threads at once
memory = "4G"               # what its processes, /tmp and /dev/shm hold
tmp = "1G"                  # the size of its own /tmp
shm = "512M"                # the size of its own /dev/shm
files = 65536               # open files per process
cpu = "10m"                 # CPU time per process (default: none)
timeout = "2h"              # wall-clock time of the whole run (exit 124)"""

EPILOG = f"""\
examples:
  lnk sandbox run -- make test
  lnk sandbox run --spec agent.toml --yes --report refusals.jsonl -- pytest -q
  lnk sandbox learn --spec build.toml -- ./build.sh
  lnk sandbox check --spec agent.toml

the spec (TOML; every key is optional, and an absent one is the least that still does
the job; an unknown key is an error):

{SPEC_FORMAT}

exit status: the command's own; 128+N when it died of signal N; 125 when lnk-sandbox
itself refused or failed (the message says what to change); 126 when the command could
not be run (refused by [commands], or not executable); 127 when it was not found.
lnk-sandbox keeps what it remembers in $LNK_HOME (~/.lnk by default), which no sandbox
sees. Each command's --help has an example; README.md has the whole reference."""

# Per command: (what it does, an example with what the example does).
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run a command in a sandbox",
            "lnk sandbox run --spec agent.toml -- pytest -q\n"
            "  runs pytest confined by agent.toml (asked about once at a terminal, or\n"
            "  allowed with --yes); lnk sandbox run -- make test uses the default spec"),
    "learn": ("run once with every program open; print the [commands] table for what ran",
              "lnk sandbox learn --spec build.toml --output programs.toml -- make\n"
              "  runs make under build.toml's other grants and writes the [commands] table\n"
              "  of the programs it ran to programs.toml (to stderr without --output)"),
    "check": ("what this machine enforces for a spec, and whether it can launch here",
              "lnk sandbox check --spec agent.toml\n"
              "  exits 0 when the spec can launch here, 1 when not, and says why"),
    "plan": ("print the mount plan and bwrap's arguments, or the macOS profile",
             "lnk sandbox plan --spec agent.toml -- pytest\n"
             "  shows every mount in order, each with the rule that asked for it"),
    "describe": ("what a person is asked to allow",
                 "lnk sandbox describe --spec agent.toml --json\n"
                 "  every grant by its name and the folder it resolved to"),
    "wrap": ("check now, and print a command line that runs it later",
             "lnk sandbox wrap --spec agent.toml --yes -- ./nightly.sh\n"
             "  prints `lnk-sandbox exec ID -- ./nightly.sh`, for a service to run later"),
    "exec": ("run a command wrapped before (what wrap prints)",
             "lnk-sandbox exec 3f2a... -- ./nightly.sh\n"
             "  runs it under the grants resolved when it was wrapped, never resolved again"),
    "allow": ("allow a spec ahead of time, for a folder and every folder inside it",
              "lnk sandbox allow --spec agent.toml --for ~/src\n"
              "  shows what agent.toml allows and asks once; then a client with no terminal\n"
              "  (an MCP server, Claude Code's prefix) runs it in ~/src or any folder inside"),
    "cache": ("empty the private caches of a spec ([files] caches)",
              "lnk sandbox cache clear --spec agent.toml\n"
              "  empties agent.toml's caches (its agent's, when it names one); --all\n"
              "  empties every spec's"),
}


def epilog(command: str) -> str:
    """A command's --help epilog: its example, and where the spec's format is."""
    example = COMMANDS[command][1]
    return (f"example:\n  {example}\n\nthe spec's format: `lnk sandbox --help` shows every "
            "key;\nREADME.md, \"The spec (TOML)\", is the whole reference")
