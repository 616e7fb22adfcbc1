#!/bin/sh
# The test command: set up (ci/setup.sh --test), check style and types, run every test tier.
# Run it as root to test both ways a person runs lnk-sandbox: root mode, and an
# unprivileged user the tests create (lnk-test) and run through. Under CI=true a test
# that would skip for a missing capability fails instead.
#
# lnk-sandbox is installed from a wheel of this checkout (ci/setup.sh), and pytest runs
# with -P, so that the tests import and start the installed copy, never the checkout's
# folders beside it: what passes is what `pip install .` gives a person.
set -eu
cd "$(dirname "$0")/.."
ci/setup.sh --test
.venv/bin/ruff check supervisor inner netns_helper lnk_sandbox tests benchmarks tools
.venv/bin/mypy
exec .venv/bin/python -P -m pytest "$@"
