//! Gemini CLI chat logs (`~/.gemini/tmp/*/chats/session-*.json`):
//! `{sessionId, projectHash, startTime, lastUpdated, messages: [...]}`.
//!
//! A `user` message is a person's turn. A `gemini` message is one model request: its
//! `thoughts`, `content` and `toolCalls` become one model event, and the calls' recorded
//! `result`s (Gemini `functionResponse`s, which the API sends back in a user-role turn) become
//! one following event. `tokens {input, output, cached, thoughts, tool}` is normalised as:
//! prompt = `input` + `tool` (Gemini's `promptTokenCount` already includes the cached
//! tokens), cached read = `cached`, output = `output` + `thoughts` (thinking is billed as
//! output). Other message types (`info`, `error`, `warning`) are CLI notices the model never
//! sees and are skipped. A call with status `cancelled` is a refusal, `error` a tool error.

use serde_json::{Map, Value};

use super::{
    compact_json, util, util::Ctx, Critical, Event, Format, Part, ReadError, Role, Session, Usage,
};

/// An object with `sessionId` and `messages` (plus `projectHash` or `startTime`).
pub fn sniff(text: &str) -> bool {
    util::scan::top_keys(text).is_some_and(|k| {
        let has = |x: &str| k.iter().any(|t| t == x);
        has("sessionId") && has("messages") && (has("projectHash") || has("startTime"))
    })
}

pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    let cx = Ctx::new(file);
    let root = util::parse_json(file, text)?;
    let top = cx.obj(&root, "$")?;
    let msgs = cx.arr(cx.field(top, "messages", "$")?, "$.messages")?;
    let id = cx
        .opt_str(top, "sessionId", "$")?
        .map(str::to_string)
        .unwrap_or_else(|| super::openai_chat::file_stem(file));
    // Message times decide order; a tool result's time is its call's, kept inside
    // [message time, next message time] so derived times never break the order.
    let times = cx.message_times(msgs, "$")?;
    let mut chat = Chat {
        cx: &cx,
        synthetic: times.iter().all(Option::is_none),
        times,
        inv: util::Invocations::new(),
        events: Vec::with_capacity(msgs.len() * 2),
        model: None,
        prev: f64::NEG_INFINITY,
        step: 0,
    };
    for (i, msg) in msgs.iter().enumerate() {
        let mp = format!("$.messages[{i}]");
        let m = cx.obj(msg, &mp)?;
        let kind = cx.req_str(m, "type", &mp)?;
        if kind != "user" && kind != "gemini" {
            continue;
        }
        let t = chat.message_time(i, &mp)?;
        let text = util::content_text(m.get("content"));
        if kind == "user" {
            chat.user(m, &mp, t, text)?;
        } else {
            chat.gemini(i, m, &mp, t, text)?;
        }
    }
    Ok(vec![Session {
        model: chat.model,
        synthetic_timestamps: chat.synthetic,
        ..Session::new(id, file, Format::GeminiCli, chat.events)
    }])
}

/// A chat log's events as they are read, message by message.
struct Chat<'a> {
    cx: &'a Ctx<'a>,
    /// Per message, its recorded time.
    times: Vec<Option<f64>>,
    /// No message has a time: all are synthesised, one step apart.
    synthetic: bool,
    inv: util::Invocations,
    events: Vec<Event>,
    model: Option<String>,
    /// The latest event time handed out.
    prev: f64,
    step: usize,
}

