//! SWE-agent trajectories (`.traj`): `{environment, trajectory[], history[], info}`.
//!
//! `history` is what the model saw, so it is the source: `system` → system event; the first
//! person message is the task (the one user turn); `assistant` → one model request;
//! observations → tool responses. Demonstrations (`is_demo`) are examples pasted into the
//! prompt, kept as system events. Function-calling runs carry `tool_calls` /
//! `tool_call_ids`; older runs write the command as `action` text and return the output as the
//! next `user` message, so the reader gives each such action a call id (`<stem>-action-N`)
//! and answers it with the observation. Without `history`, `trajectory` steps (`thought`,
//! `action`, `observation`) are used. No timestamps (synthesised, 1 s apart) and no
//! per-request usage (`info.model_stats` holds per-session totals only, not kept).

use serde_json::{Map, Value};

use super::{util, util::Ctx, Critical, Event, Format, Part, ReadError, Role, Session};

/// An object with `trajectory`, or with `history` holding role messages.
pub fn sniff(text: &str) -> bool {
    let Some(k) = util::scan::top_keys(text) else {
        return false;
    };
    if k.iter().any(|t| t == "trajectory") {
        return true;
    }
    k.iter().any(|t| t == "history")
        && util::scan::first_elem_keys_of(text, "history")
            .is_some_and(|e| e.iter().any(|x| x == "role"))
}

pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let cx = Ctx::new(file);
    let root = util::parse_json(file, text)?;
    let top = cx.obj(&root, "$")?;
    let stem = super::openai_chat::file_stem(file);
    let history = cx.opt_arr(top, "history", "$")?;
    let events = if !history.is_empty() {
        from_history(&cx, history, &stem)?
    } else {
        from_trajectory(&cx, cx.opt_arr(top, "trajectory", "$")?, &stem)?
    };
    Ok(vec![Session {
        id: stem,
        source: file.to_string(),
        format: Format::SweAgent,
        events,
        recorded_compactions: Vec::new(),
        model: model_name(top),
        synthetic_timestamps: true,
        approval_policies: Vec::new(),
        recorded_policy: None,
    }])
}

/// `replay_config.agent.model.name` when recorded (the config may be a JSON string).
fn model_name(top: &Map<String, Value>) -> Option<String> {
    let rc = top.get("replay_config")?;
    let parsed;
    let rc = match rc {
        Value::String(s) => {
            parsed = serde_json::from_str::<Value>(s).ok()?;
            &parsed
        }
        v => v,
    };
    let name = rc.get("agent")?.get("model")?.get("name")?.as_str()?;
    (!name.is_empty() && name != "replay").then(|| name.to_string())
}

/// The tool name of a command line: its first word.
fn command_name(action: &str) -> String {
    action
        .split_whitespace()
        .next()
        .unwrap_or("command")
        .to_string()
}

