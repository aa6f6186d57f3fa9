//! The real evaluator: transcripts read once, counted once per tokenizer, then replayed by
//! the engine and priced by `cost` for each setting.
//!
//! This is where the modules to the left of `sweep` are wired together; the rest of `sweep`
//! and all of `table` only see the [`Evaluator`] trait.

use super::grid::{ClientMode, Setting};
use super::run::{
    Evaluator, InputInfo, ReplayError, SessionInfo, Skipped, Timeline, TimelineCompaction,
    TimelineRequest,
};
use crate::backtest::sizes::{on_scale, prompt_fit};
use crate::backtest::{as_recorded, AsRecorded};
use crate::cost::compute::CostModel;
use crate::cost::evaluate::{evaluate, CostSetting, SessionCostInputs};
use crate::cost::latency::BUILTIN_LATENCY;
use crate::cost::metrics::SessionMetrics;
use crate::cost::pricing::BUILTIN_PRICING;
use crate::engine::{Config, Phase, Replay, Summarizer, UsageMode};
use crate::settings::{Alternative, PolicySpec};
use crate::summarize::SummarizerSpec;
use crate::tokens::fit::PromptFit;
use crate::tokens::sizes::SessionSizes;
use crate::tokens::Tokenizer;
use crate::transcript::claude_code_settings::{settings_of, SettingsBook};
use crate::transcript::db::DbFilter;
use crate::transcript::ClaudeCodeSettings;
use crate::transcript::{detect, Format, ReadError, Session};
use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub use crate::tokens::CacheOpts;

pub use crate::cost::compute::FALLBACK_AGENT_MODEL;

/// Prices and latency parameters in use, with the text they came from (copied into the run
/// folder as pricing.toml / latency.toml; applying that text over the built-in tables gives
/// the same tables again, which is how `merge` rebuilds them).
pub struct Costing {
    pub model: CostModel,
    pub pricing_text: String,
    pub latency_text: String,
    pub pricing_date: String,
    /// Where the prices come from (the table's `source`, plus any `--pricing` file).
    pub pricing_source: String,
}

impl Costing {
    /// The built-in tables, with `--pricing` / `--latency` files applied over them.
    pub fn load(pricing: Option<&Path>, latency: Option<&Path>) -> Result<Costing> {
        let read = |p: &Path| {
            crate::atomic::read_capped(p, crate::atomic::MAX_CONFIG_BYTES)
                .with_context(|| format!("{}: cannot read", p.display()))
        };
        let (pf, pt) = match pricing {
            Some(p) => (p.display().to_string(), read(p)?),
            None => (
                "<builtin pricing.toml>".to_string(),
                BUILTIN_PRICING.to_string(),
            ),
        };
        let (lf, lt) = match latency {
            Some(p) => (p.display().to_string(), read(p)?),
            None => (
                "<builtin latency.toml>".to_string(),
                BUILTIN_LATENCY.to_string(),
            ),
        };
        Costing::from_texts(&pf, &pt, &lf, &lt)
    }

    pub fn from_texts(
        pricing_file: &str,
        pricing: &str,
        latency_file: &str,
        latency: &str,
    ) -> Result<Costing> {
        let mut model = CostModel::default();
        model.prices.apply_file(pricing_file, pricing)?;
        model.latency.apply_file(latency_file, latency)?;
        let pricing_date = model.prices.pricing_date.clone();
        let pricing_source = model.prices.source.clone();
        Ok(Costing {
            pricing_source,
            model,
            pricing_text: pricing.to_string(),
            latency_text: latency.to_string(),
            pricing_date,
        })
    }

    pub fn knows_model(&self, name: &str) -> bool {
        self.model.check_model(name).is_ok()
    }
}

/// The run's models (its agent models, the sessions' recorded ones for `recorded`, and
/// `model:NAME` summarizers) that match no latency family: they are timed with the `default`
/// figures, which run.json and the report state as an assumption.
pub fn latency_default_models(
    latency: &crate::cost::latency::LatencyTable,
    agent_models: &[String],
    summarizers: &[String],
    recorded: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    use crate::summarize::SummarizerSpec;
    let mut models = std::collections::BTreeSet::new();
    for m in agent_models {
        if m == "recorded" {
            models.extend(recorded.iter().cloned());
        } else {
            models.insert(m.clone());
        }
    }
    for s in summarizers {
        if let Ok(SummarizerSpec::Model(m)) = SummarizerSpec::parse(s) {
            models.insert(m);
        }
    }
    models
        .into_iter()
        .filter(|m| latency.family_of(m).is_none())
        .collect()
}

pub fn tokenizer_names() -> Vec<&'static str> {
    Tokenizer::ALL.iter().map(|t| t.name()).collect()
}

pub fn cache_opts(dir: Option<PathBuf>, no_cache: bool) -> CacheOpts {
    CacheOpts::resolve(dir, no_cache)
}

/// Sessions read from the inputs, sorted by (source, id), ids made unique.
pub struct Loaded {
    pub sessions: Vec<Session>,
    pub inputs: Vec<InputInfo>,
    pub skipped: Vec<Skipped>,
}

pub use crate::transcript::util::source_file;

/// Read every input once. Bad files are reported in `skipped`, never fatal.
pub fn load_sessions(paths: &[String], format: Option<&str>) -> Result<Loaded> {
    load_sessions_filtered(paths, format, &DbFilter::default())
}

/// [`load_sessions`], with `filter` selecting the sessions of database inputs.
pub fn load_sessions_filtered(
    paths: &[String],
    format: Option<&str>,
    filter: &DbFilter,
) -> Result<Loaded> {
    let format = parse_format(format)?;
    let loaded = detect::load_inputs(paths, format, filter);
    let mut sessions = loaded.sessions;
    // Sorted by (source, id) so the run does not depend on the order paths were given.
    sessions.sort_by(|a, b| (&a.source, &a.id).cmp(&(&b.source, &b.id)));
    let renamed = repeated_ids(sessions.iter().map(|s| (s.source.as_str(), s.id.as_str())));
    for (s, id) in sessions.iter_mut().zip(renamed) {
        if let Some(id) = id {
            s.id = id;
        }
    }
    let inputs = input_list(sessions.iter().map(|s| s.source.as_str()));
    let skipped = skipped_list(&loaded.skipped);
    Ok(Loaded {
        sessions,
        inputs,
        skipped,
    })
}

