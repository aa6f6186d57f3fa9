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

/// Why text is not a Python integer literal a manifest field can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PyIntError {
    /// Python itself refuses it (`1__0`, `007`, `1_`, `--5`, `0x`): a syntax error there.
    #[error("not a valid integer (Python reads integers as e.g. 80000, 80_000, 0x1F; no leading zeros, `_` only between digits)")]
    Invalid,
    /// Python reads it, but it does not fit a signed 64-bit number.
    #[error("out of range: at most {} either side of 0", i64::MAX)]
    OutOfRange,
}

/// Read `s` exactly as Python's `ast.literal_eval` reads an integer: one optional sign
/// (`+`/`-`, blanks may follow it), then a decimal literal (a nonzero digit first, or zeros
/// only) or a `0x`/`0o`/`0b` literal, with single `_` between digits (after the prefix too).
/// Source: the Python 3 language reference, "Integer literals" (lexical analysis, 2.4.5), and
/// `ast.literal_eval`'s `_convert_signed_num` (one unary sign on a number).
pub fn python_int(s: &str) -> Result<i64, PyIntError> {
    let t = s;
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, t[1..].trim_start()),
        Some(b'+') => (false, t[1..].trim_start()),
        _ => (false, t),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = match lower.get(..2) {
        Some("0x") => (16, &lower[2..]),
        Some("0o") => (8, &lower[2..]),
        Some("0b") => (2, &lower[2..]),
        _ => (10, lower.as_str()),
    };
    // After a radix prefix one `_` may come first (`0x_1f`); elsewhere only between digits.
    let digits = if radix != 10 {
        digits.strip_prefix('_').unwrap_or(digits)
    } else {
        digits
    };
    let groups_ok = !digits.is_empty()
        && digits
            .split('_')
            .all(|g| !g.is_empty() && g.chars().all(|c| c.is_digit(radix)));
    let leading_zero =
        radix == 10 && digits.starts_with('0') && digits.chars().any(|c| c != '0' && c != '_');
    if !groups_ok || leading_zero {
        return Err(PyIntError::Invalid);
    }
    let plain: String = digits.chars().filter(|c| *c != '_').collect();
    let magnitude = u128::from_str_radix(&plain, radix).map_err(|_| PyIntError::OutOfRange)?;
    let signed = if negative {
        -(i128::try_from(magnitude).map_err(|_| PyIntError::OutOfRange)?)
    } else {
        i128::try_from(magnitude).map_err(|_| PyIntError::OutOfRange)?
    };
    i64::try_from(signed).map_err(|_| PyIntError::OutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

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

    /// Python's verdict on each literal, from one run of `python3` (`ast.literal_eval`):
    /// `Some(decimal)` for an int, `None` for anything else or an error.
    fn python_verdicts(literals: &[String]) -> Vec<Option<String>> {
        use std::io::Write;
        let script = "import ast, json, sys\n\
            def v(s):\n    try:\n        x = ast.literal_eval(s)\n    except Exception:\n        return None\n\
            \x20   return str(x) if type(x) is int else None\n\
            print(json.dumps([v(s) for s in json.load(sys.stdin)]))\n";
        let py = std::env::var("COMPACTION_SIM_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut child = std::process::Command::new(&py)
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("this test needs Python 3 ({py}): {e}"));
        let input = serde_json::to_vec(literals).unwrap();
        child.stdin.take().unwrap().write_all(&input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{py} failed: {:?}", out);
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// Literals a user or a hostile input might write: grouped digits, stray and doubled `_`,
    /// leading zeros, signs (doubled, with blanks), radix prefixes, values past 64 bits.
    fn literal() -> impl Strategy<Value = String> {
        let sign = prop::sample::select(vec!["", "", "", "+", "-", "- ", "+ ", "--", "+-"]);
        let grouped = prop::collection::vec("[0-9]{1,4}", 1..6).prop_map(|g| g.join("_"));
        let body = prop_oneof![
            grouped,
            "[0-9_]{0,12}",
            "0{1,3}[0-9_]{0,6}",
            "[1-9][0-9]{15,45}",
            "0[xXoObB]_?[0-9a-fA-F_]{0,20}",
        ];
        (sign, body).prop_map(|(s, b)| format!("{s}{b}"))
    }

    #[test]
    fn manifest_integers_agree_with_python_ast_literal_eval() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = literal();
        let mut literals: Vec<String> = (0..4000)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect();
        for fixed in [
            "1_000_000",
            "5_000",
            "1_0",
            "007",
            "0",
            "00",
            "0_0",
            "-0",
            "1__0",
            "1_",
            "_1",
            "0x_1f",
            "0b",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
        ] {
            literals.push(fixed.to_string());
        }
        let verdicts = python_verdicts(&literals);
        for (lit, py) in literals.iter().zip(&verdicts) {
            let ours = python_int(lit);
            match py {
                None => assert_eq!(ours, Err(PyIntError::Invalid), "{lit:?}: Python refuses it"),
                Some(v) => match v.parse::<i64>() {
                    Ok(v) => assert_eq!(ours, Ok(v), "{lit:?}: Python reads {v}"),
                    Err(_) => assert_eq!(
                        ours,
                        Err(PyIntError::OutOfRange),
                        "{lit:?}: Python reads {v}"
                    ),
                },
            }
        }
        assert!(
            verdicts.iter().filter(|v| v.is_some()).count() > 1000,
            "too few valid literals generated"
        );
        assert!(
            verdicts.iter().filter(|v| v.is_none()).count() > 500,
            "too few invalid literals generated"
        );
    }
}
