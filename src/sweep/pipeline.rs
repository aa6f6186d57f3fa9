//! The real evaluator: transcripts read once, counted once per tokenizer, then replayed by
//! the engine and priced by `cost` for each setting.
//!
//! This is where the modules to the left of `sweep` are wired together; the rest of `sweep`
//! and all of `table` only see the [`Evaluator`] trait.

use super::grid::{ClientMode, Setting};
use super::run::{
    Evaluator, InputInfo, SessionInfo, Skipped, Timeline, TimelineCompaction, TimelineRequest,
};
use crate::cost::client::ClientMode as CostClient;
use crate::cost::compute::CostModel;
use crate::cost::evaluate::{evaluate, CostSetting, SessionCostInputs};
use crate::cost::latency::BUILTIN_LATENCY;
use crate::cost::metrics::SessionMetrics;
use crate::cost::pricing::BUILTIN_PRICING;
use crate::cost::summarizers::SummarizerSpec;
use crate::engine::{Config, Phase, Replay, Summarizer, UsageMode};
use crate::tokens::sizes::SessionSizes;
use crate::tokens::{count_sessions, Tokenizer};
use crate::transcript::db::DbFilter;
use crate::transcript::{detect, Format, Session};
use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;
use std::collections::HashMap;
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
            std::fs::read_to_string(p).with_context(|| format!("{}: cannot read", p.display()))
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

