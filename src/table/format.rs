//! How the run folder's numbers read in the report and on the charts: dollars, shares,
//! token counts. One place, so a figure a chart labels and the report's table states read
//! the same.

/// Digits with a comma every three from the right (`1234567` → `1,234,567`).
fn grouped(digits: &str) -> String {
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// A whole number with grouped thousands (`-1,234`), rounded.
pub fn fmt_int(v: f64) -> String {
    let n = v.round() as i64;
    let out = grouped(&n.unsigned_abs().to_string());
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// `$1,234.56`, or 4 significant decimals below a dollar.
pub fn fmt_usd(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    if a == 0.0 {
        return "$0.00".to_string();
    }
    if a < 1.0 {
        return format!("{sign}${a:.4}");
    }
    let cents = format!("{a:.2}");
    let (int, frac) = cents.split_once('.').unwrap_or((&cents, "00"));
    let grouped = grouped(int);
    format!("{sign}${grouped}.{frac}")
}

/// USD with 4 decimals (`$1.4259`), for runs whose totals are a few dollars: cents would hide
/// differences between settings, and the sweep's own summary prints 4 decimals too.
pub fn fmt_usd4(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let text = format!("{:.4}", v.abs());
    let (int_part, frac) = text.split_once('.').unwrap_or((&text, "0000"));
    let grouped = grouped(int_part);
    format!("{sign}${grouped}.{frac}")
}

/// The amount from which a run's money reads in cents rather than 4 decimals.
pub const CENTS_FROM_USD: f64 = 100.0;

/// The money format of a run whose costs are of the size of `scale` (its no-compaction
/// cost): cents from [`CENTS_FROM_USD`] up, else 4 decimals, so every amount shown has the
/// same precision.
pub fn money_format(scale: f64) -> fn(f64) -> String {
    if scale >= CENTS_FROM_USD {
        fmt_usd
    } else {
        fmt_usd4
    }
}

/// Axis ticks in USD: two significant digits below a dollar (`$0.50`, `$0.012`), cents above.
pub fn fmt_usd_axis(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "$0".to_string();
    }
    if a >= 1.0 {
        return fmt_usd(v);
    }
    let decimals = (1 - a.log10().floor() as i32).clamp(2, 8) as usize;
    let sign = if v < 0.0 { "-" } else { "" };
    format!("{sign}${a:.decimals$}")
}

/// The most decimals a dollar amount is printed with: the run folder's tables hold 6
/// (`sweep::run::FLOAT_DECIMALS`), so two stored amounts that read the same are the same.
pub const MAX_USD_DECIMALS: usize = 6;
/// The most decimals a percentage is printed with: a share's 6 stored decimals.
pub const MAX_PCT_DECIMALS: usize = 4;

/// A 0..1 share as a percentage with one decimal.
pub fn fmt_pct(v: f64) -> String {
    fmt_pct_to(v, 1)
}

/// A 0..1 share as a percentage with `decimals` decimals (tables that must tell close
/// values apart, see [`decimals_to_tell_apart`]).
pub fn fmt_pct_to(v: f64, decimals: usize) -> String {
    format!("{:.decimals$} %", v * 100.0)
}

/// USD with `decimals` decimals and grouped thousands (`$1,234.5678`).
pub fn fmt_usd_to(v: f64, decimals: usize) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let text = format!("{:.decimals$}", v.abs());
    let (int_part, frac) = text.split_once('.').unwrap_or((&text, ""));
    let grouped = grouped(int_part);
    if frac.is_empty() {
        format!("{sign}${grouped}")
    } else {
        format!("{sign}${grouped}.{frac}")
    }
}

/// The fewest decimals from `from` up to `to` at which `fmt` prints every two distinct
/// `values` differently (`to` when none does): a table whose rows are a trade must not show
/// two steps of it with the same figure.
pub fn decimals_to_tell_apart(
    values: &[f64],
    from: usize,
    to: usize,
    fmt: impl Fn(f64, usize) -> String,
) -> usize {
    let mut distinct: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    (from..=to)
        .find(|&dec| {
            let mut printed: Vec<String> = distinct.iter().map(|&v| fmt(v, dec)).collect();
            printed.dedup();
            printed.len() == distinct.len()
        })
        .unwrap_or(to)
}

/// Token counts as `80k` / `1.2M`.
pub fn fmt_tokens(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_share_formats_carry_units() {
        assert_eq!(fmt_usd(1234.5), "$1,234.50");
        assert_eq!(fmt_usd(-12.0), "-$12.00");
        assert_eq!(fmt_usd(0.01234), "$0.0123");
        assert_eq!(fmt_pct(0.1234), "12.3 %");
        assert_eq!(fmt_usd_axis(0.5), "$0.50");
        assert_eq!(fmt_usd_axis(0.0123), "$0.012");
        assert_eq!(fmt_usd_axis(0.0), "$0");
        assert_eq!(fmt_usd_axis(2.0), "$2.00");
        assert_eq!(fmt_tokens(80_000.0), "80k");
        assert_eq!(fmt_tokens(1_260_000.0), "1.3M");
        assert_eq!(fmt_int(-1_234_567.4), "-1,234,567");
        assert_eq!(fmt_usd_to(1234.6, 0), "$1,235");
    }
}
