//! Calibration samples from recorded transcripts (pure; `cli/calibrate.rs` reads the files).
//!
//! - Latency: a model request's duration is the time between the event before it (the user
//!   message or tool result that the request answers) and the model event itself, paired with
//!   its recorded prompt and output tokens. Only sessions with real timestamps, gaps in
//!   (0, 600] s (longer gaps are people, not models). OpenHands runs record measured latency
//!   per response (`metrics.response_latencies`, joined to `metrics.token_usages` by
//!   `response_id`); those are used as they are.
//! - Summary length: recorded compactions with a summary text and `pre_tokens` (Claude Code).

use super::facts::FactKind;
use super::latency::{LatencySample, LengthSample};
use super::references::{
    at_recorded, estimate, FamilyRetention, KindRetention, RefTally, Retention, SessionReferences,
    MIN_SUMMARIES_PER_KIND,
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

/// One recorded compaction with its summary text, measured where it matters: the references
/// at risk at its cut (a fact a model request after it used that only the summary could still
/// hold, [`super::references::at_recorded`]), by fact kind, and how many the text held.
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionSample {
    /// `source#id` of the session (the unit a leave-one-session-out fit leaves out).
    pub session: String,
    /// The summarizer family: the framework whose prompt wrote the summary.
    pub family: String,
    pub model: String,
    pub refs: RefTally,
}

impl RetentionSample {
    /// Per kind: references at risk the summarizer could see, and those the text held.
    fn open_kept(&self, i: usize) -> (u64, u64) {
        self.refs.open_kept(i)
    }
}

/// Recorded compactions of `session` with a summary text and references at risk at their cut.
pub fn retention_samples(session: &Session) -> Vec<RetentionSample> {
    if session
        .recorded_compactions
        .iter()
        .all(|c| c.summary.trim().is_empty())
    {
        return Vec::new();
    }
    let facts = super::facts::event_facts(session);
    let refs = SessionReferences::new(session, &facts, &[]);
    let mut out = Vec::new();
    for (i, c) in session.recorded_compactions.iter().enumerate() {
        if c.summary.trim().is_empty() {
            continue;
        }
        let Some(t) = at_recorded(&refs, session, i) else {
            continue;
        };
        if t.at_risk_total() == 0 {
            continue;
        }
        let before = session.events.get(..c.at_event.min(session.events.len()));
        out.push(RetentionSample {
            session: format!("{}#{}", session.source, session.id),
            family: session.format.name().to_string(),
            model: before
                .unwrap_or(&[])
                .iter()
                .rev()
                .find_map(|e| e.model.clone())
                .or_else(|| session.model.clone())
                .unwrap_or_else(|| "unknown".to_string()),
            refs: t,
        });
    }
    out
}

/// Fit retention per fact kind on the references at risk: rate = held / at risk (the ones the
/// summarizer could see, as the estimate applies the rate to those) pooled over the summaries
/// whose cut had the kind at risk; interval = mean of the per-summary rates ± 1.96 standard
/// errors (the summaries, not the references, are the independent draws), clipped to 0..1. A
/// kind at risk at fewer than `MIN_SUMMARIES_PER_KIND` summaries gets no rate (the estimate
/// uses the upper bound). Pooled over every family, and per family.
pub fn fit_retention(samples: &[RetentionSample], source: &str) -> Retention {
    let mut r = fit_kinds(samples, source);
    let mut names: Vec<&str> = samples.iter().map(|s| s.family.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let of: Vec<RetentionSample> = samples
            .iter()
            .filter(|s| s.family == name)
            .cloned()
            .collect();
        let f = fit_kinds(&of, source);
        r.families.insert(
            name.to_string(),
            FamilyRetention {
                summaries: f.summaries,
                models: f.models,
                kinds: f.kinds,
            },
        );
    }
    r
}

/// [`fit_retention`] without the per-family fits.
fn fit_kinds(samples: &[RetentionSample], source: &str) -> Retention {
    let mut models: Vec<String> = samples.iter().map(|s| s.model.clone()).collect();
    models.sort();
    models.dedup();
    let mut kinds = std::collections::BTreeMap::new();
    for k in FactKind::ALL {
        let i = k.index();
        let with: Vec<(u64, u64)> = samples
            .iter()
            .map(|s| s.open_kept(i))
            .filter(|&(open, _)| open > 0)
            .collect();
        let at_risk: u64 = with.iter().map(|x| x.0).sum();
        let kept: u64 = with.iter().map(|x| x.1).sum();
        let n = with.len() as u64;
        let (rate, low, high) = if n >= MIN_SUMMARIES_PER_KIND {
            let rates: Vec<f64> = with.iter().map(|&(o, h)| h as f64 / o as f64).collect();
            let mean = rates.iter().sum::<f64>() / n as f64;
            let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = 1.96 * (var / n as f64).sqrt();
            let r = kept as f64 / at_risk as f64;
            let r4 = |x: f64| (x.clamp(0.0, 1.0) * 10_000.0).round() / 10_000.0;
            (
                Some(r4(r)),
                Some(r4(r.min(mean) - half)),
                Some(r4(r.max(mean) + half)),
            )
        } else {
            (None, None, None)
        };
        kinds.insert(
            k.name().to_string(),
            KindRetention {
                summaries: n,
                at_risk,
                kept,
                rate,
                rate_low: low,
                rate_high: high,
            },
        );
    }
    Retention {
        source: source.to_string(),
        summaries: samples.len() as u64,
        models,
        kinds,
        families: std::collections::BTreeMap::new(),
    }
}

/// The `agent` estimate against the real summaries' broken count over `samples`: the estimate
/// with the pooled fit of all of them (in sample), and with the fit of every session but the
/// one each sample is from (leave-one-session-out).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetentionCheck {
    pub summaries: usize,
    pub sessions: usize,
    /// References the real summaries broke.
    pub real: u64,
    pub in_sample: f64,
    pub leave_one_session_out: f64,
}

