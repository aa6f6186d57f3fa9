//! The run folder: what a sweep (or a merge of shards) leaves behind, and the partial
//! folders `--shard K/N` writes.
//!
//! A run folder is built in a hidden temporary folder next to its final place and renamed
//! into place at the end, so an interrupted run leaves nothing that looks like a run.

use super::frames::{
    csv_bytes, parquet_bytes, rows_from_runs_frame, settings_frame, settings_json, RowGroups,
    RunsWriter,
};
use super::summary::{
    baseline_for, budget_error, recommended, summarize, summarize_parquet, SettingSummary,
};
use super::{Result, TableError};
use crate::sweep::grid::{Budgets, ResolvedGrid, Setting};
use crate::sweep::run::{Cancelled, Evaluator, RunRow, SessionInfo};
pub use crate::sweep::run::{InputInfo, Skipped, SummarizerFailure};
use crate::sweep::shard::Shard;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

pub const ADK_SEMANTICS: &str = "google-adk 2.13.0";
/// Sessions drawn in timelines.json (the longest by model requests).
pub const TIMELINE_SESSIONS: usize = 5;

/// Everything a run folder is made from besides the rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInputs {
    /// All sessions read, sorted by (source, session_id); rows index into this list.
    pub sessions: Vec<SessionInfo>,
    pub inputs: Vec<InputInfo>,
    pub skipped: Vec<Skipped>,
    /// Session indices dropped because a replay failed (their reasons are in `skipped`).
    #[serde(default)]
    pub failed_sessions: Vec<u32>,
    pub grid_toml: String,
    pub pricing_toml: String,
    pub latency_toml: String,
    pub pricing_date: String,
    /// The price table's `source` (LiteLLM version and file date, overrides).
    #[serde(default)]
    pub pricing_source: String,
    /// Models of the run timed with the `default` latency figures (no family of their own).
    #[serde(default)]
    pub latency_default_models: Vec<String>,
    /// Failed summarizer calls of the rows kept, sorted.
    #[serde(default)]
    pub summarizer_errors: Vec<SummarizerFailure>,
    /// With `--sample N`: how many sessions were read before drawing the sample.
    #[serde(default)]
    pub sampled_from: Option<u64>,
    /// With `--samples`: what the sample data is (run.json `sample_data`, the report's
    /// inputs row); absent otherwise, so other runs' files are unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_data: Option<String>,
}

impl RunInputs {
    /// Short hash of inputs and grid: the second half of the default run name.
    pub fn short_hash(&self) -> String {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for s in [&self.grid_toml, &self.pricing_toml, &self.latency_toml] {
            h.update(s.as_bytes());
            h.update(&[0]);
        }
        for s in &self.sessions {
            h.update(s.source.as_bytes());
            h.update(&[0]);
            h.update(s.session_id.as_bytes());
            h.update(&[0]);
            h.update(&s.events.to_le_bytes());
        }
        format!("{:08x}", h.digest() as u32)
    }

    /// Default run name: `YYYY-MM-DD-<hash>`.
    pub fn default_name(&self, date: &str) -> String {
        format!("{date}-{}", self.short_hash())
    }
}

/// Files of a full run folder (docs/sweeps.md "The run folder").
pub const RUN_FILES: &[&str] = &[
    "runs.parquet",
    "runs.csv",
    "settings.parquet",
    "settings.csv",
    "settings.json",
    "run.json",
    "grid.toml",
    "pricing.toml",
    "latency.toml",
    "timelines.json",
];

/// What the end of a run prints and records.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub summaries: Vec<SettingSummary>,
    /// Why there is none when the grid or the budgets rule out every setting.
    pub recommendation: std::result::Result<SettingSummary, NoRecommendation>,
    pub baseline: Option<SettingSummary>,
    /// The guide's alternative that beats the recommendation within the budgets
    /// ([`super::summary::better_alternative`]).
    pub better_alternative: Option<SettingSummary>,
}

/// Why a run has no recommendation: its one line ends the run's output and is run.json's
/// `recommendation_note`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NoRecommendation {
    #[error("no compaction setting in the grid")]
    NoCompactionSetting,
    /// The budgets rule out every setting (the line names the budgets and the closest miss).
    #[error("{0}")]
    OverBudget(String),
}

