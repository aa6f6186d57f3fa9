//! Database URLs in the forms ADK's `--session_service_uri` accepts (SQLAlchemy's
//! conventions), parsed once and displayed without their password.

use std::fmt;
use std::path::PathBuf;

use super::DbError;

/// A password, kept out of every `Display` and `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    /// The password itself, only for handing to the driver.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Where a PostgreSQL server listens and who logs in (`Debug` shows no password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgTarget {
    /// A host name, an IP address, or a socket folder (starting with `/`).
    pub host: String,
    pub port: u16,
    pub user: String,
    pub dbname: String,
    /// From the URL only; `PGPASSWORD` and `~/.pgpass` are read when connecting.
    pub password: Option<Secret>,
    /// The URL's `passfile`: the password file read instead of `PGPASSFILE` / `~/.pgpass`.
    pub passfile: Option<PathBuf>,
}

/// What a URL points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A SQLite file (relative to the working folder, or absolute).
    Sqlite(PathBuf),
    Postgres(PgTarget),
}

/// A parsed database URL. `Display` and `Debug` give the URL as the user wrote it with the
/// password removed (`postgresql://user@host:5432/db`), which is also each session's source.
#[derive(Clone, PartialEq, Eq)]
pub struct DbUrl {
    shown: String,
    pub target: Target,
}

impl fmt::Display for DbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl fmt::Debug for DbUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DbUrl({})", self.shown)
    }
}

/// The scheme of `s` (before `://` or `:`), lower-cased, with any `+driver` dropped.
fn dialect(s: &str) -> Option<String> {
    let (scheme, _) = s.split_once(':')?;
    if scheme.is_empty()
        || !scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
    {
        return None;
    }
    let base = scheme.split('+').next().unwrap_or(scheme);
    Some(base.to_ascii_lowercase())
}

/// True when an input argument is a database URL rather than a path (any SQLAlchemy dialect
/// ADK's `DatabaseSessionService` takes; unsupported ones get a clear error later).
pub fn is_db_url(s: &str) -> bool {
    matches!(
        dialect(s).as_deref(),
        Some(
            "sqlite"
                | "postgresql"
                | "postgres"
                | "mysql"
                | "mariadb"
                | "mssql"
                | "oracle"
                | "spanner"
        )
    ) && s.contains("://")
}

/// The connection parameters whose values are never shown. libpq's own list is the keywords
/// its `PQconninfoOptions` table (src/interfaces/libpq/fe-connect.c) marks with the display
/// character `"*"`, "password field - hide value" (libpq docs, `PQconndefaults`): `password`,
/// `sslpassword` and, from PostgreSQL 18, `oauth_client_secret`. `passfile` and `sslkey` name
/// where a password or a private key is kept: hidden too, a path can say as much.
const SECRET_PARAMETERS: [&str; 5] = [
    "password",
    "sslpassword",
    "oauth_client_secret",
    "passfile",
    "sslkey",
];

/// True when a URL parameter (as written, `%XX` escapes and case aside) carries a secret.
fn is_secret_parameter(key: &str) -> bool {
    let key = percent_decode(key).to_ascii_lowercase();
    SECRET_PARAMETERS.contains(&key.as_str())
}

/// `s` as every message, log and output shows it: the password of its `user:password@` part
/// and every secret parameter of its query ([`SECRET_PARAMETERS`]) removed, as a session's
/// source must be (what `merge` reads again, with the password from `PGPASSWORD` or a
/// password file, as for a URL given without one). Never fails: an unparsable user part is dropped whole. The one place a
/// database URL is made showable; [`DbUrl`]'s `Display` is this.
pub fn redact(s: &str) -> String {
    let Some((scheme, rest)) = s.split_once("://") else {
        return s.to_string();
    };
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, tail) = rest.split_at(auth_end);
    let auth = match auth.rfind('@') {
        Some(at) => {
            let (userinfo, host) = auth.split_at(at);
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{user}{host}")
        }
        None => auth.to_string(),
    };
    format!("{scheme}://{auth}{}", redact_query(tail))
}

/// URL parameters whose values are shown as written: where and how to connect, never a
/// credential (libpq's connection keywords without a display character `"*"` or `"D"` that
/// hold no path to a key or password, and SQLite's URI parameters).
const HARMLESS_PARAMETERS: [&str; 14] = [
    "host",
    "hostaddr",
    "port",
    "user",
    "dbname",
    "sslmode",
    "ssl",
    "application_name",
    "connect_timeout",
    "target_session_attrs",
    "gssencmode",
    "mode",
    "cache",
    "immutable",
];

