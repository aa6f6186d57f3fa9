//! `--policy` and its axes: which other frameworks' policies a sweep replays beside the ADK
//! settings, and with which numbers (docs/policies.md). Each axis defaults to the value the
//! framework ships; an axis given for a policy that is not asked for is refused.

use super::grid::{err, parse_numeric_axis, parse_text_axis, AxisSpec, GridError, GridSpec};
use crate::settings::number::parse_number;
use crate::settings::policy::{
    GeminiProfile, ANTHROPIC_MIN_TRIGGER, ANTHROPIC_TRIGGER, CC_WINDOW, CODEX_RETAIN_REMOTE,
    LC_TRIM,
};
use crate::settings::{LcTrigger, PolicySpec, FAMILIES};

/// The axis keys and the family each belongs to.
const AXES: &[(&str, &str)] = &[
    ("clear_trigger", "clear-tool-results"),
    ("clear_keep", "clear-tool-results"),
    ("clear_at_least", "clear-tool-results"),
    ("clear_exclude_tools", "clear-tool-results"),
    ("mask_window", "mask-observations"),
    ("pct", "claude-code"),
    ("cc_window", "claude-code"),
    ("codex_pct", "codex"),
    ("openhands_max_size", "openhands"),
    ("openhands_keep_first", "openhands"),
    ("lc_trigger", "langchain"),
    ("lc_keep", "langchain"),
    ("gemini_threshold", "gemini-cli"),
    ("ts_n", "turn-summary"),
    ("ts_m", "turn-summary"),
    ("hybrid_n", "hybrid"),
    ("hybrid_m", "hybrid"),
    ("hybrid_window", "hybrid"),
    ("codex_retain", "codex"),
    ("gemini_profile", "gemini-cli"),
    ("lc_trim", "langchain"),
    ("openhands_max_tokens", "openhands"),
    ("anthropic_trigger", "anthropic-compaction"),
];

fn axis<'a>(g: &'a GridSpec, key: &str) -> &'a Option<AxisSpec> {
    match key {
        "clear_trigger" => &g.clear_trigger,
        "clear_keep" => &g.clear_keep,
        "clear_at_least" => &g.clear_at_least,
        "clear_exclude_tools" => &g.clear_exclude_tools,
        "mask_window" => &g.mask_window,
        "pct" => &g.pct,
        "cc_window" => &g.cc_window,
        "codex_pct" => &g.codex_pct,
        "openhands_max_size" => &g.openhands_max_size,
        "openhands_keep_first" => &g.openhands_keep_first,
        "lc_trigger" => &g.lc_trigger,
        "lc_keep" => &g.lc_keep,
        "ts_n" => &g.ts_n,
        "ts_m" => &g.ts_m,
        "hybrid_n" => &g.hybrid_n,
        "hybrid_m" => &g.hybrid_m,
        "hybrid_window" => &g.hybrid_window,
        "codex_retain" => &g.codex_retain,
        "gemini_profile" => &g.gemini_profile,
        "lc_trim" => &g.lc_trim,
        "openhands_max_tokens" => &g.openhands_max_tokens,
        "anthropic_trigger" => &g.anthropic_trigger,
        _ => &g.gemini_threshold,
    }
}

/// The families asked for, in [`FAMILIES`] order (`all` = every one).
pub fn families(g: &GridSpec) -> Result<Vec<&'static str>, GridError> {
    let Some(spec) = &g.policy else {
        return Ok(Vec::new());
    };
    let mut want = Vec::new();
    for v in parse_text_axis("policy", spec)? {
        if v == "all" {
            want.extend_from_slice(FAMILIES);
            continue;
        }
        match FAMILIES.iter().find(|f| **f == v) {
            Some(f) => want.push(*f),
            None => {
                return err(format!(
                    "grid axis policy: unknown value `{v}`; use all or {}",
                    FAMILIES.join(", ")
                ))
            }
        }
    }
    Ok(FAMILIES
        .iter()
        .copied()
        .filter(|f| want.contains(f))
        .collect())
}

