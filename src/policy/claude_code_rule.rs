//! Claude Code's auto-compact threshold from its mechanism (issue 43 item 1), as the CLI's
//! own `cli.js` computes it in the releases read (npm `@anthropic-ai/claude-code` 2.0.57,
//! 2.0.58, 2.0.74, 2.1.1, 2.1.2, 2.1.5, 2.1.7, 2.1.9, 2.1.14, 2.1.17, 2.1.19-2.1.23, 2.1.37,
//! 2.1.39, 2.1.50; the functions are cited in
//! docs/policies.md "Claude Code's auto-compact threshold, from its CLI"): before each
//! main-loop request it compacts when the size it checks (`claude_code_size`) reaches
//!
//! `window − reserve − 13,000`, lowered (never raised) by `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`
//! to `floor((window − reserve) × pct / 100)`,
//!
//! where `window` is 200,000, or 1,000,000 for a `[1m]` model setting (or the 1M beta on a
//! model that takes it), and `reserve` is the model's output cap: `CLAUDE_CODE_MAX_OUTPUT_TOKENS`
//! when set (at most 64,000 in these releases), else 32,000, and never more than the model's
//! own limit; from 2.1.21 at most 20,000. A model the CLI does not know gets the default
//! limit (32,000), as the CLI's code gives it. From 2.1.75 `CLAUDE_CODE_AUTO_COMPACT_WINDOW`
//! lowers the window; the user's `autoCompactEnabled`, where the session shows it, turns it
//! off (releases after 2.1.50 read up to 2.1.112, the last that ships `cli.js`). Nothing here
//! is fitted.

use crate::transcript::ClaudeCodeSettings;

/// The buffer below the effective window (`cli.js`: 13e3 in every release read).
pub const BUFFER: u64 = 13_000;
/// The window of every model without the 1M setting (`cli.js`: 200000).
pub const WINDOW: u64 = 200_000;
/// The 1M window (`[1m]` model setting, or the `context-1m-2025-08-07` beta).
pub const WINDOW_1M: u64 = 1_000_000;
/// The output reserve's cap from [`RESERVE_CAP_SINCE`] (`cli.js` 2.1.21: `Math.min(cap,
/// 2e4)`; CHANGELOG 2.1.21 "Fixed auto-compact triggering too early on models with large
/// output token limits").
pub const RESERVE_CAP: u64 = 20_000;
/// The first release that caps the reserve (2.1.20 does not, 2.1.21 does).
pub const RESERVE_CAP_SINCE: Version = (2, 1, 21);
/// `CLAUDE_CODE_MAX_OUTPUT_TOKENS` unset or invalid: 32,000; above 64,000: 64,000 (`cli.js`
/// up to 2.1.39).
pub const DEFAULT_OUTPUT: u64 = 32_000;
pub const MAX_OUTPUT_SETTING: u64 = 64_000;
/// From this release the output limit is per model: a default and an upper limit
/// (`cli.js` 2.1.50; 2.1.39 still has one model limit and the 32,000 default).
pub const PER_MODEL_DEFAULT_SINCE: Version = (2, 1, 50);
/// From this release `DISABLE_AUTO_COMPACT` turns auto-compact off (2.0.74 reads only
/// `DISABLE_COMPACT`; 2.1.19 reads both; releases between not read).
pub const DISABLE_AUTO_COMPACT_SINCE: Version = (2, 1, 1);
/// From this release the 1M beta gives Opus 4.6 the 1M window too (2.1.23: Sonnet 4 only).
pub const OPUS_1M_BETA_SINCE: Version = (2, 1, 37);
/// From this release the 1M beta gives Opus 4.7 the 1M window too (`cli.js` 2.1.111; 2.1.110
/// Sonnet 4 and Opus 4.6 only).
pub const OPUS_4_7_1M_BETA_SINCE: Version = (2, 1, 111);

/// From this release `CLAUDE_CODE_AUTO_COMPACT_WINDOW` (a positive integer, `parseInt`)
/// lowers the window to it (`cli.js` 2.1.75; 2.1.74 and before do not read it).
pub const AUTO_COMPACT_WINDOW_SINCE: Version = (2, 1, 75);
/// From this release the value is capped at 1,000,000 and raised to 100,000 (`cli.js` 2.1.89;
/// 2.1.88 takes it as it is).
pub const AUTO_COMPACT_WINDOW_BOUNDED_SINCE: Version = (2, 1, 89);
pub const AUTO_COMPACT_WINDOW_MIN: u64 = 100_000;
pub const AUTO_COMPACT_WINDOW_MAX: u64 = 1_000_000;

