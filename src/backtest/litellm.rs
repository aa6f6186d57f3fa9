//! SWE-agent 1.x's `tokens_sent` from its mechanism (issue 43 item 5). SWE-agent 1.x
//! (`sweagent/agent/models.py`, v1.0.0-v1.1.0 and HEAD: `LiteLLMModel._single_query`) adds
//! `litellm.utils.token_counter(messages=messages, model=<agent.model.name>)` to `tokens_sent`
//! once per query it makes; the tools it passes to the API are not in that count. So the
//! as-recorded replay is counted here as litellm counts it (docs/validation.md, "SWE-agent's
//! tokens_sent"):
//!
//! - *Which tokenizer* ([`tokenizer_for`]): litellm `utils.py` `_select_tokenizer_helper`
//!   (1.61.3-1.70.0) takes a Hugging Face tokenizer for a listed `command-r` Cohere name, a
//!   listed Anthropic name without `claude-3`, and any name holding `llama-2`, `replicate` or
//!   `llama-3`; every other name is counted with tiktoken, on the encoding of the name itself
//!   when litellm lists it as an OpenAI chat model (o200k_base for any `gpt-4o`), else on
//!   `gpt-3.5-turbo`'s (cl100k_base): every Claude 3 name, and every provider-prefixed name.
//! - *How messages are counted* ([`MessageRule`]): per message 3 tokens and every string value
//!   (role, content, a tool message's `tool_call_id`) plus each tool call's `arguments`, then
//!   3 per request (litellm 1.67.6+ `litellm_core_utils/token_counter.py` `_count_messages`,
//!   `_count_extra`); up to 1.67.5 (`utils.py` `token_counter`) a request any message of which
//!   carries `tool_calls` is counted as one text (the contents and the arguments joined) plus 3,
//!   with no per-message tokens.
//!
//! SWE-agent 1.x did not pin litellm (`pyproject.toml`: `litellm`, unversioned, v1.0.0-v1.1.0);
//! the rule of the litellm current at the run's SWE-agent release (`info.swe_agent_version`)
//! is taken: before 1.1.0 (2025-05-22) the joined rule (litellm 1.67.6, the first with the
//! per-message rule, lists `o4-mini`, a model of 2025-04-16: it came after v1.0.1,
//! 2025-02-28), from 1.1.0 the per-message one. A 1.x trajectory that records no version was
//! made before SWE-agent wrote it (commit 15a72a2a, 2024-10-29: the 1.0 development): the
//! joined rule too.

use crate::tokens::count::{count_parts, count_text, json_text};
use crate::tokens::sizes::SessionSizes;
use crate::tokens::Tokenizer;
use crate::transcript::{Event, Part, PolicyRule, Role, Session};

use super::as_recorded::AsRecorded;
use super::sizes::ProviderSizes;

/// Tokens litellm adds per message and per request (`tokens_per_message`, the reply priming).
pub const PER_MESSAGE: u64 = 3;
pub const PER_REQUEST: u64 = 3;

/// How litellm's `token_counter` counted a request's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageRule {
    /// litellm up to 1.67.5: a request with a `tool_calls` message is one joined text (+3).
    JoinedWithToolCalls,
    /// litellm 1.67.6+: 3 per message, every string value, each call's arguments (+3).
    PerMessage,
}

impl MessageRule {
    /// The rule of the litellm current at SWE-agent `version`'s release (module doc); `None`:
    /// a run from before SWE-agent recorded its version.
    pub fn for_version(version: Option<&str>) -> MessageRule {
        let Some(v) = version else {
            return MessageRule::JoinedWithToolCalls;
        };
        let parsed: Vec<u64> = v.split('.').map_while(|x| x.parse().ok()).collect();
        if parsed.is_empty() || parsed.as_slice() >= [1, 1, 0].as_slice() {
            MessageRule::PerMessage
        } else {
            MessageRule::JoinedWithToolCalls
        }
    }

    fn label(self) -> &'static str {
        match self {
            MessageRule::JoinedWithToolCalls => {
                "litellm <=1.67.5: joined text with tool calls, else 3/message"
            }
            MessageRule::PerMessage => "litellm >=1.67.6: 3/message",
        }
    }
}

