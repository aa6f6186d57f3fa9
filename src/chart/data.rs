//! Reading a run folder's data files (`settings.json`, `runs.csv`, `run.json`,
//! `timelines.json`) into plain rows, for the charts and the report.
//!
//! Why a reader of its own: `chart` and `report` must work from the data files alone (the
//! `report` command re-renders without replaying), and must not know the engine. The reader
//! is lenient about columns it does not use, strict (one-line error naming file, line and
//! column) about the ones it does.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// An error reading a run folder, naming the file and where in it.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {what}")]
    Bad { path: PathBuf, what: String },
}

fn bad(path: &Path, what: impl Into<String>) -> DataError {
    DataError::Bad {
        path: path.to_path_buf(),
        what: what.into(),
    }
}

/// One row of `settings.json`: a setting and its aggregates over sessions.
#[derive(Debug, Clone, Default)]
pub struct SettingRow {
    pub setting_id: String,
    /// `tokens`, `invocations`, `both`, or `none` (the baseline).
    pub trigger_kind: String,
    pub after_tokens: Option<u64>,
    pub keep_recent_events: Option<u64>,
    pub after_invocations: Option<u64>,
    pub overlap: Option<u64>,
    pub summarizer: String,
    pub agent_model: String,
    pub client: String,
    pub tokenizer: String,
    /// Paste-ready `Compaction(...)` text.
    pub label: String,
    pub pareto: bool,
    pub rank: Option<u64>,
    pub recommended: bool,
    /// Every numeric column (`cost_usd_sum`, `detail_lost_mean`, ...).
    pub numbers: BTreeMap<String, f64>,
    /// `references_broken_basis`: `measured`, `estimated`, `none`; empty for runs made
    /// before the column.
    pub references_basis: String,
    /// The guide's alternative this row replays (`max_llm_calls=25`); empty for compaction
    /// settings and the baseline.
    pub alternative: String,
    /// Another framework's policy (`policy` family, e.g. `codex`) and its numbers; empty
    /// for ADK settings (docs/policies.md).
    pub policy: String,
    pub policy_setting: String,
}

impl SettingRow {
    pub fn is_baseline(&self) -> bool {
        self.trigger_kind == "none"
    }

    /// One of the guide's alternatives (docs/alternatives.md), alone or with compaction.
    pub fn is_alternative(&self) -> bool {
        !self.alternative.is_empty()
    }

    /// The recorded sessions with no compaction: what every "saved" is measured against (an
    /// alternative with no compaction is not it).
    pub fn is_plain_baseline(&self) -> bool {
        self.is_baseline() && !self.is_alternative()
    }

    /// Another framework's policy, modelled (not an ADK setting).
    pub fn is_policy(&self) -> bool {
        !self.policy.is_empty()
    }

    /// A compacting setting whose trigger no session reached (zero summarizer calls): it
    /// behaves exactly as no compaction, so the frontier and labels leave it out (it would
    /// only repeat the baseline's row).
    pub fn never_compacts(&self) -> bool {
        !self.is_baseline() && !self.is_policy() && self.summarizer_calls() == Some(0.0)
    }

