//! The work list over (session, setting) pairs, run in parallel with rayon.
//!
//! The pairs are numbered session-major and collected in that order, so the rows (and every
//! byte written from them) are the same whatever the thread count.

use super::grid::Setting;
use super::shard::Shard;
use crate::cost::metrics::SessionMetrics;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};

/// What a sweep knows about one session besides its replays (the run folder's inputs list).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SessionInfo {
    pub session_id: String,
    pub source: String,
    pub format: String,
    pub events: u64,
    pub model_requests: u64,
    /// Most model requests in one invocation (what `max_llm_calls` would cap).
    #[serde(default)]
    pub max_model_requests_per_invocation: u64,
    /// Tokens of the files attached to user messages, in the run's first tokenizer.
    #[serde(default)]
    pub attachment_tokens: u64,
    /// Model requests at or after the first attachment (they carry it while it is visible).
    #[serde(default)]
    pub requests_with_attachment: u64,
    /// Tool responses answering no earlier call (ADK keeps them in the session and leaves
    /// them out of every request): read, replayed as ADK would, and warned about.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub orphan_responses: u64,
    /// The setting its framework ran with, in words (`backtest::AsRecorded::label`): what the
    /// `as recorded` row replays it under.
    #[serde(default)]
    pub as_recorded: String,
    /// Whether the transcript records a setting the `as recorded` row replays (else that row
    /// is no compaction for this session).
    #[serde(default)]
    pub records_setting: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// An input file and how many sessions it gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputInfo {
    pub path: String,
    pub sessions: u64,
}

/// An input (file, or session within one) left out of the run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// A summarizer call that failed (`command:`, `python:` or `live:`): the replay went on as
/// ADK does (no compaction, the trigger stays armed), and the run lists why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SummarizerFailure {
    pub source: String,
    pub session_id: String,
    pub setting_id: u32,
    /// `call N: summarizer ...: what happened`, one line.
    pub message: String,
}

/// Prompt size of one model request, for the sawtooth chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineRequest {
    /// 0-based model request number in the session.
    pub request: u64,
    pub prompt_tokens: u64,
}

/// One compaction in a replay, placed by the model request it first affects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineCompaction {
    /// The first model request whose prompt carries the summary.
    pub before_request: u64,
    /// `post_invocation` or `pre_request`.
    pub kind: String,
    /// False when the summary was discarded or the summarizer returned nothing.
    pub applied: bool,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Timeline {
    pub requests: Vec<TimelineRequest>,
    pub compactions: Vec<TimelineCompaction>,
}

/// Why one replay of a session under a setting failed (the run lists the session as skipped
/// with this text).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("session {0} was not prepared")]
    NotPrepared(usize),
    #[error("tokenizer `{0}` was not counted")]
    NotCounted(String),
    #[error("unknown alternative `{0}`")]
    NoCounterfactual(crate::settings::Alternative),
    /// The setting's summarizer is not one `cost` can run.
    #[error("{0}")]
    Summarizer(String),
    /// Pricing or measuring the replay failed.
    #[error("{0}")]
    Cost(String),
}

/// Replays one session under one setting. The real one runs tokens → engine → cost; tests
/// use fakes, so the machinery here is tested without the pipeline.
pub trait Evaluator: Sync {
    /// Number of sessions, indexed `0..len`.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn evaluate(&self, session: usize, setting: &Setting) -> Result<SessionMetrics, ReplayError>;
    /// Per-request prompt sizes and compactions (only asked for a few sessions).
    fn timeline(&self, session: usize, setting: &Setting) -> Result<Timeline, ReplayError>;
    /// Event-steps one replay of this session walks (for the benchmark's rate).
    fn event_steps(&self, session: usize) -> u64;
}

/// One (session, setting) result. `session` indexes the run's sorted session list.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub session: u32,
    pub setting: u32,
    pub metrics: SessionMetrics,
}