/// `tail` (path, `?query`, `#fragment`) as shown: secret parameters removed, the value of
/// every parameter not known harmless replaced by `***`, the fragment (never sent to the
/// server, free text) dropped.
fn redact_query(tail: &str) -> std::borrow::Cow<'_, str> {
    let before_fragment = tail.split('#').next().unwrap_or(tail);
    let Some((path, query)) = before_fragment.split_once('?') else {
        return before_fragment.into();
    };
    let kept: Vec<String> = query
        .split('&')
        .filter(|pair| !is_secret_parameter(pair.split('=').next().unwrap_or(pair)))
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if is_harmless_parameter(k) => pair.to_string(),
            Some((k, _)) => format!("{k}=***"),
            None if is_harmless_parameter(pair) || pair.is_empty() => pair.to_string(),
            None => "***".to_string(),
        })
        .collect();
    if kept.is_empty() {
        path.into()
    } else {
        format!("{path}?{}", kept.join("&")).into()
    }
}

/// libpq connection keywords this reader does not take: named in its refusal. Any other key
/// may be text that is not a keyword at all (`?hunter2`), and is not shown.
const OTHER_LIBPQ_KEYWORDS: [&str; 22] = [
    "hostaddr",
    "options",
    "target_session_attrs",
    "gssencmode",
    "sslcert",
    "sslrootcert",
    "sslcrl",
    "sslcrldir",
    "sslnegotiation",
    "sslcompression",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "client_encoding",
    "service",
    "channel_binding",
    "require_auth",
    "load_balance_hosts",
];

/// How a refused parameter's key is named: as written when it is a libpq keyword.
fn shown_key(key: &str) -> String {
    if OTHER_LIBPQ_KEYWORDS.contains(&key) {
        format!("`{key}`")
    } else {
        "(name not shown: not a libpq keyword)".to_string()
    }
}

fn is_harmless_parameter(key: &str) -> bool {
    let key = percent_decode(key).to_ascii_lowercase();
    HARMLESS_PARAMETERS.contains(&key.as_str())
}

/// `%XX` decoding, as Python's `urllib.parse.unquote` (invalid escapes kept as written).
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl DbUrl {
    /// Parse `s`. Errors name the URL with its password removed.
    pub fn parse(s: &str) -> Result<DbUrl, DbError> {
        let shown = redact(s);
        let bad = |reason: String| DbError::BadUrl {
            url: shown.clone(),
            reason,
        };
        let Some(d) = dialect(s) else {
            return Err(bad("not a database URL".into()));
        };
        let rest = s.split_once("://").map(|(_, r)| r).unwrap_or("");
        match d.as_str() {
            "sqlite" => {
                // SQLAlchemy: sqlite:///relative.db, sqlite:////absolute.db (ADK's
                // `_parse_db_path` strips one leading `/` from the URL path).
                let (before_q, query) = match rest.split_once('?') {
                    Some((a, q)) => (a, Some(q)),
                    None => (rest, None),
                };
                if query.is_some_and(|q| !q.is_empty()) {
                    return Err(bad(
                        "URL parameters are not supported for SQLite (the database is always \
                         opened read-only)"
                            .into(),
                    ));
                }
                let Some(path) = before_q.strip_prefix('/') else {
                    return Err(bad(
                        "a SQLite URL has no host: use sqlite:///relative.db or \
                         sqlite:////absolute.db"
                            .into(),
                    ));
                };
                let path = percent_decode(path);
                if path.is_empty() || path == ":memory:" {
                    return Err(bad(
                        "an in-memory database holds no recorded sessions; name a file".into(),
                    ));
                }
                Ok(DbUrl {
                    shown,
                    target: Target::Sqlite(PathBuf::from(path)),
                })
            }
            "postgresql" | "postgres" => Ok(DbUrl {
                target: Target::Postgres(parse_pg(rest).map_err(|reason| DbError::BadPgUrl {
                    url: shown.clone(),
                    reason,
                })?),
                shown,
            }),
            "mysql" | "mariadb" => Err(DbError::Unsupported {
                url: shown,
                what: "MySQL / MariaDB session databases are not read yet (SQLite and \
                       PostgreSQL are)"
                    .into(),
            }),
            other => Err(DbError::Unsupported {
                url: shown,
                what: format!(
                    "`{other}` session databases are not read (SQLite and PostgreSQL are)"
                ),
            }),
        }
    }

    /// `URL#app/user/session`: a session's source.
    pub fn session_source(&self, app: &str, user: &str, session: &str) -> String {
        format!("{}#{app}/{user}/{session}", self.shown)
    }
}