    /// The first of `names` present, so the charts survive a missing aggregate.
    pub fn num(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.numbers.get(*n).copied())
    }

    /// Total agent + summarizer cost over the run's sessions, USD.
    pub fn cost_usd(&self) -> Option<f64> {
        self.num(&["cost_usd_sum", "cost_usd_mean"])
    }

    /// Net dollars saved against the baseline over the run's sessions, USD.
    pub fn cost_saved_usd(&self) -> Option<f64> {
        self.num(&["cost_saved_usd_sum", "cost_saved_usd_mean"])
    }

    /// Mean share (0..1) of history read only through a summary.
    pub fn detail_lost(&self) -> Option<f64> {
        self.num(&["detail_lost_mean", "detail_lost_p50", "detail_lost_max"])
    }

    /// Mean share (0..1) of the references the agent used later that no text it could
    /// still read held (metrics.md "References"); `None` for runs made before the column.
    pub fn broken_references(&self) -> Option<f64> {
        self.num(&["references_broken_share_mean"])
    }

    /// Broken references pooled over sessions (all broken / all references, 0..1) with
    /// the low and high bounds pooled the same way: the summarizer comparison draws these,
    /// since the bounds are stored as counts. `None` for runs made before the columns or
    /// with no references at all.
    pub fn broken_references_pooled(&self) -> Option<(f64, f64, f64)> {
        let refs = self.num(&["references_sum"])?;
        if refs <= 0.0 {
            return None;
        }
        let broken = self.num(&["references_broken_sum"])?;
        let low = self.num(&["references_broken_low_sum"]).unwrap_or(broken);
        let high = self.num(&["references_broken_high_sum"]).unwrap_or(broken);
        Some((broken / refs, low / refs, high / refs))
    }

    pub fn summarizer_calls(&self) -> Option<f64> {
        self.num(&["summarizer_calls_sum", "summarizer_calls_mean"])
    }

    /// The end-of-run wait the latency budget limits, seconds: p95 over sessions of each
    /// session's longest single summarizer wait at the end of a run.
    pub fn end_of_run_latency_p95(&self) -> Option<f64> {
        self.num(&[
            "end_of_run_latency_max_s_p95",
            "end_of_run_latency_p95_s_p95",
            "end_of_run_latency_max_s_max",
            "end_of_run_latency_s_p95",
        ])
    }

    /// Same for waits before a model request (size trigger, pre-request).
    pub fn pre_request_latency_p95(&self) -> Option<f64> {
        self.num(&[
            "pre_request_latency_max_s_p95",
            "pre_request_latency_p95_s_p95",
            "pre_request_latency_s_p95",
        ])
    }

    pub fn facts_dropped(&self) -> Option<f64> {
        self.num(&["facts_dropped_mean", "facts_dropped_p50"])
    }

    pub fn critical_hidden(&self) -> Option<f64> {
        self.num(&["critical_hidden_sum", "critical_hidden_mean"])
    }

    /// Short human name for legends: the trigger fields only.
    pub fn short(&self) -> String {
        let mut parts = Vec::new();
        if let (Some(t), Some(k)) = (self.after_tokens, self.keep_recent_events) {
            parts.push(format!("{}k tok, keep {}", t / 1000, k));
        }
        if let (Some(i), Some(o)) = (self.after_invocations, self.overlap) {
            parts.push(format!("every {i} inv, overlap {o}"));
        }
        if parts.is_empty() {
            "no compaction".to_string()
        } else {
            parts.join(" + ")
        }
    }
}

/// One row of `runs.csv`: one session under one setting.
#[derive(Debug, Clone, Default)]
pub struct RunRow {
    pub session_id: String,
    pub source: String,
    pub setting_id: String,
    pub numbers: BTreeMap<String, f64>,
}

impl RunRow {
    pub fn num(&self, name: &str) -> Option<f64> {
        self.numbers.get(name).copied()
    }
}

/// One long session's prompt sizes, baseline against the recommended setting.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub session_id: String,
    pub setting_id: String,
    /// Per model request: prompt tokens without compaction.
    pub baseline: Vec<f64>,
    /// Per model request: prompt tokens with the setting.
    pub compacted: Vec<f64>,
    /// Model-request indexes (0-based) before which a compaction took effect.
    pub compactions: Vec<usize>,
}

/// Everything the charts and report read. The per-(session, setting) rows are digested as
/// they are read, so a run of millions of rows is read in bounded memory: the rows the
/// report lists per session (the recommended and baseline settings'), the distinct sessions,
/// and each setting's latencies for the distribution chart.
#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub run: Value,
    /// The compaction settings and the baselines (what the charts, the frontier and the
    /// explorer weigh).
    pub settings: Vec<SettingRow>,
    /// The rows of the guide's alternatives (settings.json rows with an `alternative`),
    /// weighed in the report's Alternatives table.
    pub alternatives: Vec<SettingRow>,
    /// The rows of the recommended setting and of the no-compaction baselines, and those of
    /// the tightest `max_llm_calls` cap where a run failed, in file order, with the
    /// [`RUN_COLUMNS`] only.
    pub runs: Vec<RunRow>,
    /// Distinct `session_id`s over all rows.
    pub sessions: usize,
    /// Per setting (parallel to `settings`): `end_of_run_latency_max_s` (else `_p95_s`) of
    /// each row of a compacting setting that made at least one summarizer call, in file order.
    pub latency: Vec<Vec<f64>>,
    pub timelines: Vec<Timeline>,
    /// Per setting (parallel to `settings`): at most [`WORST_SESSIONS`] of its session rows,
    /// those that lose most first (broken references, then history read only through
    /// summaries).
    pub worst: Vec<Vec<RunRow>>,
}