fn key_numbers(s: &SettingSummary) -> serde_json::Value {
    let mut o = serde_json::Map::new();
    o.insert("setting_id".into(), s.setting.setting_id.into());
    o.insert("label".into(), s.label.clone().into());
    for col in [
        "cost_usd_sum",
        "cost_saved_usd_sum",
        "prompt_tokens_sum",
        "tokens_saved_net_sum",
        "summarizer_calls_sum",
        "detail_lost_mean",
        "critical_hidden_sum",
        "end_of_run_latency_s_sum",
        "end_of_run_latency_max_s_p95",
        "pre_request_latency_max_s_p95",
        "facts_dropped_mean",
    ] {
        if let Some((_, v)) = s.aggs.iter().find(|(n, _)| n == col) {
            o.insert(
                col.into(),
                serde_json::to_value(v).unwrap_or(serde_json::Value::Null),
            );
        }
    }
    o.insert("cost_complete".into(), s.cost_complete.into());
    serde_json::Value::Object(o)
}

/// Aggregate, rank and pick the recommendation.
pub fn outcome(settings: &[Setting], rows: &[RunRow], budgets: &Budgets) -> Outcome {
    outcome_of(summarize(settings, rows, budgets), budgets)
}

/// [`outcome`] from the rows of a written `runs.parquet` (read a column at a time).
pub fn outcome_parquet(settings: &[Setting], runs: &Path, budgets: &Budgets) -> Result<Outcome> {
    Ok(outcome_of(
        summarize_parquet(settings, runs, budgets)?,
        budgets,
    ))
}

fn outcome_of(summaries: Vec<SettingSummary>, budgets: &Budgets) -> Outcome {
    let recommendation = match recommended(&summaries) {
        Some(s) => Ok(s.clone()),
        None if summaries.iter().all(|s| s.setting.is_baseline()) => {
            Err(NoRecommendation::NoCompactionSetting)
        }
        None => Err(NoRecommendation::OverBudget(budget_error(
            &summaries, budgets,
        ))),
    };
    let baseline = match &recommendation {
        Ok(r) => baseline_for(&summaries, &r.setting).cloned(),
        Err(_) => summaries
            .iter()
            .find(|s| s.setting.is_plain_baseline())
            .cloned(),
    };
    let better_alternative = recommendation
        .as_ref()
        .ok()
        .and_then(|r| super::summary::better_alternative(&summaries, r, budgets).cloned());
    Outcome {
        better_alternative,
        summaries,
        recommendation,
        baseline,
    }
}

/// The `n` sessions of `among` with the most model requests (then events, then the lower
/// index): the ones timelines.json draws, in its order.
pub fn longest_sessions(sessions: &[SessionInfo], among: &[u32], n: usize) -> Vec<u32> {
    let mut longest: Vec<u32> = among.to_vec();
    longest.sort_by(|&a, &b| {
        let (x, y) = (&sessions[a as usize], &sessions[b as usize]);
        y.model_requests
            .cmp(&x.model_requests)
            .then(y.events.cmp(&x.events))
            .then(a.cmp(&b))
    });
    longest.truncate(n);
    longest
}

/// timelines.json: for the longest sessions, each model request's prompt with no
/// compaction and under the recommended setting, and where the compactions happened.
pub fn timelines_json(
    eval: &dyn Evaluator,
    eval_index: &dyn Fn(u32) -> Option<usize>,
    sessions: &[SessionInfo],
    live: &[u32],
    out: &Outcome,
) -> Result<serde_json::Value> {
    let longest = longest_sessions(sessions, live, TIMELINE_SESSIONS);
    let rec = out.recommendation.as_ref().ok();
    let mut list = Vec::new();
    for &i in &longest {
        let info = &sessions[i as usize];
        let e = eval_index(i).ok_or_else(|| {
            TableError::Input(format!(
                "timelines: session `{}` from `{}` was not loaded",
                info.session_id, info.source
            ))
        })?;
        let mut o = serde_json::Map::new();
        o.insert("session_id".into(), info.session_id.clone().into());
        o.insert("source".into(), info.source.clone().into());
        o.insert("model_requests".into(), info.model_requests.into());
        if let Some(b) = &out.baseline {
            let t = eval
                .timeline(e, &b.setting)
                .map_err(|m| TableError::Input(format!("timelines: {}: {m}", info.source)))?;
            o.insert("baseline".into(), serde_json::to_value(&t.requests)?);
        }
        if let Some(r) = rec {
            let t = eval
                .timeline(e, &r.setting)
                .map_err(|m| TableError::Input(format!("timelines: {}: {m}", info.source)))?;
            o.insert("recommended".into(), serde_json::to_value(&t.requests)?);
            o.insert("compactions".into(), serde_json::to_value(&t.compactions)?);
        }
        list.push(serde_json::Value::Object(o));
    }
    let mut top = serde_json::Map::new();
    top.insert(
        "baseline_setting_id".into(),
        serde_json::to_value(out.baseline.as_ref().map(|b| b.setting.setting_id))?,
    );
    top.insert(
        "recommended_setting_id".into(),
        serde_json::to_value(rec.map(|r| r.setting.setting_id))?,
    );
    top.insert(
        "recommended_label".into(),
        serde_json::to_value(rec.map(|r| r.label.clone()))?,
    );
    top.insert("units".into(), "prompt tokens per model request".into());
    top.insert("sessions".into(), serde_json::Value::Array(list));
    Ok(serde_json::Value::Object(top))
}

