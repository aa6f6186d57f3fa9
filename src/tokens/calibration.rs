//! How far counted history lands from the prompt sizes providers recorded (`inspect
//! --calibration`): per session a fixed overhead is fitted (the median of recorded − counted
//! history over its requests) and the error left after it, per request, summed up per
//! transcript format. Counted history is raw history: every event before the request, no
//! compaction, no fixed overhead.

use super::Tokenizer;
use crate::stats::{median as median_f64, percentile_of, round3};
use crate::transcript::Session;
use serde::Serialize;
use std::collections::BTreeMap;

/// Token history before each event: `prefix[i]` = sum of `counts[..i]`.
pub fn history_before(counts: &[u32]) -> Vec<u64> {
    let mut out = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0u64;
    out.push(0);
    for c in counts {
        acc += *c as u64;
        out.push(acc);
    }
    out
}

/// Sessions need this many usable requests: with one, the fitted overhead explains it exactly
/// and the error would be a meaningless 0%.
pub const MIN_CALIBRATION_REQUESTS: usize = 2;

/// One session's fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionCalibration {
    pub source: String,
    pub format: String,
    /// Requests compared (recorded usage, not post-compaction).
    pub requests: u64,
    /// Requests left out because their recorded size was measured after a compaction the
    /// transcript records.
    pub excluded_post_compaction: u64,
    /// Fitted fixed overhead: median over requests of recorded − counted history, tokens.
    pub overhead_tokens: i64,
    /// Least-squares slope of recorded prompt on counted history: 1.0 when our counter and
    /// the provider's agree on growth; `None` when the counted history never changes.
    pub scale: Option<f64>,
    /// |recorded − (counted history + overhead)| / recorded × 100, per request, median.
    pub p50_abs_error_pct: f64,
    pub p95_abs_error_pct: f64,
}

/// Per format, over all requests of its calibrated sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FormatCalibration {
    pub format: String,
    pub sessions: u64,
    pub requests: u64,
    pub excluded_post_compaction: u64,
    /// Sessions that recorded usage but had fewer than [`MIN_CALIBRATION_REQUESTS`] usable
    /// requests.
    pub sessions_too_short: u64,
    /// Median of the sessions' fitted overheads, tokens.
    pub median_overhead_tokens: i64,
    /// Median of the sessions' [`SessionCalibration::scale`]; `None` when no session has one.
    pub median_scale: Option<f64>,
    pub p50_abs_error_pct: f64,
    pub p95_abs_error_pct: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    pub tokenizer: String,
    pub method: &'static str,
    pub formats: Vec<FormatCalibration>,
    pub sessions: Vec<SessionCalibration>,
}

const METHOD: &str = "overhead = per-session median of (recorded prompt - counted history) over \
requests with recorded usage; requests marked post_compaction_usage are excluded (their recorded \
size is after a compaction, not raw history); error = |recorded - (counted + overhead)| / recorded; scale = least-squares slope of recorded \
on counted (1.000 when both counters grow alike)";

fn median_i64(v: &mut [i64]) -> i64 {
    v.sort_unstable();
    if v.is_empty() {
        0
    } else if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        // Floor of the mean of the two middle values, exact in integers.
        (v[v.len() / 2 - 1] + v[v.len() / 2]).div_euclid(2)
    }
}

fn sort_f64(v: &mut [f64]) {
    v.sort_by(|a, b| a.total_cmp(b));
}

/// Per format while calibrating: errors (%), overheads, sessions, excluded requests, short
/// sessions.
#[derive(Default)]
struct FormatAcc {
    errors: Vec<f64>,
    overheads: Vec<i64>,
    scales: Vec<f64>,
    sessions: u64,
    excluded: u64,
    short: u64,
}

/// Least-squares slope of `r` on `h`, `None` without spread in `h`.
fn ols_slope(pairs: &[(u64, u64)]) -> Option<f64> {
    let n = pairs.len() as f64;
    let mh = pairs.iter().map(|p| p.1 as f64).sum::<f64>() / n;
    let mr = pairs.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let var: f64 = pairs.iter().map(|p| (p.1 as f64 - mh).powi(2)).sum();
    let cov: f64 = pairs
        .iter()
        .map(|p| (p.1 as f64 - mh) * (p.0 as f64 - mr))
        .sum();
    (var > 0.0).then(|| cov / var)
}

/// Fit each session that records prompt sizes, and sum up per format.
pub fn calibrate(sessions: &[Session], counts: &[Vec<u32>], tok: Tokenizer) -> Calibration {
    let mut per_session = Vec::new();
    let mut by_format: BTreeMap<String, FormatAcc> = BTreeMap::new();
    for (s, c) in sessions.iter().zip(counts) {
        let (pairs, excluded) = usable_requests(s, c);
        if pairs.is_empty() && excluded == 0 {
            continue;
        }
        let entry = by_format.entry(s.format.name().to_string()).or_default();
        entry.excluded += excluded;
        if pairs.len() < MIN_CALIBRATION_REQUESTS {
            entry.short += 1;
            continue;
        }
        per_session.push(fit_session(s, &pairs, excluded, entry));
    }
    let formats = by_format
        .into_iter()
        .map(|(format, a)| a.summary(format))
        .collect();
    per_session.sort_by(|a, b| a.source.cmp(&b.source));
    Calibration {
        tokenizer: tok.name().to_string(),
        method: METHOD,
        formats,
        sessions: per_session,
    }
}

