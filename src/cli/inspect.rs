//! `compaction-sim inspect PATH...`: one row per session (sizes, usage, critical events),
//! a totals line, the calibration view, and conversion to canonical JSONL.
//!
//! Counted prompt sizes are raw history (every event before the request, no compaction, no
//! fixed overhead); the calibration view (fitted in `tokens::calibration`) shows how far the
//! counted history lands from what the provider recorded.

use crate::cli::{EXIT_BAD_INPUT, EXIT_OK};
use crate::tokens::calibration::history_before;
pub use crate::tokens::calibration::{
    calibrate, Calibration, FormatCalibration, SessionCalibration, MIN_CALIBRATION_REQUESTS,
};
use crate::tokens::{count_sessions_with_stats, CacheOpts, CountStats, Tokenizer};
use crate::transcript::{Format, Part, ReadError, Session};
use clap::Args;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Transcript files, folders (read recursively) or glob patterns, or ADK session
    /// database URLs (sqlite:///FILE.db, postgresql://USER@HOST:PORT/DB).
    #[arg(required_unless_present = "samples", value_name = "PATH")]
    pub paths: Vec<String>,
    /// Read the 40 sample sessions (a checkout's transcripts/: `synth --sessions 40 --seed
    /// 6`), generated into a temporary folder; with PATH, `transcripts/NAME` picks one.
    #[arg(long)]
    pub samples: bool,
    /// Filters for database inputs.
    #[command(flatten)]
    pub db: super::db_flags::DbFlags,
    /// Read every file as this format instead of detecting it from content
    /// (adk, adk-eval-set, openai-chat, claude-code, codex, gemini-cli, openhands, swe-agent,
    /// tau2, canonical).
    #[arg(long, value_name = "F", value_parser = parse_format)]
    pub format: Option<Format>,
    /// Token counter: o200k (default), cl100k, or adk-chars (ADK's floor(chars/4)).
    #[arg(long, value_name = "T", default_value = "o200k")]
    pub tokenizer: Tokenizer,
    /// Print JSON (stable field names) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also show how far counted history + a fitted fixed overhead lands from the recorded
    /// prompt sizes (median and p95 absolute error in %, per format).
    #[arg(long)]
    pub calibration: bool,
    /// Write every session read as canonical JSONL (only `jsonl` is supported); needs --out.
    #[arg(long, value_name = "jsonl", value_parser = ["jsonl"], requires = "out")]
    pub emit: Option<String>,
    /// Folder for --emit: one `<sanitized session id>.jsonl` per session. A new path, an
    /// empty folder, or (with --force) an earlier output of --emit; anything else is refused.
    #[arg(long, value_name = "DIR", requires = "emit")]
    pub out: Option<PathBuf>,
    /// Replace the --out folder when it holds an earlier compaction-sim output.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// Make bad files fatal (exit 2) instead of listing and skipping them.
    #[arg(long)]
    pub strict: bool,
    /// Token count cache folder (default: env COMPACTION_SIM_CACHE, else
    /// $XDG_CACHE_HOME/compaction-sim, else ~/.cache/compaction-sim).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Do not read or write the token count cache.
    #[arg(long)]
    pub no_cache: bool,
}

/// `--format` names a format this tool does not read.
#[derive(Debug, thiserror::Error)]
#[error("unknown format `{0}` (expected one of: {names})", names = Format::ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", "))]
struct UnknownFormat(String);

fn parse_format(s: &str) -> Result<Format, UnknownFormat> {
    Format::from_name(s).ok_or_else(|| UnknownFormat(s.to_string()))
}

/// One table row (and one `sessions[]` object of `--json`). Token columns use the chosen
/// tokenizer; `recorded_*` columns are the provider's own numbers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRow {
    pub source: String,
    pub id: String,
    pub format: String,
    pub events: u64,
    /// Distinct invocation ids (user turns).
    pub invocations: u64,
    pub model_requests: u64,
    pub tool_calls: u64,
    /// Tokens of the largest event carrying a tool response.
    pub largest_tool_output_tokens: u64,
    /// Largest recorded prompt (cached tokens included); `None` when nothing was recorded.
    pub recorded_max_prompt_tokens: Option<u64>,
    /// Largest counted history before a model request (raw history, no overhead).
    pub counted_max_prompt_tokens: u64,
    /// Critical flags (approval, refusal, confirmation, tool error, interruption).
    pub critical_events: u64,
    pub recorded_compactions: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    pub sessions: u64,
    pub events: u64,
    pub invocations: u64,
    pub model_requests: u64,
    pub tool_calls: u64,
    /// Max over sessions.
    pub largest_tool_output_tokens: u64,
    /// Max over sessions.
    pub recorded_max_prompt_tokens: Option<u64>,
    /// Max over sessions.
    pub counted_max_prompt_tokens: u64,
    pub critical_events: u64,
    pub recorded_compactions: u64,
}