fn from_history(cx: &Ctx, history: &[Value], stem: &str) -> Result<Vec<Event>, ReadError> {
    let mut inv = util::Invocations::new();
    let mut events: Vec<Event> = Vec::with_capacity(history.len());
    let mut calls: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut had_task = false;
    // Old-format action waiting for its observation: (call id, name).
    let mut pending: Option<(String, String)> = None;
    for (i, msg) in history.iter().enumerate() {
        let mp = format!("$.history[{i}]");
        let m = cx.obj(msg, &mp)?;
        let role = cx.req_str(m, "role", &mp)?;
        let t = util::synthetic_time(i);
        let text = util::content_text(m.get("content"));
        let agent = cx.opt_str(m, "agent", &mp)?.unwrap_or("agent").to_string();
        let demo = matches!(m.get("is_demo"), Some(Value::Bool(true)));
        let ev = match role {
            "system" => text_event("system", Role::System, inv.current(), t, text),
            "user" if demo => text_event("demonstration", Role::System, inv.current(), t, text),
            "user" => match pending.take() {
                Some((id, name)) => {
                    let mut e = Event::new(agent.as_str(), Role::User, inv.current(), t);
                    if util::looks_like_tool_error(&text) {
                        e.critical.push(Critical::ToolError);
                    }
                    e.parts.push(Part::ToolResponse {
                        id: Some(id),
                        name,
                        response: Value::String(text),
                    });
                    e
                }
                None => {
                    // The task, or (rarely) a later message that answers no action.
                    let id = if had_task {
                        inv.current()
                    } else {
                        inv.user_turn()
                    };
                    had_task = true;
                    let mut e = text_event("user", Role::User, id, t, text);
                    e.critical = match e.parts.first() {
                        Some(Part::Text { text }) => util::user_text_flags(text),
                        _ => Vec::new(),
                    };
                    e
                }
            },
            "assistant" => {
                let mut e = Event::new(agent.as_str(), Role::Model, inv.current(), t);
                e.model_request = true;
                let tcs = cx.opt_arr(m, "tool_calls", &mp)?;
                if !tcs.is_empty() {
                    if !text.is_empty() {
                        e.parts.push(Part::Text { text });
                    }
                    for (j, c) in tcs.iter().enumerate() {
                        let (id, name, args) =
                            super::openai_chat::tool_call(cx, c, &format!("{mp}.tool_calls[{j}]"))?;
                        if let Some(id) = &id {
                            calls.insert(id.clone(), name.clone());
                        }
                        e.parts.push(Part::ToolCall { id, name, args });
                    }
                } else if let Some(action) = cx
                    .opt_str(m, "action", &mp)?
                    .filter(|a| !a.trim().is_empty())
                {
                    let thought = cx
                        .opt_str(m, "thought", &mp)?
                        .map(str::to_string)
                        .unwrap_or(text);
                    if !thought.is_empty() {
                        e.parts.push(Part::Text { text: thought });
                    }
                    let id = format!("{stem}-action-{i}");
                    let name = command_name(action);
                    e.parts.push(Part::ToolCall {
                        id: Some(id.clone()),
                        name: name.clone(),
                        args: serde_json::json!({ "command": action }),
                    });
                    pending = Some((id, name));
                } else if !text.is_empty() {
                    e.parts.push(Part::Text { text });
                }
                e
            }
            "tool" => {
                let ids: Vec<String> = match m.get("tool_call_ids") {
                    Some(Value::Array(a)) => a
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect(),
                    _ => match (cx.opt_str(m, "tool_call_id", &mp)?, &pending) {
                        (Some(id), _) => vec![id.to_string()],
                        (None, Some((id, _))) => vec![id.clone()],
                        (None, None) => Vec::new(),
                    },
                };
                pending = None;
                let mut e = Event::new(agent.as_str(), Role::Tool, inv.current(), t);
                if util::looks_like_tool_error(&text) {
                    e.critical.push(Critical::ToolError);
                }
                // A response without its call (ADK reads that; the loaders warn) has no
                // name, and no id when the message names none.
                if ids.is_empty() {
                    e.parts.push(Part::ToolResponse {
                        id: None,
                        name: String::new(),
                        response: Value::String(text.clone()),
                    });
                }
                for id in ids {
                    let name = calls.get(&id).cloned().unwrap_or_default();
                    e.parts.push(Part::ToolResponse {
                        id: Some(id),
                        name,
                        response: Value::String(text.clone()),
                    });
                }
                e
            }
            other => {
                return Err(cx.err(
                    format!("{mp}.role"),
                    format!("wrong shape: unknown role `{other}`"),
                ))
            }
        };
        events.push(ev);
    }
    Ok(events)
}

fn text_event(author: &str, role: Role, inv: String, t: f64, text: String) -> Event {
    let mut e = Event::new(author, role, inv, t);
    if !text.is_empty() {
        e.parts.push(Part::Text { text });
    }
    e
}

