//! Latency model (`seconds = ttft + input/prefill_rate + output/decode_rate`), the summary
//! length model of modelled summarizers, their defaults (`src/data/latency.toml`), and the
//! least-squares fits `calibrate` uses.

use crate::detail::facts::FactKind;
use crate::detail::references::Retention;
use crate::stats::percentile_of;
use crate::transcript::MAX_TOKENS;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bounds on latency-file numbers: beyond them a value is a typo, and inside them every
/// sum of seconds or tokens stays finite and exact enough. A first token after an hour, a
/// rate under 0.001 or over 10^9 tokens/s, or a summary over 1000 times its input is not a
/// model anyone measured.
pub const MAX_TTFT_S: f64 = 3600.0;
pub const MIN_RATE: f64 = 1e-3;
pub const MAX_RATE: f64 = 1e9;
pub const MAX_SUMMARY_RATIO: f64 = 1000.0;

/// The defaults shipped with the binary.
pub const BUILTIN_LATENCY: &str = include_str!("../data/latency.toml");

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {location}: {message}")]
pub struct LatencyFileError {
    pub file: String,
    pub location: String,
    pub message: String,
}

/// One model family's latency parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyParams {
    /// Time to first token, seconds (network, queueing, default thinking).
    pub ttft_s: f64,
    /// Prompt tokens read per second.
    pub prefill_tokens_per_s: f64,
    /// Output tokens written per second.
    pub decode_tokens_per_s: f64,
}

impl LatencyParams {
    /// Seconds for one call reading `input` tokens and writing `output` tokens.
    pub fn seconds(&self, input: u64, output: u64) -> f64 {
        self.ttft_s
            + input as f64 / self.prefill_tokens_per_s
            + output as f64 / self.decode_tokens_per_s
    }

    /// Seconds spent reading `tokens` prompt tokens.
    pub fn prefill_seconds(&self, tokens: f64) -> f64 {
        tokens / self.prefill_tokens_per_s
    }
}

pub use crate::summarize::LengthModel;

/// One entry of a latency file: the parameters plus, for calibrated files, the fit quality.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyEntry {
    pub ttft_s: f64,
    pub prefill_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r2: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual_p50_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residual_p95_s: Option<f64>,
}

impl LatencyEntry {
    pub fn params(&self) -> LatencyParams {
        LatencyParams {
            ttft_s: self.ttft_s,
            prefill_tokens_per_s: self.prefill_tokens_per_s,
            decode_tokens_per_s: self.decode_tokens_per_s,
        }
    }
}

/// A latency file: `[summary_length]` and `[models.FAMILY]` (see `src/data/latency.toml`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyFile {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_length: Option<LengthModel>,
    #[serde(default)]
    pub models: BTreeMap<String, LatencyEntry>,
    /// Fact retention per kind of recorded summaries (metrics.md "References"), for the
    /// `references_broken` estimate of modelled summarizers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
}

/// Latency parameters per model family and the summary length model.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyTable {
    pub families: BTreeMap<String, LatencyParams>,
    pub length: LengthModel,
    /// `None`: no retention known, the estimate is the upper bound.
    pub retention: Option<Retention>,
}

impl Default for LatencyTable {
    fn default() -> Self {
        LatencyTable::builtin()
    }
}