pub fn session_row(s: &Session, counts: &[u32]) -> SessionRow {
    let prefix = history_before(counts);
    let invocations: BTreeSet<&str> = s.events.iter().map(|e| e.invocation_id.as_str()).collect();
    let mut row = SessionRow {
        source: s.source.clone(),
        id: s.id.clone(),
        format: s.format.name().to_string(),
        events: s.events.len() as u64,
        invocations: invocations.len() as u64,
        model_requests: 0,
        tool_calls: 0,
        largest_tool_output_tokens: 0,
        recorded_max_prompt_tokens: None,
        counted_max_prompt_tokens: 0,
        critical_events: 0,
        recorded_compactions: s.recorded_compactions.len() as u64,
    };
    for (i, e) in s.events.iter().enumerate() {
        let tokens = counts.get(i).copied().unwrap_or(0) as u64;
        if e.model_request {
            row.model_requests += 1;
            let history = prefix.get(i).copied().unwrap_or(0);
            row.counted_max_prompt_tokens = row.counted_max_prompt_tokens.max(history);
        }
        if let Some(u) = e.usage {
            let m = row
                .recorded_max_prompt_tokens
                .unwrap_or(0)
                .max(u.prompt_tokens);
            row.recorded_max_prompt_tokens = Some(m);
        }
        row.tool_calls += e
            .parts
            .iter()
            .filter(|p| matches!(p, Part::ToolCall { .. }))
            .count() as u64;
        if e.parts
            .iter()
            .any(|p| matches!(p, Part::ToolResponse { .. }))
        {
            row.largest_tool_output_tokens = row.largest_tool_output_tokens.max(tokens);
        }
        row.critical_events += e.critical.len() as u64;
    }
    row
}

pub fn totals(rows: &[SessionRow]) -> Totals {
    let mut t = Totals {
        sessions: rows.len() as u64,
        events: 0,
        invocations: 0,
        model_requests: 0,
        tool_calls: 0,
        largest_tool_output_tokens: 0,
        recorded_max_prompt_tokens: None,
        counted_max_prompt_tokens: 0,
        critical_events: 0,
        recorded_compactions: 0,
    };
    for r in rows {
        t.events += r.events;
        t.invocations += r.invocations;
        t.model_requests += r.model_requests;
        t.tool_calls += r.tool_calls;
        t.largest_tool_output_tokens = t
            .largest_tool_output_tokens
            .max(r.largest_tool_output_tokens);
        if let Some(m) = r.recorded_max_prompt_tokens {
            t.recorded_max_prompt_tokens = Some(t.recorded_max_prompt_tokens.unwrap_or(0).max(m));
        }
        t.counted_max_prompt_tokens = t.counted_max_prompt_tokens.max(r.counted_max_prompt_tokens);
        t.critical_events += r.critical_events;
        t.recorded_compactions += r.recorded_compactions;
    }
    t
}

// ------------------------------------------------------------------------------ rendering

