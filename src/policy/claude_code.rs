//! `claude-code`: Claude Code's auto-compact (closed source; the rule as its public issues
//! and changelog describe it, docs/policies.md). It fires when the prompt reaches the rule of
//! the CLI version the session records (from 2.1.21 `window - min(max output, 20,000) -
//! 13,000`, 167,000 on a 200,000 window; before it the whole max output is reserved), on the
//! auto-compact window of the setting, not the price table's; the `pct` override
//! (`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`) gives `floor(effective window × pct / 100)` and can only
//! lower it. The whole history is replaced by one summary, followed by the files Claude Code
//! re-attaches ([`reattached`]); its todo list and plan are not modelled.

use super::claude_code_rule::CliRule;
use super::measured::{fit_requests, measured_context, request_sizes, Crossing};
use super::microcompact::{self, Microcompact};
use super::{At, Clearable, CompactionPolicy, Ctx, Decision};
use crate::transcript::claude_code_settings::settings_of;
use crate::transcript::{ClaudeCodeSettings, PolicyRule, Session};

pub use super::claude_code_rule::{parse_version, BUFFER};

/// The reserve's cap from 2.1.21 (`claude_code_rule::RESERVE_CAP`).
pub const OUTPUT_RESERVE: u64 = super::claude_code_rule::RESERVE_CAP;

pub struct ClaudeCode {
    threshold: u64,
    /// While its compactions are the recorded ones: decided on the context Claude Code
    /// measured ([`InStep`]).
    in_step: Option<InStep>,
    /// Its microcompaction, in the versions that run it, unless the session shows it was off
    /// ([`microcompact::off_in`]).
    micro: Option<Microcompact>,
    /// Per request, the size microcompaction checks while in step with the record
    /// ([`microcompact::checked_sizes`]).
    micro_checked: Vec<u64>,
}

/// The auto-compact window of a model without the 1M setting: 200,000. A sweep's `window`
/// other than this replaces the session's own (`CLAUDE_CODE_AUTO_COMPACT_WINDOW` in later
/// releases); the price table's `max_input_tokens` is the API's maximum, not this.
pub const AUTO_COMPACT_WINDOW: u64 = crate::settings::policy::CC_WINDOW;

/// The rule a session that records no Claude Code version is replayed under: the current one
/// (2.1.21 and later, reserve capped at 20,000).
pub const DEFAULT_VERSION: super::claude_code_rule::Version = (2, 1, 21);

