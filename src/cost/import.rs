//! `compaction-sim pricing import`: the built-in price table (`src/data/pricing.toml`) derived
//! from LiteLLM's `model_prices_and_context_window.json` and a small hand-written overlay
//! (`src/data/pricing-overlay.toml`), so that the shipped prices are a function of a pinned,
//! dated file instead of someone's memory.
//!
//! The rules, in order:
//! 1. Keep the entries whose `litellm_provider` is one the overlay lists and whose `mode` is a
//!    model request (chat, responses, completion), read as `--pricing` reads them
//!    ([`PriceTable::parse_litellm`]); plus the entries an overlay model names with `from`.
//! 2. Fold an entry into another as an alias when its name is the other's with a date suffix
//!    (`gpt-4o-2024-08-06`) or a `gemini/` / `vertex_ai/` prefix and every price, window and
//!    minimum is the same; an entry that differs (`gpt-4o-2024-05-13`) stays its own model.
//! 3. Apply the overlay: per-provider caching rules, and per model the fields it gives merged
//!    over the imported entry (aliases, context-window overrides); a model absent from the
//!    kept entries must name its LiteLLM entry with `from`.
//! 4. Write the table with `source` and `pricing_date` from the overlay's pin.

use super::pricing::{
    litellm_object, strip_date_suffix, toml_error_location, ModelPrice, PriceTable, PricingError,
    ProviderCache, LITELLM_MODES,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The overlay shipped with the binary (what `pricing import` applies unless told otherwise).
pub const BUILTIN_OVERLAY: &str = include_str!("../data/pricing-overlay.toml");

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    #[error(transparent)]
    Pricing(#[from] PricingError),
    /// The overlay names something the LiteLLM file does not have, or is malformed.
    #[error("{file}: {location}: {message}")]
    Overlay {
        file: String,
        location: String,
        message: String,
    },
}

/// The hand-written part: the pin, what to keep, caching rules, and per-model judgement.
#[derive(Debug, Clone)]
pub struct Overlay {
    /// The LiteLLM release the table comes from (PyPI `litellm==VERSION`).
    pub litellm_version: String,
    /// The date of that release's file (the wheel's build date): the table's `pricing_date`.
    pub file_date: String,
    /// `litellm_provider` values whose entries are kept.
    pub keep_providers: Vec<String>,
    pub providers: BTreeMap<String, ProviderCache>,
    pub models: BTreeMap<String, OverlayModel>,
}

/// The overlay file as written; each model is a table entry's fields plus `from`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OverlayFile {
    litellm_version: String,
    file_date: String,
    keep_providers: Vec<String>,
    #[serde(default)]
    providers: BTreeMap<String, ProviderCache>,
    #[serde(default)]
    models: BTreeMap<String, toml::Table>,
}

/// One model's judgement.
#[derive(Debug, Clone, Default)]
pub struct OverlayModel {
    /// The LiteLLM entry this model is built from, when its own name is not a kept entry
    /// (a retired model still priced on Bedrock, a long-context variant).
    pub from: Option<String>,
    /// The fields it sets, merged over the imported entry.
    pub fields: ModelPrice,
}

impl Overlay {
    pub fn parse(file: &str, text: &str) -> Result<Overlay, ImportError> {
        let raw: OverlayFile = toml::from_str(text).map_err(|e| ImportError::Overlay {
            file: file.to_string(),
            location: toml_error_location(text, &e),
            message: e.message().to_string(),
        })?;
        let mut models = BTreeMap::new();
        for (name, mut t) in raw.models {
            let bad = |message: String| ImportError::Overlay {
                file: file.to_string(),
                location: format!("models.\"{name}\""),
                message,
            };
            let from = match t.remove("from") {
                None => None,
                Some(toml::Value::String(f)) => Some(f),
                Some(_) => return Err(bad("`from` must be a string".to_string())),
            };
            // A misspelled field is an error (`ModelPrice` denies unknown fields).
            let fields: ModelPrice = toml::Value::Table(t)
                .try_into()
                .map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
            models.insert(name, OverlayModel { from, fields });
        }
        Ok(Overlay {
            litellm_version: raw.litellm_version,
            file_date: raw.file_date,
            keep_providers: raw.keep_providers,
            providers: raw.providers,
            models,
        })
    }

