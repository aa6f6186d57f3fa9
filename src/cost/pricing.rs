//! The dated price table (`src/data/pricing.toml`), user overrides (`--pricing FILE`, our
//! TOML shape or LiteLLM's `model_prices_and_context_window.json`), and model-name lookup.
//!
//! Prices are USD per 1,000,000 tokens. A model whose input or output price is unknown is
//! kept in the table (its context window still matters) but is never costed at $0: callers
//! get `None` and mark totals incomplete.

use crate::transcript::MAX_TOKENS;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// The table shipped with the binary.
pub const BUILTIN_PRICING: &str = include_str!("../data/pricing.toml");

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PricingError {
    /// Bad pricing file: file, location (TOML line or JSON path) and what is wrong.
    #[error("{file}: {location}: {message}")]
    BadFile {
        file: String,
        location: String,
        message: String,
    },
    #[error("unknown model `{name}`{}", near_list(.near))]
    UnknownModel { name: String, near: Vec<String> },
}

fn near_list(near: &[String]) -> String {
    if near.is_empty() {
        " (no similar name in the price table; add it with --pricing FILE)".to_string()
    } else {
        format!(
            " (did you mean: {}? add other models with --pricing FILE)",
            near.join(", ")
        )
    }
}

/// Highest price accepted, USD per 1M tokens: a thousand times the dearest model, so a
/// typo (`1e300`) is refused rather than turned into an infinite cost.
pub const MAX_PRICE_PER_M: f64 = 1e6;
/// Longest cache lifetime accepted: 30 days.
pub const MAX_CACHE_TTL_S: f64 = 30.0 * 86_400.0;

fn price_ok(v: f64) -> bool {
    v.is_finite() && (0.0..=MAX_PRICE_PER_M).contains(&v)
}

/// Caching rules of one provider ("Prompt caching" in metrics.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderCache {
    /// A request reuses the previous request's cached prefix only within this many seconds.
    pub cache_ttl_s: f64,
    /// Prompts shorter than this are never cached.
    #[serde(default)]
    pub min_cache_tokens: u64,
    /// Cached prefixes count in whole blocks of this many tokens (OpenAI: 128).
    #[serde(default = "one")]
    pub cache_block_tokens: u64,
    /// Newly cached tokens cost `cache_write` (Anthropic); otherwise they cost `input`.
    #[serde(default)]
    pub cache_write_charged: bool,
}

fn one() -> u64 {
    1
}

impl ProviderCache {
    /// Used for providers the table does not describe: implicit caching, no write charge.
    pub fn fallback() -> Self {
        ProviderCache {
            cache_ttl_s: 300.0,
            min_cache_tokens: 1024,
            cache_block_tokens: 1,
            cache_write_charged: false,
        }
    }
}

/// Rates that apply to a whole request (USD per 1M tokens).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Rates {
    pub input: f64,
    /// `None`: the model has no cached rate, so requests are priced without caching.
    pub cached_input: Option<f64>,
    /// `None`: writes are charged at `input` when the provider charges writes.
    pub cache_write: Option<f64>,
    pub output: f64,
}

/// Prices above a prompt size, for the whole request (Gemini 2.5 Pro and Claude Sonnet 4.x
/// long context above 200k both bill every token of such a request at the upper rate).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    pub above_prompt_tokens: u64,
    pub input: f64,
    #[serde(default)]
    pub cached_input: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
    pub output: f64,
}

/// One model's entry.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub input: Option<f64>,
    #[serde(default)]
    pub cached_input: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
    #[serde(default)]
    pub output: Option<f64>,
    /// Largest prompt accepted, tokens.
    #[serde(default)]
    pub context_window: Option<u64>,
    #[serde(default)]
    pub tiers: Vec<Tier>,
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Overrides the provider's `min_cache_tokens` for this model (Gemini 2.5 Pro: 2,048).
    #[serde(default)]
    pub min_cache_tokens: Option<u64>,
}

impl ModelPrice {
    /// True when both input and output prices are known.
    pub fn is_priced(&self) -> bool {
        self.input.is_some() && self.output.is_some()
    }

