//! Provider-scale prompt sizes (issue 37 item 1): a session's recorded prompt sizes against the
//! run tokenizer's count of the same history, fitted as `recorded ≈ overhead + scale × counted`.
//! The overhead is what the provider counts and the transcript does not hold (system prompt,
//! tool schemas); the scale is the provider's tokenizer against ours (Anthropic ~1.2 × o200k).
//! Where a size is not recorded (a request after a recorded compaction, an amount a policy
//! removes) the fit sizes it on the provider's scale instead of mixing the two counters.
//!
//! The method is `inspect --calibration`'s: the least-squares slope for the scale, then the
//! median residual for the overhead, so a few outliers (a request whose usage was logged
//! mid-stream) move the overhead little.

/// Fewest requests a fit is made from: below it a slope says nothing.
pub const MIN_FIT_REQUESTS: usize = 3;

/// One session's fit.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PromptFit {
    /// Tokens the provider counts beyond the history we count, per request.
    pub overhead: i64,
    /// Provider tokens per counted token (1.0 when the history never grows).
    pub scale: f64,
    /// Median over the fitted requests of |recorded − fitted| / recorded, in %.
    pub p50_abs_error_pct: f64,
    /// Requests the fit was made from.
    pub requests: usize,
}

impl PromptFit {
    /// The provider's size of a prompt whose history counts `counted` tokens.
    pub fn size(&self, counted: u64) -> u64 {
        (self.overhead as f64 + self.scale * counted as f64)
            .round()
            .max(0.0) as u64
    }

    /// An amount of `counted` tokens (removed or added by a policy) on the provider's scale.
    pub fn amount(&self, counted: u64) -> u64 {
        (self.scale * counted as f64).round().max(0.0) as u64
    }
}

/// Least-squares slope of recorded on counted; `None` without spread in `counted`
/// (`inspect --calibration`'s scale: one implementation for both).
pub fn slope(pairs: &[(u64, u64)]) -> Option<f64> {
    let n = pairs.len() as f64;
    let mc = pairs.iter().map(|p| p.1 as f64).sum::<f64>() / n;
    let mr = pairs.iter().map(|p| p.0 as f64).sum::<f64>() / n;
    let var: f64 = pairs.iter().map(|p| (p.1 as f64 - mc).powi(2)).sum();
    let cov: f64 = pairs
        .iter()
        .map(|p| (p.1 as f64 - mc) * (p.0 as f64 - mr))
        .sum();
    (var > 0.0).then(|| cov / var)
}

/// The median of `v`; 0 when empty.
fn median(v: &mut [f64]) -> f64 {
    crate::stats::median(v).unwrap_or(0.0)
}

/// Fit `(recorded, counted)` pairs (requests with a recorded size measured on the raw history,
/// i.e. before any recorded compaction); `None` with fewer than [`MIN_FIT_REQUESTS`] pairs.
pub fn fit_prompt(pairs: &[(u64, u64)]) -> Option<PromptFit> {
    let pairs: Vec<(u64, u64)> = pairs.iter().copied().filter(|p| p.0 > 0).collect();
    if pairs.len() < MIN_FIT_REQUESTS {
        return None;
    }
    let scale = slope(&pairs)
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1.0);
    let mut residuals: Vec<f64> = pairs
        .iter()
        .map(|&(r, c)| r as f64 - scale * c as f64)
        .collect();
    let overhead = median(&mut residuals).round() as i64;
    let fit = PromptFit {
        overhead,
        scale,
        p50_abs_error_pct: 0.0,
        requests: pairs.len(),
    };
    let mut errors: Vec<f64> = pairs
        .iter()
        .map(|&(r, c)| (r as f64 - fit.size(c) as f64).abs() / r as f64 * 100.0)
        .collect();
    Some(PromptFit {
        p50_abs_error_pct: median(&mut errors),
        ..fit
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sizes `1,000 + 1.2 × counted` give overhead 1,000 and scale 1.2, with no error.
    #[test]
    fn exact_sizes_give_their_overhead_and_scale() {
        let pairs: Vec<(u64, u64)> = [500u64, 2_000, 7_500, 12_000, 30_000]
            .iter()
            .map(|&c| (1_000 + c * 6 / 5, c))
            .collect();
        let f = fit_prompt(&pairs).unwrap();
        assert_eq!(f.overhead, 1_000);
        assert!((f.scale - 1.2).abs() < 1e-9, "{}", f.scale);
        assert_eq!(f.p50_abs_error_pct, 0.0);
        assert_eq!(f.size(50_000), 61_000);
        assert_eq!(f.amount(10_000), 12_000);
    }

    /// One request logged mid-stream (far off the line) moves the overhead little.
    #[test]
    fn an_outlier_moves_the_overhead_little() {
        let mut pairs: Vec<(u64, u64)> = (1..=20u64)
            .map(|i| (1_000 + i * 1_000 * 6 / 5, i * 1_000))
            .collect();
        pairs[10].0 = 3;
        let f = fit_prompt(&pairs).unwrap();
        assert!(f.p50_abs_error_pct < 5.0, "{f:?}");
        assert!(fit_prompt(&pairs[..2]).is_none());
    }
}
