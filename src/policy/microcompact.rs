//! Claude Code's microcompaction (closed source; the rule as the CLI's own `cli.js` runs it,
//! read in the npm releases 2.0.57, 2.0.76, 2.1.1, 2.1.9, 2.1.18, 2.1.19, 2.1.23, 2.1.37 and
//! 2.1.50, docs/policies.md "Claude Code microcompaction"). Before every main-loop request,
//! in the same step as the auto-compact check and before it, the CLI weighs the results of
//! its file and shell tools ([`TOOLS`]) since the last compaction that it has not cleared
//! yet, each at its own estimate (text length / 4, rounded; [`IMAGE_TOKENS`] an image). The
//! [`KEEP_RECENT`] most recent are kept; from the oldest on, results are cleared while what
//! is left of the weighed total is above [`KEEP_TOKENS`]. It clears them only when the
//! context it checks is at or above the warning threshold (the auto-compact threshold less
//! [`WARNING_BELOW_THRESHOLD`]) and the clearing saves at least [`MIN_SAVED`]. A cleared
//! result's content becomes a pointer to the file the CLI saved it to (or `[Old tool result
//! content cleared]`); its call stays. From 2.1.9 the CLI writes a `microcompact_boundary`
//! record of it. Not modelled: memory attachments it drops (2.1.19 and before), the images
//! and documents of user messages 2.1.50 replaces by `[image]` / `[document]`, and the
//! feature flags that turn it off (`tengu_cache_plum_violet`, the 2.0.57 experiment
//! `cc_microcompact_ext`), which the files do not record.

use super::{Clearable, Ctx};
use crate::transcript::{Part, RecordedCompaction, Session};

/// The tools whose results it clears (2.0.57-2.1.50: `Read`, `Bash`, `Grep`, `Glob`,
/// `WebSearch`, `WebFetch`, `Edit`, `Write`).
pub const TOOLS: [&str; 8] = [
    "Read",
    "Bash",
    "Grep",
    "Glob",
    "WebSearch",
    "WebFetch",
    "Edit",
    "Write",
];
/// Most recent candidate results never cleared.
pub const KEEP_RECENT: usize = 3;
/// Tokens of candidate results it leaves uncleared (the automatic trigger's budget).
pub const KEEP_TOKENS: u64 = 40_000;
/// It clears nothing unless this many tokens would be saved.
pub const MIN_SAVED: u64 = 20_000;
/// The warning threshold: the auto-compact threshold less this.
pub const WARNING_BELOW_THRESHOLD: u64 = 20_000;
/// Its estimate of an image in a result.
pub const IMAGE_TOKENS: u64 = 2_000;
/// Tokens of what replaces a cleared result, modelled: the CLI's pointer to the saved file
/// (`<persisted-output>Tool result saved to: ~/.claude/projects/…/<session>/tool-results/
/// <tool_use_id>.txt … Use Read to view</persisted-output>`, about 200 characters).
pub const PLACEHOLDER_TOKENS: u64 = 60;
/// The oldest CLI release read that runs it (older ones are replayed without it).
pub const READ_SINCE: (u64, u64, u64) = (2, 0, 57);
/// The first release read that writes a `microcompact_boundary` record of each clearing.
pub const RECORDED_SINCE: (u64, u64, u64) = (2, 1, 9);

/// One clearing: the candidate results it cleared (indexes into [`Microcompact::results`]),
/// the CLI's estimate of all the results it weighed (`preTokens`) and of those it cleared
/// (`tokensSaved`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MicroStep {
    pub cleared: std::ops::Range<usize>,
    pub weighed: u64,
    pub saved: u64,
}

/// The rule over one session: its candidate results and how many (oldest first) are cleared.
#[derive(Debug, Clone)]
pub struct Microcompact {
    /// The candidate results, ascending, as the replay's clearable list.
    pub results: Clearable,
    /// `prefix[j]`: the CLI's estimate of the first `j` candidate results.
    prefix: Vec<u64>,
    /// Candidates `0..cleared` are cleared (or summarized away).
    cleared: usize,
    /// The warning threshold the checked context must reach.
    pub warning: u64,
}

impl Microcompact {
    /// The rule for `ctx.session` under an auto-compact `threshold`.
    pub fn new(ctx: &Ctx<'_>, threshold: u64) -> Self {
        let (events, estimate) = candidates(ctx.session);
        let mut prefix = Vec::with_capacity(estimate.len() + 1);
        prefix.push(0u64);
        for e in estimate {
            prefix.push(prefix[prefix.len() - 1] + e);
        }
        Microcompact {
            results: Clearable::new(ctx, events, PLACEHOLDER_TOKENS),
            prefix,
            cleared: 0,
            warning: threshold.saturating_sub(WARNING_BELOW_THRESHOLD),
        }
    }