/// [`RetentionCheck`] of `samples` (the pooled fit, as `agent` uses it).
pub fn check_retention(samples: &[RetentionSample]) -> RetentionCheck {
    let all = fit_kinds(samples, "");
    let mut sessions: Vec<&str> = samples.iter().map(|s| s.session.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    let mut loso = 0.0;
    for held in &sessions {
        let rest: Vec<RetentionSample> = samples
            .iter()
            .filter(|s| s.session != *held)
            .cloned()
            .collect();
        let fit = fit_kinds(&rest, "");
        loso += samples
            .iter()
            .filter(|s| s.session == *held)
            .map(|s| estimate(&s.refs, Some(&fit)))
            .sum::<f64>();
    }
    RetentionCheck {
        summaries: samples.len(),
        sessions: sessions.len(),
        real: samples.iter().map(|s| s.refs.broken_total()).sum(),
        in_sample: samples.iter().map(|s| estimate(&s.refs, Some(&all))).sum(),
        leave_one_session_out: loso,
    }
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

    /// A summary of session `s` with `at_risk` quoted references at risk, `kept` of them held.
    fn quoted_sample(s: &str, at_risk: u64, kept: u64) -> RetentionSample {
        let q = FactKind::Quoted.index();
        let mut refs = RefTally::default();
        refs.at_risk[q] = at_risk;
        refs.broken[q] = at_risk - kept;
        RetentionSample {
            session: s.into(),
            family: if s < "c" { "claude-code" } else { "openhands" }.into(),
            model: "m".into(),
            refs,
        }
    }

    /// Issue 45: retention is held / at risk pooled over summaries, per family too; the check
    /// estimates each session's summaries with the fit of the others, and where leaving one
    /// out leaves too few summaries for a kind the estimate is that kind's upper bound.
    #[test]
    fn retention_is_fitted_on_references_at_risk_and_checked_leaving_each_session_out() {
        let seven: Vec<RetentionSample> = [
            ("a", 2),
            ("a", 4),
            ("b", 6),
            ("c", 8),
            ("d", 5),
            ("e", 5),
            ("f", 6),
        ]
        .iter()
        .map(|&(s, k)| quoted_sample(s, 10, k))
        .collect();
        let r = fit_retention(&seven, "test");
        let q = &r.kinds["quoted"];
        assert_eq!(
            (q.summaries, q.at_risk, q.kept, q.rate),
            (7, 70, 36, Some(0.5143))
        );
        assert!(q.rate_low.unwrap() < 0.5143 && 0.5143 < q.rate_high.unwrap());
        assert_eq!(r.kinds["path"].rate, None);
        // 3 claude-code summaries (sessions a, b): too few for a family rate
        assert_eq!(r.families["claude-code"].kinds["quoted"].at_risk, 30);
        assert_eq!(r.families["claude-code"].kinds["quoted"].rate, None);
        assert_eq!(r.families["openhands"].kinds["quoted"].kept, 24);
        assert_eq!(r.rests_on(), "7 summaries (claude-code 3, openhands 4)");
        let c = check_retention(&seven);
        assert_eq!((c.summaries, c.sessions, c.real), (7, 6, 34));
        assert!((c.in_sample - 70.0 * (1.0 - 0.5143)).abs() < 1e-9, "{c:?}");
        // leaving a out: 30/50 = 0.6, its 20 at risk -> 8; b, f: 30/60 -> 5 each; c: 28/60
        // = 0.4667 -> 5.333; d, e: 31/60 = 0.5167 -> 4.833 each
        let want = 8.0 + 5.0 + 5.0 + 10.0 * (1.0 - 0.4667) + 2.0 * 10.0 * (1.0 - 0.5167);
        assert!(
            (c.leave_one_session_out - want).abs() < 1e-9,
            "{c:?} vs {want}"
        );
        // five summaries in five sessions: leaving any out leaves four, so every held-out
        // summary is estimated at its upper bound (all 10 at risk broken)
        let five: Vec<RetentionSample> = [("a", 2), ("b", 4), ("c", 6), ("d", 8), ("e", 5)]
            .iter()
            .map(|&(s, k)| quoted_sample(s, 10, k))
            .collect();
        let c = check_retention(&five);
        assert!((c.in_sample - 25.0).abs() < 1e-9, "{c:?}");
        assert!((c.leave_one_session_out - 50.0).abs() < 1e-9, "{c:?}");
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
