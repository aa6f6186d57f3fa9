//! The backtest (issue 37 item 4): every compaction a transcript records, beside what the
//! `as recorded` replay (the policy its framework ran with, [`as_recorded`]) predicts, on the
//! provider's token scale ([`sizes`]). Automatic compactions are matched (within one request);
//! manual ones are listed, never matched. Where a framework's rule does not explain a session's
//! automatic compactions, the threshold is fitted from them and the match shown with it.
//!
//! A room after `policy` and `cost`, before `sweep`: it reads transcripts, sizes and policies.

pub mod anchored;
pub mod as_ran;
pub mod as_recorded;
pub mod compare;
pub mod holdout;
pub mod kept;
pub mod litellm;
pub mod micro;
pub mod refetch;
pub mod sizes;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::summarizer::{Deterministic, Policy};
use crate::engine::Replay;
use crate::policy::{driver, CompactionPolicy, Ctx, NoCompaction};
use crate::tokens::fit::PromptFit;
use crate::tokens::sizes::SessionSizes;
use crate::transcript::Session;
pub use as_recorded::{as_recorded, AsRecorded};
pub use compare::{CompactionRow, FrameworkStats, SessionRow};

/// What `backtest` prints, and what a sweep writes to its run folder's
/// `recorded_compactions.json` for the report (docs/columns.md).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Backtest {
    pub compactions: Vec<CompactionRow>,
    pub frameworks: BTreeMap<String, FrameworkStats>,
    pub sessions: Vec<SessionRow>,
    /// Every figure fitted on recorded data, in sample and held out ([`holdout`]; filled by
    /// [`holdout::add_holdout`], empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fits: Vec<holdout::FitReport>,
}

/// Chars of the summary the replay writes when the session records none: ~4,000 tokens, the
/// size of Claude Code's and OpenHands' recorded summaries.
const DEFAULT_SUMMARY_CHARS: u64 = 16_000;

/// One session's `as recorded` replay on its provider's scale.
pub struct SessionReplay {
    pub policy: AsRecorded,
    pub sized: sizes::ProviderSizes,
    pub replay: Replay,
}

/// Replay `session` under `policy` on `sized` with a fixed-size summarizer whose summaries are
/// as long as the session's recorded ones (median), or [`DEFAULT_SUMMARY_CHARS`].
pub fn replay_as(session: &Session, sized: &sizes::ProviderSizes, policy: &AsRecorded) -> Replay {
    if let Some(cfg) = policy.engine_config() {
        // an ADK setting: the engine's replay, as a sweep's ADK rows run
        return crate::engine::replay(&sized.sizes, &cfg, &summarizer(session));
    }
    run_on(session, sized, |ctx| {
        policy.build(ctx).unwrap_or_else(|| Box::new(NoCompaction))
    })
}

/// The fixed-size summarizer every backtest replay uses ([`summary_chars`]).
fn summarizer(session: &Session) -> Deterministic {
    Deterministic::new(
        Policy::Fixed(summary_chars(session)),
        Vec::new(),
        Vec::<String>::new(),
    )
}

/// Replay `session` on `sized` under the policy `build` makes, with the summarizer of
/// [`replay_as`].
fn run_on(
    session: &Session,
    sized: &sizes::ProviderSizes,
    build: impl FnOnce(&Ctx<'_>) -> Box<dyn CompactionPolicy>,
) -> Replay {
    let ctx = Ctx {
        sizes: &sized.sizes,
        session,
        window: None,
    };
    let summarizer = summarizer(session);
    let mut policy = build(&ctx);
    driver::replay(&ctx, policy.as_mut(), &summarizer)
}

/// The replay whose compactions are matched with the recorded ones: a token-threshold rule
/// (`threshold`) one recorded compaction at a time ([`anchored`]); any other rule free-running.
pub fn threshold_replay<'r>(
    session: &Session,
    run: &'r SessionReplay,
    threshold: Option<u64>,
) -> Cow<'r, Replay> {
    let Some(t) = threshold else {
        return Cow::Borrowed(&run.replay);
    };
    let fit = run.sized.fit.unwrap_or(PromptFit {
        overhead: 0,
        scale: 1.0,
        p50_abs_error_pct: 0.0,
        requests: 0,
    });
    let sized = sizes::ProviderSizes {
        sizes: anchored::anchored_sizes(session, &run.sized.sizes, &fit),
        fit: run.sized.fit,
    };
    Cow::Owned(run_on(session, &sized, |_| {
        Box::new(anchored::Anchored::new(t))
    }))
}

/// Chars of the recorded summaries (median): the fixed summarizer counts them 4 chars a
/// token, and the replay puts that count on the provider's scale where the prompt carries it
/// ([`SessionSizes::in_prompt`]), as a sweep's settings' summaries are.
fn summary_chars(session: &Session) -> u64 {
    let mut lens: Vec<u64> = session
        .recorded_compactions
        .iter()
        .filter(|c| !c.summary.is_empty())
        .map(|c| c.summary.chars().count() as u64)
        .collect();
    if lens.is_empty() {
        return DEFAULT_SUMMARY_CHARS;
    }
    lens.sort_unstable();
    lens[lens.len() / 2]
}

/// Replay one session as recorded.
pub fn session_replay(session: &Session, sizes: &SessionSizes) -> SessionReplay {
    let policy = as_recorded(session);
    let sized = sizes::provider_sizes(session, sizes);
    let replay = replay_as(session, &sized, &policy);
    SessionReplay {
        policy,
        sized,
        replay,
    }
}

/// Backtest `sessions` (with their run-tokenizer sizes, in the same order).
pub fn backtest(sessions: &[Session], sizes: &[SessionSizes]) -> Backtest {
    let mut out = Backtest::default();
    for (session, sz) in sessions.iter().zip(sizes) {
        if session.recorded_compactions.is_empty() && session.recorded_policy.is_none() {
            continue;
        }
        out.absorb(session_backtest(session, sz));
    }
    out.summarize();
    out
}

/// One session's rows (its recorded compactions and its session row), not yet summarized
/// per framework: a sweep makes them a window of sessions at a time ([`Backtest::absorb`]).
pub fn session_backtest(session: &Session, sizes: &SessionSizes) -> Backtest {
    let mut out = Backtest::default();
    let run = session_replay(session, sizes);
    compare::add_session(&mut out, session, &run);
    out
}

impl Backtest {
    /// Append `other`'s rows after this one's (sessions in the caller's order).
    pub fn absorb(&mut self, other: Backtest) {
        self.compactions.extend(other.compactions);
        self.sessions.extend(other.sessions);
    }

    /// The per-framework aggregates, from every row held (once, after the last
    /// [`Backtest::absorb`]).
    pub fn summarize(&mut self) {
        self.frameworks.clear();
        compare::summarize_frameworks(self);
    }
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;
