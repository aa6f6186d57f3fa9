//! An oracle output (shared/oracle/adk_oracle.py, google-adk 2.13.0) against the engine:
//! replay the output's transcript with its setting, summary policy, failing calls and usage
//! mode, and compare every field shared/oracle/goldens/README.md ("What a simulator must
//! match") lists. Used by `compaction-sim conform` and by the conformance tests, so both
//! judge a case the same way.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::engine::summarizer::{Deterministic, Policy, PolicyError};
use crate::engine::{self, Config, Replay, Request, UsageMode};
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
    Policy(#[from] PolicyError),
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
    )?;
    let fail_calls: Vec<u32> = oracle
        .get("fail_calls")
        .and_then(Value::as_str)
        .unwrap_or("")
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect();
    let texts = if matches!(policy, Policy::Echo(_)) {
        crate::summarize::echo_texts(&session)
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
    /// The fields of the oracle's `o`, compared under the path `at`.
    fn fields<'c, 'o>(&'c mut self, at: String, o: Option<&'o Value>) -> Fields<'c, 'o> {
        Fields { c: self, at, o }
    }

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

/// The fields of one oracle object, compared under one path.
struct Fields<'c, 'o> {
    c: &'c mut Cmp,
    at: String,
    o: Option<&'o Value>,
}

impl Fields<'_, '_> {
    /// Field `f`, a dotted path (the oracle names each field as its path does), against the
    /// engine's value.
    fn eq(&mut self, f: &str, engine: Value, secondary: bool) {
        let pointer = format!("/{}", f.replace('.', "/"));
        let oracle = self.o.and_then(|o| o.pointer(&pointer));
        self.c
            .eq(format!("{}.{f}", self.at), oracle, engine, secondary);
    }
}

fn opt<T: Into<Value>>(v: Option<T>) -> Value {
    v.map_or(Value::Null, Into::into)
}

/// The elements of array `key` of `v` (none when missing).
fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Field-by-field comparison of an oracle output with a replay: the compactions, then each
/// invocation with its model calls, then the totals (the order the diffs are listed in).
pub fn compare(o: &Value, r: &Replay, token_pair: bool) -> Vec<Diff> {
    let mut c = Cmp { diffs: Vec::new() };
    c.compactions(array(o, "compactions"), r);
    c.invocations(array(o, "invocations"), r, token_pair);
    c.totals(o.get("totals"), r);
    c.diffs
}

impl Cmp {
    /// Each compaction event's range, trigger and sizes.
    fn compactions(&mut self, ocomps: &[Value], r: &Replay) {
        let c = self;
        c.eq(
            "compactions.length".into(),
            Some(&Value::from(ocomps.len())),
            Value::from(r.compactions.len()),
            false,
        );
        for (i, (oc, ec)) in ocomps.iter().zip(&r.compactions).enumerate() {
            let mut f = c.fields(format!("compactions[{i}]"), Some(oc));
            f.eq("phase", ec.phase.name().into(), false);
            f.eq("trigger", ec.trigger.name().into(), false);
            f.eq("invocation_index", ec.invocation_index.into(), false);
            f.eq("start_timestamp", ec.start_timestamp.into(), false);
            f.eq("end_timestamp", ec.end_timestamp.into(), false);
            f.eq("raw_events_in_range", ec.raw_events_in_range.into(), false);
            f.eq(
                "first_raw_event_index",
                opt(ec.first_raw_event_index),
                false,
            );
            f.eq("last_raw_event_index", opt(ec.last_raw_event_index), false);
            f.eq(
                "summarizer_prompt_chars",
                ec.summarizer_prompt_chars.into(),
                false,
            );
            f.eq("summary_chars", ec.summary_chars.into(), false);
            f.eq("before_event_index", opt(ec.before_event_index), true);
            f.eq(
                "seeded_with_previous_summary",
                ec.seeded_with_previous_summary.into(),
                true,
            );
            f.eq(
                "summarizer_input_events",
                ec.summarizer_input_events.into(),
                true,
            );
            f.eq(
                "invocations_in_range",
                ec.invocations_in_range.to_vec().into(),
                true,
            );
            f.eq("summary_json_chars", ec.summary_json_chars.into(), true);
            f.eq("retained", ec.retained.into(), true);
        }
    }

    /// Each invocation's model calls and what follows it, then the number of model calls.
    fn invocations(&mut self, oinvs: &[Value], r: &Replay, token_pair: bool) {
        let c = self;
        c.eq(
            "invocations.length".into(),
            Some(&Value::from(oinvs.len())),
            Value::from(r.invocations.len()),
            false,
        );
        let mut req_i = 0usize;
        for (i, (oi, ei)) in oinvs.iter().zip(&r.invocations).enumerate() {
            for (j, oc) in array(oi, "model_calls").iter().enumerate() {
                let Some(er) = r.requests.get(req_i) else {
                    let p = format!("invocations[{i}].model_calls[{j}].event_index");
                    c.eq(p, oc.get("event_index"), Value::Null, false);
                    continue;
                };
                req_i += 1;
                c.model_call(i, j, oc, er, token_pair);
            }
            let mut f = c.fields(format!("invocations[{i}]"), Some(oi));
            f.eq(
                "next_request_history.adk_chars",
                ei.next_request_adk_chars.into(),
                false,
            );
            f.eq("post_invocation.compaction", opt(ei.post_compaction), false);
            if token_pair {
                f.eq(
                    "post_invocation.measured_prompt_tokens",
                    opt(ei.post_measured_prompt_tokens),
                    true,
                );
            }
            f.eq(
                "next_request_history_uncompacted.adk_chars",
                ei.next_request_adk_chars_uncompacted.into(),
                true,
            );
            f.eq("retained_summaries", r.retained_ordinals(ei).into(), true);
            f.eq("summarizer_calls", ei.summarizer_calls.into(), true);
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
    }

    /// Model call `j` of invocation `i`: where it is and what its request holds.
    fn model_call(&mut self, i: usize, j: usize, oc: &Value, er: &Request, token_pair: bool) {
        let mut f = self.fields(format!("invocations[{i}].model_calls[{j}]"), Some(oc));
        f.eq("event_index", er.event_index.into(), false);
        f.eq("request_contents.adk_chars", er.adk_chars.into(), false);
        if token_pair {
            f.eq(
                "measured_prompt_tokens",
                opt(er.measured_prompt_tokens),
                false,
            );
        }
        f.eq(
            "request_contents_uncompacted.adk_chars",
            er.adk_chars_uncompacted.into(),
            true,
        );
        f.eq("request_contents.contents", er.contents.into(), true);
        f.eq("request_contents.json_chars", er.json_chars.into(), true);
        f.eq(
            "replayed_prompt_tokens",
            opt(er.replayed_prompt_tokens),
            true,
        );
    }

    /// The replay's totals.
    fn totals(&mut self, t: Option<&Value>, r: &Replay) {
        let mut f = self.fields("totals".into(), t);
        f.eq("summarizer_calls", r.totals.summarizer_calls.into(), false);
        f.eq("compactions", r.totals.compactions.into(), false);
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
        let mut oby = t
            .and_then(|t| t.get("compactions_by_trigger"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        oby.sort_keys();
        f.c.eq(
            "totals.compactions_by_trigger".into(),
            Some(&Value::Object(oby)),
            Value::Object(by),
            false,
        );
        f.eq(
            "failed_or_empty_summaries",
            r.totals.failed_or_empty_summaries.into(),
            false,
        );
        f.eq(
            "summarizer_prompt_chars",
            r.totals.summarizer_prompt_chars.into(),
            false,
        );
        f.eq("summary_chars", r.totals.summary_chars.into(), false);
        f.eq(
            "final_retained_summaries",
            r.totals.final_retained_summaries.clone().into(),
            false,
        );
    }
}