impl LatencyTable {
    /// The retention a summary of `family` is estimated with ([`Retention::for_family`]);
    /// `None` where no retention is known.
    pub fn retention_for(&self, family: Option<&str>) -> Option<std::borrow::Cow<'_, Retention>> {
        self.retention.as_ref().map(|r| r.for_family(family))
    }

    pub fn builtin() -> Self {
        let mut t = LatencyTable {
            families: BTreeMap::new(),
            length: LengthModel::default(),
            retention: None,
        };
        // Tested by `builtin_latency_parses`; an error here is a build bug.
        let _ = t.apply_file("<builtin latency.toml>", BUILTIN_LATENCY);
        t
    }

    /// Read a latency file (defaults or a `calibrate` output) over this table: its families
    /// and its length model win.
    pub fn apply_file(&mut self, file: &str, text: &str) -> Result<(), LatencyFileError> {
        let parsed: LatencyFile = toml::from_str(text).map_err(|e| LatencyFileError {
            file: file.to_string(),
            location: super::pricing::toml_error_location(text, &e),
            message: e.message().to_string(),
        })?;
        let bad = |location: String, message: String| LatencyFileError {
            file: file.to_string(),
            location,
            message,
        };
        for (name, e) in &parsed.models {
            let ok = e.ttft_s.is_finite()
                && e.ttft_s >= 0.0
                && e.prefill_tokens_per_s.is_finite()
                && e.prefill_tokens_per_s > 0.0
                && e.decode_tokens_per_s.is_finite()
                && e.decode_tokens_per_s > 0.0;
            if !ok {
                return Err(bad(
                    format!("models.\"{name}\""),
                    "ttft_s must be >= 0 and the rates > 0".to_string(),
                ));
            }
            // Upper bounds: a value past them is a typo, and keeps sums of seconds finite.
            let ok = e.ttft_s <= MAX_TTFT_S
                && e.prefill_tokens_per_s <= MAX_RATE
                && e.decode_tokens_per_s <= MAX_RATE
                && e.prefill_tokens_per_s >= MIN_RATE
                && e.decode_tokens_per_s >= MIN_RATE;
            if !ok {
                return Err(bad(
                    format!("models.\"{name}\""),
                    format!(
                        "out of range: ttft_s must be at most {MAX_TTFT_S} s and the rates \
                         between {MIN_RATE} and {MAX_RATE:e} tokens/s"
                    ),
                ));
            }
        }
        if let Some(l) = parsed.summary_length {
            if !(l.ratio.is_finite() && l.ratio >= 0.0) || l.min_tokens > l.cap_tokens {
                return Err(bad(
                    "summary_length".to_string(),
                    "ratio must be >= 0 and min_tokens <= cap_tokens".to_string(),
                ));
            }
            if l.cap_tokens > MAX_TOKENS || l.ratio > MAX_SUMMARY_RATIO {
                return Err(bad(
                    "summary_length".to_string(),
                    format!(
                        "out of range: cap_tokens must be at most 2^53 = {MAX_TOKENS} and \
                         ratio at most {MAX_SUMMARY_RATIO}"
                    ),
                ));
            }
            self.length = l;
        }
        if let Some(r) = parsed.retention {
            // the pooled kinds, then each family's
            let all = r
                .kinds
                .iter()
                .map(|(n, k)| (format!("retention.kinds.{n}"), n, k));
            let fams = r.families.iter().flat_map(|(f, fam)| {
                fam.kinds
                    .iter()
                    .map(move |(n, k)| (format!("retention.families.{f}.kinds.{n}"), n, k))
            });
            let kinds: Vec<_> = all.chain(fams).collect();
            let bad = kinds.iter().find(|(_, _, k)| {
                [k.rate, k.rate_low, k.rate_high]
                    .into_iter()
                    .flatten()
                    .any(|x| !(0.0..=1.0).contains(&x))
                    || k.kept > k.at_risk
            });
            if let Some((location, _, _)) = bad {
                return Err(LatencyFileError {
                    file: file.to_string(),
                    location: location.clone(),
                    message: "rates must lie in 0..1 and kept <= at_risk".to_string(),
                });
            }
            if let Some((location, _, _)) =
                kinds.iter().find(|(_, n, _)| FactKind::parse(n).is_none())
            {
                return Err(LatencyFileError {
                    file: file.to_string(),
                    location: location.clone(),
                    message: "unknown fact kind (expected url, email, quoted, path, id or number)"
                        .to_string(),
                });
            }
            self.retention = Some(r);
        }
        for (name, e) in parsed.models {
            self.families.insert(name.to_ascii_lowercase(), e.params());
        }
        Ok(())
    }

    /// The family key a model's parameters come from (the longest key that prefixes the name,
    /// provider prefix ignored); `None`: the `default` figures apply, which a run states in
    /// its assumptions.
    pub fn family_of(&self, model: &str) -> Option<&str> {
        let full = model.trim().to_ascii_lowercase();
        let short = full.rsplit('/').next().unwrap_or(&full);
        self.families
            .keys()
            .filter(|k| {
                k.as_str() != "default"
                    && (full.starts_with(k.as_str()) || short.starts_with(k.as_str()))
            })
            .max_by_key(|k| k.len())
            .map(String::as_str)
    }

    /// Parameters for a model: the longest family key that prefixes the name (provider prefix
    /// like `openai/` ignored), else `default`, else a built-in fallback.
    pub fn for_model(&self, model: &str) -> LatencyParams {
        self.family_of(model)
            .and_then(|k| self.families.get(k).copied())
            .or_else(|| self.families.get("default").copied())
            .unwrap_or(LatencyParams {
                ttft_s: 1.0,
                prefill_tokens_per_s: 10_000.0,
                decode_tokens_per_s: 80.0,
            })
    }
}