impl Chat<'_> {
    /// Message `i`'s time: recorded, else the previous one's (or the first recorded), never
    /// before the previous event's.
    fn message_time(&mut self, i: usize, mp: &str) -> Result<f64, ReadError> {
        let t = if self.synthetic {
            self.step += 1;
            util::synthetic_time(self.step)
        } else {
            match self.times.get(i).copied().flatten() {
                Some(t) => t,
                None if self.prev.is_finite() => self.prev,
                None => self
                    .times
                    .iter()
                    .flatten()
                    .next()
                    .copied()
                    .unwrap_or(util::SYNTHETIC_EPOCH_S),
            }
        };
        if t < self.prev {
            return Err(self.cx.out_of_order(mp, t, self.prev));
        }
        self.prev = t;
        Ok(t)
    }

    /// A person's turn.
    fn user(
        &mut self,
        m: &Map<String, Value>,
        mp: &str,
        t: f64,
        text: String,
    ) -> Result<(), ReadError> {
        let mut e = Event::new("user", Role::User, self.inv.user_turn(), t);
        if let Some(id) = self.cx.opt_str(m, "id", mp)? {
            e.id = Some(id.to_string());
        }
        e.critical = util::user_text_flags(&text);
        if !text.is_empty() {
            e.parts.push(Part::Text { text });
        }
        self.events.push(e);
        Ok(())
    }

    /// A model request (message `i`): its thoughts, text and tool calls as one model event,
    /// the calls' recorded results as one following event.
    fn gemini(
        &mut self,
        i: usize,
        m: &Map<String, Value>,
        mp: &str,
        t: f64,
        text: String,
    ) -> Result<(), ReadError> {
        let cx = self.cx;
        let mut e = Event::new("gemini", Role::Model, self.inv.current(), t);
        e.model_request = true;
        if let Some(id) = cx.opt_str(m, "id", mp)? {
            e.id = Some(id.to_string());
        }
        if let Some(name) = cx.opt_str(m, "model", mp)? {
            e.model = Some(name.to_string());
            self.model.get_or_insert_with(|| name.to_string());
        }
        e.usage = usage(cx, m, mp)?;
        thoughts(cx, m, mp, &mut e)?;
        if !text.is_empty() {
            e.parts.push(Part::Text { text });
        }
        // Next message's time bounds derived result times.
        let next_t = self
            .times
            .get(i + 1..)
            .and_then(|r| r.iter().flatten().next().copied());
        let mut resp = Event::new("gemini", Role::User, self.inv.current(), t);
        let mut resp_t = t;
        for (k, c) in cx.opt_arr(m, "toolCalls", mp)?.iter().enumerate() {
            let cp = format!("{mp}.toolCalls[{k}]");
            if let Some(ct) = tool_call(cx, c, &cp, self.synthetic, &mut e, &mut resp)? {
                let ct = match next_t {
                    Some(n) => ct.min(n),
                    None => ct,
                };
                resp_t = resp_t.max(ct);
            }
        }
        self.events.push(e);
        if !resp.parts.is_empty() {
            if self.synthetic {
                self.step += 1;
                resp_t = util::synthetic_time(self.step);
            }
            resp.timestamp = resp_t;
            self.prev = resp_t;
            self.events.push(resp);
        }
        Ok(())
    }
}

/// A model message's `thoughts` (strings, or `{subject, description}`), as thought parts.
fn thoughts(cx: &Ctx, m: &Map<String, Value>, mp: &str, e: &mut Event) -> Result<(), ReadError> {
    for (k, th) in cx.opt_arr(m, "thoughts", mp)?.iter().enumerate() {
        let tp = format!("{mp}.thoughts[{k}]");
        let text = match th {
            Value::String(s) => s.clone(),
            v => {
                let tm = cx.obj(v, &tp)?;
                let subject = cx.opt_str(tm, "subject", &tp)?.unwrap_or("");
                let desc = cx.opt_str(tm, "description", &tp)?.unwrap_or("");
                match (subject.is_empty(), desc.is_empty()) {
                    (false, false) => format!("{subject}: {desc}"),
                    (true, _) => desc.to_string(),
                    (false, true) => subject.to_string(),
                }
            }
        };
        if !text.is_empty() {
            e.parts.push(Part::Thought { text });
        }
    }
    Ok(())
}