/// The metric columns of a run row the report reads.
pub const RUN_COLUMNS: &[&str] = &[
    "model_requests",
    "baseline_prompt_tokens",
    "summarizer_calls",
    "detail_lost",
    "critical_hidden",
    "end_of_run_latency_max_s",
    "end_of_run_latency_p95_s",
    "references_broken_share",
    "cost_usd",
    "invocations_failed",
];

/// Sessions kept per setting for the report's drill-down (the explorer in report.html):
/// the ones that lose most, so a run of many settings and sessions stays small in memory
/// and in the page.
pub const WORST_SESSIONS: usize = 5;

/// The columns a drill-down row keeps.
const WORST_COLUMNS: &[&str] = &[
    "references_broken_share",
    "detail_lost",
    "critical_hidden",
    "cost_usd",
    "model_requests",
];

/// Orders session rows by how much they lose: broken references, then history read only
/// through summaries, most first; then by session id and source, so the pick is stable.
fn loses_more(a: &RunRow, b: &RunRow) -> std::cmp::Ordering {
    let key = |r: &RunRow, c: &str| r.num(c).unwrap_or(f64::NEG_INFINITY);
    key(b, "references_broken_share")
        .total_cmp(&key(a, "references_broken_share"))
        .then(key(b, "detail_lost").total_cmp(&key(a, "detail_lost")))
        .then(a.session_id.cmp(&b.session_id))
        .then(a.source.cmp(&b.source))
}

/// Folds rows into what [`RunData`] keeps.
struct Digest {
    index: std::collections::HashMap<String, usize>,
    /// Settings whose every row is kept: the no-compaction baselines and the recommended one.
    keep: std::collections::HashSet<String>,
    /// The tightest `max_llm_calls` cap, whose rows are kept where a run failed (the report
    /// lists those sessions). No other alternative's rows are kept: per session they were
    /// most of what the report's memory grew by.
    tight_cap: Option<String>,
    compacting: Vec<bool>,
    ids: std::collections::HashSet<String>,
    runs: Vec<RunRow>,
    latency: Vec<Vec<f64>>,
    worst: Vec<Vec<RunRow>>,
}

/// The tightest `max_llm_calls` cap among `settings` (the lowest N), if any.
pub fn tightest_cap<'a>(
    settings: impl IntoIterator<Item = &'a SettingRow>,
) -> Option<&'a SettingRow> {
    settings
        .into_iter()
        .filter_map(|s| {
            Some((
                crate::sweep::grid::parse_cap_alternative(&s.alternative)?,
                s,
            ))
        })
        .min_by_key(|(n, _)| *n)
        .map(|(_, s)| s)
}

impl Digest {
    fn new(settings: &[SettingRow]) -> Digest {
        let mut keep: std::collections::HashSet<String> = settings
            .iter()
            .filter(|s| s.is_plain_baseline() || s.recommended)
            .map(|s| s.setting_id.clone())
            .collect();
        keep.shrink_to_fit();
        let tight_cap = tightest_cap(settings).map(|s| s.setting_id.clone());
        Digest {
            // The first setting of an id wins, as `RunData::setting` finds it.
            index: settings
                .iter()
                .enumerate()
                .rev()
                .map(|(i, s)| (s.setting_id.clone(), i))
                .collect(),
            keep,
            tight_cap,
            compacting: settings.iter().map(|s| !s.is_baseline()).collect(),
            ids: Default::default(),
            runs: Vec::new(),
            latency: vec![Vec::new(); settings.len()],
            worst: vec![Vec::new(); settings.len()],
        }
    }