/// run.json: what was run, on what, and what came out.
pub fn run_json(
    name: &str,
    inputs: &RunInputs,
    grid: &ResolvedGrid,
    out: &Outcome,
) -> Result<serde_json::Value> {
    let live = inputs.sessions.len() - inputs.failed_sessions.len();
    let mut o = serde_json::Map::new();
    o.insert("run".into(), name.into());
    o.insert(
        "compaction_sim_version".into(),
        env!("CARGO_PKG_VERSION").into(),
    );
    o.insert("adk_semantics".into(), ADK_SEMANTICS.into());
    o.insert("inputs".into(), serde_json::to_value(&inputs.inputs)?);
    o.insert("sessions".into(), live.into());
    o.insert("skipped".into(), serde_json::to_value(&inputs.skipped)?);
    o.insert(
        "sampled_from".into(),
        serde_json::to_value(inputs.sampled_from)?,
    );
    if let Some(what) = &inputs.sample_data {
        o.insert("sample_data".into(), what.clone().into());
    }
    o.insert(
        "summarizer_errors".into(),
        serde_json::to_value(&inputs.summarizer_errors)?,
    );
    o.insert("settings".into(), grid.settings.len().into());
    o.insert("grid".into(), serde_json::to_value(grid)?);
    o.insert("tokenizer".into(), serde_json::to_value(&grid.tokenizer)?);
    o.insert("pricing_date".into(), inputs.pricing_date.clone().into());
    o.insert(
        "pricing_source".into(),
        inputs.pricing_source.clone().into(),
    );
    o.insert(
        "latency_default_models".into(),
        serde_json::to_value(&inputs.latency_default_models)?,
    );
    o.insert(
        "client_modes".into(),
        serde_json::to_value(grid.client.iter().map(|c| c.name()).collect::<Vec<_>>())?,
    );
    o.insert("budgets".into(), serde_json::to_value(grid.budget)?);
    match &out.recommendation {
        Ok(r) => {
            o.insert("recommendation".into(), key_numbers(r));
            o.insert("recommendation_note".into(), serde_json::Value::Null);
        }
        Err(m) => {
            o.insert("recommendation".into(), serde_json::Value::Null);
            o.insert("recommendation_note".into(), m.to_string().into());
        }
    }
    o.insert(
        "baseline".into(),
        out.baseline
            .as_ref()
            .map(key_numbers)
            .unwrap_or(serde_json::Value::Null),
    );
    // a merged run's file is the single run's, byte for byte: no shard count (the key kept
    // for readers of earlier files)
    o.insert("shards".into(), serde_json::Value::Null);
    // Per-session facts the report uses for the guide's alternatives.
    let facts: Vec<serde_json::Value> = inputs
        .sessions
        .iter()
        .enumerate()
        .filter(|(i, _)| !inputs.failed_sessions.contains(&(*i as u32)))
        .map(|(_, s)| {
            serde_json::json!({
                "session_id": s.session_id,
                "source": s.source,
                "events": s.events,
                "model_requests": s.model_requests,
                "max_model_requests_per_invocation": s.max_model_requests_per_invocation,
                "attachment_tokens": s.attachment_tokens,
                "requests_with_attachment": s.requests_with_attachment,
                "as_recorded": s.as_recorded,
                "records_setting": s.records_setting,
            })
        })
        .collect();
    o.insert("session_facts".into(), serde_json::Value::Array(facts));
    Ok(serde_json::Value::Object(o))
}

fn pretty(v: &serde_json::Value) -> Result<Vec<u8>> {
    let mut s = serde_json::to_string_pretty(v)?;
    s.push('\n');
    Ok(s.into_bytes())
}

/// Live rows: rows of sessions that did not fail, in (session, setting) order.
pub fn live_sessions(inputs: &RunInputs) -> Vec<u32> {
    (0..inputs.sessions.len() as u32)
        .filter(|i| !inputs.failed_sessions.contains(i))
        .collect()
}