/// Claude Code's auto-compact rule as one CLI version runs it (docs/policies.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VersionRule {
    /// The window the threshold is taken from.
    pub window: u64,
    /// Tokens reserved for the model's output ([`super::claude_code_rule::output_reserve`]).
    pub reserve: u64,
    pub buffer: u64,
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` as recorded (1..100), else `None`: kept as the
    /// percentage, not the threshold it gave, so that a sweep's window applies it anew.
    pub pct: Option<f64>,
}

impl VersionRule {
    /// The window, reserve, buffer and override of `rule` (auto-compact on).
    pub fn from_rule(rule: &CliRule) -> VersionRule {
        VersionRule {
            window: rule.window,
            reserve: rule.reserve,
            buffer: rule.buffer,
            pct: rule.pct,
        }
    }

    /// The prompt size at which it compacts ([`super::claude_code_rule::compacts_at`]).
    pub fn threshold(&self) -> u64 {
        super::claude_code_rule::compacts_at(
            self.window.saturating_sub(self.reserve),
            self.buffer,
            self.pct,
        )
    }

    /// The threshold with `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` = `pct` in place of the recorded
    /// one (a sweep's what-if); out of 1..100 ignored.
    pub fn threshold_at(&self, pct: Option<u64>) -> u64 {
        match pct.filter(|&p| p > 0 && p <= 100) {
            Some(p) => VersionRule {
                pct: Some(p as f64),
                ..*self
            }
            .threshold(),
            None => self.threshold(),
        }
    }

    /// The rule `session` records ([`session_rule`]) on `window` when it is not
    /// [`AUTO_COMPACT_WINDOW`] (a sweep's what-if), else on the session's own window.
    pub fn of_session(session: &Session, window: u64) -> VersionRule {
        let rule = session_rule(session).unwrap_or_else(|| default_rule(session));
        let mut r = VersionRule::from_rule(&rule);
        if window != AUTO_COMPACT_WINDOW {
            r.window = window;
        }
        r
    }

    /// `window − reserve − buffer = …`, for the report.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{} - {} reserve - {} buffer",
            self.window, self.reserve, self.buffer
        );
        let plain = VersionRule { pct: None, ..*self }.threshold();
        let t = self.threshold();
        if t != plain {
            out.push_str(&format!(
                ", lowered by CLAUDE_AUTOCOMPACT_PCT_OVERRIDE to {t}"
            ));
        }
        out.push_str(&format!(" = {t}"));
        out
    }
}

/// The auto-compact rule of the CLI `session` ran ([`session_version`]) for its model, under
/// the settings it records, on the window its records show; `None` when it records no
/// version that parses. The one rule both the `as recorded` row and a sweep's `claude-code`
/// replay.
pub fn session_rule(session: &Session) -> Option<CliRule> {
    let v = parse_version(&session_version(session)?)?;
    Some(rule_for(session, v))
}

fn rule_for(session: &Session, version: super::claude_code_rule::Version) -> CliRule {
    let largest = session
        .events
        .iter()
        .filter_map(|e| e.usage.map(|u| u.prompt_tokens))
        .max()
        .unwrap_or(0);
    CliRule::new(
        version,
        session.model.as_deref().unwrap_or(""),
        settings_of(session).unwrap_or(&ClaudeCodeSettings::default()),
        largest,
    )
}

/// [`DEFAULT_VERSION`]'s rule for a session that records no version.
fn default_rule(session: &Session) -> CliRule {
    rule_for(session, DEFAULT_VERSION)
}

/// The Claude Code version `session` ran: the one in force at its first automatic compaction
/// (a resumed session can change version), else the last recorded; `None` when it records
/// none (or is not Claude Code).
pub fn session_version(session: &Session) -> Option<String> {
    let p = session.recorded_policy.as_ref()?;
    if !matches!(p.rule, PolicyRule::ClaudeCodeAuto { .. }) {
        return None;
    }
    let at_boundary = session
        .recorded_compactions
        .iter()
        .filter(|c| c.is_full_in_file() && c.trigger.as_deref() == Some("auto"))
        .find_map(|c| c.version.clone());
    at_boundary.or_else(|| p.versions.last().cloned())
}

/// The current rule's auto-compact threshold for a window and an optional percentage override.
pub fn threshold(window: u64, pct: Option<u64>) -> u64 {
    VersionRule {
        window,
        reserve: OUTPUT_RESERVE,
        buffer: BUFFER,
        pct: None,
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
        if s.events.iter().all(|e| e.usage.is_none()) {
            return None;
        }
        let measured = match super::claude_code_size::checked_context(s, ctx.sizes) {
            Some(checked) => checked,
            None => {
                // what the history grows by, on the provider's scale where the session fits one
                let fit = fit_requests(&request_sizes(s, ctx.sizes));
                let grown = |g: u64| fit.map_or(g, |f| f.amount(g));
                let first = |c: u64| fit.map_or(c, |f| f.size(c));
                measured_context(s, ctx.sizes, first, grown)
            }
        };
        // the first request at or after each recorded compaction (as the backtest counts it)
        let mut boundaries: Vec<usize> = s
            .recorded_compactions
            .iter()
            .filter(|c| c.is_full_in_file())
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
        let version = session_version(ctx.session);
        let checked = microcompact::checked_sizes(ctx.session);
        // built once: the check that it was off runs it along the record on a copy
        let micro = microcompact::runs_in(version.as_deref())
            .then(|| Microcompact::new(ctx, threshold))
            .filter(|rule| !microcompact::off_in(ctx, version.as_deref(), rule, &checked));
        ClaudeCode {
            threshold,
            in_step: InStep::new(ctx, threshold),
            micro,
            micro_checked: checked.into_iter().map(|(_, size)| size).collect(),
        }
    }

    /// At `threshold` (the session's own rule), deciding on the size Claude Code checked
    /// while in step with the record ([`InStep`]), as [`ClaudeCode::new`] does: the `as
    /// recorded` row.
    pub fn recorded(ctx: &Ctx<'_>, threshold: u64) -> Self {
        // microcompaction as it ran is the record's (the backtest's `as_ran` applies it), not the rule's
        ClaudeCode {
            threshold,
            in_step: InStep::new(ctx, threshold),
            micro: None,
            micro_checked: Vec::new(),
        }
    }

    /// At a known threshold (a version's rule, or one fitted from recorded compactions).
    pub fn at(threshold: u64) -> Self {
        ClaudeCode {
            threshold,
            in_step: None,
            micro: None,
            micro_checked: Vec::new(),
        }
    }
}

