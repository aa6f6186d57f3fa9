//! Grid axes, their text forms (`40k..200k:20k`, `10,20,40`), the TOML grid file, and the
//! resolution of axes into the ordered list of settings a sweep replays.
//!
//! Resolution refuses bad grids up front with one line naming the axis and the value, and
//! refuses combinations the manifest would refuse in the manifest's own words: a sweep never
//! silently drops a setting, so what the report ranks is exactly what the grid asked for.

pub use crate::settings::number::parse_number;
use crate::settings::number::within_table_range;
pub use crate::settings::py_int;
pub use crate::settings::setting::{
    parse_cap_alternative, Alternative, Budgets, ClientMode, Setting, TriggerKind, ARTIFACTS,
};
use crate::settings::NumberError;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A one-line grid error naming the axis and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct GridError(pub String);

impl From<NumberError> for GridError {
    fn from(e: NumberError) -> Self {
        GridError(e.to_string())
    }
}

/// A grid error as the `Err` of a resolution step.
pub(super) fn err<T>(msg: impl Into<String>) -> Result<T, GridError> {
    Err(GridError(msg.into()))
}

/// One axis value as written: a TOML integer, a TOML float (`gemini_threshold = [0.3]`), or
/// text (`40k..200k:20k`, `10,20`, `terse`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AxisItem {
    Int(i64),
    Float(f64),
    Text(String),
}

/// An axis as written in the grid file: one item or a list of items.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum AxisSpec {
    One(AxisItem),
    Many(Vec<AxisItem>),
}

/// What an axis key expects, in every grid-file error about its type (serde's untagged
/// enums would say only "data did not match any variant").
const AXIS_EXPECTS: &str =
    "a number, a text such as \"40k..200k:20k\" or \"terse\", or a list of them";

/// Reads one axis (an item or a list) by hand, so a wrong type is named with what fits.
struct AxisVisitor;

