//! ADK reader: session exports (snake_case or camelCase, as ADK serializes with aliases), a
//! JSON list of events, JSONL of events, and ADK eval sets (`eval_cases` / `evalCases`).
//!
//! It keeps every detail ADK's size measures read (part order, payload key order, ids,
//! long-running ids, requested confirmation/auth ids, branch, recorded usage), and follows the
//! oracle's loading rules (shared/oracle/adk_oracle.py `to_events`): partial events are
//! dropped, compaction events go to `recorded_compactions`, a missing or zero timestamp becomes
//! `1700000000 + index`, and a model request is a non-user event whose content role is
//! `model` (or with no content but usage metadata).

use serde::de;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    compact_json, pyjson, readutil, util, AdkPartExtra, Critical, Event, Format, Part, ReadError,
    RecordedCompaction, Role, Session, Usage,
};

const SYNTHETIC_T0: f64 = 1_700_000_000.0;

/// Look up a field by its snake_case name or its camelCase alias.
fn field<'a>(o: &'a Map<String, Value>, snake: &str) -> Option<&'a Value> {
    if let Some(v) = o.get(snake) {
        return Some(v);
    }
    let mut camel = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            camel.push(c.to_ascii_uppercase());
            up = false;
        } else {
            camel.push(c);
        }
    }
    o.get(&camel)
}

fn non_null<'a>(o: &'a Map<String, Value>, snake: &str) -> Option<&'a Value> {
    field(o, snake).filter(|v| !v.is_null())
}

/// True when `text` (the file's content) looks like ADK: a session export, an event list,
/// JSONL of events, or an eval set.
pub fn sniff(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with('{') {
        // Streamed: only the keys are looked at (a 200 MB export is not built as a tree).
        if let Ok(top) = sniff_object(t) {
            if let Some(all_events) = top.events {
                return all_events || top.app_name;
            }
            if top.eval_cases {
                return true;
            }
            return top.looks_like_event;
        }
        // JSONL: every non-empty line an ADK event.
        let mut any = false;
        for line in t.lines().filter(|l| !l.trim().is_empty()).take(20) {
            match serde_json::from_str::<Value>(line) {
                Ok(v) if looks_like_event(&v) => any = true,
                _ => return false,
            }
        }
        return any;
    }
    if t.starts_with('[') {
        let mut de = serde_json::Deserializer::from_str(t);
        let all = de::Deserializer::deserialize_any(&mut de, EventKeys::List);
        if let (Ok(KeysSeen::List { len, all }), Ok(())) = (all, de.end()) {
            return len > 0 && all;
        }
    }
    false
}

/// What [`sniff`] needs of a top-level object, read without building it.
#[derive(Debug, Default)]
struct TopKeys {
    /// The `events` value (the last one, as a parsed map keeps): a list, and whether every
    /// element looks like an event; `None` when absent or not a list.
    events: Option<bool>,
    app_name: bool,
    /// `eval_cases` (else `evalCases`) is a list.
    eval_cases: bool,
    /// The object itself looks like an event ([`looks_like_event`]).
    looks_like_event: bool,
}

fn sniff_object(t: &str) -> Result<TopKeys, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(t);
    let top = match de::Deserializer::deserialize_any(&mut de, EventKeys::Top)? {
        KeysSeen::Top(k) => k,
        _ => return Err(de::Error::custom("not an object")),
    };
    de.end()?;
    Ok(top)
}

/// A key-only reader for [`sniff`]: the top-level object's keys, a list's elements (do they
/// look like events?), or one element's keys.
#[derive(Clone, Copy)]
enum EventKeys {
    Top,
    List,
    Element,
}

enum KeysSeen {
    Top(TopKeys),
    List {
        len: usize,
        all: bool,
    },
    /// An element: whether it looks like an event.
    Element(bool),
    /// Anything else (consumed).
    Other,
}

impl<'de> de::DeserializeSeed<'de> for EventKeys {
    type Value = KeysSeen;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<KeysSeen, D::Error> {
        d.deserialize_any(self)
    }
}

/// Whether a value is a list (its elements consumed unread).
struct IsList;

