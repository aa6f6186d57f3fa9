//! τ²-bench results JSON: `{timestamp, info, tasks, simulations: [{id, task_id, trial,
//! messages: [...]}]}`, one session per simulation.
//!
//! Messages are `assistant` (one model request each, `usage.prompt_tokens` in OpenAI style,
//! which already includes cached tokens), `user` (the user simulator; it may call tools of its
//! own) and `tool` (`id` = the call it answers, `error` flag). Message timestamps are ISO
//! date-times without a zone, taken as UTC. The user simulator's own `usage` is not the
//! agent's and is ignored.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{util, util::Ctx, Critical, Event, Format, Part, ReadError, Role, Session, Usage};

/// An object with `simulations` plus τ²'s `tasks` or `info`.
pub fn sniff(text: &str) -> bool {
    util::scan::top_keys(text).is_some_and(|k| {
        let has = |x: &str| k.iter().any(|t| t == x);
        has("simulations") && (has("tasks") || has("info"))
    })
}

pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let cx = Ctx::new(file);
    let root = util::parse_json(file, text)?;
    let top = cx.obj(&root, "$")?;
    let sims = cx.arr(cx.field(top, "simulations", "$")?, "$.simulations")?;
    let model = top
        .get("info")
        .and_then(|i| i.get("agent_info"))
        .and_then(|a| a.get("llm"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut out = Vec::with_capacity(sims.len());
    for (i, sim) in sims.iter().enumerate() {
        out.push(simulation(
            &cx,
            sim,
            &format!("$.simulations[{i}]"),
            model.as_deref(),
        )?);
    }
    Ok(out)
}

fn simulation(
    cx: &Ctx,
    sim: &Value,
    path: &str,
    model: Option<&str>,
) -> Result<Session, ReadError> {
    let sm = cx.obj(sim, path)?;
    let msgs = cx.arr(cx.field(sm, "messages", path)?, &format!("{path}.messages"))?;
    let task = sm
        .get("task_id")
        .map(text_of)
        .unwrap_or_else(|| "task".into());
    let trial = sm.get("trial").map(text_of).unwrap_or_else(|| "0".into());
    let frag = format!("{task}/trial{trial}");
    let id = cx
        .opt_str(sm, "id", path)?
        .map(str::to_string)
        .unwrap_or_else(|| frag.clone());
    let start = cx.opt_time(sm, "start_time", path)?;

    // Timestamps first: all present (the norm), some missing (carry the previous one), or
    // none (synthesise).
    let times = cx.message_times(msgs, path)?;
    let synthetic = times.iter().all(Option::is_none);
    let first_known = times
        .iter()
        .flatten()
        .next()
        .copied()
        .or(start)
        .unwrap_or(util::SYNTHETIC_EPOCH_S);

    let mut turns = Turns {
        cx,
        model,
        inv: util::Invocations::new(),
        calls: HashMap::new(),
    };
    let mut events = Vec::with_capacity(msgs.len());
    let mut prev = f64::NEG_INFINITY;
    for (j, msg) in msgs.iter().enumerate() {
        let mp = format!("{path}.messages[{j}]");
        let m = cx.obj(msg, &mp)?;
        let t = if synthetic {
            util::synthetic_time(j)
        } else {
            times
                .get(j)
                .copied()
                .flatten()
                .unwrap_or(if prev.is_finite() { prev } else { first_known })
        };
        if t < prev {
            return Err(cx.out_of_order(&mp, t, prev));
        }
        prev = t;
        events.push(turns.event(m, &mp, t)?);
    }
    Ok(Session {
        model: model.map(str::to_string),
        synthetic_timestamps: synthetic,
        ..Session::new(id, format!("{}#{frag}", cx.file), Format::Tau2, events)
    })
}

/// A simulation's messages turned into events, one by one.
struct Turns<'a> {
    cx: &'a Ctx<'a>,
    /// The agent's model (`info.agent_info.llm`).
    model: Option<&'a str>,
    inv: util::Invocations,
    /// Tool names by call id, for the responses.
    calls: HashMap<String, String>,
}