/// Writes the files of one output folder, each atomically, stopping between files as soon
/// as `cancel` is set (a signal), so an interrupted write phase ends at once.
struct Files<'a> {
    dir: &'a Path,
    cancel: &'a AtomicBool,
}

impl Files<'_> {
    fn put(&self, name: &str, bytes: impl FnOnce() -> Result<Vec<u8>>) -> Result<()> {
        if self.cancel.load(Ordering::SeqCst) {
            return Err(Cancelled.into());
        }
        crate::atomic::write_atomic(&self.dir.join(name), &bytes()?)?;
        Ok(())
    }

    /// The grid, price and latency tables the run used, as given.
    fn tables(&self, inputs: &RunInputs) -> Result<()> {
        for (name, text) in [
            ("grid.toml", &inputs.grid_toml),
            ("pricing.toml", &inputs.pricing_toml),
            ("latency.toml", &inputs.latency_toml),
        ] {
            self.put(name, || Ok(text.as_bytes().to_vec()))?;
        }
        Ok(())
    }
}

/// Whether a run of `rows` (session, setting) pairs gets `runs.csv` (`forced`: asked for).
pub fn wants_runs_csv(rows: u64, forced: bool) -> bool {
    forced || rows <= super::frames::RUNS_CSV_MAX_ROWS
}

/// What a full run folder's files besides the runs tables are written from.
pub struct RunFiles<'a> {
    /// The run's name (run.json `run`).
    pub name: &'a str,
    pub inputs: &'a RunInputs,
    pub grid: &'a ResolvedGrid,
    pub outcome: &'a Outcome,
    pub timelines: &'a serde_json::Value,
}

impl RunFiles<'_> {
    /// Write every file of a full run folder but the runs tables (streamed there before, see
    /// [`RunsWriter`]) into `dir` (which must exist).
    pub fn write(&self, dir: &Path, cancel: &AtomicBool) -> Result<()> {
        let files = Files { dir, cancel };
        let out = self.outcome;
        let mut set = settings_frame(&out.summaries)?;
        files.put("settings.parquet", || parquet_bytes(&mut set))?;
        files.put("settings.csv", || csv_bytes(&mut set))?;
        files.put("settings.json", || {
            Ok(settings_json(&out.summaries)?.into_bytes())
        })?;
        files.put("run.json", || {
            pretty(&run_json(self.name, self.inputs, self.grid, out)?)
        })?;
        files.tables(self.inputs)?;
        files.put("timelines.json", || pretty(self.timelines))?;
        Ok(())
    }
}

/// The run folder's file of the compactions its transcripts record, beside the `as recorded`
/// replay's predictions (docs/columns.md): written only when some session records one.
pub const RECORDED_COMPACTIONS: &str = "recorded_compactions.json";

/// Write [`RECORDED_COMPACTIONS`] into `dir` (atomically) when `recorded` holds a compaction;
/// without one the folder gets no file (and the report no section).
pub fn write_recorded_compactions(
    dir: &Path,
    recorded: &crate::backtest::Backtest,
    cancel: &AtomicBool,
) -> Result<()> {
    if recorded.compactions.is_empty() {
        return Ok(());
    }
    let files = Files { dir, cancel };
    files.put(RECORDED_COMPACTIONS, || {
        pretty(&serde_json::to_value(recorded)?)
    })
}

/// shard.json of a partial folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub shard: Shard,
    pub compaction_sim_version: String,
    pub inputs: RunInputs,
}

/// Write a partial folder: what `merge` needs to rebuild the run, beside this shard's rows
/// (`runs.parquet`, streamed there before by a [`RunsWriter`]).
pub fn write_partial_files(
    dir: &Path,
    shard: Shard,
    inputs: &RunInputs,
    cancel: &AtomicBool,
) -> Result<()> {
    let files = Files { dir, cancel };
    let info = ShardInfo {
        shard,
        compaction_sim_version: env!("CARGO_PKG_VERSION").into(),
        inputs: inputs.clone(),
    };
    files.put("shard.json", || pretty(&serde_json::to_value(&info)?))?;
    files.tables(inputs)?;
    Ok(())
}

