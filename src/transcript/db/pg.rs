//! PostgreSQL session databases (`DatabaseSessionService` schema v1), read in one
//! `REPEATABLE READ READ ONLY` transaction: one snapshot of the whole database, which never
//! blocks ADK's writers and can write nothing.
//!
//! The password comes from the URL, else `PGPASSWORD`, else the password file (the URL's
//! `passfile`, `PGPASSFILE` or `~/.pgpass`, libpq's format and rules); it is handed to the driver only and stripped
//! from any message.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use postgres::{Client, Config, IsolationLevel, NoTls, Transaction};

use super::url::{PgTarget, Secret};
use super::{detect_schema, DbError, DbFilter, DbUrl, Layout, RawEvent, RawSession, Schema};

/// The password to use: the URL's, `PGPASSWORD`, or the first matching password-file line.
pub(crate) fn password(t: &PgTarget) -> Option<Secret> {
    if let Some(p) = &t.password {
        return Some(p.clone());
    }
    if let Ok(p) = std::env::var("PGPASSWORD") {
        return Some(Secret::new(p));
    }
    let file = t
        .passfile
        .clone()
        .or_else(|| std::env::var_os("PGPASSFILE").map(PathBuf::from))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = std::fs::read_to_string(&file).ok()?;
    // libpq ignores a password file others can read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            return None;
        }
    }
    pgpass_lookup(&text, t).map(Secret::new)
}

/// `hostname:port:database:username:password` lines, `*` matching anything, `\:` and `\\`
/// escapes; the first match wins (libpq). A socket folder matches `localhost`.
fn pgpass_lookup(text: &str, t: &PgTarget) -> Option<String> {
    let host = if t.host.starts_with('/') {
        "localhost"
    } else {
        t.host.as_str()
    };
    let port = t.port.to_string();
    let want = [host, port.as_str(), t.dbname.as_str(), t.user.as_str()];
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields: Vec<String> = vec![String::new()];
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        fields.last_mut().expect("non-empty").push(n);
                    }
                }
                ':' if fields.len() < 5 => fields.push(String::new()),
                c => fields.last_mut().expect("non-empty").push(c),
            }
        }
        if fields.len() != 5 {
            continue;
        }
        if want.iter().zip(&fields).all(|(w, f)| f == "*" || f == w) {
            return Some(fields.pop().expect("five fields"));
        }
    }
    None
}

/// A message from the driver, with the password blanked should it ever appear in one.
fn scrub(msg: String, pw: Option<&Secret>) -> String {
    match pw {
        Some(p) if !p.expose().is_empty() => msg.replace(p.expose(), "***"),
        _ => msg,
    }
}

/// Connect and start the read-only snapshot transaction.
pub(crate) fn connect(url: &DbUrl, t: &PgTarget) -> Result<(Client, Option<Secret>), DbError> {
    let pw = password(t);
    let mut c = Config::new();
    if t.host.starts_with('/') {
        #[cfg(unix)]
        c.host_path(&t.host);
        #[cfg(not(unix))]
        c.host(&t.host);
    } else {
        c.host(&t.host);
    }
    c.port(t.port)
        .user(&t.user)
        .dbname(&t.dbname)
        .application_name("compaction-sim")
        .connect_timeout(Duration::from_secs(15));
    if let Some(p) = &pw {
        c.password(p.expose());
    }
    let client = c.connect(NoTls).map_err(|e| DbError::Connect {
        url: url.to_string(),
        message: scrub(error_text(&e), pw.as_ref()),
    })?;
    Ok((client, pw))
}

/// The driver's error with its database detail (`db error: FATAL: ...`) on one line.
fn error_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(x) = src {
                s.push_str(": ");
                s.push_str(&x.to_string());
                src = x.source();
            }
            s
        }
    }
}

/// Start the read-only snapshot every query of a read runs in.
pub(crate) fn read_only(client: &mut Client) -> Result<Transaction<'_>, postgres::Error> {
    client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
}

fn layout(url: &DbUrl, tx: &mut Transaction<'_>, pw: Option<&Secret>) -> Result<Layout, DbError> {
    let q = |table: &str, e: postgres::Error| DbError::Query {
        url: url.to_string(),
        table: table.into(),
        message: scrub(error_text(&e), pw),
    };
    let tables = tx
        .query(
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = current_schema()",
            &[],
        )
        .map_err(|e| q("information_schema.tables", e))?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut l = Layout {
        tables,
        ..Layout::default()
    };
    for (table, cols) in [
        ("events", &mut l.events_columns),
        ("sessions", &mut l.sessions_columns),
    ] {
        *cols = tx
            .query(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1",
                &[&table],
            )
            .map_err(|e| q(table, e))?
            .iter()
            .map(|r| r.get(0))
            .collect();
    }
    if l.tables.iter().any(|t| t == "adk_internal_metadata") {
        let row = tx
            .query_opt(
                "SELECT value::text FROM adk_internal_metadata WHERE key = 'schema_version'",
                &[],
            )
            .map_err(|e| q("adk_internal_metadata", e))?;
        l.version = Some(row.map(|r| r.get(0)));
    }
    Ok(l)
}

