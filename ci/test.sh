#!/bin/sh
# The test command: set up (ci/setup.sh), check style and types, run every test tier.
# Run it as root to test both ways a person runs lnk-sandbox: root mode, and an
# unprivileged user the tests create (lnk-test) and run through. Under CI=true a test
# that would skip for a missing capability fails instead.
set -eu
cd "$(dirname "$0")/.."
ci/setup.sh
.venv/bin/ruff check supervisor inner netns_helper lnk_sandbox tests benchmarks tools
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
