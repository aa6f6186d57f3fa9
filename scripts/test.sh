#!/usr/bin/env bash
# The README's test command: start what the tests need (a PostgreSQL server, a Python venv
# with google-adk; scripts/test-env.sh), then run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/test-env.sh
cargo test --locked "$@"
