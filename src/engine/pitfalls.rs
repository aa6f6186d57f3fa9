//! ADK's two known compaction pitfalls (issue 38 §3, docs/pitfalls.md), read off a finished
//! [`Replay`]: the replay itself stays exactly as google-adk 2.13.0 runs it; these functions
//! only say where it went wrong for the user. Pure, like the rest of the engine.
//!
//! Both were checked against the real 2.13.0 with the oracle
//! (tests/fixtures/oracle-extra/z01..z03, README there):
//! - [`thrash`]: a summary at or above `token_threshold` re-fires the token trigger at the
//!   next check (google/adk-go#1439; 2.13.0 does it before every model call).
//! - [`stuck`]: a long-running call that is never answered stops every later compaction
//!   (google/adk-python#7236; 2.13.0 still stops for long-running calls, but compacts past a
//!   plain unanswered call, which its dead-call pass takes for dead).

use super::guards::{self_contained_prefix, GuardScratch};
use super::types::{Replay, Trigger};
use super::Config;
use crate::tokens::sizes::{SessionSizes, PART_CALL};

/// Token-threshold compactions fired only because the newest summary alone already passed
/// the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Thrash {
    /// Compactions counted (see [`thrash`]).
    pub compactions: u32,
    /// Distinct invocations (blocks) in which they fired.
    pub invocations: u32,
    /// The first invocation (block) where one fired.
    pub first_invocation: Option<u32>,
}

/// Counts the compactions a summary too large for its threshold made (google/adk-go#1439).
///
/// ADK's token check (`_run_compaction_for_token_threshold_config`,
/// google/adk/apps/compaction.py of 2.13.0, lines 689-696) reads the newest recorded
/// `prompt_token_count`, or after a compaction (`_latest_prompt_token_count`, lines 292-308:
/// counts at or before a compaction are skipped) ADK's chars/4 estimate of the request,
/// which then holds the summary. When the summary alone measures at least the threshold, the
/// check fires again as soon as the retention leaves one event to compact, and the
/// worth-compacting gate (`_is_range_worth_compacting`, lines 365-390) does not stop it: a
/// rolling token summary is seeded with the previous one and its range contains it, so it
/// removes the previous summary plus at least one event, always more than the previous
/// summary's size.
///
/// A compaction counts when (1) its trigger is the token threshold; (2) the compaction
/// before it (the newest summary in the request when the check ran) measures at least the
/// threshold on its own, `summary_chars / 4 >= token_threshold` (ADK's estimate,
/// `_estimate_prompt_token_count`, line 274); and (3) it fired in the same invocation as that
/// one or the next. Zero without the token pair.
pub fn thrash(replay: &Replay, cfg: &Config) -> Thrash {
    let Some((threshold, _)) = cfg.token else {
        return Thrash::default();
    };
    let mut out = Thrash::default();
    let mut last_invocation = None;
    for pair in replay.compactions.windows(2) {
        let (prev, c) = (&pair[0], &pair[1]);
        let refired = c.trigger == Trigger::TokenThreshold
            && prev.summary_chars / 4 >= threshold
            && c.invocation_index <= prev.invocation_index + 1;
        if !refired {
            continue;
        }
        out.compactions += 1;
        out.first_invocation.get_or_insert(c.invocation_index);
        if last_invocation != Some(c.invocation_index) {
            out.invocations += 1;
            last_invocation = Some(c.invocation_index);
        }
    }
    out
}

/// Where compaction stopped for good behind a call that was never answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stuck {
    /// The event holding the unanswered call: nothing from it on was ever compacted.
    pub event_index: u32,
    /// The call's part (index into `SessionSizes::parts`; the same position in the session's
    /// event, see [`Stuck::call_name`]).
    pub call_part: u32,
    /// The invocation (block) that made the call.
    pub invocation_index: u32,
    /// The last event any compaction covered (`None`: none ever fired).
    pub last_compacted_event: Option<u32>,
    /// Trigger checks after the call's invocation that wanted a compaction and made none.
    pub missed_checks: u32,
    /// Model requests made after the call's invocation.
    pub requests: u32,
    /// Raw history tokens those requests carried (`history_tokens - summary_tokens`, run
    /// tokenizer), summed: what the prompts paid for history no summary could replace.
    pub stuck_history_tokens: u64,
}

