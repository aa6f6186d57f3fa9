//! Calibration samples from recorded transcripts (pure; `cli/calibrate.rs` reads the files).
//!
//! - Latency: a model request's duration is the time between the event before it (the user
//!   message or tool result that the request answers) and the model event itself, paired with
//!   its recorded prompt and output tokens. Only sessions with real timestamps, gaps in
//!   (0, 600] s (longer gaps are people, not models). OpenHands runs record measured latency
//!   per response (`metrics.response_latencies`, joined to `metrics.token_usages` by
//!   `response_id`); those are used as they are.
//! - Summary length: recorded compactions with a summary text and `pre_tokens` (Claude Code).
//! - Retention: [`crate::detail::calibrate`] (what recorded summaries held of the references
//!   at risk at their cut).

use super::latency::{LatencySample, LengthSample};
pub use crate::detail::calibrate::{
    check_retention, fit_retention, retention_samples, RetentionCheck, RetentionSample,
};
use crate::transcript::Session;
use serde_json::Value;
use std::collections::HashMap;

/// Longest gap accepted as one model call, seconds.
pub const MAX_CALL_SECONDS: f64 = 600.0;

/// `(model, sample)` per timed model request of a session: the measured latency when the
/// transcript records one (`Event::latency_s`), else the gap to the event before it (real
/// timestamps only).
pub fn latency_samples(session: &Session) -> Vec<(String, LatencySample)> {
    let mut out = Vec::new();
    for (i, e) in session.events.iter().enumerate() {
        let Some(usage) = e.usage else { continue };
        if !e.model_request || usage.prompt_tokens == 0 {
            continue;
        }
        let secs = match e.latency_s {
            Some(l) => Some(l),
            None if !session.synthetic_timestamps => i
                .checked_sub(1)
                .and_then(|p| session.events.get(p))
                .map(|prev| e.timestamp - prev.timestamp),
            None => None,
        };
        let Some(secs) = secs.filter(|&d| d > 0.0 && d <= MAX_CALL_SECONDS) else {
            continue;
        };
        let model = e
            .model
            .clone()
            .or_else(|| session.model.clone())
            .unwrap_or_else(|| "unknown".to_string());
        out.push((
            model,
            LatencySample {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.output_tokens,
                seconds: secs,
            },
        ));
    }
    out
}

/// True when some model request of the session records a measured latency.
pub fn has_measured_latency(session: &Session) -> bool {
    session.events.iter().any(|e| e.latency_s.is_some())
}

/// Measured latencies of one OpenHands evaluation row (`{metrics: {response_latencies,
/// token_usages}}`); rows without them give nothing.
pub fn openhands_latency_samples(row: &Value) -> Vec<(String, LatencySample)> {
    let metrics = &row["metrics"];
    let mut usage: HashMap<&str, (u64, u64)> = HashMap::new();
    if let Some(list) = metrics["token_usages"].as_array() {
        for u in list {
            if let Some(id) = u["response_id"].as_str() {
                let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
                let completion = u["completion_tokens"].as_u64().unwrap_or(0);
                usage.insert(id, (prompt, completion));
            }
        }
    }
    let mut out = Vec::new();
    if let Some(list) = metrics["response_latencies"].as_array() {
        for l in list {
            let (Some(id), Some(secs)) = (l["response_id"].as_str(), l["latency"].as_f64()) else {
                continue;
            };
            let Some(&(prompt, completion)) = usage.get(id) else {
                continue;
            };
            if prompt == 0 || !(secs > 0.0 && secs <= MAX_CALL_SECONDS) {
                continue;
            }
            let model = l["model"].as_str().unwrap_or("unknown").to_string();
            out.push((
                model,
                LatencySample {
                    input_tokens: prompt,
                    output_tokens: completion,
                    seconds: secs,
                },
            ));
        }
    }
    out
}

