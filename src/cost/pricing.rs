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
    /// Writes with Anthropic's 1-hour lifetime; `None`: 2x `input` (Anthropic's rule).
    pub cache_write_1h: Option<f64>,
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
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
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
    /// Cache writes with Anthropic's 1-hour lifetime (Claude Code records them apart);
    /// `None`: 2x `input`.
    #[serde(default)]
    pub cache_write_1h: Option<f64>,
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
    /// Take every field `other` gives (tiers when it lists any), keep the rest; aliases are
    /// the union. How a LiteLLM entry lands on the table's entry of the same model.
    pub fn merge_over(&mut self, other: ModelPrice) {
        fn take<T>(mine: &mut Option<T>, theirs: Option<T>) {
            if theirs.is_some() {
                *mine = theirs;
            }
        }
        take(&mut self.provider, other.provider);
        take(&mut self.input, other.input);
        take(&mut self.cached_input, other.cached_input);
        take(&mut self.cache_write, other.cache_write);
        take(&mut self.cache_write_1h, other.cache_write_1h);
        take(&mut self.output, other.output);
        take(&mut self.context_window, other.context_window);
        take(&mut self.min_cache_tokens, other.min_cache_tokens);
        if !other.tiers.is_empty() {
            self.tiers = other.tiers;
        }
        for a in other.aliases {
            if !self.aliases.iter().any(|x| x.eq_ignore_ascii_case(&a)) {
                self.aliases.push(a);
            }
        }
    }

    /// The per-token prices with their field names, in the table's order.
    pub fn named_prices(&self) -> [(&'static str, Option<f64>); 5] {
        [
            ("input", self.input),
            ("cached_input", self.cached_input),
            ("cache_write", self.cache_write),
            ("cache_write_1h", self.cache_write_1h),
            ("output", self.output),
        ]
    }

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
            cache_write_1h: self.cache_write_1h,
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
                    cache_write_1h: t.cache_write_1h.or(base
                        .cache_write_1h
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
    /// Entries of a `--pricing` file that were skipped, one line each (the CLI prints them).
    pub warnings: Vec<String>,
}

/// The models of a LiteLLM file, converted; `warnings` name the entries skipped as malformed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiteLlmModels {
    pub models: BTreeMap<String, ModelPrice>,
    pub warnings: Vec<String>,
    /// Entries of other modes (embedding, image, audio, ...) left out.
    pub skipped_modes: usize,
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
        let raw: TomlTable = toml::from_str(text).map_err(|e| PricingError::BadFile {
            file: file.to_string(),
            location: toml_error_location(text, &e),
            message: e.message().to_string(),
        })?;
        let table = PriceTable {
            pricing_date: raw.pricing_date.unwrap_or_default(),
            source: raw.source.unwrap_or_default(),
            providers: raw.providers,
            models: raw.models,
            warnings: Vec::new(),
        };
        table.validate(file)?;
        Ok((table, raw.replace))
    }

    /// Range checks of one model's entry: finite prices within [`MAX_PRICE_PER_M`], token
    /// counts within 2^53.
    fn validate_model(file: &str, name: &str, m: &ModelPrice) -> Result<(), PricingError> {
        let bad = |message: String| PricingError::BadFile {
            file: file.to_string(),
            location: format!("models.\"{name}\""),
            message,
        };
        let price = |what: &str| {
            bad(format!(
                "{what} must be a finite number >= 0 and at most {MAX_PRICE_PER_M:e} USD per 1M tokens"
            ))
        };
        let tokens = [m.context_window, m.min_cache_tokens]
            .into_iter()
            .flatten()
            .chain(m.tiers.iter().map(|t| t.above_prompt_tokens));
        if tokens.into_iter().any(|t| t > MAX_TOKENS) {
            return Err(bad(format!(
                "token counts must be at most 2^53 = {MAX_TOKENS}"
            )));
        }
        for (what, v) in m.named_prices() {
            if v.is_some_and(|v| !price_ok(v)) {
                return Err(price(what));
            }
        }
        for t in &m.tiers {
            let tier = [
                Some(t.input),
                t.cached_input,
                t.cache_write,
                t.cache_write_1h,
                Some(t.output),
            ];
            if tier.into_iter().flatten().any(|v| !price_ok(v)) {
                return Err(price("tier price"));
            }
        }
        Ok(())
    }

    fn validate(&self, file: &str) -> Result<(), PricingError> {
        for (name, m) in &self.models {
            Self::validate_model(file, name, m)?;
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

    /// Read LiteLLM's `model_prices_and_context_window.json` shape (per-token USD prices):
    /// the entries of `mode` chat, responses or completion (or no mode), converted to our
    /// shape. A malformed entry is skipped with a warning naming it (a file of thousands of
    /// entries is not lost to one bad entry); only a file that is not a JSON object is an error.
    pub fn parse_litellm(file: &str, text: &str) -> Result<LiteLlmModels, PricingError> {
        let obj = litellm_object(file, text)?;
        let mut out = LiteLlmModels::default();
        for (name, entry) in &obj {
            if name == "sample_spec" {
                continue;
            }
            match litellm_entry(name, entry) {
                Ok(Some(m)) => {
                    out.models.insert(name.clone(), m);
                }
                Ok(None) => out.skipped_modes += 1,
                Err((location, message)) => out.warnings.push(format!(
                    "{file}: {location}: {message}; entry `{name}` skipped"
                )),
            }
        }
        Ok(out)
    }

    /// Apply a `--pricing FILE` (already read): JSON is taken as LiteLLM's shape, anything else
    /// as our TOML. A LiteLLM entry merges field by field over the table's entry of that name
    /// or alias (aliases, cache minimums and tiers it does not give survive); a TOML entry
    /// replaces the table's; `replace = true` (TOML) drops the built-in models first. Skipped
    /// LiteLLM entries are added to [`PriceTable::warnings`].
    pub fn apply_file(&mut self, file: &str, text: &str) -> Result<(), PricingError> {
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            let read = PriceTable::parse_litellm(file, text)?;
            for (name, m) in read.models {
                // Out of range is a bad entry like any other: named, skipped, not fatal.
                if let Err(e) = Self::validate_model(file, &name, &m) {
                    self.warnings.push(format!("{e}; entry `{name}` skipped"));
                    continue;
                }
                match self.key_of(&name) {
                    Some(key) => {
                        if let Some(old) = self.models.get_mut(&key) {
                            old.merge_over(m);
                        }
                    }
                    None => {
                        self.models.insert(name, m);
                    }
                }
            }
            self.warnings.extend(read.warnings);
            self.add_source(format!("LiteLLM file {file}"));
            return Ok(());
        }
        let (other, replace) = PriceTable::parse_toml(file, text)?;
        if replace {
            self.models.clear();
        }
        if !other.pricing_date.is_empty() {
            self.pricing_date = other.pricing_date;
        }
        if !other.source.is_empty() {
            self.add_source(other.source);
        }
        self.providers.extend(other.providers);
        self.models.extend(other.models);
        Ok(())
    }

    fn add_source(&mut self, source: String) {
        // The built-in text applied over the built-in table (a run without `--pricing`)
        // overrides nothing.
        if source == self.source {
            return;
        }
        self.source = if self.source.is_empty() {
            source
        } else {
            format!("{}; overrides: {}", self.source, source)
        };
    }

    /// The table key a name is, or is an alias of (exact spelling, any case).
    pub fn key_of(&self, name: &str) -> Option<String> {
        self.models
            .iter()
            .find(|(k, m)| {
                k.eq_ignore_ascii_case(name)
                    || m.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
            })
            .map(|(k, _)| k.clone())
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

/// Where a TOML error is: `line N` (1-based) of `text`, else `toml`.
pub(crate) fn toml_error_location(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => format!(
            "line {}",
            text.get(..span.start)
                .unwrap_or(text)
                .lines()
                .count()
                .max(1)
        ),
        None => "toml".to_string(),
    }
}

/// A LiteLLM file's top-level object (model name -> entry); a file that is not JSON or not an
/// object is an error naming the file and the place.
pub(crate) fn litellm_object(
    file: &str,
    text: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, PricingError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| PricingError::BadFile {
            file: file.to_string(),
            location: format!("line {}", e.line()),
            message: e.to_string(),
        })?;
    match value {
        serde_json::Value::Object(o) => Ok(o),
        _ => Err(PricingError::BadFile {
            file: file.to_string(),
            location: "$".to_string(),
            message: "expected an object of model name -> prices".to_string(),
        }),
    }
}