impl<'de> de::DeserializeSeed<'de> for IsList {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for IsList {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<de::IgnoredAny>()?.is_some() {}
        Ok(true)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map
            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
            .is_some()
        {}
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

impl<'de> de::Visitor<'de> for EventKeys {
    type Value = KeysSeen;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<KeysSeen, A::Error> {
        match self {
            EventKeys::List => {
                let (mut len, mut all) = (0, true);
                while let Some(k) = seq.next_element_seed(EventKeys::Element)? {
                    len += 1;
                    all &= matches!(k, KeysSeen::Element(true));
                }
                Ok(KeysSeen::List { len, all })
            }
            _ => {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(match self {
                    EventKeys::Element => KeysSeen::Element(false),
                    _ => KeysSeen::Other,
                })
            }
        }
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<KeysSeen, A::Error> {
        let mut top = TopKeys::default();
        let (mut author, mut inv, mut content, mut actions) = (false, false, false, false);
        // `eval_cases` wins over `evalCases` (the reader's `field`)
        let (mut snake_eval, mut camel_eval) = (None, None);
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match (self, k.as_ref()) {
                (EventKeys::Top, "events") => {
                    top.events = match map.next_value_seed(EventKeys::List)? {
                        KeysSeen::List { all, .. } => Some(all),
                        _ => None,
                    };
                    continue;
                }
                (EventKeys::Top, "eval_cases") => {
                    snake_eval = Some(map.next_value_seed(IsList)?);
                    continue;
                }
                (EventKeys::Top, "evalCases") => {
                    camel_eval = Some(map.next_value_seed(IsList)?);
                    continue;
                }
                (EventKeys::Top, "app_name" | "appName") => top.app_name = true,
                (_, "author") => author = true,
                (_, "invocation_id" | "invocationId") => inv = true,
                (_, "content") => content = true,
                (_, "actions") => actions = true,
                _ => {}
            }
            map.next_value::<de::IgnoredAny>()?;
        }
        let looks = author && (inv || content || actions);
        Ok(match self {
            EventKeys::Top => {
                top.eval_cases = snake_eval.or(camel_eval).unwrap_or(false);
                top.looks_like_event = looks;
                KeysSeen::Top(top)
            }
            EventKeys::Element => KeysSeen::Element(looks),
            EventKeys::List => KeysSeen::Other,
        })
    }
    fn visit_bool<E>(self, _: bool) -> Result<KeysSeen, E> {
        Ok(self.scalar())
    }
    fn visit_i64<E>(self, _: i64) -> Result<KeysSeen, E> {
        Ok(self.scalar())
    }
    fn visit_u64<E>(self, _: u64) -> Result<KeysSeen, E> {
        Ok(self.scalar())
    }
    fn visit_f64<E>(self, _: f64) -> Result<KeysSeen, E> {
        Ok(self.scalar())
    }
    fn visit_str<E>(self, _: &str) -> Result<KeysSeen, E> {
        Ok(self.scalar())
    }
    fn visit_unit<E>(self) -> Result<KeysSeen, E> {
        Ok(self.scalar())
    }
}

impl EventKeys {
    fn scalar(self) -> KeysSeen {
        match self {
            EventKeys::Element => KeysSeen::Element(false),
            _ => KeysSeen::Other,
        }
    }
}

fn looks_like_event(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    o.contains_key("author")
        && (field(o, "invocation_id").is_some()
            || o.contains_key("content")
            || o.contains_key("actions"))
}

/// Parse the whole file. `file` is the path as the user gave it, used in errors and
/// `Session::source`.
pub fn read(file: &str, text: &str) -> Result<Vec<Session>, ReadError> {
    // Python's NaN / Infinity / big integers, kept as Python prints them (see `pyjson`).
    let text = &*pyjson::normalize(file, text)?;
    let t = text.trim_start();
    // Line numbers below count from `t`; the file's own lines start this much earlier.
    let skipped = text[..text.len() - t.len()].matches('\n').count();
    let stem = session_stem(file);
    if t.starts_with('{') || t.starts_with('[') {
        // Streamed: each event is converted as soon as it is parsed, so a document of any
        // size never exists as one JSON tree. A conversion error is reported once the whole
        // document parsed (a syntax error anywhere comes first, as for a parsed tree).
        let mut b = SessionBuilder::new(file);
        let mut bad: Option<ReadError> = None;
        let top = {
            let mut de = serde_json::Deserializer::from_str(t);
            let seed = EventsSeed {
                b: &mut b,
                bad: &mut bad,
                prefix: "$",
                top: true,
            };
            de::DeserializeSeed::deserialize(seed, &mut de).and_then(|top| de.end().map(|_| top))
        };
        match top {
            Ok(Streamed::List) if t.starts_with('[') => {
                if let Some(e) = bad {
                    return Err(e);
                }
                return Ok(vec![b.finish(stem, file.to_string(), Format::Adk)]);
            }
            Ok(Streamed::Object {
                events_list,
                rest: o,
            }) => {
                if events_list {
                    if let Some(e) = bad {
                        return Err(e);
                    }
                    let id = o
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or(stem);
                    return Ok(vec![b.finish(id, file.to_string(), Format::Adk)]);
                }
                if let Some(cases) = field(&o, "eval_cases") {
                    return read_eval_set(file, cases);
                }
                if looks_like_event(&Value::Object(o)) {
                    // A single-line JSONL file holding one event.
                    return read_jsonl(file, t, stem, skipped);
                }
                return Err(ReadError::new(
                    file,
                    "$",
                    "an ADK session needs an \"events\" list",
                ));
            }
            Ok(_) => return Err(ReadError::new(file, "$", "expected a JSON object or list")),
            // A list, or an object whose first line is not a JSON value by itself, is one
            // multi-line document, not JSONL: name the line where the document breaks.
            Err(e) if t.starts_with('[') || !first_line_is_json(t) => {
                return Err(ReadError::new(
                    file,
                    format!("line {}", e.line() + skipped),
                    readutil::json_error(&e),
                ))
            }
            Err(_) => {}
        }
    }
    read_jsonl(file, t, stem, skipped)
}

/// A streamed top-level document: a list of events (converted), or an object whose other
/// keys are kept as values and whose `events` list (the last one, as a parsed map keeps)
/// was converted.
enum Streamed {
    List,
    Object {
        events_list: bool,
        rest: Map<String, Value>,
    },
    /// A non-list value where a list of events may stand (kept for the caller).
    Value(Value),
}

/// Reads a list of events into a [`SessionBuilder`] element by element (paths
/// `{prefix}[i]`), keeping the first conversion error and parsing on; at the top (`top`), an
/// object is read key by key with its `events` value read the same way.
struct EventsSeed<'a, 'f> {
    b: &'a mut SessionBuilder<'f>,
    bad: &'a mut Option<ReadError>,
    prefix: &'a str,
    top: bool,
}

impl<'de> de::DeserializeSeed<'de> for EventsSeed<'_, '_> {
    type Value = Streamed;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Streamed, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for EventsSeed<'_, '_> {
    type Value = Streamed;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Streamed, A::Error> {
        let mut i = 0usize;
        while let Some(v) = seq.next_element::<Value>()? {
            if self.bad.is_none() {
                if let Err(e) = self.b.push(&format!("{}[{i}]", self.prefix), &v) {
                    *self.bad = Some(e);
                }
            }
            i += 1;
        }
        Ok(Streamed::List)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Streamed, A::Error> {
        if !self.top {
            let v = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
            return Ok(Streamed::Value(v));
        }
        let mut rest = Map::new();
        let mut events_list = false;
        while let Some(k) = map.next_key::<String>()? {
            if k != "events" {
                let v: Value = map.next_value()?;
                rest.insert(k, v);
                continue;
            }
            // a repeated key: the last value counts
            *self.b = SessionBuilder::new(self.b.file);
            *self.bad = None;
            let seed = EventsSeed {
                b: &mut *self.b,
                bad: &mut *self.bad,
                prefix: "$.events",
                top: false,
            };
            match map.next_value_seed(seed)? {
                Streamed::Value(v) => {
                    events_list = false;
                    rest.insert(k, v);
                }
                _ => {
                    events_list = true;
                    rest.remove(&k);
                }
            }
        }
        Ok(Streamed::Object { events_list, rest })
    }
    fn visit_bool<E>(self, v: bool) -> Result<Streamed, E> {
        Ok(Streamed::Value(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Streamed, E> {
        Ok(Streamed::Value(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Streamed, E> {
        Ok(Streamed::Value(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Streamed, E> {
        Ok(Streamed::Value(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Streamed, E> {
        Ok(Streamed::Value(Value::String(v.to_string())))
    }
    fn visit_unit<E>(self) -> Result<Streamed, E> {
        Ok(Streamed::Value(Value::Null))
    }
}

fn first_line_is_json(t: &str) -> bool {
    t.lines()
        .next()
        .is_some_and(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok())
}

fn read_jsonl(
    file: &str,
    text: &str,
    stem: String,
    skipped: usize,
) -> Result<Vec<Session>, ReadError> {
    let mut values = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let line_no = i + 1 + skipped;
        let v: Value = serde_json::from_str(line).map_err(|e| {
            ReadError::new(file, format!("line {line_no}"), readutil::json_error(&e))
        })?;
        values.push((format!("line {line_no}"), v));
    }
    let items: Vec<(String, &Value)> = values.iter().map(|(l, v)| (l.clone(), v)).collect();
    Ok(vec![build_session(
        file,
        stem,
        file.to_string(),
        Format::Adk,
        &items,
    )?])
}

fn session_stem(file: &str) -> String {
    let name = file.rsplit(['/', '\\']).next().unwrap_or(file);
    let name = name
        .strip_suffix(".jsonl")
        .or_else(|| name.strip_suffix(".json"))
        .unwrap_or(name);
    name.strip_suffix(".session")
        .or_else(|| name.strip_suffix(".events"))
        .unwrap_or(name)
        .to_string()
}

/// ADK's pydantic models refuse a number where they require a string (text, names, ids,
/// author): so does the reader, rather than measure the `pyjson` tag as text.
fn refuse_number_tag(file: &str, path: &str, v: Option<&Value>) -> Result<(), ReadError> {
    match v.and_then(pyjson::tagged_value) {
        Some(n) => Err(ReadError::new(
            file,
            path,
            format!(
                "expected a string, found the number {} (ADK's pydantic models refuse it)",
                n.json()
            ),
        )),
        None => Ok(()),
    }
}

/// A number field (a NaN / Infinity / big-integer tag counts, as Python's float() reads it).
fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(pyjson::as_f64)
}

/// A token count of `usage_metadata` (absent or null: `None`); anything but a whole number
/// from 0 to 2^53 is an error naming `path.key`.
fn tokens(
    file: &str,
    path: &str,
    m: &Map<String, Value>,
    key: &str,
) -> Result<Option<u64>, ReadError> {
    non_null(m, key)
        .map(|v| {
            util::token_count(v).map_err(|m| ReadError::new(file, format!("{path}.{key}"), m.0))
        })
        .transpose()
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        Some(Value::Object(o)) => o.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// Escaped length of a string in pydantic's compact JSON (code points, no quotes); the
/// same rule as `tokens::adk::json_str_len_raw`, which this module may not use.
fn json_str_len(s: &str) -> u64 {
    s.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
            c if (c as u32) < 0x20 => 6,
            _ => 1,
        })
        .sum()
}

/// Decoded byte count of a base64 string (standard or URL-safe, padding optional).
fn base64_bytes(s: &str) -> u64 {
    let n = s
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_'))
        .count() as u64;
    n * 3 / 4
}

/// Length of the URL-safe, padded base64 pydantic writes for `bytes` decoded bytes.
fn base64_len(bytes: u64) -> u64 {
    bytes.div_ceil(3) * 4
}

/// Part fields ADK's replay is not modelled for; a transcript holding one is refused
/// rather than replayed with wrong numbers.
const UNSUPPORTED_PART_FIELDS: [&str; 6] = [
    "tool_call",
    "tool_response",
    "video_metadata",
    "media_resolution",
    "part_metadata",
    "media_processing",
];

/// An `inline_data` / `file_data` part: an attachment, with its exact pydantic JSON length
/// (`{"inline_data":{"data":"…","display_name":"…","mime_type":"…"}}`).
fn blob_part(key: &str, b: &Map<String, Value>) -> (Part, u64) {
    let s = |k: &str| non_null(b, k).and_then(Value::as_str);
    let mut fields: Vec<u64> = Vec::new();
    let mut size = None;
    if let Some(d) = s("display_name") {
        fields.push(15 + 2 + json_str_len(d));
    }
    if key == "inline_data" {
        if let Some(d) = s("data") {
            let bytes = base64_bytes(d);
            size = Some(bytes);
            fields.push(7 + 2 + base64_len(bytes));
        }
    } else if let Some(u) = s("file_uri") {
        fields.push(11 + 2 + json_str_len(u));
    }
    if let Some(m) = s("mime_type") {
        fields.push(12 + 2 + json_str_len(m));
    }
    let inner = 2 + fields.iter().sum::<u64>() + (fields.len() as u64).saturating_sub(1);
    let json = 2 + (key.len() as u64 + 3) + inner;
    let name = s("display_name")
        .or_else(|| s("file_uri"))
        .unwrap_or(key)
        .to_string();
    (
        Part::Attachment {
            name,
            mime_type: s("mime_type").map(str::to_string),
            text: None,
            size_bytes: size,
        },
        json,
    )
}

/// A code-execution part (`executable_code` / `code_execution_result`: flat objects of
/// strings) as an opaque attachment, with its pydantic JSON length
/// (`{"executable_code":{"code":"…","language":"PYTHON"}}`); `None` when a field is not a
/// string, whose JSON the reader cannot rebuild.
fn code_part(key: &str, b: &Map<String, Value>) -> Option<(Part, u64)> {
    let mut fields: Vec<u64> = Vec::new();
    for (k, v) in b {
        match v {
            Value::Null => {}
            Value::String(x) => {
                // pydantic writes snake_case keys whatever alias the export used
                let snake: usize = k
                    .chars()
                    .map(|c| if c.is_ascii_uppercase() { 2 } else { 1 })
                    .sum();
                fields.push(snake as u64 + 3 + 2 + json_str_len(x));
            }
            _ => return None,
        }
    }
    let inner = 2 + fields.iter().sum::<u64>() + (fields.len() as u64).saturating_sub(1);
    // The code or its output, so real tokenizers count it (ADK's own measures do not).
    let text = ["code", "output"]
        .iter()
        .find_map(|k| b.get(*k).and_then(Value::as_str))
        .map(str::to_string);
    let part = Part::Attachment {
        name: key.to_string(),
        mime_type: Some("text/plain".into()),
        text,
        size_bytes: None,
    };
    Some((part, 2 + (key.len() as u64 + 3) + inner))
}

/// One ADK `Content`: role, whether the role is missing/empty, parts, and ADK-only extras.
struct ContentParts {
    role: Role,
    role_absent: bool,
    parts: Vec<Part>,
    extras: Vec<AdkPartExtra>,
}

/// Convert one ADK `Content` into the session model.
fn content_parts(
    o: &Map<String, Value>,
    path: &str,
    file: &str,
) -> Result<ContentParts, ReadError> {
    let raw_role = o.get("role").and_then(Value::as_str);
    let role = match raw_role {
        Some("model") => Role::Model,
        _ => Role::User,
    };
    let listed = non_null(o, "parts");
    let mut out = ContentParts {
        role,
        role_absent: raw_role.is_none_or(str::is_empty),
        // one part each, mostly: sized now, so no shrinking frees room between events later
        parts: Vec::with_capacity(listed.and_then(Value::as_array).map_or(0, Vec::len)),
        extras: Vec::new(),
    };
    if let Some(ps) = listed {
        let Some(ps) = ps.as_array() else {
            return Err(ReadError::new(
                file,
                format!("{path}.parts"),
                "expected a list of parts",
            ));
        };
        for (j, p) in ps.iter().enumerate() {
            let at = PartAt { file, path, j };
            let Some(p) = p.as_object() else {
                return Err(at.err(&[], "expected an object"));
            };
            read_part(p, &at, &mut out)?;
        }
    }
    out.extras.sort_by_key(|x| x.index);
    Ok(out)
}

/// Where a part is, for errors: `{path}.parts[{j}]` of `file`.
struct PartAt<'a> {
    file: &'a str,
    path: &'a str,
    j: usize,
}

impl PartAt<'_> {
    /// `{path}.parts[{j}]`, then `.field` for each of `fields`.
    fn location(&self, fields: &[&str]) -> String {
        let mut s = format!("{}.parts[{}]", self.path, self.j);
        for f in fields {
            s.push('.');
            s.push_str(f);
        }
        s
    }

    fn err(&self, fields: &[&str], message: impl Into<String>) -> ReadError {
        ReadError::new(self.file, self.location(fields), message)
    }
}

/// One ADK `Part`: one session part (two when text and a call share it), and what ADK sends
/// beyond it (a blob's or code's exact JSON size, a thought signature, a joined pair).
fn read_part(
    p: &Map<String, Value>,
    at: &PartAt<'_>,
    out: &mut ContentParts,
) -> Result<(), ReadError> {
    for k in UNSUPPORTED_PART_FIELDS {
        if non_null(p, k).is_some() {
            return Err(at.err(
                &[k],
                format!("not supported: `{k}` parts (ADK replay is not modelled for them)"),
            ));
        }
    }
    let first = out.parts.len();
    let signature = non_null(p, "thought_signature").and_then(Value::as_str);
    let thought = non_null(p, "thought").and_then(Value::as_bool) == Some(true);
    if let Some(text) = non_null(p, "text") {
        refuse_number_tag(at.file, &at.location(&["text"]), Some(text))?;
        let text = text.as_str().unwrap_or_default().to_string();
        if thought {
            out.parts.push(Part::Thought { text });
        } else {
            out.parts.push(Part::Text { text });
        }
    }
    if let Some((id, name, args)) = call_fields(p, at, "function_call", "args")? {
        out.parts.push(Part::ToolCall { id, name, args });
    }
    if let Some((id, name, response)) = call_fields(p, at, "function_response", "response")? {
        out.parts.push(Part::ToolResponse { id, name, response });
    }
    opaque_parts(p, at, first, out)?;
    if out.parts.len() == first && signature.is_some() {
        // A signature-only part: no text, but ADK sends it.
        out.parts.push(Part::Thought {
            text: String::new(),
        });
        out.extras.push(AdkPartExtra {
            index: first as u32,
            // {"thought_signature":"…"} is the whole part; a bare empty thought
            // would be {"text":"","thought":true} (26 chars).
            json_chars: Some(0),
            ..Default::default()
        });
    }
    if out.parts.len() > first + 2 {
        return Err(at.err(
            &[],
            "not supported: a part holding more than two of text / function_call / function_response",
        ));
    }
    if out.parts.len() == first + 2 {
        out.extras.push(AdkPartExtra {
            index: (first + 1) as u32,
            joined: true,
            ..Default::default()
        });
    }
    if let Some(sig) = signature {
        add_signature(&mut out.extras, first as u32, sig);
    }
    Ok(())
}

/// A `function_call` / `function_response` field's id, name and payload (`args` /
/// `response`), when the part has one.
fn call_fields(
    p: &Map<String, Value>,
    at: &PartAt<'_>,
    key: &str,
    payload: &str,
) -> Result<Option<(Option<String>, String, Value)>, ReadError> {
    let Some(f) = non_null(p, key).and_then(Value::as_object) else {
        return Ok(None);
    };
    for k in ["id", "name"] {
        refuse_number_tag(at.file, &at.location(&[key, k]), non_null(f, k))?;
    }
    Ok(Some((
        non_null(f, "id")
            .and_then(Value::as_str)
            .map(str::to_string),
        non_null(f, "name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        non_null(f, payload).map_or(Value::Null, compact_json),
    )))
}

/// A part's blob (`inline_data`, `file_data`) or code (`executable_code`,
/// `code_execution_result`): one session part each, alone in its ADK part, its exact JSON
/// size kept.
fn opaque_parts(
    p: &Map<String, Value>,
    at: &PartAt<'_>,
    first: usize,
    out: &mut ContentParts,
) -> Result<(), ReadError> {
    let push = |out: &mut ContentParts, (part, json): (Part, u64)| {
        out.parts.push(part);
        out.extras.push(AdkPartExtra {
            index: first as u32,
            json_chars: Some(json),
            opaque: true,
            ..Default::default()
        });
    };
    for key in ["inline_data", "file_data"] {
        if let Some(b) = non_null(p, key).and_then(Value::as_object) {
            if out.parts.len() > first {
                return Err(at.err(
                    &[key],
                    format!("not supported: `{key}` together with other content in one part"),
                ));
            }
            push(out, blob_part(key, b));
        }
    }
    for key in ["executable_code", "code_execution_result"] {
        if let Some(b) = non_null(p, key).and_then(Value::as_object) {
            let coded = if out.parts.len() > first {
                None
            } else {
                code_part(key, b)
            };
            let Some(coded) = coded else {
                return Err(at.err(
                    &[key],
                    format!("not supported: this `{key}` part (non-string fields, or other content in the same part)"),
                ));
            };
            push(out, coded);
        }
    }
    Ok(())
}

/// Count a part's thought signature in its extra: `,"thought_signature":"…"` (pydantic
/// re-encodes the bytes URL-safe, padded), or the whole part when it holds nothing else.
fn add_signature(extras: &mut Vec<AdkPartExtra>, idx: u32, sig: &str) {
    let b64 = base64_len(base64_bytes(sig));
    let e = match extras.iter_mut().position(|x| x.index == idx) {
        Some(k) => &mut extras[k],
        None => {
            extras.push(AdkPartExtra {
                index: idx,
                ..Default::default()
            });
            extras.last_mut().expect("just pushed")
        }
    };
    e.signature = true;
    match e.json_chars.as_mut() {
        // signature-only part: {"thought_signature":"…"}
        Some(j) if *j == 0 => *j = 2 + 19 + 3 + b64,
        Some(j) => *j += 23 + b64,
        None => e.json_extra += 23 + b64,
    }
}

/// One ADK session from its events (JSON values, each with the path errors name): the reader
/// the database readers share with exports (`transcript::db`).
pub(crate) fn session_from_events(
    file: &str,
    id: String,
    source: String,
    items: &[(String, &Value)],
) -> Result<Session, ReadError> {
    build_session(file, id, source, Format::Adk, items)
}

/// A compaction event (`actions.compaction`): the summary ADK recorded before event
/// `at_event`.
fn recorded_compaction(c: &Map<String, Value>, at_event: usize) -> RecordedCompaction {
    let summary = non_null(c, "compacted_content")
        .and_then(Value::as_object)
        .and_then(|cc| non_null(cc, "parts"))
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default();
    RecordedCompaction {
        at_event,
        source: "adk compaction event".into(),
        trigger: None,
        pre_tokens: None,
        start_timestamp: num(field(c, "start_timestamp")),
        end_timestamp: num(field(c, "end_timestamp")),
        summary,
        ..RecordedCompaction::new(0, "")
    }
}

/// An event's content, and whether it is a transcription: `_get_contents` turns a
/// content-less transcription into a text content (user for input, model for output).
fn event_content(
    file: &str,
    path: &str,
    o: &Map<String, Value>,
    content: Option<&Map<String, Value>>,
    author: &str,
) -> Result<(ContentParts, bool), ReadError> {
    let mut cp = match content {
        Some(c) => content_parts(c, &format!("{path}.content"), file)?,
        None => ContentParts {
            role: if author == "user" {
                Role::User
            } else {
                Role::Model
            },
            role_absent: false,
            parts: Vec::new(),
            extras: Vec::new(),
        },
    };
    if content.is_some() {
        return Ok((cp, false));
    }
    for (f, r) in [
        ("input_transcription", Role::User),
        ("output_transcription", Role::Model),
    ] {
        let text = non_null(o, f)
            .and_then(Value::as_object)
            .and_then(|t| non_null(t, "text"))
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty());
        if let Some(text) = text {
            cp.role = r;
            cp.parts = vec![Part::Text {
                text: text.to_string(),
            }];
            return Ok((cp, true));
        }
    }
    Ok((cp, false))
}

/// `_should_include_event_in_context`: a user message (not a function response) on a
/// workflow node path is only for the agent at that node; replays measure as a non-workflow
/// agent (node path None), as the oracle does.
fn for_workflow_node(e: &Event, o: &Map<String, Value>) -> bool {
    e.author == "user"
        && !e
            .parts
            .iter()
            .any(|p| matches!(p, Part::ToolResponse { .. }))
        && non_null(o, "node_info")
            .and_then(Value::as_object)
            .and_then(|n| non_null(n, "path"))
            .and_then(Value::as_str)
            .is_some_and(|p| !p.is_empty())
}

/// An event's `usage_metadata` (at `up`) as recorded usage; `None` without a prompt count.
fn usage(file: &str, up: &str, um: &Map<String, Value>) -> Result<Option<Usage>, ReadError> {
    let get = |k: &str| tokens(file, up, um, k);
    let cached = get("cached_content_token_count")?.unwrap_or(0);
    let output = get("candidates_token_count")?
        .unwrap_or(0)
        .saturating_add(get("thoughts_token_count")?.unwrap_or(0));
    Ok(get("prompt_token_count")?.map(|p| Usage {
        prompt_tokens: p,
        cached_read_tokens: cached,
        cache_write_tokens: 0,
        output_tokens: output,
    }))
}

/// The tool confirmations and auth configs an event's actions request; a confirmation is
/// critical.
fn requested(e: &mut Event, a: &Map<String, Value>) {
    e.requested_ids = str_list(non_null(a, "requested_tool_confirmations"));
    e.requested_ids
        .extend(str_list(non_null(a, "requested_auth_configs")));
    if non_null(a, "requested_tool_confirmations")
        .is_some_and(|v| v.as_object().is_some_and(|m| !m.is_empty()))
    {
        e.critical.push(Critical::Confirmation);
    }
}

/// An ADK session's events converted one at a time (a streamed document never holds more
/// than one event's JSON at once), then the session.
struct SessionBuilder<'f> {
    file: &'f str,
    events: Vec<Event>,
    recorded: Vec<RecordedCompaction>,
    synthetic: bool,
    model: Option<String>,
}

impl<'f> SessionBuilder<'f> {
    fn new(file: &'f str) -> Self {
        SessionBuilder {
            file,
            events: Vec::new(),
            recorded: Vec::new(),
            synthetic: false,
            model: None,
        }
    }

    /// Event `v`, at JSON path (or line) `path`.
    fn push(&mut self, path: &str, v: &Value) -> Result<(), ReadError> {
        let Some(o) = v.as_object() else {
            return Err(ReadError::new(
                self.file,
                path,
                "an event must be a JSON object",
            ));
        };
        if non_null(o, "partial").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let actions = non_null(o, "actions").and_then(Value::as_object);
        if let Some(c) = actions
            .and_then(|a| non_null(a, "compaction"))
            .and_then(Value::as_object)
        {
            self.recorded
                .push(recorded_compaction(c, self.events.len()));
            return Ok(());
        }
        let (scope, rewind) = scope_and_rewind(self.file, path, o, actions)?;
        for k in ["author", "invocation_id"] {
            refuse_number_tag(self.file, &format!("{path}.{k}"), non_null(o, k))?;
        }
        let author = non_null(o, "author")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let Some(inv) = non_null(o, "invocation_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            return Err(ReadError::new(
                self.file,
                path,
                "event has no invocation_id",
            ));
        };
        let content = non_null(o, "content").and_then(Value::as_object);
        let (cp, transcription) = event_content(self.file, path, o, content, &author)?;
        let ts = match num(field(o, "timestamp")) {
            Some(t) if t != 0.0 => t,
            _ => {
                self.synthetic = true;
                SYNTHETIC_T0 + self.events.len() as f64
            }
        };
        let mut e = Event::new(author, cp.role, inv, ts);
        e.id = non_null(o, "id")
            .and_then(Value::as_str)
            .map(str::to_string);
        e.parts = cp.parts;
        e.role_absent = cp.role_absent;
        e.transcription = transcription;
        e.context_hidden = for_workflow_node(&e, o);
        e.adk_parts = cp.extras;
        let um = non_null(o, "usage_metadata").and_then(Value::as_object);
        if let Some(um) = um {
            e.usage = usage(self.file, &format!("{path}.usage_metadata"), um)?;
        }
        let content_role_model =
            content.and_then(|c| c.get("role")).and_then(Value::as_str) == Some("model");
        e.model_request =
            e.author != "user" && (content_role_model || (content.is_none() && um.is_some()));
        if let Some(m) = non_null(o, "model_version").and_then(Value::as_str) {
            e.model = Some(m.to_string());
            self.model.get_or_insert_with(|| m.to_string());
        }
        e.long_running_tool_ids = str_list(non_null(o, "long_running_tool_ids"));
        if let Some(a) = actions {
            requested(&mut e, a);
        }
        critical_flags(&mut e, o);
        // ADK treats an empty branch like none (`if not event.branch`).
        e.branch = non_null(o, "branch")
            .and_then(Value::as_str)
            .filter(|b| !b.is_empty())
            .map(str::to_string);
        e.isolation_scope = scope;
        e.rewind_before_invocation_id = rewind;
        self.events.push(e);

        Ok(())
    }

    fn finish(self, id: String, source: String, format: Format) -> Session {
        Session {
            recorded_compactions: self.recorded,
            model: self.model,
            synthetic_timestamps: self.synthetic,
            ..Session::new(id, source, format, self.events)
        }
    }
}

fn build_session(
    file: &str,
    id: String,
    source: String,
    format: Format,
    items: &[(String, &Value)],
) -> Result<Session, ReadError> {
    let mut b = SessionBuilder::new(file);
    for (path, v) in items {
        b.push(path, v)?;
    }
    Ok(b.finish(id, source, format))
}

/// ADK 2.13's isolation scope and rewind marker of one event (`None` when unused: ADK writes
/// `null`, and an empty rewind id is falsy to `_apply_rewinds`).
fn scope_and_rewind(
    file: &str,
    path: &str,
    o: &Map<String, Value>,
    actions: Option<&Map<String, Value>>,
) -> Result<(Option<String>, Option<String>), ReadError> {
    let string = |v: Option<&Value>, field: &str| match v {
        None => Ok(None),
        Some(x) if pyjson::tagged_value(x).is_some() => {
            refuse_number_tag(file, &format!("{path}.{field}"), Some(x)).map(|_| None)
        }
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(ReadError::new(
            file,
            format!("{path}.{field}"),
            format!("expected a string, found {}", kind(other)),
        )),
    };
    // An empty scope is still a scope to ADK (`ev_iso != isolation_scope`), so keep it.
    let scope = string(non_null(o, "isolation_scope"), "isolation_scope")?;
    let rewind = match actions {
        Some(a) => string(
            non_null(a, "rewind_before_invocation_id"),
            "actions.rewind_before_invocation_id",
        )?
        .filter(|r| !r.is_empty()),
        None => None,
    };
    Ok((scope, rewind))
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Critical events ADK records explicitly: tool errors (a response with an `error` key),
/// answers to a confirmation request (`adk_request_confirmation` response: approval or
/// refusal), and interrupted events.
fn critical_flags(e: &mut Event, o: &Map<String, Value>) {
    let add = |c: Critical, e: &mut Event| {
        if !e.critical.contains(&c) {
            e.critical.push(c);
        }
    };
    let mut found = Vec::new();
    for p in &e.parts {
        if let Part::ToolResponse {
            name,
            response: Value::Object(r),
            ..
        } = p
        {
            if r.contains_key("error") {
                found.push(Critical::ToolError);
            }
            if name == "adk_request_confirmation" {
                match r.get("confirmed").and_then(Value::as_bool) {
                    Some(true) => found.push(Critical::Approval),
                    Some(false) => found.push(Critical::Refusal),
                    None => {}
                }
            }
        }
    }
    if non_null(o, "interrupted").and_then(Value::as_bool) == Some(true) {
        found.push(Critical::Interruption);
    }
    for c in found {
        add(c, e);
    }
}

fn read_eval_set(file: &str, cases: &Value) -> Result<Vec<Session>, ReadError> {
    let Some(cases) = cases.as_array() else {
        return Err(ReadError::new(file, "$.eval_cases", "expected a list"));
    };
    let mut out = Vec::new();
    for (ci, case) in cases.iter().enumerate() {
        let cpath = format!("$.eval_cases[{ci}]");
        let Some(c) = case.as_object() else {
            return Err(ReadError::new(file, cpath, "expected an object"));
        };
        let id = non_null(c, "eval_id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("case{ci}"));
        let conv = non_null(c, "conversation")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let evs = eval_case_events(file, &cpath, &conv)?;
        let items: Vec<(String, &Value)> = evs
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{cpath}.conversation(event {i})"), v))
            .collect();
        out.push(build_session(
            file,
            id.clone(),
            format!("{file}#{id}"),
            Format::AdkEvalSet,
            &items,
        )?);
    }
    Ok(out)
}

/// An eval case's conversation as ADK events: per invocation the user content, what the
/// agent did in between, the final response.
fn eval_case_events(file: &str, cpath: &str, conv: &[Value]) -> Result<Vec<Value>, ReadError> {
    let mut evs = EvalEvents {
        evs: Vec::new(),
        t: SYNTHETIC_T0,
    };
    for (ii, inv) in conv.iter().enumerate() {
        let Some(inv) = inv.as_object() else {
            return Err(ReadError::new(
                file,
                format!("{cpath}.conversation[{ii}]"),
                "expected an object",
            ));
        };
        let inv_id = non_null(inv, "invocation_id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("inv-{ii}"));
        if let Some(ts) = num(non_null(inv, "creation_timestamp")) {
            if ts > evs.t {
                evs.t = ts;
            }
        }
        if let Some(u) = non_null(inv, "user_content") {
            evs.push("user", &inv_id, u.clone());
        }
        if let Some(im) = non_null(inv, "intermediate_data").and_then(Value::as_object) {
            evs.intermediate(im, &inv_id);
        }
        if let Some(f) = non_null(inv, "final_response") {
            evs.push("agent", &inv_id, f.clone());
        }
    }
    Ok(evs.evs)
}

/// Events of an eval case as ADK event JSON, a millisecond apart from each invocation's
/// creation time on (eval sets record no event times).
struct EvalEvents {
    evs: Vec<Value>,
    t: f64,
}

impl EvalEvents {
    fn push(&mut self, author: &str, inv_id: &str, content: Value) {
        self.evs.push(serde_json::json!({"author": author, "invocation_id": inv_id, "timestamp": self.t, "content": content}));
        self.t += 0.001;
    }

    /// An invocation's `intermediate_data`: tool uses with their responses, whole events
    /// (`invocation_events`, newer eval sets) and intermediate responses.
    fn intermediate(&mut self, im: &Map<String, Value>, inv_id: &str) {
        let uses = non_null(im, "tool_uses")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let resps = non_null(im, "tool_responses")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (k, fc) in uses.iter().enumerate() {
            self.push(
                "agent",
                inv_id,
                serde_json::json!({"role": "model", "parts": [{"function_call": fc}]}),
            );
            if let Some(fr) = resps.get(k) {
                self.push(
                    "agent",
                    inv_id,
                    serde_json::json!({"role": "user", "parts": [{"function_response": fr}]}),
                );
            }
        }
        if let Some(Value::Array(ies)) = non_null(im, "invocation_events") {
            for ie in ies.iter().filter_map(Value::as_object) {
                let a = non_null(ie, "author")
                    .and_then(Value::as_str)
                    .unwrap_or("agent")
                    .to_string();
                let mut ev =
                    serde_json::json!({"author": a, "invocation_id": inv_id, "timestamp": self.t});
                if let Some(c) = non_null(ie, "content") {
                    ev["content"] = c.clone();
                }
                if let Some(u) = non_null(ie, "usage_metadata") {
                    ev["usage_metadata"] = u.clone();
                }
                self.evs.push(ev);
                self.t += 0.001;
            }
        }
        if let Some(Value::Array(irs)) = non_null(im, "intermediate_responses") {
            for ir in irs {
                if let Some([a, ps]) = ir.as_array().map(Vec::as_slice) {
                    let a = a.as_str().unwrap_or("agent").to_string();
                    self.push(
                        &a,
                        inv_id,
                        serde_json::json!({"role": "model", "parts": ps}),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_and_snake_read_the_same() {
        let snake = r#"{"events":[{"author":"user","invocation_id":"i1","timestamp":1.5,"content":{"role":"user","parts":[{"text":"hi"}]}},
          {"author":"a","invocation_id":"i1","timestamp":2.5,"content":{"role":"model","parts":[{"function_call":{"id":"c1","name":"f","args":{"b":1,"a":2}}}]},
           "usage_metadata":{"prompt_token_count":10,"candidates_token_count":3},"long_running_tool_ids":["c1"]},
          {"author":"a","invocation_id":"i1","timestamp":3.0,"partial":true,"content":{"role":"model","parts":[{"text":"x"}]}},
          {"author":"user","invocation_id":"i2","timestamp":4.0,"actions":{"compaction":{"start_timestamp":1.5,"end_timestamp":2.5,"compacted_content":{"role":"model","parts":[{"text":"sum"}]}}}}]}"#;
        let camel = r#"[{"author":"user","invocationId":"i1","timestamp":1.5,"content":{"role":"user","parts":[{"text":"hi"}]}},
          {"author":"a","invocationId":"i1","timestamp":2.5,"content":{"role":"model","parts":[{"functionCall":{"id":"c1","name":"f","args":{"b":1,"a":2}}}]},
           "usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":3},"longRunningToolIds":["c1"]},
          {"author":"a","invocationId":"i1","timestamp":3.0,"partial":true,"content":{"role":"model","parts":[{"text":"x"}]}},
          {"author":"user","invocationId":"i2","timestamp":4.0,"actions":{"compaction":{"startTimestamp":1.5,"endTimestamp":2.5,"compactedContent":{"role":"model","parts":[{"text":"sum"}]}}}}]"#;
        let a = read("s.json", snake).unwrap();
        let b = read("s.json", camel).unwrap();
        assert_eq!(a[0].events, b[0].events);
        assert_eq!(
            a[0].events.len(),
            2,
            "partial and compaction events are not raw events"
        );
        assert_eq!(a[0].recorded_compactions.len(), 1);
        assert_eq!(a[0].recorded_compactions[0].summary, "sum");
        let e = &a[0].events[1];
        assert!(e.model_request);
        assert_eq!(e.usage.map(|u| u.prompt_tokens), Some(10));
        assert_eq!(e.long_running_tool_ids, vec!["c1".to_string()]);
        // key order of args is kept (json.dumps measures it as written)
        match &e.parts[0] {
            Part::ToolCall { args, .. } => assert_eq!(args.to_string(), r#"{"b":1,"a":2}"#),
            p => panic!("unexpected part {p:?}"),
        }
        assert!(sniff(snake) && sniff(camel));
    }

    #[test]
    fn jsonl_and_errors() {
        let jsonl = "{\"author\":\"user\",\"invocation_id\":\"i\",\"timestamp\":1,\"content\":{\"role\":\"user\",\"parts\":[{\"text\":\"a\"}]}}\n\n{\"author\":\"m\",\"invocation_id\":\"i\",\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"b\"}]}}\n";
        let s = read("x.jsonl", jsonl).unwrap();
        assert_eq!(s[0].events.len(), 2);
        assert_eq!(s[0].events[1].timestamp, SYNTHETIC_T0 + 1.0);
        assert!(s[0].synthetic_timestamps);
        let bad = "{\"author\":\"user\",\"invocation_id\":\"i\"}\n{oops\n";
        let err = read("x.jsonl", bad).unwrap_err();
        assert_eq!(err.location, "line 2");
        let noinv = r#"{"events":[{"author":"user","timestamp":1}]}"#;
        assert_eq!(read("y.json", noinv).unwrap_err().location, "$.events[0]");
    }
}

#[cfg(test)]
mod critical_tests {
    use super::*;

    #[test]
    fn confirmations_errors_and_interruptions_are_flagged() {
        let text = r#"{"events":[
          {"author":"a","invocation_id":"i","timestamp":1,"content":{"role":"model","parts":[{"function_call":{"id":"c","name":"adk_request_confirmation","args":{}}}]},
           "actions":{"requested_tool_confirmations":{"d1":{"hint":"sure?"}}}},
          {"author":"user","invocation_id":"j","timestamp":2,"content":{"role":"user","parts":[{"function_response":{"id":"c","name":"adk_request_confirmation","response":{"confirmed":false}}}]}},
          {"author":"a","invocation_id":"j","timestamp":3,"content":{"role":"user","parts":[{"function_response":{"id":"x","name":"t","response":{"error":"boom"}}}]}},
          {"author":"a","invocation_id":"j","timestamp":4,"interrupted":true,"content":{"role":"model","parts":[{"text":"stop"}]}}]}"#;
        let s = read("c.json", text).unwrap();
        let flags: Vec<Vec<Critical>> = s[0].events.iter().map(|e| e.critical.clone()).collect();
        assert_eq!(flags[0], vec![Critical::Confirmation]);
        assert_eq!(s[0].events[0].requested_ids, vec!["d1".to_string()]);
        assert_eq!(flags[1], vec![Critical::Refusal]);
        assert_eq!(flags[2], vec![Critical::ToolError]);
        assert_eq!(flags[3], vec![Critical::Interruption]);
    }
}

#[cfg(test)]
mod eval_set_tests {
    use super::*;

    #[test]
    fn eval_set_cases_become_sessions() {
        let text = r#"{"eval_set_id":"s","evalCases":[
          {"evalId":"case_a","conversation":[
            {"invocationId":"inv1","userContent":{"role":"user","parts":[{"text":"weather?"}]},
             "finalResponse":{"role":"model","parts":[{"text":"sunny"}]},
             "intermediateData":{"toolUses":[{"id":"c1","name":"weather","args":{"city":"Oslo"}}],
                                 "toolResponses":[{"id":"c1","name":"weather","response":{"t":3}}]},
             "creationTimestamp":1700000100.0}]},
          {"evalId":"case_b","conversation":[
            {"invocationId":"inv1","userContent":{"role":"user","parts":[{"text":"hi"}]},
             "intermediateData":{"invocationEvents":[
               {"author":"bot","content":{"role":"model","parts":[{"text":"hello"}]},"usageMetadata":{"promptTokenCount":42}}]}}]}]}"#;
        assert!(sniff(text));
        let s = read("set.evalset.json", text).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].id, "case_a");
        assert_eq!(s[0].format, Format::AdkEvalSet);
        assert_eq!(s[0].source, "set.evalset.json#case_a");
        // user, call, response, final answer
        assert_eq!(s[0].events.len(), 4);
        assert!(
            matches!(&s[0].events[1].parts[0], Part::ToolCall { name, .. } if name == "weather")
        );
        assert!(s[0].events[3].model_request);
        let b = &s[1].events;
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].author, "bot");
        assert_eq!(b[1].usage.map(|u| u.prompt_tokens), Some(42));
        assert!(b.windows(2).all(|w| w[0].timestamp < w[1].timestamp));
    }
}

#[cfg(test)]
mod unsupported_tests {
    use super::*;

    fn ev(extra: &str) -> String {
        format!(
            r#"{{"events":[{{"author":"user","invocation_id":"i","timestamp":1,"content":{{"role":"user","parts":[{{"text":"hi"}}]}}}},
              {{"author":"a","invocation_id":"i","timestamp":2,"content":{{"role":"model","parts":[{{"text":"ok"}}]}}{extra}}}]}}"#
        )
    }