/// The tiktoken encoding litellm counts `model` on, or the Hugging Face tokenizer it would load
/// instead (which this tool does not have).
pub fn tokenizer_for(model: &str) -> Result<Tokenizer, &'static str> {
    let lower = model.to_lowercase();
    // litellm's model lists hold bare names: a provider-prefixed one is in none of them
    let bare = !model.contains('/');
    if bare && lower.starts_with("command-r") {
        return Err("Cohere command-r (Hugging Face)");
    }
    if bare && lower.starts_with("claude") && !lower.contains("claude-3") {
        return Err("Anthropic's pre-Claude-3 tokenizer (Hugging Face)");
    }
    if lower.contains("llama-2") || lower.contains("replicate") {
        return Err("llama-2 (Hugging Face)");
    }
    if lower.contains("llama-3") {
        return Err("llama-3 (Hugging Face)");
    }
    let openai = bare
        && ["gpt-", "chatgpt-", "o1", "o3", "o4"]
            .iter()
            .any(|p| lower.starts_with(p));
    if !openai {
        return Ok(Tokenizer::Cl100k);
    }
    // tiktoken `encoding_for_model`: o200k_base for the 4o, 4.1, 4.5, 5 and o-series names
    let o200k = lower.contains("gpt-4o")
        || [
            "gpt-4.1",
            "gpt-4.5",
            "gpt-5",
            "chatgpt-4o",
            "o1",
            "o3",
            "o4",
        ]
        .iter()
        .any(|p| lower.starts_with(p));
    Ok(if o200k {
        Tokenizer::O200k
    } else {
        Tokenizer::Cl100k
    })
}

/// A run's as-recorded requests counted as litellm counts them.
#[derive(Debug, Clone, PartialEq)]
pub struct LitellmCount {
    pub prompt_tokens_total: u64,
    /// What the count rests on, for the report.
    pub basis: String,
}

/// SWE-agent 1.x `session` (it records `replay_config`): its as-recorded replay (`policy`)
/// counted as litellm's `token_counter` counts it. `Err`: the Hugging Face tokenizer litellm
/// would use for its model, not modelled (the provider scale is fitted instead).
pub fn tokens_sent(session: &Session, policy: &AsRecorded) -> Result<LitellmCount, &'static str> {
    let (version, custom) = match &session.recorded_policy {
        Some(p) => match &p.rule {
            PolicyRule::SweAgent { model_stats, .. } => (
                p.versions.first(),
                model_stats.is_some_and(|s| s.custom_tokenizer),
            ),
            _ => (None, false),
        },
        None => (None, false),
    };
    if custom {
        return Err("the config's custom_tokenizer (Hugging Face)");
    }
    let tok = tokenizer_for(session.model.as_deref().unwrap_or(""))?;
    let rule = MessageRule::for_version(version.map(String::as_str));
    let tokens: Vec<u32> = session
        .events
        .iter()
        .map(|e| message_tokens(tok, e).min(u64::from(u32::MAX)) as u32)
        .collect();
    let sized = ProviderSizes {
        sizes: SessionSizes::new(session, Some(&tokens)),
        fit: None,
    };
    let replay = super::replay_as(session, &sized, policy);
    let overheads = message_overheads(tok, session);
    let function_calling = session.events.iter().any(|e| e.role == Role::Tool);
    let mut calls_before = 0usize;
    let mut total = 0u64;
    let mut seen = 0usize;
    for r in &replay.requests {
        let k = r.event_index as usize;
        while seen < k {
            calls_before += usize::from(has_tool_call(&session.events[seen]));
            seen += 1;
        }
        let joined =
            rule == MessageRule::JoinedWithToolCalls && function_calling && calls_before > 0;
        let per_message = if joined { 0 } else { overheads[k] };
        total += r.prompt_tokens + per_message + PER_REQUEST;
    }
    Ok(LitellmCount {
        prompt_tokens_total: total,
        basis: format!(
            "litellm token_counter ({}, {}; SWE-agent {}) - mechanism",
            encoding_name(tok),
            rule.label(),
            version.map_or("version not recorded", String::as_str)
        ),
    })
}

fn encoding_name(tok: Tokenizer) -> &'static str {
    match tok {
        Tokenizer::O200k => "o200k_base",
        Tokenizer::Cl100k => "cl100k_base",
        Tokenizer::AdkChars => "chars/4",
    }
}

fn has_tool_call(e: &Event) -> bool {
    e.role == Role::Model && e.parts.iter().any(|p| matches!(p, Part::ToolCall { .. }))
}

/// What litellm counts of one history message besides its per-message tokens: its content
/// (a tool message's once, whatever ids it answers) and each tool call's `arguments`.
fn message_tokens(tok: Tokenizer, e: &Event) -> u64 {
    let mut n = 0u64;
    let mut answered = false;
    for p in &e.parts {
        n += match p {
            Part::ToolCall { args, .. } => json_text(args).map_or(0, |t| count(tok, &t)),
            Part::ToolResponse { response, .. } if !answered => {
                answered = true;
                json_text(response).map_or(0, |t| count(tok, &t))
            }
            Part::ToolResponse { .. } => 0,
            other => u64::from(count_parts(tok, std::slice::from_ref(other))),
        };
    }
    n
}