/// What the run records about a session besides its rows (run.json `session_facts`).
pub fn session_info(s: &Session, tok: Tokenizer) -> SessionInfo {
    let mut per_inv: HashMap<&str, u64> = HashMap::new();
    for e in s.events.iter().filter(|e| e.model_request) {
        *per_inv.entry(e.invocation_id.as_str()).or_default() += 1;
    }
    let attach = crate::cost::compute::attachment_tokens(s, tok);
    let first = attach.iter().position(|&t| t > 0);
    let recorded = as_recorded(s);
    SessionInfo {
        session_id: s.id.clone(),
        source: s.source.clone(),
        format: s.format.name().to_string(),
        events: s.events.len() as u64,
        model_requests: s.events.iter().filter(|e| e.model_request).count() as u64,
        max_model_requests_per_invocation: per_inv.values().copied().max().unwrap_or(0),
        attachment_tokens: attach.iter().sum(),
        requests_with_attachment: first.map_or(0, |f| {
            s.events[f..].iter().filter(|e| e.model_request).count() as u64
        }),
        orphan_responses: crate::transcript::util::orphan_responses(&s.events) as u64,
        as_recorded: recorded.label(),
        records_setting: !matches!(recorded, AsRecorded::Nothing { .. }),
    }
}

/// [`session_info`] for many sessions, in parallel, with the grid's first tokenizer.
pub fn session_infos(sessions: &[Session], tokenizers: &[String]) -> Vec<SessionInfo> {
    let tok = first_tokenizer(tokenizers);
    sessions.par_iter().map(|s| session_info(s, tok)).collect()
}

/// One session ready to replay under one tokenizer.
struct Sized {
    tok: Tokenizer,
    sizes: SessionSizes,
    inputs: SessionCostInputs,
    /// Each event's token count (what `sizes` was built from; empty when counted as
    /// adk-chars), kept to size the session's counterfactuals without counting again.
    counts: Vec<u32>,
    /// The recorded session's provider-scale fit on these counts (runs' `prompt_*` columns);
    /// `None` for a counterfactual or a session recording too few prompt sizes.
    fit: Option<PromptFit>,
}

struct Prepared {
    session: std::sync::Arc<Session>,
    sized: Vec<Sized>,
    /// Counterfactual sessions of the guide's alternatives by (alternative, tokenizer),
    /// built on first use and shared by every setting that replays them; dropped with the
    /// window, so memory stays that of one window.
    variants: std::sync::Mutex<HashMap<(Alternative, String), std::sync::Arc<Counterfactual>>>,
    /// The recorded session's no-compaction metrics every alternative is measured against,
    /// by (tokenizer, agent model, client): replayed once, not once per alternative setting.
    baselines: std::sync::Mutex<HashMap<(String, String, ClientMode), SessionMetrics>>,
}

/// One alternative's session (or, for a split, its parts, each replayed as a session of
/// its own), sized for one tokenizer.
struct Counterfactual {
    parts: Vec<(std::sync::Arc<Session>, Sized)>,
    invocations_failed: u64,
    /// References the cut breaks (a split's: facts only earlier parts held).
    references_cut: u64,
}

/// Prepared sessions, ready to replay: each `evaluate` is one engine replay (two or more
/// under `streams` when a summary loses the race) plus the metrics. A sweep prepares one
/// window of sessions at a time (see [`Counted::window`]).
pub struct PipelineEval {
    /// Session indices of `items`, ascending.
    ids: Vec<u32>,
    items: Vec<Prepared>,
    cost: CostModel,
    specs: std::sync::Mutex<HashMap<String, SummarizerSpec>>,
    /// Time limit of a `command:` call (`--summarizer-timeout`).
    summarizer_timeout: std::time::Duration,
    /// Failed summarizer calls by (session, setting id), sorted and deduplicated.
    errors: std::sync::Mutex<std::collections::BTreeMap<(u32, u32), Vec<String>>>,
}

/// How long each preparation phase took, seconds (the benchmark's time split).
#[derive(Debug, Clone, Copy, Default)]
pub struct PrepTimes {
    /// Reading sessions again from their files.
    pub read_s: f64,
    pub count_s: f64,
    pub size_s: f64,
}

/// The run's sessions, listed but not held: a first pass reads every input (a batch of files
/// at a time) for what the run records about each session, in the run's order; each window
/// of a sweep then reads its sessions again ([`Catalog::read`]), so the parsed transcripts in
/// memory are those of one window, not of the run. Sessions of database inputs (and of
/// [`Catalog::from_sessions`]) are held.
pub struct Catalog {
    /// The sessions' facts, sorted by (source, session_id); indices are session numbers.
    pub infos: Vec<SessionInfo>,
    pub inputs: Vec<InputInfo>,
    pub skipped: Vec<Skipped>,
    /// Spellings of one file read once.
    pub merged: Vec<detect::Merged>,
    /// What the readers found wrong in the sessions' records and did not use, or adjusted
    /// (each session's [`Session::notes`]), in the run's order.
    pub notes: Vec<String>,
    /// Each session's recorded agent model (the fallback where it names none).
    models: Vec<String>,
    /// Where each session is: a file to read again and its place among the file's sessions,
    /// or `held[k]`.
    origin: Vec<Origin>,
    files: Vec<PathBuf>,
    format: Option<Format>,
    held: Vec<std::sync::Arc<Session>>,
    /// The last file read, when it holds more sessions than a window took from it.
    last: Option<(usize, Vec<Option<Session>>)>,
    /// The Claude Code settings files the sessions read, given to the sessions of the same
    /// home or directory that read none each time their file is read again.
    settings: SettingsBook,
}

/// What the first pass keeps of a session.
struct Listed {
    source: String,
    id: String,
    model: String,
    info: SessionInfo,
    /// A Claude Code session's recorded settings (to tell whether another session's
    /// settings file applies to it).
    settings: Option<ClaudeCodeSettings>,
    notes: Vec<String>,
}

impl Listed {
    fn of(s: &Session, tok: Tokenizer) -> Listed {
        Listed {
            source: s.source.clone(),
            id: s.id.clone(),
            model: recorded_model(s).to_string(),
            info: session_info(s, tok),
            settings: settings_of(s).cloned(),
            notes: s.notes.clone(),
        }
    }
}

/// The session's recorded agent model, or the fallback where it names none.
fn recorded_model(s: &Session) -> &str {
    s.model.as_deref().unwrap_or(FALLBACK_AGENT_MODEL)
}

/// The first tokenizer of the run (what the sessions' facts are counted in).
fn first_tokenizer(tokenizers: &[String]) -> Tokenizer {
    tokenizers
        .first()
        .and_then(|t| t.parse::<Tokenizer>().ok())
        .unwrap_or_default()
}