    /// Candidates cleared so far (a prefix of [`Microcompact::results`]).
    pub fn cleared(&self) -> usize {
        self.cleared
    }

    /// Count the first `n` candidates as cleared (a clearing the record holds).
    pub fn clear_at_least(&mut self, n: usize) {
        self.cleared = self.cleared.max(n.min(self.results.events.len()));
    }

    /// Before the request at `event`, the history before `cut` summarized, the context
    /// checked `checked`: the clearing the rule makes, if any.
    pub fn step(&mut self, event: u32, cut: u32, checked: u64) -> Option<MicroStep> {
        let events = &self.results.events;
        let before = events.partition_point(|&e| e < event);
        let from = self.cleared.max(events.partition_point(|&e| e < cut));
        if from >= before {
            return None;
        }
        let base = self.prefix[from];
        let weighed = self.prefix[before] - base;
        let keep_from = before.saturating_sub(KEEP_RECENT).max(from);
        // oldest first, result j is cleared while what is left is over the budget: while
        // its estimate-before (`prefix[j] - base`) is under `weighed - KEEP_TOKENS`
        let limit = weighed.saturating_sub(KEEP_TOKENS);
        let to = from + self.prefix[from..keep_from].partition_point(|&p| p - base < limit);
        let saved = self.prefix[to] - base;
        if checked < self.warning || saved < MIN_SAVED {
            return None;
        }
        self.cleared = to;
        Some(MicroStep {
            cleared: from..to,
            weighed,
            saved,
        })
    }
}

/// The events holding a result of one of [`TOOLS`], ascending, with the CLI's estimate of
/// each (its text's length in UTF-16 units / 4, rounded, plus [`IMAGE_TOKENS`] per image).
pub fn candidates(session: &Session) -> (Vec<u32>, Vec<u64>) {
    let mut events = Vec::new();
    let mut estimate = Vec::new();
    for (k, e) in session.events.iter().enumerate() {
        let mut found = false;
        let mut tokens = 0u64;
        for p in &e.parts {
            match p {
                Part::ToolResponse { name, response, .. } if TOOLS.contains(&name.as_str()) => {
                    found = true;
                    tokens += text_estimate(response);
                }
                Part::Attachment { text: None, .. } if found => tokens += IMAGE_TOKENS,
                _ => {}
            }
        }
        if found {
            events.push(k as u32);
            estimate.push(tokens);
        }
    }
    (events, estimate)
}

/// `Math.round(length / 4)` of a result's text.
fn text_estimate(response: &serde_json::Value) -> u64 {
    use super::claude_code_size::quarter;
    match response.get("content").unwrap_or(response) {
        serde_json::Value::String(s) => quarter(s),
        other => quarter(&other.to_string()),
    }
}

/// Whether CLI `version` (`major.minor.patch`) runs it as read ([`READ_SINCE`]); a session
/// without a version is replayed under the current rule.
pub fn runs_in(version: Option<&str>) -> bool {
    version
        .and_then(super::claude_code::parse_version)
        .is_none_or(|v| v >= READ_SINCE)
}

/// Per model request (in order): its event and the size microcompaction checks before it,
/// the last response's recorded usage with its output (`input + cache reads + cache writes +
/// output`; 0 before any). Not the auto-compact check's size: that one adds an estimate of
/// what was appended since (2.1.19 and later), this one does not (2.0.57-2.1.50).
pub fn checked_sizes(session: &Session) -> Vec<(u32, u64)> {
    let mut last = 0u64;
    let mut out = Vec::new();
    for (k, e) in session.events.iter().enumerate() {
        if !e.model_request {
            continue;
        }
        out.push((k as u32, last));
        if let Some(u) = e.usage {
            last = u.prompt_tokens.saturating_add(u.output_tokens);
        }
    }
    out
}

/// The rule run along the record, one recorded compaction at a time: before each request
/// (`measured`: its event and the size checked before it, [`checked_sizes`], in request order)
/// the history since the last recorded full compaction, the results the recorded
/// microcompactions and its own earlier clearings cleared; the clearings it makes, by
/// request. What the backtest matches against the micro records, and how the `claude-code`
/// policy tells a session whose CLI had microcompaction turned off ([`off_in`]). `rule`:
/// [`Microcompact::new`] of the session, run from its start.
pub fn along_record(
    ctx: &Ctx<'_>,
    mut rule: Microcompact,
    measured: &[(u32, u64)],
) -> Vec<(usize, MicroStep)> {
    // the recorded compactions by the request they came before, read once in that order
    let mut recorded: Vec<&RecordedCompaction> = ctx
        .session
        .recorded_compactions
        .iter()
        .filter(|c| c.request.is_some())
        .collect();
    recorded.sort_by_key(|c| c.request);
    let mut next = recorded.iter().peekable();
    // what the record says happened before the request: the last full compaction's event,
    // the newest result a microcompaction cleared
    let (mut cut, mut newest) = (0u32, None::<u32>);
    let mut out = Vec::new();
    for (q, &(k, checked)) in measured.iter().enumerate() {
        while let Some(c) = next.next_if(|c| c.request.is_some_and(|r| r < q)) {
            if c.is_full_in_file() {
                cut = cut.max(c.at_event as u32);
            }
            if c.is_micro() {
                let cleared = c.cleared.iter().map(|&e| e as u32).max();
                newest = newest.max(cleared);
            }
        }
        if let Some(newest) = newest {
            let n = rule.results.events.partition_point(|&e| e <= newest);
            rule.clear_at_least(n);
        }
        if let Some(step) = rule.step(k, cut, checked) {
            out.push((q, step));
        }
    }
    out
}