/// One observed model call: prompt tokens, output tokens, seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencySample {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub seconds: f64,
}

/// Result of fitting `seconds = a + b*input + c*output`.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyFit {
    pub params: LatencyParams,
    pub samples: usize,
    /// Coefficient of determination of the fit on the samples.
    pub r2: f64,
    /// Percentiles of |observed - predicted|, seconds.
    pub residual_p50_s: f64,
    pub residual_p95_s: f64,
    /// Terms that came out non-positive and were held at the prior instead of fitted.
    pub held: Vec<&'static str>,
}

/// Least-squares fit of the latency model. A coefficient that comes out non-positive (not
/// identifiable from the data, e.g. output sizes that barely vary) is held at `prior`'s value
/// and the others refitted, so the result is always a usable model; `held` says which.
/// `None` with fewer than 3 samples.
pub fn fit_latency(samples: &[LatencySample], prior: &LatencyParams) -> Option<LatencyFit> {
    let clean: Vec<&LatencySample> = samples
        .iter()
        .filter(|s| s.seconds.is_finite() && s.seconds > 0.0)
        .collect();
    if clean.len() < 3 {
        return None;
    }
    // Columns: 0 = intercept (ttft), 1 = input (1/prefill), 2 = output (1/decode).
    let prior_coef = [
        prior.ttft_s,
        1.0 / prior.prefill_tokens_per_s,
        1.0 / prior.decode_tokens_per_s,
    ];
    let names = ["ttft_s", "prefill_tokens_per_s", "decode_tokens_per_s"];
    let mut free = [true, true, true];
    let mut coef = prior_coef;
    for _ in 0..3 {
        let idx: Vec<usize> = (0..3).filter(|&i| free[i]).collect();
        let n = idx.len();
        if n == 0 {
            break;
        }
        let mut ata = vec![vec![0.0f64; n]; n];
        let mut aty = vec![0.0f64; n];
        for s in &clean {
            let x = [1.0, s.input_tokens as f64, s.output_tokens as f64];
            let fixed: f64 = (0..3).filter(|&i| !free[i]).map(|i| coef[i] * x[i]).sum();
            let y = s.seconds - fixed;
            for (a, &i) in idx.iter().enumerate() {
                aty[a] += x[i] * y;
                for (b, &j) in idx.iter().enumerate() {
                    ata[a][b] += x[i] * x[j];
                }
            }
        }
        let Some(sol) = solve(ata, aty) else {
            // Singular: hold the last free slope and retry.
            if let Some(&last) = idx.last() {
                free[last] = false;
                coef[last] = prior_coef[last];
            }
            continue;
        };
        let mut bad = None;
        for (a, &i) in idx.iter().enumerate() {
            coef[i] = sol[a];
            let negative = if i == 0 { sol[a] < 0.0 } else { sol[a] <= 0.0 };
            if negative && bad.is_none() {
                bad = Some(i);
            }
        }
        match bad {
            None => break,
            Some(i) => {
                free[i] = false;
                coef[i] = prior_coef[i];
                for j in 0..3 {
                    if free[j] {
                        coef[j] = prior_coef[j];
                    }
                }
            }
        }
    }
    let params = LatencyParams {
        ttft_s: coef[0],
        prefill_tokens_per_s: 1.0 / coef[1],
        decode_tokens_per_s: 1.0 / coef[2],
    };
    let mean = clean.iter().map(|s| s.seconds).sum::<f64>() / clean.len() as f64;
    let mut ss_res = 0.0;
    let mut ss_tot = 0.0;
    let mut abs_res = Vec::with_capacity(clean.len());
    for s in &clean {
        let pred = params.seconds(s.input_tokens, s.output_tokens);
        ss_res += (s.seconds - pred).powi(2);
        ss_tot += (s.seconds - mean).powi(2);
        abs_res.push((s.seconds - pred).abs());
    }
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        0.0
    };
    Some(LatencyFit {
        params,
        samples: clean.len(),
        r2,
        residual_p50_s: percentile_of(&abs_res, 0.5),
        residual_p95_s: percentile_of(&abs_res, 0.95),
        held: (0..3).filter(|&i| !free[i]).map(|i| names[i]).collect(),
    })
}

