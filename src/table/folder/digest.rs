//! Folding a run folder's per-session rows into what [`RunData`] keeps, so a run of millions
//! of rows is read in bounded memory.

use super::read::{
    digest_parquet, parse_recorded, parse_runs, parse_settings, parse_timelines, read_json,
    read_text,
};
use super::{
    tightest_cap, DataError, RunData, SessionFigures, SessionRow, SettingRow, StuckSession,
    Timeline,
};
use serde_json::Value;
use std::path::Path;

/// Sessions kept per setting for the report's drill-down (the explorer in report.html):
/// the ones that lose most, so a run of many settings and sessions stays small in memory
/// and in the page.
pub const WORST_SESSIONS: usize = 5;

/// Stuck sessions the report lists by name (it counts them all): the list stays small
/// whatever the run's size.
pub const STUCK_LISTED: usize = 20;

/// Orders session rows by how much they lose: broken references, then history read only
/// through summaries, most first; then by session id and source, so the pick is stable.
fn loses_more(a: &SessionRow, b: &SessionRow) -> std::cmp::Ordering {
    loss_order(&b.figures, &a.figures)
        .then(a.session_id.cmp(&b.session_id))
        .then(a.source.cmp(&b.source))
}

/// `a` against `b` by broken references, then history read only through summaries (a
/// missing figure counts as least).
fn loss_order(a: &SessionFigures, b: &SessionFigures) -> std::cmp::Ordering {
    let key = |x: Option<f64>| x.unwrap_or(f64::NEG_INFINITY);
    key(a.references_broken_share)
        .total_cmp(&key(b.references_broken_share))
        .then(key(a.detail_lost).total_cmp(&key(b.detail_lost)))
}

/// Folds rows into what [`RunData`] keeps.
pub(super) struct Digest {
    index: std::collections::HashMap<String, usize>,
    /// Settings whose every row is kept: the no-compaction baselines and the recommended one.
    keep: std::collections::HashSet<String>,
    /// The tightest `max_llm_calls` cap, whose rows are kept where a run failed (the report
    /// lists those sessions). No other alternative's rows are kept: per session they were
    /// most of what the report's memory grew by.
    tight_cap: Option<String>,
    compacting: Vec<bool>,
    ids: std::collections::HashSet<String>,
    runs: Vec<SessionRow>,
    latency: Vec<Vec<f64>>,
    worst: Vec<Vec<SessionRow>>,
    stuck: Vec<StuckSession>,
    stuck_sessions: usize,
    /// The session of the last stuck row (session id, source): a new one counts once.
    last_stuck: Option<(String, String)>,
}

impl Digest {
    pub(super) fn new(settings: &[SettingRow]) -> Digest {
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
            stuck: Vec::new(),
            stuck_sessions: 0,
            last_stuck: None,
        }
    }

    /// A stuck row: counted once per session (rows are session-major), listed while the
    /// list has room.
    fn add_stuck(
        &mut self,
        session_id: &str,
        source: &str,
        setting_id: &str,
        f: &SessionFigures,
        call: Option<&str>,
    ) {
        let Some(event) = f.stuck_event else {
            return;
        };
        let same = self
            .last_stuck
            .as_ref()
            .is_some_and(|(s, src)| s == session_id && src == source);
        if same {
            if let Some(last) = self
                .stuck
                .last_mut()
                .filter(|l| l.session_id == session_id && l.source == source)
            {
                last.settings += 1;
            }
            return;
        }
        self.last_stuck = Some((session_id.to_string(), source.to_string()));
        self.stuck_sessions += 1;
        if self.stuck.len() < STUCK_LISTED {
            self.stuck.push(StuckSession {
                session_id: session_id.to_string(),
                source: source.to_string(),
                setting_id: setting_id.to_string(),
                call: call.unwrap_or("").to_string(),
                event: event as u64,
                tokens: f.stuck_history_tokens.unwrap_or(0.0),
                settings: 1,
            });
        }
    }

    /// One row read whole (runs.csv, tests).
    fn add_row(&mut self, r: &SessionRow) {
        self.add(
            &r.session_id,
            &r.source,
            &r.setting_id,
            &r.figures,
            r.stuck_call.as_deref(),
        );
    }

    /// One row, by its keys and figures; a [`SessionRow`] is made only for rows kept.
    pub(super) fn add(
        &mut self,
        session_id: &str,
        source: &str,
        setting_id: &str,
        f: &SessionFigures,
        stuck_call: Option<&str>,
    ) {
        self.add_stuck(session_id, source, setting_id, f, stuck_call);
        if !self.ids.contains(session_id) {
            self.ids.insert(session_id.to_string());
        }
        let row = || SessionRow {
            session_id: session_id.to_string(),
            source: source.to_string(),
            setting_id: setting_id.to_string(),
            figures: *f,
            stuck_call: stuck_call.map(str::to_string),
        };
        if let Some(&i) = self.index.get(setting_id) {
            let worst = &mut self.worst[i];
            // A cheap check first (no allocation: most rows lose less than the list's last);
            // a row that passes is placed by the full order, and one placed last drops.
            let may_enter = |w: &SessionRow| {
                loss_order(&w.figures, f)
                    .then(session_id.cmp(w.session_id.as_str()))
                    .is_le()
            };
            if worst.len() < WORST_SESSIONS || worst.last().is_some_and(may_enter) {
                let r = row();
                let at = worst
                    .binary_search_by(|w| loses_more(w, &r))
                    .unwrap_or_else(|e| e);
                worst.insert(at, r);
                worst.truncate(WORST_SESSIONS);
            }
            if self.compacting[i] && f.summarizer_calls.unwrap_or(0.0) > 0.0 {
                if let Some(v) = f.end_of_run_latency_max_s.or(f.end_of_run_latency_p95_s) {
                    self.latency[i].push(v);
                }
            }
        }
        let failed = || {
            self.tight_cap.as_deref() == Some(setting_id)
                && f.invocations_failed.unwrap_or(0.0) > 0.0
        };
        if self.keep.contains(setting_id) || failed() {
            self.runs.push(row());
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
                digest.add_row(&r);
            }
        }
        let mut data = RunData::digested(dir, run, settings, digest, timelines);
        let recorded = dir.join(crate::table::rundir::RECORDED_COMPACTIONS);
        if recorded.exists() {
            data.recorded = Some(parse_recorded(&recorded)?);
        }
        Ok(data)
    }

    /// Run data from rows in memory (tests, and runs.csv).
    pub fn from_rows(
        dir: &Path,
        run: Value,
        settings: Vec<SettingRow>,
        rows: Vec<SessionRow>,
        timelines: Vec<Timeline>,
    ) -> RunData {
        let mut digest = Digest::new(&settings);
        for r in rows {
            digest.add_row(&r);
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
            stuck: digest.stuck,
            stuck_sessions: digest.stuck_sessions,
            recorded: None,
        }
    }
}
