//! Re-fetches after a recorded compaction (issue 45 item 2): every tool call after it (up to
//! the next recorded one) repeating a call made before it (same tool name, same arguments
//! JSON), split into *same result* (its response is the response of the latest such call
//! before the compaction: detail the agent had and obtained again) and *changed result* (a
//! new observation), with what the same-result ones cost: the tokens their call and result
//! added to every later prompt up to the next recorded compaction (or the session's end), on
//! the provider's scale, and those tokens' dollars at the session's prices.
//!
//! Pricing (src/cost/pricing.rs, the built-in table): each later model request carrying them
//! pays its own rate (tier by its recorded prompt): the first one the input rate (the cache
//! write rate where that request records cache writes), the later ones the cached-input rate
//! where the request records cache reads, else the input rate.

use std::ops::Range;

use serde::Serialize;

use crate::cost::pricing::PriceTable;
pub use crate::detail::refetch::{calls, repeats, Call, Repeat};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::{Part, Session};

/// The re-fetches after one recorded compaction.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Refetches {
    /// Calls in the window repeating one made before it.
    pub repeated: u64,
    /// Of those, the ones whose result is the latest earlier result of the same call.
    pub same_result: u64,
    /// Tokens the same-result ones (call and result) added to later prompts in the window.
    pub tokens: u64,
    /// Those tokens' dollars; `None` when the session's model is not priced.
    pub cost_usd: Option<f64>,
}

/// Tokens of part `part` of event `event` on `sizes`' scale: the event's tokens shared out over
/// its parts by their JSON length.
fn part_tokens(session: &Session, sizes: &SessionSizes, event: usize, part: usize) -> f64 {
    let Some(e) = session.events.get(event) else {
        return 0.0;
    };
    let len = |p: &Part| serde_json::to_string(p).map_or(0, |s| s.len());
    let all: usize = e.parts.iter().map(len).sum();
    let this = e.parts.get(part).map_or(0, len);
    let tokens = sizes.tokens.get(event).copied().unwrap_or(0) as f64;
    if all == 0 {
        0.0
    } else {
        tokens * this as f64 / all as f64
    }
}

/// What the same-result repeats in `window` cost: their tokens in every later model request
/// of the window, and those tokens' dollars at the session's prices.
pub fn refetches(
    session: &Session,
    sizes: &SessionSizes,
    prices: &PriceTable,
    calls: &[Call],
    window: &Range<usize>,
    found: &[Repeat],
) -> Refetches {
    let mut out = Refetches {
        repeated: found.len() as u64,
        same_result: found.iter().filter(|r| r.same_result).count() as u64,
        tokens: 0,
        cost_usd: Some(0.0),
    };
    if out.same_result == 0 {
        return out;
    }
    let end = window.end.min(session.events.len());
    // the window's model requests, each with its rate as the first to carry earlier tokens
    // and as a later one: priced once, whatever the repeats
    let requests: Vec<(usize, Option<f64>, Option<f64>)> = (window.start.min(end)..end)
        .filter(|&k| session.events[k].model_request)
        .map(|k| {
            let rate = |first| rate_at(session, prices, k, first);
            (k, rate(true), rate(false))
        })
        .collect();
    let (mut tokens, mut cost) = (0.0f64, Some(0.0f64));
    for r in found.iter().filter(|r| r.same_result) {
        let c = &calls[r.call];
        let Some((at, part, _)) = c.result else {
            continue;
        };
        let size =
            part_tokens(session, sizes, c.event, c.part) + part_tokens(session, sizes, at, part);
        let after = requests.partition_point(|&(k, _, _)| k <= at);
        for (n, &(_, first, later)) in requests[after..].iter().enumerate() {
            tokens += size;
            let rate = if n == 0 { first } else { later };
            cost = cost.zip(rate).map(|(c, r)| c + size * r / 1e6);
        }
    }
    out.tokens = tokens.round() as u64;
    out.cost_usd = cost.map(|c| (c * 1e6).round() / 1e6);
    out
}