/// Read partial folders and check they fit: the shards must be 1..N of the same N, over the
/// same inputs and grid. Returns the combined inputs and the folders in shard order (their
/// rows are combined by [`merge_runs`]).
pub fn read_partials(dirs: &[PathBuf]) -> Result<(RunInputs, Shard, Vec<PathBuf>)> {
    if dirs.is_empty() {
        return Err(TableError::Input(
            "merge: give the partial folders written by `sweep --shard K/N`".into(),
        ));
    }
    let mut infos: Vec<(PathBuf, ShardInfo)> = Vec::new();
    for d in dirs {
        let p = d.join("shard.json");
        let text = std::fs::read_to_string(&p).map_err(|source| TableError::NotAPartial {
            path: p.clone(),
            source,
        })?;
        let info: ShardInfo = serde_json::from_str(&text)
            .map_err(|e| TableError::Input(format!("{}: {e}", p.display())))?;
        let Shard { k, n } = info.shard;
        if n == 0 || k == 0 || k > n {
            return Err(TableError::Input(format!(
                "{}: shard {k}/{n} is not a slice of a sharded run",
                p.display()
            )));
        }
        infos.push((d.clone(), info));
    }
    let (first_dir, first) = (&infos[0].0, &infos[0].1);
    let n = first.shard.n;
    let mut seen = vec![false; n as usize];
    let mut failed: Vec<u32> = Vec::new();
    let mut skipped = first.inputs.skipped.clone();
    let mut summarizer_errors = Vec::new();
    for (d, info) in &infos {
        if info.shard.n != n {
            return Err(TableError::Input(format!(
                "{}: shard {} does not match {} (shard {})",
                d.display(),
                info.shard,
                first_dir.display(),
                first.shard
            )));
        }
        let mut a = info.inputs.clone();
        let mut b = first.inputs.clone();
        a.failed_sessions.clear();
        b.failed_sessions.clear();
        a.skipped.clear();
        b.skipped.clear();
        a.summarizer_errors.clear();
        b.summarizer_errors.clear();
        if a != b {
            return Err(TableError::Input(format!(
                "{}: shard {} was run on other inputs, grid or prices than {}",
                d.display(),
                info.shard,
                first_dir.display()
            )));
        }
        let k = info.shard.k as usize - 1;
        if seen[k] {
            return Err(TableError::Input(format!(
                "{}: shard {} is given twice",
                d.display(),
                info.shard
            )));
        }
        seen[k] = true;
        failed.extend(&info.inputs.failed_sessions);
        summarizer_errors.extend(info.inputs.summarizer_errors.iter().cloned());
        for s in &info.inputs.skipped {
            if !skipped.contains(s) {
                skipped.push(s.clone());
            }
        }
    }
    if let Some(k) = seen.iter().position(|s| !s) {
        return Err(TableError::Input(format!(
            "merge: shard {}/{n} is missing",
            k + 1
        )));
    }
    failed.sort_unstable();
    failed.dedup();
    skipped.sort_by(|a, b| (&a.path, &a.reason).cmp(&(&b.path, &b.reason)));
    let mut inputs = first.inputs.clone();
    inputs.failed_sessions = failed;
    inputs.skipped = skipped;
    summarizer_errors.sort();
    summarizer_errors.dedup();
    inputs.summarizer_errors = summarizer_errors;

    let shard = first.shard;
    infos.sort_by_key(|(_, i)| i.shard.k);
    Ok((inputs, shard, infos.into_iter().map(|(d, _)| d).collect()))
}

/// One shard's rows, read a row group at a time.
struct ShardRows {
    groups: RowGroups,
    next: usize,
    rows: std::collections::VecDeque<RunRow>,
}

/// The recorded compactions of the partial folders `dirs` (each shard's
/// [`RECORDED_COMPACTIONS`], absent where its sessions record none), in session order as the
/// unsharded run holds them, not yet summarized per framework.
pub fn merge_recorded(dirs: &[PathBuf], inputs: &RunInputs) -> Result<crate::backtest::Backtest> {
    use super::folder::DataError;
    let index: std::collections::HashMap<(&str, &str), usize> = inputs
        .sessions
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.source.as_str(), s.session_id.as_str()), i))
        .collect();
    let at = |src: &str, id: &str| index.get(&(src, id)).copied().unwrap_or(usize::MAX);
    let mut out = crate::backtest::Backtest::default();
    for d in dirs {
        let path = d.join(RECORDED_COMPACTIONS);
        if !path.exists() {
            continue;
        }
        let part = super::folder::parse_recorded(&path).map_err(|e| match e {
            DataError::Io { path, source } => TableError::Read { path, source },
            DataError::Bad { path, what } => TableError::Bad {
                file: path.display().to_string(),
                what,
            },
        })?;
        out.absorb(part);
    }
    // stable: a session's rows keep their order
    out.compactions
        .sort_by_key(|c| at(&c.source, &c.session_id));
    out.sessions.sort_by_key(|c| at(&c.source, &c.session_id));
    Ok(out)
}

