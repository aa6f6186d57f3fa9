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
# A headless browser for the report explorer's tests (tests/cli/browser.rs): Debian's
# chromium, installed once as root when it is not on PATH. Without one those tests fail
# unless COMPACTION_SIM_SKIP_BROWSER says why no browser can be installed.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "test-env: chromium is not installed and cannot be installed here (not root or no apt-get)" >&2
  fi
fi
if command -v chromium >/dev/null 2>&1; then
  COMPACTION_SIM_TEST_CHROMIUM="$(command -v chromium)"
  export COMPACTION_SIM_TEST_CHROMIUM
fi
# The wheel tests (tests/cli/wheel.rs): maturin to pack the test build into a wheel, and the
# wheels the fresh venv installs besides it (polars, for the API's DataFrames), both from
# PyPI, pinned and kept under ~/.cache so a rerun downloads nothing.
TOOLS="$HOME/.cache/compaction-sim-wheel-tools"
if ! "$TOOLS/bin/maturin" --version 2>/dev/null | grep -qx 'maturin 1.16.0'; then
  python3 -m venv --clear "$TOOLS"
  "$TOOLS/bin/pip" install --quiet --disable-pip-version-check 'maturin==1.16.0'
fi
export COMPACTION_SIM_TEST_MATURIN="$TOOLS/bin/maturin"
WHEELHOUSE="$HOME/.cache/compaction-sim-wheelhouse"
if ! ls "$WHEELHOUSE"/polars-2.1.0-*.whl >/dev/null 2>&1; then
  "$TOOLS/bin/pip" download --quiet --disable-pip-version-check --dest "$WHEELHOUSE" 'polars==2.1.0'
fi
export COMPACTION_SIM_TEST_WHEELHOUSE="$WHEELHOUSE"