/// Recorded summaries with their pre-compaction prompt size; `count` sizes the text.
pub fn length_samples(session: &Session, count: &dyn Fn(&str) -> u64) -> Vec<LengthSample> {
    session
        .recorded_compactions
        .iter()
        .filter_map(|c| {
            let pre = c.pre_tokens.filter(|&p| p > 0)?;
            if c.summary.trim().is_empty() {
                return None;
            }
            Some(LengthSample {
                input_tokens: pre,
                summary_tokens: count(&c.summary),
            })
        })
        .collect()
}

/// Everything `calibrate` fits from, gathered input by input: timed requests per model
/// family, recorded summary lengths, recorded summaries with their texts.
#[derive(Debug, Default)]
pub struct Samples {
    /// Per [`model_family`].
    pub by_model: std::collections::BTreeMap<String, Vec<LatencySample>>,
    pub lengths: Vec<LengthSample>,
    pub retention: Vec<RetentionSample>,
    /// How many of the timings were measured (the rest are gaps between timestamps).
    pub measured: usize,
}

/// The key timings are fitted under: the pricing table's name for the model, else its last
/// path segment in lower case.
pub fn model_family(prices: &super::pricing::PriceTable, model: &str) -> String {
    prices
        .lookup(model)
        .map(|(k, _)| k.to_string())
        .unwrap_or_else(|_| {
            model
                .rsplit('/')
                .next()
                .unwrap_or(model)
                .to_ascii_lowercase()
        })
}

/// OpenHands evaluation rows (one JSON document, or JSONL) with measured latencies.
pub fn openhands_rows(text: &str) -> Vec<(String, LatencySample)> {
    if !text.contains("response_latencies") {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        out.extend(openhands_latency_samples(&v));
        return out;
    }
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            out.extend(openhands_latency_samples(&v));
        }
    }
    out
}

/// Summary lengths are counted in o200k tokens, as the recorded pre-compaction sizes are.
fn o200k(text: &str) -> u64 {
    crate::tokens::count_text(crate::tokens::Tokenizer::O200k, text) as u64
}

impl Samples {
    /// A session read from a database: the reader's timings and summary lengths.
    pub fn add_db_session(&mut self, s: &Session, prices: &super::pricing::PriceTable) {
        self.add_timings(latency_samples(s), prices);
        self.lengths.extend(length_samples(s, &o200k));
        self.measured += s.events.iter().filter(|e| e.latency_s.is_some()).count();
    }

    /// One file: the sessions its reader gave (`None` when it could not read them) and its
    /// text. Measured latencies come from the reader when it kept them, else straight from
    /// OpenHands evaluation rows (which need not parse as transcripts); then the timestamp
    /// gaps of an OpenHands session are not used. False when the file gave nothing (the
    /// caller says it was skipped).
    pub fn add_file(
        &mut self,
        text: &str,
        sessions: Option<&[Session]>,
        prices: &super::pricing::PriceTable,
    ) -> bool {
        let raw = openhands_rows(text);
        let Some(sessions) = sessions else {
            let used = !raw.is_empty();
            self.measured += raw.len();
            self.add_timings(raw, prices);
            return used;
        };
        let reader_measured = sessions.iter().any(has_measured_latency);
        let mut timings = Vec::new();
        for s in sessions {
            let skip_gaps = !reader_measured
                && !raw.is_empty()
                && s.format == crate::transcript::Format::Openhands;
            if !skip_gaps {
                timings.extend(latency_samples(s));
            }
            self.lengths.extend(length_samples(s, &o200k));
            self.retention.extend(retention_samples(s));
        }
        self.measured += sessions
            .iter()
            .flat_map(|s| &s.events)
            .filter(|e| e.latency_s.is_some())
            .count();
        if !reader_measured {
            self.measured += raw.len();
            timings.extend(raw);
        }
        self.add_timings(timings, prices);
        true
    }

    fn add_timings(
        &mut self,
        timings: Vec<(String, LatencySample)>,
        prices: &super::pricing::PriceTable,
    ) {
        for (model, x) in timings {
            let family = model_family(prices, &model);
            self.by_model.entry(family).or_default().push(x);
        }
    }
}