impl<'de> serde::de::Visitor<'de> for AxisVisitor {
    type Value = AxisSpec;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(AXIS_EXPECTS)
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<AxisSpec, E> {
        Ok(AxisSpec::One(AxisItem::Int(v)))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<AxisSpec, E> {
        match i64::try_from(v) {
            Ok(n) => Ok(AxisSpec::One(AxisItem::Int(n))),
            Err(_) => Ok(AxisSpec::One(AxisItem::Text(v.to_string()))),
        }
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<AxisSpec, E> {
        Ok(AxisSpec::One(AxisItem::Float(v)))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<AxisSpec, E> {
        Ok(AxisSpec::One(AxisItem::Text(v.to_string())))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<AxisSpec, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<AxisSpec>()? {
            match item {
                AxisSpec::One(i) => items.push(i),
                AxisSpec::Many(_) => {
                    return Err(serde::de::Error::custom(format!(
                        "a list inside a list; expected {AXIS_EXPECTS}"
                    )))
                }
            }
        }
        Ok(AxisSpec::Many(items))
    }
}

impl<'de> Deserialize<'de> for AxisSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AxisSpec, D::Error> {
        d.deserialize_any(AxisVisitor)
    }
}

impl AxisItem {
    /// The item as text, as a flag would give it (`0.3`, `40000`, `terse`).
    pub fn text(&self) -> String {
        match self {
            AxisItem::Int(n) => n.to_string(),
            AxisItem::Float(f) => f.to_string(),
            AxisItem::Text(t) => t.clone(),
        }
    }
}

impl AxisSpec {
    fn items(&self) -> Vec<AxisItem> {
        match self {
            AxisSpec::One(i) => vec![i.clone()],
            AxisSpec::Many(v) => v.clone(),
        }
    }
    pub fn text(&self) -> String {
        self.items()
            .iter()
            .map(AxisItem::text)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The grid as written in a TOML file or on the command line (flags mirror these keys).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GridSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_tokens: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_recent_events: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_invocations: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_model: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budgets>,
    /// Caps of the capped-runs alternative (`RunConfig(max_llm_calls=N)`), each replayed as
    /// its own no-compaction setting after the compaction settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_llm_calls: Option<AxisSpec>,
    /// Replay the files-as-artifacts alternative (after the caps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<bool>,
    /// Split rules of the split alternative: `lossless`, `idle=DURATION` (`30m`, `2h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<AxisSpec>,
    /// Also replay each alternative combined with each compaction setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combine: Option<bool>,
    /// Other frameworks' policies (`--policy`, docs/policies.md) and their axes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_trigger: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_keep: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_at_least: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clear_exclude_tools: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mask_window: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cc_window: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codex_pct: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openhands_max_size: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openhands_keep_first: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lc_trigger: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lc_keep: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemini_threshold: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts_n: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts_m: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid_n: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid_m: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hybrid_window: Option<AxisSpec>,
    pub codex_retain: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gemini_profile: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lc_trim: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openhands_max_tokens: Option<AxisSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anthropic_trigger: Option<AxisSpec>,
}

/// The documented default grid (docs/sweeps.md "Axes"): 40 size-trigger and 12 turn-trigger
/// settings, each with the agent's own model and the rule-based `terse` summarizer, and a
/// detail budget so the default recommendation is not simply the most aggressive setting.
pub const DEFAULT_GRID_TOML: &str = r#"# compaction-sim default grid
trigger = ["tokens", "invocations"]
after_tokens = "20k..200k:20k"
keep_recent_events = [5, 10, 20, 40]
after_invocations = [2, 5, 10, 20]
overlap = [0, 1, 2]
summarizer = ["agent", "terse"]
agent_model = ["recorded"]
client = ["waits"]
tokenizer = ["o200k"]

[budget]
broken_references = 0.2
"#;

impl GridSpec {
    pub fn default_grid() -> GridSpec {
        // The constant is tested to parse; fall back to empty rather than panic.
        GridSpec::from_toml("default grid", DEFAULT_GRID_TOML).unwrap_or_default()
    }

    /// Parse a grid file; `file` names it in errors.
    pub fn from_toml(file: &str, text: &str) -> Result<GridSpec, GridError> {
        toml::from_str::<GridSpec>(text).map_err(|e| {
            let key = e
                .span()
                .and_then(|span| key_before(text, span.start))
                .map_or(String::new(), |k| format!("key `{k}`: "));
            let msg = e.to_string().replace(
                "expected struct Budgets",
                "expected a table such as `[budget]` with `detail_lost = 0.3`",
            );
            GridError(format!("{file}: {key}{}", one_line(&msg)))
        })
    }

    /// Flags given on the command line replace the same keys of the base grid.
    pub fn overlay(&mut self, other: GridSpec) {
        {
            let (mine, theirs) = (&mut *self, &other);
            macro_rules! takep {
                ($($f:ident),*) => { $( if theirs.$f.is_some() { mine.$f = theirs.$f.clone(); } )* };
            }
            takep!(
                policy,
                clear_trigger,
                clear_keep,
                clear_at_least,
                clear_exclude_tools,
                mask_window,
                pct,
                cc_window,
                codex_pct,
                openhands_max_size,
                openhands_keep_first,
                lc_trigger,
                lc_keep,
                gemini_threshold,
                ts_n,
                ts_m,
                hybrid_n,
                hybrid_m,
                hybrid_window,
                codex_retain,
                gemini_profile,
                lc_trim,
                openhands_max_tokens,
                anthropic_trigger
            );
        }
        macro_rules! take {
            ($($f:ident),*) => { $( if other.$f.is_some() { self.$f = other.$f; } )* };
        }
        take!(
            trigger,
            after_tokens,
            keep_recent_events,
            after_invocations,
            overlap,
            summarizer,
            agent_model,
            client,
            tokenizer,
            max_llm_calls,
            artifacts,
            split,
            combine
        );
        if let Some(b) = other.budget {
            let mut mine = self.budget.unwrap_or_default();
            if b.broken_references.is_some() {
                mine.broken_references = b.broken_references;
            }
            if b.detail_lost.is_some() {
                mine.detail_lost = b.detail_lost;
            }
            if b.latency_s.is_some() {
                mine.latency_s = b.latency_s;
            }
            self.budget = Some(mine);
        }
    }
}

/// The key whose value holds byte `at` of a grid file: the last `key =` at or before it.
fn key_before(text: &str, at: usize) -> Option<String> {
    let upto = text.get(..at.min(text.len()))?;
    let line_end = text[upto.len()..]
        .find('\n')
        .map_or(text.len(), |i| upto.len() + i);
    text[..line_end].lines().rev().find_map(|line| {
        let (k, _) = line.split_once('=')?;
        let k = k.trim();
        (!k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .then(|| crate::transcript::util::one_line(k, 40))
    })
}

/// A parser's message on one line, each of its lines cut to a short excerpt: a 10 MB value
/// quoted whole would make a 10 MB error line.
fn one_line(s: &str) -> String {
    s.lines()
        .map(|l| crate::transcript::util::one_line(l, 160))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Longest axis item accepted (a `command:` summarizer's program line is the longest real
/// one); a longer one is refused quoting only its start, so a 10 MB value never makes a
/// 10 MB error line.
const MAX_ITEM_CHARS: usize = 4096;

/// `text` of `axis`, refused when longer than [`MAX_ITEM_CHARS`].
fn short_item<'a>(axis: &str, text: &'a str) -> Result<&'a str, GridError> {
    let n = text.chars().count();
    if n > MAX_ITEM_CHARS {
        return err(format!(
            "grid axis {axis}: value `{}` is {} characters long; an axis value is at most {MAX_ITEM_CHARS}",
            crate::transcript::util::one_line(text, 40),
            py_int(n as u64),
        ));
    }
    Ok(text)
}

/// Expand a numeric axis: comma-separated numbers and ranges `A..B:STEP` (both ends
/// inclusive when on the step). Sorted ascending, duplicates removed.
pub fn parse_numeric_axis(axis: &str, spec: &AxisSpec) -> Result<Vec<u64>, GridError> {
    let mut out = expand_numeric_axis(axis, spec)?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A numeric axis's values as written, repeats kept (for [`GridSpec::repeats`]).
fn expand_numeric_axis(axis: &str, spec: &AxisSpec) -> Result<Vec<u64>, GridError> {
    let mut out = Vec::new();
    let items = spec.items();
    if items.is_empty() {
        return err(format!("grid axis {axis}: empty list `[]` gives no values"));
    }
    for item in items {
        match item {
            AxisItem::Int(n) => {
                if n < 0 {
                    return Err(NumberError::Negative {
                        axis: axis.to_string(),
                        value: n.to_string(),
                    }
                    .into());
                }
                out.push(within_table_range(axis, n as u64)?);
            }
            AxisItem::Float(f) => {
                if f.fract() != 0.0 || !f.is_finite() {
                    return err(format!("grid axis {axis}: value `{f}` is not a whole number (write e.g. 40000, 40_000, 40k or 1.5M)"));
                }
                if f < 0.0 {
                    return Err(NumberError::Negative {
                        axis: axis.to_string(),
                        value: f.to_string(),
                    }
                    .into());
                }
                out.push(parse_number(axis, &format!("{f:.0}"))?);
            }
            AxisItem::Text(text) => {
                short_item(axis, &text)?;
                if text.trim().is_empty() {
                    return err(format!(
                        "grid axis {axis}: empty value `{text}` gives no values"
                    ));
                }
                for part in text.split(',') {
                    let part = part.trim();
                    if part.is_empty() {
                        return err(format!("grid axis {axis}: empty item in `{text}`"));
                    }
                    if let Some((a, rest)) = part.split_once("..") {
                        let (b, step) = match rest.split_once(':') {
                            Some((b, s)) => (b, Some(s)),
                            None => (rest, None),
                        };
                        if a.trim().is_empty() || b.trim().is_empty() {
                            return err(format!("grid axis {axis}: range `{part}` is empty: it needs a start and an end, e.g. 40k..200k:20k"));
                        }
                        let a = parse_number(axis, a)?;
                        let b = parse_number(axis, b)?;
                        if a > b {
                            return err(format!("grid axis {axis}: range `{part}` is reversed: start {a} is above end {b}"));
                        }
                        let step = match step {
                            Some(s) => parse_number(axis, s)?,
                            None => {
                                return err(format!("grid axis {axis}: range `{part}` has no step; write START..END:STEP, e.g. 40k..200k:20k"))
                            }
                        };
                        if step == 0 {
                            return err(format!("grid axis {axis}: range `{part}` has step 0, which gives no values"));
                        }
                        let mut v = a;
                        while v <= b {
                            out.push(v);
                            if out.len() > 1_000_000 {
                                return err(format!("grid axis {axis}: range `{part}` gives more than 1,000,000 values"));
                            }
                            v = match v.checked_add(step) {
                                Some(n) => n,
                                None => break,
                            };
                        }
                    } else {
                        out.push(parse_number(axis, part)?);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Expand a text axis (comma-separated), keeping the order written, duplicates removed.
pub fn parse_text_axis(axis: &str, spec: &AxisSpec) -> Result<Vec<String>, GridError> {
    let mut out: Vec<String> = Vec::new();
    let items = spec.items();
    if items.is_empty() {
        return err(format!("grid axis {axis}: empty list `[]` gives no values"));
    }
    for item in items {
        let text = item.text();
        short_item(axis, &text)?;
        for part in split_text_items(&text) {
            let part = part.trim().to_string();
            if part.is_empty() {
                return err(format!("grid axis {axis}: empty item in `{text}`"));
            }
            if !out.contains(&part) {
                out.push(part);
            }
        }
    }
    Ok(out)
}

/// The note for an axis whose values repeat, naming each repeated value once (in the
/// order first repeated, long values shortened), or None when none repeats.
fn repeated_note(axis: &str, values: Vec<String>) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    let mut repeated: Vec<String> = Vec::new();
    for v in values {
        if !seen.insert(v.clone()) && !repeated.contains(&v) {
            repeated.push(v);
        }
    }
    if repeated.is_empty() {
        return None;
    }
    let listed: Vec<String> = repeated
        .iter()
        .take(5)
        .map(|v| format!("`{}`", crate::transcript::util::one_line(v, 40)))
        .collect();
    let more = match repeated.len() {
        n if n > 5 => format!(" and {} more", n - 5),
        _ => String::new(),
    };
    Some(format!(
        "grid axis {axis}: {}{more} given more than once; replayed once",
        listed.join(", ")
    ))
}

/// Comma-splits, except inside `command:...`, whose program line may hold commas.
fn split_text_items(text: &str) -> Vec<String> {
    if text.trim_start().starts_with("command:") {
        return vec![text.to_string()];
    }
    text.split(',').map(|s| s.to_string()).collect()
}

/// What a resolver needs to know from the rest of the program: which names exist.
pub struct Known<'a> {
    /// True when the pricing table knows this model.
    pub model: &'a dyn Fn(&str) -> bool,
    /// Tokenizer names (`o200k`, `cl100k`, `adk-chars`).
    pub tokenizers: &'a [&'a str],
}

/// A resolved grid: the values of every axis and the settings, baselines first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedGrid {
    pub trigger: Vec<TriggerKind>,
    pub after_tokens: Vec<u64>,
    pub keep_recent_events: Vec<u64>,
    pub after_invocations: Vec<u64>,
    pub overlap: Vec<u64>,
    pub summarizer: Vec<String>,
    pub agent_model: Vec<String>,
    pub client: Vec<ClientMode>,
    pub tokenizer: Vec<String>,
    pub budget: Budgets,
    /// Caps of the capped-runs alternative, ascending (empty: none replayed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub max_llm_calls: Vec<u64>,
    /// Whether the files-as-artifacts alternative is replayed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub artifacts: bool,
    /// Split rules replayed (`lossless`, `idle=30m`), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub split: Vec<String>,
    /// Whether each alternative is also replayed with each compaction setting.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub combine: bool,
    /// Other frameworks' policies replayed too (docs/policies.md); their settings follow
    /// the ADK ones, so an ADK setting's id does not depend on them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<crate::settings::PolicySpec>,
    #[serde(skip)]
    pub settings: Vec<Setting>,
    /// Values written twice under two spellings (`idle=30m,idle=1800s`), replayed once: one
    /// line each for the command line to say.
    #[serde(skip)]
    pub collapsed: Vec<String>,
}

/// Summarizer names of metrics.md "Summarizers", parsed by `cost` (one spelling for the
/// whole program); a `model:NAME` must be priced and a `command:` program must exist.
fn check_summarizer(name: &str, known: &Known) -> Result<(), GridError> {
    use crate::summarize::{resolve_program, SummarizerSpec};
    let refuse =
        |m: &dyn fmt::Display| GridError(format!("grid axis summarizer: value `{name}`: {m}"));
    match SummarizerSpec::parse(name).map_err(|m| refuse(&m))? {
        SummarizerSpec::Model(m) if !(known.model)(&m) => Err(refuse(&format!(
            "unknown model `{m}`: it is not in the pricing table"
        ))),
        SummarizerSpec::Command { program, .. } => resolve_program(&program)
            .map(|_| ())
            .map_err(|m| refuse(&m)),
        _ => Ok(()),
    }
}

/// Most settings a grid may resolve to unless `--max-settings` raises it (docs/sweeps.md "Axes"):
/// far above any sweep that finishes in a day, so a larger grid is almost always a typo in a
/// range; the settings list itself (a few hundred bytes each) stays small.
pub const MAX_SETTINGS: u64 = 100_000;

/// How many settings the axes give, without building them (saturating, so an absurd grid
/// cannot overflow): per (tokenizer, agent model) one baseline and one `as recorded` row plus,
/// per trigger kind, its pairs × summarizers × clients.
fn settings_count(
    triggers: &[TriggerKind],
    tok_pair: [usize; 2],
    inv_pair: [usize; 2],
    [summarizers, clients, models, tokenizers]: [usize; 4],
) -> u128 {
    let prod = |v: &[usize]| {
        v.iter()
            .fold(1u128, |acc, &n| acc.saturating_mul(n as u128))
    };
    let per_kind = triggers.iter().fold(0u128, |acc, k| {
        let tok = if k.uses_tokens() { prod(&tok_pair) } else { 1 };
        let inv = if k.uses_invocations() {
            prod(&inv_pair)
        } else {
            1
        };
        acc.saturating_add(prod(&[summarizers, clients]).saturating_mul(tok.saturating_mul(inv)))
    });
    prod(&[models, tokenizers]).saturating_mul(per_kind.saturating_add(2))
}

/// One trigger pair's two axes as given, checked against the trigger kinds that use them:
/// both or neither, and only when used (the manifest's words for a half pair).
fn pair_axes(
    triggers: &[TriggerKind],
    (a, sa): (&str, &Option<AxisSpec>),
    (b, sb): (&str, &Option<AxisSpec>),
    used: bool,
) -> Result<(Vec<u64>, Vec<u64>), GridError> {
    let half = crate::settings::half_pair(a);
    match (sa, sb) {
        (Some(x), Some(y)) => {
            if !used {
                return err(format!(
                    "grid axis {a}: values `{}` are given but no trigger kind uses them (trigger = {}); drop the axis or add its trigger",
                    x.text(),
                    triggers.iter().map(|t| t.name()).collect::<Vec<_>>().join(",")
                ));
            }
            Ok((parse_numeric_axis(a, x)?, parse_numeric_axis(b, y)?))
        }
        (Some(_), None) if used => err(format!("grid axis {b}: missing; {half}")),
        (None, Some(_)) if used => err(format!("grid axis {a}: missing; {half}")),
        (None, None) if used => err(format!(
            "grid axes {a} and {b}: missing, but a trigger kind uses them; {half}"
        )),
        (Some(x), None) | (None, Some(x)) => err(format!(
            "grid axis {}: values `{}` are given but no trigger kind uses them; {half}",
            if sa.is_some() { a } else { b },
            x.text(),
        )),
        (None, None) => Ok((Vec::new(), Vec::new())),
    }
}

impl GridSpec {
    /// Resolve axes into settings, refusing grids over [`MAX_SETTINGS`].
    pub fn resolve(&self, known: &Known) -> Result<ResolvedGrid, GridError> {
        self.resolve_with_limit(known, MAX_SETTINGS)
    }

    /// [`GridSpec::resolve`] with another ceiling on the number of settings (checked before
    /// the settings are built). Axes are checked in the order written here, so a grid with
    /// several faults is refused for the same one every time.
    pub fn resolve_with_limit(
        &self,
        known: &Known,
        max_settings: u64,
    ) -> Result<ResolvedGrid, GridError> {
        let trigger = self.triggers()?;
        let uses_tokens = trigger.iter().any(|t| t.uses_tokens());
        let uses_inv = trigger.iter().any(|t| t.uses_invocations());
        let (after_tokens, keep_recent_events) = pair_axes(
            &trigger,
            ("after_tokens", &self.after_tokens),
            ("keep_recent_events", &self.keep_recent_events),
            uses_tokens,
        )?;
        let (after_invocations, overlap) = pair_axes(
            &trigger,
            ("after_invocations", &self.after_invocations),
            ("overlap", &self.overlap),
            uses_inv,
        )?;
        // Field bounds (guide table: after_tokens and after_invocations accept greater than 0).
        if let Some(0) = after_tokens.first() {
            return err("grid axis after_tokens: value 0 is refused by the manifest: after_tokens accepts greater than 0");
        }
        if let Some(0) = after_invocations.first() {
            return err("grid axis after_invocations: value 0 is refused by the manifest: after_invocations accepts greater than 0");
        }
        let mut grid = ResolvedGrid {
            trigger,
            after_tokens,
            keep_recent_events,
            after_invocations,
            overlap,
            summarizer: self.summarizers(known)?,
            agent_model: self.agent_models(known)?,
            client: self.clients()?,
            tokenizer: self.tokenizers(known)?,
            budget: self.budget()?,
            policies: super::policy_axes::resolve(self)?,
            max_llm_calls: Vec::new(),
            artifacts: false,
            split: Vec::new(),
            combine: self.combine == Some(true),
            settings: Vec::new(),
            collapsed: Vec::new(),
        };
        // The alternatives count toward the limit too (with --combine, once per compaction
        // setting), so they are resolved before the count.
        grid.max_llm_calls = self.caps()?;
        grid.artifacts = self.artifacts == Some(true);
        let (split, collapsed) = self.splits()?;
        grid.split = split;
        grid.collapsed = self.repeats();
        grid.collapsed.extend(collapsed);
        grid.check_count(max_settings)?;
        grid.settings = grid.compaction_settings();
        grid.rebuild_alternatives();
        Ok(grid)
    }

    /// One line per axis where a value is written more than once (`--after-tokens 1k,1000`,
    /// `--summarizer terse,terse`): the grid keeps one copy, and the user is told so once.
    fn repeats(&self) -> Vec<String> {
        let numeric = [
            ("after_tokens", &self.after_tokens),
            ("keep_recent_events", &self.keep_recent_events),
            ("after_invocations", &self.after_invocations),
            ("overlap", &self.overlap),
            ("max_llm_calls", &self.max_llm_calls),
            ("clear_trigger", &self.clear_trigger),
            ("clear_keep", &self.clear_keep),
            ("clear_at_least", &self.clear_at_least),
            ("mask_window", &self.mask_window),
            ("pct", &self.pct),
            ("cc_window", &self.cc_window),
            ("codex_pct", &self.codex_pct),
            ("openhands_max_size", &self.openhands_max_size),
            ("openhands_keep_first", &self.openhands_keep_first),
            ("lc_keep", &self.lc_keep),
        ];
        let text = [
            ("trigger", &self.trigger),
            ("summarizer", &self.summarizer),
            ("agent_model", &self.agent_model),
            ("client", &self.client),
            ("tokenizer", &self.tokenizer),
            ("split", &self.split),
            ("policy", &self.policy),
            ("clear_exclude_tools", &self.clear_exclude_tools),
            ("lc_trigger", &self.lc_trigger),
            ("gemini_threshold", &self.gemini_threshold),
        ];
        let mut notes = Vec::new();
        for (axis, spec) in numeric {
            let Some(Ok(values)) = spec.as_ref().map(|s| expand_numeric_axis(axis, s)) else {
                continue;
            };
            let shown: Vec<String> = values.iter().map(u64::to_string).collect();
            notes.extend(repeated_note(axis, shown));
        }
        for (axis, spec) in text {
            let Some(spec) = spec else { continue };
            let values = spec
                .items()
                .iter()
                .flat_map(|i| split_text_items(&i.text()))
                .map(|v| v.trim().to_string())
                .collect();
            notes.extend(repeated_note(axis, values));
        }
        notes
    }

    /// Trigger kinds: written, or inferred from which pairs are present.
    fn triggers(&self) -> Result<Vec<TriggerKind>, GridError> {
        let mut v = Vec::new();
        match &self.trigger {
            Some(spec) => {
                for t in parse_text_axis("trigger", spec)? {
                    match TriggerKind::parse(&t) {
                        Some(k) if !v.contains(&k) => v.push(k),
                        Some(_) => {}
                        None => return err(format!("grid axis trigger: unknown value `{t}`; use tokens, invocations or both")),
                    }
                }
                v.sort();
            }
            None => {
                if self.after_tokens.is_some() || self.keep_recent_events.is_some() {
                    v.push(TriggerKind::Tokens);
                }
                if self.after_invocations.is_some() || self.overlap.is_some() {
                    v.push(TriggerKind::Invocations);
                }
            }
        }
        if v.is_empty() {
            return err("grid: At least one compaction trigger must be configured: set after_tokens with keep_recent_events, or after_invocations with overlap (a Compaction() with no trigger would never compact).");
        }
        Ok(v)
    }

    /// A text axis's values, or `dflt` alone when the axis is not given.
    fn text_or(spec: &Option<AxisSpec>, axis: &str, dflt: &str) -> Result<Vec<String>, GridError> {
        match spec {
            Some(s) => parse_text_axis(axis, s),
            None => Ok(vec![dflt.to_string()]),
        }
    }

    fn summarizers(&self, known: &Known) -> Result<Vec<String>, GridError> {
        let summarizers = Self::text_or(&self.summarizer, "summarizer", "agent")?;
        for s in &summarizers {
            check_summarizer(s, known)?;
        }
        Ok(summarizers)
    }

    fn agent_models(&self, known: &Known) -> Result<Vec<String>, GridError> {
        let models = Self::text_or(&self.agent_model, "agent_model", "recorded")?;
        for m in &models {
            if m != "recorded" && !(known.model)(m) {
                return err(format!("grid axis agent_model: value `{m}`: unknown model: it is not in the pricing table (use `recorded` for each session's own model)"));
            }
        }
        Ok(models)
    }

    fn clients(&self) -> Result<Vec<ClientMode>, GridError> {
        let mut clients = Vec::new();
        for c in Self::text_or(&self.client, "client", "waits")? {
            match ClientMode::parse(&c) {
                Some(m) if !clients.contains(&m) => clients.push(m),
                Some(_) => {}
                None => {
                    return err(format!(
                        "grid axis client: unknown value `{c}`; use waits or streams"
                    ))
                }
            }
        }
        Ok(clients)
    }

    fn tokenizers(&self, known: &Known) -> Result<Vec<String>, GridError> {
        let tokenizers = Self::text_or(&self.tokenizer, "tokenizer", "o200k")?;
        for t in &tokenizers {
            if !known.tokenizers.contains(&t.as_str()) {
                return err(format!(
                    "grid axis tokenizer: unknown value `{t}`; use {}",
                    known.tokenizers.join(", ")
                ));
            }
        }
        Ok(tokenizers)
    }

    /// The budgets, each within its range.
    fn budget(&self) -> Result<Budgets, GridError> {
        let budget = self.budget.unwrap_or_default();
        for (name, share) in [
            ("broken_references", budget.broken_references),
            ("detail_lost", budget.detail_lost),
        ] {
            if let Some(d) = share.filter(|d| !(0.0..=1.0).contains(d)) {
                return err(format!("budget {name}: value `{d}` is outside 0..1"));
            }
        }
        if let Some(l) = budget.latency_s {
            if !(l >= 0.0 && l.is_finite()) {
                return err(format!(
                    "budget latency_s: value `{l}` must be 0 or more seconds"
                ));
            }
        }
        Ok(budget)
    }

    /// Caps of the capped-runs alternative, ascending.
    fn caps(&self) -> Result<Vec<u64>, GridError> {
        let caps = match &self.max_llm_calls {
            Some(spec) => parse_numeric_axis("max_llm_calls", spec)?,
            None => Vec::new(),
        };
        if caps.first() == Some(&0) {
            return err("grid axis max_llm_calls: value `0` disables the cap in ADK (RunConfig enforces only a positive max_llm_calls); use 1 or more");
        }
        Ok(caps)
    }

    /// Split rules, each one [`Alternative::split`] reads; two spellings of one rule
    /// (`idle=30m`, `idle=1800s`) keep the first, and a line saying so.
    fn splits(&self) -> Result<(Vec<String>, Vec<String>), GridError> {
        let Some(spec) = &self.split else {
            return Ok((Vec::new(), Vec::new()));
        };
        let (mut rules, mut seen, mut collapsed) = (Vec::new(), Vec::new(), Vec::new());
        for r in parse_text_axis("split", spec)? {
            let Some(alt) = Alternative::split(&r) else {
                return err(format!("grid axis split: unknown value `{r}`; use lossless or idle=DURATION (e.g. idle=30m, idle=2h)"));
            };
            let same = |a: &(Alternative, String)| match (&a.0, &alt) {
                (
                    Alternative::SplitIdle { seconds: x, .. },
                    Alternative::SplitIdle { seconds: y, .. },
                ) => x == y,
                (x, y) => x == y,
            };
            match seen.iter().find(|a| same(a)) {
                Some((_, first)) => collapsed.push(format!(
                    "grid axis split: `{r}` is the same rule as `{first}`; replayed once"
                )),
                None => {
                    seen.push((alt, r.clone()));
                    rules.push(r);
                }
            }
        }
        Ok((rules, collapsed))
    }
}

impl ResolvedGrid {
    /// Add the files-as-artifacts alternative (see [`ResolvedGrid::rebuild_alternatives`]).
    pub fn add_artifacts(&mut self) {
        self.artifacts = true;
        self.rebuild_alternatives();
    }

    /// Add capped-runs alternatives, one per cap (see [`ResolvedGrid::rebuild_alternatives`]).
    pub fn add_caps(&mut self, caps: &[u64]) {
        self.max_llm_calls
            .extend(caps.iter().copied().filter(|&c| c > 0));
        self.max_llm_calls.sort_unstable();
        self.max_llm_calls.dedup();
        self.rebuild_alternatives();
    }

    /// Add split alternatives (`lossless`, `idle=30m`), kept in the order first given.
    pub fn add_splits(&mut self, rules: &[String]) {
        for r in rules {
            if !self.split.contains(r) {
                self.split.push(r.clone());
            }
        }
        self.rebuild_alternatives();
    }

    /// How many settings the axes give (saturating), refused over `max_settings` before
    /// anything is built: a grid of 10^12 settings is refused in microseconds instead of
    /// aborting on a failed allocation. Every axis counts, the alternatives and `combine`
    /// included.
    pub fn check_count(&self, max_settings: u64) -> Result<(), GridError> {
        let count = self.planned_settings();
        if count <= max_settings as u128 {
            return Ok(());
        }
        let axes: [(&str, usize); 11] = [
            ("trigger", self.trigger.len()),
            ("after_tokens", self.after_tokens.len()),
            ("keep_recent_events", self.keep_recent_events.len()),
            ("after_invocations", self.after_invocations.len()),
            ("overlap", self.overlap.len()),
            ("summarizer", self.summarizer.len()),
            ("agent_model", self.agent_model.len()),
            ("client", self.client.len()),
            ("tokenizer", self.tokenizer.len()),
            ("max_llm_calls", self.max_llm_calls.len()),
            ("split", self.split.len()),
        ];
        let mut sizes: Vec<String> = axes
            .iter()
            .filter(|(_, n)| *n > 1)
            .map(|(a, n)| format!("{a} {}", py_int(*n as u64)))
            .collect();
        if self.combine && self.alternative_count() > 0 {
            sizes.push("combine (each alternative with each compaction setting)".to_string());
        }
        if sizes.is_empty() {
            // Every axis has one value: the count is the baselines, policies and alternatives.
            sizes.push(format!(
                "one on every axis; the settings are the baselines, {} framework policies and {} alternatives",
                self.policies.len(),
                self.alternative_count()
            ));
        }
        let count = match u64::try_from(count) {
            Ok(n) => py_int(n),
            Err(_) => format!("more than {}", py_int(u64::MAX)),
        };
        err(format!(
            "grid: {count} settings is over the limit of {} (values per axis: {}); narrow an axis or raise the limit with --max-settings N",
            py_int(max_settings),
            sizes.join(", ")
        ))
    }

    /// Alternatives replayed per (tokenizer, agent model): caps, artifacts, splits.
    fn alternative_count(&self) -> u128 {
        self.max_llm_calls.len() as u128 + u128::from(self.artifacts) + self.split.len() as u128
    }

    /// The settings the grid resolves to, counted without building them (saturating):
    /// baselines and ADK settings, other frameworks' policies, the alternatives, and with
    /// `combine` each alternative once more per ADK compaction setting.
    fn planned_settings(&self) -> u128 {
        let per_model =
            (self.agent_model.len() as u128).saturating_mul(self.tokenizer.len() as u128);
        let policies: u128 = self
            .policies
            .iter()
            .map(|p| {
                if p.summarizes() {
                    self.summarizer.len() as u128
                } else {
                    1
                }
            })
            .sum();
        let adk = settings_count(
            &self.trigger,
            [self.after_tokens.len(), self.keep_recent_events.len()],
            [self.after_invocations.len(), self.overlap.len()],
            [
                self.summarizer.len(),
                self.client.len(),
                self.agent_model.len(),
                self.tokenizer.len(),
            ],
        );
        let alts = self.alternative_count();
        let combined = if self.combine {
            // The ADK settings less the two rows per (tokenizer, agent model) that compact
            // nothing of ADK's: no compaction and as recorded.
            adk.saturating_sub(per_model.saturating_mul(2))
                .saturating_mul(alts)
        } else {
            0
        };
        adk.saturating_add(policies.saturating_mul(per_model))
            .saturating_add(per_model.saturating_mul(alts))
            .saturating_add(combined)
    }

    /// The settings before the alternatives, numbered in order: one baseline per
    /// (tokenizer, agent model), then the ADK settings, then other frameworks' policies.
    fn compaction_settings(&self) -> Vec<Setting> {
        let mut settings = Vec::new();
        for tok in &self.tokenizer {
            for model in &self.agent_model {
                // The baseline does not depend on the summarizer or (without summaries) the
                // client mode.
                settings.push(Setting::without_compaction(
                    tok,
                    model,
                    self.client[0],
                    None,
                ));
            }
        }
        for tok in &self.tokenizer {
            for model in &self.agent_model {
                self.adk_settings(tok, model, &mut settings);
            }
        }
        for tok in &self.tokenizer {
            for model in &self.agent_model {
                self.policy_settings(tok, model, &mut settings);
            }
        }
        for tok in &self.tokenizer {
            for model in &self.agent_model {
                settings.push(as_recorded_setting(tok, model, self.client[0]));
            }
        }
        for (id, s) in settings.iter_mut().enumerate() {
            s.setting_id = id as u32;
        }
        settings
    }

    /// Every trigger kind's pairs × summarizers × clients for one tokenizer and agent model.
    fn adk_settings(&self, tok: &str, model: &str, out: &mut Vec<Setting>) {
        let pairs = |used: bool, a: &[u64], b: &[u64]| -> Vec<(Option<u64>, Option<u64>)> {
            if !used {
                return vec![(None, None)];
            }
            a.iter()
                .flat_map(|&x| b.iter().map(move |&y| (Some(x), Some(y))))
                .collect()
        };
        for &kind in &self.trigger {
            let tok_pairs = pairs(
                kind.uses_tokens(),
                &self.after_tokens,
                &self.keep_recent_events,
            );
            let inv_pairs = pairs(
                kind.uses_invocations(),
                &self.after_invocations,
                &self.overlap,
            );
            for &(t, k) in &tok_pairs {
                for &(i, o) in &inv_pairs {
                    for summ in &self.summarizer {
                        for &client in &self.client {
                            out.push(Setting {
                                trigger_kind: kind,
                                after_tokens: t,
                                keep_recent_events: k,
                                after_invocations: i,
                                overlap: o,
                                summarizer: Some(summ.clone()),
                                ..Setting::without_compaction(tok, model, client, None)
                            });
                        }
                    }
                }
            }
        }
    }

    /// Other frameworks' policies for one tokenizer and agent model (each summarizer for
    /// a policy that summarizes).
    fn policy_settings(&self, tok: &str, model: &str, out: &mut Vec<Setting>) {
        for p in &self.policies {
            let summs: Vec<Option<String>> = if p.summarizes() {
                self.summarizer.iter().cloned().map(Some).collect()
            } else {
                vec![None]
            };
            for summ in summs {
                out.push(Setting {
                    trigger_kind: TriggerKind::Policy,
                    summarizer: summ,
                    policy: Some(p.clone()),
                    ..Setting::without_compaction(tok, model, self.client[0], None)
                });
            }
        }
    }

    /// The alternative settings again, after every compaction setting (whose ids never move)
    /// and in one order whatever the order they were added in: per (tokenizer, agent model),
    /// the caps ascending, then artifacts, then the splits. A grid re-resolved from grid.toml
    /// (what `merge` does) so gets the same ids.
    fn rebuild_alternatives(&mut self) {
        self.settings.retain(|s| s.alternative.is_none());
        let mut alts: Vec<Alternative> = self
            .max_llm_calls
            .iter()
            .map(|&n| Alternative::Cap(n))
            .collect();
        if self.artifacts {
            alts.push(Alternative::Artifacts);
        }
        // Each rule was checked when it was added.
        alts.extend(self.split.iter().filter_map(|r| Alternative::split(r)));
        for tok in &self.tokenizer {
            for model in &self.agent_model {
                for a in &alts {
                    self.settings.push(Setting {
                        setting_id: self.settings.len() as u32,
                        ..Setting::without_compaction(tok, model, self.client[0], Some(a.clone()))
                    });
                }
            }
        }
        if self.combine {
            // Then every compaction setting with every alternative, in the settings' order
            // (another framework's policy is not combined: its rows are ADK's neighbours).
            let plain: Vec<Setting> = self
                .settings
                .iter()
                .filter(|s| s.alternative.is_none() && s.policy.is_none() && !s.is_baseline())
                .cloned()
                .collect();
            for c in plain {
                for a in &alts {
                    self.settings.push(Setting {
                        setting_id: self.settings.len() as u32,
                        alternative: Some(a.clone()),
                        ..c.clone()
                    });
                }
            }
        }
    }

    /// The resolved grid as a grid file: every axis written out as an explicit list, so
    /// re-resolving it gives the same settings in the same order (what `merge` relies on).
    pub fn to_toml(&self) -> String {
        let (nums, strs) = (toml_nums, toml_strs);
        let mut out =
            String::from("# resolved grid (compaction-sim); every axis as an explicit list\n");
        out.push_str(&format!(
            "trigger = {}\n",
            strs(
                &self
                    .trigger
                    .iter()
                    .map(|t| t.name().to_string())
                    .collect::<Vec<_>>()
            )
        ));
        if !self.after_tokens.is_empty() {
            out.push_str(&format!("after_tokens = {}\n", nums(&self.after_tokens)));
            out.push_str(&format!(
                "keep_recent_events = {}\n",
                nums(&self.keep_recent_events)
            ));
        }
        if !self.after_invocations.is_empty() {
            out.push_str(&format!(
                "after_invocations = {}\n",
                nums(&self.after_invocations)
            ));
            out.push_str(&format!("overlap = {}\n", nums(&self.overlap)));
        }
        out.push_str(&format!("summarizer = {}\n", strs(&self.summarizer)));
        out.push_str(&format!("agent_model = {}\n", strs(&self.agent_model)));
        out.push_str(&format!(
            "client = {}\n",
            strs(
                &self
                    .client
                    .iter()
                    .map(|c| c.name().to_string())
                    .collect::<Vec<_>>()
            )
        ));
        out.push_str(&format!("tokenizer = {}\n", strs(&self.tokenizer)));
        if !self.max_llm_calls.is_empty() {
            out.push_str(&format!("max_llm_calls = {}\n", nums(&self.max_llm_calls)));
        }
        if self.artifacts {
            out.push_str("artifacts = true\n");
        }
        if !self.split.is_empty() {
            out.push_str(&format!("split = {}\n", strs(&self.split)));
        }
        if self.combine {
            out.push_str("combine = true\n");
        }
        out.push_str(&super::policy_axes::to_toml(&self.policies));
        if self.budget.broken_references.is_some()
            || self.budget.detail_lost.is_some()
            || self.budget.latency_s.is_some()
        {
            out.push_str("\n[budget]\n");
            if let Some(d) = self.budget.broken_references {
                out.push_str(&format!("broken_references = {}\n", toml::Value::Float(d)));
            }
            if let Some(d) = self.budget.detail_lost {
                out.push_str(&format!("detail_lost = {}\n", toml::Value::Float(d)));
            }
            if let Some(l) = self.budget.latency_s {
                out.push_str(&format!("latency_s = {}\n", toml::Value::Float(l)));
            }
        }
        out
    }

    /// Human summary for `--show-grid`.
    pub fn describe(&self) -> String {
        let baselines = self
            .settings
            .iter()
            .filter(|s| s.is_plain_baseline())
            .count();
        let alternatives = self
            .settings
            .iter()
            .filter(|s| s.alternative.is_some())
            .count();
        let recorded = self
            .settings
            .iter()
            .filter(|s| s.policy == Some(crate::settings::PolicySpec::AsRecorded))
            .count();
        let alt = if alternatives > 0 {
            format!(" + {alternatives} alternative")
        } else {
            String::new()
        };
        format!(
            "{}\n# {} settings ({} compaction + {} no-compaction baseline + {recorded} as recorded{alt})\n",
            self.to_toml(),
            self.settings.len(),
            self.settings.len() - baselines - alternatives - recorded,
            baselines
        )
    }
}

/// A TOML list of numbers, as grid files write an axis.
pub(crate) fn toml_nums(v: &[u64]) -> String {
    let items: Vec<String> = v.iter().map(u64::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// A TOML list of strings (each quoted and escaped by the toml crate).
pub(crate) fn toml_strs(v: &[String]) -> String {
    let items: Vec<String> = v
        .iter()
        .map(|s| toml::Value::String(s.clone()).to_string())
        .collect();
    format!("[{}]", items.join(", "))
}

/// The `as recorded` row of one tokenizer and agent model, after the policies (the ADK
/// settings' ids never move): each session under its own framework's setting, the status quo
/// a setting is compared with beside no compaction. Frameworks summarize with the agent's own
/// model, so one row with the `agent` summarizer.
fn as_recorded_setting(tok: &str, model: &str, client: ClientMode) -> Setting {
    Setting {
        trigger_kind: TriggerKind::Policy,
        summarizer: Some("agent".to_string()),
        policy: Some(crate::settings::PolicySpec::AsRecorded),
        ..Setting::without_compaction(tok, model, client, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Known<'static> {
        Known {
            model: &|m: &str| m == "gemini-2.5-flash" || m == "gpt-4o",
            tokenizers: &["o200k", "cl100k", "adk-chars"],
        }
    }
    fn spec(s: &str) -> AxisSpec {
        AxisSpec::One(AxisItem::Text(s.into()))
    }

    #[test]
    fn range_expands_inclusively() {
        let v = parse_numeric_axis("after_tokens", &spec("40k..200k:20k")).unwrap();
        assert_eq!(v.len(), 9);
        assert_eq!(v[0], 40_000);
        assert_eq!(v[8], 200_000);
        let v = parse_numeric_axis("x", &spec("5,1,40k..50k:20k,5")).unwrap();
        assert_eq!(v, vec![1, 5, 40_000]);
    }

    #[test]
    fn bad_ranges_name_axis_and_value() {
        let e = parse_numeric_axis("after_tokens", &spec("200k..40k:20k"))
            .unwrap_err()
            .0;
        assert!(
            e.contains("after_tokens") && e.contains("200k..40k:20k") && e.contains("reversed"),
            "{e}"
        );
        let e = parse_numeric_axis("keep_recent_events", &spec(".."))
            .unwrap_err()
            .0;
        assert!(e.contains("keep_recent_events"), "{e}");
        let e = parse_numeric_axis("overlap", &spec("1..5:0"))
            .unwrap_err()
            .0;
        assert!(e.contains("overlap") && e.contains("step 0"), "{e}");
        let e = parse_numeric_axis("overlap", &AxisSpec::Many(vec![]))
            .unwrap_err()
            .0;
        assert!(e.contains("overlap") && e.contains("empty"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn default_grid_resolves_to_documented_count() {
        let g = GridSpec::default_grid().resolve(&known()).unwrap();
        // 10 after_tokens × 4 keep × 2 summarizers + 4 × 3 × 2 + 1 baseline + 1 as recorded.
        assert_eq!(g.settings.len(), 80 + 24 + 1 + 1);
        assert!(g.settings[0].is_baseline());
        let ids: Vec<u32> = g.settings.iter().map(|s| s.setting_id).collect();
        assert_eq!(ids, (0..g.settings.len() as u32).collect::<Vec<_>>());
    }

    #[test]
    fn cross_product_only_where_valid() {
        let g = GridSpec::from_toml(
            "g.toml",
            "trigger = ['tokens','invocations','both']\nafter_tokens = [1000, 2000]\nkeep_recent_events = [3]\nafter_invocations = [2]\noverlap = [0, 1]\n",
        )
        .unwrap()
        .resolve(&known())
        .unwrap();
        let n = |k| g.settings.iter().filter(|s| s.trigger_kind == k).count();
        assert_eq!(n(TriggerKind::Tokens), 2);
        assert_eq!(n(TriggerKind::Invocations), 2);
        assert_eq!(n(TriggerKind::Both), 4);
        for s in &g.settings {
            assert_eq!(s.after_tokens.is_some(), s.trigger_kind.uses_tokens());
            assert_eq!(s.overlap.is_some(), s.trigger_kind.uses_invocations());
        }
    }

    #[test]
    fn resolved_toml_round_trips() {
        let g = GridSpec::default_grid().resolve(&known()).unwrap();
        let again = GridSpec::from_toml("grid.toml", &g.to_toml())
            .unwrap()
            .resolve(&known())
            .unwrap();
        assert_eq!(g.settings, again.settings);
    }

    #[test]
    fn half_pair_refused_in_manifest_words() {
        let e = GridSpec::from_toml("g.toml", "after_tokens = [1000]\n")
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .0;
        assert!(
            e.contains("keep_recent_events") && e.contains("Set both, or neither."),
            "{e}"
        );
        let e = GridSpec::from_toml("g.toml", "summarizer = ['agent']\n")
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .0;
        assert!(e.contains("At least one compaction trigger"), "{e}");
        let e = GridSpec::from_toml(
            "g.toml",
            "after_tokens = '0..10k:5k'\nkeep_recent_events=[1]",
        )
        .unwrap()
        .resolve(&known())
        .unwrap_err()
        .0;
        assert!(
            e.contains("after_tokens") && e.contains("greater than 0"),
            "{e}"
        );
    }

    #[test]
    fn unknown_names_refused() {
        let base = "after_tokens = [1000]\nkeep_recent_events = [1]\n";
        let e = GridSpec::from_toml("g", &format!("{base}summarizer = ['agent', 'smart']"))
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .0;
        assert!(e.contains("summarizer") && e.contains("smart"), "{e}");
        let e = GridSpec::from_toml("g", &format!("{base}summarizer = ['model:nope-1']"))
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .0;
        assert!(e.contains("summarizer") && e.contains("nope-1"), "{e}");
        let e = GridSpec::from_toml("g", &format!("{base}agent_model = 'gpt-9'"))
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .0;
        assert!(e.contains("agent_model") && e.contains("gpt-9"), "{e}");
        let e = GridSpec::from_toml("g", &format!("{base}client = 'polls'"))
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .0;
        assert!(e.contains("client") && e.contains("polls"), "{e}");
        let e = GridSpec::from_toml(
            "g",
            "after_tokens = [1000]\nkeep_recent_events = [1]\nbogus = 1",
        )
        .unwrap_err()
        .0;
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn unused_axis_refused_not_skipped() {
        let e = GridSpec::from_toml("g", "trigger='tokens'\nafter_tokens=[1000]\nkeep_recent_events=[1]\nafter_invocations=[2]\noverlap=[0]")
            .unwrap()
            .resolve(&known())
            .unwrap_err()
            .0;
        assert!(
            e.contains("after_invocations") && e.contains("no trigger kind uses"),
            "{e}"
        );
    }

    /// The count taken before building the settings is the number built, for every trigger
    /// kind and with every multi-valued axis.
    #[test]
    fn settings_are_counted_exactly_before_they_are_built() {
        let g = GridSpec::from_toml(
            "g.toml",
            "trigger = ['tokens','invocations','both']\nafter_tokens = [1000, 2000, 3000]\nkeep_recent_events = [3, 4]\nafter_invocations = [2, 5]\noverlap = [0, 1, 2]\nsummarizer = ['agent', 'terse']\nclient = ['waits', 'streams']\nagent_model = ['recorded', 'gpt-4o']\ntokenizer = ['o200k', 'cl100k']\n",
        )
        .unwrap()
        .resolve(&known())
        .unwrap();
        let n = settings_count(
            &g.trigger,
            [g.after_tokens.len(), g.keep_recent_events.len()],
            [g.after_invocations.len(), g.overlap.len()],
            [
                g.summarizer.len(),
                g.client.len(),
                g.agent_model.len(),
                g.tokenizer.len(),
            ],
        );
        // 4 (model, tokenizer) × (1 baseline + 1 as recorded + 4 × (6 + 6 + 36)).
        assert_eq!(g.settings.len(), 4 * (2 + 4 * (6 + 6 + 36)));
        assert_eq!(n, g.settings.len() as u128);
        // The limit is inclusive: exactly at it resolves, one below refuses.
        let spec =
            GridSpec::from_toml("g", "after_tokens=[1000, 2000]\nkeep_recent_events=[1]").unwrap();
        assert_eq!(
            spec.resolve_with_limit(&known(), 4).unwrap().settings.len(),
            4
        );
        let e = spec.resolve_with_limit(&known(), 3).unwrap_err().0;
        assert!(e.contains("4 settings") && e.contains("limit of 3"), "{e}");
    }

    /// Issue 47 item 7: a grid of one value per axis over the limit says what its settings
    /// are instead of an empty "values per axis: ()".
    #[test]
    fn the_grid_limit_message_never_lists_empty_values_per_axis() {
        let spec = GridSpec::from_toml("g", "after_tokens='1000'\nkeep_recent_events='2'").unwrap();
        let e = spec.resolve_with_limit(&known(), 1).unwrap_err().0;
        assert!(!e.contains("(values per axis: )"), "{e}");
        assert!(
            e.contains("values per axis: one on every axis; the settings are the baselines"),
            "{e}"
        );
    }

    /// `1..1000000:1 × 0..999999:1` aborted with "memory allocation failed" while the
    /// settings were built; it is now refused from the axis sizes alone.
    #[test]
    fn a_trillion_setting_grid_is_refused_before_it_is_built() {
        let e = GridSpec::from_toml(
            "g",
            "after_tokens='1..1000000:1'\nkeep_recent_events='0..999999:1'",
        )
        .unwrap()
        .resolve(&known())
        .unwrap_err()
        .0;
        assert_eq!(
            e,
            "grid: 1_000_000_000_002 settings is over the limit of 100_000 (values per axis: \
             after_tokens 1_000_000, keep_recent_events 1_000_000); narrow an axis or raise the \
             limit with --max-settings N"
        );
        // Four axes of a million values overflow u64: still a count, never a wrap-around.
        let e = GridSpec::from_toml(
            "g",
            "trigger='both'\nafter_tokens='1..1M:1'\nkeep_recent_events='0..999999:1'\nafter_invocations='1..1M:1'\noverlap='0..999999:1'",
        )
        .unwrap()
        .resolve(&known())
        .unwrap_err()
        .0;
        assert!(
            e.starts_with("grid: more than 18_446_744_073_709_551_615 settings"),
            "{e}"
        );
    }

    #[test]
    fn labels_are_paste_ready() {
        let g = GridSpec::from_toml(
            "g",
            "after_tokens=[80000]\nkeep_recent_events=[20]\nsummarizer=['agent','terse']",
        )
        .unwrap()
        .resolve(&known())
        .unwrap();
        assert_eq!(
            g.settings[1].label(),
            "compaction=Compaction(after_tokens=80_000, keep_recent_events=20)"
        );
        assert_eq!(
            g.settings[2].label(),
            "compaction=Compaction(after_tokens=80_000, keep_recent_events=20, summarizer=\".summarizers.terse\")"
        );
        assert_eq!(py_int(1_500_000), "1_500_000");
        assert_eq!(py_int(2000), "2000");
    }
}