    /// Isolation scopes and rewind markers are read (camelCase too); a wrong type is refused
    /// with its JSON path; unmodelled part kinds are still refused.
    #[test]
    fn scopes_and_rewinds_are_read_and_bad_types_refused() {
        let s = read("s.json", &ev(r#","isolation_scope":"task1""#)).unwrap();
        assert_eq!(s[0].events[1].isolation_scope.as_deref(), Some("task1"));
        assert_eq!(s[0].events[0].isolation_scope, None);
        let s = read(
            "s.json",
            &ev(r#","isolationScope":"","actions":{"rewindBeforeInvocationId":"i0"}"#),
        )
        .unwrap();
        // an empty scope is a scope to ADK (`ev_iso != isolation_scope`)
        assert_eq!(s[0].events[1].isolation_scope.as_deref(), Some(""));
        assert_eq!(
            s[0].events[1].rewind_before_invocation_id.as_deref(),
            Some("i0")
        );
        // an empty rewind id is falsy to `_apply_rewinds`
        let s = read(
            "s.json",
            &ev(r#","actions":{"rewind_before_invocation_id":""}"#),
        )
        .unwrap();
        assert_eq!(s[0].events[1].rewind_before_invocation_id, None);
        for (extra, loc) in [
            (r#","isolation_scope":7"#, "$.events[1].isolation_scope"),
            // a Python-only literal (read as a tagged number) is no string either
            (r#","isolation_scope":NaN"#, "$.events[1].isolation_scope"),
            (
                r#","actions":{"rewind_before_invocation_id":["i0"]}"#,
                "$.events[1].actions.rewind_before_invocation_id",
            ),
        ] {
            let err = read("s.json", &ev(extra)).unwrap_err();
            assert_eq!(err.location, loc, "{extra}");
            assert!(
                err.message.starts_with("expected a string"),
                "{}",
                err.message
            );
        }
        // null values are what ADK writes when the feature is unused
        let ok = ev(r#","isolation_scope":null,"branch":"a.job@c1","input_transcription":null"#);
        assert_eq!(read("s.json", &ok).unwrap()[0].events.len(), 2);
        let code = ev("").replace(r#"{"text":"ok"}"#, r#"{"tool_call":{"id":"1"}}"#);
        let err = read("s.json", &code).unwrap_err();
        assert_eq!(err.location, "$.events[1].content.parts[0].tool_call");
    }

    /// A content-less transcription becomes a text part (user for input, model for output);
    /// a transcription next to a content is ignored, as `_get_contents` does.
    #[test]
    fn transcriptions_become_flagged_text() {
        let t = r#"[{"author":"user","invocation_id":"i","timestamp":1,"inputTranscription":{"text":"hi "}},
          {"author":"a","invocation_id":"i","timestamp":2,"output_transcription":{"text":"yo"}},
          {"author":"a","invocation_id":"i","timestamp":3,"output_transcription":{"text":"ignored"},"content":{"role":"model","parts":[{"text":"typed"}]}},
          {"author":"a","invocation_id":"i","timestamp":4,"output_transcription":{"text":""}}]"#;
        let e = &read("t.json", t).unwrap()[0].events;
        assert!(e[0].transcription && e[0].role == Role::User);
        assert_eq!(e[0].parts, vec![Part::Text { text: "hi ".into() }]);
        assert!(e[1].transcription && e[1].role == Role::Model && !e[1].model_request);
        assert!(!e[2].transcription);
        assert_eq!(
            e[2].parts,
            vec![Part::Text {
                text: "typed".into()
            }]
        );
        assert!(!e[3].transcription && e[3].parts.is_empty());
    }

    /// Python's `json` accepts NaN / Infinity and keeps big integers exactly (D10, D11): the
    /// reader keeps them as tagged values that the size functions print the Python way.
    #[test]
    fn python_only_literals_are_read_exactly() {
        use crate::transcript::pyjson::{tagged_value, PyNumber};
        let t = "{\"events\":[\n{\"author\":\"user\",\"invocation_id\":\"i\",\"timestamp\":1,\"content\":{\"role\":\"user\",\"parts\":[{\"text\":\"NaN Infinity 1e400 in a string\"}]}},\n{\"author\":\"a\",\"invocation_id\":\"i\",\"timestamp\":2,\"content\":{\"role\":\"user\",\"parts\":[{\"function_response\":{\"name\":\"f\",\"response\":{\"x\":-Infinity,\"y\":[NaN,18446744073709551616,-1e400],\"z\":18446744073709551615}}}]}}]}";
        assert!(
            sniff(t) || crate::transcript::detect(t).is_some(),
            "recognised as ADK"
        );
        assert_eq!(crate::transcript::detect(t), Some(Format::Adk));
        let s = &read("n.json", t).unwrap()[0];
        assert_eq!(
            s.events[0].parts,
            vec![Part::Text {
                text: "NaN Infinity 1e400 in a string".into()
            }]
        );
        let Part::ToolResponse { response, .. } = &s.events[1].parts[0] else {
            panic!("a response")
        };
        assert_eq!(tagged_value(&response["x"]), Some(PyNumber::NegInfinity));
        assert_eq!(tagged_value(&response["y"][0]), Some(PyNumber::NaN));
        assert_eq!(
            tagged_value(&response["y"][1]),
            Some(PyNumber::Int("18446744073709551616"))
        );
        assert_eq!(tagged_value(&response["y"][2]), Some(PyNumber::NegInfinity));
        // u64::MAX stays an ordinary number
        assert_eq!(response["z"].as_u64(), Some(u64::MAX));
        // where ADK's models require a string, a number is refused (pydantic refuses it too)
        for (from, to, at) in [
            (
                "\"text\":\"NaN Infinity 1e400 in a string\"",
                "\"text\":NaN",
                "$.events[0].content.parts[0].text",
            ),
            (
                "\"name\":\"f\"",
                "\"name\":1e400",
                "$.events[1].content.parts[0].function_response.name",
            ),
            (
                "\"author\":\"a\"",
                "\"author\":123456789012345678901234",
                "$.events[1].author",
            ),
        ] {
            let err = read("n.json", &t.replace(from, to)).unwrap_err();
            assert_eq!(err.location, at, "{err}");
            assert!(
                err.message
                    .starts_with("expected a string, found the number"),
                "{err}"
            );
        }
    }

    /// A broken literal is still a one-line error at its own line, also for a multi-line JSON
    /// object (whose JSONL fallback used to report line 1), and with leading blank lines.
    #[test]
    fn malformed_literals_name_their_line() {
        let t = "\n\n{\"events\":[\n{\"author\":\"user\",\"invocation_id\":\"i\",\"content\":{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}},\n{\"author\":\"a\",\"invocation_id\":\"i\",\"content\":{\"role\":\"user\",\"parts\":[{\"function_response\":{\"name\":\"f\",\"response\":{\"x\":Nan}}}]}}]}";
        let err = read("n.json", t).unwrap_err();
        assert_eq!(err.location, "line 5", "{err}");
        assert!(err.message.contains("malformed JSON"), "{err}");
        // JSONL keeps its per-line errors (counted from the file's first line)
        let jsonl = "\n{\"author\":\"user\",\"invocation_id\":\"i\",\"content\":{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}}\n{\"author\":\"a\",\"invocation_id\":\"i\",\"x\":Infinit}\n";
        let err = read("n.jsonl", jsonl).unwrap_err();
        assert_eq!(err.location, "line 3", "{err}");
        // the reserved tag character is refused, naming its line
        let tag = t.replace("Nan", "\"\\ufdd0NaN\"");
        let err = read("n.json", &tag).unwrap_err();
        assert_eq!(err.location, "line 5", "{err}");
        assert!(err.message.contains("U+FDD0"), "{err}");
    }

    /// A user message on a workflow node path is not sent (D9); a roleless content neither (D1).
    #[test]
    fn node_path_user_messages_and_roleless_contents_are_flagged() {
        let t = ev(r#","node_info":{"path":"wf/x"}"#).replace(
            r#""timestamp":1,"#,
            r#""timestamp":1,"node_info":{"path":"wf/collect"},"#,
        );
        let s = &read("s.json", &t).unwrap()[0];
        assert!(s.events[0].context_hidden);
        assert!(!s.events[1].context_hidden, "only user messages are hidden");
        let r = ev("").replace(
            r#"{"role":"model","parts":[{"text":"ok"}]}"#,
            r#"{"role":"","parts":[{"text":"ok"}]}"#,
        );
        assert!(read("s.json", &r).unwrap()[0].events[1].role_absent);
    }
}

#[cfg(test)]
mod streamed_tests {
    use super::*;

    const E: &str = r#"{"author":"user","invocation_id":"i1","timestamp":1.5,"content":{"role":"user","parts":[{"text":"hi"}]}}"#;
    /// No invocation id: the reader refuses it.
    const BAD: &str =
        r#"{"author":"user","timestamp":2,"content":{"role":"user","parts":[{"text":"x"}]}}"#;

    /// Issue 13: documents are converted event by event while they are parsed. What was
    /// true of the parsed tree stays true: a syntax error anywhere is reported before a bad
    /// event, the last of repeated `events` keys counts, and the sniffer (keys only) agrees.
    #[test]
    fn a_streamed_document_reads_as_the_parsed_tree_did() {
        let syntax = format!(r#"{{"id":"a","events":[{BAD},{E}], "x": tru}}"#);
        let e = read("s.json", &syntax).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        let bad = format!(r#"{{"id":"a","events":[{E},{BAD}]}}"#);
        let e = read("b.json", &bad).unwrap_err().to_string();
        assert!(
            e.contains("$.events[1]") && e.contains("invocation_id"),
            "{e}"
        );
        let list = format!("[{E},{BAD}]");
        let e = read("l.json", &list).unwrap_err().to_string();
        assert!(e.contains("$[1]"), "{e}");
        let twice = format!(r#"{{"events":[{E}],"id":"a","events":[{E},{E},{E}]}}"#);
        let s = read("t.json", &twice).unwrap();
        assert_eq!((s[0].id.as_str(), s[0].events.len()), ("a", 3));
        let not_a_list = format!(r#"{{"id":"a","events":[{E}],"events":{{"x":1}}}}"#);
        assert!(read("n.json", &not_a_list).is_err());
        assert!(!sniff(&not_a_list), "the last events value is not a list");
        assert!(sniff(&twice) && sniff(&bad) && sniff(&list));
        assert!(sniff(r#"{"app_name":"x","events":[1]}"#));
        assert!(!sniff(r#"{"events":[1]}"#));
        assert!(sniff(r#"{"evalCases":[]}"#));
        assert!(
            !sniff(r#"{"eval_cases":5,"evalCases":[]}"#),
            "the snake key wins"
        );
        let jsonl = format!("{E}\n{E}\n");
        assert!(sniff(&jsonl));
        assert_eq!(read("j.jsonl", &jsonl).unwrap()[0].events.len(), 2);
    }
}
