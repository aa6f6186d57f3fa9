//! ADK session databases as inputs (issue #15): the fixture SQLite databases written by
//! google-adk 2.13.0's own session services (scripts/gen-db-fixtures.sh), and a real
//! PostgreSQL server (scripts/start-postgres.sh; `COMPACTION_SIM_TEST_POSTGRES`).

use std::path::{Path, PathBuf};

use compaction_sim::transcript::db::{self, DbFilter, DbUrl};
use compaction_sim::transcript::{load_paths, Session};

use crate::common::{bin, root};

fn fixtures() -> PathBuf {
    root().join("tests/fixtures/db")
}

/// `sqlite:////abs/path` for a fixture database.
fn sqlite_url(p: &Path) -> String {
    format!("sqlite:///{}", p.display())
}

fn fixture_url(name: &str) -> String {
    let p = fixtures().join(name);
    assert!(p.is_file(), "fixture {} is missing", p.display());
    sqlite_url(&p)
}

/// The PostgreSQL server of scripts/start-postgres.sh. Unset, the test fails saying how to
/// start it: a database test never passes without its database.
pub(crate) fn pg_url() -> String {
    std::env::var("COMPACTION_SIM_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "COMPACTION_SIM_TEST_POSTGRES is not set: start the test server with \
             `export COMPACTION_SIM_TEST_POSTGRES=\"$(scripts/start-postgres.sh | tail -1)\"` \
             (.ci/run does)"
        )
    })
}

/// The test server's password (its URL's), which no output may contain.
fn pg_password(url: &str) -> String {
    let auth = url.split("://").nth(1).unwrap().split('@').next().unwrap();
    auth.split_once(':')
        .expect("the test URL has a password")
        .1
        .to_string()
}