fn opt(v: Option<u64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

/// Left-aligned first column(s), right-aligned numbers, two spaces between columns.
fn render_grid(header: &[&str], rows: &[Vec<String>], left_cols: usize) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(c.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if i < left_cols {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for r in rows {
        out.push_str(&line(r.iter().map(|c| c.as_str()).collect()));
    }
    out
}

pub fn render_table(rows: &[SessionRow], t: &Totals, tok: Tokenizer) -> String {
    let header = [
        "session",
        "format",
        "events",
        "invocations",
        "requests",
        "tool_calls",
        "max_tool_out_tok",
        "recorded_max_prompt_tok",
        "counted_max_prompt_tok",
        "critical",
        "compactions",
    ];
    let mut cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                // File names and ids come from the user's disk and transcripts: escaped so
                // a newline or escape sequence cannot forge rows or drive the terminal.
                super::term(&r.source).into_owned(),
                r.format.clone(),
                r.events.to_string(),
                r.invocations.to_string(),
                r.model_requests.to_string(),
                r.tool_calls.to_string(),
                r.largest_tool_output_tokens.to_string(),
                opt(r.recorded_max_prompt_tokens),
                r.counted_max_prompt_tokens.to_string(),
                r.critical_events.to_string(),
                r.recorded_compactions.to_string(),
            ]
        })
        .collect();
    cells.push(vec![
        format!("TOTAL ({} sessions)", t.sessions),
        String::new(),
        t.events.to_string(),
        t.invocations.to_string(),
        t.model_requests.to_string(),
        t.tool_calls.to_string(),
        t.largest_tool_output_tokens.to_string(),
        opt(t.recorded_max_prompt_tokens),
        t.counted_max_prompt_tokens.to_string(),
        t.critical_events.to_string(),
        t.recorded_compactions.to_string(),
    ]);
    let mut out = render_grid(&header, &cells, 2);
    out.push_str(&format!(
        "tokens counted with {tok}; counted prompt = raw history before a model request \
         (no fixed overhead, no compaction); recorded prompt includes cached tokens; \
         TOTAL sums counts and takes the max of *_tok columns\n"
    ));
    out
}

fn pct(x: f64) -> String {
    format!("{x:.1}")
}

pub fn render_calibration(c: &Calibration) -> String {
    let mut out = format!("\ncalibration (tokenizer {})\n", c.tokenizer);
    let header = [
        "format",
        "sessions",
        "requests",
        "excluded_post_compaction",
        "too_short",
        "median_overhead_tok",
        "median_scale",
        "p50_abs_err_%",
        "p95_abs_err_%",
    ];
    let rows: Vec<Vec<String>> = c
        .formats
        .iter()
        .map(|f| {
            vec![
                f.format.clone(),
                f.sessions.to_string(),
                f.requests.to_string(),
                f.excluded_post_compaction.to_string(),
                f.sessions_too_short.to_string(),
                f.median_overhead_tokens.to_string(),
                f.median_scale
                    .map(|x| format!("{x:.3}"))
                    .unwrap_or_else(|| "-".into()),
                pct(f.p50_abs_error_pct),
                pct(f.p95_abs_error_pct),
            ]
        })
        .collect();
    if rows.is_empty() {
        out.push_str("no session records prompt sizes\n");
    } else {
        out.push_str(&render_grid(&header, &rows, 1));
    }
    out.push_str(&format!("{}; sessions with fewer than {MIN_CALIBRATION_REQUESTS} usable requests are too short to fit\n", c.method));
    out
}

// ------------------------------------------------------------------------------ emit

/// A session id made safe as a file name: ASCII letters, digits, `.`, `_`, `-` kept, the rest
/// replaced by `_`; at most 100 chars; never empty, `.` or `..`, never starting with `.`.
pub fn sanitize_file_stem(id: &str) -> String {
    let mut s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if s.starts_with('.') {
        s.replace_range(0..1, "_");
    }
    if s.is_empty() {
        s = "session".into();
    }
    s
}

/// Distinct file names for the sessions, in session order (duplicates get `-2`, `-3`, ...).
pub fn emit_names(sessions: &[Session]) -> Vec<String> {
    let mut used = BTreeSet::new();
    sessions
        .iter()
        .map(|s| {
            let stem = sanitize_file_stem(&s.id);
            let mut name = format!("{stem}.jsonl");
            let mut k = 2;
            while !used.insert(name.to_ascii_lowercase()) {
                name = format!("{stem}-{k}.jsonl");
                k += 1;
            }
            name
        })
        .collect()
}

/// Write every session into a new folder (or an empty one, or with --force an earlier
/// output of this command), built aside and moved into place whole, like a run folder.
fn emit_jsonl(
    sessions: &[Session],
    dir: &Path,
    inputs: &[PathBuf],
    force: bool,
) -> anyhow::Result<()> {
    use crate::table::publish;
    let target = publish::check_target(dir, inputs, publish::Chosen::ByUser { force })?;
    // From here a signal stops between files and the build folder is removed on the way out.
    super::EXIT_AT_ONCE.store(false, std::sync::atomic::Ordering::SeqCst);
    let build = publish::build_dir_for(&target)?;
    for (s, name) in sessions.iter().zip(emit_names(sessions)) {
        if super::CANCEL.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(crate::error::Cancelled.into());
        }
        let text = crate::transcript::write_canonical(s);
        crate::atomic::write_atomic(&build.path().join(&name), text.as_bytes())?;
    }
    publish::publish(build, &target)?;
    Ok(())
}