fn count(tok: Tokenizer, text: &str) -> u64 {
    u64::from(count_text(tok, text))
}

/// Per event: litellm's per-message tokens of the messages before it (3 each, the role, a tool
/// message's `tool_call_id`), summed.
fn message_overheads(tok: Tokenizer, session: &Session) -> Vec<u64> {
    let mut out = Vec::with_capacity(session.events.len() + 1);
    let mut sum = 0u64;
    for e in &session.events {
        out.push(sum);
        let role = match e.role {
            Role::Model => "assistant",
            Role::Tool => "tool",
            Role::System if e.author != "demonstration" => "system",
            _ => "user",
        };
        let id = match (e.role, e.parts.first()) {
            (Role::Tool, Some(Part::ToolResponse { id: Some(id), .. })) => count(tok, id),
            _ => 0,
        };
        sum += PER_MESSAGE + count(tok, role) + id;
    }
    out.push(sum);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::tokens::count::count_parts;

    /// A hand-made SWE-agent 1.x function-calling trajectory of `model` and SWE-agent
    /// `version`: a system prompt, the task, then three model calls (`ls`, `cat`, `submit`),
    /// the first two answered. `last_n_observations` n=5 masks nothing here.
    fn trajectory(model: &str, version: &str) -> Value {
        let call = |id: &str, command: &str| {
            json!([{"id": id, "type": "function",
                    "function": {"name": "bash", "arguments": format!("{{\"command\":\"{command}\"}}")}}])
        };
        json!({
            "trajectory": [],
            "history": [
                {"role": "system", "content": "You are a helpful assistant that can fix code",
                 "agent": "main", "message_type": "system_prompt"},
                {"role": "user", "content": " Fix the failing test in the repository at testbed 修复失败的测试",
                 "agent": "main", "message_type": "observation"},
                {"role": "assistant", "content": " Let me look around first", "agent": "main",
                 "message_type": "action", "tool_calls": call("call_1Ab", "ls")},
                {"role": "tool", "content": " setup py src tests", "agent": "main",
                 "message_type": "observation", "tool_call_ids": ["call_1Ab"]},
                {"role": "assistant", "content": " Now the source", "agent": "main",
                 "message_type": "action", "tool_calls": call("call_2Cd", "cat src/app.py")},
                {"role": "tool", "content": " def add a b return a minus b", "agent": "main",
                 "message_type": "observation", "tool_call_ids": ["call_2Cd"]},
                {"role": "assistant", "content": " Done", "agent": "main",
                 "message_type": "action", "tool_calls": call("call_3Ef", "submit")}
            ],
            "replay_config": {"agent": {"model": {"name": model},
                "history_processors": [{"type": "last_n_observations", "n": 5}]}},
            "info": {"swe_agent_version": version,
                     "model_stats": {"tokens_sent": 1000, "api_calls": 3}}
        })
    }

    /// The backtest's session row of `traj` (counted on o200k, the run tokenizer).
    fn row(traj: &Value) -> crate::backtest::SessionRow {
        let sessions =
            crate::transcript::swe_agent::read("runs/x.traj", &traj.to_string()).unwrap();
        let sizes: Vec<SessionSizes> = sessions
            .iter()
            .map(|s| {
                let t: Vec<u32> = s
                    .events
                    .iter()
                    .map(|e| count_parts(Tokenizer::O200k, &e.parts))
                    .collect();
                SessionSizes::new(s, Some(&t))
            })
            .collect();
        let b = crate::backtest::backtest(&sessions, &sizes);
        b.sessions.into_iter().next().expect("one session row")
    }

    /// litellm's count of the messages before each assistant message of `traj`, summed:
    /// `joined` = litellm <=1.67.5 (a request with a `tool_calls` message is its contents and
    /// arguments as one text), else 3 + each string value + the arguments per message; +3.
    fn litellm_total(traj: &Value, tok: Tokenizer, joined: bool) -> u64 {
        let n = |s: &str| u64::from(count_text(tok, s));
        let history = traj["history"].as_array().unwrap();
        let mut total = 0;
        for (k, m) in history.iter().enumerate() {
            if m["role"] != "assistant" {
                continue;
            }
            // SWE-agent `_history_to_messages`: role, content, and tool_calls / tool_call_id
            let msgs = &history[..k];
            let args = |m: &Value| -> Vec<String> {
                m["tool_calls"].as_array().map_or(Vec::new(), |c| {
                    c.iter()
                        .map(|c| c["function"]["arguments"].as_str().unwrap().to_string())
                        .collect()
                })
            };
            let with_calls = msgs.iter().any(|m| m.get("tool_calls").is_some());
            if joined && with_calls {
                let text: String = msgs
                    .iter()
                    .flat_map(|m| {
                        std::iter::once(m["content"].as_str().unwrap().to_string()).chain(args(m))
                    })
                    .collect();
                total += n(&text) + 3;
                continue;
            }
            for m in msgs {
                total += 3 + n(m["role"].as_str().unwrap()) + n(m["content"].as_str().unwrap());
                if let Some(id) = m["tool_call_ids"].get(0).and_then(Value::as_str) {
                    total += n(id);
                }
                total += args(m).iter().map(|a| n(a)).sum::<u64>();
            }
            total += 3;
        }
        total
    }

    #[test]
    fn claude_3_tokens_sent_is_litellm_cl100k_count_with_per_message_tokens() {
        let traj = trajectory("claude-3-5-sonnet-20241022", "1.1.0");
        let r = row(&traj);
        let expected = litellm_total(&traj, Tokenizer::Cl100k, false);
        assert_eq!(r.litellm_prompt_tokens_total, Some(expected), "{r:#?}");
        let ratio = (expected as f64 / 1000.0 * 1000.0).round() / 1000.0;
        assert_eq!(r.tokens_sent_ratio, Some(ratio));
        let basis = r.tokens_sent_basis.unwrap();
        assert!(
            basis.contains("cl100k_base") && basis.contains("3/message"),
            "{basis}"
        );
        // not what o200k would give: the tokenizer is the model's
        assert_ne!(expected, litellm_total(&traj, Tokenizer::O200k, false));
    }

    #[test]
    fn gpt_4o_tokens_sent_before_swe_agent_1_1_is_litellm_o200k_joined_count() {
        let traj = trajectory("gpt-4o-2024-08-06", "1.0.1");
        let r = row(&traj);
        let expected = litellm_total(&traj, Tokenizer::O200k, true);
        assert_eq!(r.litellm_prompt_tokens_total, Some(expected), "{r:#?}");
        assert!(r.tokens_sent_basis.unwrap().contains("o200k_base"));
        assert_ne!(expected, litellm_total(&traj, Tokenizer::O200k, false));
    }

    #[test]
    fn litellm_tokenizer_follows_model_name_and_others_stay_fitted() {
        // litellm would load Anthropic's Hugging Face tokenizer: no mechanism, scale fitted
        let r = row(&trajectory("claude-2.1", "1.1.0"));
        assert_eq!(r.litellm_prompt_tokens_total, None);
        assert!(r.tokens_sent_basis.unwrap().ends_with("fitted"));
        // a config naming its own tokenizer for the count (SWE-agent 34f9f687): the same
        let mut custom = trajectory("claude-3-5-sonnet-20241022", "1.1.1");
        custom["replay_config"]["agent"]["model"]["custom_tokenizer"] =
            json!({"identifier": "Qwen/Qwen2.5-Coder-32B"});
        let r = row(&custom);
        assert_eq!(r.litellm_prompt_tokens_total, None);
        assert!(r.tokens_sent_basis.unwrap().contains("custom_tokenizer"));
        assert_eq!(tokenizer_for("gpt-4o"), Ok(Tokenizer::O200k));
        assert_eq!(tokenizer_for("gpt-4-0613"), Ok(Tokenizer::Cl100k));
        // not a bare OpenAI name: litellm counts it as gpt-3.5-turbo
        assert_eq!(tokenizer_for("openai/gpt-4o"), Ok(Tokenizer::Cl100k));
        assert_eq!(
            tokenizer_for("claude-3-7-sonnet-latest"),
            Ok(Tokenizer::Cl100k)
        );
        assert!(tokenizer_for("claude-2.1").is_err());
        assert!(tokenizer_for("together_ai/meta-llama/Llama-3-70b").is_err());
        assert_eq!(
            MessageRule::for_version(Some("1.0.1")),
            MessageRule::JoinedWithToolCalls
        );
        assert_eq!(
            MessageRule::for_version(Some("1.1.0")),
            MessageRule::PerMessage
        );
        // recorded from SWE-agent commit 15a72a2a (2024-10-29): a run without it is older
        assert_eq!(
            MessageRule::for_version(None),
            MessageRule::JoinedWithToolCalls
        );
    }
}