/// The schema (always v1 here), and every selected session's event rows in the order ADK
/// reads them back (`ORDER BY timestamp DESC, id DESC`, reversed).
pub(crate) fn read(
    url: &DbUrl,
    t: &PgTarget,
    filter: &DbFilter,
) -> Result<(Schema, Vec<RawSession>), DbError> {
    let (mut client, pw) = connect(url, t)?;
    let pw = pw.as_ref();
    let q = |table: &str, e: postgres::Error| DbError::Query {
        url: url.to_string(),
        table: table.into(),
        message: scrub(error_text(&e), pw),
    };
    let mut tx = read_only(&mut client).map_err(|e| q("(transaction)", e))?;
    let schema = detect_schema(url, false, &layout(url, &mut tx, pw)?)?;
    // `update_time` is a naive UTC `timestamp`.
    const WHERE: &str = "($1::text IS NULL OR s.app_name = $1) \
         AND ($2::text IS NULL OR s.user_id = $2) \
         AND ($3::text IS NULL OR s.id = $3) \
         AND ($4::float8 IS NULL OR s.update_time >= (to_timestamp($4::float8) AT TIME ZONE 'UTC'))";
    let params: [&(dyn postgres::types::ToSql + Sync); 4] =
        [&filter.app, &filter.user, &filter.session, &filter.since];
    let keys: Vec<(String, String, String)> = tx
        .query(
            &format!(
                "SELECT s.app_name::text, s.user_id::text, s.id::text FROM sessions s \
                 WHERE {WHERE} ORDER BY s.app_name, s.user_id, s.id"
            ),
            &params,
        )
        .map_err(|e| q("sessions", e))?
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let rows = tx
        .query(
            &format!(
                "SELECT e.app_name::text, e.user_id::text, e.session_id::text, e.id::text, \
                        e.invocation_id::text, EXTRACT(EPOCH FROM e.timestamp)::float8, \
                        e.event_data::text \
                 FROM events e JOIN sessions s \
                   ON s.app_name = e.app_name AND s.user_id = e.user_id AND s.id = e.session_id \
                 WHERE {WHERE} \
                 ORDER BY e.app_name, e.user_id, e.session_id, e.timestamp, e.id"
            ),
            &params,
        )
        .map_err(|e| q("events", e))?;
    tx.commit().map_err(|e| q("(transaction)", e))?;
    let mut by_session: HashMap<(String, String, String), Vec<RawEvent>> = HashMap::new();
    for r in rows {
        let key: (String, String, String) = (r.get(0), r.get(1), r.get(2));
        by_session.entry(key).or_default().push(RawEvent {
            id: r.get(3),
            invocation_id: r.get(4),
            column_ts: r.get(5),
            data: r.get(6),
        });
    }
    let out = keys
        .into_iter()
        .map(|k| {
            let events = by_session.remove(&k).unwrap_or_default();
            RawSession {
                app: k.0,
                user: k.1,
                id: k.2,
                events,
            }
        })
        .collect();
    Ok((schema, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> PgTarget {
        PgTarget {
            host: "db.local".into(),
            port: 5432,
            user: "ann".into(),
            dbname: "adk".into(),
            password: None,
            passfile: None,
        }
    }

    #[test]
    fn pgpass_lines_match_like_libpq() {
        let text =
            "# comment\nother:5432:adk:ann:nope\n*:5432:adk:ann:pa\\:ss\\\\w\n*:*:*:*:last\n";
        assert_eq!(pgpass_lookup(text, &target()).as_deref(), Some("pa:ss\\w"));
        let mut t = target();
        t.port = 6000;
        assert_eq!(pgpass_lookup(text, &t).as_deref(), Some("last"));
        assert_eq!(pgpass_lookup("x:1:2:3\n", &t), None);
    }

    /// Needs the server of scripts/start-postgres.sh (`COMPACTION_SIM_TEST_POSTGRES`); fails
    /// without it, saying so.
    #[test]
    fn postgres_reads_run_in_a_read_only_transaction() {
        let url = std::env::var("COMPACTION_SIM_TEST_POSTGRES").unwrap_or_else(|_| {
            panic!(
                "COMPACTION_SIM_TEST_POSTGRES is not set: start the test server with \
                 `export COMPACTION_SIM_TEST_POSTGRES=\"$(scripts/start-postgres.sh | tail -1)\"`"
            )
        });
        let u = DbUrl::parse(&url).unwrap();
        let crate::transcript::db::Target::Postgres(t) = &u.target else {
            panic!("{u} is not a PostgreSQL URL")
        };
        let (mut client, _) = connect(&u, t).unwrap_or_else(|e| panic!("{e}"));
        let mut tx = read_only(&mut client).unwrap();
        let ro: String = tx
            .query_one("SHOW transaction_read_only", &[])
            .unwrap()
            .get(0);
        assert_eq!(ro, "on");
        let e = tx.execute("DELETE FROM events", &[]).unwrap_err();
        assert!(error_text(&e).contains("read-only transaction"), "{e}");
    }

    #[test]
    fn scrub_blanks_the_password() {
        let pw = Secret::new("hunter2");
        assert_eq!(
            scrub("auth for hunter2 failed".into(), Some(&pw)),
            "auth for *** failed"
        );
    }
}
