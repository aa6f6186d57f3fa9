#!/usr/bin/env bash
# Start the PostgreSQL server the database-reader tests use (issue #15), idempotently:
# install Debian's `postgresql` package if no server is installed, create a cluster in the
# cache folder of the user that runs it (root runs it as `postgres`, in that user's
# ~/.cache: initdb refuses root, and root's home is closed to other users), start it on
# 127.0.0.1:$COMPACTION_SIM_PG_PORT (default 54329), (re)create the role and, unless it already
# holds the same dump, the database, and
# load tests/fixtures/db/postgres.sql (tables written by google-adk's DatabaseSessionService),
# and tests/fixtures/db/postgres-precise.sql into a second database, `<db>_precise`.
#
# The last line printed is the URL to export:
#   export COMPACTION_SIM_TEST_POSTGRES="$(scripts/start-postgres.sh | tail -1)"
# Its password is a throwaway test password of this local server only.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dump="$here/tests/fixtures/db/postgres.sql"
port="${COMPACTION_SIM_PG_PORT:-54329}"
role=compaction_sim
password=compaction-sim-test
db="${COMPACTION_SIM_PG_DB:-adk_sessions}"

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
bin="$(pg_bin)"
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "start-postgres: installing Debian's postgresql package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends postgresql >&2
  bin="$(pg_bin)"
fi
version="$(basename "$(dirname "$bin")")"

if [ "$(id -u)" = 0 ]; then
  owner=postgres
  home="$(getent passwd postgres | cut -d: -f6)"
  as_owner() { runuser -u postgres -- "$@"; }
else
  owner="$(id -un)"
  home="$HOME"
  as_owner() { "$@"; }
fi
data="$home/.cache/compaction-sim-postgres/$version"
log="$data.log"

if [ ! -f "$data/PG_VERSION" ]; then
  as_owner mkdir -p "$data"
  as_owner "$bin/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >&2
fi
if ! as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  as_owner "$bin/pg_ctl" -D "$data" -l "$log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$data" start >&2
fi

psql_admin() { as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$data" -p "$port" -U postgres "$@"; }
psql_admin -d postgres >&2 <<SQL
SELECT 'CREATE ROLE $role LOGIN' WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role')\gexec
ALTER ROLE $role LOGIN PASSWORD '$password';
SQL

# (Re)create database $1 and load dump $2 into it, unless it already holds that dump (its
# checksum is kept as the database's comment): running this again while tests read the
# database leaves it alone. An empty $2 always makes a new, empty database.
load_db() {
  local name="$1" file="$2" mark=""
  if [ -n "$file" ]; then
    mark="fixture $(sha256sum "$file" | cut -c1-16)"
    local have
    have="$(psql_admin -d postgres -At -c \
      "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = '$name'")"
    [ "$have" = "$mark" ] && return 0
  fi
  psql_admin -d postgres >&2 <<SQL
DROP DATABASE IF EXISTS $name;
CREATE DATABASE $name OWNER $role;
SQL
  if [ -n "$file" ]; then
    as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$data" -p "$port" -U "$role" -d "$name" \
      -f - >/dev/null <"$file"
    psql_admin -d postgres -c "COMMENT ON DATABASE $name IS '$mark'" >&2
  fi
}

if [ "${1:-}" = "--empty" ]; then
  load_db "$db" ""
else
  load_db "$db" "$dump"
  # Beside it, `${db}_precise`: timestamps as a live run stamps them, some read back from the
  # column (tests/fixtures/db/postgres-precise.sql, issue #30).
  load_db "${db}_precise" "$here/tests/fixtures/db/postgres-precise.sql"
fi
echo "start-postgres: PostgreSQL $version on 127.0.0.1:$port, data in $data (owner $owner)" >&2
echo "postgresql://$role:$password@127.0.0.1:$port/$db"
