//! Claude Code's microcompaction record (`system` line, `subtype: "microcompact_boundary"`,
//! written from CLI 2.1.9 on; the clearing itself runs from 2.0.x on without a record, see
//! docs/policies.md "Claude Code microcompaction"):
//!
//! ```json
//! {"type":"system","subtype":"microcompact_boundary","content":"Context microcompacted",
//!  "microcompactMetadata":{"trigger":"auto","preTokens":61234,"tokensSaved":24000,
//!  "compactedToolIds":["toolu_…"],"clearedAttachmentUUIDs":[]}}
//! ```
//!
//! `preTokens` is the CLI's length / 4 estimate of the old tool results it weighed (not the
//! context), `tokensSaved` of those it cleared. What the reader keeps is in
//! [`super::RecordedCompaction`] (`kind: micro`, `cleared`, `cleared_ids`, `tokens_saved`).

use serde_json::{Map, Value};

use super::readutil::{self, FieldError};
use super::util;

/// One `microcompact_boundary` as recorded.
pub struct Micro {
    pub trigger: Option<String>,
    pub pre_tokens: Option<u64>,
    pub tokens_saved: Option<u64>,
    /// `compactedToolIds`: the `tool_use` ids whose results were cleared.
    pub tool_ids: Vec<String>,
    pub version: Option<String>,
}

/// The record's metadata; the error names the field that is wrong.
pub fn read(obj: &Map<String, Value>) -> Result<Micro, FieldError> {
    let meta = match obj.get("microcompactMetadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m),
        Some(other) => return Err(FieldError::kind("microcompactMetadata", other, "an object")),
    };
    let count = |key: &str| match meta.and_then(|m| m.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => util::token_count(v)
            .map(Some)
            .map_err(|source| FieldError::Count {
                path: format!("microcompactMetadata.{key}"),
                source,
            }),
    };
    let tool_ids = match meta.and_then(|m| m.get("compactedToolIds")) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(ids)) => ids
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    FieldError::kind(
                        format!("microcompactMetadata.compactedToolIds[{i}]"),
                        v,
                        "a string",
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(FieldError::kind(
                "microcompactMetadata.compactedToolIds",
                other,
                "an array",
            ))
        }
    };
    Ok(Micro {
        trigger: meta
            .and_then(|m| m.get("trigger"))
            .and_then(Value::as_str)
            .map(str::to_string),
        pre_tokens: count("preTokens")?,
        tokens_saved: count("tokensSaved")?,
        tool_ids,
        version: readutil::str_field(obj, "version").map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    /// A malformed record is one line naming the file, the line and the field.
    #[test]
    fn a_bad_microcompact_record_is_one_line_naming_the_field() {
        let user = r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}"#;
        for (meta, want) in [
            (
                r#"{"compactedToolIds":[7]}"#,
                "line 2: microcompactMetadata.compactedToolIds[0] is a number, expected a string",
            ),
            (
                r#"{"tokensSaved":-3}"#,
                "line 2: microcompactMetadata.tokensSaved",
            ),
            (r#""x""#, "line 2: microcompactMetadata is a string"),
        ] {
            let text = format!(
                "{user}\n{{\"type\":\"system\",\"uuid\":\"m1\",\"sessionId\":\"s\",\"subtype\":\"microcompact_boundary\",\"microcompactMetadata\":{meta}}}\n"
            );
            let e = crate::transcript::claude_code::read("f.jsonl", &text)
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.starts_with("f.jsonl"), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
