# Sourced (`. scripts/test-env.sh`) by scripts/test.sh and .ci/run: starts what the tests need
# and exports where to find it. Safe to run again: each step is idempotent and caches under
# ~/.cache.
# The PostgreSQL server the session-database tests read (tests/cli/db.rs): Debian's package,
# a cluster under ~/.cache, the ADK-written fixture loaded (scripts/start-postgres.sh).
COMPACTION_SIM_TEST_POSTGRES="$(scripts/start-postgres.sh | tail -1)"
export COMPACTION_SIM_TEST_POSTGRES
# A Python with google-adk for the `python:` summarizer tests (tests/cli/python.rs), kept under
# ~/.cache; made once, reused while it still imports the pinned google-adk.
VENV="$HOME/.cache/compaction-sim-venv"
if ! "$VENV/bin/python" -c 'import google.adk, sys; sys.exit(google.adk.__version__ != "2.13.0")' 2>/dev/null; then
  python3 -m venv --clear "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check 'google-adk==2.13.0'
fi
export COMPACTION_SIM_TEST_PYTHON="$VENV/bin/python"