/// Why a PostgreSQL URL does not name a server we can connect to.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PgUrlError {
    #[error("unclosed `[` in the host")]
    UnclosedBracket,
    #[error(
        "{key}={value}: TLS connections are not supported yet (connect over a local \
         socket or a trusted network, or use sslmode=disable)"
    )]
    Tls { key: String, value: String },
    #[error("URL parameter {0} is not supported")]
    Parameter(String),
    #[error("port `{port}` is not a number from 1 to 65535")]
    Port {
        port: String,
        #[source]
        source: std::num::ParseIntError,
    },
}

/// `user[:password]@host[:port]/dbname[?host=/socket/dir&port=N&user=U&sslmode=disable]`.
fn parse_pg(rest: &str) -> Result<PgTarget, PgUrlError> {
    let (main, query) = match rest.split_once('?') {
        Some((a, q)) => (a, q),
        None => (rest, ""),
    };
    // A fragment is never part of the connection (nor shown, see `redact`).
    let query = query.split('#').next().unwrap_or(query);
    let main = main.split('#').next().unwrap_or(main);
    let (auth_host, path) = match main.find('/') {
        Some(i) => (&main[..i], &main[i + 1..]),
        None => (main, ""),
    };
    let (userinfo, hostport) = match auth_host.rfind('@') {
        Some(i) => (Some(&auth_host[..i]), &auth_host[i + 1..]),
        None => (None, auth_host),
    };
    let (mut user, mut password) = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((a, p)) => (percent_decode(a), Some(Secret::new(percent_decode(p)))),
            None => (percent_decode(u), None),
        },
        None => (String::new(), None),
    };
    let (mut host, mut port) = if let Some(h) = hostport.strip_prefix('[') {
        // [::1]:5432
        let Some((h, after)) = h.split_once(']') else {
            return Err(PgUrlError::UnclosedBracket);
        };
        (h.to_string(), after.strip_prefix(':').map(str::to_string))
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p.to_string())),
            None => (hostport.to_string(), None),
        }
    };
    let mut dbname = percent_decode(path);
    let mut passfile = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let v = percent_decode(v);
        match k {
            "host" => host = v,
            "port" => port = Some(v),
            "user" => user = v,
            "dbname" => dbname = v,
            "sslmode" | "ssl" if matches!(v.as_str(), "disable" | "allow" | "prefer" | "false") => {
            }
            "sslmode" | "ssl" => {
                return Err(PgUrlError::Tls {
                    key: k.to_string(),
                    value: v,
                })
            }
            // As libpq: a query's password wins over the user part's; `sslpassword` only
            // unlocks a client key, which needs TLS (refused above), so it is unused.
            "password" => password = Some(Secret::new(v)),
            "passfile" => passfile = Some(PathBuf::from(v)),
            "application_name" | "connect_timeout" | "sslpassword" => {}
            other => return Err(PgUrlError::Parameter(shown_key(other))),
        }
    }
    let port = match port.filter(|p| !p.is_empty()) {
        Some(p) => p
            .parse::<u16>()
            .map_err(|source| PgUrlError::Port { port: p, source })?,
        None => 5432,
    };
    if host.is_empty() {
        host = "localhost".into();
    }
    if user.is_empty() {
        user = std::env::var("PGUSER")
            .ok()
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "postgres".into());
    }
    if dbname.is_empty() {
        dbname = user.clone();
    }
    Ok(PgTarget {
        host,
        port,
        user,
        dbname,
        password,
        passfile,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_urls_follow_sqlalchemy() {
        let u = DbUrl::parse("sqlite:///rel/sessions.db").unwrap();
        assert_eq!(u.target, Target::Sqlite("rel/sessions.db".into()));
        let u = DbUrl::parse("sqlite+aiosqlite:////abs/s%20p.db").unwrap();
        assert_eq!(u.target, Target::Sqlite("/abs/s p.db".into()));
        assert_eq!(u.to_string(), "sqlite+aiosqlite:////abs/s%20p.db");
        for bad in [
            "sqlite://",
            "sqlite:///",
            "sqlite:///:memory:",
            "sqlite://host/x.db",
        ] {
            assert!(DbUrl::parse(bad).is_err(), "{bad}");
        }
        assert!(DbUrl::parse("sqlite:///x.db?mode=rw").is_err());
    }

    #[test]
    fn postgres_urls_and_the_password_is_never_shown() {
        let raw = "postgresql+asyncpg://ann:s3cr%40t@db.example:6543/adk?sslmode=disable";
        let u = DbUrl::parse(raw).unwrap();
        let Target::Postgres(t) = &u.target else {
            panic!()
        };
        assert_eq!(
            (t.host.as_str(), t.port, t.user.as_str(), t.dbname.as_str()),
            ("db.example", 6543, "ann", "adk")
        );
        assert_eq!(t.password.as_ref().unwrap().expose(), "s3cr@t");
        let shown = format!("{u} {u:?} {:?}", u.target_debug());
        assert!(!shown.contains("s3cr"), "{shown}");
        assert_eq!(
            u.to_string(),
            "postgresql+asyncpg://ann@db.example:6543/adk?sslmode=disable"
        );
        assert_eq!(
            u.session_source("app", "u1", "s1"),
            "postgresql+asyncpg://ann@db.example:6543/adk?sslmode=disable#app/u1/s1"
        );
        let u = DbUrl::parse("postgres://ann@[::1]/adk?host=/run/pg").unwrap();
        let Target::Postgres(t) = &u.target else {
            panic!()
        };
        assert_eq!((t.host.as_str(), t.port), ("/run/pg", 5432));
        // Errors about a URL never carry its password either.
        for raw in [
            "postgresql://ann:hunter2@h:99999/db",
            "postgresql://ann:hunter2@h/db?sslmode=require",
            "postgresql://ann:hunter2@h/db?sslkey=hunter2",
            "postgresql://ann@h/db?password=hunter2&sslmode=require",
            "mysql://ann:hunter2@h/db",
        ] {
            let e = DbUrl::parse(raw).unwrap_err().to_string();
            assert!(!e.contains("hunter2"), "{e}");
            assert!(e.contains("ann@h"), "{e}");
        }
        assert!(is_db_url("postgresql://h/db") && is_db_url("sqlite:///x.db"));
        assert!(!is_db_url("transcripts/a.json") && !is_db_url("C:\\x.json"));
    }

    #[test]
    fn secret_parameters_are_hidden_in_every_shown_url() {
        let raw = "postgresql://ann:pw0@h:5/db?Password=pw1&sslpassword=pw2&application_name=a\
                   &passfile=/home/pw3&oauth_client_secret=pw4&%73slkey=pw5&sslmode=disable";
        let shown = redact(raw);
        assert_eq!(
            shown,
            "postgresql://ann@h:5/db?application_name=a&sslmode=disable"
        );
        let e = DbUrl::parse(raw).unwrap_err().to_string();
        assert!(!e.contains("pw"), "{e}");
        // A query's password is the one used, as in libpq; a passfile is read instead of
        // ~/.pgpass; sslpassword is accepted and unused (it unlocks a TLS client key).
        let u = DbUrl::parse("postgres://ann:pw0@h/db?password=pw1&passfile=/p&sslpassword=pw2")
            .unwrap();
        let Target::Postgres(t) = &u.target else {
            panic!()
        };
        assert_eq!(t.password.as_ref().unwrap().expose(), "pw1");
        assert_eq!(t.passfile.as_deref(), Some(std::path::Path::new("/p")));
        let source = u.session_source("a", "u", "s");
        assert_eq!(source, "postgres://ann@h/db#a/u/s");
        assert_eq!(redact("sqlite:////x/a@b.db"), "sqlite:////x/a@b.db");
    }

    /// Issue 47 item 9: a value or fragment not known harmless is never shown.
    #[test]
    fn every_query_value_and_fragment_not_known_harmless_is_hidden() {
        for (raw, shown) in [
            (
                "sqlite+aiosqlite:///x.db?key=S3CRET",
                "sqlite+aiosqlite:///x.db?key=***",
            ),
            ("postgresql://u@h/db#password=S3CRET", "postgresql://u@h/db"),
            ("postgresql://u@h/db?=S3CRET", "postgresql://u@h/db?=***"),
            ("postgresql://u@h/db?S3CRET", "postgresql://u@h/db?***"),
            (
                "postgresql://u@h/db?sslmode=disable#S3CRET",
                "postgresql://u@h/db?sslmode=disable",
            ),
            (
                "postgresql://u@h/db#x?password=S3CRET",
                "postgresql://u@h/db",
            ),
        ] {
            assert_eq!(redact(raw), shown, "{raw}");
            if let Err(e) = DbUrl::parse(raw) {
                assert!(!e.to_string().contains("S3CRET"), "{e}");
            }
        }
    }

    impl DbUrl {
        fn target_debug(&self) -> String {
            match &self.target {
                Target::Postgres(t) => format!("{:?}", t.password),
                Target::Sqlite(p) => format!("{p:?}"),
            }
        }
    }
}