// ------------------------------------------------------------------------------ run

#[derive(Serialize)]
struct BadFile<'a> {
    file: &'a str,
    location: &'a str,
    message: &'a str,
}

#[derive(Serialize)]
struct CountStatsJson {
    events: u64,
    tokenized: u64,
    cached: u64,
}

#[derive(Serialize)]
struct InspectJson<'a> {
    tokenizer: &'a str,
    sessions: &'a [SessionRow],
    totals: &'a Totals,
    bad_files: Vec<BadFile<'a>>,
    warnings: u64,
    token_counts: CountStatsJson,
    #[serde(skip_serializing_if = "Option::is_none")]
    calibration: Option<&'a Calibration>,
}

pub fn run(args: InspectArgs) -> anyhow::Result<u8> {
    super::exit_at_once_on_signal();
    let (paths, _samples) = super::samples::inputs(args.samples, &args.paths, "inspect")?;
    let args = InspectArgs { paths, ..args };
    let filter = args.db.filter(&args.paths, false)?;
    let loaded = crate::transcript::load_inputs(&args.paths, args.format, &filter);
    // Bad files are fatal with --strict, for a single file given alone, and when nothing at
    // all could be read (an empty table would hide the problem).
    let single_file = args.paths.len() == 1 && Path::new(&args.paths[0]).is_file();
    let nothing_read = loaded.sessions.is_empty();
    if !loaded.skipped.is_empty() && (args.strict || single_file || nothing_read) {
        refuse_bad_files(&loaded.skipped);
        return Ok(EXIT_BAD_INPUT);
    }
    super::print_capped("skipped: ", loaded.skipped.iter().map(|e| e.to_string()));
    super::print_merged(&loaded.merged);
    super::print_notes(loaded.sessions.iter().flat_map(|s| &s.notes));
    let mut sessions = loaded.sessions;
    sessions.sort_by(|a, b| (&a.source, &a.id).cmp(&(&b.source, &b.id)));
    super::warn_orphan_responses(sessions.iter().map(|s| {
        (
            s.source.as_str(),
            s.id.as_str(),
            crate::transcript::util::orphan_responses(&s.events) as u64,
        )
    }));
    let (counts, stats) = count_tokens(&args, &sessions)?;
    let rows: Vec<SessionRow> = sessions
        .iter()
        .zip(&counts)
        .map(|(s, c)| session_row(s, c))
        .collect();
    let tot = totals(&rows);
    let calibration = args
        .calibration
        .then(|| calibrate(&sessions, &counts, args.tokenizer));
    if let (Some(_), Some(dir)) = (&args.emit, &args.out) {
        let inputs: Vec<PathBuf> = args.paths.iter().map(PathBuf::from).collect();
        emit_jsonl(&sessions, dir, &inputs, args.force)?;
        errln!(
            "wrote {} canonical JSONL file(s) to {}",
            sessions.len(),
            dir.display()
        );
    }
    let report = Report {
        rows: &rows,
        totals: &tot,
        skipped: &loaded.skipped,
        stats: &stats,
        calibration: calibration.as_ref(),
    };
    report.print(args.json, args.tokenizer)?;
    if !loaded.skipped.is_empty() {
        errln!(
            "{} warning(s): bad files listed above were skipped",
            loaded.skipped.len()
        );
    }
    Ok(EXIT_OK)
}

/// Every event's tokens, from the cache where it has them (the numbers said on stderr).
fn count_tokens(
    args: &InspectArgs,
    sessions: &[Session],
) -> anyhow::Result<(Vec<Vec<u32>>, CountStats)> {
    let cache = CacheOpts::resolve(args.cache_dir.clone(), args.no_cache);
    let (counts, stats) = count_sessions_with_stats(sessions, args.tokenizer, &cache)?;
    errln!(
        "tokens ({}): {} events, {} tokenized, {} from cache",
        args.tokenizer,
        stats.events,
        stats.tokenized,
        stats.cached
    );
    Ok((counts, stats))
}

/// Each bad file on one line; a count follows only when there are several.
fn refuse_bad_files(skipped: &[ReadError]) {
    super::print_capped("error: ", skipped.iter().map(|e| e.to_string()));
    if skipped.len() > 1 {
        errln!("error: {} bad files", skipped.len());
    }
}