/// Append the rows of the partial folders `dirs` to `out` in (session, setting) order, as
/// the unsharded run writes them: each shard's rows are already in that order, so they are
/// merged holding one row group per shard.
pub fn merge_runs(dirs: &[PathBuf], inputs: &RunInputs, out: &mut RunsWriter) -> Result<()> {
    let index: std::collections::HashMap<(&str, &str), u32> = inputs
        .sessions
        .iter()
        .enumerate()
        .map(|(i, s)| ((s.source.as_str(), s.session_id.as_str()), i as u32))
        .collect();
    let lookup = |src: &str, id: &str| index.get(&(src, id)).copied();
    let mut shards: Vec<(String, ShardRows)> = Vec::new();
    for d in dirs {
        let file = d.join("runs.parquet");
        let groups = RowGroups::open(&file)?;
        shards.push((
            file.display().to_string(),
            ShardRows {
                groups,
                next: 0,
                rows: Default::default(),
            },
        ));
    }
    loop {
        for (file, s) in shards.iter_mut() {
            if s.rows.is_empty() && s.next < s.groups.len() {
                let df = s.groups.read(s.next, &[])?;
                s.rows = rows_from_runs_frame(&df, file, &lookup)?.into();
                s.next += 1;
            }
        }
        let fronts: Vec<Option<(u32, u32)>> = shards
            .iter()
            .map(|(_, s)| s.rows.front().map(|r| (r.session, r.setting)))
            .collect();
        let Some((i, _)) = fronts
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.map(|k| (i, k)))
            .min_by_key(|&(_, k)| k)
        else {
            break;
        };
        // This shard's rows, while they come before every other shard's next row.
        let limit = fronts
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .filter_map(|(_, f)| *f)
            .min();
        let s = &mut shards[i].1;
        let mut batch = Vec::new();
        while let Some(r) = s.rows.front() {
            if limit.is_some_and(|l| (r.session, r.setting) > l) {
                break;
            }
            batch.extend(s.rows.pop_front());
        }
        out.push(batch)?;
    }
    Ok(())
}

