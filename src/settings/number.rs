//! How a grid axis or a policy number is written: `40000`, `40_000`, `40k`, `1.5M`.

/// A value that is not a number a setting accepts; the message names the axis and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NumberError {
    #[error(
        "grid axis {axis}: value `{value}` is negative; {axis} accepts {} or more",
        least(axis)
    )]
    Negative { axis: String, value: String },
    #[error("grid axis {axis}: value `{value}` is not a whole number (write e.g. 40000, 40_000, 40k or 1.5M)")]
    NotWhole { axis: String, value: String },
    #[error("grid axis {axis}: value `{value}` is out of range: a setting's numbers are at most {MAX_TABLE_NUMBER:e} (the run folder holds none larger)")]
    OutOfRange { axis: String, value: String },
}

/// The least value `axis` accepts: 1 where 0 is refused (a size or turn trigger the manifest
/// requires above 0, a cap ADK ignores at 0, a percentage or trigger of another framework
/// that would fire before every request), else 0.
pub fn least(axis: &str) -> u64 {
    match axis {
        "after_tokens" | "after_invocations" | "max_llm_calls" | "clear_trigger" | "pct"
        | "codex_pct" | "lc-trigger" => 1,
        _ => 0,
    }
}

/// Largest magnitude of a number in a run folder's tables. The sweep writes USD, seconds,
/// token counts and shares, all far below it; a larger one is a damaged or hand-edited file.
/// A grid value above it is refused before the first replay, by the same bound the run
/// folder's reader applies afterwards (one definition for both).
pub const MAX_TABLE_NUMBER: f64 = 1e15;

/// `value` of `axis`, refused when the run folder could not hold it.
pub fn within_table_range(axis: &str, value: u64) -> Result<u64, NumberError> {
    if value as f64 > MAX_TABLE_NUMBER {
        return Err(NumberError::OutOfRange {
            axis: axis.to_string(),
            value: value.to_string(),
        });
    }
    Ok(value)
}

/// Parse one number: digits with optional `_`, optional fraction, optional `k` (×1,000) or
/// `M` (×1,000,000) suffix; the result must be a whole number within [`MAX_TABLE_NUMBER`].
pub fn parse_number(axis: &str, s: &str) -> Result<u64, NumberError> {
    within_table_range(axis, parse_whole(axis, s)?)
}

fn parse_whole(axis: &str, s: &str) -> Result<u64, NumberError> {
    let bad = || NumberError::NotWhole {
        axis: axis.to_string(),
        value: s.to_string(),
    };
    let t = s.trim();
    let (body, mult) = if let Some(b) = t.strip_suffix(['k', 'K']) {
        (b, 1_000u64)
    } else if let Some(b) = t.strip_suffix('M') {
        (b, 1_000_000u64)
    } else {
        (t, 1u64)
    };
    let body: String = body.chars().filter(|c| *c != '_').collect();
    if body.starts_with('-') {
        return Err(NumberError::Negative {
            axis: axis.to_string(),
            value: s.to_string(),
        });
    }
    if body.is_empty() || body.starts_with('+') {
        return Err(bad());
    }
    let (int_part, frac_part) = body.split_once('.').unwrap_or((body.as_str(), ""));
    if !int_part.chars().all(|c| c.is_ascii_digit())
        || !frac_part.chars().all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let int_v: u64 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().map_err(|_| bad())?
    };
    let whole = int_v.checked_mul(mult).ok_or_else(bad)?;
    if frac_part.is_empty() {
        return Ok(whole);
    }
    // fraction × mult must be whole: 1.5k = 1500, 1.2345k is refused.
    let scale = 10u64.checked_pow(frac_part.len() as u32).ok_or_else(bad)?;
    let frac_v: u64 = frac_part.parse().map_err(|_| bad())?;
    let num = frac_v.checked_mul(mult).ok_or_else(bad)?;
    if num % scale != 0 {
        return Err(bad());
    }
    whole.checked_add(num / scale).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_with_suffixes_and_underscores() {
        assert_eq!(parse_number("a", "40k").unwrap(), 40_000);
        assert_eq!(parse_number("a", "80_000").unwrap(), 80_000);
        assert_eq!(parse_number("a", "1.5M").unwrap(), 1_500_000);
        assert_eq!(parse_number("a", "2M").unwrap(), 2_000_000);
        assert!(parse_number("a", "1.2345k").is_err());
        assert!(parse_number("a", "abc").is_err());
        assert!(parse_number("a", "1000000000M").is_ok());
        assert!(parse_number("a", "1000000001M")
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        assert!(parse_number("after_tokens", "-5")
            .unwrap_err()
            .to_string()
            .ends_with("after_tokens accepts 1 or more"));
        assert!(parse_number("a", "-5")
            .unwrap_err()
            .to_string()
            .contains("negative"));
    }
}