impl CompactionPolicy for ClaudeCode {
    fn clearable(&self) -> Option<&Clearable> {
        self.micro.as_ref().map(|m| &m.results)
    }

    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision {
        // microcompaction's size: the recorded last usage while in step, else the replay's
        let checked = match &self.in_step {
            Some(_) => self.micro_checked.get(at.q).copied().unwrap_or(at.prompt),
            None => at.prompt,
        };
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
            Decision::Summarize {
                head: 0,
                cut: at.event,
                keep: reattached(ctx.session, ctx.sizes, at.event as usize),
                passes: 1,
            }
        } else {
            // microcompaction runs in the same step, when no compaction does
            match self.micro.as_mut() {
                Some(m) => match m.step(at.event, at.cut, checked) {
                    Some(_) => Decision::Clear(m.cleared()),
                    None => Decision::Keep,
                },
                None => Decision::Keep,
            }
        }
    }
}

/// Files Claude Code re-attaches after its summary: the [`REATTACH_FILES`] most recently read
/// (Claude Code is closed source; CrazyBoyM/anon-kode-claude-code
/// `src/utils/fileRecoveryCore.ts` reconstructs the rule from the CLI, "constants matching
/// original Claude Code implementation": 5 files, each estimated at characters / 4 tokens and
/// cut at 10,000, taken in recency order until the next would pass 50,000). The transcript
/// does not list them, so a file is the latest `Read` result recorded for its path before
/// `before`, kept up to [`REATTACH_TOKENS_PER_FILE`] (fitted: docs/validation.md "Tokens
/// after a Claude Code compaction"). Returned as the replay's `keep` list: (event, tokens of
/// it kept on `sizes`' scale), ascending.
pub fn reattached(
    session: &Session,
    sizes: &crate::tokens::sizes::SessionSizes,
    before: usize,
) -> Vec<(u32, u64)> {
    reattached_capped(
        &recent_reads(session, before),
        &sizes.tokens,
        REATTACH_TOKENS_PER_FILE,
    )
}

/// The files [`reattached`] chooses from: per path read before event `before`, the event of
/// its latest `Read` result and Claude Code's estimate of it (characters / 4), most recent
/// first.
pub fn recent_reads(session: &Session, before: usize) -> Vec<(u32, u64)> {
    let events = &session.events[..before.min(session.events.len())];
    // (path, event of its latest result, Claude Code's estimate of it), oldest first
    let mut latest: Vec<(&str, usize, u64)> = Vec::new();
    for (k, path, response) in crate::transcript::claude_code::read_results(events) {
        let chars = match response {
            serde_json::Value::String(s) => s.chars().count(),
            v => v.to_string().chars().count(),
        } as u64;
        latest.retain(|x| x.0 != path);
        latest.push((path, k, chars.div_ceil(4)));
    }
    latest
        .iter()
        .rev()
        .map(|&(_, k, estimate)| (k as u32, estimate))
        .collect()
}