/// Without `history`: one model event (thought + action) and one observation per step.
fn from_trajectory(cx: &Ctx, steps: &[Value], stem: &str) -> Result<Vec<Event>, ReadError> {
    if steps.is_empty() {
        return Err(cx.err(
            "$",
            "wrong shape: neither `history` nor `trajectory` has entries",
        ));
    }
    let inv = "inv-1".to_string();
    let mut events = Vec::with_capacity(steps.len() * 2);
    for (i, step) in steps.iter().enumerate() {
        let sp = format!("$.trajectory[{i}]");
        let m = cx.obj(step, &sp)?;
        let mut e = Event::new(
            "agent",
            Role::Model,
            inv.clone(),
            util::synthetic_time(2 * i),
        );
        e.model_request = true;
        let thought = cx
            .opt_str(m, "thought", &sp)?
            .or(cx.opt_str(m, "response", &sp)?)
            .unwrap_or("");
        if !thought.is_empty() {
            e.parts.push(Part::Text {
                text: thought.to_string(),
            });
        }
        let action = cx.opt_str(m, "action", &sp)?.unwrap_or("");
        if action.trim().is_empty() {
            events.push(e);
            continue;
        }
        let id = format!("{stem}-step-{i}");
        let name = command_name(action);
        e.parts.push(Part::ToolCall {
            id: Some(id.clone()),
            name: name.clone(),
            args: serde_json::json!({ "command": action }),
        });
        events.push(e);
        if let Some(obs) = cx.opt_str(m, "observation", &sp)? {
            let mut r = Event::new(
                "agent",
                Role::User,
                inv.clone(),
                util::synthetic_time(2 * i + 1),
            );
            if util::looks_like_tool_error(obs) {
                r.critical.push(Critical::ToolError);
            }
            r.parts.push(Part::ToolResponse {
                id: Some(id),
                name,
                response: Value::String(obs.to_string()),
            });
            events.push(r);
        }
    }
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_format_actions_are_answered_by_the_next_user_message() {
        let text = r#"{"environment":"e","trajectory":[],"history":[
          {"role":"system","content":"SETTING"},
          {"role":"user","content":"demo","is_demo":true},
          {"role":"user","content":"ISSUE: fix it"},
          {"role":"assistant","content":"Look.\n```\nls -a\n```","thought":"Look.\n","action":"ls -a\n"},
          {"role":"user","content":"main.py"},
          {"role":"assistant","content":"done","thought":"done","action":"submit"}],"info":{}}"#;
        assert!(sniff(text));
        let s = &read("a/x.traj", text).unwrap()[0];
        assert_eq!(s.events.len(), 6);
        assert_eq!(s.events[1].role, Role::System);
        assert_eq!(s.events.iter().filter(|e| e.model_request).count(), 2);
        match &s.events[3].parts[1] {
            Part::ToolCall { id, name, .. } => {
                assert_eq!(name, "ls");
                assert_eq!(id.as_deref(), Some("x-action-3"));
            }
            p => panic!("{p:?}"),
        }
        assert!(
            matches!(&s.events[4].parts[0], Part::ToolResponse { id: Some(i), .. } if i == "x-action-3")
        );
        assert!(s.events.iter().all(|e| e.invocation_id == "inv-1"));
    }

    #[test]
    fn function_calling_tool_messages_without_their_calls_are_read_and_counted() {
        let text = r#"{"history":[{"role":"user","content":"task"},
          {"role":"tool","content":"x","tool_call_ids":["nope"]},
          {"role":"tool","content":"y"}]}"#;
        assert!(sniff(text));
        let s = &read("y.traj", text).unwrap()[0];
        assert_eq!(util::orphan_responses(&s.events), 2);
        assert!(
            matches!(&s.events[2].parts[0], Part::ToolResponse { id: None, name, .. } if name.is_empty())
        );
    }
}