/// One tool call (at `cp`): the call in the model event `e`, its recorded `result` in
/// `resp`, a cancelled call a refusal and a failed one a tool error. Returns the call's
/// recorded time when it has a result and the log has real times.
fn tool_call(
    cx: &Ctx,
    c: &Value,
    cp: &str,
    synthetic: bool,
    e: &mut Event,
    resp: &mut Event,
) -> Result<Option<f64>, ReadError> {
    let cm = cx.obj(c, cp)?;
    let name = cx.req_str(cm, "name", cp)?.to_string();
    let cid = cx.opt_str(cm, "id", cp)?.map(str::to_string);
    let args = cm.get("args").cloned().unwrap_or(Value::Object(Map::new()));
    e.parts.push(Part::ToolCall {
        id: cid.clone(),
        name: name.clone(),
        args,
    });
    let status = cx.opt_str(cm, "status", cp)?.unwrap_or("");
    // `result` is a Gemini `PartListUnion`: a list of parts, one part, or a string.
    let results: Vec<&Value> = match cm.get("result") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
    };
    if results.is_empty() {
        return Ok(None);
    }
    let at = if synthetic {
        None
    } else {
        cx.opt_time(cm, "timestamp", cp)?
    };
    for (r, res) in results.into_iter().enumerate() {
        let rp = format!("{cp}.result[{r}]");
        result_part(cx, res, &rp, cid.as_deref(), &name, resp)?;
    }
    match status {
        "cancelled" | "canceled" | "rejected" => util::flag(resp, Critical::Refusal),
        "error" => util::flag(resp, Critical::ToolError),
        _ => {}
    }
    Ok(at)
}

/// One part of a call's `result`: a `functionResponse` (the tool response), a `text` or
/// `inlineData` part sent along with it (read_many_files), or a bare string output.
fn result_part(
    cx: &Ctx,
    res: &Value,
    rp: &str,
    cid: Option<&str>,
    name: &str,
    resp: &mut Event,
) -> Result<(), ReadError> {
    let rm = match res {
        Value::String(s) => {
            resp.parts.push(Part::ToolResponse {
                id: cid.map(str::to_string),
                name: name.to_string(),
                response: serde_json::json!({ "output": s }),
            });
            return Ok(());
        }
        v => cx.obj(v, rp)?,
    };
    if let Some(fr) = rm.get("functionResponse") {
        let fp = format!("{rp}.functionResponse");
        let fr = cx.obj(fr, &fp)?;
        let rid = cx.opt_str(fr, "id", &fp)?.or(cid);
        let rname = cx.opt_str(fr, "name", &fp)?.unwrap_or(name);
        // A response naming another id than its call's answers no call: kept, as ADK keeps
        // such a response (the loaders warn).
        resp.parts.push(Part::ToolResponse {
            id: rid.map(str::to_string),
            name: rname.to_string(),
            response: fr.get("response").map_or(Value::Null, compact_json),
        });
    } else if let Some(t) = rm.get("text").and_then(Value::as_str) {
        resp.parts.push(Part::Text {
            text: t.to_string(),
        });
    } else if let Some(d) = rm.get("inlineData").and_then(Value::as_object) {
        let mime = d
            .get("mimeType")
            .and_then(Value::as_str)
            .map(str::to_string);
        let b64 = d.get("data").and_then(Value::as_str).map_or(0, str::len) as u64;
        resp.parts.push(Part::Attachment {
            name: mime.clone().unwrap_or_else(|| "inline data".into()),
            mime_type: mime,
            text: None,
            size_bytes: Some(b64 / 4 * 3),
        });
    } else {
        return Err(cx.err(
            rp,
            "wrong shape: expected a functionResponse, text or inlineData part",
        ));
    }
    Ok(())
}

