//! Hand-made sessions shared by the backtest's tests and the sweep's (the sweep may use the
//! backtest, not the reverse, so the one copy lives here).

use crate::transcript::{Event, Format, Part, Role, Session};

/// "please look at the logs", then `rounds` × (a model request calling `read` on `f{i}`, its
/// result `{"out": out(i)}`): the shape of a tool-reading agent, one request a round.
pub(crate) fn read_rounds(rounds: usize, out: impl Fn(usize) -> String) -> Session {
    let mut events = Vec::new();
    let mut u = Event::new("user", Role::User, "i1", 0.0);
    u.parts.push(Part::Text {
        text: "please look at the logs".into(),
    });
    events.push(u);
    for i in 0..rounds {
        let t = 1.0 + i as f64;
        let mut m = Event::new("agent", Role::Model, "i1", t);
        m.model_request = true;
        m.parts.push(Part::ToolCall {
            id: Some(format!("c{i}")),
            name: "read".into(),
            args: serde_json::json!({"file": format!("f{i}")}),
        });
        events.push(m);
        let mut r = Event::new("agent", Role::User, "i1", t + 0.5);
        r.parts.push(Part::ToolResponse {
            id: Some(format!("c{i}")),
            name: "read".into(),
            response: serde_json::json!({"out": out(i)}),
        });
        events.push(r);
    }
    Session::new("s", "s.jsonl", Format::ClaudeCode, events)
}
