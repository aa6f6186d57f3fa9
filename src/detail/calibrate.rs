//! Calibration of retention from recorded transcripts (pure; `cli/calibrate.rs` reads the
//! files and writes the table): per fact kind, of the references at risk at a recorded
//! compaction's cut (what the agent used later that only the summary could hold), how many its
//! summary text held, pooled and per summarizer family into the [`Retention`] table the
//! broken-reference estimate reads ([`super::references`]).

use super::facts::FactKind;
use super::references::{
    estimate, FamilyRetention, KindRetention, RecordedSummaries, RefTally, Retention,
    MIN_SUMMARIES_PER_KIND,
};
use crate::transcript::Session;
use std::borrow::Borrow;

/// One recorded compaction with its summary text, measured where it matters: the references
/// at risk at its cut (a fact a model request after it used that only the summary could still
/// hold, or that a same-result re-fetch got back, [`super::references::RecordedSummaries::at`]), by fact
/// kind, and how many the text held.
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionSample {
    /// `source#id` of the session (the unit a leave-one-session-out fit leaves out).
    pub session: String,
    /// The summarizer family: the framework whose prompt wrote the summary.
    pub family: String,
    pub model: String,
    pub refs: RefTally,
}

/// Recorded compactions of `session` with a summary text and references at risk at their cut.
pub fn retention_samples(session: &Session) -> Vec<RetentionSample> {
    let Some(recorded) = RecordedSummaries::new(session) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, c) in session.recorded_compactions.iter().enumerate() {
        let Some((_, t)) = recorded.at(i) else {
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
pub fn fit_retention<S: Borrow<RetentionSample>>(samples: &[S], source: &str) -> Retention {
    let mut r = fit_kinds(samples, source);
    let mut names: Vec<&str> = samples.iter().map(|s| s.borrow().family.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let of: Vec<&RetentionSample> = samples
            .iter()
            .map(Borrow::borrow)
            .filter(|s| s.family == name)
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
fn fit_kinds<S: Borrow<RetentionSample>>(samples: &[S], source: &str) -> Retention {
    let mut models: Vec<String> = samples.iter().map(|s| s.borrow().model.clone()).collect();
    models.sort();
    models.dedup();
    let mut kinds = std::collections::BTreeMap::new();
    for k in FactKind::ALL {
        let i = k.index();
        let with: Vec<(u64, u64)> = samples
            .iter()
            .map(|s| s.borrow().refs.open_kept(i))
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
        chosen: None,
    }
}

/// The `agent` estimate against the real summaries' broken count over `samples`: the estimate
/// with the pooled fit of all of them (in sample), and with the fit of every session but the
/// one each sample is from (leave-one-session-out); and per family, the same with the pooled
/// fit beside the family's own ([`Retention::for_family`], as a claude-code or openhands
/// policy's summaries are estimated).
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionCheck {
    pub summaries: usize,
    pub sessions: usize,
    /// References the real summaries broke.
    pub real: u64,
    pub in_sample: f64,
    pub leave_one_session_out: f64,
    /// By family name.
    pub families: Vec<FamilyCheck>,
}

/// [`RetentionCheck`] over one family's summaries.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyCheck {
    pub family: String,
    pub summaries: usize,
    pub real: u64,
    /// With the pooled fit (of all families): in sample, leave-one-session-out.
    pub pooled: (f64, f64),
    /// With the family's fit, each kind it has too few summaries for at the pooled rate.
    pub own: (f64, f64),
}

/// [`RetentionCheck`] of `samples` (the pooled fit, as `agent` uses it; per family also the
/// family's fit).
pub fn check_retention(samples: &[RetentionSample]) -> RetentionCheck {
    let all = fit_retention(samples, "");
    let mut sessions: Vec<&str> = samples.iter().map(|s| s.session.as_str()).collect();
    sessions.sort_unstable();
    sessions.dedup();
    // per sample: (pooled, own family's) estimate, in sample and with its session left out
    let pooled_in: Vec<f64> = samples
        .iter()
        .map(|s| estimate(&s.refs, Some(&all)))
        .collect();
    let own = |fit: &Retention, s: &RetentionSample| {
        estimate(&s.refs, Some(&fit.for_family(Some(&s.family))))
    };
    let own_in: Vec<f64> = samples.iter().map(|s| own(&all, s)).collect();
    let (mut pooled_out, mut own_out) = (vec![0.0; samples.len()], vec![0.0; samples.len()]);
    for held in &sessions {
        let rest: Vec<&RetentionSample> = samples.iter().filter(|s| s.session != *held).collect();
        let fit = fit_retention(&rest, "");
        for (i, s) in samples.iter().enumerate() {
            if s.session == *held {
                pooled_out[i] = estimate(&s.refs, Some(&fit));
                own_out[i] = own(&fit, s);
            }
        }
    }
    let mut names: Vec<&str> = samples.iter().map(|s| s.family.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let sum = |v: &[f64], f: Option<&str>| -> f64 {
        v.iter()
            .zip(samples)
            .filter(|(_, s)| f.is_none_or(|f| s.family == f))
            .map(|(x, _)| x)
            .sum()
    };
    let families = names
        .iter()
        .map(|&f| FamilyCheck {
            family: f.to_string(),
            summaries: samples.iter().filter(|s| s.family == f).count(),
            real: samples
                .iter()
                .filter(|s| s.family == f)
                .map(|s| s.refs.broken_total())
                .sum(),
            pooled: (sum(&pooled_in, Some(f)), sum(&pooled_out, Some(f))),
            own: (sum(&own_in, Some(f)), sum(&own_out, Some(f))),
        })
        .collect();
    RetentionCheck {
        summaries: samples.len(),
        sessions: sessions.len(),
        real: samples.iter().map(|s| s.refs.broken_total()).sum(),
        in_sample: sum(&pooled_in, None),
        leave_one_session_out: sum(&pooled_out, None),
        families,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Issue 45: a claude-code or openhands policy's summaries are estimated with their
    /// family's fit; a kind too few of the family's summaries had at risk takes the pooled
    /// rate, a family the table has no fit of takes the pooled fit, and each says so.
    #[test]
    fn a_policy_family_uses_its_own_fit_and_the_pooled_one_where_too_few() {
        // claude-code: sessions a, b (3 summaries); openhands: c to g (5)
        let eight: Vec<RetentionSample> = [
            ("a", 2),
            ("a", 4),
            ("b", 6),
            ("c", 8),
            ("d", 5),
            ("e", 5),
            ("f", 6),
            ("g", 9),
        ]
        .iter()
        .map(|&(s, k)| quoted_sample(s, 10, k))
        .collect();
        let r = fit_retention(&eight, "test");
        let q = FactKind::Quoted;
        assert_eq!(r.rate(q), Some(0.5625)); // 45 / 80
        let oh = r.for_family(Some("openhands"));
        assert_eq!(oh.rate(q), Some(0.66)); // 33 / 50
        assert_eq!(oh.rests_on(), "5 openhands summaries");
        let cc = r.for_family(Some("claude-code"));
        assert_eq!(cc.rate(q), Some(0.5625));
        assert_eq!(
            cc.rests_on(),
            "3 claude-code summaries (the pooled 8 for quoted: too few of them had it at risk)"
        );
        let codex = r.for_family(Some("codex"));
        assert_eq!(codex.rate(q), Some(0.5625));
        assert_eq!(
            codex.rests_on(),
            "8 summaries (claude-code 3, openhands 5), pooled: the table has no codex fit"
        );
        assert!(matches!(r.for_family(None), std::borrow::Cow::Borrowed(p) if *p == r));
        // the estimate follows the fit: 10 quoted references at risk
        let mut t = RefTally::default();
        t.at_risk[q.index()] = 10;
        assert!((estimate(&t, Some(&oh)) - 3.4).abs() < 1e-9);
        assert!((estimate(&t, Some(&cc)) - 4.375).abs() < 1e-9);
        // the check estimates each family's summaries with its own fit beside the pooled one:
        // openhands' 5 summaries (17 broken) in sample 50 × (1 − 0.66) = 17, pooled 21.875;
        // claude-code's own fit is the pooled one (too few summaries): the same figures
        let c = check_retention(&eight);
        let fam = |f: &str| c.families.iter().find(|x| x.family == f).unwrap().clone();
        let (oh, cc) = (fam("openhands"), fam("claude-code"));
        assert_eq!(
            (oh.summaries, oh.real, cc.summaries, cc.real),
            (5, 17, 3, 18)
        );
        assert!((oh.own.0 - 17.0).abs() < 1e-9 && (oh.pooled.0 - 21.875).abs() < 1e-9);
        assert_eq!((cc.own, cc.pooled.0), (cc.pooled, 30.0 * (1.0 - 0.5625)));
        assert!((c.in_sample - oh.pooled.0 - cc.pooled.0).abs() < 1e-9);
        assert!((c.leave_one_session_out - oh.pooled.1 - cc.pooled.1).abs() < 1e-9);
    }
}