    /// The table's `source` line.
    pub fn source(&self) -> String {
        format!(
            "LiteLLM {} (PyPI litellm=={}, litellm/model_prices_and_context_window_backup.json \
             of {}), standard-tier list prices, with compaction-sim's overlay \
             (src/data/pricing-overlay.toml)",
            self.litellm_version, self.litellm_version, self.file_date
        )
    }
}

/// What an import produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// `src/data/pricing.toml`'s text.
    pub toml: String,
    /// The kept LiteLLM entries, verbatim, one per line: the filtered copy the tests keep.
    pub filtered_json: String,
    pub models: usize,
    /// Kept entries skipped as malformed, one line each.
    pub warnings: Vec<String>,
}

/// Derive the price table from LiteLLM's file and the overlay (see the module doc).
pub fn import(
    litellm_file: &str,
    litellm_text: &str,
    overlay_file: &str,
    overlay: &Overlay,
) -> Result<Imported, ImportError> {
    let obj = litellm_object(litellm_file, litellm_text)?;
    let wanted_from: Vec<&str> = overlay
        .models
        .values()
        .filter_map(|m| m.from.as_deref())
        .collect();
    // 1. Keep (file order, so the filtered copy reads like the original).
    let kept = kept_entries(&obj, overlay, &wanted_from);
    let filtered_json = one_entry_per_line(&kept);
    let read = PriceTable::parse_litellm(litellm_file, &filtered_json)?;
    let mut from_entries = BTreeMap::new();
    let mut models = BTreeMap::new();
    for (name, m) in read.models {
        let provider = kept
            .get(&name)
            .and_then(|e| e.get("litellm_provider"))
            .and_then(|v| v.as_str());
        let is_kept = provider.is_some_and(|p| overlay.keep_providers.iter().any(|k| k == p));
        if wanted_from.contains(&name.as_str()) {
            from_entries.insert(name.clone(), m.clone());
        }
        if is_kept {
            models.insert(name, m);
        }
    }
    // 2. Fold identical variants into aliases.
    fold_variants(&mut models);
    // 3. Overlay.
    apply_overlay(
        &mut models,
        &from_entries,
        overlay,
        overlay_file,
        litellm_file,
    )?;
    // 4. Write.
    let table = PriceTable {
        pricing_date: overlay.file_date.clone(),
        source: overlay.source(),
        providers: overlay.providers.clone(),
        models,
        warnings: Vec::new(),
    };
    Ok(Imported {
        toml: render_table(&table, &overlay.litellm_version),
        filtered_json,
        models: table.models.len(),
        warnings: read.warnings,
    })
}

/// The LiteLLM entries kept: a kept provider's chat/responses/completion entries, and those
/// an overlay model is built `from`.
fn kept_entries(
    obj: &serde_json::Map<String, serde_json::Value>,
    overlay: &Overlay,
    wanted_from: &[&str],
) -> serde_json::Map<String, serde_json::Value> {
    let mut kept = serde_json::Map::new();
    for (name, entry) in obj {
        let provider = entry.get("litellm_provider").and_then(|v| v.as_str());
        let mode = entry.get("mode").and_then(|v| v.as_str());
        let of_kept_provider =
            provider.is_some_and(|p| overlay.keep_providers.iter().any(|k| k == p));
        let request_mode = mode.is_some_and(|m| LITELLM_MODES.contains(&m));
        if (of_kept_provider && request_mode) || wanted_from.contains(&name.as_str()) {
            kept.insert(name.clone(), entry.clone());
        }
    }
    kept
}

/// Fold each dated or provider-prefixed variant identical to its base model into the base's
/// aliases ([`fold_target`]).
fn fold_variants(models: &mut BTreeMap<String, ModelPrice>) {
    let names: Vec<String> = models.keys().cloned().collect();
    for name in names {
        let Some(base) = fold_target(&name, models) else {
            continue;
        };
        if let Some(m) = models.remove(&name) {
            if let Some(b) = models.get_mut(&base) {
                b.aliases.push(name);
                b.aliases.extend(m.aliases);
            }
        }
    }
}

