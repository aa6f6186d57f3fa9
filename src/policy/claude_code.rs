//! `claude-code`: Claude Code's auto-compact (closed source; the rule as its public issues
//! and changelog describe it, docs/policies.md). It fires when the prompt reaches the rule of
//! the CLI version the session records (from 2.1.21 `window - min(max output, 20,000) -
//! 13,000`, 167,000 on a 200,000 window; before it the whole max output is reserved), on the
//! auto-compact window of the setting, not the price table's; the `pct` override
//! (`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`) gives `floor(effective window × pct / 100)` and can only
//! lower it. The whole history is replaced by one summary; the files and todo list Claude
//! Code re-attaches are not modelled.

use super::measured::{fit_requests, measured_context, request_sizes, Crossing};
use super::{At, CompactionPolicy, Ctx, Decision};
use crate::transcript::{PolicyRule, Session};

/// `min(max output, 20,000)`: the pricing table has no max output; every Claude model in it
/// writes at least 20,000, so the reserve is 20,000.
pub const OUTPUT_RESERVE: u64 = 20_000;
/// The auto-compact buffer below the effective window.
pub const BUFFER: u64 = 13_000;

pub struct ClaudeCode {
    threshold: u64,
    /// While its compactions are the recorded ones: decided on the context Claude Code
    /// measured ([`InStep`]).
    in_step: Option<InStep>,
}

/// The window Claude Code's auto-compact reads for the Claude models of the corpus: 200,000,
/// whatever the API allows (the 1M window is opt-in; `CLAUDE_CODE_AUTO_COMPACT_WINDOW` /
/// `autoCompactWindow` change it). The price table's `max_input_tokens` is the API's maximum.
pub const AUTO_COMPACT_WINDOW: u64 = crate::settings::policy::CC_WINDOW;

/// The rule a session that records no Claude Code version is replayed under: the current one
/// (2.1.21 and later, reserve capped at 20,000).
pub const DEFAULT_VERSION: &str = "2.1.21";

/// The first CLI version whose output reserve is capped at 20,000 (CHANGELOG 2.1.21: "Fixed
/// auto-compact triggering too early on models with large output token limits").
pub const RESERVE_CAP_SINCE: (u64, u64, u64) = (2, 1, 21);

/// Claude Code's auto-compact rule as one CLI version runs it (docs/policies.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRule {
    /// The window the threshold is taken from.
    pub window: u64,
    /// Tokens reserved for the model's output: its max output, capped at [`OUTPUT_RESERVE`]
    /// from 2.1.21 on.
    pub reserve: u64,
    pub buffer: u64,
}

impl VersionRule {
    /// The rule of CLI `version` (`2.0.57`) for `model` on `window`; `None` for a version
    /// that does not parse.
    pub fn of(version: &str, model: Option<&str>, window: u64) -> Option<VersionRule> {
        let v = parse_version(version)?;
        let max_output = max_output(model);
        let reserve = if v >= RESERVE_CAP_SINCE {
            max_output.min(OUTPUT_RESERVE)
        } else {
            max_output
        };
        Some(VersionRule {
            window,
            reserve,
            buffer: BUFFER,
        })
    }

    /// The prompt size at which it compacts.
    pub fn threshold(&self) -> u64 {
        self.window
            .saturating_sub(self.reserve)
            .saturating_sub(self.buffer)
    }

    /// The threshold with `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` = `pct`: `floor(effective × pct /
    /// 100)`, capped at [`Self::threshold`] (it can only lower it); out of 1..100 ignored.
    pub fn threshold_at(&self, pct: Option<u64>) -> u64 {
        let effective = self.window.saturating_sub(self.reserve);
        match pct.filter(|&p| p > 0 && p <= 100) {
            Some(p) => (effective * p / 100).min(self.threshold()),
            None => self.threshold(),
        }
    }

    /// The rule `session` records (its CLI version, [`session_version`]) on `window`, else
    /// [`DEFAULT_VERSION`]'s; the reserve from the recorded model's max output.
    pub fn of_session(session: &Session, window: u64) -> VersionRule {
        let model = session.model.as_deref();
        session_version(session)
            .and_then(|v| VersionRule::of(&v, model, window))
            .or_else(|| VersionRule::of(DEFAULT_VERSION, model, window))
            .unwrap_or(VersionRule {
                window,
                reserve: OUTPUT_RESERVE,
                buffer: BUFFER,
            })
    }

    /// `window − reserve − buffer = …`, for the report.
    pub fn text(&self) -> String {
        format!(
            "{} - {} reserve - {} buffer = {}",
            self.window,
            self.reserve,
            self.buffer,
            self.threshold()
        )
    }
}

/// The Claude Code version `session` ran: the one in force at its first automatic compaction
/// (a resumed session can change version), else the last recorded; `None` when it records
/// none (or is not Claude Code).
pub fn session_version(session: &Session) -> Option<String> {
    let p = session.recorded_policy.as_ref()?;
    if !matches!(p.rule, PolicyRule::ClaudeCodeAuto) {
        return None;
    }
    let at_boundary = session
        .recorded_compactions
        .iter()
        .filter(|c| c.trigger.as_deref() == Some("auto"))
        .find_map(|c| c.version.clone());
    at_boundary.or_else(|| p.versions.last().cloned())
}