/// The first pass over files, [`SCAN_FILES`] at a time (each batch in parallel): what is
/// kept of each session and where it is, in the order read.
fn list_files(
    files: &[PathBuf],
    format: Option<Format>,
    tok: Tokenizer,
    errors: &mut Vec<ReadError>,
) -> (Vec<(Listed, Origin)>, SettingsBook) {
    let mut listed = Vec::new();
    let mut book = SettingsBook::default();
    for (b, batch) in files.chunks(SCAN_FILES).enumerate() {
        let results: Vec<Result<(Vec<Listed>, SettingsBook), ReadError>> = batch
            .par_iter()
            .map(|f| {
                detect::load_file(f, format).map(|ss| {
                    let mut read = SettingsBook::default();
                    ss.iter().for_each(|s| read.note(s));
                    (ss.iter().map(|s| Listed::of(s, tok)).collect(), read)
                })
            })
            .collect();
        for (k, r) in results.into_iter().enumerate() {
            let file = (b * SCAN_FILES + k) as u32;
            match r {
                Ok((ls, read)) => {
                    book.extend(read);
                    listed.extend(ls.into_iter().enumerate().map(|(pos, l)| {
                        let pos = pos as u32;
                        (l, Origin::File { file, pos })
                    }))
                }
                Err(e) => errors.push(e),
            }
        }
    }
    refresh_shared(&mut listed, files, format, tok, &book, errors);
    (listed, book)
}

/// The sessions another session's Claude Code settings file applies to
/// (`SettingsBook::applies_to`), read again with those settings, their facts made anew (the
/// first pass listed them before every file was read). Each file holding some is read once,
/// [`SCAN_FILES`] at a time in parallel, as the first pass reads them.
fn refresh_shared(
    listed: &mut [(Listed, Origin)],
    files: &[PathBuf],
    format: Option<Format>,
    tok: Tokenizer,
    book: &SettingsBook,
    errors: &mut Vec<ReadError>,
) {
    // per file: the positions of its sessions to refresh, with their place in `listed`
    let mut by_file: BTreeMap<u32, Vec<(u32, usize)>> = BTreeMap::new();
    for (i, (l, origin)) in listed.iter().enumerate() {
        if let (Some(s), Origin::File { file, pos }) = (&l.settings, *origin) {
            if book.applies_to(s) {
                by_file.entry(file).or_default().push((pos, i));
            }
        }
    }
    let work: Vec<(u32, Vec<(u32, usize)>)> = by_file.into_iter().collect();
    for batch in work.chunks(SCAN_FILES) {
        let read: Vec<Result<Vec<(usize, Listed)>, ReadError>> = batch
            .par_iter()
            .map(|(file, wanted)| {
                let mut ss = detect::load_file(&files[*file as usize], format)?;
                Ok(wanted
                    .iter()
                    .filter_map(|&(pos, i)| {
                        let session = ss.get_mut(pos as usize)?;
                        book.apply(session);
                        Some((i, Listed::of(session, tok)))
                    })
                    .collect())
            })
            .collect();
        for r in read {
            match r {
                Ok(fresh) => fresh.into_iter().for_each(|(i, l)| listed[i].0 = l),
                Err(e) => errors.push(e),
            }
        }
    }
}

/// The sessions of database inputs, held (listed after the files' sessions).
fn list_held(
    urls: &[String],
    filter: &DbFilter,
    tok: Tokenizer,
    listed: &mut Vec<(Listed, Origin)>,
    errors: &mut Vec<ReadError>,
) -> Vec<std::sync::Arc<Session>> {
    let mut held = Vec::new();
    for u in urls {
        let (sessions, skipped) = crate::transcript::db::load_arg(u, filter);
        errors.extend(skipped);
        for s in sessions {
            listed.push((Listed::of(&s, tok), Origin::Held(held.len() as u32)));
            held.push(std::sync::Arc::new(s));
        }
    }
    held
}

/// A file read again: its number, the (slot, position) of the sessions wanted from it, and
/// what reading it gave.
type FileRead = (u32, Vec<(usize, u32)>, Result<Vec<Session>, ReadError>);

#[derive(Debug, Clone, Copy)]
enum Origin {
    File { file: u32, pos: u32 },
    Held(u32),
}

/// Files parsed at once in the first pass (each in parallel), so only their sessions are in
/// memory at a time.
const SCAN_FILES: usize = 64;

impl Catalog {
    /// Read every input once (files in batches, database URLs whole) and list its sessions
    /// in the run's order: sorted by (source, id), a repeated (source, id) made unique with
    /// `#2`, `#3`, ... as [`load_sessions`] does. Bad files are reported in `skipped`.
    pub fn scan(
        paths: &[String],
        format: Option<&str>,
        filter: &DbFilter,
        tokenizers: &[String],
    ) -> Result<Catalog> {
        let format = parse_format(format)?;
        let tok = first_tokenizer(tokenizers);
        let (urls, files): (Vec<String>, Vec<String>) = paths
            .iter()
            .cloned()
            .partition(|p| crate::transcript::db::is_db_url(p));
        let detect::Expanded {
            files,
            skipped: expand_errors,
            merged,
        } = if files.is_empty() {
            detect::Expanded::default()
        } else {
            detect::expand_inputs(&files)
        };
        let mut errors: Vec<ReadError> = expand_errors
            .into_iter()
            .map(crate::transcript::util::tidy)
            .collect();
        let (mut listed, settings) = list_files(&files, format, tok, &mut errors);
        let held = list_held(&urls, filter, tok, &mut listed, &mut errors);
        // The run's order: by (source, id), ties in the order read (the sort is stable).
        listed.sort_by(|a, b| (&a.0.source, &a.0.id).cmp(&(&b.0.source, &b.0.id)));
        let renamed = repeated_ids(
            listed
                .iter()
                .map(|(l, _)| (l.source.as_str(), l.id.as_str())),
        );
        let mut infos = Vec::with_capacity(listed.len());
        let mut origin = Vec::with_capacity(listed.len());
        let mut models = Vec::with_capacity(listed.len());
        let mut notes = Vec::new();
        for ((mut l, o), id) in listed.into_iter().zip(renamed) {
            notes.append(&mut l.notes);
            let mut info = l.info;
            if let Some(id) = id {
                info.session_id = id;
            }
            infos.push(info);
            origin.push(o);
            models.push(l.model);
        }
        let inputs = input_list(infos.iter().map(|s| s.source.as_str()));
        let skipped = skipped_list(&errors);
        Ok(Catalog {
            infos,
            inputs,
            skipped,
            merged,
            notes,
            models,
            origin,
            files,
            format,
            held,
            last: None,
            settings,
        })
    }

