//! Sessions where ADK keeps them: the databases of its session services, read directly.
//!
//! Schemas read (google-adk 2.13.0):
//! - `SqliteSessionService` (SQLite): `sessions` and `events` with `event_data` JSON and a
//!   `REAL` epoch `timestamp`; events come back `ORDER BY timestamp, rowid`.
//! - `DatabaseSessionService` schema v1 (SQLite or PostgreSQL): `adk_internal_metadata`
//!   (`schema_version` = `1`), `sessions`, `events` with `event_data` JSON (JSONB on
//!   PostgreSQL); events come back `ORDER BY timestamp, id` and each is `event_data` with the
//!   row's `id` and `invocation_id` laid over it (`StorageEvent.to_event`).
//! - the v0 schema (pickled `actions`) is refused, naming ADK's migration command.
//!
//! Every event then goes through the ADK reader ([`super::adk`]), exactly as an export of the
//! same session would. Nothing is ever written: SQLite is opened read-only, PostgreSQL is read
//! in one read-only transaction.

mod pg;
mod sqlite;
pub mod url;

use rayon::prelude::*;
use serde_json::{Map, Value};

pub use url::{is_db_url, DbUrl, Secret, Target};

use super::{adk, pyjson, util, ReadError, Session};
use crate::error::{Classify, ExitKind};

/// Why a database could not be read. Each message is one line naming the URL (password
/// removed) and, when one is at fault, the table.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{url}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("{url}: {reason}")]
    BadPgUrl {
        url: String,
        #[source]
        reason: url::PgUrlError,
    },
    #[error("{url}: {what}")]
    Unsupported { url: String, what: String },
    #[error("{url}: no such database file")]
    NoFile { url: String },
    #[error("{url}: cannot open: {message}")]
    Connect { url: String, message: String },
    #[error(
        "{url}: table events: ADK's old v0 schema (pickled actions) is not read; migrate it \
         with `adk migrate session --source_db_url {url} --dest_db_url NEW_URL` (google-adk \
         2.13) and read NEW_URL"
    )]
    V0Schema { url: String },
    #[error("{url}: table {table}: missing (not an ADK session database?)")]
    MissingTable { url: String, table: String },
    #[error("{url}: table {table}: unknown schema: {detail}")]
    UnknownSchema {
        url: String,
        table: String,
        detail: String,
    },
    #[error("{url}: table {table}: read failed: {message}")]
    Query {
        url: String,
        table: String,
        message: String,
    },
}

impl Classify for DbError {
    fn exit_kind(&self) -> ExitKind {
        match self {
            DbError::Connect { .. } | DbError::Query { .. } => ExitKind::Environment,
            _ => ExitKind::BadInput,
        }
    }
}

impl DbError {
    /// As a reader error (the batch's list of inputs that could not be read).
    pub fn into_read_error(self) -> ReadError {
        let (url, location, message) = match &self {
            DbError::V0Schema { url }
            | DbError::MissingTable { url, .. }
            | DbError::UnknownSchema { url, .. }
            | DbError::Query { url, .. }
            | DbError::BadUrl { url, .. }
            | DbError::BadPgUrl { url, .. }
            | DbError::Unsupported { url, .. }
            | DbError::NoFile { url }
            | DbError::Connect { url, .. } => {
                let full = self.to_string();
                let rest = full
                    .strip_prefix(url.as_str())
                    .and_then(|r| r.strip_prefix(": "))
                    .unwrap_or(&full)
                    .to_string();
                (url.clone(), String::new(), rest)
            }
        };
        util::tidy(ReadError::new(url, location, message))
    }
}

/// A `--since` that is neither a date nor a UTC time.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("--since `{0}`: expected a date (2026-12-01) or a UTC time (2026-12-01T09:30)")]
pub struct BadSince(pub String);

/// Which sessions to read (`--app`, `--user`, `--session`, `--since`); all must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbFilter {
    pub app: Option<String>,
    pub user: Option<String>,
    pub session: Option<String>,
    /// Sessions last updated at or after this time (seconds since the epoch, UTC).
    pub since: Option<f64>,
}

impl DbFilter {
    pub fn is_empty(&self) -> bool {
        *self == DbFilter::default()
    }

    /// `--since`: `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDTHH:MM[:SS]` (UTC; a trailing `Z`
    /// is allowed), as seconds since the epoch.
    pub fn parse_since(s: &str) -> Result<f64, BadSince> {
        use chrono::{NaiveDate, NaiveDateTime};
        let t = s.trim().trim_end_matches('Z');
        let dt = if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
            d.and_hms_opt(0, 0, 0)
        } else {
            [
                "%Y-%m-%dT%H:%M:%S%.f",
                "%Y-%m-%dT%H:%M",
                "%Y-%m-%d %H:%M:%S%.f",
            ]
            .iter()
            .find_map(|f| NaiveDateTime::parse_from_str(t, f).ok())
        };
        dt.map(|d| d.and_utc().timestamp_micros() as f64 / 1e6)
            .ok_or_else(|| BadSince(s.to_string()))
    }

    /// The filter as the flags that set it, for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (flag, v) in [
            ("--app", &self.app),
            ("--user", &self.user),
            ("--session", &self.session),
        ] {
            if let Some(v) = v {
                parts.push(format!("{flag} {v}"));
            }
        }
        if let Some(t) = self.since {
            parts.push(format!("--since {}", util_time(t)));
        }
        parts.join(" ")
    }
}