    /// One row: its session id, setting id, and a way to read its numbers.
    fn add(
        &mut self,
        session_id: &str,
        setting_id: &str,
        num: &dyn Fn(&str) -> Option<f64>,
        row: &dyn Fn() -> RunRow,
    ) {
        if !self.ids.contains(session_id) {
            self.ids.insert(session_id.to_string());
        }
        if let Some(&i) = self.index.get(setting_id) {
            let worst = &mut self.worst[i];
            // A cheap check first (no allocation: most rows lose less than the list's last);
            // a row that passes is placed by the full order, and one placed last drops.
            let key = |c: &str| num(c).unwrap_or(f64::NEG_INFINITY);
            let may_enter = |w: &RunRow| {
                let wk = |c: &str| w.num(c).unwrap_or(f64::NEG_INFINITY);
                wk("references_broken_share")
                    .total_cmp(&key("references_broken_share"))
                    .then(wk("detail_lost").total_cmp(&key("detail_lost")))
                    .then(session_id.cmp(w.session_id.as_str()))
                    .is_le()
            };
            if worst.len() < WORST_SESSIONS || worst.last().is_some_and(may_enter) {
                let mut r = row();
                r.numbers.retain(|k, _| WORST_COLUMNS.contains(&k.as_str()));
                let at = worst
                    .binary_search_by(|w| loses_more(w, &r))
                    .unwrap_or_else(|e| e);
                worst.insert(at, r);
                worst.truncate(WORST_SESSIONS);
            }
            if self.compacting[i] && num("summarizer_calls").unwrap_or(0.0) > 0.0 {
                if let Some(v) =
                    num("end_of_run_latency_max_s").or_else(|| num("end_of_run_latency_p95_s"))
                {
                    self.latency[i].push(v);
                }
            }
        }
        let failed = || {
            self.tight_cap.as_deref() == Some(setting_id)
                && num("invocations_failed").unwrap_or(0.0) > 0.0
        };
        if self.keep.contains(setting_id) || failed() {
            let mut r = row();
            r.numbers.retain(|k, _| RUN_COLUMNS.contains(&k.as_str()));
            self.runs.push(r);
        }
    }
}

impl RunData {
    pub fn load(dir: &Path) -> Result<RunData, DataError> {
        let run_path = dir.join("run.json");
        let run = read_json(&run_path)?;
        let settings_path = dir.join("settings.json");
        let settings = parse_settings(&settings_path, &read_json(&settings_path)?)?;
        let tl_path = dir.join("timelines.json");
        let timelines = if tl_path.exists() {
            parse_timelines(&tl_path, &read_json(&tl_path)?)?
        } else {
            Vec::new()
        };
        let mut digest = Digest::new(&settings);
        // runs.parquet when the sweep wrote it (read a row group at a time), else runs.csv.
        let parquet = dir.join("runs.parquet");
        if parquet.exists() {
            digest_parquet(&parquet, &mut digest)?;
        } else {
            let runs_path = dir.join("runs.csv");
            for r in parse_runs(&runs_path, &read_text(&runs_path)?)? {
                digest.add(&r.session_id, &r.setting_id, &|c| r.num(c), &|| r.clone());
            }
        }
        Ok(RunData::digested(dir, run, settings, digest, timelines))
    }

    /// Run data from rows in memory (tests, and runs.csv).
    pub fn from_rows(
        dir: &Path,
        run: Value,
        settings: Vec<SettingRow>,
        rows: Vec<RunRow>,
        timelines: Vec<Timeline>,
    ) -> RunData {
        let mut digest = Digest::new(&settings);
        for r in rows {
            digest.add(&r.session_id, &r.setting_id, &|c| r.num(c), &|| r.clone());
        }
        RunData::digested(dir, run, settings, digest, timelines)
    }

    fn digested(
        dir: &Path,
        run: Value,
        settings: Vec<SettingRow>,
        digest: Digest,
        timelines: Vec<Timeline>,
    ) -> RunData {
        let alt: Vec<bool> = settings.iter().map(|s| !s.alternative.is_empty()).collect();
        fn keep<T>(v: Vec<T>, alt: &[bool]) -> Vec<T> {
            v.into_iter()
                .zip(alt)
                .filter(|(_, a)| !**a)
                .map(|(x, _)| x)
                .collect()
        }
        let latency = keep(digest.latency, &alt);
        let worst = keep(digest.worst, &alt);
        let (alternatives, settings): (Vec<SettingRow>, Vec<SettingRow>) = settings
            .into_iter()
            .partition(|s| !s.alternative.is_empty());
        RunData {
            dir: dir.to_path_buf(),
            run,
            settings,
            alternatives,
            runs: digest.runs,
            sessions: digest.ids.len(),
            latency,
            worst,
            timelines,
        }
    }

    /// The no-compaction row the recommendation is compared with: same agent model, client
    /// and tokenizer as the recommended setting when the grid has several baselines.
    pub fn baseline(&self) -> Option<&SettingRow> {
        let base = |s: &&SettingRow| s.is_baseline();
        match self.recommended() {
            Some(r) => self
                .settings
                .iter()
                .filter(base)
                .find(|s| {
                    s.agent_model == r.agent_model
                        && s.client == r.client
                        && s.tokenizer == r.tokenizer
                })
                .or_else(|| self.settings.iter().find(base)),
            None => self.settings.iter().find(base),
        }
    }