/// The paste-ready end-of-run lines.
pub fn recommendation_lines(out: &Outcome) -> Vec<String> {
    let mut lines = Vec::new();
    match &out.recommendation {
        Ok(r) => {
            lines.push(r.label.clone());
            let wait = r.wait_p95();
            let mut nums = format!(
                "  with it: ${:.4} over {} sessions, references broken {:.1}% (mean, {}), history read only through summaries {:.1}%, {} summarizer calls, summary wait p95 {:.2} s",
                r.cost(),
                r.sessions,
                100.0 * r.broken_references(),
                r.references_broken_basis.name(),
                100.0 * r.detail_lost(),
                r.get("summarizer_calls_sum").unwrap_or(0.0),
                wait
            );
            if !r.cost_complete {
                nums.push_str(" (lower bound: some models have no price)");
            }
            lines.push(nums);
            if let Some(b) = &out.baseline {
                lines.push(format!(
                    "  no compaction: ${:.4}, nothing broken or summarized, no summary wait; saves ${:.4} ({:.1}%)",
                    b.cost(),
                    b.cost() - r.cost(),
                    if b.cost() > 0.0 { 100.0 * (b.cost() - r.cost()) / b.cost() } else { 0.0 }
                ));
                if r.cost() >= b.cost() {
                    lines.push("  note: no compaction setting in this grid is cheaper than no compaction on these sessions".into());
                }
            }
            if let Some(a) = &out.better_alternative {
                lines.push(format!(
                    "  the guide's alternative beats it: {}: ${:.4} (${:.4} less), references broken {:.1}% (mean), no failed run; to deploy it: {}",
                    a.label,
                    a.cost(),
                    r.cost() - a.cost(),
                    100.0 * a.broken_references(),
                    super::summary::deploy_text(&a.label, &a.setting.alternative_text())
                ));
            }
        }
        Err(m) => lines.push(m.to_string()),
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::grid::{GridSpec, Known};
    use crate::sweep::run::{
        shard_sessions,
        tests::{run_pairs, Fake},
    };
    use std::sync::atomic::AtomicBool;

    fn setup(n: usize) -> (RunInputs, ResolvedGrid) {
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        let grid = GridSpec::from_toml(
            "g",
            "after_tokens='1k..8k:1k'\nkeep_recent_events=[1,3]\nsummarizer=['agent','terse']",
        )
        .unwrap()
        .resolve(&k)
        .unwrap();
        let sessions: Vec<SessionInfo> = (0..n)
            .map(|i| SessionInfo {
                session_id: format!("s{i}"),
                source: format!("in/f{i}.json"),
                format: "adk".into(),
                events: 10 + i as u64,
                model_requests: 1 + i as u64,
                ..Default::default()
            })
            .collect();
        let inputs = RunInputs {
            inputs: sessions
                .iter()
                .map(|s| InputInfo {
                    path: s.source.clone(),
                    sessions: 1,
                })
                .collect(),
            sessions,
            skipped: vec![],
            failed_sessions: vec![],
            grid_toml: grid.to_toml(),
            pricing_toml: "p".into(),
            latency_toml: "l".into(),
            pricing_date: "2026-11-01".into(),
            pricing_source: "test prices".into(),
            latency_default_models: vec![],
            summarizer_errors: vec![],
            sampled_from: None,
            sample_data: None,
        };
        (inputs, grid)
    }

    /// A partial folder of `rows`, as `sweep --shard` writes it.
    fn partial(d: &Path, shard: Shard, inputs: &RunInputs, grid: &ResolvedGrid, rows: &[RunRow]) {
        std::fs::create_dir_all(d).unwrap();
        let mut w = RunsWriter::create(d, &inputs.sessions, &grid.settings, false).unwrap();
        w.push(rows.iter().cloned()).unwrap();
        w.finish().unwrap();
        write_partial_files(d, shard, inputs, &AtomicBool::new(false)).unwrap();
    }

    /// A full run folder (no report) of `rows`, or of the rows merged from `parts`; checks
    /// the aggregates read back from runs.parquet equal those of the rows in memory.
    fn full_run(
        dir: &Path,
        inputs: &RunInputs,
        grid: &ResolvedGrid,
        rows: &[RunRow],
        parts: Option<&[PathBuf]>,
        fake: &Fake,
    ) {
        std::fs::create_dir_all(dir).unwrap();
        let mut w = RunsWriter::create(dir, &inputs.sessions, &grid.settings, true).unwrap();
        match parts {
            Some(p) => merge_runs(p, inputs, &mut w).unwrap(),
            None => w.push(rows.iter().cloned()).unwrap(),
        }
        assert_eq!(w.finish().unwrap(), rows.len() as u64);
        let out = outcome_parquet(&grid.settings, &dir.join("runs.parquet"), &grid.budget).unwrap();
        assert_eq!(
            out.summaries,
            outcome(&grid.settings, rows, &grid.budget).summaries
        );
        let live = live_sessions(inputs);
        let tl =
            timelines_json(fake, &|i| Some(i as usize), &inputs.sessions, &live, &out).unwrap();
        RunFiles {
            name: "run",
            inputs,
            grid,
            outcome: &out,
            timelines: &tl,
        }
        .write(dir, &AtomicBool::new(false))
        .unwrap();
    }

    /// Rows → single run and rows → 3 shards → merge give the same bytes in every file.
    fn single_equals_merged(n: usize) {
        let (inputs, grid) = setup(n);
        let fake = Fake { n };
        let root = tempfile::tempdir().unwrap();
        let all: Vec<u32> = (0..n as u32).collect();
        let rows = run_pairs(&fake, &all, &grid.settings, &AtomicBool::new(false), &|| {})
            .unwrap()
            .0;
        full_run(
            &root.path().join("single"),
            &inputs,
            &grid,
            &rows,
            None,
            &fake,
        );

        let mut parts = Vec::new();
        for k in 1..=3 {
            let shard = Shard { k, n: 3 };
            let mine = shard_sessions(n, Some(shard));
            let r = run_pairs(
                &fake,
                &mine,
                &grid.settings,
                &AtomicBool::new(false),
                &|| {},
            )
            .unwrap()
            .0;
            let d = root.path().join(format!("part{k}"));
            partial(&d, shard, &inputs, &grid, &r);
            parts.push(d);
        }
        parts.reverse(); // order of arguments must not matter
        let (m_inputs, shard, dirs) = read_partials(&parts).unwrap();
        assert_eq!(shard.n, 3);
        full_run(
            &root.path().join("merged"),
            &m_inputs,
            &grid,
            &rows,
            Some(&dirs),
            &fake,
        );
        for f in RUN_FILES {
            let a = std::fs::read(root.path().join("single").join(f)).unwrap();
            let b = std::fs::read(root.path().join("merged").join(f)).unwrap();
            assert!(a == b, "{f} differs");
        }
    }

    #[test]
    fn runs_csv_is_written_up_to_the_limit_or_when_asked() {
        let max = super::super::frames::RUNS_CSV_MAX_ROWS;
        assert!(wants_runs_csv(0, false) && wants_runs_csv(max, false));
        assert!(!wants_runs_csv(max + 1, false));
        assert!(wants_runs_csv(max + 1, true) && wants_runs_csv(u64::MAX, true));
    }

    #[test]
    fn merged_shards_equal_the_single_run() {
        single_equals_merged(7);
    }

    /// Issue 13: rows are streamed a row group at a time and merged a row group per shard at
    /// a time; over several row groups the merge, the Parquet aggregates and the bytes still
    /// agree with the single run, and the row groups are of the documented size.
    #[test]
    fn streamed_row_groups_merge_and_aggregate_like_the_rows_in_memory() {
        let (_, grid) = setup(1);
        let n = super::super::frames::ROW_GROUP_ROWS * 2 / grid.settings.len() + 3;
        single_equals_merged(n);
        // The streamed file has full row groups, then the rest.
        let (inputs, grid) = setup(n);
        let all: Vec<u32> = (0..n as u32).collect();
        let rows = run_pairs(
            &Fake { n },
            &all,
            &grid.settings,
            &AtomicBool::new(false),
            &|| {},
        )
        .unwrap()
        .0;
        let d = tempfile::tempdir().unwrap();
        let mut w = RunsWriter::create(d.path(), &inputs.sessions, &grid.settings, false).unwrap();
        w.push(rows.iter().cloned()).unwrap();
        w.finish().unwrap();
        let g = RowGroups::open(&d.path().join("runs.parquet")).unwrap();
        assert_eq!(g.len(), 3);
        let sizes: Vec<usize> = (0..3)
            .map(|i| g.read(i, &["setting_id"]).unwrap().height())
            .collect();
        let rg = super::super::frames::ROW_GROUP_ROWS;
        assert_eq!(sizes, vec![rg, rg, rows.len() - 2 * rg]);
    }

    #[test]
    fn merge_refuses_missing_and_mismatched_shards() {
        let (inputs, grid) = setup(4);
        let fake = Fake { n: 4 };
        let root = tempfile::tempdir().unwrap();
        let mut parts = Vec::new();
        for k in 1..=2 {
            let shard = Shard { k, n: 3 };
            let r = run_pairs(
                &fake,
                &shard_sessions(4, Some(shard)),
                &grid.settings,
                &AtomicBool::new(false),
                &|| {},
            )
            .unwrap()
            .0;
            let d = root.path().join(format!("p{k}"));
            partial(&d, shard, &inputs, &grid, &r);
            parts.push(d);
        }
        let e = read_partials(&parts).unwrap_err().to_string();
        assert!(e.contains("shard 3/3 is missing"), "{e}");
        let e = read_partials(&[parts[0].clone(), parts[0].clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("given twice"), "{e}");
        let mut other = inputs.clone();
        other.grid_toml.push('#');
        let d = root.path().join("p3");
        partial(&d, Shard { k: 3, n: 3 }, &other, &grid, &[]);
        parts.push(d);
        let e = read_partials(&parts).unwrap_err().to_string();
        assert!(e.contains("other inputs"), "{e}");
    }

    #[test]
    fn a_forged_shard_number_is_an_error_not_a_panic() {
        let (inputs, grid) = setup(2);
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("p");
        partial(&d, Shard { k: 1, n: 1 }, &inputs, &grid, &[]);
        let p = d.join("shard.json");
        let text = std::fs::read_to_string(&p).unwrap();
        for (k, n) in [(0, 1), (3, 2), (0, 0)] {
            let forged = text
                .replacen("\"k\": 1", &format!("\"k\": {k}"), 1)
                .replacen("\"n\": 1", &format!("\"n\": {n}"), 1);
            assert_ne!(forged, text);
            std::fs::write(&p, forged).unwrap();
            let e = read_partials(std::slice::from_ref(&d)).unwrap_err();
            assert!(e.to_string().contains("is not a slice"), "{e}");
        }
    }

    #[test]
    fn run_name_hash_depends_on_inputs_and_grid() {
        let (a, _) = setup(3);
        let mut b = a.clone();
        assert_eq!(a.short_hash(), b.short_hash());
        b.sessions[0].events += 1;
        assert_ne!(a.short_hash(), b.short_hash());
        let mut c = a.clone();
        c.grid_toml.push(' ');
        assert_ne!(a.short_hash(), c.short_hash());
        assert!(a.default_name("2026-11-29").starts_with("2026-11-29-"));
    }
}