fn nums(g: &GridSpec, key: &str, default: u64) -> Result<Vec<u64>, GridError> {
    match axis(g, key) {
        Some(s) => parse_numeric_axis(key, s),
        None => Ok(vec![default]),
    }
}

/// Every policy grid point the spec asks for, in family then axis order.
pub fn resolve(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let fams = families(g)?;
    for (key, fam) in AXES {
        if let Some(s) = axis(g, key) {
            if !fams.contains(fam) {
                return err(format!(
                    "grid axis {key}: values `{}` are given but policy {fam} is not asked for; add `--policy {fam}` or drop the axis",
                    s.text()
                ));
            }
        }
    }
    let mut out = Vec::new();
    for fam in fams {
        out.extend(match fam {
            "clear-tool-results" => clear_tool_results(g)?,
            "mask-observations" => nums(g, "mask_window", 10)?
                .into_iter()
                .map(|window| PolicySpec::MaskObservations { window })
                .collect(),
            "claude-code" => claude_code(g)?,
            "codex" => codex(g)?,
            "openhands" => openhands(g)?,
            "langchain" => langchain(g)?,
            "turn-summary" => turn_summary(g)?,
            "hybrid" => hybrid(g)?,
            "anthropic-compaction" => anthropic(g)?,
            _ => gemini_cli(g)?,
        });
    }
    out.dedup();
    Ok(out)
}

fn clear_tool_results(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let exclude = match &g.clear_exclude_tools {
        Some(s) => parse_text_axis("clear_exclude_tools", s)?,
        None => Vec::new(),
    };
    let mut out = Vec::new();
    for t in nums(g, "clear_trigger", 100_000)? {
        if t == 0 {
            return err("grid axis clear_trigger: value 0 would clear before every request; use 1 or more tokens");
        }
        for k in nums(g, "clear_keep", 3)? {
            for a in nums(g, "clear_at_least", 0)? {
                out.push(PolicySpec::ClearToolResults {
                    trigger: t,
                    keep: k,
                    clear_at_least: a,
                    exclude_tools: exclude.clone(),
                });
            }
        }
    }
    Ok(out)
}

fn claude_code(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let pcts = match &g.pct {
        None => vec![None],
        Some(s) => parse_numeric_axis("pct", s)?
            .into_iter()
            .map(Some)
            .collect(),
    };
    if let Some(p) = pcts.iter().flatten().find(|p| !(1..=100).contains(*p)) {
        return err(format!(
            "grid axis pct: value `{p}` is outside 1..100 (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE)"
        ));
    }
    let windows = nums(g, "cc_window", CC_WINDOW)?;
    if windows.contains(&0) {
        return err("grid axis cc_window: value 0 leaves no context; give Claude Code's auto-compact window in tokens (autoCompactWindow)");
    }
    let mut out = Vec::new();
    for &window in &windows {
        for &pct in &pcts {
            out.push(PolicySpec::ClaudeCode { pct, window });
        }
    }
    Ok(out)
}

fn codex(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let retains = nums(g, "codex_retain", CODEX_RETAIN_REMOTE)?;
    let mut out = Vec::new();
    for p in nums(g, "codex_pct", 90)? {
        if !(1..=100).contains(&p) {
            return err(format!(
                "grid axis codex_pct: value `{p}` is outside 1..100 (% of the context window)"
            ));
        }
        for &retain in &retains {
            out.push(PolicySpec::Codex { pct: p, retain });
        }
    }
    Ok(out)
}

