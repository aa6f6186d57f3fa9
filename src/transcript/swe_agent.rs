//! SWE-agent trajectories (`.traj`): `{environment, trajectory[], history[], info}`.
//!
//! `history` is what the model saw, so it is the source: `system` → system event; the first
//! person message is the task (the one user turn); `assistant` → one model request;
//! observations → tool responses. Demonstrations (`is_demo`) are examples pasted into the
//! prompt, kept as system events. Function-calling runs carry `tool_calls` /
//! `tool_call_ids`; older runs write the command as `action` text and return the output as the
//! next `user` message, so the reader gives each such action a call id (`<stem>-action-N`)
//! and answers it with the observation. Without `history`, `trajectory` steps (`thought`,
//! `action`, `observation`) are used; with it, the steps after the last one `history` holds
//! (a final `submit` call) are appended, so both forms read the same calls. No timestamps (synthesised, 1 s apart) and no
//! per-request usage: `info.model_stats` holds per-session totals only (`tokens_sent`,
//! `api_calls`), kept beside the recorded config's `agent.history_processors` in the session's
//! `recorded_policy`, where the backtest compares them with the as-recorded replay.

use serde_json::{Map, Value};

use super::{
    util, util::Ctx, Critical, Event, Format, HistoryProcessor, ModelStats, Part, PolicyRule,
    ReadError, RecordedPolicy, Role, Session,
};

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
        let mut events = from_history(&cx, history, &stem)?;
        let inv = events
            .last()
            .map_or_else(|| "inv-1".to_string(), |e| e.invocation_id.clone());
        let steps = cx.opt_arr(top, "trajectory", "$")?;
        trailing_steps(&cx, history, steps, &stem, &inv, &mut events)?;
        events
    } else {
        from_trajectory(&cx, cx.opt_arr(top, "trajectory", "$")?, &stem)?
    };
    let agent = agent_config(top);
    let mut notes = Vec::new();
    let stats = model_stats(top)
        .unwrap_or_else(|note| {
            notes.push(format!("{file}: {note}"));
            None
        })
        .map(|s| ModelStats {
            custom_tokenizer: custom_tokenizer(agent.as_ref()),
            ..s
        });
    let policy = match agent.as_ref() {
        Some(agent) => recorded_policy(agent, stats).map(|mut p| {
            p.versions.extend(swe_agent_version(top));
            p
        }),
        None => zero_x_policy(history, stats),
    };
    Ok(vec![Session {
        model: model_name(agent.as_ref()),
        synthetic_timestamps: true,
        recorded_policy: policy,
        notes,
        ..Session::new(stem, file, Format::SweAgent, events)
    }])
}

/// `replay_config.agent`, the config the run was made with (the config may be a JSON
/// string).
fn agent_config(top: &Map<String, Value>) -> Option<Value> {
    let rc = top.get("replay_config")?;
    let rc = match rc {
        Value::String(s) => serde_json::from_str::<Value>(s).ok()?,
        v => v.clone(),
    };
    match rc {
        Value::Object(mut m) => m.remove("agent"),
        _ => None,
    }
}