    /// A catalog of sessions already in memory (kept in the given order).
    pub fn from_sessions(sessions: Vec<Session>, tokenizers: &[String]) -> Catalog {
        let infos = session_infos(&sessions, tokenizers);
        let models = sessions
            .iter()
            .map(|s| recorded_model(s).to_string())
            .collect();
        Catalog {
            infos,
            inputs: Vec::new(),
            skipped: Vec::new(),
            merged: Vec::new(),
            notes: sessions
                .iter()
                .flat_map(|s| s.notes.iter().cloned())
                .collect(),
            models,
            origin: (0..sessions.len() as u32).map(Origin::Held).collect(),
            files: Vec::new(),
            format: None,
            held: sessions.into_iter().map(std::sync::Arc::new).collect(),
            last: None,
            settings: SettingsBook::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.infos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// The agent models the sessions record (`recorded` prices each session at its own).
    pub fn recorded_models(&self) -> std::collections::BTreeSet<String> {
        self.models.iter().cloned().collect()
    }

    /// Keep `n` of the sessions, chosen by the xxh3 hash of their (source, id): the same
    /// sessions on every run over the same inputs, whatever the order the paths were given or
    /// the thread count, and a session stays in the sample when others are added beside it
    /// (unless one of them hashes lower). The kept sessions stay in (source, id) order;
    /// `inputs` counts only them (a file none of whose sessions was drawn is left out).
    /// Returns how many sessions there were.
    pub fn sample(&mut self, n: usize) -> usize {
        let total = self.infos.len();
        if n >= total {
            return total;
        }
        let hash = |s: &SessionInfo| {
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            h.update(s.source.as_bytes());
            h.update(&[0]);
            h.update(s.session_id.as_bytes());
            h.digest()
        };
        let mut order: Vec<(u64, usize)> = self
            .infos
            .iter()
            .enumerate()
            .map(|(i, s)| (hash(s), i))
            .collect();
        order.sort_unstable();
        let mut keep = vec![false; total];
        for &(_, i) in order.iter().take(n) {
            keep[i] = true;
        }
        let retain = |v: &mut Vec<_>| {
            let mut k = keep.iter();
            v.retain(|_| *k.next().unwrap_or(&false));
        };
        retain(&mut self.infos);
        let mut k = keep.iter();
        self.origin.retain(|_| *k.next().unwrap_or(&false));
        let mut k = keep.iter();
        self.models.retain(|_| *k.next().unwrap_or(&false));
        self.inputs = input_list(self.infos.iter().map(|s| s.source.as_str()));
        total
    }

    /// The sessions `which` (in that order), read again from their files (each file once) or
    /// taken from those held. A file that no longer gives the session it gave is an error
    /// naming it.
    pub fn read(&mut self, which: &[u32]) -> Result<Vec<std::sync::Arc<Session>>> {
        let mut out: Vec<Option<std::sync::Arc<Session>>> = vec![None; which.len()];
        // Files needed, each with the (slot, position) of its sessions.
        let mut by_file: std::collections::BTreeMap<u32, Vec<(usize, u32)>> = Default::default();
        for (slot, &id) in which.iter().enumerate() {
            match self.origin.get(id as usize) {
                Some(Origin::Held(k)) => out[slot] = Some(self.held[*k as usize].clone()),
                Some(Origin::File { file, pos }) => {
                    by_file.entry(*file).or_default().push((slot, *pos))
                }
                None => return Err(anyhow!("session {id} is not in the run")),
            }
        }
        // The cached last file first (when it still holds every session wanted from it: a
        // session taken by an earlier window is read again), then the others in parallel.
        if let Some((f, cached)) = &mut self.last {
            let key = *f as u32;
            let all_there = by_file.get(&key).is_some_and(|want| {
                want.iter()
                    .all(|&(_, pos)| cached.get(pos as usize).is_some_and(|s| s.is_some()))
            });
            if all_there {
                for (slot, pos) in by_file.remove(&key).unwrap_or_default() {
                    out[slot] = cached
                        .get_mut(pos as usize)
                        .and_then(|s| s.take())
                        .map(std::sync::Arc::new);
                }
            }
        }
        let format = self.format;
        let files = &self.files;
        let loaded: Vec<FileRead> = by_file
            .into_iter()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|(f, want)| {
                let r = detect::load_file(&files[f as usize], format);
                (f, want, r)
            })
            .collect();
        for (f, want, r) in loaded {
            let file = self.files[f as usize].display().to_string();
            let mut sessions: Vec<Option<Session>> = r
                .map_err(|e| anyhow!("{file}: cannot be read again: {e}"))?
                .into_iter()
                .map(|mut s| {
                    self.settings.apply(&mut s);
                    Some(s)
                })
                .collect();
            for &(slot, pos) in &want {
                out[slot] = sessions
                    .get_mut(pos as usize)
                    .and_then(|s| s.take())
                    .map(std::sync::Arc::new);
            }
            // A file of many sessions is kept for the next window, which goes on with it.
            if sessions.iter().any(|s| s.is_some()) {
                self.last = Some((f as usize, sessions));
            }
        }
        let mut done = Vec::with_capacity(which.len());
        for (slot, s) in out.into_iter().enumerate() {
            let id = which[slot];
            let info = &self.infos[id as usize];
            let mut s = s.ok_or_else(|| {
                anyhow!(
                    "{}: session `{}` could not be read again (was the file changed during the run?)",
                    info.source,
                    info.session_id
                )
            })?;
            if s.id != info.session_id {
                std::sync::Arc::make_mut(&mut s).id = info.session_id.clone();
            }
            if s.source != info.source {
                return Err(anyhow!(
                    "{}: the file changed during the run (session `{}` is gone)",
                    info.source,
                    info.session_id
                ));
            }
            done.push(s);
        }
        Ok(done)
    }
}

fn parse_format(format: Option<&str>) -> Result<Option<Format>> {
    match format {
        Some(f) => Ok(Some(Format::from_name(f).ok_or_else(|| {
            anyhow!(
                "--format `{f}`: unknown format; use one of {}",
                Format::ALL.map(|f| f.name()).join(", ")
            )
        })?)),
        None => Ok(None),
    }
}

/// For sessions sorted by (source, id): the new id of each repeat of a (source, id) (`#2`,
/// `#3`, ...), so rows stay keyed; `None` for the first.
fn repeated_ids<'a>(keys: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<Option<String>> {
    let mut run = 1;
    let mut prev: Option<(&str, &str)> = None;
    keys.map(|key| {
        let id = if prev == Some(key) {
            run += 1;
            Some(format!("{}#{run}", key.1))
        } else {
            run = 1;
            None
        };
        prev = Some(key);
        id
    })
    .collect()
}

/// The input files of sessions in run order, each with how many sessions it gave.
fn input_list<'a>(sources: impl Iterator<Item = &'a str>) -> Vec<InputInfo> {
    let mut inputs: Vec<InputInfo> = Vec::new();
    for source in sources {
        let f = source_file(source);
        match inputs.last_mut() {
            Some(last) if last.path == f => last.sessions += 1,
            _ => inputs.push(InputInfo {
                path: f.to_string(),
                sessions: 1,
            }),
        }
    }
    inputs
}

/// Read errors as the run lists them: sorted by (path, reason).
fn skipped_list(errors: &[ReadError]) -> Vec<Skipped> {
    let mut skipped: Vec<Skipped> = errors.iter().map(skipped_of).collect();
    skipped.sort_by(|a, b| (&a.path, &a.reason).cmp(&(&b.path, &b.reason)));
    skipped
}