    pub fn recommended(&self) -> Option<&SettingRow> {
        self.settings.iter().find(|s| s.recommended)
    }

    pub fn setting(&self, id: &str) -> Option<&SettingRow> {
        self.settings.iter().find(|s| s.setting_id == id)
    }

    /// Distinct values of a string field, in first-seen order.
    pub fn distinct(&self, f: impl Fn(&SettingRow) -> &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in &self.settings {
            if !s.is_baseline() && !out.iter().any(|o| o == f(s)) {
                out.push(f(s).to_string());
            }
        }
        out
    }

    /// The setting the grids are sliced at: the recommended one, else the first compacting one.
    pub fn anchor(&self) -> Option<&SettingRow> {
        self.recommended()
            .filter(|s| !s.is_baseline())
            .or_else(|| self.settings.iter().find(|s| !s.is_baseline()))
    }

    /// Settings sharing the anchor's summarizer, agent model, client and tokenizer, so a
    /// chart over trigger fields compares like with like.
    pub fn same_context(&self) -> Vec<&SettingRow> {
        match self.anchor() {
            None => Vec::new(),
            Some(a) => self
                .settings
                .iter()
                .filter(|s| {
                    !s.is_baseline()
                        && s.summarizer == a.summarizer
                        && s.agent_model == a.agent_model
                        && s.client == a.client
                        && s.tokenizer == a.tokenizer
                })
                .collect(),
        }
    }
}

fn read_text(path: &Path) -> Result<String, DataError> {
    std::fs::read_to_string(path).map_err(|source| DataError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn read_json(path: &Path) -> Result<Value, DataError> {
    let text = read_text(path)?;
    serde_json::from_str(&text)
        .map_err(|e| bad(path, format!("line {}: invalid JSON: {e}", e.line())))
}

fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.replace('_', "").parse().ok(),
        _ => None,
    }
}

fn as_bool(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => s == "true" || s == "1",
        _ => false,
    }
}

fn as_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Largest magnitude of a number in a run folder's tables. The sweep writes USD, seconds,
/// token counts and shares, all far below it; a larger one is a damaged or hand-edited file.
pub const MAX_TABLE_NUMBER: f64 = 1e15;

/// What is wrong with the number `v` of column `name`, if anything: not finite, beyond
/// [`MAX_TABLE_NUMBER`], or a `detail_lost` share (not a `_sum` of shares) outside 0..1.
fn out_of_range(name: &str, v: f64) -> Option<String> {
    if !v.is_finite() || v.abs() > MAX_TABLE_NUMBER {
        Some(format!(
            "{v:e} is out of range (expected a finite number of magnitude at most {MAX_TABLE_NUMBER:e})"
        ))
    } else if name.starts_with("detail_lost")
        && !name.ends_with("_sum")
        && !(0.0..=1.0).contains(&v)
    {
        Some(format!("{v} is not a share (expected 0 to 1)"))
    } else {
        None
    }
}

/// Parses `settings.json` (an array of objects, or `{"settings": [...]}`).
pub fn parse_settings(path: &Path, v: &Value) -> Result<Vec<SettingRow>, DataError> {
    let arr = v
        .as_array()
        .or_else(|| v.get("settings").and_then(Value::as_array))
        .ok_or_else(|| bad(path, "$: expected an array of setting rows"))?;
    let mut out = Vec::with_capacity(arr.len());
    for (i, row) in arr.iter().enumerate() {
        let obj = row
            .as_object()
            .ok_or_else(|| bad(path, format!("$[{i}]: expected an object")))?;
        let setting_id = as_string(obj.get("setting_id"));
        if setting_id.is_empty() {
            return Err(bad(path, format!("$[{i}].setting_id: missing")));
        }
        let mut numbers = BTreeMap::new();
        for (k, val) in obj {
            if let Some(f) = val.as_f64() {
                if let Some(what) = out_of_range(k, f) {
                    return Err(bad(path, format!("$[{i}].{k}: {what}")));
                }
                numbers.insert(k.clone(), f);
            } else if let Some(b) = val.as_bool() {
                // Flags such as cost_complete, as 1/0.
                numbers.insert(k.clone(), if b { 1.0 } else { 0.0 });
            }
        }
        let trigger_kind = match as_string(obj.get("trigger_kind")).as_str() {
            "" => "none".to_string(),
            t => t.to_string(),
        };
        out.push(SettingRow {
            setting_id,
            trigger_kind,
            after_tokens: obj.get("after_tokens").and_then(as_u64),
            keep_recent_events: obj.get("keep_recent_events").and_then(as_u64),
            after_invocations: obj.get("after_invocations").and_then(as_u64),
            overlap: obj.get("overlap").and_then(as_u64),
            summarizer: as_string(obj.get("summarizer")),
            agent_model: as_string(obj.get("agent_model")),
            client: as_string(obj.get("client")),
            tokenizer: as_string(obj.get("tokenizer")),
            label: as_string(obj.get("label")),
            pareto: obj.get("pareto").is_some_and(as_bool),
            rank: obj.get("rank").and_then(as_u64),
            recommended: obj.get("recommended").is_some_and(as_bool),
            numbers,
            references_basis: as_string(obj.get("references_broken_basis")),
            alternative: as_string(obj.get("alternative")),
            policy: as_string(obj.get("policy")),
            policy_setting: as_string(obj.get("policy_setting")),
        });
    }
    Ok(out)
}