/// `info.swe_agent_version` (1.x `sweagent/agent/agents.py` writes it), when recorded: which
/// litellm its `tokens_sent` was counted with depends on it (`backtest::litellm`).
fn swe_agent_version(top: &Map<String, Value>) -> Option<String> {
    let v = top.get("info")?.get("swe_agent_version")?.as_str()?.trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// Whether the config names `agent.model.custom_tokenizer` (SWE-agent counts `tokens_sent` on
/// it then: HEAD `models.py` `LiteLLMModel._single_query`).
fn custom_tokenizer(agent: Option<&Value>) -> bool {
    agent
        .and_then(|a| a.get("model"))
        .and_then(|m| m.get("custom_tokenizer"))
        .is_some_and(|t| !t.is_null())
}

/// `agent.model.name` when recorded.
fn model_name(agent: Option<&Value>) -> Option<String> {
    let name = agent?.get("model")?.get("name")?.as_str()?;
    (!name.is_empty() && name != "replay").then(|| name.to_string())
}

/// `info.model_stats` when it records `tokens_sent`; what is wrong when `tokens_sent` or
/// `api_calls` is not a whole number from 0 to 2^53 (`-1`, `2^64`, `"abc"`): then the
/// recorded totals are not used (the comparison with them is not made, and says why).
fn model_stats(top: &Map<String, Value>) -> Result<Option<ModelStats>, util::BadNumber> {
    let Some(stats) = top.get("info").and_then(|i| i.get("model_stats")) else {
        return Ok(None);
    };
    let count = |k: &str| -> Result<Option<u64>, util::BadNumber> {
        match stats.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(x) => x
                .as_u64()
                .filter(|n| *n <= super::MAX_TOKENS)
                .map(Some)
                .ok_or_else(|| {
                    util::BadNumber(format!(
                        "info.model_stats.{k}: {} is not a whole number from 0 to 2^53; the \
                         recorded model_stats are not used",
                        util::one_line(&x.to_string(), 40)
                    ))
                }),
        }
    };
    let (tokens_sent, api_calls) = (count("tokens_sent")?, count("api_calls")?);
    Ok(tokens_sent.map(|tokens_sent| ModelStats {
        tokens_sent,
        api_calls: api_calls.unwrap_or(0),
        custom_tokenizer: false,
    }))
}

/// `agent.history_processors` (or the older single `agent.history_processor`) when recorded:
/// what SWE-agent did to the history before each request (`sweagent/agent/history_processors.py`). `last_n_observations` with the default
/// `polling` of 1 is modelled (masking window `n`; its `always_remove_output_for_tags` /
/// `always_keep_output_for_tags` act on tagged observations, which the corpus runs do not
/// have, and are not modelled); with another polling, or any other processor, it is named and
/// not modelled.
fn recorded_policy(agent: &Value, model_stats: Option<ModelStats>) -> Option<RecordedPolicy> {
    // SWE-agent 1.0 configs hold one `history_processor`; later ones a list.
    let (key, list) = match (
        agent.get("history_processors"),
        agent.get("history_processor"),
    ) {
        (Some(Value::Array(a)), _) => ("history_processors", a.as_slice()),
        (_, Some(one @ Value::Object(_))) => ("history_processor", std::slice::from_ref(one)),
        _ => return None,
    };
    let processors = list
        .iter()
        .map(|p| {
            let name = p.get("type").and_then(Value::as_str).unwrap_or("");
            let n = p.get("n").and_then(Value::as_u64);
            let polling = p.get("polling").map_or(Some(1), Value::as_u64);
            match (name, n, polling) {
                ("last_n_observations", Some(n), Some(1)) => {
                    HistoryProcessor::LastNObservations { n }
                }
                _ => HistoryProcessor::Other {
                    name: name.to_string(),
                    params: p.to_string(),
                },
            }
        })
        .collect();
    Some(RecordedPolicy {
        source: format!("{ONE_X_SOURCE}.agent.{key}"),
        versions: Vec::new(),
        rule: PolicyRule::SweAgent {
            processors,
            model_stats,
        },
    })
}

/// How a 1.x run's policy source starts: read from the config it records.
const ONE_X_SOURCE: &str = "swe-agent replay_config";
/// How a 0.x run's policy source starts: its default config's, assumed.
const ZERO_X_SOURCE: &str = "swe-agent 0.x default config";

/// The SWE-agent line whose rule `session` was read with: `1.x` (it records its config,
/// `replay_config`), `0.x` (it records none, [`zero_x_policy`]), `None` where no rule was
/// read (not SWE-agent's, or a run that called no model).
pub fn recorded_line(session: &Session) -> Option<&'static str> {
    let source = &session.recorded_policy.as_ref()?.source;
    if source.starts_with(ONE_X_SOURCE) {
        Some("1.x")
    } else if source.starts_with(ZERO_X_SOURCE) {
        Some("0.x")
    } else {
        None
    }
}

/// Text of SWE-agent's 0.x instance template before typo fixes 93c65549 and 67729283
/// (2024-04-18, "succesfully runs", "doensn't work"): the release that still carries them
/// (v0.1.0-v0.2.0) ran `config/default.yaml` with `DefaultHistoryProcessor`; commit 08e66863
/// (2024-04-21, first released in v0.3.0) switched that config to `Last5Observations`.
const PRE_V0_3_TEMPLATE: [&str; 2] = ["succesfully runs", "doensn't work"];