/// Floats are rounded here, once, to this many decimals: every file and every aggregate is
/// computed from the rounded rows, so a merged run (rows read back from Parquet) and an
/// unsharded run agree to the byte.
pub const FLOAT_DECIMALS: i32 = 6;

pub fn round_fixed(x: f64) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let scale = 10f64.powi(FLOAT_DECIMALS);
    let r = (x * scale).round() / scale;
    if r == 0.0 {
        0.0 // no "-0.000000"
    } else {
        r
    }
}

pub fn round_metrics(m: &mut SessionMetrics) {
    for f in [
        &mut m.cost_usd,
        &mut m.baseline_cost_usd,
        &mut m.cost_saved_usd,
        &mut m.end_of_run_latency_s,
        &mut m.end_of_run_latency_p50_s,
        &mut m.end_of_run_latency_p95_s,
        &mut m.end_of_run_latency_max_s,
        &mut m.pre_request_latency_s,
        &mut m.pre_request_latency_p50_s,
        &mut m.pre_request_latency_p95_s,
        &mut m.pre_request_latency_max_s,
        &mut m.prefill_time_saved_s,
        &mut m.detail_lost,
        &mut m.summarizer_cost_usd,
        &mut m.attachment_share,
        &mut m.references_broken,
        &mut m.references_broken_share,
    ] {
        *f = round_fixed(*f);
    }
    for f in [
        &mut m.facts_dropped,
        &mut m.prompt_overhead,
        &mut m.prompt_scale,
        &mut m.prompt_fit_error_p50,
    ] {
        *f = f.map(round_fixed);
    }
}

pub use crate::error::Cancelled;

/// A failed replay: (session index, setting id, message).
pub type Failure = (u32, u32, String);

/// Sessions this shard replays: every N-th session of the sorted list, starting at K-1.
pub fn shard_sessions(n_sessions: usize, shard: Option<Shard>) -> Vec<u32> {
    (0..n_sessions as u32)
        .filter(|&i| shard.is_none_or(|s| s.owns(i as usize)))
        .collect()
}

/// Pairs replayed in parallel at once by [`stream_pairs`] (a chunk of whole sessions, at
/// least one): each chunk's rows go to the run's writer before the next chunk starts, so a
/// sweep holds one chunk's rows (7 MB), never a window's (a window's rows, held whole until
/// it ended, were 111 MB of sweep-bench's peak: 256 sessions × 1,001 settings × 456 bytes;
/// issue 47).
pub const PAIRS_AT_ONCE: usize = 16_384;

/// Replay every (session, setting) pair of `sessions` × `settings` in parallel, a chunk of
/// whole sessions at a time ([`PAIRS_AT_ONCE`] pairs), handing each chunk's rows to `push`
/// in (session, setting) order; returns the failures.
///
/// A session that failed under any setting leaves its chunk's rows (a session missing from
/// only some settings would bias every aggregate); the caller drops it from the run.
/// `tick` is called once per finished pair (the progress bar); `cancel` is polled per pair.
pub fn stream_pairs<X: From<Cancelled>>(
    eval: &dyn Evaluator,
    sessions: &[u32],
    settings: &[Setting],
    cancel: &AtomicBool,
    tick: &(dyn Fn() + Sync),
    push: &mut dyn FnMut(Vec<RunRow>) -> Result<(), X>,
) -> Result<Vec<Failure>, X> {
    let per_chunk = (PAIRS_AT_ONCE / settings.len().max(1)).max(1);
    let mut failed = Vec::new();
    for chunk in sessions.chunks(per_chunk) {
        let mut rows = Vec::with_capacity(chunk.len() * settings.len());
        let failed_before = failed.len();
        for r in pairs_of(eval, chunk, settings, cancel, tick) {
            match r {
                Some(Ok(row)) => rows.push(row),
                Some(Err(e)) => failed.push(e),
                None => return Err(Cancelled.into()),
            }
        }
        if cancel.load(Ordering::Relaxed) {
            return Err(Cancelled.into());
        }
        if failed.len() > failed_before {
            let bad: std::collections::HashSet<u32> =
                failed[failed_before..].iter().map(|f| f.0).collect();
            rows.retain(|r| !bad.contains(&r.session));
        }
        push(rows)?;
    }
    Ok(failed)
}