/// Splits CSV text (RFC 4180: quoted fields, doubled quotes, newlines inside quotes) into
/// records, each with the 1-based line it starts on.
pub fn parse_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut field = String::new();
    let mut record = Vec::new();
    let mut in_quotes = false;
    let mut line = 1usize;
    let mut start_line = 1usize;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => in_quotes = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => in_quotes = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push((start_line, std::mem::take(&mut record)));
                line += 1;
                start_line = line;
                any = false;
            }
            _ => field.push(c),
        }
    }
    if in_quotes {
        return Err(format!("line {start_line}: unterminated quoted field"));
    }
    if any {
        record.push(field);
        records.push((start_line, record));
    }
    Ok(records)
}

/// Parses `runs.csv`: `session_id, source, setting_id` + numeric metric columns.
pub fn parse_runs(path: &Path, text: &str) -> Result<Vec<RunRow>, DataError> {
    let records = parse_csv(text).map_err(|e| bad(path, e))?;
    let mut it = records.into_iter();
    let Some((_, header)) = it.next() else {
        return Ok(Vec::new());
    };
    let col = |name: &str| header.iter().position(|h| h == name);
    let (Some(sid), Some(set)) = (col("session_id"), col("setting_id")) else {
        return Err(bad(
            path,
            "line 1: header needs session_id and setting_id columns",
        ));
    };
    let src = col("source");
    let mut out = Vec::new();
    for (line, rec) in it {
        if rec.len() == 1 && rec[0].is_empty() {
            continue;
        }
        if rec.len() != header.len() {
            return Err(bad(
                path,
                format!(
                    "line {line}: {} fields, header has {}",
                    rec.len(),
                    header.len()
                ),
            ));
        }
        let mut numbers = BTreeMap::new();
        for (i, h) in header.iter().enumerate() {
            if i == sid || i == set || Some(i) == src {
                continue;
            }
            let cell = rec[i].trim();
            match cell {
                "" => {}
                "true" => {
                    numbers.insert(h.clone(), 1.0);
                }
                "false" => {
                    numbers.insert(h.clone(), 0.0);
                }
                _ => {
                    if let Ok(f) = cell.parse::<f64>() {
                        if let Some(what) = out_of_range(h, f) {
                            return Err(bad(path, format!("line {line}: column {h}: {what}")));
                        }
                        numbers.insert(h.clone(), f);
                    }
                }
            }
        }
        out.push(RunRow {
            session_id: rec[sid].clone(),
            source: src.map(|i| rec[i].clone()).unwrap_or_default(),
            setting_id: rec[set].clone(),
            numbers,
        });
    }
    Ok(out)
}