    /// The rates for a request whose prompt has `prompt_tokens` tokens: the highest tier whose
    /// threshold the prompt exceeds, else the base rates. `None` when the model is unpriced.
    pub fn rates_for(&self, prompt_tokens: u64) -> Option<(Rates, Option<u64>)> {
        let base = Rates {
            input: self.input?,
            cached_input: self.cached_input,
            cache_write: self.cache_write,
            output: self.output?,
        };
        let tier = self
            .tiers
            .iter()
            .filter(|t| prompt_tokens > t.above_prompt_tokens)
            .max_by_key(|t| t.above_prompt_tokens);
        Some(match tier {
            None => (base, None),
            Some(t) => (
                Rates {
                    input: t.input,
                    // A tier that omits its cached/write rates keeps the base ratio to input.
                    cached_input: t.cached_input.or(base
                        .cached_input
                        .map(|c| c * t.input / base.input.max(f64::MIN_POSITIVE))),
                    cache_write: t.cache_write.or(base
                        .cache_write
                        .map(|c| c * t.input / base.input.max(f64::MIN_POSITIVE))),
                    output: t.output,
                },
                Some(t.above_prompt_tokens),
            ),
        })
    }
}

/// The whole table: models, provider caching rules, date and source.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriceTable {
    pub pricing_date: String,
    pub source: String,
    pub providers: BTreeMap<String, ProviderCache>,
    pub models: BTreeMap<String, ModelPrice>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlTable {
    #[serde(default)]
    pricing_date: Option<String>,
    #[serde(default)]
    source: Option<String>,
    /// `true`: the file replaces the built-in table instead of extending it.
    #[serde(default)]
    replace: bool,
    #[serde(default)]
    providers: BTreeMap<String, ProviderCache>,
    #[serde(default)]
    models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// The table shipped with the binary.
    pub fn builtin() -> Self {
        // The embedded file is tested (`builtin_table_parses`); an error here is a build bug.
        PriceTable::parse_toml("<builtin pricing.toml>", BUILTIN_PRICING)
            .map(|(t, _)| t)
            .unwrap_or_default()
    }

    /// Parse our TOML shape; returns the table and whether it asks to replace.
    pub fn parse_toml(file: &str, text: &str) -> Result<(PriceTable, bool), PricingError> {
        let raw: TomlTable = toml::from_str(text).map_err(|e| {
            let location = match e.span() {
                Some(span) => format!(
                    "line {}",
                    text.get(..span.start)
                        .unwrap_or(text)
                        .lines()
                        .count()
                        .max(1)
                ),
                None => "toml".to_string(),
            };
            PricingError::BadFile {
                file: file.to_string(),
                location,
                message: e.message().to_string(),
            }
        })?;
        let table = PriceTable {
            pricing_date: raw.pricing_date.unwrap_or_default(),
            source: raw.source.unwrap_or_default(),
            providers: raw.providers,
            models: raw.models,
        };
        table.validate(file)?;
        Ok((table, raw.replace))
    }

    fn validate(&self, file: &str) -> Result<(), PricingError> {
        for (name, m) in &self.models {
            let bad = |what: &str| {
                PricingError::BadFile {
                file: file.to_string(),
                location: format!("models.\"{name}\""),
                message: format!(
                    "{what} must be a finite number >= 0 and at most {MAX_PRICE_PER_M:e} USD per 1M tokens"
                ),
            }
            };
            let tokens = [m.context_window, m.min_cache_tokens]
                .into_iter()
                .flatten()
                .chain(m.tiers.iter().map(|t| t.above_prompt_tokens));
            if tokens.into_iter().any(|t| t > MAX_TOKENS) {
                return Err(PricingError::BadFile {
                    file: file.to_string(),
                    location: format!("models.\"{name}\""),
                    message: format!("token counts must be at most 2^53 = {MAX_TOKENS}"),
                });
            }
            for (what, v) in [
                ("input", m.input),
                ("cached_input", m.cached_input),
                ("cache_write", m.cache_write),
                ("output", m.output),
            ] {
                if let Some(v) = v {
                    if !price_ok(v) {
                        return Err(bad(what));
                    }
                }
            }
            for t in &m.tiers {
                for v in [Some(t.input), t.cached_input, t.cache_write, Some(t.output)]
                    .into_iter()
                    .flatten()
                {
                    if !price_ok(v) {
                        return Err(bad("tier price"));
                    }
                }
            }
        }
        for (name, p) in &self.providers {
            if !p.cache_ttl_s.is_finite()
                || p.cache_ttl_s < 0.0
                || p.cache_ttl_s > MAX_CACHE_TTL_S
                || p.cache_block_tokens == 0
                || p.cache_block_tokens > MAX_TOKENS
                || p.min_cache_tokens > MAX_TOKENS
            {
                return Err(PricingError::BadFile {
                    file: file.to_string(),
                    location: format!("providers.{name}"),
                    message: format!(
                        "cache_ttl_s must be from 0 to {MAX_CACHE_TTL_S} s, cache_block_tokens \
                         above 0, and token counts at most 2^53"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Parse LiteLLM's `model_prices_and_context_window.json` shape (per-token USD prices).
    pub fn parse_litellm(file: &str, text: &str) -> Result<PriceTable, PricingError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| PricingError::BadFile {
                file: file.to_string(),
                location: format!("line {}", e.line()),
                message: e.to_string(),
            })?;
        let obj = value.as_object().ok_or_else(|| PricingError::BadFile {
            file: file.to_string(),
            location: "$".to_string(),
            message: "expected an object of model name -> prices".to_string(),
        })?;
        let mut models = BTreeMap::new();
        for (name, entry) in obj {
            if name == "sample_spec" {
                continue;
            }
            let Some(e) = entry.as_object() else {
                return Err(PricingError::BadFile {
                    file: file.to_string(),
                    location: format!("$[\"{name}\"]"),
                    message: "expected an object".to_string(),
                });
            };
            let per_m = |key: &str| -> Result<Option<f64>, PricingError> {
                match e.get(key) {
                    None | Some(serde_json::Value::Null) => Ok(None),
                    Some(v) => match v.as_f64() {
                        Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x * 1e6)),
                        _ => Err(PricingError::BadFile {
                            file: file.to_string(),
                            location: format!("$[\"{name}\"].{key}"),
                            message: "expected a number >= 0 (USD per token)".to_string(),
                        }),
                    },
                }
            };
            let provider = e
                .get("litellm_provider")
                .and_then(|v| v.as_str())
                .map(litellm_provider);
            let mut tiers = Vec::new();
            // `input_cost_per_token_above_200k_tokens` and friends, any threshold.
            for key in e.keys() {
                if let Some(k) = key
                    .strip_prefix("input_cost_per_token_above_")
                    .and_then(|r| r.strip_suffix("k_tokens"))
                {
                    let Ok(thousands) = k.parse::<u64>() else {
                        continue;
                    };
                    let suffix = format!("above_{k}k_tokens");
                    let (Some(input), Some(output)) = (
                        per_m(&format!("input_cost_per_token_{suffix}"))?,
                        per_m(&format!("output_cost_per_token_{suffix}"))?,
                    ) else {
                        continue;
                    };
                    tiers.push(Tier {
                        above_prompt_tokens: thousands * 1000,
                        input,
                        cached_input: per_m(&format!("cache_read_input_token_cost_{suffix}"))?,
                        cache_write: per_m(&format!("cache_creation_input_token_cost_{suffix}"))?,
                        output,
                    });
                }
            }
            tiers.sort_by_key(|t| t.above_prompt_tokens);
            let context_window = e
                .get("max_input_tokens")
                .and_then(|v| v.as_u64())
                .or_else(|| e.get("max_tokens").and_then(|v| v.as_u64()));
            models.insert(
                name.clone(),
                ModelPrice {
                    provider,
                    input: per_m("input_cost_per_token")?,
                    cached_input: per_m("cache_read_input_token_cost")?,
                    cache_write: per_m("cache_creation_input_token_cost")?,
                    output: per_m("output_cost_per_token")?,
                    context_window,
                    tiers,
                    aliases: Vec::new(),
                    min_cache_tokens: None,
                },
            );
        }
        Ok(PriceTable {
            pricing_date: String::new(),
            source: format!("LiteLLM file {file}"),
            providers: BTreeMap::new(),
            models,
        })
    }

    /// Apply a `--pricing FILE` (already read): JSON is taken as LiteLLM's shape, anything else
    /// as our TOML. Entries of the file win over the table's; `replace = true` (TOML) drops the
    /// built-in models first.
    pub fn apply_file(&mut self, file: &str, text: &str) -> Result<(), PricingError> {
        let trimmed = text.trim_start();
        let (other, replace) = if trimmed.starts_with('{') {
            (PriceTable::parse_litellm(file, text)?, false)
        } else {
            PriceTable::parse_toml(file, text)?
        };
        // Range checks for either shape (parse_toml ran them already; cheap to repeat).
        other.validate(file)?;
        if replace {
            self.models.clear();
        }
        if !other.pricing_date.is_empty() {
            self.pricing_date = other.pricing_date;
        }
        if !other.source.is_empty() {
            self.source = if self.source.is_empty() {
                other.source
            } else {
                format!("{}; overrides: {}", self.source, other.source)
            };
        }
        self.providers.extend(other.providers);
        self.models.extend(other.models);
        Ok(())
    }

    /// Caching rules for a model's provider.
    pub fn cache_rules(&self, price: &ModelPrice) -> ProviderCache {
        let mut rules = price
            .provider
            .as_deref()
            .and_then(|p| self.providers.get(p))
            .cloned()
            .unwrap_or_else(ProviderCache::fallback);
        if let Some(min) = price.min_cache_tokens {
            rules.min_cache_tokens = min;
        }
        rules
    }

    /// Find a model by name, alias, or name without provider prefix / date suffix; an
    /// unknown name is an error listing near names.
    pub fn lookup(&self, name: &str) -> Result<(&str, &ModelPrice), PricingError> {
        self.find(name).ok_or_else(|| PricingError::UnknownModel {
            name: name.to_string(),
            near: self.near_names(&name.trim().to_ascii_lowercase()),
        })
    }

    /// [`lookup`](Self::lookup) without the near names: for the replay path, which asks for
    /// an unpriced model once per replay and has no use for suggestions.
    pub fn find(&self, name: &str) -> Option<(&str, &ModelPrice)> {
        let wanted = name.trim().to_ascii_lowercase();
        let mut candidates = vec![wanted.clone()];
        if let Some((_, rest)) = wanted.rsplit_once('/') {
            candidates.push(rest.to_string());
        }
        for c in candidates.clone() {
            let stripped = strip_date_suffix(&c);
            if stripped != c {
                candidates.push(stripped);
            }
        }
        for c in &candidates {
            for (key, m) in &self.models {
                if key.eq_ignore_ascii_case(c)
                    || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(c))
                {
                    return Some((key.as_str(), m));
                }
            }
        }
        None
    }

    /// Up to 3 table names closest to `name` by edit distance (ties by name).
    pub fn near_names(&self, name: &str) -> Vec<String> {
        let mut scored: Vec<(usize, &String)> = self
            .models
            .keys()
            .map(|k| (edit_distance(name, &k.to_ascii_lowercase()), k))
            .collect();
        scored.sort();
        let limit = (name.chars().count() / 2).max(3);
        scored
            .into_iter()
            .filter(|(d, _)| *d <= limit)
            .take(3)
            .map(|(_, k)| k.clone())
            .collect()
    }
}

fn litellm_provider(p: &str) -> String {
    let p = p.to_ascii_lowercase();
    if p.contains("anthropic") || p == "bedrock" || p == "bedrock_converse" {
        "anthropic".to_string()
    } else if p.contains("openai") || p == "azure" || p == "text-completion-openai" {
        "openai".to_string()
    } else if p.contains("gemini") || p.contains("vertex") {
        "google".to_string()
    } else {
        p
    }
}

/// `claude-sonnet-4-5-20250929` -> `claude-sonnet-4-5`; `gpt-4o-2024-08-06` -> `gpt-4o`;
/// also drops `@20250514` and `-latest`.
fn strip_date_suffix(name: &str) -> String {
    let mut s = name.to_string();
    if let Some(x) = s.strip_suffix("-latest") {
        s = x.to_string();
    }
    if let Some((head, tail)) = s.rsplit_once(['-', '@']) {
        if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
            return head.to_string();
        }
    }
    // -YYYY-MM-DD (byte-wise on ASCII only: names may hold any text)
    let b = s.as_bytes();
    if b.len() > 11 && s.is_char_boundary(b.len() - 11) {
        let t = &b[b.len() - 11..];
        let digits =
            |r: std::ops::Range<usize>| t.get(r).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
        if t.first() == Some(&b'-')
            && t.get(5) == Some(&b'-')
            && t.get(8) == Some(&b'-')
            && digits(1..5)
            && digits(6..8)
            && digits(9..11)
        {
            return s[..b.len() - 11].to_string();
        }
    }
    s
}