/// The pairs of `sessions` × `settings`, replayed in parallel, in order; `None` once
/// cancelled.
fn pairs_of(
    eval: &dyn Evaluator,
    sessions: &[u32],
    settings: &[Setting],
    cancel: &AtomicBool,
    tick: &(dyn Fn() + Sync),
) -> Vec<Option<Result<RunRow, Failure>>> {
    let n_set = settings.len();
    (0..sessions.len() * n_set)
        .into_par_iter()
        .with_min_len(16)
        .map(|k| {
            if cancel.load(Ordering::Relaxed) {
                return None;
            }
            let session = sessions[k / n_set];
            let setting = &settings[k % n_set];
            let r = eval.evaluate(session as usize, setting);
            tick();
            Some(match r {
                Ok(mut m) => {
                    round_metrics(&mut m);
                    Ok(RunRow {
                        session,
                        setting: setting.setting_id,
                        metrics: m,
                    })
                }
                Err(e) => Err((session, setting.setting_id, e.to_string())),
            })
        })
        .collect()
}

/// A streamed sweep prepares and replays this many sessions at a time at most...
pub const WINDOW_SESSIONS: usize = 256;
/// ...and closes a window early at this many events, so a window of long sessions stays
/// small too: the prepared sessions in memory are bounded whatever the run's size.
pub const WINDOW_EVENTS: u64 = 250_000;

/// `sessions` cut, in order, into windows of at most [`WINDOW_SESSIONS`] sessions and
/// (unless one session alone is longer) [`WINDOW_EVENTS`] events. Depends on the inputs
/// only, never on the thread count.
pub fn windows(sessions: &[u32], events: &dyn Fn(u32) -> u64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut held) = (0usize, 0u64);
    for (i, &s) in sessions.iter().enumerate() {
        let e = events(s);
        if i > start && (i - start == WINDOW_SESSIONS || held + e > WINDOW_EVENTS) {
            out.push(start..i);
            start = i;
            held = 0;
        }
        held += e;
    }
    if start < sessions.len() {
        out.push(start..sessions.len());
    }
    out
}

/// What [`run_windows`] hands each finished window to: its evaluator (what it recorded on
/// the way) and the failures.
pub type WindowSink<'a, E, X> = dyn FnMut(&E, Vec<Failure>) -> Result<(), X> + 'a;