/// Fold `runs.parquet` into `digest` a row group at a time, reading the key columns and the
/// [`RUN_COLUMNS`] it has; numbers are checked as in runs.csv.
fn digest_parquet(path: &Path, digest: &mut Digest) -> Result<(), DataError> {
    use crate::table::frames::RowGroups;
    use polars::prelude::DataType;
    let table = |e: crate::table::TableError| bad(path, e.to_string());
    let groups = RowGroups::open(path).map_err(|e| match e {
        crate::table::TableError::Read { source, .. } => DataError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => table(other),
    })?;
    let wanted: Vec<&str> = RUN_COLUMNS
        .iter()
        .copied()
        .filter(|c| groups.columns().iter().any(|n| n == c))
        .collect();
    let mut cols = vec!["session_id", "source", "setting_id"];
    cols.extend(&wanted);
    let mut row0 = 0usize;
    for g in 0..groups.len() {
        let df = groups.read(g, &cols).map_err(table)?;
        let text = |name: &str| -> Result<Vec<Option<String>>, DataError> {
            let c = df
                .column(name)
                .and_then(|c| c.cast(&DataType::String))
                .map_err(|e| bad(path, format!("column {name}: {e}")))?;
            let s = c
                .str()
                .map_err(|e| bad(path, format!("column {name}: {e}")))?;
            Ok(s.iter().map(|v| v.map(str::to_string)).collect())
        };
        let ids = text("session_id")?;
        let sources = text("source")?;
        let sets = text("setting_id")?;
        let mut nums: Vec<Vec<Option<f64>>> = Vec::with_capacity(wanted.len());
        for name in &wanted {
            let c = df
                .column(name)
                .and_then(|c| c.cast(&DataType::Float64))
                .map_err(|e| bad(path, format!("column {name}: {e}")))?;
            let v: Vec<Option<f64>> = c
                .f64()
                .map_err(|e| bad(path, format!("column {name}: {e}")))?
                .iter()
                .collect();
            for (i, x) in v.iter().enumerate() {
                if let Some(what) = x.and_then(|x| out_of_range(name, x)) {
                    return Err(bad(
                        path,
                        format!("row {}: column {name}: {what}", row0 + i + 1),
                    ));
                }
            }
            nums.push(v);
        }
        for i in 0..df.height() {
            let num = |c: &str| wanted.iter().position(|w| *w == c).and_then(|k| nums[k][i]);
            let id = ids[i].as_deref().unwrap_or("");
            let set = sets[i].as_deref().unwrap_or("");
            let row = || RunRow {
                session_id: id.to_string(),
                source: sources[i].clone().unwrap_or_default(),
                setting_id: set.to_string(),
                numbers: wanted
                    .iter()
                    .enumerate()
                    .filter_map(|(k, w)| nums[k][i].map(|v| (w.to_string(), v)))
                    .collect(),
            };
            digest.add(id, set, &num, &row);
        }
        row0 += df.height();
    }
    Ok(())
}