fn run(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let o = bin().current_dir(cwd).args(args).output().expect("runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Sessions as JSON values keyed by id, with the source dropped (the one thing that differs
/// between a database read and a read of the same sessions' exports).
fn by_id(sessions: &[Session]) -> Vec<(String, serde_json::Value)> {
    let mut v: Vec<(String, serde_json::Value)> = sessions
        .iter()
        .map(|s| {
            let mut j = serde_json::to_value(s).unwrap();
            j.as_object_mut().unwrap().remove("source");
            (s.id.clone(), j)
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

fn assert_same_as_exports(url: &str, exports: &str) {
    let from_db = load_paths(&[url.to_string()], None);
    assert!(from_db.skipped.is_empty(), "{:?}", from_db.skipped);
    let dir = fixtures().join("exports").join(exports);
    let from_json = load_paths(&[dir.display().to_string()], None);
    assert!(from_json.skipped.is_empty(), "{:?}", from_json.skipped);
    assert_eq!(from_db.sessions.len(), 6);
    assert_eq!(by_id(&from_db.sessions), by_id(&from_json.sessions));
    // Each source is URL#app/user/session, password removed.
    let shown = DbUrl::parse(url).unwrap().to_string();
    for s in &from_db.sessions {
        assert!(
            s.source.starts_with(&format!("{shown}#")) && s.source.ends_with(&format!("/{}", s.id)),
            "{}",
            s.source
        );
    }
}

/// The run-folder files a sweep writes, with every session's source replaced by its id, so a
/// database run and an export run can be compared byte for byte.
const RUN_FILES: &[&str] = &[
    "runs.parquet",
    "runs.csv",
    "settings.parquet",
    "settings.csv",
    "settings.json",
    "timelines.json",
    "run.json",
];

fn sweep_into(input: &str, out: &Path, cwd: &Path) {
    let grid = root().join("tests/fixtures/sweep/grid.toml");
    let (code, _o, err) = run(
        &[
            "sweep",
            input,
            "--grid",
            grid.to_str().unwrap(),
            "--no-cache",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ],
        cwd,
    );
    assert_eq!(code, 0, "{err}");
}

fn assert_same_sweep(url: &str, exports: &str, secret: Option<&str>) {
    use compaction_sim::table::frames::{csv_bytes, read_parquet};
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("db"), dir.path().join("json"));
    sweep_into(url, &a, dir.path());
    let json_dir = fixtures().join("exports").join(exports);
    sweep_into(json_dir.to_str().unwrap(), &b, dir.path());
    let from_db = load_paths(&[url.to_string()], None).sessions;
    // Each file's bytes, with every source replaced by the session's id on both sides
    // (URL#app/user/id against exports/<service>/app/user/id.session.json).
    let normalize = |bytes: Vec<u8>, from_db_side: bool| {
        let mut t = String::from_utf8(bytes).unwrap();
        for s in &from_db {
            let frag = s.source.rsplit_once('#').unwrap().1;
            let file = json_dir.join(format!("{frag}.session.json"));
            let src = if from_db_side {
                s.source.clone()
            } else {
                file.display().to_string()
            };
            t = t.replace(&src, &format!("SRC:{}", s.id));
        }
        t
    };
    for f in RUN_FILES {
        let x = std::fs::read(a.join(f)).unwrap();
        if let Some(s) = secret {
            assert!(
                !x.windows(s.len()).any(|w| w == s.as_bytes()),
                "{f} holds the password"
            );
        }
        let y = std::fs::read(b.join(f)).unwrap();
        let (x, y) = if f.ends_with(".parquet") {
            // A Parquet file holding sources cannot match byte for byte: compare every value
            // through its CSV rendering instead; one without sources must match exactly.
            if x == y {
                continue;
            }
            let csv = |p: &Path| csv_bytes(&mut read_parquet(p).unwrap()).unwrap();
            (csv(&a.join(f)), csv(&b.join(f)))
        } else {
            (x, y)
        };
        let (xs, ys) = (normalize(x, true), normalize(y, false));
        if f == &"run.json" {
            // `run` is the folder's name; `inputs` lists the input files (one database
            // URL against six export files), which are source names too.
            let strip = |t: &str| {
                let mut v: serde_json::Value = serde_json::from_str(t).unwrap();
                v.as_object_mut().unwrap().remove("run");
                v.as_object_mut().unwrap().remove("inputs");
                v
            };
            assert_eq!(strip(&xs), strip(&ys), "run.json");
        } else {
            assert!(xs == ys, "{f} differs beyond the source names");
            assert!(
                xs.contains("SRC:") || !f.contains("runs"),
                "{f}: sources replaced"
            );
        }
    }
    assert_eq!(
        std::fs::read(a.join("settings.parquet")).unwrap(),
        std::fs::read(b.join("settings.parquet")).unwrap(),
        "settings.parquet holds no source: byte-identical"
    );
}

/// The settings a sweep of `url` writes equal, byte for byte, those of a sweep of its exports
/// copied into one folder under their ids: there the sessions come in another order than the
/// database's `URL#app/user/id` sources (issue #30: a mean summed in session order differed in
/// its sixth decimal).
fn assert_same_settings_in_any_session_order(url: &str, exports: &str) {
    let dir = tempfile::tempdir().unwrap();
    let flat = dir.path().join("flat");
    std::fs::create_dir(&flat).unwrap();
    let mut files = Vec::new();
    let mut stack = vec![fixtures().join("exports").join(exports)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    assert_eq!(files.len(), 6, "the six exports");
    for f in &files {
        std::fs::copy(f, flat.join(f.file_name().unwrap())).unwrap();
    }
    let from_db = load_paths(&[url.to_string()], None).sessions;
    let ids_in_db_order: Vec<&str> = from_db.iter().map(|s| s.id.as_str()).collect();
    let mut ids_in_flat_order = ids_in_db_order.clone();
    ids_in_flat_order.sort();
    assert_ne!(
        ids_in_db_order, ids_in_flat_order,
        "the flat folder must list the sessions in another order"
    );
    let (a, b) = (dir.path().join("db"), dir.path().join("json"));
    sweep_into(url, &a, dir.path());
    sweep_into(flat.to_str().unwrap(), &b, dir.path());
    for f in ["settings.csv", "settings.json", "settings.parquet"] {
        assert!(
            std::fs::read(a.join(f)).unwrap() == std::fs::read(b.join(f)).unwrap(),
            "{f} depends on the order of the sessions"
        );
    }
}

mod sqlite {
    use super::*;

    #[test]
    fn sqlite_service_sessions_equal_their_exports() {
        assert_same_as_exports(&fixture_url("sqlite_service.db"), "sqlite_service");
    }

    #[test]
    fn database_service_sessions_on_sqlite_equal_their_exports() {
        let url = fixture_url("database_service.db").replacen("sqlite:", "sqlite+aiosqlite:", 1);
        assert_same_as_exports(&url, "database_service");
    }

    #[test]
    fn sweep_of_a_database_equals_the_sweep_of_its_exports() {
        assert_same_sweep(&fixture_url("sqlite_service.db"), "sqlite_service", None);
    }

    #[test]
    fn settings_of_a_database_equal_those_of_its_exports_in_another_order() {
        assert_same_settings_in_any_session_order(
            &fixture_url("sqlite_service.db"),
            "sqlite_service",
        );
    }

    #[test]
    fn relative_urls_follow_sqlalchemy() {
        // sqlite:///relative.db is relative to the working folder.
        let (code, out, err) = run(
            &["inspect", "sqlite:///sqlite_service.db", "--json"],
            &fixtures(),
        );
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["totals"]["sessions"], 6);
        assert!(v["sessions"][0]["source"]
            .as_str()
            .unwrap()
            .starts_with("sqlite:///sqlite_service.db#"));
    }

    fn ids(url: &str, f: &DbFilter) -> Vec<String> {
        let (s, bad) = db::load_arg(url, f);
        assert!(bad.is_empty() || s.is_empty(), "{bad:?}");
        let mut v: Vec<String> = s.into_iter().map(|s| s.id).collect();
        v.sort();
        v
    }

    #[test]
    fn filters_select_sessions_in_both_sqlite_schemas() {
        for name in ["sqlite_service.db", "database_service.db"] {
            let url = fixture_url(name);
            let all = ids(&url, &DbFilter::default());
            assert_eq!(all.len(), 6, "{name}");
            let f = |app: Option<&str>,
                     user: Option<&str>,
                     session: Option<&str>,
                     since: Option<&str>| {
                DbFilter {
                    app: app.map(str::to_string),
                    user: user.map(str::to_string),
                    session: session.map(str::to_string),
                    since: since.map(|s| DbFilter::parse_since(s).unwrap()),
                }
            };
            assert_eq!(
                ids(&url, &f(Some("support_app"), None, None, None)).len(),
                4,
                "{name}"
            );
            assert_eq!(
                ids(&url, &f(Some("coding_app"), None, None, None)).len(),
                2,
                "{name}"
            );
            assert_eq!(
                ids(&url, &f(None, Some("user-2089"), None, None)),
                [
                    "0f126c98-3313-404b-a334-af6c6e108fc5",
                    "0f674e41-19af-4818-a478-44f6b7fee505"
                ],
                "{name}"
            );
            assert_eq!(
                ids(
                    &url,
                    &f(
                        None,
                        None,
                        Some("449f343b-7040-4c76-a266-e3627918b977"),
                        None
                    )
                ),
                ["449f343b-7040-4c76-a266-e3627918b977"],
                "{name}"
            );
            // Last updated 2026-12-25 (two), 12-22, 12-17, 12-07, 12-06.
            assert_eq!(
                ids(&url, &f(None, None, None, Some("2026-12-20"))).len(),
                3,
                "{name}"
            );
            assert_eq!(
                ids(&url, &f(None, None, None, Some("2026-12-25T09:00"))),
                ["0f674e41-19af-4818-a478-44f6b7fee505"],
                "{name}"
            );
            assert_eq!(
                ids(
                    &url,
                    &f(Some("support_app"), None, None, Some("2026-12-20"))
                )
                .len(),
                2,
                "{name}"
            );
            // Nothing selected is said, naming the filter.
            let (s, bad) = db::load_arg(&url, &f(Some("nope"), None, None, None));
            assert!(s.is_empty());
            assert!(
                bad[0].to_string().contains("no session matches --app nope"),
                "{}",
                bad[0]
            );
        }
    }

    #[test]
    fn filters_on_the_command_line() {
        let url = fixture_url("database_service.db");
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = run(
            &[
                "inspect",
                &url,
                "--app",
                "support_app",
                "--user",
                "user-2089",
                "--json",
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["totals"]["sessions"], 2);
        // Database filters without a database input are refused, not ignored.
        let file = root().join("transcripts/15-support-2.session.json");
        let (code, _o, err) = run(
            &["inspect", file.to_str().unwrap(), "--app", "x"],
            dir.path(),
        );
        assert_eq!(code, 2);
        assert!(err.contains("--app") && err.contains("database"), "{err}");
        // replay reads one session of a database.
        let (code, out, err) = run(
            &[
                "replay",
                &url,
                "--session",
                "0f674e41-19af-4818-a478-44f6b7fee505",
                "--after-tokens",
                "2000",
                "--keep-recent-events",
                "2",
                "--json",
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("0f674e41-19af-4818-a478-44f6b7fee505"),
            "{out}"
        );
        let (code, _o, err) = run(
            &[
                "replay",
                &url,
                "--session",
                "nope",
                "--after-tokens",
                "2000",
                "--keep-recent-events",
                "2",
            ],
            dir.path(),
        );
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("no session matches --session nope"), "{err}");
    }

    /// Events with equal timestamps come back as ADK reads them: `SqliteSessionService` in
    /// insertion (rowid) order, `DatabaseSessionService` by event id; and a v1 row's own id
    /// and invocation id win over `event_data`'s.
    #[test]
    fn tied_timestamps_keep_each_services_order() {
        let dir = tempfile::tempdir().unwrap();
        let ev = |id: &str, text: &str| {
            serde_json::json!({"id": id, "invocation_id": "inv", "author": "user",
                "timestamp": 1_800_000_000.5,
                "content": {"role": "user", "parts": [{"text": text}]}})
            .to_string()
        };
        let texts = |url: &str| -> Vec<String> {
            let l = db::load(&DbUrl::parse(url).unwrap(), &DbFilter::default())
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(l.skipped.is_empty(), "{:?}", l.skipped);
            l.sessions[0]
                .events
                .iter()
                .map(|e| format!("{}:{:?}", e.id.clone().unwrap_or_default(), e.parts))
                .collect()
        };
        // SqliteSessionService's tables (from the ADK-written fixture), rows b then a.
        let p = dir.path().join("svc.db");
        std::fs::copy(fixtures().join("sqlite_service.db"), &p).unwrap();
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch("DELETE FROM events; DELETE FROM sessions;")
            .unwrap();
        c.execute(
            "INSERT INTO sessions VALUES ('a', 'u', 's', '{}', 1, 1)",
            [],
        )
        .unwrap();
        for (id, text) in [("b", "first written"), ("a", "second written")] {
            c.execute(
                "INSERT INTO events VALUES (?1, 'a', 'u', 's', 'inv', 1800000000.5, ?2)",
                [id, &ev(id, text)],
            )
            .unwrap();
        }
        drop(c);
        let got = texts(&sqlite_url(&p));
        assert!(
            got[0].starts_with("b:") && got[1].starts_with("a:"),
            "{got:?}"
        );
        // DatabaseSessionService v1 (the ADK-written fixture's tables), same rows: by id.
        let p = dir.path().join("dbsvc.db");
        std::fs::copy(fixtures().join("database_service.db"), &p).unwrap();
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch("DELETE FROM events; DELETE FROM sessions;")
            .unwrap();
        c.execute(
            "INSERT INTO sessions VALUES ('a', 'u', 's', '{}', '2027-01-15 08:00:00.500000', \
             '2027-01-15 08:00:00.500000')",
            [],
        )
        .unwrap();
        for (id, text) in [("b", "first written"), ("a", "second written")] {
            // event_data names another id and no timestamp: the row's id and the
            // `timestamp` column win, as in `StorageEvent.to_event`.
            let mut data: serde_json::Value = serde_json::from_str(&ev("ignored", text)).unwrap();
            data.as_object_mut().unwrap().remove("timestamp");
            c.execute(
                "INSERT INTO events VALUES (?1, 'a', 'u', 's', 'inv', \
                 '2027-01-15 08:00:00.500000', ?2)",
                [id, &data.to_string()],
            )
            .unwrap();
        }
        drop(c);
        let got = texts(&sqlite_url(&p));
        assert!(
            got[0].starts_with("a:") && got[1].starts_with("b:"),
            "{got:?}"
        );
        let l = db::load(
            &DbUrl::parse(&sqlite_url(&p)).unwrap(),
            &DbFilter::default(),
        )
        .unwrap();
        // 2027-01-15T08:00:00.5Z
        assert_eq!(l.sessions[0].events[0].timestamp, 1_800_000_000.5);
    }

    #[test]
    fn v0_schema_is_refused_naming_the_migration_command() {
        let url = fixture_url("v0.db");
        let (code, _o, err) = run(&["inspect", &url], &fixtures());
        assert_eq!(code, 2, "{err}");
        let line = err
            .lines()
            .find(|l| l.contains("v0"))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(line.contains(&url), "{line}");
        assert!(line.contains("adk migrate session"), "{line}");
        assert!(line.contains("table events"), "{line}");
        let e = db::load(&DbUrl::parse(&url).unwrap(), &DbFilter::default()).unwrap_err();
        assert!(matches!(e, db::DbError::V0Schema { .. }), "{e}");
    }

    #[test]
    fn missing_table_and_unknown_schema_name_the_url_and_table() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("half.db");
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch(
            "CREATE TABLE sessions (app_name TEXT, user_id TEXT, id TEXT, update_time REAL);",
        )
        .unwrap();
        drop(c);
        let url = sqlite_url(&p);
        let (code, _o, err) = run(&["inspect", &url], dir.path());
        assert_eq!(code, 2, "{err}");
        assert!(
            err.lines()
                .any(|l| l.contains(&url) && l.contains("table events: missing")),
            "{err}"
        );
        let p2 = dir.path().join("odd.db");
        let c = rusqlite::Connection::open(&p2).unwrap();
        c.execute_batch(
            "CREATE TABLE adk_internal_metadata (key TEXT, value TEXT);
             INSERT INTO adk_internal_metadata VALUES ('schema_version', '7');",
        )
        .unwrap();
        drop(c);
        let e = db::load(
            &DbUrl::parse(&sqlite_url(&p2)).unwrap(),
            &DbFilter::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("table adk_internal_metadata: unknown schema") && e.contains("`7`"),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1);
        // Not a database at all, and no file.
        let p3 = dir.path().join("text.db");
        std::fs::write(
            &p3,
            "hello, this is not SQLite, but long enough to have a header....",
        )
        .unwrap();
        let e = db::load(
            &DbUrl::parse(&sqlite_url(&p3)).unwrap(),
            &DbFilter::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with(&sqlite_url(&p3)), "{e}");
        let e = db::load(
            &DbUrl::parse(&sqlite_url(&dir.path().join("none.db"))).unwrap(),
            &DbFilter::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.ends_with("no such database file"), "{e}");
        assert!(!dir.path().join("none.db").exists(), "never created");
    }

    fn fingerprint(dir: &Path) -> Vec<(String, u64, std::time::SystemTime, u64)> {
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let m = e.metadata().unwrap();
                let bytes = std::fs::read(e.path()).unwrap();
                let hash = xxhash_rust::xxh3::xxh3_64(&bytes);
                (
                    e.file_name().to_string_lossy().into_owned(),
                    m.len(),
                    m.modified().unwrap(),
                    hash,
                )
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn reading_never_writes_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        for f in ["sqlite_service.db", "database_service.db"] {
            std::fs::copy(fixtures().join(f), data.join(f)).unwrap();
        }
        let before = fingerprint(&data);
        std::thread::sleep(std::time::Duration::from_millis(20));
        for f in ["sqlite_service.db", "database_service.db"] {
            let url = sqlite_url(&data.join(f));
            let (code, _o, err) = run(&["inspect", &url], dir.path());
            assert_eq!(code, 0, "{err}");
            let out = dir.path().join(format!("run-{f}"));
            sweep_into(&url, &out, dir.path());
        }
        // Same files (no journal, WAL or shared-memory file left), same bytes, same mtimes.
        assert_eq!(fingerprint(&data), before);
    }

    /// ADK appending to the database while it is read: every read sees whole transactions
    /// (a session's events as committed together), and the writer is never refused.
    #[test]
    fn a_database_being_written_is_read_consistently() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("live.db");
        std::fs::copy(fixtures().join("sqlite_service.db"), &p).unwrap();
        let url = DbUrl::parse(&sqlite_url(&p)).unwrap();
        let event = |sid: &str, i: usize, author: &str| {
            let role = if author == "user" { "user" } else { "model" };
            serde_json::json!({
                "id": format!("{sid}-e{i}"), "invocation_id": format!("{sid}-inv{}", i / 2),
                "author": author, "timestamp": 1_800_000_000.0 + i as f64,
                "content": {"role": role, "parts": [{"text": format!("turn {i} of {sid}")}]},
                "actions": {"state_delta": {}, "artifact_delta": {}},
            })
        };
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let p = p.clone();
            let stop = stop.clone();
            std::thread::spawn(move || -> usize {
                let mut c = rusqlite::Connection::open(&p).unwrap();
                c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
                let mut k = 0;
                while !stop.load(std::sync::atomic::Ordering::SeqCst) || k < 20 {
                    let sid = format!("live-{k:03}");
                    let tx = c.transaction().unwrap();
                    tx.execute(
                        "INSERT INTO sessions VALUES ('live_app', 'u', ?1, '{}', 1.0, 1.0)",
                        [&sid],
                    )
                    .unwrap();
                    for i in 0..10 {
                        let e = event(&sid, i, if i % 2 == 0 { "user" } else { "agent" });
                        tx.execute(
                            "INSERT INTO events VALUES (?1, 'live_app', 'u', ?2, ?3, ?4, ?5)",
                            rusqlite::params![
                                e["id"].as_str().unwrap(),
                                sid,
                                e["invocation_id"].as_str().unwrap(),
                                e["timestamp"].as_f64().unwrap(),
                                e.to_string()
                            ],
                        )
                        .unwrap();
                    }
                    tx.commit().unwrap();
                    k += 1;
                    if k >= 200 {
                        break;
                    }
                }
                k
            })
        };
        let mut reads = 0;
        let mut seen_live = 0;
        while !writer.is_finished() || reads < 3 {
            let l = db::load(&url, &DbFilter::default()).unwrap_or_else(|e| panic!("{e}"));
            assert!(l.skipped.is_empty(), "{:?}", l.skipped);
            for s in l.sessions.iter().filter(|s| s.id.starts_with("live-")) {
                assert_eq!(s.events.len(), 10, "{} read half-written", s.id);
                seen_live += 1;
            }
            reads += 1;
            if reads >= 3 {
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let written = writer.join().expect("the writer was never refused");
        assert!(
            written >= 20 && reads >= 3,
            "{written} written, {reads} reads"
        );
        assert!(seen_live > 0, "the reads overlapped the writes");
    }

    #[test]
    fn passwords_never_reach_the_terminal() {
        let dir = tempfile::tempdir().unwrap();
        // Port 1 on the loopback refuses: the error names the URL without its password.
        let url = "postgresql+asyncpg://ann:hunter2-secret@127.0.0.1:1/adk";
        for args in [
            vec!["inspect", url],
            vec!["sweep", url, "--out", "x"],
            vec![
                "replay",
                url,
                "--after-tokens",
                "1000",
                "--keep-recent-events",
                "2",
            ],
            vec!["calibrate", url, "--out", "lat.toml"],
        ] {
            let (code, out, err) = run(&args, dir.path());
            assert_ne!(code, 0, "{args:?}");
            assert!(
                !out.contains("hunter2") && !err.contains("hunter2"),
                "{args:?}: {out}{err}"
            );
            assert!(err.contains("ann@127.0.0.1:1/adk"), "{args:?}: {err}");
        }
        assert!(!dir.path().join("x").exists() && !dir.path().join("lat.toml").exists());
    }
}

mod postgres {
    use super::*;

    #[test]
    fn postgres_sessions_equal_their_exports() {
        let url = pg_url();
        assert_same_as_exports(&url, "postgres");
        // The asyncpg form ADK's --session_service_uri takes reads the same.
        let asyncpg = url.replacen("postgresql:", "postgresql+asyncpg:", 1);
        assert_same_as_exports(&asyncpg, "postgres");
    }

    #[test]
    fn postgres_sweep_equals_the_sweep_of_its_exports_and_hides_the_password() {
        let url = pg_url();
        let pw = pg_password(&url);
        assert_same_sweep(&url, "postgres", Some(&pw));
        // Read back by ADK into files named by id (another session order): same bytes.
        assert_same_settings_in_any_session_order(&url, "postgres");
        let dir = tempfile::tempdir().unwrap();
        let (code, out, err) = run(&["inspect", &url, "--json"], dir.path());
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains(&pw) && !err.contains(&pw));
        let (code, out, err) = run(
            &[
                "replay",
                &url,
                "--session",
                "449f343b-7040-4c76-a266-e3627918b977",
                "--after-tokens",
                "4000",
                "--keep-recent-events",
                "2",
                "--json",
            ],
            dir.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("449f343b") && !out.contains(&pw) && !err.contains(&pw));
    }

    /// `<db>_precise` (scripts/start-postgres.sh): timestamps as a live run stamps them (full
    /// float precision), every other event of one session read back from the `timestamp`
    /// column. Read exactly as ADK reads them back (issue #30): every session equals ADK's
    /// export, timestamps included, and the sweeps are the same bytes.
    #[test]
    fn precise_timestamps_read_as_adk_reads_them_back() {
        let base = pg_url();
        let (head, db) = base.rsplit_once('/').unwrap();
        let url = format!("{head}/{db}_precise");
        let from_db = load_paths(std::slice::from_ref(&url), None);
        assert!(from_db.skipped.is_empty(), "{:?}", from_db.skipped);
        let dir = fixtures().join("exports").join("postgres-precise");
        let from_json = load_paths(&[dir.display().to_string()], None);
        assert_eq!(from_db.sessions.len(), 2);
        assert_eq!(by_id(&from_db.sessions), by_id(&from_json.sessions));
        // The fixture holds what it is for: sub-millisecond times, and column-read events.
        let times: Vec<f64> = from_db
            .sessions
            .iter()
            .flat_map(|s| s.events.iter().map(|e| e.timestamp))
            .collect();
        let whole_micros = |t: &f64| (t * 1e6).round() / 1e6 == *t;
        assert!(times.iter().any(|t| !whole_micros(t)));
        assert!(times.iter().any(whole_micros));
        assert_same_sweep(&url, "postgres-precise", Some(&pg_password(&base)));
    }

    #[test]
    fn postgres_filters() {
        let url = pg_url();
        let f = DbFilter {
            app: Some("support_app".into()),
            since: Some(DbFilter::parse_since("2026-12-20").unwrap()),
            ..Default::default()
        };
        let (s, bad) = db::load_arg(&url, &f);
        assert!(bad.is_empty(), "{bad:?}");
        let mut ids: Vec<String> = s.into_iter().map(|s| s.id).collect();
        ids.sort();
        assert_eq!(
            ids,
            [
                "0f126c98-3313-404b-a334-af6c6e108fc5",
                "0f674e41-19af-4818-a478-44f6b7fee505"
            ]
        );
        let f = DbFilter {
            user: Some("user-4963".into()),
            ..Default::default()
        };
        assert_eq!(db::load_arg(&url, &f).0.len(), 1);
    }

    /// The password from `PGPASSWORD` or a password file works, and a wrong one is an error
    /// that does not print it.
    #[test]
    fn postgres_password_from_pgpassword_pgpass_and_wrong_ones() {
        let url = pg_url();
        let pw = pg_password(&url);
        let bare = url.replacen(&format!(":{pw}@"), "@", 1);
        assert_ne!(bare, url);
        let dir = tempfile::tempdir().unwrap();
        let inspect = |env: &[(&str, &str)], u: &str| {
            let mut c = bin();
            c.current_dir(dir.path())
                .env_remove("PGPASSWORD")
                .env_remove("PGPASSFILE")
                .env("HOME", dir.path())
                .args(["inspect", u]);
            for (k, v) in env {
                c.env(k, v);
            }
            let o = c.output().unwrap();
            (
                o.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&o.stdout).into_owned()
                    + &String::from_utf8_lossy(&o.stderr),
            )
        };
        let (code, out) = inspect(&[("PGPASSWORD", &pw)], &bare);
        assert_eq!(code, 0, "{out}");
        assert!(!out.contains(&pw));
        let pgpass = dir.path().join(".pgpass");
        std::fs::write(&pgpass, format!("*:*:*:compaction_sim:{pw}\n")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let (code, out) = inspect(&[], &bare);
        assert_eq!(code, 0, "{out}");
        // A wrong password: refused by the server, never printed.
        let wrong = url.replacen(&pw, "wrong-Pa55word", 1);
        let (code, out) = inspect(&[], &wrong);
        assert_eq!(code, 2, "{out}");
        assert!(out.contains("password authentication failed"), "{out}");
        assert!(
            !out.contains("wrong-Pa55word") && !out.contains(&pw),
            "{out}"
        );
    }
}