fn skipped_of(e: &ReadError) -> Skipped {
    Skipped {
        path: e.file.clone(),
        reason: if e.location.is_empty() {
            e.message.clone()
        } else {
            format!("{}: {}", e.location, e.message)
        },
    }
}

/// A run's sessions counted and sized a window at a time: a window's sessions are read
/// again ([`Catalog::read`]), counted per tokenizer against the token cache loaded once, and
/// sized (per-event arrays, cost inputs); only the window's exist in memory.
pub struct Counted {
    pub catalog: Catalog,
    counters: Vec<crate::tokens::Counter>,
    cost: CostModel,
    pub times: PrepTimes,
    /// Time limit of a `command:` summarizer call in every window's evaluator.
    summarizer_timeout: std::time::Duration,
}

impl Counted {
    pub fn new(
        catalog: Catalog,
        tokenizers: &[String],
        costing: &Costing,
        cache: &CacheOpts,
    ) -> Result<Self> {
        let counters = tokenizers
            .iter()
            .map(|t| {
                t.parse::<Tokenizer>()
                    .map(|t| crate::tokens::Counter::new(t, cache))
                    .map_err(|e| anyhow!(e))
            })
            .collect::<Result<_>>()?;
        Ok(Counted {
            catalog,
            counters,
            cost: costing.model.clone(),
            times: PrepTimes::default(),
            summarizer_timeout: crate::summarize::DEFAULT_COMMAND_TIMEOUT,
        })
    }

    /// Time limit of a `command:` summarizer call (`--summarizer-timeout`), for the windows
    /// read from now on ([`PipelineEval::set_summarizer_timeout`]).
    pub fn set_summarizer_timeout(&mut self, timeout: std::time::Duration) {
        self.summarizer_timeout = timeout;
    }

    /// Read, count and size the sessions `which` (ascending) for replay.
    pub fn window(&mut self, which: &[u32]) -> Result<PipelineEval> {
        let t0 = std::time::Instant::now();
        let sessions = self.catalog.read(which)?;
        let t1 = std::time::Instant::now();
        self.times.read_s += (t1 - t0).as_secs_f64();
        let plain: Vec<&Session> = sessions.iter().map(|s| s.as_ref()).collect();
        let mut counts: Vec<Vec<Vec<u32>>> = Vec::with_capacity(self.counters.len());
        for c in &mut self.counters {
            counts.push(c.count_refs(&plain).0);
        }
        let t2 = std::time::Instant::now();
        self.times.count_s += (t2 - t1).as_secs_f64();
        let toks: Vec<Tokenizer> = self.counters.iter().map(|c| c.tokenizer()).collect();
        let items: Vec<Prepared> = sessions
            .into_par_iter()
            .enumerate()
            .map(|(k, session)| {
                let sized = toks
                    .iter()
                    .zip(&counts)
                    .map(|(&tok, c)| {
                        let counted = SessionSizes::new(&session, Some(&c[k]));
                        let fit = prompt_fit(&session, &counted);
                        // on the provider's scale where the session records enough sizes
                        let sizes = match &fit {
                            Some(f) => on_scale(&session, &counted, f, false),
                            None => counted,
                        };
                        Sized {
                            tok,
                            fit,
                            sizes,
                            inputs: SessionCostInputs::new(&session, tok),
                            counts: c[k].clone(),
                        }
                    })
                    .collect();
                Prepared {
                    session,
                    sized,
                    variants: Default::default(),
                    baselines: Default::default(),
                }
            })
            .collect();
        self.times.size_s += t2.elapsed().as_secs_f64();
        Ok(PipelineEval {
            ids: which.to_vec(),
            items,
            cost: self.cost.clone(),
            specs: std::sync::Mutex::new(HashMap::new()),
            summarizer_timeout: self.summarizer_timeout,
            errors: std::sync::Mutex::new(std::collections::BTreeMap::new()),
        })
    }

    /// Save the token counts added to the cache (once, after the last window).
    pub fn save_counts(&mut self) {
        for c in &mut self.counters {
            c.save();
        }
    }
}

impl PipelineEval {
    /// Prepare the sessions at `which` (indices into `sessions`) for every tokenizer, all at
    /// once (a few sessions, or a benchmark that replays them several times).
    pub fn build(
        sessions: Vec<Session>,
        which: &[u32],
        tokenizers: &[String],
        costing: &Costing,
        cache: &CacheOpts,
    ) -> Result<Self> {
        let placed: Vec<Option<Session>> = sessions
            .into_iter()
            .enumerate()
            .map(|(i, s)| which.contains(&(i as u32)).then_some(s))
            .collect();
        Self::build_placed(placed, tokenizers, costing, cache).map(|(e, _)| e)
    }