/// LiteLLM modes that are model requests an agent makes; embedding, image, audio, rerank
/// and the like are left out.
pub const LITELLM_MODES: [&str; 3] = ["chat", "responses", "completion"];

/// The provider whose caching rules apply, by model family first: `bedrock/anthropic.claude-*`
/// and `azure_ai/claude-*` are Claude models with Anthropic's rules, `azure/gpt-4o` is an
/// OpenAI model; a model of no known family keeps LiteLLM's provider name (Bedrock's Llama:
/// `bedrock`, which has no rules of its own, so the implicit-caching fallback applies).
pub fn provider_of(name: &str, litellm_provider: Option<&str>) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let last = lower.rsplit('/').next().unwrap_or(&lower);
    // Bedrock ids put the vendor first: `us.anthropic.claude-...-v1:0`.
    let family = if last.contains("claude") {
        Some("anthropic")
    } else if [
        "gpt-", "chatgpt", "o1", "o3", "o4", "davinci", "babbage", "ft:gpt", "codex-",
    ]
    .iter()
    .any(|p| last.starts_with(p))
    {
        Some("openai")
    } else if ["gemini", "gemma", "learnlm"]
        .iter()
        .any(|p| last.starts_with(p))
    {
        Some("google")
    } else {
        None
    };
    if let Some(f) = family {
        return Some(f.to_string());
    }
    let p = litellm_provider?.to_ascii_lowercase();
    Some(match p.as_str() {
        "anthropic" => "anthropic".to_string(),
        "openai" | "text-completion-openai" => "openai".to_string(),
        _ if p == "gemini"
            || p.starts_with("vertex_ai-language")
            || p == "vertex_ai-text-models" =>
        {
            "google".to_string()
        }
        _ => p,
    })
}

