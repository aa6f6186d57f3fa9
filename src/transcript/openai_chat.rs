//! OpenAI chat message lists, as τ-bench records them.
//!
//! Accepted shapes: a τ-bench results array (`[{task_id, trial, traj: [messages]}, …]`, one
//! session per task/trial), a bare message array, or an object with `messages`/`traj`.
//! Each assistant message is one model request; `tool_calls` carry ids that `tool` messages
//! answer. These logs have no timestamps or usage, so times are synthesised (1 s apart).

use serde_json::{Map, Value};

use super::{util, util::Ctx, Critical, Event, Format, Part, ReadError, Role, Session};

const ROLES: [&str; 5] = ["system", "user", "assistant", "tool", "developer"];

fn is_message_keys(keys: &[String]) -> bool {
    keys.iter().any(|k| k == "role")
        && !keys
            .iter()
            .any(|k| k == "author" || k == "type" || k == "turn_idx")
}

/// A τ-bench array (elements with `traj`), a message array, or `{messages: [...]}`.
pub fn sniff(text: &str) -> bool {
    if let Some(keys) = util::scan::first_elem_keys(text) {
        return keys.iter().any(|k| k == "traj") || is_message_keys(&keys);
    }
    if let Some(top) = util::scan::top_keys(text) {
        let has = |k: &str| top.iter().any(|t| t == k);
        // Gemini CLI (`sessionId`) and τ² (`simulations`) also hold `messages`.
        if has("sessionId") || has("simulations") || has("history") {
            return false;
        }
        for key in ["messages", "traj"] {
            if has(key) {
                if let Some(k) = util::scan::first_elem_keys_of(text, key) {
                    return is_message_keys(&k);
                }
            }
        }
    }
    false
}

pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let cx = Ctx::new(file);
    let root = util::parse_json(file, text)?;
    let stem = file_stem(file);
    match &root {
        Value::Array(items) => {
            let first_is_run = items
                .first()
                .and_then(Value::as_object)
                .is_some_and(|m| m.contains_key("traj"));
            if first_is_run {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let path = format!("$[{i}]");
                    let m = cx.obj(item, &path)?;
                    let traj = cx.arr(cx.field(m, "traj", &path)?, &format!("{path}.traj"))?;
                    let task = m
                        .get("task_id")
                        .map(id_text)
                        .unwrap_or_else(|| i.to_string());
                    let trial = m.get("trial").map(id_text).unwrap_or_else(|| "0".into());
                    let frag = format!("task{task}/trial{trial}");
                    out.push(session(
                        &cx,
                        traj,
                        &format!("{path}.traj"),
                        format!("{stem}#{frag}"),
                        format!("{file}#{frag}"),
                    )?);
                }
                Ok(out)
            } else {
                Ok(vec![session(
                    &cx,
                    items,
                    "$",
                    stem.clone(),
                    file.to_string(),
                )?])
            }
        }
        Value::Object(m) => {
            let (key, v) = ["messages", "traj"]
                .iter()
                .find_map(|k| m.get(*k).map(|v| (*k, v)))
                .ok_or_else(|| {
                    cx.err(
                        "$",
                        "wrong shape: expected `messages` or `traj` (OpenAI chat messages)",
                    )
                })?;
            let path = format!("$.{key}");
            let msgs = cx.arr(v, &path)?;
            let id = m
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or(stem);
            Ok(vec![session(&cx, msgs, &path, id, file.to_string())?])
        }
        v => Err(cx.err(
            "$",
            format!(
                "wrong shape: expected an array or object, found {}",
                util::kind(v)
            ),
        )),
    }
}

fn id_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The file name without folders or extension, for session ids.
pub(crate) fn file_stem(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    match name.rsplit_once('.') {
        Some((s, _)) if !s.is_empty() => s.to_string(),
        _ => name.to_string(),
    }
}