    /// Prepare every `Some` session, keeping positions (what `merge` uses for timelines).
    pub fn build_placed(
        placed: Vec<Option<Session>>,
        tokenizers: &[String],
        costing: &Costing,
        cache: &CacheOpts,
    ) -> Result<(Self, PrepTimes)> {
        let which: Vec<u32> = placed
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| i as u32)
            .collect();
        let sessions: Vec<Session> = placed.into_iter().flatten().collect();
        // Renumbered: the catalog lists the given sessions only.
        let local: Vec<u32> = (0..sessions.len() as u32).collect();
        let mut c = Counted::new(
            Catalog::from_sessions(sessions, tokenizers),
            tokenizers,
            costing,
            cache,
        )?;
        let mut e = c.window(&local)?;
        c.save_counts();
        e.ids = which;
        Ok((e, c.times))
    }

    fn item(&self, session: usize) -> Option<&Prepared> {
        let k = self.ids.binary_search(&(session as u32)).ok()?;
        self.items.get(k)
    }

    /// Time limit of a `command:` summarizer call (`--summarizer-timeout`; `python:` and
    /// `live:` ones get theirs when started).
    pub fn set_summarizer_timeout(&mut self, timeout: std::time::Duration) {
        self.summarizer_timeout = timeout;
    }

    /// Failed summarizer calls so far: (session, setting id, message), in that order.
    pub fn summarizer_errors(&self) -> Vec<(u32, u32, String)> {
        let map = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        map.iter()
            .flat_map(|(&(s, set), msgs)| msgs.iter().map(move |m| (s, set, m.clone())))
            .collect()
    }

    /// The backtest of the window's sessions that record compactions of their own
    /// (`backtest::session_backtest` on the run's first tokenizer), in session order: what
    /// the report's "Recorded compactions" section reads (`recorded_compactions.json`).
    pub fn recorded_compactions(&self) -> crate::backtest::Backtest {
        let parts: Vec<crate::backtest::Backtest> = self
            .items
            .par_iter()
            .filter(|p| !p.session.recorded_compactions.is_empty())
            .filter_map(|p| {
                let sized = p.sized.first()?;
                // the counts (the backtest fits its provider scale on them itself)
                let counts = (!sized.counts.is_empty()).then_some(&sized.counts[..]);
                let counted = SessionSizes::new(&p.session, counts);
                Some(crate::backtest::session_backtest(&p.session, &counted))
            })
            .collect();
        let mut out = crate::backtest::Backtest::default();
        for part in parts {
            out.absorb(part);
        }
        out
    }

    /// Forget the failed calls recorded so far (after a dry replay).
    pub fn clear_summarizer_errors(&self) {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn spec(&self, name: &str) -> Result<SummarizerSpec, ReplayError> {
        if let Ok(m) = self.specs.lock() {
            if let Some(s) = m.get(name) {
                return Ok(s.clone());
            }
        }
        let s = SummarizerSpec::parse(name).map_err(|e| ReplayError::Summarizer(e.to_string()))?;
        if let Ok(mut m) = self.specs.lock() {
            m.insert(name.to_string(), s.clone());
        }
        Ok(s)
    }

    /// The counterfactual session of `alternative` for `p` under tokenizer `sized.tok`,
    /// built once per window.
    fn counterfactual(
        &self,
        p: &Prepared,
        sized: &Sized,
        alternative: &Alternative,
    ) -> Result<std::sync::Arc<Counterfactual>, ReplayError> {
        let key = (alternative.clone(), sized.tok.name().to_string());
        if let Some(c) = p
            .variants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(c.clone());
        }
        use super::alternatives as alt;
        let (variants, failed, cut) = if let Some(n) = alternative.cap() {
            let v = alt::cap_llm_calls(&p.session, n);
            let failed = v.failed_invocations.len() as u64;
            (vec![v], failed, 0)
        } else if let Some(rule) = alt::SplitRule::of(alternative) {
            let refs = sized
                .inputs
                .memo
                .references(&p.session, &sized.inputs.lines);
            let points = alt::split_points(&p.session, refs.supports(), rule);
            let cut = alt::references_cut(refs.supports(), &points);
            (alt::split_at(&p.session, &points), 0, cut)
        } else {
            return Err(ReplayError::NoCounterfactual(alternative.clone()));
        };
        let parts = variants
            .into_iter()
            .map(|mut v| {
                alt::drop_removed_from_usage(&mut v, &sized.sizes.tokens);
                let counts: Vec<u32> = if sized.counts.len() == p.session.events.len() {
                    v.kept.iter().map(|&i| sized.counts[i as usize]).collect()
                } else {
                    Vec::new()
                };
                let counted =
                    SessionSizes::new(&v.session, (!counts.is_empty()).then_some(&counts[..]));
                // on the recorded session's scale (its usage was cut on it above)
                let sizes = match &sized.fit {
                    Some(f) => on_scale(&v.session, &counted, f, false),
                    None => counted,
                };
                let inputs = SessionCostInputs::new(&v.session, sized.tok);
                (
                    std::sync::Arc::new(v.session),
                    Sized {
                        tok: sized.tok,
                        sizes,
                        inputs,
                        counts,
                        fit: None,
                    },
                )
            })
            .collect();
        let c = std::sync::Arc::new(Counterfactual {
            parts,
            invocations_failed: failed,
            references_cut: cut,
        });
        p.variants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, c.clone());
        Ok(c)
    }

    /// [`Self::replay_setting`], with the session's provider-scale fit in its metrics.
    fn replay(
        &self,
        session: usize,
        setting: &Setting,
    ) -> Result<(Replay, SessionMetrics), ReplayError> {
        let (r, mut m) = self.replay_setting(session, setting)?;
        let fit = self
            .item(session)
            .and_then(|p| p.sized.iter().find(|s| s.tok.name() == setting.tokenizer))
            .and_then(|s| s.fit);
        if let Some(f) = fit {
            m.prompt_overhead = Some(f.overhead as f64);
            m.prompt_scale = Some(f.scale);
            m.prompt_fit_error_p50 = Some(f.p50_abs_error_pct);
        }
        Ok((r, m))
    }

    /// One replay of `session` under `setting`, with what the metrics need. An alternative
    /// replays its counterfactual session and is measured against the recorded session's
    /// no-compaction baseline.
    fn replay_setting(
        &self,
        session: usize,
        setting: &Setting,
    ) -> Result<(Replay, SessionMetrics), ReplayError> {
        let p = self
            .item(session)
            .ok_or(ReplayError::NotPrepared(session))?;
        let sized = p
            .sized
            .iter()
            .find(|s| s.tok.name() == setting.tokenizer)
            .ok_or_else(|| ReplayError::NotCounted(setting.tokenizer.clone()))?;
        let Some(alternative) = &setting.alternative else {
            return self.replay_on(session, &p.session, sized, setting, false);
        };
        if *alternative == Alternative::Artifacts {
            // The recorded session, each attachment priced once: its baseline columns are
            // already the recorded session's.
            return self.replay_on(session, &p.session, sized, setting, true);
        }
        let c = self.counterfactual(p, sized, alternative)?;
        let mut replays = Vec::with_capacity(c.parts.len());
        let mut metrics = Vec::with_capacity(c.parts.len());
        for (s, z) in &c.parts {
            let (r, m) = self.replay_on(session, s, z, setting, false)?;
            replays.push(r);
            metrics.push(m);
        }
        let mut m = if metrics.len() == 1 {
            metrics.pop().unwrap_or_default()
        } else {
            super::alternatives::sum_parts(&metrics)
        };
        super::alternatives::add_cut_references(&mut m, c.references_cut);
        // The first part's replay stands for the session's timeline (an alternative is never
        // drawn: timelines are the baseline's and the recommended setting's).
        let r = replays.into_iter().next().unwrap_or_default();
        let base = self.recorded_baseline(session, p, sized, setting)?;
        let agent = self.cost.latency.for_model(self.agent_model(p, setting));
        super::alternatives::rebase(&mut m, &base, |t| agent.prefill_seconds(t));
        m.invocations_failed = c.invocations_failed;
        Ok((r, m))
    }

    /// The recorded session's no-compaction metrics for `setting`'s tokenizer, agent model
    /// and client (memoized per window in `p`).
    fn recorded_baseline(
        &self,
        session: usize,
        p: &Prepared,
        sized: &Sized,
        setting: &Setting,
    ) -> Result<SessionMetrics, ReplayError> {
        let key = (
            setting.tokenizer.clone(),
            setting.agent_model.clone(),
            setting.client,
        );
        if let Some(m) = p
            .baselines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return Ok(m.clone());
        }
        let plain = Setting {
            setting_id: setting.setting_id,
            ..Setting::without_compaction(
                &setting.tokenizer,
                &setting.agent_model,
                setting.client,
                None,
            )
        };
        let (_, base) = self.replay_on(session, &p.session, sized, &plain, false)?;
        p.baselines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, base.clone());
        Ok(base)
    }

    fn agent_model<'a>(&self, p: &'a Prepared, setting: &'a Setting) -> &'a str {
        if setting.agent_model == "recorded" {
            recorded_model(&p.session)
        } else {
            setting.agent_model.as_str()
        }
    }

    /// One engine replay of `session` (the recorded one or a counterfactual) under
    /// `setting`'s compaction, priced (each attachment once when `attachments_once`).
    fn replay_on(
        &self,
        session: usize,
        s: &Session,
        sized: &Sized,
        setting: &Setting,
        attachments_once: bool,
    ) -> Result<(Replay, SessionMetrics), ReplayError> {
        let spec = self.spec(setting.summarizer.as_deref().unwrap_or("agent"))?;
        let agent_model: Option<&str> = if setting.agent_model == "recorded" {
            Some(recorded_model(s))
        } else {
            Some(setting.agent_model.as_str())
        };
        let cfg = Config::from_setting(&setting.compaction(), UsageMode::Adjust);
        let mut cs = CostSetting::new(&spec, agent_model, setting.client);
        cs.command_timeout = self.summarizer_timeout;
        cs.attachments_once = attachments_once;
        // the session's own rule, read once per replay (it scans the session's events)
        let recorded =
            matches!(setting.policy, Some(PolicySpec::AsRecorded)).then(|| as_recorded(s));
        // a claude-code or openhands rule's summaries are estimated with that family's fit
        cs.summary_family = match (&recorded, &setting.policy) {
            (Some(rec), _) => rec.summary_family(),
            (None, Some(spec)) => spec.summary_family(),
            (None, None) => None,
        };
        // only a policy reads the window (a price-table lookup per replay otherwise)
        let window = setting
            .policy
            .as_ref()
            .and_then(|_| self.cost.context_window(agent_model));
        let policy_ctx = crate::policy::Ctx {
            sizes: &sized.sizes,
            session: s,
            window,
        };
        let run = |su: &dyn Summarizer| match (&recorded, &setting.policy) {
            // the session's own framework's rule; one that records none: no compaction, as
            // the baseline replays it (`cfg` of this setting compacts nothing)
            // (an ADK session's: the setting its compaction events imply, by the engine)
            (Some(rec), _) => match rec.build(&policy_ctx) {
                Some(mut rule) => crate::policy::replay(&policy_ctx, rule.as_mut(), su),
                None => {
                    let own = rec.engine_config();
                    crate::engine::replay(&sized.sizes, own.as_ref().unwrap_or(&cfg), su)
                }
            },
            (None, Some(spec)) => crate::policy::replay_spec(spec, &policy_ctx, su),
            (None, None) => crate::engine::replay(&sized.sizes, &cfg, su),
        };
        let mut e = evaluate(s, &sized.sizes, &sized.inputs, &self.cost, &cs, &run)
            .map_err(|e| ReplayError::Cost(e.to_string()))?;
        if setting.policy.is_none() {
            flag_pitfalls(&mut e.metrics, &e.replay, &sized.sizes, &cfg, s);
        }
        if !e.summarizer_errors.is_empty() {
            self.errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((session as u32, setting.setting_id), e.summarizer_errors);
        }
        Ok((e.replay, e.metrics))
    }
}