/// What `--json` shows.
struct Report<'a> {
    rows: &'a [SessionRow],
    totals: &'a Totals,
    skipped: &'a [ReadError],
    stats: &'a CountStats,
    calibration: Option<&'a Calibration>,
}

impl Report<'_> {
    /// The tables (and the calibration view), or with `json` one JSON document.
    fn print(&self, json: bool, tok: Tokenizer) -> anyhow::Result<()> {
        if json {
            return print_json(self, tok);
        }
        super::out_bytes(render_table(self.rows, self.totals, tok).as_bytes())?;
        if let Some(c) = self.calibration {
            super::out_bytes(render_calibration(c).as_bytes())?;
        }
        Ok(())
    }
}

fn print_json(r: &Report<'_>, tok: Tokenizer) -> anyhow::Result<()> {
    let doc = InspectJson {
        tokenizer: tok.name(),
        sessions: r.rows,
        totals: r.totals,
        bad_files: r
            .skipped
            .iter()
            .map(|e| BadFile {
                file: &e.file,
                location: &e.location,
                message: &e.message,
            })
            .collect(),
        warnings: r.skipped.len() as u64,
        token_counts: CountStatsJson {
            events: r.stats.events,
            tokenized: r.stats.tokenized,
            cached: r.stats.cached,
        },
        calibration: r.calibration,
    };
    let mut text = serde_json::to_vec_pretty(&doc)?;
    text.push(b'\n');
    super::out_bytes(&text)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Critical, Event, RecordedCompaction, Role, Usage};
    use serde_json::json;

    fn ev(inv: &str, parts: Vec<Part>) -> Event {
        let mut e = Event::new("agent", Role::Model, inv, 0.0);
        e.parts = parts;
        e
    }

    fn text(t: &str) -> Part {
        Part::Text { text: t.into() }
    }

    /// Built through serde so fields added to the model later take their defaults.
    fn session(events: Vec<Event>) -> Session {
        serde_json::from_value(json!({
            "id": "s/1",
            "source": "x.jsonl",
            "format": "codex",
            "events": events,
        }))
        .expect("session")
    }

    #[test]
    fn row_counts_follow_the_events() {
        let mut req1 = ev(
            "i1",
            vec![Part::ToolCall {
                id: None,
                name: "f".into(),
                args: json!({}),
            }],
        );
        req1.model_request = true;
        req1.usage = Some(Usage {
            prompt_tokens: 500,
            ..Default::default()
        });
        let mut resp = ev(
            "i1",
            vec![Part::ToolResponse {
                id: None,
                name: "f".into(),
                response: json!("x"),
            }],
        );
        resp.critical = vec![Critical::ToolError];
        let mut req2 = ev("i2", vec![text("done")]);
        req2.model_request = true;
        req2.usage = Some(Usage {
            prompt_tokens: 900,
            ..Default::default()
        });
        let mut s = session(vec![ev("i1", vec![text("hi")]), req1, resp, req2]);
        let rc: RecordedCompaction =
            serde_json::from_value(json!({"at_event": 3, "source": "t"})).expect("compaction");
        s.recorded_compactions.push(rc);
        let counts = [10, 20, 300, 5];
        let r = session_row(&s, &counts);
        assert_eq!(r.events, 4);
        assert_eq!(r.invocations, 2);
        assert_eq!(r.model_requests, 2);
        assert_eq!(r.tool_calls, 1);
        assert_eq!(r.largest_tool_output_tokens, 300);
        assert_eq!(r.recorded_max_prompt_tokens, Some(900));
        // History before req2 = 10 + 20 + 300.
        assert_eq!(r.counted_max_prompt_tokens, 330);
        assert_eq!(r.critical_events, 1);
        assert_eq!(r.recorded_compactions, 1);
        let t = totals(&[r.clone(), r]);
        assert_eq!(
            (t.sessions, t.events, t.counted_max_prompt_tokens),
            (2, 8, 330)
        );
    }

    #[test]
    fn sanitized_names_are_safe_and_distinct() {
        assert_eq!(sanitize_file_stem("../../etc/passwd"), "_._.._etc_passwd");
        assert_eq!(sanitize_file_stem(""), "session");
        assert_eq!(sanitize_file_stem("a b/c"), "a_b_c");
        let mut a = session(vec![]);
        a.id = "x/y".into();
        let mut b = a.clone();
        b.id = "x_y".into();
        assert_eq!(
            emit_names(&[a, b]),
            vec!["x_y.jsonl".to_string(), "x_y-2.jsonl".to_string()]
        );
    }
}