/// [`stream_pairs`] a window of sessions at a time (see [`windows`]): `prepare` readies a
/// window, its pairs run in parallel, `push` gets the rows a chunk at a time in (session,
/// setting) order, without the sessions that failed under any setting, and `sink` gets each
/// finished window's evaluator and failures. Only one window's prepared sessions and one
/// chunk's rows are held at once.
#[allow(clippy::too_many_arguments)]
pub fn run_windows<E: Evaluator, X: From<Cancelled>>(
    sessions: &[u32],
    events: &dyn Fn(u32) -> u64,
    settings: &[Setting],
    prepare: &mut dyn FnMut(&[u32]) -> Result<E, X>,
    cancel: &AtomicBool,
    tick: &(dyn Fn() + Sync),
    push: &mut dyn FnMut(Vec<RunRow>) -> Result<(), X>,
    sink: &mut WindowSink<'_, E, X>,
) -> Result<(), X> {
    for w in windows(sessions, events) {
        let chunk = &sessions[w];
        let eval = prepare(chunk)?;
        let failed = stream_pairs(&eval, chunk, settings, cancel, tick, push)?;
        sink(&eval, failed)?;
    }
    Ok(())
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// [`stream_pairs`] with its rows collected.
    pub fn run_pairs(
        eval: &dyn Evaluator,
        sessions: &[u32],
        settings: &[Setting],
        cancel: &AtomicBool,
        tick: &(dyn Fn() + Sync),
    ) -> Result<(Vec<RunRow>, Vec<Failure>), Cancelled> {
        let mut rows = Vec::new();
        let failed = stream_pairs(eval, sessions, settings, cancel, tick, &mut |r| {
            rows.extend(r);
            Ok::<_, Cancelled>(())
        })?;
        Ok((rows, failed))
    }
    use crate::sweep::grid::{GridSpec, Known};

    /// Deterministic fake: numbers derived from the session index and setting fields.
    pub struct Fake {
        pub n: usize,
    }
    impl Evaluator for Fake {
        fn len(&self) -> usize {
            self.n
        }
        fn evaluate(&self, s: usize, set: &Setting) -> Result<SessionMetrics, ReplayError> {
            let base = 1000 * (s as u64 + 1);
            let t = set.after_tokens.unwrap_or(u64::MAX / 4);
            let prompt = base.min(t / 10 + 100);
            Ok(SessionMetrics {
                model_requests: s as u64 + 1,
                prompt_tokens: prompt,
                baseline_prompt_tokens: base,
                cost_usd: prompt as f64 * 1e-6 / 3.0,
                detail_lost: 1.0 / (1.0 + t as f64 / 1000.0),
                ..Default::default()
            })
        }
        fn timeline(&self, _s: usize, _set: &Setting) -> Result<Timeline, ReplayError> {
            Ok(Timeline::default())
        }
        fn event_steps(&self, s: usize) -> u64 {
            s as u64
        }
    }

    fn settings() -> Vec<Setting> {
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        GridSpec::from_toml("g", "after_tokens='1k..10k:1k'\nkeep_recent_events=[1,2]")
            .unwrap()
            .resolve(&k)
            .unwrap()
            .settings
    }

    #[test]
    fn rows_are_session_major_and_rounded() {
        let set = settings();
        let rows = run_pairs(
            &Fake { n: 3 },
            &[0, 1, 2],
            &set,
            &AtomicBool::new(false),
            &|| {},
        )
        .unwrap()
        .0;
        assert_eq!(rows.len(), 3 * set.len());
        for (k, r) in rows.iter().enumerate() {
            assert_eq!(r.session as usize, k / set.len());
            assert_eq!(r.setting as usize, k % set.len());
            let scaled = r.metrics.cost_usd * 1e6;
            assert!(
                (scaled - scaled.round()).abs() < 1e-6,
                "{}",
                r.metrics.cost_usd
            );
        }
    }

    #[test]
    fn thread_count_does_not_change_rows() {
        let set = settings();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let a = one.install(|| {
            run_pairs(
                &Fake { n: 7 },
                &[0, 1, 2, 3, 4, 5, 6],
                &set,
                &AtomicBool::new(false),
                &|| {},
            )
            .unwrap()
            .0
        });
        let b = two.install(|| {
            run_pairs(
                &Fake { n: 7 },
                &[0, 1, 2, 3, 4, 5, 6],
                &set,
                &AtomicBool::new(false),
                &|| {},
            )
            .unwrap()
            .0
        });
        assert_eq!(a, b);
    }

    #[test]
    fn cancel_stops_with_nothing() {
        let set = settings();
        let r = run_pairs(
            &Fake { n: 2 },
            &[0, 1],
            &set,
            &AtomicBool::new(true),
            &|| {},
        );
        assert_eq!(r, Err(Cancelled));
    }

    struct Failing;
    impl Evaluator for Failing {
        fn len(&self) -> usize {
            2
        }
        fn evaluate(&self, s: usize, _set: &Setting) -> Result<SessionMetrics, ReplayError> {
            if s == 1 {
                Err(ReplayError::Cost("boom".into()))
            } else {
                Ok(SessionMetrics::default())
            }
        }
        fn timeline(&self, _s: usize, _set: &Setting) -> Result<Timeline, ReplayError> {
            Ok(Timeline::default())
        }
        fn event_steps(&self, _s: usize) -> u64 {
            0
        }
    }

    #[test]
    fn failures_are_reported_per_session() {
        let set = settings();
        let (rows, f) =
            run_pairs(&Failing, &[0, 1], &set, &AtomicBool::new(false), &|| {}).unwrap();
        assert_eq!(f.len(), set.len());
        assert!(f.iter().all(|(s, _, m)| *s == 1 && m == "boom"));
        assert_eq!(rows.len(), set.len());
        assert!(rows.iter().all(|r| r.session == 0));
    }

    #[test]
    fn rounding_fixes_precision_and_sign() {
        assert_eq!(round_fixed(0.1234567), 0.123457);
        assert_eq!(round_fixed(-0.0000001).to_bits(), 0.0f64.to_bits());
    }
}

