//! Repeated tool calls (issue 45): every tool call of a session with the response that
//! answered it, and the calls after a recorded compaction repeating one made before it (same
//! tool name, same arguments JSON), split into *same result* (detail the agent had and
//! obtained again) and *changed result* (a new observation). Here, below the detail measure,
//! because a same-result re-fetch's response re-obtains what the compaction lost: a fact the
//! agent then uses from it was at risk (`references::RecordedCut::hidden`). What they cost is
//! priced in `backtest::refetch`.

use std::collections::HashMap;
use std::ops::Range;

use crate::transcript::{Part, Session};

/// One tool call of a session and the response that answered it.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The model event making it, and the part.
    pub event: usize,
    pub part: usize,
    pub name: String,
    /// The arguments as JSON.
    pub args: String,
    /// The answering response: event, part, and the response as JSON.
    pub result: Option<(usize, usize, String)>,
}

/// Every tool call of `session` in event order, each with the response that answered it: the
/// response with its id, else (responses without one) the earliest unanswered call of its
/// tool name.
pub fn calls(session: &Session) -> Vec<Call> {
    let mut out: Vec<Call> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for (k, e) in session.events.iter().enumerate() {
        for (j, p) in e.parts.iter().enumerate() {
            match p {
                Part::ToolCall { id, name, args } => {
                    if let Some(id) = id {
                        ids.insert(id.as_str(), out.len());
                    }
                    open.push(out.len());
                    out.push(Call {
                        event: k,
                        part: j,
                        name: name.clone(),
                        args: args.to_string(),
                        result: None,
                    });
                }
                Part::ToolResponse { id, name, response } => {
                    let by_id = id.as_deref().and_then(|i| ids.remove(i));
                    let call = by_id.or_else(|| {
                        open.iter()
                            .copied()
                            .find(|&c| out[c].result.is_none() && out[c].name == *name)
                    });
                    if let Some(c) = call.filter(|&c| out[c].result.is_none()) {
                        out[c].result = Some((k, j, response.to_string()));
                        open.retain(|&o| o != c);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// A repeated call of a window: its index in [`calls`], and whether its result is the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repeat {
    pub call: usize,
    /// The latest call before the window it repeats.
    pub earlier: usize,
    pub same_result: bool,
}

/// The calls in `window` (event indices) repeating a call made before `window.start`.
pub fn repeats(calls: &[Call], window: &Range<usize>) -> Vec<Repeat> {
    // per (name, args): the latest call before the window
    let mut before: HashMap<(&str, &str), usize> = HashMap::new();
    for (i, c) in calls.iter().enumerate() {
        if c.event < window.start {
            before.insert((c.name.as_str(), c.args.as_str()), i);
        }
    }
    calls
        .iter()
        .enumerate()
        .filter(|(_, c)| window.contains(&c.event))
        .filter_map(|(i, c)| {
            let &earlier = before.get(&(c.name.as_str(), c.args.as_str()))?;
            let (now, then) = (&c.result, &calls[earlier].result);
            let same = matches!((now, then), (Some(a), Some(b)) if a.2 == b.2);
            Some(Repeat {
                call: i,
                earlier,
                same_result: same,
            })
        })
        .collect()
}

/// The events whose every part is the response of one of `repeats` (a window's, [`repeats`])
/// that returned the same result as the call it repeats, whose response event is `lost` (the
/// compactions forgot it): what the agent obtained again of what the compaction lost. A
/// fact the agent then uses from such a response was held, before it, only by the forgotten
/// events: the response is not a holder that spares the reference
/// (`references::RecordedCut::hidden`). An event holding anything else stays a holder, whole.
pub fn reobtained(
    session: &Session,
    calls: &[Call],
    repeats: &[Repeat],
    lost: impl Fn(usize) -> bool,
) -> Vec<u32> {
    let mut parts: HashMap<usize, usize> = HashMap::new();
    for r in repeats.iter().filter(|r| r.same_result) {
        let then = calls[r.earlier].result.as_ref().map(|x| x.0);
        if let (Some((at, _, _)), Some(then)) = (&calls[r.call].result, then) {
            if lost(then) {
                *parts.entry(*at).or_default() += 1;
            }
        }
    }
    let mut out: Vec<u32> = parts
        .into_iter()
        .filter(|&(e, n)| session.events.get(e).is_some_and(|ev| ev.parts.len() == n))
        .map(|(e, _)| e as u32)
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Event, Format, Role};

    fn event(role: Role, parts: Vec<Part>) -> Event {
        let mut e = Event::new("a", role, "i1", 0.0);
        e.parts = parts;
        e
    }

    fn read(id: &str, path: &str) -> Part {
        Part::ToolCall {
            id: Some(id.into()),
            name: "Read".into(),
            args: serde_json::json!({ "file_path": path }),
        }
    }

    fn result(id: &str, out: &str) -> Part {
        Part::ToolResponse {
            id: Some(id.into()),
            name: "Read".into(),
            response: serde_json::json!({ "content": out }),
        }
    }

    /// Reads of a.rs and b.rs (events 0-3), then after a compaction at event 4: a.rs again
    /// (same result, event 5), b.rs again (changed, event 7), and a.rs once more in an event
    /// that also answers another call (event 9).
    fn session() -> Session {
        use Role::{Model, User};
        let events = vec![
            event(Model, vec![read("c1", "a.rs")]),
            event(User, vec![result("c1", "A")]),
            event(Model, vec![read("c2", "b.rs")]),
            event(User, vec![result("c2", "B")]),
            event(Model, vec![read("c3", "a.rs")]),
            event(User, vec![result("c3", "A")]),
            event(Model, vec![read("c4", "b.rs")]),
            event(User, vec![result("c4", "B2")]),
            event(Model, vec![read("c5", "a.rs"), read("c6", "c.rs")]),
            event(User, vec![result("c5", "A"), result("c6", "C")]),
        ];
        Session::new("s", "mem", Format::Canonical, events)
    }

    /// Only a response re-obtaining what the forgotten events held, alone in its event, is
    /// re-obtained: not a changed result, not one beside another response, not one whose
    /// earlier response is still in view.
    #[test]
    fn only_a_same_result_response_of_a_forgotten_call_alone_in_its_event_is_reobtained() {
        let s = session();
        let c = calls(&s);
        let window = 4..usize::MAX;
        let r = repeats(&c, &window);
        assert_eq!(reobtained(&s, &c, &r, |e| e <= 3), vec![5]);
        // the earlier a.rs response (event 1) in view: nothing was lost
        let none: Vec<u32> = Vec::new();
        assert_eq!(reobtained(&s, &c, &r, |e| (2..=3).contains(&e)), none);
        assert_eq!(reobtained(&s, &c, &r, |_| false), none);
        let same: Vec<usize> = r.iter().filter(|r| r.same_result).map(|r| r.call).collect();
        assert_eq!(
            same,
            vec![2, 4],
            "the re-read at event 9 is a same result too"
        );
    }
}