/// A numeric axis whose values may also be `none` (the framework's unset option).
fn optional_nums(
    g: &GridSpec,
    key: &str,
    default: Option<u64>,
) -> Result<Vec<Option<u64>>, GridError> {
    let Some(spec) = axis(g, key) else {
        return Ok(vec![default]);
    };
    let mut out = Vec::new();
    for v in parse_text_axis(key, spec)? {
        if v.trim() == "none" {
            out.push(None);
            continue;
        }
        match parse_number(key, &v) {
            Ok(0) => {
                return err(format!(
                    "grid axis {key}: value `0` leaves nothing; give 1 or more tokens, or none"
                ))
            }
            Ok(n) => out.push(Some(n)),
            Err(e) => return err(format!("{e}; or none")),
        }
    }
    Ok(out)
}

fn anthropic(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let triggers = nums(g, "anthropic_trigger", ANTHROPIC_TRIGGER)?;
    if let Some(t) = triggers.iter().find(|&&t| t < ANTHROPIC_MIN_TRIGGER) {
        return err(format!("grid axis anthropic_trigger: value `{t}` is below 50000, the least input tokens compact_20260112 accepts as a trigger"));
    }
    Ok(triggers
        .into_iter()
        .map(|trigger| PolicySpec::AnthropicCompaction { trigger })
        .collect())
}

fn openhands(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let tokens = optional_nums(g, "openhands_max_tokens", None)?;
    let mut out = Vec::new();
    for m in nums(g, "openhands_max_size", 240)? {
        for f in nums(g, "openhands_keep_first", 2)? {
            if m / 2 <= f + 1 {
                return err(format!("grid axis openhands_keep_first: value `{f}` must be below openhands_max_size // 2 - 1 (max_size {m}), as the condenser requires"));
            }
            for &max_tokens in &tokens {
                out.push(PolicySpec::Openhands {
                    max_size: m,
                    keep_first: f,
                    max_tokens,
                });
            }
        }
    }
    Ok(out)
}

fn langchain(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let triggers = match &g.lc_trigger {
        Some(s) => parse_text_axis("lc_trigger", s)?,
        None => vec!["auto".to_string()],
    };
    let trims = optional_nums(g, "lc_trim", Some(LC_TRIM))?;
    let mut out = Vec::new();
    for t in triggers {
        let Some(trigger) = LcTrigger::parse(&t) else {
            return err(format!("grid axis lc_trigger: value `{t}` is not auto, tokens:N, messages:N or fraction:F (0 < F <= 1)"));
        };
        for k in nums(g, "lc_keep", 20)? {
            for &trim in &trims {
                out.push(PolicySpec::Langchain {
                    trigger,
                    keep: k,
                    trim,
                });
            }
        }
    }
    Ok(out)
}

/// SWE-agent's `summarize_every_n_turns`: The Complexity Trap's N = 21, M = 10.
fn turn_summary(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let mut out = Vec::new();
    for n in nums(g, "ts_n", 21)? {
        if n == 0 {
            return err("grid axis ts_n: value 0 summarizes no turn; SWE-agent requires n >= 1");
        }
        for m in nums(g, "ts_m", 10)? {
            out.push(PolicySpec::TurnSummary { n, m });
        }
    }
    Ok(out)
}

/// The hybrid: the paper's config, summary at N = 43, M = 10, masking window 10.
fn hybrid(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let mut out = Vec::new();
    for n in nums(g, "hybrid_n", 43)? {
        if n == 0 {
            return err(
                "grid axis hybrid_n: value 0 summarizes no turn; SWE-agent requires n >= 1",
            );
        }
        for m in nums(g, "hybrid_m", 10)? {
            for window in nums(g, "hybrid_window", 10)? {
                if window == 0 {
                    return err("grid axis hybrid_window: value 0 masks every observation; SWE-agent requires n >= 1");
                }
                out.push(PolicySpec::Hybrid { n, m, window });
            }
        }
    }
    Ok(out)
}