/// A SWE-agent 0.x run: it records no `replay_config` and its `history` messages carry no
/// `message_type` (1.x writes one on every message). Its history processor is then the 0.x
/// default config's (`config/default.yaml`, `history_processor`): `Last5Observations`
/// (0.x `sweagent/agent/history_processors.py` `last_n_history`, n = 5: every non-demo
/// `user` message but the first and the last 5 replaced by "Old output omitted (N lines)",
/// which the masking window 5 replays) from v0.3.0 to v0.7.0, `DefaultHistoryProcessor`
/// (nothing) in v0.1.0-v0.2.0, told apart by the instance template's text
/// ([`PRE_V0_3_TEMPLATE`]). Only a run that called a model (`tokens_sent` > 0) gets one: a
/// demonstration replayed without a model records no setting it ran with.
fn zero_x_policy(history: &[Value], model_stats: Option<ModelStats>) -> Option<RecordedPolicy> {
    let stats = model_stats.filter(|s| s.tokens_sent > 0)?;
    if history.is_empty() || history.iter().any(|m| m.get("message_type").is_some()) {
        return None;
    }
    let task = history
        .iter()
        .find(|m| {
            m.get("role").and_then(Value::as_str) == Some("user")
                && m.get("is_demo") != Some(&Value::Bool(true))
        })
        .map(|m| util::content_text(m.get("content")))
        .unwrap_or_default();
    let early = PRE_V0_3_TEMPLATE.iter().any(|t| task.contains(t));
    let (versions, source, processors) = if early {
        (
            "0.1.0-0.2.0",
            "swe-agent 0.x default config (v0.1.0-v0.2.0 config/default.yaml: \
             DefaultHistoryProcessor)",
            Vec::new(),
        )
    } else {
        (
            "0.3.0-0.7.0",
            "swe-agent 0.x default config (v0.3.0-v0.7.0 config/default.yaml: \
             Last5Observations)",
            vec![HistoryProcessor::LastNObservations { n: 5 }],
        )
    };
    Some(RecordedPolicy {
        source: source.to_string(),
        versions: vec![versions.to_string()],
        rule: PolicyRule::SweAgent {
            processors,
            model_stats: Some(stats),
        },
    })
}

/// The tool name of a command line: its first word.
fn command_name(action: &str) -> String {
    action
        .split_whitespace()
        .next()
        .unwrap_or("command")
        .to_string()
}

/// Reads `history` in order, pairing old-format actions with the observation after them.
struct History<'c> {
    cx: &'c Ctx<'c>,
    stem: &'c str,
    inv: util::Invocations,
    calls: std::collections::HashMap<String, String>,
    had_task: bool,
    /// Old-format action waiting for its observation: (call id, name).
    pending: Option<(String, String)>,
}

fn from_history(cx: &Ctx, history: &[Value], stem: &str) -> Result<Vec<Event>, ReadError> {
    let mut h = History {
        cx,
        stem,
        inv: util::Invocations::new(),
        calls: std::collections::HashMap::new(),
        had_task: false,
        pending: None,
    };
    let mut events: Vec<Event> = Vec::with_capacity(history.len());
    for (i, msg) in history.iter().enumerate() {
        events.push(h.message(i, msg)?);
    }
    Ok(events)
}

