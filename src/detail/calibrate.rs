//! Calibration of retention from recorded transcripts (pure; `cli/calibrate.rs` reads the
//! files and writes the table): per fact kind, how many of the facts of a recorded
//! compaction's span its summary text kept verbatim, pooled into the [`Retention`] table the
//! broken-reference estimate reads ([`super::references`]).

use super::facts::{event_fact_text, extract_fact_kinds, FactKind};
use super::references::{KindRetention, Retention, MIN_SUMMARIES_PER_KIND};
use crate::transcript::Session;

/// One recorded compaction with its summary text: per fact kind (`FactKind::index`), the
/// facts of the compacted span and how many the summary kept verbatim.
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionSample {
    pub model: String,
    pub facts: [u64; 6],
    pub kept: [u64; 6],
}

/// Recorded compactions with a summary text: the span is the events since the previous
/// recorded compaction (or the start) up to the first event recorded after this one.
pub fn retention_samples(session: &Session) -> Vec<RetentionSample> {
    let mut marks: Vec<&crate::transcript::RecordedCompaction> =
        session.recorded_compactions.iter().collect();
    marks.sort_by_key(|c| c.at_event);
    let mut out = Vec::new();
    let mut from = 0usize;
    for c in marks {
        let to = c.at_event.min(session.events.len());
        let span = session.events.get(from..to).unwrap_or(&[]);
        from = from.max(to);
        if c.summary.trim().is_empty() {
            continue;
        }
        let mut facts = std::collections::BTreeMap::new();
        for e in span {
            for (f, k) in extract_fact_kinds(&event_fact_text(e)) {
                facts.entry(f).or_insert(k);
            }
        }
        if facts.is_empty() {
            continue;
        }
        let mut sample = RetentionSample {
            model: span
                .iter()
                .rev()
                .find_map(|e| e.model.clone())
                .or_else(|| session.model.clone())
                .unwrap_or_else(|| "unknown".to_string()),
            facts: [0; 6],
            kept: [0; 6],
        };
        for (f, k) in &facts {
            sample.facts[k.index()] += 1;
            if c.summary.contains(f.as_str()) {
                sample.kept[k.index()] += 1;
            }
        }
        out.push(sample);
    }
    out
}

/// Fit retention per fact kind: rate = kept / facts pooled over the summaries whose span held
/// the kind; interval = mean of the per-summary rates ± 1.96 standard errors (the summaries,
/// not the facts, are the independent draws), clipped to 0..1. A kind held by fewer than
/// `MIN_SUMMARIES_PER_KIND` summaries gets no rate (the estimate uses the upper bound).
pub fn fit_retention(samples: &[RetentionSample], source: &str) -> Retention {
    let mut models: Vec<String> = samples.iter().map(|s| s.model.clone()).collect();
    models.sort();
    models.dedup();
    let mut kinds = std::collections::BTreeMap::new();
    for k in FactKind::ALL {
        let i = k.index();
        let with: Vec<&RetentionSample> = samples.iter().filter(|s| s.facts[i] > 0).collect();
        let facts: u64 = with.iter().map(|s| s.facts[i]).sum();
        let kept: u64 = with.iter().map(|s| s.kept[i]).sum();
        let n = with.len() as u64;
        let enough = n >= MIN_SUMMARIES_PER_KIND;
        let (rate, low, high) = if enough {
            let rates: Vec<f64> = with
                .iter()
                .map(|s| s.kept[i] as f64 / s.facts[i] as f64)
                .collect();
            let mean = rates.iter().sum::<f64>() / n as f64;
            let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = 1.96 * (var / n as f64).sqrt();
            let r = kept as f64 / facts as f64;
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
                facts,
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
    }
}