/// `major.minor.patch`.
pub type Version = (u64, u64, u64);

/// JavaScript's `parseInt(s, 10)`: leading white space, a sign, then the digits up to the
/// first other character (`"150k"` is 150); `None` for NaN (no digit).
fn js_parse_int(s: &str) -> Option<i128> {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: String = t
        .chars()
        .take_while(char::is_ascii_digit)
        .take(30)
        .collect();
    let n: i128 = digits.parse().ok()?;
    Some(if neg { -n } else { n })
}

/// The window `CLAUDE_CODE_AUTO_COMPACT_WINDOW` sets in `version`, when it sets one: a
/// positive integer, from 2.1.89 within [100,000, 1,000,000], and from 2.1.89, without it,
/// the `autoCompactWindow` setting; the window is the smaller of it and the model's.
fn window_setting(version: Version, settings: &ClaudeCodeSettings) -> Option<u64> {
    if version < AUTO_COMPACT_WINDOW_SINCE {
        return None;
    }
    let bounded = version >= AUTO_COMPACT_WINDOW_BOUNDED_SINCE;
    let env = settings
        .var("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
        .and_then(js_parse_int)
        .and_then(|n| u64::try_from(n).ok())
        .filter(|&n| n > 0);
    match env {
        Some(n) if bounded => Some(n.clamp(AUTO_COMPACT_WINDOW_MIN, AUTO_COMPACT_WINDOW_MAX)),
        Some(n) => Some(n),
        None if bounded => settings.auto_compact_window,
        None => None,
    }
}

/// `major.minor.patch` of a CLI version string.
pub fn parse_version(v: &str) -> Option<Version> {
    let mut it = v.trim().split('.').map(|x| x.trim().parse::<u64>().ok());
    Some((it.next()??, it.next()??, it.next().flatten().unwrap_or(0)))
}

/// The model's output limit as `(default, upper limit)` in `version`: before
/// [`PER_MODEL_DEFAULT_SINCE`] one limit (the setting's default is 32,000 for every model,
/// capped by the limit); from it a default and an upper limit per model. Matched on the
/// lower-cased name by substring, in the CLI's order; an unknown model gets the last case.
pub fn output_limit(version: Version, model: &str) -> (u64, u64) {
    let m = model.to_lowercase();
    let has = |s: &str| m.contains(s);
    if version < PER_MODEL_DEFAULT_SINCE {
        let cap = if has("3-5") || has("claude-3-sonnet") {
            8_192
        } else if has("claude-3-opus") || has("claude-3-haiku") {
            4_096
        } else if has("opus-4-5") || (!has("opus-4") && (has("sonnet-4") || has("haiku-4"))) {
            64_000
        } else {
            // Opus 4, 4.1 and (in these releases) 4.6, and every unknown model
            32_000
        };
        return (DEFAULT_OUTPUT.min(cap), cap);
    }
    if ["opus-4-5", "opus-4-6", "sonnet-4", "haiku-4"]
        .iter()
        .any(|s| has(s))
    {
        (32_000, 64_000)
    } else if has("opus-4") {
        (32_000, 32_000)
    } else if has("claude-3-opus") || has("claude-3-haiku") {
        (4_096, 4_096)
    } else if has("claude-3-sonnet") || has("3-5-sonnet") || has("3-5-haiku") {
        (8_192, 8_192)
    } else {
        // 3-7-sonnet and every unknown model
        (32_000, 64_000)
    }
}

/// The output cap the CLI requests: `CLAUDE_CODE_MAX_OUTPUT_TOKENS` (a positive integer;
/// else the default) within the model's limit.
pub fn output_cap(version: Version, model: &str, setting: Option<&str>) -> u64 {
    let (default, upper) = output_limit(version, model);
    let set = setting
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|&n| n > 0)
        .map(|n| n as u64);
    if version < PER_MODEL_DEFAULT_SINCE {
        // validate(): unset/invalid 32,000, above 64,000 64,000; then min with the limit
        let effective = set.map_or(DEFAULT_OUTPUT, |n| n.min(MAX_OUTPUT_SETTING));
        return effective.min(upper);
    }
    set.map_or(default, |n| n.min(upper))
}

