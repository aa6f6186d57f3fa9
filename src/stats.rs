//! The one percentile the project uses: linear interpolation between closest ranks (numpy's
//! default, `numpy.percentile(..., method="linear")`), with the quantile as a fraction.

/// Percentile `q` (0..=1; clamped, NaN read as 0) of values sorted ascending; 0 for an
/// empty slice.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return 0.0;
    };
    let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
    let rank = q * last as f64;
    let lo = (rank.floor() as usize).min(last);
    let hi = (rank.ceil() as usize).min(last);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// The median of `v` (sorted in place); `None` when empty.
pub fn median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then(|| percentile(v, 0.5))
}

/// `x` to 3 decimals: figures printed and written without float noise.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// [`percentile`] of values in any order (sorts a copy).
pub fn percentile_of(values: &[f64], q: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile(&v, q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_numpy_linear() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), 2.5);
        // numpy.percentile([1, 2, 3, 4], 95) == 3.85
        assert!((percentile(&v, 0.95) - 3.85).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 0.95), 7.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
        assert!((percentile(&[0.0, 10.0], 0.95) - 9.5).abs() < 1e-9);
        assert_eq!(percentile(&v, 2.0), 4.0);
        assert_eq!(percentile(&v, f64::NAN), 1.0);
        assert!((percentile_of(&[4.0, 1.0, 3.0, 2.0], 0.95) - 3.85).abs() < 1e-12);
    }
}