impl History<'_> {
    fn message(&mut self, i: usize, msg: &Value) -> Result<Event, ReadError> {
        let cx = self.cx;
        let mp = format!("$.history[{i}]");
        let m = cx.obj(msg, &mp)?;
        let role = cx.req_str(m, "role", &mp)?;
        let t = util::synthetic_time(i);
        let text = util::content_text(m.get("content"));
        let agent = cx.opt_str(m, "agent", &mp)?.unwrap_or("agent").to_string();
        let demo = matches!(m.get("is_demo"), Some(Value::Bool(true)));
        Ok(match role {
            "system" => text_event("system", Role::System, self.inv.current(), t, text),
            "user" if demo => {
                text_event("demonstration", Role::System, self.inv.current(), t, text)
            }
            "user" => self.user(&agent, t, text),
            "assistant" => self.assistant(i, m, &mp, &agent, t, text)?,
            "tool" => self.tool(m, &mp, &agent, t, text)?,
            other => {
                return Err(cx.err(
                    format!("{mp}.role"),
                    format!("wrong shape: unknown role `{other}`"),
                ))
            }
        })
    }

    /// A `user` message: the observation of a pending old-format action, else the task (or,
    /// rarely, a later message that answers no action).
    fn user(&mut self, agent: &str, t: f64, text: String) -> Event {
        if let Some((id, name)) = self.pending.take() {
            let mut e = Event::new(agent, Role::User, self.inv.current(), t);
            if util::looks_like_tool_error(&text) {
                e.critical.push(Critical::ToolError);
            }
            e.parts.push(Part::ToolResponse {
                id: Some(id),
                name,
                response: Value::String(text),
            });
            return e;
        }
        let id = if self.had_task {
            self.inv.current()
        } else {
            self.inv.user_turn()
        };
        self.had_task = true;
        let mut e = text_event("user", Role::User, id, t, text);
        e.critical = match e.parts.first() {
            Some(Part::Text { text }) => util::user_text_flags(text),
            _ => Vec::new(),
        };
        e
    }

    /// An `assistant` message: one model request with its function calls, or an old-format
    /// `action` given a call id of its own.
    fn assistant(
        &mut self,
        i: usize,
        m: &Map<String, Value>,
        mp: &str,
        agent: &str,
        t: f64,
        text: String,
    ) -> Result<Event, ReadError> {
        let cx = self.cx;
        let mut e = Event::new(agent, Role::Model, self.inv.current(), t);
        e.model_request = true;
        let tcs = cx.opt_arr(m, "tool_calls", mp)?;
        if !tcs.is_empty() {
            if !text.is_empty() {
                e.parts.push(Part::Text { text });
            }
            for (j, c) in tcs.iter().enumerate() {
                let (id, name, args) =
                    super::openai_chat::tool_call(cx, c, &format!("{mp}.tool_calls[{j}]"))?;
                if let Some(id) = &id {
                    self.calls.insert(id.clone(), name.clone());
                }
                e.parts.push(Part::ToolCall { id, name, args });
            }
        } else if let Some(action) = cx
            .opt_str(m, "action", mp)?
            .filter(|a| !a.trim().is_empty())
        {
            let thought = cx
                .opt_str(m, "thought", mp)?
                .map(str::to_string)
                .unwrap_or(text);
            if !thought.is_empty() {
                e.parts.push(Part::Text { text: thought });
            }
            let id = format!("{}-action-{i}", self.stem);
            let name = command_name(action);
            e.parts.push(Part::ToolCall {
                id: Some(id.clone()),
                name: name.clone(),
                args: serde_json::json!({ "command": action }),
            });
            self.pending = Some((id, name));
        } else if !text.is_empty() {
            e.parts.push(Part::Text { text });
        }
        Ok(e)
    }

    /// A `tool` message answering the calls it names (or the pending action).
    fn tool(
        &mut self,
        m: &Map<String, Value>,
        mp: &str,
        agent: &str,
        t: f64,
        text: String,
    ) -> Result<Event, ReadError> {
        let ids: Vec<String> = match m.get("tool_call_ids") {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            _ => match (self.cx.opt_str(m, "tool_call_id", mp)?, &self.pending) {
                (Some(id), _) => vec![id.to_string()],
                (None, Some((id, _))) => vec![id.clone()],
                (None, None) => Vec::new(),
            },
        };
        self.pending = None;
        let mut e = Event::new(agent, Role::Tool, self.inv.current(), t);
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
            let name = self.calls.get(&id).cloned().unwrap_or_default();
            e.parts.push(Part::ToolResponse {
                id: Some(id),
                name,
                response: Value::String(text.clone()),
            });
        }
        Ok(e)
    }
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
    let mut events = Vec::with_capacity(steps.len() * 2);
    for (i, step) in steps.iter().enumerate() {
        step_events(cx, step, i, stem, "inv-1", 2 * i, &mut events)?;
    }
    Ok(events)
}

