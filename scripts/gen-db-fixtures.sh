#!/usr/bin/env bash
# Regenerate tests/fixtures/db/ (issue #15) with google-adk 2.13.0's own session services:
# a venv with google-adk (ADK_VENV, default ~/.cache/compaction-sim-adk-venv), the local
# PostgreSQL of scripts/start-postgres.sh with a scratch database `adk_gen`, then a
# pg_dump of what DatabaseSessionService wrote there.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${ADK_VENV:-$HOME/.cache/compaction-sim-adk-venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "google-adk[db]==2.13.0" aiosqlite asyncpg
fi
url="$(COMPACTION_SIM_PG_DB=adk_gen "$here/scripts/start-postgres.sh" --empty | tail -1)"
"$venv/bin/python" "$here/scripts/gen_db_fixtures.py" --pg-url "${url/postgresql:/postgresql+asyncpg:}"
bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
PGPASSWORD="${url#*//*:}"; PGPASSWORD="${PGPASSWORD%%@*}"; export PGPASSWORD
hostport="${url#*@}"; hostport="${hostport%%/*}"
"$bin/pg_dump" --no-owner --no-privileges --no-comments -h "${hostport%:*}" -p "${hostport#*:}" \
  -U compaction_sim -d adk_gen | grep -v '^-- Dumped' >"$here/tests/fixtures/db/postgres.sql"
echo "wrote $here/tests/fixtures/db/postgres.sql" >&2
# Issue #30: a second database whose timestamps are as a live run stamps them (full float
# precision), some read back from the column (scripts/gen_db_precise.py).
url="$(COMPACTION_SIM_PG_DB=adk_precise "$here/scripts/start-postgres.sh" --empty | tail -1)"
"$venv/bin/python" "$here/scripts/gen_db_precise.py" --pg-url "${url/postgresql:/postgresql+asyncpg:}"
"$bin/pg_dump" --no-owner --no-privileges --no-comments -h "${hostport%:*}" -p "${hostport#*:}" \
  -U compaction_sim -d adk_precise | grep -v '^-- Dumped' >"$here/tests/fixtures/db/postgres-precise.sql"
echo "wrote $here/tests/fixtures/db/postgres-precise.sql" >&2