/// Levenshtein distance on chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let sub = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = sub.min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

impl fmt::Display for PriceTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "prices of {} (USD per 1M tokens; {} models)",
            self.pricing_date,
            self.models.len()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_and_covers_the_required_models() {
        let (t, replace) =
            PriceTable::parse_toml("builtin", BUILTIN_PRICING).expect("builtin parses");
        assert!(!replace);
        assert!(!t.pricing_date.is_empty());
        for m in [
            "gemini-2.5-pro",
            "gemini-2.5-flash",
            "gemini-2.5-flash-lite",
            "gpt-4.1",
            "gpt-4.1-mini",
            "gpt-4.1-nano",
            "gpt-4o",
            "gpt-4o-mini",
            "gpt-5",
            "gpt-5-mini",
            "gpt-5-nano",
            "claude-opus-4-1",
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
        ] {
            let (_, p) = t.lookup(m).unwrap_or_else(|e| panic!("{e}"));
            assert!(p.is_priced(), "{m} priced");
            assert!(p.cached_input.is_some(), "{m} has a cached rate");
            assert!(p.context_window.is_some(), "{m} has a context window");
        }
    }

    #[test]
    fn lookup_strips_dates_and_prefixes() {
        let t = PriceTable::builtin();
        assert_eq!(
            t.lookup("claude-sonnet-4-5-20250929").unwrap().0,
            "claude-sonnet-4-5"
        );
        assert_eq!(t.lookup("openai/gpt-4o-2024-05-13").unwrap().0, "gpt-4o");
        assert_eq!(t.lookup("GPT-4.1").unwrap().0, "gpt-4.1");
        assert_eq!(
            t.lookup("gemini/gemini-2.5-flash").unwrap().0,
            "gemini-2.5-flash"
        );
    }

    #[test]
    fn odd_names_never_panic() {
        let t = PriceTable::builtin();
        for name in [
            "",
            "é",
            "模型-2024-05-13",
            "ééééééééééééé",
            "gpt-4o-2024-08-0é",
            "-20250929",
        ] {
            let _ = t.lookup(name);
        }
        assert_eq!(strip_date_suffix("gpt-4o-2024-08-06"), "gpt-4o");
        assert_eq!(strip_date_suffix("模型-2024-05-13"), "模型");
    }

    #[test]
    fn unknown_model_lists_near_names() {
        let t = PriceTable::builtin();
        let e = t.lookup("gemini-2.5-flsh").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("unknown model `gemini-2.5-flsh`"), "{msg}");
        // distance 1 from gemini-2.5-flash comes first
        match e {
            PricingError::UnknownModel { near, .. } => {
                assert_eq!(near.first().map(String::as_str), Some("gemini-2.5-flash"))
            }
            _ => panic!("wrong error"),
        }
    }

    #[test]
    fn edit_distance_examples() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("gpt-5", "gpt-5"), 0);
    }

    #[test]
    fn model_can_override_the_providers_cache_minimum() {
        let t = PriceTable::builtin();
        let (_, pro) = t.lookup("gemini-2.5-pro").unwrap();
        let (_, flash) = t.lookup("gemini-2.5-flash").unwrap();
        assert_eq!(t.cache_rules(pro).min_cache_tokens, 2048);
        assert_eq!(t.cache_rules(flash).min_cache_tokens, 1024);
        assert_eq!(t.cache_rules(flash).cache_ttl_s, 300.0);
    }

    #[test]
    fn tier_applies_strictly_above_threshold() {
        let t = PriceTable::builtin();
        let (_, pro) = t.lookup("gemini-2.5-pro").unwrap();
        let (r, tier) = pro.rates_for(200_000).unwrap();
        assert_eq!((r.input, tier), (1.25, None));
        let (r, tier) = pro.rates_for(200_001).unwrap();
        assert_eq!(
            (r.input, r.output, r.cached_input, tier),
            (2.5, 15.0, Some(0.25), Some(200_000))
        );
    }

    #[test]
    fn litellm_shape_is_read_per_token_and_with_tiers() {
        let json = r#"{
          "sample_spec": {"input_cost_per_token": 0},
          "my-model": {"litellm_provider": "anthropic", "input_cost_per_token": 3e-06,
             "output_cost_per_token": 1.5e-05, "cache_read_input_token_cost": 3e-07,
             "cache_creation_input_token_cost": 3.75e-06, "max_input_tokens": 200000,
             "input_cost_per_token_above_200k_tokens": 6e-06,
             "output_cost_per_token_above_200k_tokens": 2.25e-05}
        }"#;
        let mut t = PriceTable::builtin();
        t.apply_file("prices.json", json).unwrap();
        let (_, m) = t.lookup("my-model").unwrap();
        assert!((m.input.unwrap() - 3.0).abs() < 1e-9);
        assert!((m.cache_write.unwrap() - 3.75).abs() < 1e-9);
        assert_eq!(m.provider.as_deref(), Some("anthropic"));
        assert_eq!(m.context_window, Some(200_000));
        assert_eq!(m.tiers.len(), 1);
        assert_eq!(m.tiers[0].above_prompt_tokens, 200_000);
        assert!((m.tiers[0].output - 22.5).abs() < 1e-9);
        // extends: built-in entries remain
        assert!(t.lookup("gpt-5").is_ok());
    }

    #[test]
    fn toml_override_replaces_when_asked() {
        let mut t = PriceTable::builtin();
        t.apply_file(
            "p.toml",
            "replace = true\n[models.\"x\"]\ninput = 1.0\noutput = 2.0\n",
        )
        .unwrap();
        assert_eq!(t.models.len(), 1);
        assert!(t.lookup("gpt-5").is_err());
    }

    #[test]
    fn bad_files_name_file_and_place() {
        let mut t = PriceTable::builtin();
        let e = t
            .apply_file("p.toml", "[models.\"x\"]\ninput = \"cheap\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.toml: line 2"), "{e}");
        let e = t
            .apply_file("p.json", "{\"m\": {\"input_cost_per_token\": -1}}")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "p.json: $[\"m\"].input_cost_per_token: expected a number >= 0 (USD per token)"
        );
        let e = t
            .apply_file("p.toml", "[models.\"x\"]\ninput = -1.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("models.\"x\""), "{e}");
    }

    #[test]
    fn huge_prices_and_token_counts_are_refused() {
        let mut t = PriceTable::builtin();
        for (text, place) in [
            ("[models.\"x\"]\ninput = 1e300\noutput = 1.0\n", "models.\"x\""),
            ("[models.\"x\"]\ninput = 1.0\noutput = 1.0\ncontext_window = 9007199254740993\n", "models.\"x\""),
            ("{\"m\": {\"input_cost_per_token\": 1e300}}", "models.\"m\""),
            ("{\"m\": {\"input_cost_per_token\": 1e-6, \"max_input_tokens\": 18446744073709551615}}", "models.\"m\""),
        ] {
            let e = t.apply_file("p", text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("p: {place}: ")), "{text}: {e}");
        }
    }
}