/// The run's models (its agent models, each session's recorded one for `recorded`, and
/// `model:NAME` summarizers) that match no latency family: they are timed with the `default`
/// figures, which run.json and the report state as an assumption.
pub fn latency_default_models(
    latency: &crate::cost::latency::LatencyTable,
    agent_models: &[String],
    summarizers: &[String],
    sessions: &[crate::transcript::Session],
) -> Vec<String> {
    use crate::cost::summarizers::SummarizerSpec;
    let mut models = std::collections::BTreeSet::new();
    for m in agent_models {
        if m == "recorded" {
            for s in sessions {
                models.insert(
                    s.model
                        .as_deref()
                        .unwrap_or(FALLBACK_AGENT_MODEL)
                        .to_string(),
                );
            }
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

/// The file part of a session's `source` (`file#fragment` → `file`).
pub fn source_file(source: &str) -> &str {
    match source.find('#') {
        Some(i) if i > 0 => &source[..i],
        _ => source,
    }
}

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
    let format = match format {
        Some(f) => Some(Format::from_name(f).ok_or_else(|| {
            anyhow!(
                "--format `{f}`: unknown format; use one of {}",
                Format::ALL.map(|f| f.name()).join(", ")
            )
        })?),
        None => None,
    };
    let loaded = detect::load_inputs(paths, format, filter);
    let mut sessions = loaded.sessions;
    // Sorted by (source, id) so the run does not depend on the order paths were given.
    sessions.sort_by(|a, b| (&a.source, &a.id).cmp(&(&b.source, &b.id)));
    // Two sessions with the same (source, id) get `#2`, `#3`, ... so rows stay keyed.
    let mut run = 1;
    let mut prev: Option<(String, String)> = None;
    for s in sessions.iter_mut() {
        let key = (s.source.clone(), s.id.clone());
        if prev.as_ref() == Some(&key) {
            run += 1;
            s.id = format!("{}#{run}", key.1);
        } else {
            run = 1;
        }
        prev = Some(key);
    }
    let inputs = input_counts(&sessions);
    let mut skipped: Vec<Skipped> = loaded
        .skipped
        .iter()
        .map(|e| Skipped {
            path: e.file.clone(),
            reason: if e.location.is_empty() {
                e.message.clone()
            } else {
                format!("{}: {}", e.location, e.message)
            },
        })
        .collect();
    skipped.sort_by(|a, b| (&a.path, &a.reason).cmp(&(&b.path, &b.reason)));
    Ok(Loaded {
        sessions,
        inputs,
        skipped,
    })
}

/// Keep `n` of the loaded sessions, chosen by the xxh3 hash of their (source, id): the same
/// sessions on every run over the same inputs, whatever the order the paths were given or the
/// thread count, and a session stays in the sample when others are added beside it (unless
/// one of them hashes lower). The kept sessions stay in (source, id) order; `inputs` counts
/// only them (a file none of whose sessions was drawn is left out). Returns how many sessions
/// there were.
pub fn sample_sessions(loaded: &mut Loaded, n: usize) -> usize {
    let total = loaded.sessions.len();
    if n >= total {
        return total;
    }
    let hash = |s: &Session| {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(s.source.as_bytes());
        h.update(&[0]);
        h.update(s.id.as_bytes());
        h.digest()
    };
    let mut order: Vec<(u64, usize)> = loaded
        .sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (hash(s), i))
        .collect();
    order.sort_unstable();
    let mut keep = vec![false; total];
    for &(_, i) in order.iter().take(n) {
        keep[i] = true;
    }
    let mut k = keep.iter();
    loaded.sessions.retain(|_| *k.next().unwrap_or(&false));
    loaded.inputs = input_counts(&loaded.sessions);
    total
}

/// Sessions per input file, in session order (sorted sessions: one entry per file).
fn input_counts(sessions: &[Session]) -> Vec<InputInfo> {
    let mut inputs: Vec<InputInfo> = Vec::new();
    for s in sessions {
        let f = source_file(&s.source);
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

/// What the run records about a session besides its rows (run.json `session_facts`).
pub fn session_info(s: &Session, tok: Tokenizer) -> SessionInfo {
    let mut per_inv: HashMap<&str, u64> = HashMap::new();
    for e in s.events.iter().filter(|e| e.model_request) {
        *per_inv.entry(e.invocation_id.as_str()).or_default() += 1;
    }
    let attach = crate::cost::compute::attachment_tokens(s, tok);
    let first = attach.iter().position(|&t| t > 0);
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
    }
}

/// [`session_info`] for many sessions, in parallel, with the grid's first tokenizer.
pub fn session_infos(sessions: &[Session], tokenizers: &[String]) -> Vec<SessionInfo> {
    let tok = tokenizers
        .first()
        .and_then(|t| t.parse::<Tokenizer>().ok())
        .unwrap_or_default();
    sessions.par_iter().map(|s| session_info(s, tok)).collect()
}

/// One session ready to replay under one tokenizer.
struct Sized {
    tok: Tokenizer,
    sizes: SessionSizes,
    inputs: SessionCostInputs,
}

struct Prepared {
    session: Session,
    sized: Vec<Sized>,
}

/// Sessions counted and sized once; each `evaluate` is one engine replay (two or more
/// under `streams` when a summary loses the race) plus the metrics.
pub struct PipelineEval {
    items: Vec<Option<Prepared>>,
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
    pub count_s: f64,
    pub size_s: f64,
}

impl PipelineEval {
    /// Prepare the sessions at `which` (indices into `sessions`) for every tokenizer.
    pub fn build(
        sessions: Vec<Session>,
        which: &[u32],
        tokenizers: &[String],
        costing: &Costing,
        cache: &CacheOpts,
    ) -> Result<Self> {
        let mut placed: Vec<Option<Session>> = sessions.into_iter().map(Some).collect();
        for (i, p) in placed.iter_mut().enumerate() {
            if !which.contains(&(i as u32)) {
                *p = None;
            }
        }
        Self::build_placed(placed, tokenizers, costing, cache).map(|(e, _)| e)
    }

    /// Prepare every `Some` session, keeping positions (what `merge` uses for timelines).
    pub fn build_placed(
        placed: Vec<Option<Session>>,
        tokenizers: &[String],
        costing: &Costing,
        cache: &CacheOpts,
    ) -> Result<(Self, PrepTimes)> {
        let toks: Vec<Tokenizer> = tokenizers
            .iter()
            .map(|t| t.parse::<Tokenizer>().map_err(|e| anyhow!(e)))
            .collect::<Result<_>>()?;
        let positions: Vec<usize> = placed
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| i)
            .collect();
        let mut owned: Vec<Session> = Vec::with_capacity(positions.len());
        let mut items: Vec<Option<Prepared>> = Vec::with_capacity(placed.len());
        for s in placed {
            if let Some(s) = s {
                owned.push(s);
            }
            items.push(None);
        }
        let mut times = PrepTimes::default();
        let mut per_tok: Vec<Vec<Sized>> = (0..owned.len()).map(|_| Vec::new()).collect();
        for &tok in &toks {
            let t0 = std::time::Instant::now();
            let counts = count_sessions(&owned, tok, cache)?;
            times.count_s += t0.elapsed().as_secs_f64();
            let t1 = std::time::Instant::now();
            let sized: Vec<Sized> = owned
                .par_iter()
                .zip(counts.par_iter())
                .map(|(s, c)| {
                    let sizes = SessionSizes::new(s, Some(c));
                    Sized {
                        tok,
                        sizes,
                        inputs: SessionCostInputs::new(s, tok),
                    }
                })
                .collect();
            times.size_s += t1.elapsed().as_secs_f64();
            for (k, s) in sized.into_iter().enumerate() {
                per_tok[k].push(s);
            }
        }
        for ((pos, session), sized) in positions.into_iter().zip(owned).zip(per_tok) {
            items[pos] = Some(Prepared { session, sized });
        }
        Ok((
            PipelineEval {
                items,
                cost: costing.model.clone(),
                specs: std::sync::Mutex::new(HashMap::new()),
                summarizer_timeout: crate::cost::summarizers::DEFAULT_COMMAND_TIMEOUT,
                errors: std::sync::Mutex::new(std::collections::BTreeMap::new()),
            },
            times,
        ))
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

    /// Forget the failed calls recorded so far (after a dry replay).
    pub fn clear_summarizer_errors(&self) {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn spec(&self, name: &str) -> Result<SummarizerSpec, String> {
        if let Ok(m) = self.specs.lock() {
            if let Some(s) = m.get(name) {
                return Ok(s.clone());
            }
        }
        let s = SummarizerSpec::parse(name)?;
        if let Ok(mut m) = self.specs.lock() {
            m.insert(name.to_string(), s.clone());
        }
        Ok(s)
    }

    /// One replay of `session` under `setting`, with what the metrics need.
    fn replay(
        &self,
        session: usize,
        setting: &Setting,
    ) -> Result<(Replay, SessionMetrics), String> {
        let p = self
            .items
            .get(session)
            .and_then(|p| p.as_ref())
            .ok_or_else(|| format!("session {session} was not prepared"))?;
        let sized = p
            .sized
            .iter()
            .find(|s| s.tok.name() == setting.tokenizer)
            .ok_or_else(|| format!("tokenizer `{}` was not counted", setting.tokenizer))?;
        let spec = self.spec(setting.summarizer.as_deref().unwrap_or("agent"))?;
        let agent_model: Option<&str> = if setting.agent_model == "recorded" {
            Some(p.session.model.as_deref().unwrap_or(FALLBACK_AGENT_MODEL))
        } else {
            Some(setting.agent_model.as_str())
        };
        let cfg = Config {
            token: setting.after_tokens.zip(setting.keep_recent_events),
            sliding: setting.after_invocations.zip(setting.overlap),
            usage: UsageMode::Adjust,
            pre_request: true,
        };
        let client = match setting.client {
            ClientMode::Waits => CostClient::Waits,
            ClientMode::Streams => CostClient::Streams,
        };
        let mut cs = CostSetting::new(&spec, agent_model, client);
        cs.command_timeout = self.summarizer_timeout;
        let run = |s: &dyn Summarizer| crate::engine::replay(&sized.sizes, &cfg, s);
        let e = evaluate(
            &p.session,
            &sized.sizes,
            &sized.inputs,
            &self.cost,
            &cs,
            None,
            &run,
        )?;
        if !e.summarizer_errors.is_empty() {
            self.errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((session as u32, setting.setting_id), e.summarizer_errors);
        }
        Ok((e.replay, e.metrics))
    }
}

impl Evaluator for PipelineEval {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn evaluate(&self, session: usize, setting: &Setting) -> Result<SessionMetrics, String> {
        self.replay(session, setting).map(|(_, m)| m)
    }

    fn timeline(&self, session: usize, setting: &Setting) -> Result<Timeline, String> {
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
        self.items
            .get(session)
            .and_then(|p| p.as_ref())
            .map_or(0, |p| p.session.events.len() as u64)
    }
}