/// USD per token -> USD per 1M tokens, rounded to 1e-6 USD per 1M (LiteLLM's decimals, without
/// the binary noise of the multiplication: 1.25e-06 * 1e6 reads 1.25).
fn per_million(per_token: f64) -> f64 {
    (per_token * 1e12).round() / 1e6
}

/// One LiteLLM entry in our shape; `Ok(None)` for a mode that is not a model request;
/// `Err((JSON path, what is wrong))` for a malformed entry.
fn litellm_entry(
    name: &str,
    entry: &serde_json::Value,
) -> Result<Option<ModelPrice>, (String, String)> {
    let path = |key: &str| {
        if key.is_empty() {
            format!("$[\"{name}\"]")
        } else {
            format!("$[\"{name}\"].{key}")
        }
    };
    let Some(e) = entry.as_object() else {
        return Err((path(""), "expected an object".to_string()));
    };
    match e.get("mode") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(m)) if LITELLM_MODES.contains(&m.as_str()) => {}
        Some(serde_json::Value::String(_)) => return Ok(None),
        Some(_) => return Err((path("mode"), "expected a string".to_string())),
    }
    let per_m = |key: &str| -> Result<Option<f64>, (String, String)> {
        match e.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(per_million(x))),
                _ => Err((
                    path(key),
                    "expected a number >= 0 (USD per token)".to_string(),
                )),
            },
        }
    };
    let tokens = |key: &str| -> Result<Option<u64>, (String, String)> {
        match e.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) => Ok(Some(n)),
                // LiteLLM writes some counts as 1e6 or 200000.0.
                None => match v.as_f64() {
                    Some(x) if x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 1e15 => {
                        Ok(Some(x as u64))
                    }
                    _ => Err((path(key), "expected a whole number of tokens".to_string())),
                },
            },
        }
    };
    let litellm_provider = match e.get("litellm_provider") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(p)) => Some(p.as_str()),
        Some(_) => return Err((path("litellm_provider"), "expected a string".to_string())),
    };
    let mut tiers = Vec::new();
    // `input_cost_per_token_above_200k_tokens` and friends, any threshold (service-tier
    // variants such as `..._above_272k_tokens_priority` are not the standard tier: ignored).
    for key in e.keys() {
        let Some(k) = key
            .strip_prefix("input_cost_per_token_above_")
            .and_then(|r| r.strip_suffix("k_tokens"))
        else {
            continue;
        };
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
            cache_write_1h: per_m(&format!(
                "cache_creation_input_token_cost_above_1hr_{suffix}"
            ))?,
            output,
        });
    }
    tiers.sort_by_key(|t| t.above_prompt_tokens);
    Ok(Some(ModelPrice {
        provider: provider_of(name, litellm_provider),
        input: per_m("input_cost_per_token")?,
        cached_input: per_m("cache_read_input_token_cost")?,
        cache_write: per_m("cache_creation_input_token_cost")?,
        cache_write_1h: per_m("cache_creation_input_token_cost_above_1hr")?,
        output: per_m("output_cost_per_token")?,
        // Only `max_input_tokens`: LiteLLM's `max_tokens` is a legacy field that usually holds
        // the output limit, and read as a window it causes false overflows.
        context_window: tokens("max_input_tokens")?,
        tiers,
        aliases: Vec::new(),
        min_cache_tokens: tokens("prompt_cache_min_tokens")?,
    }))
}

