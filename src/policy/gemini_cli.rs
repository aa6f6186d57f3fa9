//! `gemini-cli`: Gemini CLI chat compression (packages/core/src/context/
//! chatCompressionService.ts). When the last prompt reaches `threshold` (default 0.5) of the
//! model's window, the oldest 70 % of the history by JSON chars is compressed, split at a
//! user message that is not a tool result (`findCompressSplitPoint`); two model calls: the
//! summary, then its verification pass reading the summary and the same history. Its
//! truncation of old tool responses to a 50,000-token budget is not modelled.
//!
//! The experimental generalist profile (`context/config/profiles.ts`, on with
//! `experimental.generalistProfile`) replaces chat compression: when the context exceeds
//! `maxTokens` (150,000) every event older than the newest `retainedTokens` (65,000) is
//! folded into one state snapshot (the one before it included), one call.

use super::{At, CompactionPolicy, Ctx, Decision, GeminiProfile};

/// `COMPRESSION_PRESERVE_THRESHOLD`: the newest share of the history kept.
pub const PRESERVE: f64 = 0.3;

pub struct GeminiCli {
    threshold: Option<u64>,
    profile: GeminiProfile,
    users: Vec<u32>,
}

impl GeminiCli {
    pub fn new(ctx: &Ctx<'_>, threshold_pct: u64, profile: GeminiProfile) -> Self {
        GeminiCli {
            threshold: ctx.window.map(|w| w * threshold_pct / 100),
            profile,
            users: ctx.user_messages(),
        }
    }

    /// The generalist profile's backstop: above `maxTokens`, an event is folded into the
    /// snapshot when the events after it (before the request) hold more than
    /// `retainedTokens`; the event just before the request always stays.
    fn generalist(ctx: &Ctx<'_>, at: &At) -> Decision {
        if at.prompt <= GeminiProfile::GENERALIST_MAX {
            return Decision::Keep;
        }
        let s = ctx.sizes;
        let tp = &s
            .baseline
            .get_or_init(|| crate::engine::contents::baseline(s))
            .tok_prefix;
        let k = at.event as usize;
        // first event e with tokens(e+1..k) <= retained, i.e. tp[e+1] >= tp[k] - retained
        let floor = tp[k].saturating_sub(GeminiProfile::GENERALIST_RETAINED);
        let e = tp[1..=k].partition_point(|&x| x < floor);
        Decision::summarize_to(at, e.min(k.saturating_sub(1)) as u32)
    }
}

impl CompactionPolicy for GeminiCli {
    fn decide(&mut self, ctx: &Ctx<'_>, at: &At) -> Decision {
        if self.profile == GeminiProfile::Generalist {
            return Self::generalist(ctx, at);
        }
        let Some(t) = self.threshold else {
            return Decision::Keep;
        };
        if at.prompt < t || at.event <= at.cut {
            return Decision::Keep;
        }
        let s = ctx.sizes;
        let base = s
            .baseline
            .get_or_init(|| crate::engine::contents::baseline(s));
        let jp = &base.json_prefix;
        let (cut, k) = (at.cut as usize, at.event as usize);
        let lead = at.summary_chars;
        let cum = |i: usize| lead + jp[i] - jp[cut];
        let target = cum(k) as f64 * (1.0 - PRESERVE);
        let lo = self.users.partition_point(|&e| (e as usize) < cut);
        let hi = self.users.partition_point(|&e| (e as usize) < k);
        let range = &self.users[lo..hi];
        // first user message with at least `target` chars before it
        let first = range.partition_point(|&e| (cum(e as usize) as f64) < target);
        let split = match range.get(first) {
            Some(&e) => e,
            None => {
                let last = k - 1;
                if s.role_model[last] && !s.has_calls[last] {
                    at.event
                } else {
                    match range.last() {
                        Some(&e) => e,
                        None => return Decision::Keep,
                    }
                }
            }
        };
        if split <= at.cut {
            return Decision::Keep;
        }
        Decision::Summarize {
            head: 0,
            cut: split,
            keep: Vec::new(),
            passes: 2,
        }
    }
}