fn gemini_cli(g: &GridSpec) -> Result<Vec<PolicySpec>, GridError> {
    let values = match &g.gemini_threshold {
        Some(s) => parse_text_axis("gemini_threshold", s)?,
        None => vec!["0.5".to_string()],
    };
    let profiles = match &g.gemini_profile {
        Some(s) => parse_text_axis("gemini_profile", s)?,
        None => vec!["default".to_string()],
    };
    let mut out = Vec::new();
    for p in profiles {
        match GeminiProfile::parse(&p) {
            Some(GeminiProfile::Default) => out.extend(gemini_thresholds(&values)?),
            // the profile replaces chat compression: the threshold plays no part
            Some(GeminiProfile::Generalist) => out.push(PolicySpec::GeminiCli {
                threshold_pct: 50,
                profile: GeminiProfile::Generalist,
            }),
            None => {
                return err(format!(
                    "grid axis gemini_profile: unknown value `{p}`; use default or generalist"
                ))
            }
        }
    }
    Ok(out)
}

fn gemini_thresholds(values: &[String]) -> Result<Vec<PolicySpec>, GridError> {
    let mut out = Vec::new();
    for v in values {
        let f: f64 = v.trim().parse().map_err(|_| {
            GridError(format!(
                "grid axis gemini_threshold: value `{v}` is not a fraction (0 < F <= 1)"
            ))
        })?;
        if !(f > 0.0 && f <= 1.0) {
            return err(format!(
                "grid axis gemini_threshold: value `{v}` is outside 0..1"
            ));
        }
        out.push(PolicySpec::GeminiCli {
            threshold_pct: (f * 100.0).round() as u64,
            profile: GeminiProfile::Default,
        });
    }
    Ok(out)
}