/// `claude-sonnet-4-5-20250929` -> `claude-sonnet-4-5`; `gpt-4o-2024-08-06` -> `gpt-4o`;
/// also drops `@20250514` and `-latest`.
pub(crate) fn strip_date_suffix(name: &str) -> String {
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
            // current models (issue #14): the Claude Code corpus runs claude-opus-4-6
            "claude-opus-4-6",
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-sonnet-4-6",
            "gemini-3.1-pro-preview",
            "gemini-3-flash-preview",
            "gpt-5.1",
            "gpt-5.1-codex",
            "gpt-5.2",
            "gpt-5.6",
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
        assert_eq!(t.lookup("openai/gpt-4o-2024-08-06").unwrap().0, "gpt-4o");
        // A snapshot priced unlike its model is its own entry (LiteLLM: $5 vs $2.50 input).
        let (k, old) = t.lookup("openai/gpt-4o-2024-05-13").unwrap();
        assert_eq!((k, old.input), ("gpt-4o-2024-05-13", Some(5.0)));
        assert_eq!(t.lookup("claude-opus-4-6").unwrap().0, "claude-opus-4-6");
        assert_eq!(
            t.lookup("claude-sonnet-4-5-20250929[1m]").unwrap().0,
            "claude-sonnet-4-5[1m]"
        );
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
        let e = t.apply_file("p.json", "{\"m\": ").unwrap_err().to_string();
        assert!(e.starts_with("p.json: line 1: "), "{e}");
        let e = t
            .apply_file("p.toml", "[models.\"x\"]\ninput = -1.0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("models.\"x\""), "{e}");
    }

    /// A LiteLLM-shaped file with one entry per rule of issue #14.
    const LITELLM: &str = r#"{
      "claude-haiku-4-5": {"litellm_provider": "anthropic", "mode": "chat",
          "input_cost_per_token": 1e-06, "output_cost_per_token": 5e-06,
          "cache_read_input_token_cost": 1e-07, "cache_creation_input_token_cost": 1.25e-06,
          "cache_creation_input_token_cost_above_1hr": 2e-06},
      "gpt-new": {"litellm_provider": "openai", "mode": "responses",
          "input_cost_per_token": 4e-06, "output_cost_per_token": 2.4e-05,
          "cache_read_input_token_cost": 4e-07, "cache_creation_input_token_cost": 5e-06,
          "max_tokens": 8192, "prompt_cache_min_tokens": 2048},
      "old-style": {"litellm_provider": "openai", "mode": "chat", "max_tokens": 8192,
          "input_cost_per_token": 1e-06, "output_cost_per_token": 1e-06},
      "text-embedding-x": {"litellm_provider": "openai", "mode": "embedding",
          "input_cost_per_token": 1e-08, "output_cost_per_token": 0},
      "dall-e-x": {"litellm_provider": "openai", "mode": "image_generation"},
      "broken": {"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": "cheap"},
      "also-broken": {"litellm_provider": "openai", "max_input_tokens": -5},
      "bedrock/anthropic.claude-x-v1:0": {"litellm_provider": "bedrock", "mode": "chat",
          "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05},
      "azure_ai/claude-y": {"litellm_provider": "azure_ai", "mode": "chat",
          "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05},
      "bedrock/meta.llama-z": {"litellm_provider": "bedrock", "mode": "chat",
          "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05},
      "azure/gpt-w": {"litellm_provider": "azure", "mode": "chat",
          "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05}
    }"#;

    fn with_litellm() -> PriceTable {
        let mut t = PriceTable::builtin();
        t.apply_file("prices.json", LITELLM)
            .expect("bad entries do not abort");
        t
    }

    #[test]
    fn litellm_bad_entries_are_warnings_naming_them_and_are_skipped() {
        let t = with_litellm();
        assert_eq!(
            t.warnings,
            [
                "prices.json: $[\"broken\"].input_cost_per_token: expected a number >= 0 (USD per \
                 token); entry `broken` skipped",
                "prices.json: $[\"also-broken\"].max_input_tokens: expected a whole number of \
                 tokens; entry `also-broken` skipped",
            ]
        );
        assert!(t.find("broken").is_none() && t.find("also-broken").is_none());
        // The good entries around them are loaded.
        assert!(t.find("gpt-new").is_some());
    }

    #[test]
    fn litellm_loads_only_request_modes() {
        let t = with_litellm();
        assert!(t.find("text-embedding-x").is_none());
        assert!(t.find("dall-e-x").is_none());
        let read = PriceTable::parse_litellm("p.json", LITELLM).unwrap();
        assert_eq!(read.skipped_modes, 2);
    }

    #[test]
    fn litellm_context_window_is_max_input_tokens_never_max_tokens() {
        let t = with_litellm();
        assert_eq!(t.find("old-style").unwrap().1.context_window, None);
        assert_eq!(t.find("gpt-new").unwrap().1.context_window, None);
    }

    #[test]
    fn litellm_reads_cache_minimum_and_one_hour_writes() {
        let t = with_litellm();
        let (_, m) = t.find("gpt-new").unwrap();
        assert_eq!(m.min_cache_tokens, Some(2048));
        assert_eq!(t.cache_rules(m).min_cache_tokens, 2048);
        assert_eq!(m.cache_write, Some(5.0));
        let (_, h) = t.find("claude-haiku-4-5").unwrap();
        assert_eq!(h.cache_write_1h, Some(2.0));
    }

    #[test]
    fn litellm_entry_merges_over_the_builtin_field_by_field() {
        let before = PriceTable::builtin();
        let (_, old) = before.find("claude-haiku-4-5").unwrap();
        assert!(old.aliases.iter().any(|a| a == "haiku"));
        let t = with_litellm();
        let (key, m) = t.find("claude-haiku-4-5").unwrap();
        assert_eq!(key, "claude-haiku-4-5");
        // The file gives prices, not aliases, a window or a cache minimum: those survive.
        assert_eq!(m.aliases, old.aliases);
        assert_eq!(m.min_cache_tokens, old.min_cache_tokens);
        assert_eq!(m.context_window, old.context_window);
        assert_eq!(m.provider.as_deref(), Some("anthropic"));
        // A dated name of the file lands on the entry it is an alias of.
        let mut t = PriceTable::builtin();
        t.apply_file(
            "p.json",
            r#"{"claude-haiku-4-5-20251001": {"input_cost_per_token": 9e-06}}"#,
        )
        .unwrap();
        assert!(!t.models.contains_key("claude-haiku-4-5-20251001"));
        let (_, m) = t.find("claude-haiku-4-5").unwrap();
        assert_eq!((m.input, m.output), (Some(9.0), old.output));
        assert!(
            t.source.ends_with("overrides: LiteLLM file p.json"),
            "{}",
            t.source
        );
    }

    #[test]
    fn provider_follows_the_model_family() {
        let t = with_litellm();
        let p = |n: &str| t.find(n).unwrap().1.provider.clone();
        assert_eq!(
            p("bedrock/anthropic.claude-x-v1:0").as_deref(),
            Some("anthropic")
        );
        assert_eq!(p("azure_ai/claude-y").as_deref(), Some("anthropic"));
        assert_eq!(p("azure/gpt-w").as_deref(), Some("openai"));
        assert_eq!(p("bedrock/meta.llama-z").as_deref(), Some("bedrock"));
        let (_, claude) = t.find("azure_ai/claude-y").unwrap();
        assert!(t.cache_rules(claude).cache_write_charged);
        let (_, llama) = t.find("bedrock/meta.llama-z").unwrap();
        assert!(!t.cache_rules(llama).cache_write_charged);
        assert_eq!(
            provider_of("us.anthropic.claude-opus-4-6-v1", Some("bedrock_converse")).as_deref(),
            Some("anthropic")
        );
        assert_eq!(
            provider_of("gemini-3.1-pro-preview", Some("vertex_ai-language-models")).as_deref(),
            Some("google")
        );
    }

    #[test]
    fn huge_prices_and_token_counts_are_refused() {
        let mut t = PriceTable::builtin();
        for (text, place) in [
            (
                "[models.\"x\"]\ninput = 1e300\noutput = 1.0\n",
                "models.\"x\"",
            ),
            (
                "[models.\"x\"]\ninput = 1.0\noutput = 1.0\ncontext_window = 9007199254740993\n",
                "models.\"x\"",
            ),
        ] {
            let e = t.apply_file("p", text).unwrap_err().to_string();
            assert!(e.starts_with(&format!("p: {place}: ")), "{text}: {e}");
        }
        // In a LiteLLM file such an entry is skipped with a warning naming it (issue #14: a
        // bad entry never aborts a 2,600-entry file).
        for text in [
            "{\"m\": {\"mode\": \"chat\", \"input_cost_per_token\": 1e300, \"output_cost_per_token\": 1e-6}}",
            "{\"m\": {\"mode\": \"chat\", \"input_cost_per_token\": 1e-6, \"output_cost_per_token\": 1e-6, \"max_input_tokens\": 18446744073709551615}}",
        ] {
            let mut t = PriceTable::builtin();
            t.apply_file("p", text).unwrap();
            assert!(t.find("m").is_none(), "{text}");
            assert!(
                t.warnings.iter().any(|w| w.starts_with("p: ") && w.contains("`m` skipped")),
                "{text}: {:?}",
                t.warnings
            );
        }
    }
}