/// A list of prompt sizes: plain numbers, or objects with `prompt_tokens` (the sweep's
/// `{request, prompt_tokens}` rows).
fn num_array(v: Option<&Value>) -> Vec<f64> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| {
                    x.as_f64()
                        .or_else(|| x.get("prompt_tokens").and_then(Value::as_f64))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Parses `timelines.json`: `{"sessions": [...]}` (or a bare array) of
/// `{session_id, baseline: [{request, prompt_tokens}], recommended: [...], compactions:
/// [{before_request, kind, applied}]}`; number arrays and `requests: [{baseline_prompt_tokens,
/// prompt_tokens}]` are accepted too. Compactions with `applied: false` (discarded or empty
/// summaries) changed no prompt and are left out.
pub fn parse_timelines(path: &Path, v: &Value) -> Result<Vec<Timeline>, DataError> {
    let arr = v
        .as_array()
        .or_else(|| v.get("sessions").and_then(Value::as_array))
        .or_else(|| v.get("timelines").and_then(Value::as_array))
        .ok_or_else(|| bad(path, "$: expected an array of session timelines"))?;
    let mut out = Vec::new();
    for (i, t) in arr.iter().enumerate() {
        let obj = t
            .as_object()
            .ok_or_else(|| bad(path, format!("$[{i}]: expected an object")))?;
        let mut tl = Timeline {
            session_id: as_string(obj.get("session_id")),
            setting_id: as_string(obj.get("setting_id")),
            ..Timeline::default()
        };
        if let Some(reqs) = obj.get("requests").and_then(Value::as_array) {
            for (j, r) in reqs.iter().enumerate() {
                let b = r.get("baseline_prompt_tokens").and_then(Value::as_f64);
                let p = r.get("prompt_tokens").and_then(Value::as_f64);
                match (b, p) {
                    (Some(b), Some(p)) => {
                        tl.baseline.push(b);
                        tl.compacted.push(p);
                    }
                    _ => {
                        return Err(bad(
                            path,
                            format!(
                            "$[{i}].requests[{j}]: needs baseline_prompt_tokens and prompt_tokens"
                        ),
                        ))
                    }
                }
            }
        } else {
            tl.baseline = num_array(obj.get("baseline"));
            tl.compacted = num_array(obj.get("compacted").or_else(|| obj.get("recommended")));
            // A run where no setting met the budgets has no recommended setting, so its
            // timelines carry the baseline alone.
            if !tl.compacted.is_empty() && tl.baseline.len() != tl.compacted.len() {
                return Err(bad(
                    path,
                    format!("$[{i}]: baseline and compacted differ in length"),
                ));
            }
        }
        if let Some(cs) = obj.get("compactions").and_then(Value::as_array) {
            for c in cs {
                if c.get("applied").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                let idx = as_u64(c)
                    .or_else(|| c.get("before_request").and_then(as_u64))
                    .or_else(|| c.get("request_index").and_then(as_u64))
                    .or_else(|| c.get("at_request").and_then(as_u64));
                if let Some(idx) = idx {
                    tl.compactions.push(idx as usize);
                }
            }
        }
        out.push(tl);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report keeps per-session rows only where it reads them: the baseline's, the
    /// recommended setting's, and the tightest cap's where a run failed. An alternative's
    /// rows are not kept (per session they were most of what the report's memory grew by).
    #[test]
    fn only_the_rows_the_report_reads_are_kept() {
        let settings = serde_json::json!([
            {"setting_id": 0, "trigger_kind": "none", "label": "no compaction", "cost_usd_sum": 10.0},
            {"setting_id": 1, "trigger_kind": "tokens", "after_tokens": 1000, "keep_recent_events": 2, "label": "x", "cost_usd_sum": 8.0, "recommended": true},
            {"setting_id": 2, "trigger_kind": "tokens", "after_tokens": 2000, "keep_recent_events": 2, "label": "y", "cost_usd_sum": 9.0},
            {"setting_id": 3, "trigger_kind": "none", "alternative": "artifacts", "label": "a", "cost_usd_sum": 7.0},
            {"setting_id": 4, "trigger_kind": "none", "alternative": "max_llm_calls=10", "label": "c10", "cost_usd_sum": 6.0},
            {"setting_id": 5, "trigger_kind": "none", "alternative": "max_llm_calls=5", "label": "c5", "cost_usd_sum": 5.0}
        ]);
        let mut runs = String::from("session_id,source,setting_id,invocations_failed\n");
        for s in ["a", "b"] {
            for id in 0..=5 {
                let failed = u32::from(s == "a" && id >= 4);
                runs.push_str(&format!("{s},f,{id},{failed}\n"));
            }
        }
        let d = RunData::from_rows(
            Path::new("."),
            serde_json::json!({}),
            parse_settings(Path::new("settings.json"), &settings).expect("settings"),
            parse_runs(Path::new("runs.csv"), &runs).expect("runs"),
            Vec::new(),
        );
        let kept: Vec<(&str, &str)> = d
            .runs
            .iter()
            .map(|r| (r.session_id.as_str(), r.setting_id.as_str()))
            .collect();
        assert_eq!(
            kept,
            vec![("a", "0"), ("a", "1"), ("a", "5"), ("b", "0"), ("b", "1")]
        );
        assert_eq!(d.sessions, 2);
    }

    #[test]
    fn broken_references_pool_counts_over_sessions_with_their_bounds() {
        let mut s = SettingRow::default();
        assert_eq!(
            s.broken_references_pooled(),
            None,
            "run made before the columns"
        );
        for (k, v) in [
            ("references_sum", 200.0),
            ("references_broken_sum", 50.0),
            ("references_broken_low_sum", 10.0),
            ("references_broken_high_sum", 80.0),
        ] {
            s.numbers.insert(k.into(), v);
        }
        assert_eq!(s.broken_references_pooled(), Some((0.25, 0.05, 0.4)));
        s.numbers.insert("references_sum".into(), 0.0);
        assert_eq!(
            s.broken_references_pooled(),
            None,
            "no references: no share"
        );
    }

    #[test]
    fn csv_handles_quotes_commas_and_newlines() {
        let recs = parse_csv("a,b\n\"x, \"\"y\"\"\",\"1\n2\"\nlast,3").unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1].1, vec!["x, \"y\"".to_string(), "1\n2".to_string()]);
        assert_eq!(
            recs[2].0, 4,
            "record after an embedded newline starts on line 4"
        );
        assert!(parse_csv("\"open").is_err());
    }

    #[test]
    fn runs_csv_reports_the_bad_line() {
        let err = parse_runs(
            Path::new("runs.csv"),
            "session_id,setting_id,cost_usd\na,s1,1.5\nb,s1\n",
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "runs.csv: line 3: 2 fields, header has 3");
    }
}