/// USD per 1M prompt tokens at model request `k` for tokens it carries from earlier: `first`,
/// the first request to carry them (input, or cache write where it records writes); later
/// ones cached input where the request records cache reads. `None`: the model is unpriced.
fn rate_at(session: &Session, prices: &PriceTable, k: usize, first: bool) -> Option<f64> {
    let e = &session.events[k];
    let model = e.model.as_deref().or(session.model.as_deref())?;
    let (_, price) = prices.find(model)?;
    let usage = e.usage.unwrap_or_default();
    let (rates, _) = price.rates_for(usage.prompt_tokens)?;
    Some(if first {
        match rates.cache_write {
            Some(w) if usage.cache_write_tokens > 0 => w,
            _ => rates.input,
        }
    } else {
        match rates.cached_input {
            Some(c) if usage.cached_read_tokens > 0 => c,
            _ => rates.input,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Event, Format, Role, Usage};

    fn call(id: &str, name: &str, path: &str) -> Part {
        Part::ToolCall {
            id: Some(id.into()),
            name: name.into(),
            args: serde_json::json!({ "file_path": path }),
        }
    }

    fn result(id: &str, name: &str, text: &str) -> Part {
        Part::ToolResponse {
            id: Some(id.into()),
            name: name.into(),
            response: serde_json::json!({ "content": text }),
        }
    }

    fn event(role: Role, parts: Vec<Part>, prompt: Option<(u64, u64)>) -> Event {
        let mut e = Event::new(
            if role == Role::Model { "agent" } else { "user" },
            role,
            "i1",
            0.0,
        );
        e.parts = parts;
        if let Some((p, cached)) = prompt {
            e.model_request = true;
            e.model = Some("claude-sonnet-4-5".into());
            e.usage = Some(Usage {
                prompt_tokens: p,
                cached_read_tokens: cached,
                ..Usage::default()
            });
        }
        e
    }

    /// A session that reads `src/a.rs` (e0, e1) and `Cargo.toml`, is compacted before e4, then
    /// reads `src/a.rs` again (same result), and `Cargo.toml` again (changed), then answers
    /// twice (e8, e9).
    fn reread() -> Session {
        use Role::{Model, User};
        let events = vec![
            event(Model, vec![call("c1", "Read", "src/a.rs")], Some((1000, 0))),
            event(User, vec![result("c1", "Read", "fn a() {}")], None),
            event(
                Model,
                vec![call("c2", "Read", "Cargo.toml")],
                Some((1100, 900)),
            ),
            event(User, vec![result("c2", "Read", "[package] v1")], None),
            event(Model, vec![call("c3", "Read", "src/a.rs")], Some((500, 0))),
            event(User, vec![result("c3", "Read", "fn a() {}")], None),
            event(
                Model,
                vec![call("c4", "Read", "Cargo.toml")],
                Some((600, 400)),
            ),
            event(User, vec![result("c4", "Read", "[package] v2")], None),
            event(Model, vec![], Some((700, 600))),
            event(Model, vec![], Some((800, 700))),
        ];
        Session::new("s", "mem", Format::Canonical, events)
    }

    /// Issue 45: a hand-made session with one known re-read. Of the two repeated calls after
    /// the compaction, one returns what it returned before: 1 same-result re-fetch, whose
    /// call (event 4, 30 tokens) and result (event 5, 40 tokens) sit in the 3 later prompts
    /// (events 6, 8, 9): 210 tokens; at claude-sonnet-4-5's built-in prices, the first of
    /// them at the input rate, the other two (which record cache reads) at the cached rate.
    #[test]
    fn a_known_reread_is_one_same_result_refetch_with_its_tokens_and_dollars() {
        let s = reread();
        let mut sizes = SessionSizes::new(&s, None);
        sizes.tokens = vec![25, 35, 25, 35, 30, 40, 30, 40, 10, 10];
        let prices = PriceTable::builtin();
        let c = calls(&s);
        assert_eq!(c.len(), 4);
        assert!(c.iter().all(|c| c.result.is_some()));
        let r = refetches(
            &s,
            &sizes,
            &prices,
            &c,
            &(4..usize::MAX),
            &repeats(&c, &(4..usize::MAX)),
        );
        assert_eq!((r.repeated, r.same_result, r.tokens), (2, 1, 210));
        let (_, price) = prices.find("claude-sonnet-4-5").expect("priced");
        let (rates, _) = price.rates_for(600).unwrap();
        let cached = rates.cached_input.expect("a cached rate");
        let want = 70.0 * (rates.input + 2.0 * cached) / 1e6;
        let got = r.cost_usd.expect("priced");
        assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        assert!(got > 0.0);
        // Nothing repeats before the compaction's window starts at the first call.
        let none = refetches(
            &s,
            &sizes,
            &prices,
            &c,
            &(0..usize::MAX),
            &repeats(&c, &(0..usize::MAX)),
        );
        assert_eq!((none.repeated, none.same_result, none.tokens), (0, 0, 0));
        // A window ending before the later prompts: the re-fetch is there, it adds nothing.
        let short = refetches(&s, &sizes, &prices, &c, &(4..6), &repeats(&c, &(4..6)));
        assert_eq!((short.repeated, short.same_result, short.tokens), (1, 1, 0));
    }

    /// Responses without an id answer the earliest open call of their tool.
    #[test]
    fn responses_without_ids_answer_the_earliest_open_call_of_their_tool() {
        let mut s = reread();
        for e in &mut s.events {
            for p in &mut e.parts {
                match p {
                    Part::ToolCall { id, .. } | Part::ToolResponse { id, .. } => *id = None,
                    _ => {}
                }
            }
        }
        let c = calls(&s);
        let results: Vec<usize> = c
            .iter()
            .filter_map(|c| c.result.as_ref().map(|r| r.0))
            .collect();
        assert_eq!(results, vec![1, 3, 5, 7]);
        let r = repeats(&c, &(4..usize::MAX));
        assert_eq!(
            r,
            vec![
                Repeat {
                    call: 2,
                    earlier: 0,
                    same_result: true
                },
                Repeat {
                    call: 3,
                    earlier: 1,
                    same_result: false
                }
            ]
        );
    }
}