/// `major.minor.patch` of a CLI version string.
pub fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v.trim().split('.').map(|x| x.trim().parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next().flatten().unwrap_or(0)))
}

/// The max output Claude Code requests of a model (its default `max_tokens`): 64,000 for the
/// Claude 4.5+ models (Opus 4.5 and later, Sonnet 4.5, Haiku 4.5), 32,000 for Opus 4/4.1 and
/// unknown models. Before 2.1.21 the whole of it was reserved.
pub fn max_output(model: Option<&str>) -> u64 {
    let m = model.unwrap_or("");
    let older_opus = m.contains("opus-4-1") || m.contains("opus-4-2025") || m == "claude-opus-4";
    if m.contains("claude") && !older_opus && (m.contains("-4-") || m.contains("-5")) {
        64_000
    } else {
        32_000
    }
}

/// The current rule's auto-compact threshold for a window and an optional percentage override.
pub fn threshold(window: u64, pct: Option<u64>) -> u64 {
    VersionRule {
        window,
        reserve: OUTPUT_RESERVE,
        buffer: BUFFER,
    }
    .threshold_at(pct)
}

/// A session that records its compactions and prompt sizes, replayed while the policy's
/// compactions are the recorded ones (each within one request of a recorded one, and every
/// recorded one so far matched): the recorded context after a compaction is then the one
/// the policy's own compaction left (system prompt, summary, re-attached files), so the
/// decision reads the context Claude Code measured, as the backtest does. Out of step (a
/// compaction the record lacks, or a recorded one the policy did not make) the policy reads
/// the replay's own prompt from then on.
struct InStep {
    /// Per request: the context measured before it ([`measured_context`]).
    context: Vec<u64>,
    /// The first request after each recorded compaction, ascending.
    boundaries: Vec<usize>,
    /// Recorded compactions matched so far.
    matched: usize,
    crossing: Crossing,
}

impl InStep {
    fn new(ctx: &Ctx<'_>, threshold: u64) -> Option<InStep> {
        let s = ctx.session;
        if s.recorded_compactions.is_empty() || s.events.iter().all(|e| e.usage.is_none()) {
            return None;
        }
        // what the history grows by, on the provider's scale where the session fits one
        let fit = fit_requests(&request_sizes(s, ctx.sizes));
        let grown = |g: u64| fit.map_or(g, |f| f.amount(g));
        let first = |c: u64| fit.map_or(c, |f| f.size(c));
        let measured = measured_context(s, ctx.sizes, first, grown);
        // the first request at or after each recorded compaction (as the backtest counts it)
        let mut boundaries: Vec<usize> = s
            .recorded_compactions
            .iter()
            .map(|c| measured.partition_point(|&(k, _)| (k as usize) < c.at_event))
            .collect();
        boundaries.sort_unstable();
        let context = measured.into_iter().map(|(_, size)| size).collect();
        Some(InStep {
            context,
            boundaries,
            matched: 0,
            crossing: Crossing::new(threshold),
        })
    }

    /// Whether it fires before request `q`.
    fn step(&mut self, q: usize) -> Step {
        let next = self.boundaries.get(self.matched).copied();
        let Some(&context) = self
            .context
            .get(q)
            .filter(|_| next.is_none_or(|b| b + 1 >= q))
        else {
            return Step::Left;
        };
        if !self.crossing.fires(context) {
            return Step::Keep;
        }
        if next.is_some_and(|b| b.abs_diff(q) <= 1) {
            self.matched += 1;
            return Step::Fire;
        }
        Step::FireAndLeave
    }
}

/// [`InStep::step`]'s answer.
enum Step {
    Keep,
    Fire,
    /// A compaction the record lacks: made, and out of step after it.
    FireAndLeave,
    /// A recorded compaction passed unmatched: out of step, this request included.
    Left,
}

impl ClaudeCode {
    /// The rule of the CLI version `ctx.session` records (else [`DEFAULT_VERSION`]'s) on the
    /// auto-compact `window`, lowered by `pct`.
    pub fn new(ctx: &Ctx<'_>, pct: Option<u64>, window: u64) -> Self {
        let threshold = VersionRule::of_session(ctx.session, window).threshold_at(pct);
        ClaudeCode {
            threshold,
            in_step: InStep::new(ctx, threshold),
        }
    }

    /// At a known threshold (a version's rule, or one fitted from recorded compactions).
    pub fn at(threshold: u64) -> Self {
        ClaudeCode {
            threshold,
            in_step: None,
        }
    }
}

impl CompactionPolicy for ClaudeCode {
    fn decide(&mut self, _ctx: &Ctx<'_>, at: &At) -> Decision {
        let step = self.in_step.as_mut().map_or(Step::Left, |s| s.step(at.q));
        if matches!(step, Step::Left | Step::FireAndLeave) {
            self.in_step = None;
        }
        let fires = match step {
            Step::Keep => false,
            Step::Fire | Step::FireAndLeave => true,
            // out of step: the replay's own prompt decides, from this request on
            Step::Left => at.prompt >= self.threshold,
        };
        if fires {
            Decision::summarize_all(at)
        } else {
            Decision::Keep
        }
    }
}