#[cfg(test)]
mod rounding_tests {
    use super::*;

    #[test]
    fn every_float_field_is_rounded() {
        // Build metrics with every float field set to an unrounded value via serde, so a
        // field added to SessionMetrics later cannot escape rounding unnoticed.
        // An empty optional field takes the float only where it is a float (`Option<u64>`
        // counts such as `stuck_event` would refuse it).
        let base = serde_json::to_value(SessionMetrics::default()).unwrap();
        let mut v = base.clone();
        let unrounded = serde_json::json!(0.123456789);
        for (k, x) in base.as_object().unwrap() {
            let mut tried = v.clone();
            tried[k] = unrounded.clone();
            let takes_float = serde_json::from_value::<SessionMetrics>(tried).is_ok();
            if x.is_f64() || (x.is_null() && takes_float) {
                v[k] = unrounded.clone();
            }
        }
        let mut m: SessionMetrics = serde_json::from_value(v).unwrap();
        round_metrics(&mut m);
        for (k, x) in serde_json::to_value(&m).unwrap().as_object().unwrap() {
            if let Some(f) = x.as_f64() {
                if x.is_f64() {
                    assert_eq!(f, 0.123457, "{k} is not rounded");
                }
            }
        }
    }
}

#[cfg(test)]
mod window_tests {
    use super::tests::{run_pairs, Fake};
    use super::*;
    use crate::sweep::grid::{GridSpec, Known};

    #[test]
    fn windows_are_bounded_by_sessions_and_events() {
        let ids: Vec<u32> = (0..600).collect();
        let w = windows(&ids, &|_| 10);
        assert_eq!(w, vec![0..256, 256..512, 512..600]);
        // 100,000 events each: two fit under the event bound; a longer session goes alone.
        let w = windows(&[0, 1, 2, 3], &|s| if s == 2 { 900_000 } else { 100_000 });
        assert_eq!(w, vec![0..2, 2..3, 3..4]);
        assert!(windows(&[], &|_| 1).is_empty());
    }

    /// Issue 13: a window at a time gives the rows `run_pairs` gives over all sessions at
    /// once, less the sessions that failed, whatever the thread count.
    /// Issue 47 item 11: pairs replayed a chunk of sessions at a time (to hold a window's
    /// rows once) come out whole, in (session, setting) order, as replayed one by one.
    #[test]
    fn pairs_replayed_in_chunks_keep_session_setting_order() {
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        let set = GridSpec::from_toml("g", "after_tokens='1k..7k:1k'\nkeep_recent_events=[1]")
            .unwrap()
            .resolve(&k)
            .unwrap()
            .settings;
        let n = 2 * PAIRS_AT_ONCE / set.len() + 3;
        let ids: Vec<u32> = (0..n as u32).collect();
        let eval = Fake { n };
        let (rows, failed) = run_pairs(&eval, &ids, &set, &AtomicBool::new(false), &|| {}).unwrap();
        assert!(failed.is_empty());
        assert_eq!(rows.len(), n * set.len());
        for (i, r) in rows.iter().enumerate() {
            let (s, st) = (i / set.len(), &set[i % set.len()]);
            let mut want = eval.evaluate(s, st).unwrap();
            round_metrics(&mut want);
            assert_eq!((r.session as usize, r.setting), (s, st.setting_id));
            assert_eq!(r.metrics, want);
        }
    }