impl Turns<'_> {
    /// The event of message `m` (at `mp`), at time `t`, by its role.
    fn event(&mut self, m: &Map<String, Value>, mp: &str, t: f64) -> Result<Event, ReadError> {
        let cx = self.cx;
        let role = cx.req_str(m, "role", mp)?;
        let text = util::content_text(m.get("content"));
        Ok(match role {
            "assistant" => {
                let mut e = Event::new("agent", Role::Model, self.inv.current(), t);
                e.model_request = true;
                e.model = self.model.map(str::to_string);
                e.usage = usage(cx, m, mp)?;
                push_text(&mut e, text);
                push_calls(cx, m, mp, &mut e, &mut self.calls)?;
                e
            }
            "user" => {
                // A person's turn when it says something; a user-simulator tool call alone
                // is an action inside the current turn.
                let inv_id = if text.trim().is_empty() {
                    self.inv.current()
                } else {
                    self.inv.user_turn()
                };
                let mut e = Event::new("user", Role::User, inv_id, t);
                e.critical = util::user_text_flags(&text);
                push_text(&mut e, text);
                push_calls(cx, m, mp, &mut e, &mut self.calls)?;
                e
            }
            "tool" => {
                let cid = cx.req_str(m, "id", mp)?;
                // Without its call (ADK reads that; the loaders warn), it has no name.
                let name = self.calls.get(cid).cloned().unwrap_or_default();
                let mut e = Event::new("tool", Role::Tool, self.inv.current(), t);
                let is_err = matches!(m.get("error"), Some(Value::Bool(true)));
                if is_err || util::looks_like_tool_error(&text) {
                    e.critical.push(Critical::ToolError);
                }
                e.parts.push(Part::ToolResponse {
                    id: Some(cid.to_string()),
                    name,
                    response: Value::String(text),
                });
                e
            }
            "system" => {
                let mut e = Event::new("system", Role::System, self.inv.current(), t);
                push_text(&mut e, text);
                e
            }
            other => {
                return Err(cx.err(
                    format!("{mp}.role"),
                    format!("wrong shape: unknown role `{other}`"),
                ))
            }
        })
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

fn push_text(e: &mut Event, text: String) {
    if !text.is_empty() {
        e.parts.push(Part::Text { text });
    }
}

/// `tool_calls: [{id, name, arguments, requestor}]`.
fn push_calls(
    cx: &Ctx,
    m: &Map<String, Value>,
    mp: &str,
    e: &mut Event,
    calls: &mut HashMap<String, String>,
) -> Result<(), ReadError> {
    for (k, c) in cx.opt_arr(m, "tool_calls", mp)?.iter().enumerate() {
        let cp = format!("{mp}.tool_calls[{k}]");
        let (id, name, args) = super::openai_chat::tool_call(cx, c, &cp)?;
        if let Some(id) = &id {
            calls.insert(id.clone(), name.clone());
        }
        e.parts.push(Part::ToolCall { id, name, args });
    }
    Ok(())
}

/// `usage: {prompt_tokens, completion_tokens, prompt_tokens_details?: {cached_tokens}}`.
fn usage(cx: &Ctx, m: &Map<String, Value>, mp: &str) -> Result<Option<Usage>, ReadError> {
    let Some(u) = m.get("usage").filter(|u| !u.is_null()) else {
        return Ok(None);
    };
    let up = format!("{mp}.usage");
    let um = cx.obj(u, &up)?;
    let cached = match um.get("prompt_tokens_details").and_then(Value::as_object) {
        Some(d) => cx
            .opt_tokens(d, "cached_tokens", &format!("{up}.prompt_tokens_details"))?
            .unwrap_or(0),
        None => 0,
    };
    Ok(Some(Usage {
        prompt_tokens: cx.opt_tokens(um, "prompt_tokens", &up)?.unwrap_or(0),
        cached_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: cx.opt_tokens(um, "completion_tokens", &up)?.unwrap_or(0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"timestamp":"x","info":{"agent_info":{"llm":"gemma"}},"tasks":[],"simulations":[
      {"id":"sim1","task_id":"t1","trial":0,"messages":[
        {"role":"assistant","content":"Hi!","tool_calls":null,"timestamp":"2026-04-05T23:38:13.7","usage":null},
        {"role":"user","content":"Okay, pay","timestamp":"2026-04-05T23:38:14","usage":{"prompt_tokens":5}},
        {"role":"user","content":null,"tool_calls":[{"id":"u1","name":"pay","arguments":{},"requestor":"user"}],"timestamp":"2026-04-05T23:38:15"},
        {"role":"tool","id":"u1","content":"Error: bad","error":true,"requestor":"user","timestamp":"2026-04-05T23:38:15"},
        {"role":"assistant","content":"Done","timestamp":"2026-04-05T23:38:16","usage":{"prompt_tokens":400,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":100}}}
      ]}]}"#;

    #[test]
    fn reads_a_simulation() {
        assert!(sniff(SAMPLE));
        let s = &read("r.json", SAMPLE).unwrap()[0];
        assert_eq!(s.source, "r.json#t1/trial0");
        assert_eq!(s.model.as_deref(), Some("gemma"));
        assert_eq!(s.events.len(), 5);
        // The greeting belongs to the first turn; the tool-only user message does not open one.
        assert!(s.events.iter().all(|e| e.invocation_id == "inv-1"));
        assert_eq!(s.events[1].critical, vec![Critical::Confirmation]);
        assert_eq!(s.events[3].critical, vec![Critical::ToolError]);
        assert_eq!(
            s.events[1].usage, None,
            "user-simulator usage is not the agent's"
        );
        let u = s.events[4].usage.unwrap();
        assert_eq!((u.prompt_tokens, u.cached_read_tokens), (400, 100));
        assert!((s.events[1].timestamp - s.events[0].timestamp - 0.3).abs() < 1e-6);
        assert!(!s.synthetic_timestamps);
    }

    #[test]
    fn out_of_order_is_an_error_and_orphans_are_read() {
        let bad = SAMPLE.replace("23:38:16", "23:38:10");
        let e = read("r.json", &bad).unwrap_err();
        assert_eq!(e.location, "$.simulations[0].messages[4].timestamp");
        let bad = SAMPLE.replace(r#""id":"u1","content""#, r#""id":"zz","content""#);
        let s = &read("r.json", &bad).unwrap()[0];
        assert_eq!(util::orphan_responses(&s.events), 1);
    }
}