/// `x` rounded to `digits` decimals, as the fitted file stores it (no float noise).
pub fn round_to(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// A latency fit as the file stores it.
pub fn latency_entry(fit: &super::latency::LatencyFit) -> super::latency::LatencyEntry {
    super::latency::LatencyEntry {
        ttft_s: round_to(fit.params.ttft_s, 4),
        prefill_tokens_per_s: round_to(fit.params.prefill_tokens_per_s, 1),
        decode_tokens_per_s: round_to(fit.params.decode_tokens_per_s, 2),
        samples: Some(fit.samples as u64),
        r2: Some(round_to(fit.r2, 4)),
        residual_p50_s: Some(round_to(fit.residual_p50_s, 3)),
        residual_p95_s: Some(round_to(fit.residual_p95_s, 3)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Event, Format, RecordedCompaction, Role, Usage};

    fn session(events: Vec<Event>) -> Session {
        Session {
            model: Some("gpt-5-codex".into()),
            ..Session::new("s", "mem", Format::Codex, events)
        }
    }

    fn model_event(t: f64, prompt: u64, out: u64) -> Event {
        let mut e = Event::new("agent", Role::Model, "i", t);
        e.model_request = true;
        e.usage = Some(Usage {
            prompt_tokens: prompt,
            output_tokens: out,
            ..Default::default()
        });
        e
    }

    #[test]
    fn samples_are_gaps_before_model_events() {
        // user at 10 s, model at 14.5 s (4.5 s, 1,000 in / 50 out), tool at 15 s, model at
        // 1,000 s (985 s gap: a person, skipped), model without usage skipped.
        let mut no_usage = model_event(1001.0, 0, 0);
        no_usage.usage = None;
        let s = session(vec![
            Event::new("user", Role::User, "i", 10.0),
            model_event(14.5, 1000, 50),
            Event::new("tool", Role::User, "i", 15.0),
            model_event(1000.0, 2000, 10),
            no_usage,
        ]);
        let v = latency_samples(&s);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].0, "gpt-5-codex");
        assert_eq!(
            v[0].1,
            LatencySample {
                input_tokens: 1000,
                output_tokens: 50,
                seconds: 4.5
            }
        );
        let mut synthetic = s.clone();
        synthetic.synthetic_timestamps = true;
        assert!(latency_samples(&synthetic).is_empty());
        // A measured latency wins over the gap, and needs no real timestamps.
        synthetic.events[1].latency_s = Some(2.25);
        let v = latency_samples(&synthetic);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].1.seconds, 2.25);
    }

    #[test]
    fn openhands_joins_latency_and_usage_by_response_id() {
        let row = serde_json::json!({"metrics": {
            "response_latencies": [{"model": "m", "latency": 3.5, "response_id": "a"},
                                   {"model": "m", "latency": 2.0, "response_id": "missing"}],
            "token_usages": [{"prompt_tokens": 5920, "completion_tokens": 128, "response_id": "a"}]}});
        let v = openhands_latency_samples(&row);
        assert_eq!(
            v,
            vec![(
                "m".to_string(),
                LatencySample {
                    input_tokens: 5920,
                    output_tokens: 128,
                    seconds: 3.5
                }
            )]
        );
    }

    #[test]
    fn length_samples_need_text_and_pre_tokens() {
        let mut s = session(vec![]);
        let rc = |pre: Option<u64>, text: &str| RecordedCompaction {
            at_event: 0,
            source: "claude-code compact_boundary".into(),
            trigger: None,
            pre_tokens: pre,
            start_timestamp: None,
            end_timestamp: None,
            summary: text.into(),
            ..RecordedCompaction::new(0, "")
        };
        s.recorded_compactions = vec![rc(Some(1000), "a b c"), rc(None, "x"), rc(Some(5), " ")];
        let v = length_samples(&s, &|t| t.split_whitespace().count() as u64);
        assert_eq!(
            v,
            vec![LengthSample {
                input_tokens: 1000,
                summary_tokens: 3
            }]
        );
    }
}