/// The tokens reserved for the output: the cap, at most [`RESERVE_CAP`] from 2.1.21.
pub fn output_reserve(version: Version, model: &str, setting: Option<&str>) -> u64 {
    let cap = output_cap(version, model, setting);
    if version >= RESERVE_CAP_SINCE {
        cap.min(RESERVE_CAP)
    } else {
        cap
    }
}

/// Whether the 1M beta gives `model` the 1M window in `version`.
fn takes_1m_beta(version: Version, model: &str) -> bool {
    let m = model.to_lowercase();
    m.contains("claude-sonnet-4")
        || (version >= OPUS_1M_BETA_SINCE && m.contains("opus-4-6"))
        || (version >= OPUS_4_7_1M_BETA_SINCE && m.contains("opus-4-7"))
}

/// Why the session's window is 1M, when it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OneM {
    /// The model setting carries `[1m]` (a settings file read, or the caller).
    Setting,
    /// A recorded prompt passed 200,000 tokens, which the API refuses on a 200,000 window;
    /// the model takes the 1M beta.
    Recorded,
}

/// Claude Code's auto-compact rule for one session: the inputs, and the threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct CliRule {
    pub version: Version,
    pub model: String,
    pub window: u64,
    pub one_m: Option<OneM>,
    pub reserve: u64,
    pub buffer: u64,
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` when set and within (0, 100].
    pub pct: Option<f64>,
    /// `false`: `DISABLE_COMPACT` (or, from 2.1.1, `DISABLE_AUTO_COMPACT`) is set, or the
    /// session shows the user's `autoCompactEnabled` off.
    pub enabled: bool,
}

/// A truthy environment value, as the CLI reads one (`1`, `true`, `yes`, `on`).
fn truthy(v: Option<&str>) -> bool {
    v.is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

impl CliRule {
    /// The rule of CLI `version` for `model` under `settings`; `largest_prompt`: the largest
    /// recorded prompt (input + cache), which shows a 1M window when above 200,000.
    pub fn new(
        version: Version,
        model: &str,
        settings: &ClaudeCodeSettings,
        largest_prompt: u64,
    ) -> CliRule {
        let setting_1m = settings
            .model
            .as_deref()
            .is_some_and(|m| m.to_lowercase().contains("[1m]"));
        let disabled_1m = version >= PER_MODEL_DEFAULT_SINCE
            && truthy(settings.var("CLAUDE_CODE_DISABLE_1M_CONTEXT"));
        let one_m = if disabled_1m {
            None
        } else if setting_1m {
            Some(OneM::Setting)
        } else if largest_prompt > WINDOW && takes_1m_beta(version, model) {
            Some(OneM::Recorded)
        } else {
            None
        };
        let pct = settings
            .var("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
            .and_then(|p| p.trim().parse::<f64>().ok())
            .filter(|p| *p > 0.0 && *p <= 100.0);
        let off = truthy(settings.var("DISABLE_COMPACT"))
            || (version >= DISABLE_AUTO_COMPACT_SINCE
                && truthy(settings.var("DISABLE_AUTO_COMPACT")))
            || settings.auto_compact.as_ref().is_some_and(|a| !a.enabled);
        let model_window = if one_m.is_some() { WINDOW_1M } else { WINDOW };
        CliRule {
            version,
            model: model.to_string(),
            window: window_setting(version, settings).map_or(model_window, |w| w.min(model_window)),
            one_m,
            reserve: output_reserve(
                version,
                model,
                settings.var("CLAUDE_CODE_MAX_OUTPUT_TOKENS"),
            ),
            buffer: BUFFER,
            pct,
            enabled: !off,
        }
    }

    /// `window − reserve`: what the override's percentage is of.
    pub fn effective_window(&self) -> u64 {
        self.window.saturating_sub(self.reserve)
    }

    /// The size at which it compacts; `None` when auto-compact is off.
    pub fn threshold(&self) -> Option<u64> {
        self.enabled
            .then(|| compacts_at(self.effective_window(), self.buffer, self.pct))
    }
}

/// The size at which the CLI compacts on an `effective` window (`window − reserve`):
/// `effective − buffer`, or with `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE` = `pct` `floor(effective ×
/// pct / 100)` where that is lower (it can only lower it).
pub fn compacts_at(effective: u64, buffer: u64, pct: Option<f64>) -> u64 {
    let base = effective.saturating_sub(buffer);
    match pct {
        Some(p) => ((effective as f64 * p / 100.0).floor() as u64).min(base),
        None => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> ClaudeCodeSettings {
        ClaudeCodeSettings {
            env: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        }
    }

    fn at(v: &str, model: &str, s: &ClaudeCodeSettings, largest: u64) -> Option<u64> {
        CliRule::new(parse_version(v).unwrap(), model, s, largest).threshold()
    }

    const OPUS45: &str = "claude-opus-4-5-20251101";

    /// 155,000 for Opus 4.5 on 2.0.74 and 2.1.19 (the 32,000 default output reserved),
    /// 167,000 from 2.1.21 (reserve capped at 20,000); the corpus's 2.0.57 sessions, whose
    /// settings set CLAUDE_CODE_MAX_OUTPUT_TOKENS=64000, at 123,000.
    #[test]
    fn claude_code_threshold_follows_the_release_and_the_output_setting() {
        let none = ClaudeCodeSettings::default();
        assert_eq!(at("2.0.74", OPUS45, &none, 0), Some(155_000));
        assert_eq!(at("2.1.19", OPUS45, &none, 0), Some(155_000));
        assert_eq!(at("2.1.20", OPUS45, &none, 0), Some(155_000));
        assert_eq!(at("2.1.21", OPUS45, &none, 0), Some(167_000));
        assert_eq!(at("2.1.23", OPUS45, &none, 0), Some(167_000));
        assert_eq!(at("2.1.39", "claude-opus-4-6", &none, 0), Some(167_000));
        assert_eq!(at("2.1.50", "claude-opus-4-6", &none, 0), Some(167_000));
        let max64 = env(&[("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "64000")]);
        assert_eq!(at("2.0.57", OPUS45, &max64, 0), Some(123_000));
        // Opus 4.1's own limit is 32,000: the setting cannot raise the reserve past it
        assert_eq!(
            at("2.0.57", "claude-opus-4-1-20250805", &max64, 0),
            Some(155_000)
        );
        // from 2.1.21 the setting only matters below 20,000
        assert_eq!(at("2.1.23", OPUS45, &max64, 0), Some(167_000));
        let max8 = env(&[("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "8000")]);
        assert_eq!(at("2.1.23", OPUS45, &max8, 0), Some(179_000));
        // a 3.5 model's own limit is 8,192
        assert_eq!(
            at("2.0.74", "claude-3-5-sonnet-20241022", &none, 0),
            Some(178_808)
        );
    }

    /// A model the CLI does not know (a third-party model behind it) gets the default
    /// output limit and the 200,000 window: 155,000 before 2.1.21, 167,000 from it.
    #[test]
    fn an_unknown_model_gets_the_clis_defaults() {
        let none = ClaudeCodeSettings::default();
        assert_eq!(at("2.0.74", "glm-4.6", &none, 0), Some(155_000));
        assert_eq!(at("2.1.19", "deepseek-chat", &none, 0), Some(155_000));
        assert_eq!(at("2.1.50", "kimi-k2", &none, 0), Some(167_000));
    }

    /// `[1m]` in the model setting, or a recorded prompt above 200,000 on a model that takes
    /// the 1M beta, gives the 1M window (967,000 from 2.1.21); a large prompt on a model that
    /// does not take the beta does not; CLAUDE_CODE_DISABLE_1M_CONTEXT (2.1.50) undoes it.
    #[test]
    fn a_1m_model_compacts_at_the_1m_windows_threshold() {
        let m1 = ClaudeCodeSettings {
            model: Some("opus[1m]".into()),
            ..Default::default()
        };
        assert_eq!(at("2.1.39", "claude-opus-4-6", &m1, 0), Some(967_000));
        assert_eq!(at("2.0.74", OPUS45, &m1, 0), Some(955_000));
        let none = ClaudeCodeSettings::default();
        assert_eq!(
            at("2.1.23", "claude-sonnet-4-5-20250929", &none, 250_000),
            Some(967_000)
        );
        assert_eq!(
            at("2.1.39", "claude-opus-4-6", &none, 250_000),
            Some(967_000)
        );
        assert_eq!(
            at("2.1.23", "claude-opus-4-6", &none, 250_000),
            Some(167_000)
        );
        assert_eq!(
            at("2.1.110", "claude-opus-4-7", &none, 250_000),
            Some(167_000)
        );
        assert_eq!(
            at("2.1.111", "claude-opus-4-7", &none, 250_000),
            Some(967_000)
        );
        let off = ClaudeCodeSettings {
            model: Some("opus[1m]".into()),
            ..env(&[("CLAUDE_CODE_DISABLE_1M_CONTEXT", "1")])
        };
        assert_eq!(at("2.1.50", "claude-opus-4-6", &off, 0), Some(167_000));
    }

    /// CLAUDE_CODE_AUTO_COMPACT_WINDOW lowers the window from 2.1.75 (as `parseInt` reads
    /// it; never above the model's); from 2.1.89 within [100,000, 1,000,000]; 2.1.74 ignores
    /// it, and so does every release for a value that is not a positive integer.
    #[test]
    fn the_auto_compact_window_setting_lowers_the_window_from_2_1_75() {
        let w = |v: &str| env(&[("CLAUDE_CODE_AUTO_COMPACT_WINDOW", v)]);
        assert_eq!(at("2.1.74", OPUS45, &w("150000"), 0), Some(167_000));
        assert_eq!(at("2.1.75", OPUS45, &w("150000"), 0), Some(117_000));
        assert_eq!(at("2.1.88", OPUS45, &w(" 90000tokens"), 0), Some(57_000));
        assert_eq!(at("2.1.88", OPUS45, &w("900000"), 0), Some(167_000));
        assert_eq!(at("2.1.89", OPUS45, &w("90000"), 0), Some(67_000));
        assert_eq!(at("2.1.89", OPUS45, &w("abc"), 0), Some(167_000));
        assert_eq!(at("2.1.89", OPUS45, &w("-5"), 0), Some(167_000));
        let m1 = ClaudeCodeSettings {
            model: Some("opus[1m]".into()),
            ..w("5000000")
        };
        assert_eq!(at("2.1.89", "claude-opus-4-6", &m1, 0), Some(967_000));
        // the `autoCompactWindow` setting, from 2.1.89, when the variable sets none
        let set = ClaudeCodeSettings {
            auto_compact_window: Some(120_000),
            ..Default::default()
        };
        assert_eq!(at("2.1.88", OPUS45, &set, 0), Some(167_000));
        assert_eq!(at("2.1.89", OPUS45, &set, 0), Some(87_000));
        let both = ClaudeCodeSettings {
            auto_compact_window: Some(120_000),
            ..w("150000")
        };
        assert_eq!(at("2.1.89", OPUS45, &both, 0), Some(117_000));
    }

    /// The user's `autoCompactEnabled`, where the session shows it off, turns auto-compact
    /// off in every release; shown on, it changes nothing.
    #[test]
    fn auto_compact_shown_off_has_no_threshold() {
        let shown = |enabled| ClaudeCodeSettings {
            auto_compact: Some(crate::transcript::claude_code_settings::AutoCompactShown {
                enabled,
                source: "test".into(),
            }),
            ..Default::default()
        };
        assert_eq!(at("2.0.57", OPUS45, &shown(false), 0), None);
        assert_eq!(at("2.1.39", OPUS45, &shown(false), 0), None);
        assert_eq!(at("2.1.39", OPUS45, &shown(true), 0), Some(167_000));
    }

    /// CLAUDE_AUTOCOMPACT_PCT_OVERRIDE gives floor((window − reserve) × pct / 100) and only
    /// lowers the threshold; out of (0, 100] it is ignored. DISABLE_COMPACT turns it off,
    /// and DISABLE_AUTO_COMPACT from 2.1.1.
    #[test]
    fn the_pct_override_only_lowers_the_threshold() {
        let p = |v: &str| env(&[("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", v)]);
        assert_eq!(at("2.1.39", OPUS45, &p("50"), 0), Some(90_000));
        assert_eq!(at("2.1.39", OPUS45, &p("92.5"), 0), Some(166_500));
        assert_eq!(at("2.1.39", OPUS45, &p("95"), 0), Some(167_000));
        assert_eq!(at("2.1.39", OPUS45, &p("150"), 0), Some(167_000));
        assert_eq!(at("2.1.39", OPUS45, &p("0"), 0), Some(167_000));
        assert_eq!(at("2.0.74", OPUS45, &p("50"), 0), Some(84_000));
        let off = env(&[("DISABLE_AUTO_COMPACT", "1")]);
        assert_eq!(at("2.1.39", OPUS45, &off, 0), None);
        assert_eq!(at("2.0.74", OPUS45, &off, 0), Some(155_000));
        assert_eq!(
            at("2.0.74", OPUS45, &env(&[("DISABLE_COMPACT", "true")]), 0),
            None
        );
    }
}