/// Gaussian elimination with partial pivoting; `None` if singular.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        let scale = a.iter().map(|r| r[col].abs()).fold(0.0, f64::max);
        if a[pivot][col].abs() <= 1e-12 * scale.max(1.0) {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        let pivot_row = a[col].clone();
        for row in col + 1..n {
            let f = a[row][col] / pivot_row[col];
            for (v, p) in a[row].iter_mut().zip(&pivot_row).skip(col) {
                *v -= f * p;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    Some(x)
}

/// One recorded summary: tokens of the history it replaced and of the summary text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthSample {
    pub input_tokens: u64,
    pub summary_tokens: u64,
}

/// Fit the length model: ratio = median of summary/input, cap = largest summary seen (so the
/// model never predicts longer summaries than were recorded), min kept from `prior`.
pub fn fit_length(samples: &[LengthSample], prior: &LengthModel) -> Option<LengthModel> {
    let ratios: Vec<f64> = samples
        .iter()
        .filter(|s| s.input_tokens > 0)
        .map(|s| s.summary_tokens as f64 / s.input_tokens as f64)
        .collect();
    if ratios.is_empty() {
        return None;
    }
    let cap = samples
        .iter()
        .map(|s| s.summary_tokens)
        .max()
        .unwrap_or(prior.cap_tokens);
    Some(LengthModel {
        ratio: percentile_of(&ratios, 0.5),
        cap_tokens: cap.max(prior.min_tokens),
        min_tokens: prior.min_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_latency_parses() {
        let mut t = LatencyTable {
            families: BTreeMap::new(),
            length: LengthModel::default(),
            retention: None,
        };
        t.apply_file("builtin", BUILTIN_LATENCY).expect("parses");
        assert!(t.families.contains_key("default"));
        // The built-in fact retention (metrics.md "References") says what it rests on.
        let r = t.retention.expect("built-in [retention]");
        assert!(r.summaries > 0 && !r.models.is_empty());
        assert!(t.families.len() > 10);
    }

    #[test]
    fn huge_latency_numbers_are_refused() {
        let mut t = LatencyTable::builtin();
        let before = t.length;
        for (text, place) in [
            (
                "[summary_length]\nratio = 0.1\ncap_tokens = 9223372036854775807\n",
                "summary_length",
            ),
            (
                "[summary_length]\nratio = 1e300\ncap_tokens = 10\n",
                "summary_length",
            ),
            (
                "[models.x]\nttft_s = 1e300\nprefill_tokens_per_s = 1.0\ndecode_tokens_per_s = 1.0\n",
                "models.\"x\"",
            ),
            (
                "[models.x]\nttft_s = 1.0\nprefill_tokens_per_s = 1e-300\ndecode_tokens_per_s = 1.0\n",
                "models.\"x\"",
            ),
        ] {
            let e = t.apply_file("lat.toml", text).unwrap_err();
            assert_eq!((e.file.as_str(), e.location.as_str()), ("lat.toml", place), "{e}");
            assert!(e.message.contains("out of range"), "{e}");
        }
        // u64::MAX: refused with the place named, never wrapped.
        let e = t
            .apply_file(
                "lat.toml",
                "[summary_length]\nratio = 0.1\ncap_tokens = 18446744073709551615\n",
            )
            .unwrap_err();
        assert!(
            e.location == "line 3" || e.location == "summary_length",
            "{e}"
        );
        assert_eq!(t.length, before);
    }

    #[test]
    fn latency_formula() {
        // 1 s + 20,000/10,000 s + 400/80 s = 1 + 2 + 5 = 8 s.
        let p = LatencyParams {
            ttft_s: 1.0,
            prefill_tokens_per_s: 10_000.0,
            decode_tokens_per_s: 80.0,
        };
        assert!((p.seconds(20_000, 400) - 8.0).abs() < 1e-12);
    }

    #[test]
    fn family_matching_prefers_longest_prefix() {
        let t = LatencyTable::builtin();
        assert_eq!(
            t.for_model("gpt-4.1-mini-2025-04-14"),
            t.families["gpt-4.1-mini"]
        );
        assert_eq!(t.for_model("openai/gpt-4.1"), t.families["gpt-4.1"]);
        assert_eq!(t.for_model("claude-opus-4-6"), t.families["claude-opus-4"]);
        assert_eq!(t.for_model("llama-4-maverick"), t.families["default"]);
        assert_eq!(t.family_of("llama-4-maverick"), None);
        assert_eq!(t.family_of("openai/gpt-4.1-mini"), Some("gpt-4.1-mini"));
    }

    #[test]
    fn current_models_have_their_own_latency_family() {
        // Issue #14: the current families must not fall back to `default` (or to an older
        // family by prefix: `gpt-5` prefixes `gpt-5.1`) silently.
        let t = LatencyTable::builtin();
        for (model, family) in [
            ("claude-opus-4-6", "claude-opus-4"),
            ("claude-opus-4-8", "claude-opus-4"),
            ("claude-sonnet-4-6", "claude-sonnet-4"),
            ("claude-haiku-4-5-20251001", "claude-haiku-4"),
            ("claude-opus-5", "claude-opus-5"),
            ("claude-sonnet-5-5", "claude-sonnet-5"),
            ("gemini-3.1-pro-preview", "gemini-3.1-pro"),
            ("gemini-3-flash-preview", "gemini-3-flash"),
            ("gemini/gemini-3.5-flash-lite", "gemini-3.5-flash-lite"),
            ("gemini-3.8-flash", "gemini-3.8-flash"),
            ("gpt-5.1-codex", "gpt-5.1"),
            ("gpt-5.1-codex-mini", "gpt-5.1-codex-mini"),
            ("gpt-5.2", "gpt-5.2"),
            ("gpt-5.3-codex", "gpt-5.3"),
            ("gpt-5.4-mini", "gpt-5.4-mini"),
            ("gpt-5.5", "gpt-5.5"),
            ("gpt-5.6", "gpt-5.6"),
            ("gpt-6-sol", "gpt-6"),
            ("o3", "o3"),
        ] {
            assert_eq!(t.family_of(model), Some(family), "{model}");
        }
    }

    #[test]
    fn length_model_ratio_cap_and_floor() {
        let m = LengthModel {
            ratio: 0.1,
            cap_tokens: 4000,
            min_tokens: 64,
        };
        assert_eq!(m.summary_tokens(10_000), 1000); // 0.1 * 10,000
        assert_eq!(m.summary_tokens(100_000), 4000); // 10,000 capped at 4,000
        assert_eq!(m.summary_tokens(100), 64); // 10 raised to the floor
    }

    #[test]
    fn fit_recovers_exact_parameters() {
        // seconds = 0.5 + in/5000 + out/50, on points that vary both sizes independently.
        let truth = LatencyParams {
            ttft_s: 0.5,
            prefill_tokens_per_s: 5000.0,
            decode_tokens_per_s: 50.0,
        };
        let pts = [
            (1000, 10),
            (5000, 200),
            (20000, 50),
            (8000, 400),
            (30000, 20),
        ];
        let samples: Vec<LatencySample> = pts
            .iter()
            .map(|&(i, o)| LatencySample {
                input_tokens: i,
                output_tokens: o,
                seconds: truth.seconds(i, o),
            })
            .collect();
        let fit = fit_latency(
            &samples,
            &LatencyParams {
                ttft_s: 1.0,
                prefill_tokens_per_s: 1.0,
                decode_tokens_per_s: 1.0,
            },
        )
        .unwrap();
        assert!((fit.params.ttft_s - 0.5).abs() < 1e-6);
        assert!((fit.params.prefill_tokens_per_s - 5000.0).abs() < 1e-3);
        assert!((fit.params.decode_tokens_per_s - 50.0).abs() < 1e-6);
        assert!((fit.r2 - 1.0).abs() < 1e-9);
        assert!(fit.residual_p95_s < 1e-6);
        assert!(fit.held.is_empty());
    }

    #[test]
    fn fit_holds_a_slope_that_comes_out_negative() {
        // Latency falls with input here (nonsense): the prefill slope is held at the prior
        // (10,000 tok/s) and ttft/decode refitted.
        let s = |i, o, t| LatencySample {
            input_tokens: i,
            output_tokens: o,
            seconds: t,
        };
        let samples = [
            s(1000, 10, 3.0),
            s(50_000, 10, 1.0),
            s(2000, 100, 4.0),
            s(60_000, 100, 2.0),
        ];
        let prior = LatencyParams {
            ttft_s: 1.0,
            prefill_tokens_per_s: 10_000.0,
            decode_tokens_per_s: 80.0,
        };
        let fit = fit_latency(&samples, &prior).unwrap();
        assert!(fit.held.contains(&"prefill_tokens_per_s"));
        assert_eq!(fit.params.prefill_tokens_per_s, 10_000.0);
        assert!(fit.params.decode_tokens_per_s > 0.0);
    }

    #[test]
    fn too_few_samples() {
        let prior = LatencyParams {
            ttft_s: 1.0,
            prefill_tokens_per_s: 1.0,
            decode_tokens_per_s: 1.0,
        };
        assert!(fit_latency(&[], &prior).is_none());
    }

    #[test]
    fn length_fit_median_ratio_and_max_cap() {
        // ratios 0.02, 0.025, 0.03 -> median 0.025; cap = 4,500.
        let s = |i, o| LengthSample {
            input_tokens: i,
            summary_tokens: o,
        };
        let m = fit_length(
            &[s(100_000, 2_000), s(100_000, 3_000), s(180_000, 4_500)],
            &LengthModel::default(),
        )
        .unwrap();
        assert!((m.ratio - 0.025).abs() < 1e-12);
        assert_eq!(m.cap_tokens, 4_500);
    }

    #[test]
    fn bad_latency_file_is_one_line() {
        let mut t = LatencyTable::builtin();
        let e = t
            .apply_file(
                "l.toml",
                "[models.x]\nttft_s = 1.0\nprefill_tokens_per_s = 0.0\ndecode_tokens_per_s = 5.0\n",
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "l.toml: models.\"x\": ttft_s must be >= 0 and the rates > 0"
        );
        let e = t
            .apply_file("l.toml", "[models.x]\nttft_s = \"fast\"\n")
            .unwrap_err();
        assert!(e.to_string().starts_with("l.toml: line 2"), "{e}");
    }
}