/// [`reattached`] with each file kept up to `cap` tokens (Claude Code's estimate): what the
/// held-out refit of the cap (`backtest::holdout`) replays at every cap it tries.
/// `reads`: [`recent_reads`]; `tokens`: the replay's tokens per event
/// (`SessionSizes::tokens`).
pub fn reattached_capped(reads: &[(u32, u64)], tokens: &[u32], cap: u64) -> Vec<(u32, u64)> {
    let mut total = 0u64;
    let mut keep: Vec<(u32, u64)> = Vec::new();
    for &(k, estimate) in reads.iter().take(REATTACH_FILES) {
        let t = estimate.min(cap);
        if total + t > REATTACH_MAX_TOKENS {
            break;
        }
        total += t;
        if keep.iter().any(|x| x.0 == k) {
            continue;
        }
        // the kept share of the event, on the replay's scale
        let event = u64::from(tokens.get(k as usize).copied().unwrap_or(0));
        let kept = (event as f64 * t as f64 / estimate.max(1) as f64).round() as u64;
        keep.push((k, kept.min(event)));
    }
    keep.sort_unstable();
    keep
}

/// Files re-attached after a compaction ([`reattached`]).
pub const REATTACH_FILES: usize = 5;
/// Tokens (characters / 4) kept of each re-attached file: fitted on the recorded tokens after
/// the corpus's 10 automatic compactions (the reconstruction's cap, 10,000, gives 1.10x them).
pub const REATTACH_TOKENS_PER_FILE: u64 = 2_000;
/// Most tokens re-attached in all.
pub const REATTACH_MAX_TOKENS: u64 = 50_000;

#[cfg(test)]
mod reattach_tests {
    use super::*;
    use crate::tokens::sizes::SessionSizes;
    use crate::transcript::{Event, Format, Part, Role};

    /// Reads of `(path, chars)` in order, each a call (event 2i) and its result (event 2i + 1,
    /// counted at one token per 4 chars).
    fn reads(files: &[(&str, usize)]) -> (Session, Vec<u32>) {
        let mut events = Vec::new();
        let mut toks = Vec::new();
        for (i, (path, chars)) in files.iter().enumerate() {
            let mut m = Event::new("agent", Role::Model, "i1", i as f64);
            m.model_request = true;
            m.parts.push(Part::ToolCall {
                id: Some(format!("r{i}")),
                name: "Read".into(),
                args: serde_json::json!({ "file_path": path }),
            });
            events.push(m);
            toks.push(20);
            let mut r = Event::new("agent", Role::User, "i1", i as f64 + 0.5);
            r.parts.push(Part::ToolResponse {
                id: Some(format!("r{i}")),
                name: "Read".into(),
                response: serde_json::Value::String("x".repeat(*chars)),
            });
            events.push(r);
            toks.push((*chars / 4) as u32);
        }
        let s = Session::new("s", "s.jsonl", Format::ClaudeCode, events);
        (s, toks)
    }

    /// The 5 files read last come back (a path read twice once, at its latest result), each
    /// cut at the per-file cap; files read earlier, or after the compaction, do not.
    #[test]
    fn claude_code_reattaches_the_files_read_last() {
        let files = [
            ("a", 400),
            ("b", 400),
            ("c", 400),
            ("d", 40_000),
            ("e", 800),
            ("b", 1_200),
            ("f", 400),
            ("g", 400),
        ];
        let (s, toks) = reads(&files);
        let sizes = SessionSizes::new(&s, Some(&toks));
        // before g's call: f (event 13), b (its second read, 11), e (9), d (7, capped), c (5);
        // a is the sixth most recent, b's first read (3) is superseded
        let got = reattached(&s, &sizes, 14);
        let cap = REATTACH_TOKENS_PER_FILE;
        assert_eq!(
            got,
            vec![(5, 100), (7, cap), (9, 200), (11, 300), (13, 100)]
        );
        // a compaction before f's result: a comes back, f does not
        let got = reattached(&s, &sizes, 13);
        assert_eq!(got, vec![(1, 100), (5, 100), (7, cap), (9, 200), (11, 300)]);
    }
}