/// (recorded prompt, counted history) per request with recorded usage, and how many were
/// left out as measured after a recorded compaction.
fn usable_requests(s: &Session, counts: &[u32]) -> (Vec<(u64, u64)>, u64) {
    let prefix = history_before(counts);
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    let mut excluded = 0u64;
    for (i, e) in s.events.iter().enumerate() {
        let Some(u) = e.usage else { continue };
        if e.post_compaction_usage {
            excluded += 1;
            continue;
        }
        if u.prompt_tokens == 0 {
            continue;
        }
        pairs.push((u.prompt_tokens, prefix.get(i).copied().unwrap_or(0)));
    }
    (pairs, excluded)
}

/// One session's overhead, scale and errors, also added to its format's `entry`.
fn fit_session(
    s: &Session,
    pairs: &[(u64, u64)],
    excluded: u64,
    entry: &mut FormatAcc,
) -> SessionCalibration {
    let mut diffs: Vec<i64> = pairs.iter().map(|(r, h)| *r as i64 - *h as i64).collect();
    let overhead = median_i64(&mut diffs);
    let mut errs: Vec<f64> = pairs
        .iter()
        .map(|(r, h)| ((*r as i64 - (*h as i64 + overhead)).abs() as f64) / (*r as f64) * 100.0)
        .collect();
    let scale = ols_slope(pairs);
    entry.errors.extend(errs.iter().copied());
    entry.overheads.push(overhead);
    entry.scales.extend(scale);
    entry.sessions += 1;
    sort_f64(&mut errs);
    SessionCalibration {
        source: s.source.clone(),
        format: s.format.name().to_string(),
        requests: pairs.len() as u64,
        excluded_post_compaction: excluded,
        overhead_tokens: overhead,
        scale: scale.map(round3),
        p50_abs_error_pct: round3(percentile_of(&errs, 0.5)),
        p95_abs_error_pct: round3(percentile_of(&errs, 0.95)),
    }
}

impl FormatAcc {
    fn summary(mut self, format: String) -> FormatCalibration {
        sort_f64(&mut self.errors);
        FormatCalibration {
            format,
            sessions: self.sessions,
            requests: self.errors.len() as u64,
            excluded_post_compaction: self.excluded,
            sessions_too_short: self.short,
            median_overhead_tokens: median_i64(&mut self.overheads),
            median_scale: median_f64(&mut self.scales).map(round3),
            p50_abs_error_pct: round3(percentile_of(&self.errors, 0.5)),
            p95_abs_error_pct: round3(percentile_of(&self.errors, 0.95)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::{Event, Part, Role, Usage};
    use serde_json::json;

    #[test]
    fn calibration_fits_median_overhead_and_excludes_post_compaction() {
        // Counted history before each request: 0, 100, 200, 300 (each event 100 tokens).
        // Recorded: 1000, 1100, 1210, and a post-compaction 50 that must be ignored.
        let events: Vec<Event> = [1000u64, 1100, 1210, 50]
            .iter()
            .enumerate()
            .map(|(i, recorded)| {
                let mut e = Event::new("agent", Role::Model, "i", 0.0);
                e.parts = vec![Part::Text { text: "x".into() }];
                e.model_request = true;
                e.usage = Some(Usage {
                    prompt_tokens: *recorded,
                    ..Default::default()
                });
                e.post_compaction_usage = i == 3;
                e
            })
            .collect();
        // Built through serde so fields added to the model later take their defaults.
        let s: Session = serde_json::from_value(
            json!({"id": "s/1", "source": "x.jsonl", "format": "codex", "events": events}),
        )
        .expect("session");
        let c = calibrate(&[s], &[vec![100, 100, 100, 100]], Tokenizer::O200k);
        let sc = &c.sessions[0];
        // diffs 1000, 1000, 1010 -> median 1000; errors 0, 0, 10/1210.
        assert_eq!(sc.overhead_tokens, 1000);
        assert_eq!(sc.requests, 3);
        assert_eq!(sc.excluded_post_compaction, 1);
        assert_eq!(sc.p50_abs_error_pct, 0.0);
        let p95 = round3(crate::stats::percentile(
            &[0.0, 0.0, 10.0 / 1210.0 * 100.0],
            0.95,
        ));
        assert_eq!(sc.p95_abs_error_pct, p95);
        assert!(p95 > 0.7 && p95 < 0.8);
        // Slope of (0,1000),(100,1100),(200,1210): cov/var = 21000/20000.
        assert_eq!(sc.scale, Some(1.05));
        assert_eq!(c.formats[0].median_scale, Some(1.05));
        assert_eq!(c.formats[0].format, "codex");
        assert_eq!(c.formats[0].requests, 3);
    }
}