/// `tokens {input, output, cached, thoughts, tool, total}`.
fn usage(cx: &Ctx, m: &Map<String, Value>, mp: &str) -> Result<Option<Usage>, ReadError> {
    let Some(t) = m.get("tokens").filter(|t| !t.is_null()) else {
        return Ok(None);
    };
    let tp = format!("{mp}.tokens");
    let tm = cx.obj(t, &tp)?;
    let get = |k: &str| cx.opt_tokens(tm, k, &tp).map(|v| v.unwrap_or(0));
    Ok(Some(Usage {
        prompt_tokens: get("input")?.saturating_add(get("tool")?),
        cached_read_tokens: get("cached")?,
        cache_write_tokens: 0,
        output_tokens: get("output")?.saturating_add(get("thoughts")?),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"{"sessionId":"s","projectHash":"h","startTime":"2025-10-27T19:55:00Z","messages":[
      {"id":"u1","timestamp":"2025-10-27T19:56:01.701Z","type":"user","content":"do it"},
      {"id":"g1","timestamp":"2025-10-27T19:56:04.625Z","type":"gemini","content":"","model":"gemini-2.5-pro",
       "thoughts":[{"subject":"Plan","description":"list","timestamp":"x"}],
       "toolCalls":[{"id":"c1","name":"ls","args":{"path":"/"},"status":"cancelled","timestamp":"2025-10-27T19:56:09Z",
         "result":[{"functionResponse":{"id":"c1","name":"ls","response":{"error":"[Operation Cancelled]"}}}]}],
       "tokens":{"input":5377,"output":21,"cached":100,"thoughts":36,"tool":0,"total":5434}},
      {"id":"i","timestamp":"2025-10-27T19:56:05Z","type":"info","content":"notice"},
      {"id":"u2","timestamp":"2025-10-27T19:56:08Z","type":"user","content":"no"}]}"#;

    #[test]
    fn reads_calls_results_and_usage() {
        assert!(sniff(SAMPLE));
        let s = &read("g.json", SAMPLE).unwrap()[0];
        assert_eq!(
            s.events.len(),
            4,
            "user, model, tool results, user; the info notice is skipped"
        );
        let m = &s.events[1];
        assert!(m.model_request);
        assert_eq!(
            m.usage,
            Some(Usage {
                prompt_tokens: 5377,
                cached_read_tokens: 100,
                cache_write_tokens: 0,
                output_tokens: 57
            })
        );
        assert!(matches!(&m.parts[0], Part::Thought { text } if text == "Plan: list"));
        assert_eq!(s.events[2].critical, vec![Critical::Refusal]);
        // The call's own time (19:56:09) is later than the next message (19:56:05): clamped.
        assert_eq!(
            s.events[2].timestamp,
            util::parse_timestamp("2025-10-27T19:56:05Z").unwrap()
        );
        assert_eq!(s.events[3].invocation_id, "inv-2");
        assert_eq!(s.model.as_deref(), Some("gemini-2.5-pro"));
    }

    #[test]
    fn results_may_be_one_part_a_string_or_extra_parts() {
        let text = r#"{"sessionId":"s","messages":[{"type":"user","content":[{"text":"go"}]},
          {"type":"gemini","content":"","toolCalls":[
            {"id":"a","name":"read_many_files","args":{},"result":[{"functionResponse":{"id":"a","name":"read_many_files","response":{"output":"ok"}}},{"text":"file body"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]},
            {"id":"b","name":"shell","args":{},"result":"plain"},
            {"id":"c","name":"shell","args":{},"result":{"functionResponse":{"id":"c","name":"shell","response":{}}}}]}]}"#;
        let s = &read("g.json", text).unwrap()[0];
        assert_eq!(s.events.len(), 3);
        assert!(s.synthetic_timestamps);
        assert!(s.events.windows(2).all(|w| w[0].timestamp < w[1].timestamp));
        let kinds: Vec<&str> = s.events[2]
            .parts
            .iter()
            .map(|p| match p {
                Part::ToolResponse { .. } => "response",
                Part::Text { .. } => "text",
                Part::Attachment { .. } => "attachment",
                _ => "other",
            })
            .collect();
        assert_eq!(
            kinds,
            ["response", "text", "attachment", "response", "response"]
        );
        assert!(matches!(&s.events[0].parts[0], Part::Text { text } if text == "go"));
        // A response naming another id than its call's answers no call: kept, and counted.
        let s = &read(
            "g.json",
            &text.replace(
                r#""id":"c","name":"shell","response""#,
                r#""id":"zz","name":"shell","response""#,
            ),
        )
        .unwrap()[0];
        assert_eq!(util::orphan_responses(&s.events), 1);
    }

    #[test]
    fn wrong_shapes_name_the_path() {
        let e = read(
            "g.json",
            r#"{"sessionId":"s","messages":[{"type":"gemini","toolCalls":[{"id":"c"}]}]}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "g.json: $.messages[0].toolCalls[0]: wrong shape: missing string field `name`"
        );
        let e = read("g.json", r#"{"sessionId":"s","messages":{}}"#).unwrap_err();
        assert_eq!(e.location, "$.messages");
    }
}
