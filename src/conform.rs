//! An oracle output (shared/oracle/adk_oracle.py, google-adk 2.13.0) against the engine:
//! replay the output's transcript with its setting, summary policy, failing calls and usage
//! mode, and compare every field shared/oracle/goldens/README.md ("What a simulator must
//! match") lists. Used by `compaction-sim conform` and by the conformance tests, so both
//! judge a case the same way.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::engine::summarizer::{Deterministic, Policy};
use crate::engine::{self, Config, Replay, UsageMode};
use crate::tokens::sizes::SessionSizes;
use crate::transcript::{adk, ReadError};

/// Why an oracle output could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    #[error("no {0} in the oracle output")]
    Missing(&'static str),
    #[error("reading transcript {path}: {source}")]
    Transcript {
        path: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Read(#[from] ReadError),
    #[error("transcript {0} holds no session")]
    NoSession(String),
    #[error("summary_policy: {0}")]
    Policy(String),
}

/// One disagreement: the JSON path of the field, and both values.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    pub path: String,
    pub oracle: String,
    pub engine: String,
    /// True for the fields goldens/README.md calls secondary.
    pub secondary: bool,
}

/// Compare one oracle output (already parsed) against a replay of its transcript.
/// `dir` is the folder of the JSON file (the transcript path is relative to it).
pub fn check_case(oracle: &Value, dir: &Path) -> Result<Vec<Diff>, ConformError> {
    let (cfg, r) = replay_case(oracle, dir)?;
    Ok(compare(oracle, &r, cfg.token.is_some()))
}

/// Replay an oracle output's transcript with its setting, summary policy, failing calls and
/// usage mode: the engine's side of [`check_case`].
pub fn replay_case(oracle: &Value, dir: &Path) -> Result<(Config, Replay), ConformError> {
    let tpath = oracle
        .pointer("/transcript/path")
        .and_then(Value::as_str)
        .ok_or(ConformError::Missing("transcript.path"))?;
    let full = transcript_path(dir, tpath);
    let shown = full.display().to_string();
    let text = std::fs::read_to_string(&full).map_err(|source| ConformError::Transcript {
        path: shown.clone(),
        source,
    })?;
    let sessions = adk::read(&shown, &text)?;
    let session = sessions
        .into_iter()
        .next()
        .ok_or(ConformError::NoSession(shown))?;
    let cfg_v = oracle
        .get("config")
        .ok_or(ConformError::Missing("config"))?;
    let get = |k: &str| cfg_v.get(k).and_then(Value::as_u64);
    let usage = oracle
        .get("usage_mode")
        .and_then(Value::as_str)
        .and_then(UsageMode::parse)
        .unwrap_or_default();
    let cfg = Config {
        token: get("token_threshold").zip(get("event_retention_size")),
        sliding: get("compaction_interval").zip(get("overlap_size")),
        usage,
        pre_request: oracle
            .get("pre_request_check")
            .and_then(Value::as_bool)
            .unwrap_or(true),
    };
    let policy = Policy::parse(
        oracle
            .get("summary_policy")
            .and_then(Value::as_str)
            .unwrap_or("fixed:400"),
    )
    .map_err(|e| ConformError::Policy(e.to_string()))?;
    let fail_calls: Vec<u32> = oracle
        .get("fail_calls")
        .and_then(Value::as_str)
        .unwrap_or("")
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    let texts = if matches!(policy, Policy::Echo(_)) {
        crate::cost::summarizers::echo_texts(&session)
    } else {
        Vec::new().into()
    };
    let summ = Deterministic::new(policy, fail_calls, texts);
    let mut sizes = SessionSizes::new(&session, None);
    if let Some(agent) = oracle.get("measured_agent").and_then(Value::as_str) {
        sizes.main_agent = sizes.author_index(agent);
    }
    let r = engine::replay(&sizes, &cfg, &summ);
    Ok((cfg, r))
}

/// Where an oracle output's `transcript.path` points: relative to the output's folder, or,
/// when nothing is there, to a folder above it (shared/oracle/examples/ outputs name
/// `examples/travel_8inv.session.json`: the oracle ran from shared/oracle/).
fn transcript_path(dir: &Path, tpath: &str) -> PathBuf {
    let first = dir.join(tpath);
    if first.exists() {
        return first;
    }
    dir.ancestors()
        .skip(1)
        .take(2)
        .map(|d| d.join(tpath))
        .find(|p| p.exists())
        .unwrap_or(first)
}

fn num_eq(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

struct Cmp {
    diffs: Vec<Diff>,
}

impl Cmp {
    fn eq(&mut self, path: String, oracle: Option<&Value>, engine: Value, secondary: bool) {
        let o = oracle.cloned().unwrap_or(Value::Null);
        if !num_eq(&o, &engine) {
            self.diffs.push(Diff {
                path,
                oracle: o.to_string(),
                engine: engine.to_string(),
                secondary,
            });
        }
    }
}

fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

/// Field-by-field comparison of an oracle output with a replay.
pub fn compare(o: &Value, r: &Replay, token_pair: bool) -> Vec<Diff> {
    let mut c = Cmp { diffs: Vec::new() };
    let empty = Vec::new();
    let ocomps = o
        .get("compactions")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    c.eq(
        "compactions.length".into(),
        Some(&Value::from(ocomps.len())),
        Value::from(r.compactions.len()),
        false,
    );
    for (i, (oc, ec)) in ocomps.iter().zip(&r.compactions).enumerate() {
        let p = |f: &str| format!("compactions[{i}].{f}");
        c.eq(p("phase"), oc.get("phase"), ec.phase.name().into(), false);
        c.eq(
            p("trigger"),
            oc.get("trigger"),
            ec.trigger.name().into(),
            false,
        );
        c.eq(
            p("invocation_index"),
            oc.get("invocation_index"),
            ec.invocation_index.into(),
            false,
        );
        c.eq(
            p("start_timestamp"),
            oc.get("start_timestamp"),
            ec.start_timestamp.into(),
            false,
        );
        c.eq(
            p("end_timestamp"),
            oc.get("end_timestamp"),
            ec.end_timestamp.into(),
            false,
        );
        c.eq(
            p("raw_events_in_range"),
            oc.get("raw_events_in_range"),
            ec.raw_events_in_range.into(),
            false,
        );
        c.eq(
            p("first_raw_event_index"),
            oc.get("first_raw_event_index"),
            opt(ec.first_raw_event_index),
            false,
        );
        c.eq(
            p("last_raw_event_index"),
            oc.get("last_raw_event_index"),
            opt(ec.last_raw_event_index),
            false,
        );
        c.eq(
            p("summarizer_prompt_chars"),
            oc.get("summarizer_prompt_chars"),
            ec.summarizer_prompt_chars.into(),
            false,
        );
        c.eq(
            p("summary_chars"),
            oc.get("summary_chars"),
            ec.summary_chars.into(),
            false,
        );
        c.eq(
            p("before_event_index"),
            oc.get("before_event_index"),
            opt(ec.before_event_index),
            true,
        );
        c.eq(
            p("seeded_with_previous_summary"),
            oc.get("seeded_with_previous_summary"),
            ec.seeded_with_previous_summary.into(),
            true,
        );
        c.eq(
            p("summarizer_input_events"),
            oc.get("summarizer_input_events"),
            ec.summarizer_input_events.into(),
            true,
        );
        c.eq(
            p("invocations_in_range"),
            oc.get("invocations_in_range"),
            ec.invocations_in_range.to_vec().into(),
            true,
        );
        c.eq(
            p("summary_json_chars"),
            oc.get("summary_json_chars"),
            ec.summary_json_chars.into(),
            true,
        );
        c.eq(p("retained"), oc.get("retained"), ec.retained.into(), true);
    }
    let oinvs = o
        .get("invocations")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    c.eq(
        "invocations.length".into(),
        Some(&Value::from(oinvs.len())),
        Value::from(r.invocations.len()),
        false,
    );
    let mut req_i = 0usize;
    for (i, (oi, ei)) in oinvs.iter().zip(&r.invocations).enumerate() {
        let ocalls = oi
            .get("model_calls")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        for (j, oc) in ocalls.iter().enumerate() {
            let p = |f: &str| format!("invocations[{i}].model_calls[{j}].{f}");
            let Some(er) = r.requests.get(req_i) else {
                c.eq(p("event_index"), oc.get("event_index"), Value::Null, false);
                continue;
            };
            req_i += 1;
            c.eq(
                p("event_index"),
                oc.get("event_index"),
                er.event_index.into(),
                false,
            );
            c.eq(
                p("request_contents.adk_chars"),
                oc.pointer("/request_contents/adk_chars"),
                er.adk_chars.into(),
                false,
            );
            if token_pair {
                c.eq(
                    p("measured_prompt_tokens"),
                    oc.get("measured_prompt_tokens"),
                    opt(er.measured_prompt_tokens),
                    false,
                );
            }
            c.eq(
                p("request_contents_uncompacted.adk_chars"),
                oc.pointer("/request_contents_uncompacted/adk_chars"),
                er.adk_chars_uncompacted.into(),
                true,
            );
            c.eq(
                p("request_contents.contents"),
                oc.pointer("/request_contents/contents"),
                er.contents.into(),
                true,
            );
            c.eq(
                p("request_contents.json_chars"),
                oc.pointer("/request_contents/json_chars"),
                er.json_chars.into(),
                true,
            );
            c.eq(
                p("replayed_prompt_tokens"),
                oc.get("replayed_prompt_tokens"),
                opt(er.replayed_prompt_tokens),
                true,
            );
        }
        let p = |f: &str| format!("invocations[{i}].{f}");
        c.eq(
            p("next_request_history.adk_chars"),
            oi.pointer("/next_request_history/adk_chars"),
            ei.next_request_adk_chars.into(),
            false,
        );
        c.eq(
            p("post_invocation.compaction"),
            oi.pointer("/post_invocation/compaction"),
            opt(ei.post_compaction),
            false,
        );
        if token_pair {
            c.eq(
                p("post_invocation.measured_prompt_tokens"),
                oi.pointer("/post_invocation/measured_prompt_tokens"),
                opt(ei.post_measured_prompt_tokens),
                true,
            );
        }
        c.eq(
            p("next_request_history_uncompacted.adk_chars"),
            oi.pointer("/next_request_history_uncompacted/adk_chars"),
            ei.next_request_adk_chars_uncompacted.into(),
            true,
        );
        c.eq(
            p("retained_summaries"),
            oi.get("retained_summaries"),
            r.retained_ordinals(ei).into(),
            true,
        );
        c.eq(
            p("summarizer_calls"),
            oi.get("summarizer_calls"),
            ei.summarizer_calls.into(),
            true,
        );
    }
    let ocalls: usize = oinvs
        .iter()
        .map(|i| {
            i.get("model_calls")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        })
        .sum();
    c.eq(
        "model_calls.total".into(),
        Some(&Value::from(ocalls)),
        Value::from(r.requests.len()),
        false,
    );
    let t = o.get("totals");
    let tp = |f: &str| format!("totals.{f}");
    let tg = |f: &str| t.and_then(|t| t.get(f));
    c.eq(
        tp("summarizer_calls"),
        tg("summarizer_calls"),
        r.totals.summarizer_calls.into(),
        false,
    );
    c.eq(
        tp("compactions"),
        tg("compactions"),
        r.totals.compactions.into(),
        false,
    );
    let mut by = serde_json::Map::new();
    for (k, v) in [
        (
            "post_invocation:sliding_window",
            r.totals.post_invocation_sliding_window,
        ),
        (
            "post_invocation:token_threshold",
            r.totals.post_invocation_token_threshold,
        ),
        (
            "pre_request:token_threshold",
            r.totals.pre_request_token_threshold,
        ),
    ] {
        if v > 0 {
            by.insert(k.into(), v.into());
        }
    }
    let mut oby = tg("compactions_by_trigger")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    oby.sort_keys();
    c.eq(
        tp("compactions_by_trigger"),
        Some(&Value::Object(oby)),
        Value::Object(by),
        false,
    );
    c.eq(
        tp("failed_or_empty_summaries"),
        tg("failed_or_empty_summaries"),
        r.totals.failed_or_empty_summaries.into(),
        false,
    );
    c.eq(
        tp("summarizer_prompt_chars"),
        tg("summarizer_prompt_chars"),
        r.totals.summarizer_prompt_chars.into(),
        false,
    );
    c.eq(
        tp("summary_chars"),
        tg("summary_chars"),
        r.totals.summary_chars.into(),
        false,
    );
    c.eq(
        tp("final_retained_summaries"),
        tg("final_retained_summaries"),
        r.totals.final_retained_summaries.clone().into(),
        false,
    );
    c.diffs
}