    /// Issue 47 item 11: a window's rows reach the writer a chunk of whole sessions at a
    /// time as they are replayed, so a sweep never holds a window's rows whole.
    #[test]
    fn rows_reach_the_writer_a_chunk_at_a_time_not_a_window_at_a_time() {
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        let set = GridSpec::from_toml("g", "after_tokens='1k..100k:1k'\nkeep_recent_events=[1]")
            .unwrap()
            .resolve(&k)
            .unwrap()
            .settings;
        let ids: Vec<u32> = (0..WINDOW_SESSIONS as u32).collect();
        let (mut pushes, mut windows_done) = (Vec::new(), 0);
        run_windows::<_, Cancelled>(
            &ids,
            &|_| 1,
            &set,
            &mut |_| Ok(Fake { n: WINDOW_SESSIONS }),
            &AtomicBool::new(false),
            &|| {},
            &mut |r| {
                pushes.push(r.len());
                Ok(())
            },
            &mut |_, _| {
                windows_done += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(windows_done, 1);
        assert_eq!(pushes.iter().sum::<usize>(), WINDOW_SESSIONS * set.len());
        assert!(pushes.len() > 1, "{pushes:?}");
        assert!(pushes
            .iter()
            .all(|&n| n <= PAIRS_AT_ONCE && n % set.len() == 0));
    }

    #[test]
    fn windowed_rows_equal_all_at_once() {
        struct Flaky(Fake);
        impl Evaluator for Flaky {
            fn len(&self) -> usize {
                self.0.len()
            }
            fn evaluate(&self, s: usize, set: &Setting) -> Result<SessionMetrics, ReplayError> {
                if s % 97 == 5 && set.setting_id == 3 {
                    return Err(ReplayError::Cost("boom".into()));
                }
                self.0.evaluate(s, set)
            }
            fn timeline(&self, s: usize, set: &Setting) -> Result<Timeline, ReplayError> {
                self.0.timeline(s, set)
            }
            fn event_steps(&self, s: usize) -> u64 {
                self.0.event_steps(s)
            }
        }
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        let set = GridSpec::from_toml("g", "after_tokens='1k..5k:1k'\nkeep_recent_events=[1]")
            .unwrap()
            .resolve(&k)
            .unwrap()
            .settings;
        let n = 700;
        let ids: Vec<u32> = (0..n as u32).collect();
        let eval = Flaky(Fake { n });
        let (mut all, failed) =
            run_pairs(&eval, &ids, &set, &AtomicBool::new(false), &|| {}).unwrap();
        let bad: Vec<u32> = failed.iter().map(|f| f.0).collect();
        all.retain(|r| !bad.contains(&r.session));
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let (mut rows, mut fails, mut prepared) = (Vec::new(), Vec::new(), 0usize);
            pool.install(|| {
                run_windows::<_, Cancelled>(
                    &ids,
                    &|_| 1,
                    &set,
                    &mut |w| {
                        prepared = prepared.max(w.len());
                        Ok(Flaky(Fake { n }))
                    },
                    &AtomicBool::new(false),
                    &|| {},
                    &mut |r| {
                        rows.extend(r);
                        Ok(())
                    },
                    &mut |_, f| {
                        fails.extend(f);
                        Ok(())
                    },
                )
                .unwrap()
            });
            assert_eq!(rows, all, "{threads} threads");
            assert_eq!(fails, failed);
            assert_eq!(prepared, WINDOW_SESSIONS);
        }
    }
}