impl Stuck {
    /// The unanswered call's tool name, read from the session the sizes were built from.
    pub fn call_name<'a>(
        &self,
        s: &SessionSizes,
        session: &'a crate::transcript::Session,
    ) -> Option<&'a str> {
        let (first, _) = *s.parts_at.get(self.event_index as usize)?;
        let at = self.call_part.checked_sub(first)? as usize;
        match session
            .events
            .get(self.event_index as usize)?
            .parts
            .get(at)?
        {
            crate::transcript::Part::ToolCall { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// The event after which nothing could be compacted because a call was never answered
/// (google/adk-python#7236), or `None`.
///
/// Both triggers keep only the longest prefix of their range in which every call is answered
/// (`_longest_self_contained_prefix`, google/adk/apps/compaction.py of 2.13.0, lines
/// 561-623, called by the token path at line 457 and the sliding window at line 877). 2.13.0
/// retries ignoring calls `_provably_dead_call_ids` (lines 512-558) proves dead: no response
/// anywhere in the session and not made by the newest invocation. A call listed in the
/// event's `long_running_tool_ids` is never taken for dead (lines 531-544: only synthetic
/// client calls such as `adk_request_confirmation` are, outside the newest invocation), so
/// once a compaction has covered everything before it, every later range starts with it and
/// keeps nothing.
///
/// Stuck at call event `c` when all of: (1) `c` holds a function call (with an id) that no
/// response in the session answers (a response the event itself still requests does not
/// count, as in `_event_resolved_response_ids`); (2) no compaction covers `c` or a later
/// event; (3) the 2.13.0 guard itself keeps nothing of the raw events `c..n` (this module
/// runs the engine's [`self_contained_prefix`] over them, the whole session as
/// `all_events`; isolation scopes and rewinds are not told apart here); and (4) a trigger
/// wanted a compaction after `c`'s invocation and got none: a pre-request or post-invocation
/// token check that measured at least the threshold, or an invocation that ended with at
/// least `compaction_interval` invocations (distinct ids) counted from `c`'s. The first `c`
/// meeting them is reported.
pub fn stuck(replay: &Replay, s: &SessionSizes, cfg: &Config) -> Option<Stuck> {
    let last_compacted = replay
        .compactions
        .iter()
        .filter_map(|c| c.last_raw_event_index)
        .max();
    let first_free = last_compacted.map_or(0, |e| e as usize + 1);
    let answered = answered_ids(s);
    // Called after every ADK replay of a sweep: most sessions answer every call, so look for
    // one before building the window the guard reads.
    let first_call = (first_free..s.n).find(|&i| unanswered_call(s, i, &answered).is_some())?;
    let mut gs = GuardScratch::default();
    let window: Vec<u32> = (first_free as u32..s.n as u32).collect();
    let start = first_call - first_free;
    for (k, &c) in window.iter().enumerate().skip(start) {
        let Some(part) = unanswered_call(s, c as usize, &answered) else {
            continue;
        };
        if self_contained_prefix(s, &window[k..], s.n, &mut gs) > 0 {
            continue;
        }
        let invocation = s.inv_block[c as usize];
        let missed = missed_checks(replay, s, cfg, c);
        if missed == 0 {
            return None;
        }
        let later = replay
            .requests
            .iter()
            .filter(|r| r.invocation_index > invocation);
        return Some(Stuck {
            event_index: c,
            call_part: part,
            invocation_index: invocation,
            last_compacted_event: last_compacted,
            missed_checks: missed,
            requests: later.clone().count() as u32,
            stuck_history_tokens: later.map(|r| r.history_tokens - r.summary_tokens).sum(),
        });
    }
    None
}

/// Per interned call id: answered by a response somewhere in the session that its own event
/// does not still request (`_event_resolved_response_ids`).
fn answered_ids(s: &SessionSizes) -> Vec<bool> {
    let mut answered = vec![false; s.n_ids as usize];
    for i in 0..s.n {
        for id in s.resp_ids(i) {
            if !s.requested[i].contains(&id) {
                answered[id as usize] = true;
            }
        }
    }
    answered
}

/// The first call part of event `i` with an id nobody answers.
fn unanswered_call(s: &SessionSizes, i: usize, answered: &[bool]) -> Option<u32> {
    s.part_range(i).find(|&p| {
        let part = s.parts[p as usize];
        part.kind == PART_CALL
            && part.id != crate::tokens::sizes::NO_ID
            && !answered[part.id as usize]
    })
}

/// Trigger checks after the invocation holding event `c` that wanted a compaction and made
/// none (see [`stuck`], condition 4).
fn missed_checks(replay: &Replay, s: &SessionSizes, cfg: &Config, c: u32) -> u32 {
    let invocation = s.inv_block[c as usize];
    let over = |m: Option<u64>| matches!((m, cfg.token), (Some(m), Some((t, _))) if m >= t);
    let pre = replay
        .requests
        .iter()
        .filter(|r| r.invocation_index > invocation)
        .filter(|r| !r.pre_request_compacted && over(r.measured_prompt_tokens))
        .count();
    let post = replay
        .invocations
        .iter()
        .filter(|v| v.index > invocation && v.post_compaction.is_none())
        .filter(|v| {
            let last = (v.first_event_index + v.events).saturating_sub(1) as usize;
            let new_invocations = s.inv_id[last].saturating_sub(s.inv_id[c as usize]) + 1;
            let sliding = cfg
                .sliding
                .is_some_and(|(interval, _)| u64::from(new_invocations) >= interval);
            sliding || over(v.post_measured_prompt_tokens)
        })
        .count();
    (pre + post) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::summarizer::{Deterministic, Policy};
    use crate::engine::{replay, UsageMode};

    const Z01: &str =
        include_str!("../../tests/fixtures/oracle-extra/z01_summary_over_threshold.session.json");
    const Z02: &str =
        include_str!("../../tests/fixtures/oracle-extra/z02_unanswered_call.session.json");
    const Z03: &str =
        include_str!("../../tests/fixtures/oracle-extra/z03_unanswered_long_running.session.json");

    fn sizes(text: &str) -> (crate::transcript::Session, SessionSizes) {
        let session = crate::transcript::adk::read("case.session.json", text)
            .expect("reads")
            .remove(0);
        let sizes = SessionSizes::new(&session, None);
        (session, sizes)
    }

    fn token(threshold: u64, retention: u64) -> Config {
        Config {
            token: Some((threshold, retention)),
            sliding: None,
            usage: UsageMode::Adjust,
            pre_request: true,
        }
    }

    fn sliding(interval: u64, overlap: u64) -> Config {
        Config {
            token: None,
            sliding: Some((interval, overlap)),
            usage: UsageMode::Adjust,
            pre_request: true,
        }
    }

    fn run(s: &SessionSizes, cfg: &Config, summary_chars: u64) -> Replay {
        let summ = Deterministic::new(
            Policy::Fixed(summary_chars),
            Vec::new(),
            Vec::<String>::new(),
        );
        replay(s, cfg, &summ)
    }

    /// z01 (oracle: `t700r2_f3200`, `t700r2_f2800`, `t700r2_f400`): with a summary of 800 or
    /// exactly 700 ADK tokens at a 700-token threshold, 2.13.0 compacts 71 times in 40 turns,
    /// before both model calls of every turn from the 5th on: all but the first count. A
    /// 100-token summary compacts 12 times, none of them for the summary's sake.
    #[test]
    fn a_summary_at_or_above_the_threshold_thrashes() {
        let (_, s) = sizes(Z01);
        for chars in [3200, 2800] {
            let r = run(&s, &token(700, 2), chars);
            assert_eq!(r.compactions.len(), 71, "oracle t700r2_f{chars}");
            let t = thrash(&r, &token(700, 2));
            assert_eq!(
                t,
                Thrash {
                    compactions: 70,
                    invocations: 35,
                    first_invocation: Some(5),
                },
                "f{chars}"
            );
        }
        // A longer retention does not space them out (oracle `t700r20_f3200`): after each
        // compaction exactly 20 events remain, so any new event re-arms the check, and 2.13.0
        // compacts before both model calls and after every turn from the 6th on.
        let r = run(&s, &token(700, 20), 3200);
        assert_eq!(r.compactions.len(), 105, "oracle t700r20_f3200");
        assert_eq!(thrash(&r, &token(700, 20)).compactions, 104);
        // The same compactions two invocations apart are not re-firings.
        let mut spaced = run(&s, &token(700, 2), 3200);
        for c in &mut spaced.compactions {
            c.invocation_index = 2 * c.ordinal;
        }
        assert_eq!(thrash(&spaced, &token(700, 2)), Thrash::default());
        let r = run(&s, &token(700, 2), 400);
        assert_eq!(r.compactions.len(), 12, "oracle t700r2_f400");
        assert_eq!(thrash(&r, &token(700, 2)), Thrash::default());
        // One char under the threshold's 2,800: the summary alone no longer passes it.
        let r = run(&s, &token(700, 2), 2799);
        assert_eq!(thrash(&r, &token(700, 2)).compactions, 0);
        // The sliding window fires on invocation counts, never on a summary's size.
        let r = run(&s, &sliding(1, 0), 3200);
        assert!(!r.compactions.is_empty());
        assert_eq!(thrash(&r, &sliding(1, 0)), Thrash::default());
    }

    /// z03 (oracle: `t700r2`, `s21`): turn 3's long-running `issue_refund` call (event 13) is
    /// never answered; 2.13.0 compacts up to event 12 and never again.
    #[test]
    fn an_unanswered_long_running_call_is_reported_stuck() {
        let (session, s) = sizes(Z03);
        for (cfg, compactions) in [(token(700, 2), 1), (sliding(2, 1), 2)] {
            let r = run(&s, &cfg, 400);
            assert_eq!(r.compactions.len(), compactions, "oracle {cfg:?}");
            let st = stuck(&r, &s, &cfg).expect("stuck");
            assert_eq!(st.event_index, 13);
            assert_eq!(st.invocation_index, 3);
            assert_eq!(st.last_compacted_event, Some(12));
            assert_eq!(st.call_name(&s, &session), Some("issue_refund"));
            assert_eq!(st.requests, 2 * 16);
            assert!(st.missed_checks >= 10, "{st:?}");
            let later = r.requests.iter().filter(|q| q.invocation_index > 3);
            let raw: u64 = later.map(|q| q.history_tokens - q.summary_tokens).sum();
            assert_eq!(st.stuck_history_tokens, raw);
            assert!(
                raw > 16 * 700,
                "every later request carries the whole stuck history"
            );
        }
        // Below any trigger nothing was wanted, so nothing is reported.
        let quiet = token(1_000_000, 2);
        assert_eq!(stuck(&run(&s, &quiet, 400), &s, &quiet), None);
    }

    /// z02 (oracle: `t700r2`, `s21`): the same call, not long-running. 2.13.0 takes it for
    /// dead once its invocation is over and compacts past it: not stuck.
    #[test]
    fn a_plain_unanswered_call_is_compacted_past() {
        let (_, s) = sizes(Z02);
        for (cfg, compactions) in [(token(700, 2), 5), (sliding(2, 1), 10)] {
            let r = run(&s, &cfg, 400);
            assert_eq!(r.compactions.len(), compactions, "oracle {cfg:?}");
            assert!(r
                .compactions
                .iter()
                .any(|c| c.last_raw_event_index > Some(13)));
            assert_eq!(stuck(&r, &s, &cfg), None);
        }
    }

    /// z02 (oracle: `s21_f20k`): a 20,000-char summary after invocation 1 makes the
    /// worth-compacting gate refuse every later window, so the unanswered call (event 13) is
    /// never covered while the sliding trigger keeps asking; but 2.13.0's guard would compact
    /// past it, so it is the gate, not the call: not stuck.
    #[test]
    fn a_gate_refusal_is_not_a_stuck_call() {
        let (_, s) = sizes(Z02);
        let cfg = sliding(2, 1);
        let r = run(&s, &cfg, 20_000);
        assert_eq!(r.compactions.len(), 1, "oracle s21_f20k");
        assert_eq!(r.compactions[0].last_raw_event_index, Some(7));
        assert!(missed_checks(&r, &s, &cfg, 13) > 0);
        assert_eq!(stuck(&r, &s, &cfg), None);
    }
}