/// Merge each overlay model's fields over its kept entry (or the entry it is built `from`),
/// then sort every model's aliases.
fn apply_overlay(
    models: &mut BTreeMap<String, ModelPrice>,
    from_entries: &BTreeMap<String, ModelPrice>,
    overlay: &Overlay,
    overlay_file: &str,
    litellm_file: &str,
) -> Result<(), ImportError> {
    for (name, o) in &overlay.models {
        let base = match &o.from {
            Some(f) => from_entries
                .get(f)
                .cloned()
                .ok_or_else(|| ImportError::Overlay {
                    file: overlay_file.to_string(),
                    location: format!("models.\"{name}\".from"),
                    message: format!(
                        "`{f}` is not a chat/responses/completion entry of {litellm_file}"
                    ),
                })?,
            None => models
                .get(name)
                .cloned()
                .ok_or_else(|| ImportError::Overlay {
                    file: overlay_file.to_string(),
                    location: format!("models.\"{name}\""),
                    message: format!(
                        "not a kept entry of {litellm_file}; name its LiteLLM entry with `from`"
                    ),
                })?,
        };
        let mut m = base;
        m.merge_over(o.fields.clone());
        models.insert(name.clone(), m);
    }
    for m in models.values_mut() {
        m.aliases.sort();
        m.aliases.dedup();
    }
    Ok(())
}

/// The model `name` folds into: the same name without a date suffix or a `gemini/` /
/// `vertex_ai/` prefix, when that model is kept and identical but for aliases.
fn fold_target(name: &str, models: &BTreeMap<String, ModelPrice>) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    let undated = strip_date_suffix(&lower);
    let unprefixed = lower
        .strip_prefix("gemini/")
        .or_else(|| lower.strip_prefix("vertex_ai/"))
        .map(str::to_string);
    let me = models.get(name)?;
    [Some(undated), unprefixed]
        .into_iter()
        .flatten()
        .filter(|b| b != &lower)
        .find(|b| {
            models.get(b).is_some_and(|other| {
                let mut a = me.clone();
                let mut o = other.clone();
                a.aliases.clear();
                o.aliases.clear();
                a == o
            })
        })
}

/// `{` + one `"name": {...}` per line + `}`: small diffs when LiteLLM changes one entry.
fn one_entry_per_line(entries: &serde_json::Map<String, serde_json::Value>) -> String {
    let mut s = String::from("{\n");
    let n = entries.len();
    for (i, (k, v)) in entries.iter().enumerate() {
        let key = serde_json::Value::String(k.clone()).to_string();
        let _ = write!(s, "{key}: {v}");
        s.push_str(if i + 1 < n { ",\n" } else { "\n" });
    }
    s.push_str("}\n");
    s
}

fn toml_str(s: &str) -> String {
    // A JSON string literal is a valid TOML basic string for the text a name holds.
    serde_json::Value::String(s.to_string()).to_string()
}

/// Prices per 1M tokens as TOML floats (`3.0`, `0.125`).
fn toml_f64(x: f64) -> String {
    format!("{x:?}")
}