fn util_time(t: f64) -> String {
    chrono::DateTime::from_timestamp_micros((t * 1e6).round() as i64)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("{t}"))
}

/// Which of ADK's schemas a database holds (the v0 schema is refused before this).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    /// `SqliteSessionService`: `event_data` is the whole event.
    SqliteService,
    /// `DatabaseSessionService` schema v1: `event_data` plus the row's id, invocation id and
    /// (when `event_data` has none) timestamp.
    DatabaseV1,
}

/// What a database's catalog shows, for [`detect_schema`].
#[derive(Debug, Default)]
pub(crate) struct Layout {
    pub tables: Vec<String>,
    pub events_columns: Vec<String>,
    pub sessions_columns: Vec<String>,
    /// `adk_internal_metadata`'s `schema_version` (`None` without the table; `Some(None)`
    /// with the table but no row).
    pub version: Option<Option<String>>,
}

/// Columns each schema needs.
const EVENTS_COLUMNS: [&str; 7] = [
    "id",
    "app_name",
    "user_id",
    "session_id",
    "invocation_id",
    "timestamp",
    "event_data",
];
const SESSIONS_COLUMNS: [&str; 4] = ["app_name", "user_id", "id", "update_time"];

/// ADK's own order (`_schema_check_utils`): the metadata table's version first; without it,
/// an `events` table with `actions` and no `event_data` is v0. On SQLite, `event_data` without
/// the metadata table is `SqliteSessionService`.
pub(crate) fn detect_schema(url: &DbUrl, sqlite: bool, l: &Layout) -> Result<Schema, DbError> {
    let url_s = url.to_string();
    let has = |t: &str| l.tables.iter().any(|x| x == t);
    let schema = match &l.version {
        Some(Some(v)) if v == "1" => Schema::DatabaseV1,
        Some(Some(v)) => {
            return Err(DbError::UnknownSchema {
                url: url_s,
                table: "adk_internal_metadata".into(),
                detail: format!(
                    "schema_version `{}` (google-adk 2.13 reads and writes 1)",
                    util::one_line(v, 40)
                ),
            })
        }
        Some(None) => {
            return Err(DbError::UnknownSchema {
                url: url_s,
                table: "adk_internal_metadata".into(),
                detail: "no schema_version row".into(),
            })
        }
        None => {
            if !has("events") {
                return Err(DbError::MissingTable {
                    url: url_s,
                    table: "events".into(),
                });
            }
            let col = |c: &str| l.events_columns.iter().any(|x| x == c);
            if col("actions") && !col("event_data") {
                return Err(DbError::V0Schema { url: url_s });
            }
            if !sqlite && col("event_data") {
                return Err(DbError::MissingTable {
                    url: url_s,
                    table: "adk_internal_metadata".into(),
                });
            }
            Schema::SqliteService
        }
    };
    for (table, cols, need) in [
        ("sessions", &l.sessions_columns, &SESSIONS_COLUMNS[..]),
        ("events", &l.events_columns, &EVENTS_COLUMNS[..]),
    ] {
        if !has(table) {
            return Err(DbError::MissingTable {
                url: url_s,
                table: table.into(),
            });
        }
        if let Some(c) = need.iter().find(|c| !cols.iter().any(|x| x == *c)) {
            return Err(DbError::UnknownSchema {
                url: url_s,
                table: table.into(),
                detail: format!("no `{c}` column"),
            });
        }
    }
    Ok(schema)
}

/// One event row, in the order ADK reads events back.
#[derive(Debug, Clone)]
pub(crate) struct RawEvent {
    pub id: String,
    pub invocation_id: String,
    /// The `timestamp` column as seconds since the epoch (used only when `event_data` has no
    /// timestamp, as `StorageEvent.to_event` does).
    pub column_ts: Option<f64>,
    /// `event_data` as JSON text; `None` for SQL NULL.
    pub data: Option<String>,
}

/// One session's rows.
#[derive(Debug, Clone)]
pub(crate) struct RawSession {
    pub app: String,
    pub user: String,
    pub id: String,
    pub events: Vec<RawEvent>,
}

/// Sessions read from one database, plus the sessions that could not be read (each named
/// `URL#app/user/session`).
#[derive(Debug, Default)]
pub struct DbLoaded {
    pub sessions: Vec<Session>,
    pub skipped: Vec<ReadError>,
}