/// One session from a message list.
fn session(
    cx: &Ctx,
    msgs: &[Value],
    path: &str,
    id: String,
    source: String,
) -> Result<Session, ReadError> {
    let mut inv = util::Invocations::new();
    let mut events: Vec<Event> = Vec::with_capacity(msgs.len());
    let mut paths: Vec<String> = Vec::with_capacity(msgs.len());
    // call id → tool name, to name responses and reject orphans.
    let mut calls: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut model: Option<String> = None;
    for (i, msg) in msgs.iter().enumerate() {
        let mp = format!("{path}[{i}]");
        let m = cx.obj(msg, &mp)?;
        let role = cx.req_str(m, "role", &mp)?;
        if !ROLES.contains(&role) {
            return Err(cx.err(
                format!("{mp}.role"),
                format!("wrong shape: unknown role `{role}`"),
            ));
        }
        let t = util::synthetic_time(i);
        let text = util::content_text(m.get("content"));
        let ev = match role {
            "system" | "developer" => {
                let mut e = Event::new("system", Role::System, inv.current(), t);
                push_text(&mut e, text);
                e
            }
            "user" => {
                let mut e = Event::new("user", Role::User, inv.user_turn(), t);
                e.critical = util::user_text_flags(&text);
                push_text(&mut e, text);
                e
            }
            "assistant" => {
                let mut e = Event::new("assistant", Role::Model, inv.current(), t);
                e.model_request = true;
                if let Some(name) = cx.opt_str(m, "model", &mp)? {
                    e.model = Some(name.to_string());
                    model.get_or_insert_with(|| name.to_string());
                }
                push_text(&mut e, text);
                for (j, c) in cx.opt_arr(m, "tool_calls", &mp)?.iter().enumerate() {
                    let cp = format!("{mp}.tool_calls[{j}]");
                    let (cid, name, args) = tool_call(cx, c, &cp)?;
                    if let Some(cid) = &cid {
                        calls.insert(cid.clone(), name.clone());
                    }
                    e.parts.push(Part::ToolCall {
                        id: cid,
                        name,
                        args,
                    });
                }
                e
            }
            _ => {
                let cid = cx.req_str(m, "tool_call_id", &mp)?;
                // Without its call (ADK reads that; the loaders warn), the name is the
                // message's own, else none.
                let called = calls.get(cid).map(String::as_str).unwrap_or("");
                let name = cx.opt_str(m, "name", &mp)?.unwrap_or(called).to_string();
                let mut e = Event::new("tool", Role::Tool, inv.current(), t);
                if util::looks_like_tool_error(&text) {
                    e.critical.push(Critical::ToolError);
                }
                e.parts.push(Part::ToolResponse {
                    id: Some(cid.to_string()),
                    name,
                    response: Value::String(text),
                });
                e
            }
        };
        events.push(ev);
        paths.push(mp);
    }
    util::validate_events(cx.file, &events, |i| {
        paths.get(i).cloned().unwrap_or_default()
    })?;
    Ok(Session {
        model,
        synthetic_timestamps: true,
        ..Session::new(id, source, Format::OpenaiChat, events)
    })
}

fn push_text(e: &mut Event, text: String) {
    if !text.is_empty() {
        e.parts.push(Part::Text { text });
    }
}

/// `{id, type: "function", function: {name, arguments}}` (or flat `{id, name, arguments}`).
pub(crate) fn tool_call(
    cx: &Ctx,
    c: &Value,
    cp: &str,
) -> Result<(Option<String>, String, Value), ReadError> {
    let cm: &Map<String, Value> = cx.obj(c, cp)?;
    let id = cx.opt_str(cm, "id", cp)?.map(str::to_string);
    let (fm, fp) = match cm.get("function") {
        Some(f) => {
            let fp = format!("{cp}.function");
            (cx.obj(f, &fp)?, fp)
        }
        None => (cm, cp.to_string()),
    };
    let name = cx.req_str(fm, "name", &fp)?.to_string();
    Ok((id, name, util::parse_args(fm.get("arguments"))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::Critical;

    #[test]
    fn reads_a_bare_message_list() {
        let text = r#"[{"role":"system","content":"policy"},{"role":"user","content":"Yes, book it"},
            {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"book","arguments":"{\"x\":1}"}}]},
            {"role":"tool","tool_call_id":"c1","name":"book","content":"Error: no seats"},
            {"role":"assistant","content":"Sorry"},{"role":"user","content":"no"}]"#;
        assert!(sniff(text));
        let s = &read("dir/chat.json", text).unwrap()[0];
        assert_eq!(s.id, "chat");
        assert_eq!(s.events.len(), 6);
        assert_eq!(s.events[0].invocation_id, "inv-1");
        assert_eq!(s.events[5].invocation_id, "inv-2");
        assert_eq!(s.events.iter().filter(|e| e.model_request).count(), 2);
        assert_eq!(s.events[1].critical, vec![Critical::Confirmation]);
        assert_eq!(s.events[3].critical, vec![Critical::ToolError]);
        assert_eq!(s.events[5].critical, vec![Critical::Refusal]);
        match &s.events[2].parts[0] {
            Part::ToolCall { args, .. } => assert_eq!(args, &serde_json::json!({"x": 1})),
            p => panic!("{p:?}"),
        }
        assert!(s.synthetic_timestamps);
    }

    #[test]
    fn a_tool_message_without_its_call_is_read_and_counted() {
        let text =
            r#"[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"zz","content":"x"}]"#;
        let s = &read("f.json", text).unwrap()[0];
        assert!(
            matches!(&s.events[1].parts[0], Part::ToolResponse { id: Some(i), name, .. } if i == "zz" && name.is_empty())
        );
        assert_eq!(util::orphan_responses(&s.events), 1);
        let e = read("f.json", r#"[{"role":"robot"}]"#).unwrap_err();
        assert_eq!(e.location, "$[0].role");
    }
}
