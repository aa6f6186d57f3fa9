//! SQLite session databases (`SqliteSessionService`, and `DatabaseSessionService` over
//! `sqlite+aiosqlite`), opened read-only.
//!
//! Each query is its own read transaction: the session list is one statement, and each
//! session's events another, so a session is read consistently while ADK writes to the same
//! file, and ADK's writer is never held back longer than one session's read (it waits on a
//! busy lock, not fails, for up to its own 5 s timeout; ours is 30 s).

use std::path::Path;
use std::time::Duration;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use super::{detect_schema, DbError, DbFilter, DbUrl, Layout, RawEvent, RawSession, Schema};

/// How SQLAlchemy stores a `DateTime` in SQLite (`2026-12-25 15:34:11.001000`).
const SQLA_DATETIME: &str = "%Y-%m-%d %H:%M:%S%.f";

fn q(url: &DbUrl, table: &str, e: rusqlite::Error) -> DbError {
    DbError::Query {
        url: url.to_string(),
        table: table.into(),
        message: e.to_string(),
    }
}

/// Open `path` read-only: never created, never written (`query_only` on top of the flag).
pub(crate) fn open(url: &DbUrl, path: &Path) -> Result<Connection, DbError> {
    if !path.is_file() {
        return Err(DbError::NoFile {
            url: url.to_string(),
        });
    }
    let connect = |e: rusqlite::Error| DbError::Connect {
        url: url.to_string(),
        message: e.to_string(),
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(connect)?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(connect)?;
    conn.pragma_update(None, "query_only", true)
        .map_err(connect)?;
    Ok(conn)
}

fn layout(url: &DbUrl, conn: &Connection) -> Result<Layout, DbError> {
    let connect = |e: rusqlite::Error| DbError::Connect {
        url: url.to_string(),
        message: e.to_string(),
    };
    let mut l = Layout::default();
    let mut st = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .map_err(connect)?;
    l.tables = st
        .query_map([], |r| r.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(connect)?;
    let columns = |table: &str| -> Result<Vec<String>, DbError> {
        let mut st = conn
            .prepare(&format!("PRAGMA table_info({table})"))
            .map_err(|e| q(url, table, e))?;
        let cols = st
            .query_map([], |r| r.get::<_, String>(1))
            .and_then(|rows| rows.collect())
            .map_err(|e| q(url, table, e))?;
        Ok(cols)
    };
    l.events_columns = columns("events")?;
    l.sessions_columns = columns("sessions")?;
    if l.tables.iter().any(|t| t == "adk_internal_metadata") {
        let v: Option<String> = conn
            .query_row(
                "SELECT value FROM adk_internal_metadata WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .map(Some)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(None),
                e => Err(q(url, "adk_internal_metadata", e)),
            })?;
        l.version = Some(v);
    }
    Ok(l)
}

/// The `timestamp` column as seconds since the epoch: a `REAL` (`SqliteSessionService`) or
/// SQLAlchemy's naive-UTC text (`DatabaseSessionService`), as Python's
/// `datetime.replace(tzinfo=utc).timestamp()` computes it (whole microseconds / 1e6).
fn column_ts(v: ValueRef<'_>) -> Option<f64> {
    match v {
        ValueRef::Real(f) => Some(f),
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Text(t) => {
            let t = std::str::from_utf8(t).ok()?;
            let d = chrono::NaiveDateTime::parse_from_str(t, SQLA_DATETIME).ok()?;
            Some(d.and_utc().timestamp_micros() as f64 / 1e6)
        }
        _ => None,
    }
}

/// The schema, and every selected session's event rows in the order ADK reads them back.
pub(crate) fn read(
    url: &DbUrl,
    path: &Path,
    filter: &DbFilter,
) -> Result<(Schema, Vec<RawSession>), DbError> {
    let conn = open(url, path)?;
    let schema = detect_schema(url, true, &layout(url, &conn)?)?;
    // `update_time` is a REAL epoch for SqliteSessionService, SQLAlchemy text otherwise.
    let since: Option<rusqlite::types::Value> = filter.since.map(|t| match schema {
        Schema::SqliteService => rusqlite::types::Value::Real(t),
        Schema::DatabaseV1 => rusqlite::types::Value::Text(
            chrono::DateTime::from_timestamp_micros((t * 1e6).round() as i64)
                .map(|d| d.naive_utc().format("%Y-%m-%d %H:%M:%S%.6f").to_string())
                .unwrap_or_default(),
        ),
    });
    let mut st = conn
        .prepare(
            "SELECT app_name, user_id, id FROM sessions \
             WHERE (?1 IS NULL OR app_name = ?1) AND (?2 IS NULL OR user_id = ?2) \
               AND (?3 IS NULL OR id = ?3) AND (?4 IS NULL OR update_time >= ?4) \
             ORDER BY app_name, user_id, id",
        )
        .map_err(|e| q(url, "sessions", e))?;
    let keys: Vec<(String, String, String)> = st
        .query_map(
            rusqlite::params![filter.app, filter.user, filter.session, since],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .and_then(|rows| rows.collect())
        .map_err(|e| q(url, "sessions", e))?;
    // SqliteSessionService: `ORDER BY timestamp DESC, rowid DESC`, reversed;
    // DatabaseSessionService: `ORDER BY timestamp DESC, id DESC`, reversed.
    let tie = match schema {
        Schema::SqliteService => "rowid",
        Schema::DatabaseV1 => "id",
    };
    let mut ev = conn
        .prepare(&format!(
            "SELECT id, invocation_id, timestamp, event_data FROM events \
             WHERE app_name = ?1 AND user_id = ?2 AND session_id = ?3 \
             ORDER BY timestamp, {tie}"
        ))
        .map_err(|e| q(url, "events", e))?;
    let mut out = Vec::with_capacity(keys.len());
    for (app, user, id) in keys {
        let events: Vec<RawEvent> = ev
            .query_map(rusqlite::params![app, user, id], |r| {
                Ok(RawEvent {
                    id: r.get(0)?,
                    invocation_id: r.get(1)?,
                    column_ts: column_ts(r.get_ref(2)?),
                    data: r.get(3)?,
                })
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| q(url, "events", e))?;
        out.push(RawSession {
            app,
            user,
            id,
            events,
        });
    }
    Ok((schema, out))
}
