//! Claude Code's `attachment` records: what the CLI adds to the conversation besides the
//! user's words and the tools' results (a file the prompt mentions, a todo or plan
//! reminder, a hook's output, new diagnostics, a nested CLAUDE.md, a command queued while
//! the model worked, ...). The CLI keeps each as a message of type `attachment`; its
//! transcript writer keeps them for Anthropic's own users only (`userType` `ant`; an
//! `external` user's file holds none but, when `CLAUDE_CODE_SAVE_HOOK_ADDITIONAL_CONTEXT` is
//! set, `hook_additional_context`), as (docs/policies.md "What Claude Code compares"):
//!
//! ```json
//! {"type":"attachment","uuid":"…","parentUuid":"…","timestamp":"…","sessionId":"…",
//!  "version":"2.1.37","attachment":{"type":"hook_success","hookName":"SessionStart:startup",
//!  "hookEvent":"SessionStart","content":"…"}}
//! ```
//!
//! Before each request the CLI turns each into user-message content (its
//! `normalizeAttachmentForAPI`: the payload wrapped in a sentence or two of fixed wording,
//! or nothing for the kinds it never sends). The reader keeps one
//! [`Part::Attachment`] per record, of mime type [`ATTACHMENT_MIME`]: `name` the kind, `text`
//! the payload the model gets (empty for a kind never sent; the fixed wording is not
//! modelled), `size_bytes` the length of the record's `attachment` as `JSON.stringify` writes
//! it, in UTF-16 code units (what the CLI's size estimate of 2.1.33-2.1.44 measures).

use serde_json::{Map, Value};

use super::readutil::FieldError;
use super::Part;

/// Mime type of a [`Part::Attachment`] read from a Claude Code `attachment` record.
pub const ATTACHMENT_MIME: &str = "application/vnd.claude-code.attachment+json";

/// Kinds the CLI's `normalizeAttachmentForAPI` turns into nothing (the same list in `cli.js`
/// 2.1.37, 2.1.44 and 2.1.50): recorded, never sent.
const NEVER_SENT: &[&str] = &[
    "already_read_file",
    "command_permissions",
    "edited_image_file",
    "hook_cancelled",
    "hook_error_during_execution",
    "hook_non_blocking_error",
    "hook_system_message",
    "structured_output",
    "hook_permission_decision",
    "dynamic_skill",
    "autocheckpointing",
    "background_task_status",
];

/// Hook events whose `hook_success` output the CLI sends; any other's it never sends.
const SENT_HOOK_SUCCESS: &[&str] = &["SessionStart", "UserPromptSubmit"];

/// Keys whose values the CLI does not put in the model's text: the kind, ids, which hook
/// ran, a hook's raw streams and command (its `content` is what is sent), image data.
const NOT_RENDERED: &[&str] = &[
    "type",
    "toolUseID",
    "hookEvent",
    "source_uuid",
    "ideName",
    "stdout",
    "stderr",
    "command",
    "base64",
];

/// The record's `attachment` as a part; the error names the field that is wrong.
pub fn read(obj: &Map<String, Value>) -> Result<Part, FieldError> {
    let attachment = match obj.get("attachment") {
        Some(Value::Object(a)) => a,
        None => {
            return Err(FieldError::Missing {
                record: "attachment record",
                field: "attachment",
                shape: " object",
            })
        }
        Some(other) => return Err(FieldError::kind("attachment", other, "an object")),
    };
    let kind = match attachment.get("type") {
        Some(Value::String(s)) => s.clone(),
        None => {
            return Err(FieldError::Missing {
                record: "attachment",
                field: "type",
                shape: "",
            })
        }
        Some(other) => return Err(FieldError::kind("attachment.type", other, "a string")),
    };
    let json = serde_json::to_string(attachment).map_err(|source| FieldError::Json {
        path: "attachment",
        source,
    })?;
    Ok(Part::Attachment {
        text: Some(sent_text(&kind, attachment)),
        name: kind,
        mime_type: Some(ATTACHMENT_MIME.to_string()),
        size_bytes: Some(json.encode_utf16().count() as u64),
    })
}

/// What the model gets of an attachment, less the CLI's fixed wording: its text values
/// other than [`NOT_RENDERED`] ones, one a line; nothing for a kind never sent.
fn sent_text(kind: &str, attachment: &Map<String, Value>) -> String {
    let hook_event = attachment.get("hookEvent").and_then(Value::as_str);
    let silent = NEVER_SENT.contains(&kind)
        || (kind == "hook_success" && !hook_event.is_some_and(|h| SENT_HOOK_SUCCESS.contains(&h)));
    let mut out = Vec::new();
    if !silent {
        for (k, v) in attachment {
            if !NOT_RENDERED.contains(&k.as_str()) {
                texts(v, &mut out);
            }
        }
    }
    out.join("\n")
}

fn texts<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) if !s.is_empty() => out.push(s),
        Value::Array(items) => items.iter().for_each(|x| texts(x, out)),
        Value::Object(m) => {
            for (k, x) in m {
                if !NOT_RENDERED.contains(&k.as_str()) {
                    texts(x, out);
                }
            }
        }
        _ => {}
    }
}