fn render_table(t: &PriceTable, version: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# GENERATED by `compaction-sim pricing import` from LiteLLM {version}'s\n\
         # model_prices_and_context_window.json and src/data/pricing-overlay.toml: do not edit by\n\
         # hand, change the overlay (or the pinned LiteLLM version) and run the import again\n\
         # (docs/pricing.md \"Prices\"). A test checks this file is what the import\n\
         # produces from tests/fixtures/cost/litellm-{version}-kept.json.\n\
         #\n\
         # USD per 1,000,000 tokens, standard tier. Per model: provider (selects [providers]\n\
         # caching rules), input, cached_input (cache reads), cache_write (5-minute cache writes),\n\
         # cache_write_1h (1-hour cache writes), output, context_window (largest prompt),\n\
         # tiers (rates for the WHOLE request above `above_prompt_tokens`), aliases,\n\
         # min_cache_tokens (smallest cacheable prompt). A missing input or output price means\n\
         # \"not known\": never costed at $0, the cost columns are marked incomplete instead.\n"
    );
    let _ = writeln!(s, "pricing_date = {}", toml_str(&t.pricing_date));
    let _ = writeln!(s, "source = {}", toml_str(&t.source));
    for (name, p) in &t.providers {
        let _ = writeln!(s, "\n[providers.{}]", toml_str(name));
        let _ = writeln!(s, "cache_ttl_s = {}", toml_f64(p.cache_ttl_s));
        let _ = writeln!(s, "min_cache_tokens = {}", p.min_cache_tokens);
        let _ = writeln!(s, "cache_block_tokens = {}", p.cache_block_tokens);
        let _ = writeln!(s, "cache_write_charged = {}", p.cache_write_charged);
    }
    for (name, m) in &t.models {
        let key = toml_str(name);
        let _ = writeln!(s, "\n[models.{key}]");
        if let Some(p) = &m.provider {
            let _ = writeln!(s, "provider = {}", toml_str(p));
        }
        for (k, v) in m.named_prices() {
            if let Some(v) = v {
                let _ = writeln!(s, "{k} = {}", toml_f64(v));
            }
        }
        if let Some(w) = m.context_window {
            let _ = writeln!(s, "context_window = {w}");
        }
        if let Some(n) = m.min_cache_tokens {
            let _ = writeln!(s, "min_cache_tokens = {n}");
        }
        if !m.aliases.is_empty() {
            let list: Vec<String> = m.aliases.iter().map(|a| toml_str(a)).collect();
            let _ = writeln!(s, "aliases = [{}]", list.join(", "));
        }
        for tier in &m.tiers {
            let _ = writeln!(s, "[[models.{key}.tiers]]");
            let _ = writeln!(s, "above_prompt_tokens = {}", tier.above_prompt_tokens);
            let _ = writeln!(s, "input = {}", toml_f64(tier.input));
            for (k, v) in [
                ("cached_input", tier.cached_input),
                ("cache_write", tier.cache_write),
                ("cache_write_1h", tier.cache_write_1h),
            ] {
                if let Some(v) = v {
                    let _ = writeln!(s, "{k} = {}", toml_f64(v));
                }
            }
            let _ = writeln!(s, "output = {}", toml_f64(tier.output));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::pricing::BUILTIN_PRICING;

    fn fixture(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/cost")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn shipped_table_is_what_the_import_makes_of_the_pinned_file() {
        let overlay = Overlay::parse("overlay", BUILTIN_OVERLAY).expect("overlay parses");
        let name = format!("litellm-{}-kept.json", overlay.litellm_version);
        let text = fixture(&name);
        let got = import(&name, &text, "overlay", &overlay).expect("imports");
        assert!(got.warnings.is_empty(), "{:?}", got.warnings);
        // The fixture is the import's own filtered copy: filtering it again changes nothing.
        assert_eq!(got.filtered_json, text, "fixture is not a filtered copy");
        if got.toml != BUILTIN_PRICING {
            let first = got
                .toml
                .lines()
                .zip(BUILTIN_PRICING.lines())
                .position(|(a, b)| a != b);
            panic!(
                "src/data/pricing.toml is not what `pricing import` makes of {name} \
                 (first differing line: {first:?}); run the import again"
            );
        }
    }

    #[test]
    fn the_pinned_file_as_pricing_file_changes_no_builtin_entry() {
        // `--pricing` and the import read LiteLLM the same way: bringing the very file the
        // table was made from changes no price, window, minimum, tier or alias.
        let overlay = Overlay::parse("overlay", BUILTIN_OVERLAY).unwrap();
        let name = format!("litellm-{}-kept.json", overlay.litellm_version);
        let before = PriceTable::builtin();
        let mut after = before.clone();
        after.apply_file(&name, &fixture(&name)).unwrap();
        assert!(after.warnings.is_empty(), "{:?}", after.warnings);
        for (k, m) in &before.models {
            assert_eq!(&after.models[k], m, "{k}");
        }
    }

    fn overlay(extra: &str) -> Overlay {
        Overlay::parse(
            "o.toml",
            &format!(
                "litellm_version = \"9.9.9\"\nfile_date = \"2026-01-02\"\n\
                 keep_providers = [\"openai\", \"anthropic\"]\n{extra}"
            ),
        )
        .unwrap()
    }

    const FILE: &str = r#"{
      "sample_spec": {"mode": "one of: chat, embedding"},
      "gpt-x": {"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 1e-06,
                "output_cost_per_token": 2e-06, "max_input_tokens": 1000, "max_tokens": 10},
      "gpt-x-2025-01-01": {"litellm_provider": "openai", "mode": "chat",
                "input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06,
                "max_input_tokens": 1000},
      "gpt-x-2024-01-01": {"litellm_provider": "openai", "mode": "chat",
                "input_cost_per_token": 5e-06, "output_cost_per_token": 2e-06},
      "text-embedding-x": {"litellm_provider": "openai", "mode": "embedding",
                "input_cost_per_token": 1e-07},
      "azure/gpt-x": {"litellm_provider": "azure", "mode": "chat", "input_cost_per_token": 1e-06},
      "anthropic.claude-old-v1:0": {"litellm_provider": "bedrock", "mode": "chat",
                "input_cost_per_token": 1.5e-05, "output_cost_per_token": 7.5e-05,
                "max_input_tokens": 200000}
    }"#;

    #[test]
    fn keeps_request_modes_of_kept_providers_and_folds_identical_snapshots() {
        let got = import("f.json", FILE, "o.toml", &overlay("")).unwrap();
        let (t, _) = PriceTable::parse_toml("gen", &got.toml).unwrap();
        // gpt-x-2025-01-01 is identical to gpt-x: an alias; gpt-x-2024-01-01 costs more: kept.
        assert_eq!(
            t.models.keys().collect::<Vec<_>>(),
            ["gpt-x", "gpt-x-2024-01-01"]
        );
        assert_eq!(t.models["gpt-x"].aliases, ["gpt-x-2025-01-01"]);
        assert_eq!(t.models["gpt-x"].input, Some(1.0));
        assert_eq!(t.models["gpt-x"].context_window, Some(1000));
        // No max_tokens fallback.
        assert_eq!(t.models["gpt-x-2024-01-01"].context_window, None);
        assert_eq!(t.pricing_date, "2026-01-02");
        assert!(
            t.source.starts_with("LiteLLM 9.9.9 (PyPI litellm==9.9.9"),
            "{}",
            t.source
        );
        // The filtered copy holds exactly the kept entries.
        let f: serde_json::Value = serde_json::from_str(&got.filtered_json).unwrap();
        assert_eq!(
            f.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["gpt-x", "gpt-x-2025-01-01", "gpt-x-2024-01-01"]
        );
    }

    #[test]
    fn overlay_merges_fields_and_builds_from_named_entries() {
        let o = overlay(
            "[providers.openai]\ncache_ttl_s = 300\ncache_block_tokens = 128\n\
             [models.\"gpt-x\"]\naliases = [\"gx\"]\ncontext_window = 5000\n\
             [models.\"claude-old\"]\nfrom = \"anthropic.claude-old-v1:0\"\naliases = [\"old\"]\n",
        );
        let got = import("f.json", FILE, "o.toml", &o).unwrap();
        let (t, _) = PriceTable::parse_toml("gen", &got.toml).unwrap();
        let x = &t.models["gpt-x"];
        assert_eq!(x.context_window, Some(5000));
        assert_eq!(x.aliases, ["gpt-x-2025-01-01", "gx"]);
        assert_eq!(x.output, Some(2.0));
        let old = &t.models["claude-old"];
        assert_eq!(old.provider.as_deref(), Some("anthropic"));
        assert_eq!((old.input, old.output), (Some(15.0), Some(75.0)));
        assert_eq!(t.providers["openai"].cache_block_tokens, 128);
        // The `from` entry is in the filtered copy, so the import can be rerun from it.
        assert!(got.filtered_json.contains("anthropic.claude-old-v1:0"));
        let again = import("f2.json", &got.filtered_json, "o.toml", &o).unwrap();
        assert_eq!(again.toml, got.toml);
    }

    #[test]
    fn overlay_naming_a_missing_model_is_an_error_naming_it() {
        let e = import(
            "f.json",
            FILE,
            "o.toml",
            &overlay("[models.\"gpt-y\"]\ninput = 1.0\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("o.toml: models.\"gpt-y\": not a kept entry of f.json"),
            "{e}"
        );
        let e = import(
            "f.json",
            FILE,
            "o.toml",
            &overlay("[models.\"gpt-y\"]\nfrom = \"nope\"\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("o.toml: models.\"gpt-y\".from: `nope`"),
            "{e}"
        );
        // A misspelled field is an error, not silently ignored judgement.
        let e = Overlay::parse(
            "o.toml",
            "litellm_version = \"1\"\nfile_date = \"d\"\nkeep_providers = []\n\
             [models.\"gpt-x\"]\ninptu = 1.0\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("o.toml: models.\"gpt-x\": unknown field `inptu`"),
            "{e}"
        );
    }
}
