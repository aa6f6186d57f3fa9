#!/usr/bin/env bash
# The test suite, with what it needs started first: the README's test command, and what
# .ci/run calls. Safe to run again: each step is idempotent and caches under ~/.cache.
set -euo pipefail
cd "$(dirname "$0")/.."
# The PostgreSQL server the session-database tests read (tests/cli/db.rs): Debian's package,
# a cluster under ~/.cache, the ADK-written fixture loaded (scripts/start-postgres.sh).
COMPACTION_SIM_TEST_POSTGRES="$(scripts/start-postgres.sh | tail -1)"
export COMPACTION_SIM_TEST_POSTGRES
cargo test --locked "$@"