/// Read every session of `url` that `filter` selects, through the ADK reader. A database-wide
/// failure (cannot connect, v0 or unknown schema, missing table) is an error; a session whose
/// events ADK's reader refuses is reported in `skipped`.
pub fn load(url: &DbUrl, filter: &DbFilter) -> Result<DbLoaded, DbError> {
    let (schema, raw) = match &url.target {
        Target::Sqlite(path) => sqlite::read(url, path, filter)?,
        Target::Postgres(t) => pg::read(url, t, filter)?,
    };
    let results: Vec<Result<Session, ReadError>> = raw
        .par_iter()
        .map(|r| build(url, schema, r).map_err(util::tidy))
        .collect();
    let mut out = DbLoaded::default();
    for r in results {
        match r {
            Ok(s) => out.sessions.push(s),
            Err(e) => out.skipped.push(e),
        }
    }
    Ok(out)
}

/// `load`, for an input argument: the URL is parsed, and every failure becomes a reader
/// error of the batch. No session at all is reported too, naming the filters.
pub fn load_arg(arg: &str, filter: &DbFilter) -> (Vec<Session>, Vec<ReadError>) {
    let url = match DbUrl::parse(arg) {
        Ok(u) => u,
        Err(e) => return (Vec::new(), vec![e.into_read_error()]),
    };
    match load(&url, filter) {
        Ok(l) => {
            let mut skipped = l.skipped;
            if l.sessions.is_empty() && skipped.is_empty() {
                let why = if filter.is_empty() {
                    "no sessions".to_string()
                } else {
                    format!("no session matches {}", filter.describe())
                };
                skipped.push(ReadError::new(url.to_string(), "", why));
            }
            (l.sessions, skipped)
        }
        Err(e) => (Vec::new(), vec![e.into_read_error()]),
    }
}

/// One session through the ADK reader, as its export would go.
fn build(url: &DbUrl, schema: Schema, raw: &RawSession) -> Result<Session, ReadError> {
    let source = url.session_source(&raw.app, &raw.user, &raw.id);
    let mut values: Vec<Value> = Vec::with_capacity(raw.events.len());
    for (i, e) in raw.events.iter().enumerate() {
        let at = format!("$.events[{i}]");
        let Some(text) = e.data.as_deref() else {
            return Err(ReadError::new(
                &source,
                at,
                format!("event {}: event_data is NULL", e.id),
            ));
        };
        // Python's json.dumps writes NaN / Infinity; keep them as the file reader does.
        let text = pyjson::normalize(&source, text).map_err(|mut err| {
            err.location = format!("{at} (event_data)");
            err
        })?;
        let v: Value = serde_json::from_str(&text).map_err(|err| {
            ReadError::new(&source, &at, format!("event_data is not JSON: {err}"))
        })?;
        let Value::Object(mut o) = v else {
            return Err(ReadError::new(
                &source,
                at,
                "event_data is not a JSON object",
            ));
        };
        if schema == Schema::DatabaseV1 {
            overlay_columns(&mut o, e);
        }
        values.push(Value::Object(o));
    }
    let items: Vec<(String, &Value)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (format!("$.events[{i}]"), v))
        .collect();
    let session = adk::session_from_events(&source, raw.id.clone(), source.clone(), &items)?;
    util::validate_events(&source, &session.events, |i| format!("event {i}"))?;
    Ok(session)
}

/// `StorageEvent.to_event`: `{**event_data, "id": row.id, "invocation_id": row.invocation_id,
/// "timestamp": event_data.get("timestamp") or the column}` (keys already present keep their
/// place, as in a Python dict).
fn overlay_columns(o: &mut Map<String, Value>, e: &RawEvent) {
    o.insert("id".into(), Value::String(e.id.clone()));
    o.insert(
        "invocation_id".into(),
        Value::String(e.invocation_id.clone()),
    );
    let has_ts = o.get("timestamp").is_some_and(|v| !v.is_null());
    let ts = if has_ts {
        o.get("timestamp").cloned()
    } else {
        e.column_ts
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
    };
    if let Some(ts) = ts {
        o.insert("timestamp".into(), ts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_accepts_dates_and_utc_times() {
        assert_eq!(DbFilter::parse_since("1970-01-02").unwrap(), 86400.0);
        assert_eq!(DbFilter::parse_since("1970-01-01T00:01:30Z").unwrap(), 90.0);
        assert_eq!(DbFilter::parse_since("1970-01-01T01:00").unwrap(), 3600.0);
        assert!(DbFilter::parse_since("yesterday").is_err());
    }

    #[test]
    fn database_rows_overlay_id_invocation_and_missing_timestamps() {
        let mut o: Map<String, Value> =
            serde_json::from_str(r#"{"author":"user","id":"old","timestamp":null}"#).unwrap();
        let e = RawEvent {
            id: "e1".into(),
            invocation_id: "inv".into(),
            column_ts: Some(1.5),
            data: None,
        };
        overlay_columns(&mut o, &e);
        assert_eq!(
            serde_json::to_string(&o).unwrap(),
            r#"{"author":"user","id":"e1","timestamp":1.5,"invocation_id":"inv"}"#
        );
        let mut o: Map<String, Value> = serde_json::from_str(r#"{"timestamp":7.25}"#).unwrap();
        overlay_columns(&mut o, &e);
        assert_eq!(o["timestamp"], 7.25);
    }
}