/// ADK's known pitfalls (docs/pitfalls.md) read off an ADK setting's finished replay into
/// its runs columns: the replay itself stays as 2.13.0 runs it.
fn flag_pitfalls(
    m: &mut SessionMetrics,
    replay: &Replay,
    sizes: &SessionSizes,
    cfg: &Config,
    session: &Session,
) {
    use crate::engine::pitfalls;
    m.thrash = u64::from(pitfalls::thrash(replay, cfg).compactions);
    if let Some(st) = pitfalls::stuck(replay, sizes, cfg) {
        m.stuck_event = Some(u64::from(st.event_index));
        m.stuck_call = st.call_name(sizes, session).map(str::to_string);
        m.stuck_history_tokens = Some(st.stuck_history_tokens);
    }
}

impl Evaluator for PipelineEval {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn evaluate(&self, session: usize, setting: &Setting) -> Result<SessionMetrics, ReplayError> {
        self.replay(session, setting).map(|(_, m)| m)
    }

    fn timeline(&self, session: usize, setting: &Setting) -> Result<Timeline, ReplayError> {
        let (r, _) = self.replay(session, setting)?;
        let requests: Vec<TimelineRequest> = r
            .requests
            .iter()
            .enumerate()
            .map(|(i, q)| TimelineRequest {
                request: i as u64,
                prompt_tokens: q.prompt_tokens,
            })
            .collect();
        let first_after = |pred: &dyn Fn(&crate::engine::Request) -> bool| {
            r.requests.iter().position(pred).unwrap_or(r.requests.len()) as u64
        };
        let compactions = r
            .calls
            .iter()
            .map(|c| TimelineCompaction {
                before_request: match (c.phase, c.before_event_index) {
                    (Phase::PreRequest, Some(e)) => first_after(&|q| q.event_index >= e),
                    _ => first_after(&|q| q.invocation_index > c.invocation_index),
                },
                kind: c.phase.name().to_string(),
                applied: c.compaction.is_some(),
            })
            .collect();
        Ok(Timeline {
            requests,
            compactions,
        })
    }