/// The `trajectory` steps after the last one `history` holds (one step per model call, so
/// per `assistant` message): SWE-agent writes the final `submit` call to `trajectory` and
/// `info.model_stats` but not always to `history`. Appended, so a run reads the same calls
/// in both forms (and `tokens_sent` counts the last call's prompt too).
fn trailing_steps(
    cx: &Ctx,
    history: &[Value],
    steps: &[Value],
    stem: &str,
    inv: &str,
    events: &mut Vec<Event>,
) -> Result<(), ReadError> {
    let calls = history
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
        .filter(|m| m.get("is_demo") != Some(&Value::Bool(true)))
        .count();
    for (i, step) in steps.iter().enumerate().skip(calls) {
        let t = history.len() + 2 * (i - calls);
        step_events(cx, step, i, stem, inv, t, events)?;
    }
    Ok(())
}

/// One `trajectory` step: its model event (thought + action) and its observation, at the
/// synthetic times `t` and `t + 1`.
fn step_events(
    cx: &Ctx,
    step: &Value,
    i: usize,
    stem: &str,
    inv: &str,
    t: usize,
    events: &mut Vec<Event>,
) -> Result<(), ReadError> {
    let sp = format!("$.trajectory[{i}]");
    let m = cx.obj(step, &sp)?;
    let mut e = Event::new("agent", Role::Model, inv, util::synthetic_time(t));
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
        return Ok(());
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
        let mut r = Event::new("agent", Role::User, inv, util::synthetic_time(t + 1));
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 37: a run whose `history` stops before its final `submit` call (SWE-agent wrote
    /// it to `trajectory` and counted it in `model_stats`) reads as many model requests as
    /// its `trajectory` form, the last one being that call; a history holding every step
    /// gets nothing appended.
    #[test]
    fn the_final_trajectory_step_missing_from_history_is_read() {
        let steps = r#"[
          {"thought":"Look.","action":"ls -a\n","observation":"main.py","response":"Look."},
          {"thought":"Done.","action":"submit","observation":"diff --git a b","response":"Done."}]"#;
        let history = r#"[
          {"role":"system","content":"SETTING"},
          {"role":"user","content":"ISSUE: fix it"},
          {"role":"assistant","content":"Look.","thought":"Look.","action":"ls -a\n"},
          {"role":"user","content":"main.py"}"#;
        let short = format!(r#"{{"trajectory":{steps},"history":{history}],"info":{{}}}}"#);
        let only_steps = format!(r#"{{"trajectory":{steps},"info":{{}}}}"#);
        let requests = |text: &str| {
            let s = read("a/x.traj", text).unwrap().remove(0);
            s.events.iter().filter(|e| e.model_request).count()
        };
        assert_eq!(requests(&only_steps), 2);
        assert_eq!(requests(&short), 2);
        let s = read("a/x.traj", &short).unwrap().remove(0);
        let last = s.events.iter().rev().find(|e| e.model_request).unwrap();
        assert!(
            matches!(&last.parts[1], Part::ToolCall { name, .. } if name == "submit"),
            "{last:?}"
        );
        let full = format!(
            r#"{{"trajectory":{steps},"history":{history},
              {{"role":"assistant","content":"Done.","thought":"Done.","action":"submit"}}],"info":{{}}}}"#
        );
        assert_eq!(requests(&full), 2);
    }

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

    /// `history_processors` from the recorded config (here a JSON string, as older
    /// trajectories write it): `last_n_observations` with the default polling is a window,
    /// with another polling or any other processor it is named and not modelled.
    #[test]
    fn recorded_history_processors_are_the_sessions_policy() {
        let config = serde_json::json!({"agent": {"model": {"name": "gpt-x"}, "history_processors": [
            {"type": "last_n_observations", "n": 3},
            {"type": "last_n_observations", "n": 4, "polling": 2},
            {"type": "cache_control", "last_n_messages": 2}]}});
        let traj = serde_json::json!({"history": [{"role": "user", "content": "task"}],
            "replay_config": config.to_string()});
        let s = &read("z.traj", &traj.to_string()).unwrap()[0];
        assert_eq!(s.model.as_deref(), Some("gpt-x"));
        assert_eq!(recorded_line(s), Some("1.x"));
        let p = s.recorded_policy.as_ref().expect("recorded");
        let PolicyRule::SweAgent { processors, .. } = &p.rule else {
            panic!("{p:?}");
        };
        assert_eq!(processors[0], HistoryProcessor::LastNObservations { n: 3 });
        assert!(
            matches!(&processors[1], HistoryProcessor::Other { name, params } if name == "last_n_observations" && params.contains("\"polling\":2"))
        );
        assert!(
            matches!(&processors[2], HistoryProcessor::Other { name, .. } if name == "cache_control")
        );
        let none = serde_json::json!({"history": [{"role": "user", "content": "task"}]});
        assert_eq!(
            read("n.traj", &none.to_string()).unwrap()[0].recorded_policy,
            None
        );
    }

    /// `info.model_stats` is kept with the recorded config: what the backtest compares the
    /// as-recorded replay's prompt tokens with.
    #[test]
    fn model_stats_tokens_sent_and_api_calls_are_kept() {
        let traj = serde_json::json!({"history": [{"role": "user", "content": "task"}],
            "replay_config": {"agent": {"history_processors": []}},
            "info": {"model_stats": {"tokens_sent": 7141, "tokens_received": 243, "api_calls": 5}}});
        let s = &read("m.traj", &traj.to_string()).unwrap()[0];
        let p = s.recorded_policy.as_ref().expect("recorded");
        assert_eq!(
            p.rule,
            PolicyRule::SweAgent {
                processors: Vec::new(),
                model_stats: Some(ModelStats {
                    tokens_sent: 7_141,
                    api_calls: 5,
                    custom_tokenizer: false,
                }),
            }
        );
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

    /// Issue 43: a 0.x run records no `replay_config`; it ran its default config's history
    /// processor, `Last5Observations` from v0.3.0 (masking window 5), nothing before (told by
    /// the instance template's text, fixed three days before the switch). A run without
    /// model calls (a demonstration) or with 1.x messages gets no 0.x setting.
    #[test]
    fn swe_agent_0x_runs_get_the_0x_default_history_processor() {
        let traj = |task: &str, sent: u64, message_type: bool| {
            let mut obs = serde_json::json!({"role": "user", "content": "obs", "agent": "primary"});
            if message_type {
                obs["message_type"] = "observation".into();
            }
            serde_json::json!({"history": [
                {"role": "system", "content": "sys", "agent": "primary"},
                {"role": "user", "content": "demo", "agent": "primary", "is_demo": true},
                {"role": "user", "content": task, "agent": "primary"},
                {"role": "assistant", "content": "ls", "action": "ls", "agent": "primary"},
                obs],
              "info": {"model_stats": {"tokens_sent": sent, "api_calls": 1}}})
            .to_string()
        };
        let policy = |text: String| read("r.traj", &text).unwrap()[0].recorded_policy.clone();
        let run = &read("r.traj", &traj("script successfully runs", 900, false)).unwrap()[0];
        assert_eq!(recorded_line(run), Some("0.x"));
        let late = policy(traj("script successfully runs", 900, false)).expect("0.x");
        assert!(late.source.starts_with(ZERO_X_SOURCE), "{late:?}");
        assert_eq!(late.versions, ["0.3.0-0.7.0"]);
        assert_eq!(
            late.rule,
            PolicyRule::SweAgent {
                processors: vec![HistoryProcessor::LastNObservations { n: 5 }],
                model_stats: Some(ModelStats {
                    tokens_sent: 900,
                    api_calls: 1,
                    custom_tokenizer: false,
                }),
            }
        );
        let early = policy(traj("when it succesfully runs", 900, false)).expect("0.x");
        assert_eq!(early.versions, ["0.1.0-0.2.0"]);
        assert!(
            matches!(&early.rule, PolicyRule::SweAgent { processors, .. } if processors.is_empty())
        );
        assert_eq!(policy(traj("task", 0, false)), None);
        assert_eq!(policy(traj("task", 900, true)), None);
    }
}