/// The values of one field over the policies of one variant.
macro_rules! collect {
    ($policies:expr, $pat:pat => $e:expr) => {
        $policies
            .iter()
            .filter_map(|p| match p {
                $pat => Some($e),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
}

/// Sorted, each once, as a TOML array of numbers.
fn nums_toml(v: &mut Vec<u64>) -> String {
    v.sort();
    v.dedup();
    super::grid::toml_nums(v)
}

/// The resolved policies as grid-file lines: every axis of every family asked for, so
/// re-resolving gives the same settings (`merge` relies on it).
pub fn to_toml(policies: &[PolicySpec]) -> String {
    if policies.is_empty() {
        return String::new();
    }
    let mut fams: Vec<&str> = policies.iter().map(|p| p.family()).collect();
    fams.dedup();
    let q = super::grid::toml_strs;
    let n = nums_toml;
    let mut out = format!(
        "policy = {}\n",
        q(&fams.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    );
    if fams.contains(&"clear-tool-results") {
        out += &format!(
            "clear_trigger = {}\n",
            n(&mut collect!(policies, PolicySpec::ClearToolResults { trigger, .. } => *trigger))
        );
        out += &format!(
            "clear_keep = {}\n",
            n(&mut collect!(policies, PolicySpec::ClearToolResults { keep, .. } => *keep))
        );
        out += &format!(
            "clear_at_least = {}\n",
            n(
                &mut collect!(policies, PolicySpec::ClearToolResults { clear_at_least, .. } => *clear_at_least)
            )
        );
        let ex = collect!(policies, PolicySpec::ClearToolResults { exclude_tools, .. } => exclude_tools.clone());
        if let Some(ex) = ex.first().filter(|e| !e.is_empty()) {
            out += &format!("clear_exclude_tools = {}\n", q(ex));
        }
    }
    if fams.contains(&"mask-observations") {
        out += &format!(
            "mask_window = {}\n",
            n(&mut collect!(policies, PolicySpec::MaskObservations { window } => *window))
        );
    }
    let mut pcts = collect!(policies, PolicySpec::ClaudeCode { pct: Some(p), .. } => *p);
    if !pcts.is_empty() {
        out += &format!("pct = {}\n", n(&mut pcts));
    }
    if fams.contains(&"claude-code") {
        out += &format!(
            "cc_window = {}\n",
            n(&mut collect!(policies, PolicySpec::ClaudeCode { window, .. } => *window))
        );
    }
    out += &summarizing_toml(policies, &fams);
    out
}

/// The grid-file lines of the summarizing families after Claude Code.
fn summarizing_toml(policies: &[PolicySpec], fams: &[&str]) -> String {
    let q = super::grid::toml_strs;
    let n = nums_toml;
    let mut out = String::new();
    if fams.contains(&"codex") {
        out += &format!(
            "codex_pct = {}\n",
            n(&mut collect!(policies, PolicySpec::Codex { pct, .. } => *pct))
        );
        out += &format!(
            "codex_retain = {}\n",
            n(&mut collect!(policies, PolicySpec::Codex { retain, .. } => *retain))
        );
    }
    if fams.contains(&"openhands") {
        out += &format!(
            "openhands_max_size = {}\n",
            n(&mut collect!(policies, PolicySpec::Openhands { max_size, .. } => *max_size))
        );
        out += &format!(
            "openhands_keep_first = {}\n",
            n(&mut collect!(policies, PolicySpec::Openhands { keep_first, .. } => *keep_first))
        );
        let t = collect!(policies, PolicySpec::Openhands { max_tokens, .. } => *max_tokens);
        if t.iter().any(Option::is_some) {
            out += &format!("openhands_max_tokens = {}\n", q(&optional_texts(t)));
        }
    }
    if fams.contains(&"langchain") {
        let mut t = collect!(policies, PolicySpec::Langchain { trigger, .. } => trigger.text());
        t.dedup();
        out += &format!("lc_trigger = {}\n", q(&t));
        out += &format!(
            "lc_keep = {}\n",
            n(&mut collect!(policies, PolicySpec::Langchain { keep, .. } => *keep))
        );
        let t = collect!(policies, PolicySpec::Langchain { trim, .. } => *trim);
        out += &format!("lc_trim = {}\n", q(&optional_texts(t)));
    }
    if fams.contains(&"gemini-cli") {
        let mut v = collect!(policies, PolicySpec::GeminiCli { threshold_pct, profile: GeminiProfile::Default } => *threshold_pct);
        v.sort();
        v.dedup();
        let t: Vec<String> = v.iter().map(|p| format!("{}", *p as f64 / 100.0)).collect();
        if !t.is_empty() {
            out += &format!("gemini_threshold = {}\n", q(&t));
        }
        let p = first_seen(
            collect!(policies, PolicySpec::GeminiCli { profile, .. } => profile.text().to_string())
                .into_iter(),
        );
        if p != ["default"] {
            out += &format!("gemini_profile = {}\n", q(&p));
        }
    }
    if fams.contains(&"turn-summary") {
        out += &format!(
            "ts_n = {}\nts_m = {}\n",
            n(&mut collect!(policies, PolicySpec::TurnSummary { n, .. } => *n)),
            n(&mut collect!(policies, PolicySpec::TurnSummary { m, .. } => *m))
        );
    }
    if fams.contains(&"hybrid") {
        out += &format!(
            "hybrid_n = {}\nhybrid_m = {}\nhybrid_window = {}\n",
            n(&mut collect!(policies, PolicySpec::Hybrid { n, .. } => *n)),
            n(&mut collect!(policies, PolicySpec::Hybrid { m, .. } => *m)),
            n(&mut collect!(policies, PolicySpec::Hybrid { window, .. } => *window))
        );
    }
    if fams.contains(&"anthropic-compaction") {
        out += &format!(
            "anthropic_trigger = {}\n",
            n(&mut collect!(policies, PolicySpec::AnthropicCompaction { trigger } => *trigger))
        );
    }
    out
}

/// Optional token values as a grid file writes them: numbers, `none` for unset, in the
/// order resolved (a text axis keeps the order written, so the settings keep their ids).
fn optional_texts(v: Vec<Option<u64>>) -> Vec<String> {
    first_seen(
        v.iter()
            .map(|x| x.map_or("none".to_string(), |t| t.to_string())),
    )
}

/// Each value once, in the order first seen.
fn first_seen(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}