    fn event_steps(&self, session: usize) -> u64 {
        self.item(session)
            .map_or(0, |p| p.session.events.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::readutil::testutil::corpus;

    fn key(s: &Session) -> (String, String, usize, Option<String>) {
        (
            s.id.clone(),
            s.source.clone(),
            s.events.len(),
            s.model.clone(),
        )
    }

    /// Issue 13: the sweep lists its inputs in a first pass and reads each window's sessions
    /// again; the sessions, their order, ids (`#2` for a repeated id) and facts are those of
    /// reading everything at once, whatever the windows.
    #[test]
    fn the_catalog_reads_again_what_loading_everything_gives() {
        let dir = tempfile::tempdir().unwrap();
        let one = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("transcripts/01-support-3.session.json");
        std::fs::copy(&one, dir.path().join("a.session.json")).unwrap();
        std::fs::copy(&one, dir.path().join("b.session.json")).unwrap();
        std::fs::write(dir.path().join("bad.json"), "{").unwrap();
        let paths = vec![
            corpus().join("adk").display().to_string(),
            dir.path().display().to_string(),
        ];
        let toks = vec!["o200k".to_string()];
        let all = load_sessions(&paths, None).unwrap();
        let mut cat = Catalog::scan(&paths, None, &DbFilter::default(), &toks).unwrap();
        assert!(all.sessions.len() > 20, "{}", all.sessions.len());
        assert_eq!(cat.infos, session_infos(&all.sessions, &toks));
        assert_eq!(cat.inputs, all.inputs);
        assert_eq!(cat.skipped, all.skipped);
        assert!(cat.skipped.iter().any(|s| s.path.ends_with("bad.json")));
        let n = cat.len() as u32;
        // Windows of 7 in order, then a few again out of order.
        for start in (0..n).step_by(7) {
            let which: Vec<u32> = (start..(start + 7).min(n)).collect();
            let got = cat.read(&which).unwrap();
            for (&i, s) in which.iter().zip(&got) {
                assert_eq!(key(s), key(&all.sessions[i as usize]), "session {i}");
            }
        }
        let again = cat.read(&[n - 1, 0, 3]).unwrap();
        assert_eq!(key(&again[0]), key(&all.sessions[n as usize - 1]));
        assert_eq!(key(&again[1]), key(&all.sessions[0]));
        // Each one again, last first: sessions an earlier read took from the file it keeps
        // are read from the file again (what timelines.json does after the windows).
        for i in (0..n).rev() {
            let s = cat.read(&[i]).unwrap();
            assert_eq!(key(&s[0]), key(&all.sessions[i as usize]), "session {i}");
        }
        let multi = cat.infos.iter().filter(|i| i.source.contains('#')).count();
        assert!(multi > 1, "the corpus folder has files of several sessions");
        // A file gone since the first pass is an error naming it, never a silent gap.
        std::fs::remove_file(dir.path().join("b.session.json")).unwrap();
        let b = cat
            .infos
            .iter()
            .position(|i| i.source.ends_with("b.session.json"))
            .unwrap() as u32;
        let e = cat.read(&[b]).unwrap_err().to_string();
        assert!(
            e.contains("b.session.json") && e.contains("read again"),
            "{e}"
        );
    }
}

/// Issue 37 item 1 in the sweep: a session whose recorded prompt sizes are `1,000 + 1.2 ×
/// counted` is fitted to overhead 1,000 and scale 1.2 (runs' `prompt_*` columns), and the
/// requests after its recorded compaction, whose recorded sizes are the compacted prompt the
/// framework sent, are sized on that scale in the no-compaction replay.
#[cfg(test)]
mod provider_scale {
    use super::*;
    use crate::transcript::{RecordedCompaction, Usage};

    /// Twelve read rounds whose results grow, so the counted sizes spread for the fit.
    fn session() -> Session {
        crate::backtest::fixtures::read_rounds(12, |i| format!("line {i} ").repeat(40 + 7 * i))
    }

    #[test]
    fn a_request_after_a_recorded_compaction_is_sized_on_the_fitted_scale() {
        let mut s = session();
        let cache = CacheOpts::disabled();
        let counts =
            crate::tokens::count_sessions(std::slice::from_ref(&s), Tokenizer::O200k, &cache)
                .unwrap();
        let counted: Vec<(u32, u64)> = {
            let sizes = SessionSizes::new(&s, Some(&counts[0]));
            crate::backtest::sizes::request_sizes(&s, &sizes)
                .into_iter()
                .map(|(k, c, _)| (k, c))
                .collect()
        };
        const FROM: usize = 8;
        for (q, &(k, c)) in counted.iter().enumerate() {
            let e = &mut s.events[k as usize];
            e.post_compaction_usage = q >= FROM;
            e.usage = Some(Usage {
                prompt_tokens: if q >= FROM { 2_000 } else { 1_000 + c * 6 / 5 },
                ..Default::default()
            });
        }
        let mut c =
            RecordedCompaction::new(counted[FROM].0 as usize, "claude-code compact_boundary");
        c.trigger = Some("auto".into());
        s.recorded_compactions.push(c);
        let costing = Costing::load(None, None).unwrap();
        let toks = vec!["o200k".to_string()];
        let eval = PipelineEval::build(vec![s], &[0], &toks, &costing, &cache).unwrap();
        let plain = Setting::without_compaction("o200k", "recorded", ClientMode::Waits, None);
        let m = eval.evaluate(0, &plain).unwrap();
        assert_eq!(m.prompt_overhead, Some(1_000.0));
        let scale = m.prompt_scale.unwrap();
        assert!((scale - 1.2).abs() < 1e-3, "{scale}");
        let t = eval.timeline(0, &plain).unwrap();
        assert_eq!(t.requests.len(), counted.len());
        for (q, (r, &(_, c))) in t.requests.iter().zip(&counted).enumerate() {
            let want = 1_000 + c * 6 / 5;
            assert!(
                r.prompt_tokens.abs_diff(want) <= 1,
                "request {q}: {} vs {want}",
                r.prompt_tokens
            );
        }
    }

    /// A session whose every request records `1,000 + 1.2 × counted`: on the provider's
    /// scale, prepared as a sweep prepares it.
    fn fitted_eval() -> PipelineEval {
        let mut s = session();
        let cache = CacheOpts::disabled();
        let counts =
            crate::tokens::count_sessions(std::slice::from_ref(&s), Tokenizer::O200k, &cache)
                .unwrap();
        let sizes = SessionSizes::new(&s, Some(&counts[0]));
        for (k, c, _) in crate::backtest::sizes::request_sizes(&s, &sizes) {
            s.events[k as usize].usage = Some(Usage {
                prompt_tokens: 1_000 + c * 6 / 5,
                ..Default::default()
            });
        }
        let costing = Costing::load(None, None).unwrap();
        let toks = vec!["o200k".to_string()];
        PipelineEval::build(vec![s], &[0], &toks, &costing, &cache).unwrap()
    }

    /// The summary a setting adds is the summarizer's count (`fixed:4000`: 1,000 tokens) on
    /// the session's fitted scale where the prompt carries it, for an ADK setting (the
    /// engine) and a policy (the driver) alike; the summarizer's call keeps its own count.
    #[test]
    fn a_settings_summary_is_sized_on_the_fitted_scale() {
        let eval = fitted_eval();
        let mut adk = Setting::without_compaction("o200k", "recorded", ClientMode::Waits, None);
        adk.trigger_kind = crate::settings::TriggerKind::Tokens;
        adk.after_tokens = Some(2_000);
        adk.keep_recent_events = Some(2);
        adk.summarizer = Some("fixed:4000".into());
        let mut policy = adk.clone();
        policy.trigger_kind = crate::settings::TriggerKind::Policy;
        policy.policy = Some(PolicySpec::TurnSummary { n: 3, m: 2 });
        for setting in [adk, policy] {
            let (r, m) = eval.replay(0, &setting).unwrap();
            let scale = m.prompt_scale.unwrap();
            assert!((scale - 1.2).abs() < 1e-3, "{scale}");
            assert!(!r.compactions.is_empty(), "{:?}", setting.policy);
            let want = (scale * 1_000.0).round() as u64;
            for c in &r.compactions {
                assert_eq!(c.summary_tokens, want, "{:?}", setting.policy);
            }
            for call in &r.calls {
                assert_eq!(call.output_tokens, 1_000, "{:?}", setting.policy);
            }
            assert_eq!(m.summarizer_output_tokens, 1_000 * r.calls.len() as u64);
        }
    }
}