/// Microcompaction was off for this session (a feature flag or `DISABLE_MICROCOMPACT`, which
/// the transcript does not record): its CLI writes a record of every clearing (2.1.9 and
/// later), it wrote none, yet the rule clears along the record.
pub fn off_in(
    ctx: &Ctx<'_>,
    version: Option<&str>,
    rule: &Microcompact,
    measured: &[(u32, u64)],
) -> bool {
    let records = version
        .and_then(super::claude_code::parse_version)
        .is_some_and(|v| v >= RECORDED_SINCE);
    records
        && !ctx
            .session
            .recorded_compactions
            .iter()
            .any(|c| c.is_micro())
        && !along_record(ctx, rule.clone(), measured).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::sizes::SessionSizes;
    use crate::transcript::{Event, Format, Role};

    /// A prompt, then one `Read` per estimate (a call, then a result of 4 × estimate chars).
    fn reads(estimates: &[u64]) -> Session {
        let mut events = vec![Event::new("user", Role::User, "i1", 0.0)];
        events[0].parts.push(Part::Text { text: "go".into() });
        for (i, &t) in estimates.iter().enumerate() {
            let mut m = Event::new("agent", Role::Model, "i1", 1.0 + i as f64);
            m.model_request = true;
            m.parts.push(Part::ToolCall {
                id: Some(format!("r{i}")),
                name: "Read".into(),
                args: serde_json::json!({"file_path": format!("/f{i}")}),
            });
            events.push(m);
            let mut r = Event::new("agent", Role::User, "i1", 1.5 + i as f64);
            r.parts.push(Part::ToolResponse {
                id: Some(format!("r{i}")),
                name: "Read".into(),
                response: serde_json::json!({ "content": "x".repeat(4 * t as usize) }),
            });
            events.push(r);
        }
        Session::new("s", "s.jsonl", Format::ClaudeCode, events)
    }

    /// The CLI's rule (cli.js 2.0.57-2.1.50): oldest first, results are cleared while what is
    /// left of the weighed total is over 40,000, never the 3 most recent; only at or above
    /// the warning threshold, and only when at least 20,000 is saved.
    #[test]
    fn the_cli_rule_clears_oldest_results_down_to_40000_keeping_the_last_3() {
        let s = reads(&[20_000, 15_000, 10_000, 8_000, 30_000, 5_000]);
        let sizes = SessionSizes::new(&s, None);
        let ctx = Ctx {
            sizes: &sizes,
            session: &s,
            window: None,
        };
        let end = s.events.len() as u32;
        let mut rule = Microcompact::new(&ctx, 167_000);
        assert_eq!(rule.warning, 147_000);
        assert_eq!(
            rule.step(end, 0, 146_999),
            None,
            "under the warning threshold"
        );
        // 88,000 weighed: 20,000 + 15,000 + 10,000 cleared leaves 43,000, the rest is recent
        let got = rule.step(end, 0, 147_000).expect("clears");
        assert_eq!(
            (got.cleared, got.weighed, got.saved),
            (0..3, 88_000, 45_000)
        );
        assert_eq!(rule.cleared(), 3);
        // what is left is not weighed again until it is over the budget by 20,000
        assert_eq!(rule.step(end, 0, 200_000), None);
        let s = reads(&[15_000, 10_000, 10_000, 10_000, 10_000, 10_000]);
        let sizes = SessionSizes::new(&s, None);
        let ctx = Ctx {
            sizes: &sizes,
            session: &s,
            window: None,
        };
        let mut rule = Microcompact::new(&ctx, 167_000);
        let got = rule.step(end, 0, 150_000).expect("saves 25,000");
        assert_eq!((got.cleared, got.saved), (0..2, 25_000));
        // a summary cut past the results leaves nothing to weigh
        let mut rule = Microcompact::new(&ctx, 167_000);
        assert_eq!(rule.step(end, end, 150_000), None);
    }
}
