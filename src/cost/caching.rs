//! Prompt caching and size tiers: the price of a sequence of model requests.
//!
//! Rules ("Prompt caching" in metrics.md; docs/pricing.md "Prompt caching"):
//! - A request reads from the cache the prefix it shares with the previous request
//!   (`shared_prefix_tokens`, which the replay computes: fixed overhead + the history items
//!   before the first one that changed), if it arrives within the provider's cache lifetime
//!   of that request and the prefix is at least the provider's minimum cacheable size.
//!   A compaction rewrites the prompt from the summary's position on, so the shared prefix
//!   stops there.
//! - Models with a cache-write price (Anthropic's, and OpenAI's that have one, such as
//!   gpt-5.6), and providers whose rules say writes are charged, bill the rest of a cacheable
//!   prompt at the cache-write rate (the client marks the end of the prompt as a breakpoint,
//!   as Claude Code does); the others bill it at the input rate.
//! - Anthropic's 1-hour cache: where the transcript records that a request's writes had the
//!   1-hour lifetime (Claude Code `ephemeral_1h_input_tokens`), that share of the writes costs
//!   the 1-hour write rate (2x input unless the table says otherwise) and the prefix it wrote
//!   stays readable for an hour.
//! - Tiers: a request whose prompt is above a tier's threshold pays that tier's rates for all
//!   its tokens (input, cached, writes and output).

use super::pricing::{ModelPrice, ProviderCache};

/// One model request as the cost model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PricedRequest {
    /// Seconds (any origin); only differences matter.
    pub time_s: f64,
    /// Whole prompt, tokens (fixed overhead included).
    pub prompt_tokens: u64,
    /// Tokens at the start of this prompt identical to the start of the previous request's
    /// prompt (0 for the first request).
    pub shared_prefix_tokens: u64,
    pub output_tokens: u64,
    /// Share (0..=1) of this request's cache writes made with the 1-hour lifetime, as the
    /// transcript recorded for it; 0 for the usual 5-minute cache.
    pub write_1h_share: f64,
}

/// Lifetime of a prefix written with Anthropic's 1-hour cache.
pub const ONE_HOUR_TTL_S: f64 = 3600.0;

/// How one request was billed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Charge {
    pub cached_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Of `cache_write_tokens`, those written with the 1-hour lifetime.
    pub cache_write_1h_tokens: u64,
    pub uncached_input_tokens: u64,
    pub output_tokens: u64,
    /// The tier threshold this request crossed, if any.
    pub tier_above: Option<u64>,
    /// `None` when the model has no price.
    pub usd: Option<f64>,
}

/// Whether cached rates are used (`--no-cache` turns them off).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    #[default]
    On,
    Off,
}

/// Price requests made in order on one model. Caching applies only if `mode` is `On` and the
/// price entry has a cached rate.
pub fn price_requests(
    reqs: &[PricedRequest],
    price: &ModelPrice,
    rules: &ProviderCache,
    mode: CacheMode,
) -> Vec<Charge> {
    let mut pricer = Pricer::new(price, rules, mode);
    reqs.iter().map(|&r| pricer.charge(r)).collect()
}

/// [`price_requests`] one request at a time: the metrics price a long session's requests in
/// the pass that reads them, with no list of rows or charges in between.
#[derive(Debug, Clone)]
pub struct Pricer<'a> {
    price: &'a ModelPrice,
    rules: &'a ProviderCache,
    caching: bool,
    writes_charged: bool,
    prev: Option<PricedRequest>,
}

impl<'a> Pricer<'a> {
    pub fn new(price: &'a ModelPrice, rules: &'a ProviderCache, mode: CacheMode) -> Pricer<'a> {
        Pricer {
            price,
            rules,
            caching: mode == CacheMode::On && price.cached_input.is_some(),
            writes_charged: rules.cache_write_charged || price.cache_write.is_some(),
            prev: None,
        }
    }

    /// The charge of request `r`, made after the requests priced so far.
    pub fn charge(&mut self, r: PricedRequest) -> Charge {
        let (price, rules) = (self.price, self.rules);
        let cacheable = self.caching && r.prompt_tokens >= rules.min_cache_tokens;
        let cached = match &self.prev {
            Some(p)
                if cacheable
                    && p.prompt_tokens >= rules.min_cache_tokens
                    && r.time_s - p.time_s <= ttl_after(p, rules) =>
            {
                let shared = r
                    .shared_prefix_tokens
                    .min(p.prompt_tokens)
                    .min(r.prompt_tokens);
                let block = rules.cache_block_tokens.max(1);
                let shared = shared / block * block;
                if shared >= rules.min_cache_tokens {
                    shared
                } else {
                    0
                }
            }
            _ => 0,
        };
        let writes = if cacheable && self.writes_charged {
            r.prompt_tokens - cached
        } else {
            0
        };
        let writes_1h =
            ((writes as f64 * r.write_1h_share.clamp(0.0, 1.0)).round() as u64).min(writes);
        let uncached = r.prompt_tokens - cached - writes;
        let usd_and_tier = price.rates_for(r.prompt_tokens).map(|(rates, tier)| {
            let cached_rate = rates.cached_input.unwrap_or(rates.input);
            let write_rate = rates.cache_write.unwrap_or(rates.input);
            let write_1h_rate = rates.cache_write_1h.unwrap_or(2.0 * rates.input);
            let usd = (uncached as f64 * rates.input
                + cached as f64 * cached_rate
                + (writes - writes_1h) as f64 * write_rate
                + writes_1h as f64 * write_1h_rate
                + r.output_tokens as f64 * rates.output)
                / 1e6;
            (usd, tier)
        });
        self.prev = Some(r);
        Charge {
            cached_read_tokens: cached,
            cache_write_tokens: writes,
            cache_write_1h_tokens: writes_1h,
            uncached_input_tokens: uncached,
            output_tokens: r.output_tokens,
            tier_above: usd_and_tier.and_then(|(_, t)| t),
            usd: usd_and_tier.map(|(u, _)| u),
        }
    }
}

/// How long the prefix `p` wrote stays readable: an hour when it was written (even in part)
/// with the 1-hour lifetime, else the provider's lifetime.
fn ttl_after(p: &PricedRequest, rules: &ProviderCache) -> f64 {
    if p.write_1h_share > 0.0 {
        rules.cache_ttl_s.max(ONE_HOUR_TTL_S)
    } else {
        rules.cache_ttl_s
    }
}

/// Price one standalone call (a summarizer call: a fresh prompt, nothing cached).
pub fn price_single(prompt_tokens: u64, output_tokens: u64, price: &ModelPrice) -> Option<f64> {
    let (rates, _) = price.rates_for(prompt_tokens)?;
    Some((prompt_tokens as f64 * rates.input + output_tokens as f64 * rates.output) / 1e6)
}

/// What a session's metrics read from its charges, added up as they are made (a long
/// session's charges would not stay in cache from one pass to the next).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChargeTotals {
    /// Sum of the charges; `None` when a request has no price.
    pub usd: Option<f64>,
    pub cached_read_tokens: u64,
    /// Requests that crossed a tier threshold.
    pub over_tier: u64,
}

impl ChargeTotals {
    /// No charge yet.
    pub fn empty() -> ChargeTotals {
        ChargeTotals {
            // what `Iterator::sum` starts a float sum with
            usd: Some(-0.0),
            cached_read_tokens: 0,
            over_tier: 0,
        }
    }

    /// No price: the sum is unknown however many requests are added.
    pub fn unpriced() -> ChargeTotals {
        ChargeTotals {
            usd: None,
            ..ChargeTotals::empty()
        }
    }

    pub fn add(&mut self, c: &Charge) {
        self.usd = self.usd.zip(c.usd).map(|(a, b)| a + b);
        self.cached_read_tokens += c.cached_read_tokens;
        self.over_tier += u64::from(c.tier_above.is_some());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn totals(charges: &[Charge]) -> ChargeTotals {
        let mut t = ChargeTotals::empty();
        for c in charges {
            t.add(c);
        }
        t
    }

    fn anthropic() -> ProviderCache {
        ProviderCache {
            cache_ttl_s: 300.0,
            min_cache_tokens: 1024,
            cache_block_tokens: 1,
            cache_write_charged: true,
        }
    }
    fn implicit() -> ProviderCache {
        ProviderCache {
            cache_ttl_s: 300.0,
            min_cache_tokens: 1024,
            cache_block_tokens: 1,
            cache_write_charged: false,
        }
    }
    /// $3 in, $0.30 cached, $3.75 write, $15 out per 1M, tier above 200k at 6/0.6/7.5/22.5.
    fn sonnet() -> ModelPrice {
        ModelPrice {
            provider: Some("anthropic".into()),
            input: Some(3.0),
            cached_input: Some(0.3),
            cache_write: Some(3.75),
            cache_write_1h: None,
            output: Some(15.0),
            context_window: Some(1_000_000),
            tiers: vec![super::super::pricing::Tier {
                above_prompt_tokens: 200_000,
                input: 6.0,
                cached_input: Some(0.6),
                cache_write: Some(7.5),
                cache_write_1h: None,
                output: 22.5,
            }],
            aliases: vec![],
            min_cache_tokens: None,
        }
    }
    fn req(t: f64, p: u64, s: u64, o: u64) -> PricedRequest {
        PricedRequest {
            time_s: t,
            prompt_tokens: p,
            shared_prefix_tokens: s,
            output_tokens: o,
            write_1h_share: 0.0,
        }
    }

    #[test]
    fn anthropic_reads_prefix_and_writes_the_rest() {
        // r0: 10,000 prompt, nothing cached: 10,000 written at $3.75/M = $0.0375, 100 out at
        //     $15/M = $0.0015 -> $0.039.
        // r1: 12,000 prompt, 10,000 shared and 60 s later: 10,000 read at $0.30/M = $0.003,
        //     2,000 written at $3.75/M = $0.0075, 100 out = $0.0015 -> $0.012.
        let c = price_requests(
            &[req(0.0, 10_000, 0, 100), req(60.0, 12_000, 10_000, 100)],
            &sonnet(),
            &anthropic(),
            CacheMode::On,
        );
        assert_eq!(
            (
                c[0].cached_read_tokens,
                c[0].cache_write_tokens,
                c[0].uncached_input_tokens
            ),
            (0, 10_000, 0)
        );
        assert!((c[0].usd.unwrap() - 0.039).abs() < 1e-12);
        assert_eq!(
            (c[1].cached_read_tokens, c[1].cache_write_tokens),
            (10_000, 2_000)
        );
        assert!((c[1].usd.unwrap() - 0.012).abs() < 1e-12);
    }

    #[test]
    fn cache_expires_after_ttl() {
        // 301 s > 300 s lifetime: the second request reads nothing and writes all 12,000:
        // 12,000 * 3.75/M = $0.045 + $0.0015 output = $0.0465.
        let c = price_requests(
            &[req(0.0, 10_000, 0, 100), req(301.0, 12_000, 10_000, 100)],
            &sonnet(),
            &anthropic(),
            CacheMode::On,
        );
        assert_eq!(c[1].cached_read_tokens, 0);
        assert!((c[1].usd.unwrap() - 0.0465).abs() < 1e-12);
        // exactly at the lifetime still hits
        let c = price_requests(
            &[req(0.0, 10_000, 0, 0), req(300.0, 12_000, 10_000, 0)],
            &sonnet(),
            &anthropic(),
            CacheMode::On,
        );
        assert_eq!(c[1].cached_read_tokens, 10_000);
    }

    #[test]
    fn compaction_breaks_prefix_at_the_summary() {
        // After a compaction only the fixed overhead (2,000 tokens) is shared: 2,000 read,
        // 4,000 written: 2,000*0.3/M + 4,000*3.75/M = 0.0006 + 0.015 = $0.0156.
        let c = price_requests(
            &[req(0.0, 20_000, 0, 0), req(10.0, 6_000, 2_000, 0)],
            &sonnet(),
            &anthropic(),
            CacheMode::On,
        );
        assert_eq!(
            (c[1].cached_read_tokens, c[1].cache_write_tokens),
            (2_000, 4_000)
        );
        assert!((c[1].usd.unwrap() - 0.0156).abs() < 1e-12);
    }

    #[test]
    fn no_cache_prices_everything_at_input() {
        // 10,000 + 12,000 prompt at $3/M = $0.066; no output.
        let c = price_requests(
            &[req(0.0, 10_000, 0, 0), req(1.0, 12_000, 10_000, 0)],
            &sonnet(),
            &anthropic(),
            CacheMode::Off,
        );
        assert!((totals(&c).usd.unwrap() - 0.066).abs() < 1e-12);
        assert_eq!(c[1].cached_read_tokens + c[1].cache_write_tokens, 0);
    }

    #[test]
    fn implicit_caching_has_no_write_charge_and_rounds_to_blocks() {
        // OpenAI-like: block 128. shared 10,050 -> 9,984 (78 blocks) cached at $0.5/M, the
        // other 2,016 of 12,000 at $2/M: 0.004992 + 0.004032 = $0.009024.
        let gpt41 = ModelPrice {
            input: Some(2.0),
            cached_input: Some(0.5),
            output: Some(8.0),
            ..Default::default()
        };
        let rules = ProviderCache {
            cache_block_tokens: 128,
            ..implicit()
        };
        let c = price_requests(
            &[req(0.0, 10_050, 0, 0), req(5.0, 12_000, 10_050, 0)],
            &gpt41,
            &rules,
            CacheMode::On,
        );
        assert_eq!(
            (
                c[1].cached_read_tokens,
                c[1].cache_write_tokens,
                c[1].uncached_input_tokens
            ),
            (9_984, 0, 2_016)
        );
        assert!((c[1].usd.unwrap() - 0.009024).abs() < 1e-12);
    }

    #[test]
    fn short_prompts_are_not_cached() {
        // 900 < 1,024 minimum: no read, no write; 900 * 3/M = $0.0027.
        let c = price_requests(
            &[req(0.0, 900, 0, 0), req(1.0, 900, 900, 0)],
            &sonnet(),
            &anthropic(),
            CacheMode::On,
        );
        assert_eq!((c[1].cached_read_tokens, c[1].cache_write_tokens), (0, 0));
        assert!((c[1].usd.unwrap() - 0.0027).abs() < 1e-12);
    }

    #[test]
    fn tier_applies_to_the_whole_request() {
        // No caching. 210,000 prompt > 200k: all input at $6/M = $1.26 and 1,000 output at
        // $22.5/M = $0.0225 -> $1.2825. The same request kept at 190,000 tokens: 190,000*3/M
        // = $0.57 + 1,000*15/M = $0.015 -> $0.585. Compaction under the tier saves more than
        // the 20k tokens it removed would suggest at one rate.
        let above = price_requests(
            &[req(0.0, 210_000, 0, 1_000)],
            &sonnet(),
            &anthropic(),
            CacheMode::Off,
        );
        let below = price_requests(
            &[req(0.0, 190_000, 0, 1_000)],
            &sonnet(),
            &anthropic(),
            CacheMode::Off,
        );
        assert_eq!(above[0].tier_above, Some(200_000));
        assert!((above[0].usd.unwrap() - 1.2825).abs() < 1e-12);
        assert_eq!(below[0].tier_above, None);
        assert!((below[0].usd.unwrap() - 0.585).abs() < 1e-12);
    }

    #[test]
    fn unpriced_model_gives_none_not_zero() {
        let c = price_requests(
            &[req(0.0, 1_000, 0, 10)],
            &ModelPrice::default(),
            &implicit(),
            CacheMode::On,
        );
        assert_eq!(c[0].usd, None);
        assert_eq!(totals(&c).usd, None);
        assert_eq!(price_single(1_000, 10, &ModelPrice::default()), None);
    }

    #[test]
    fn model_without_cached_rate_is_priced_without_caching() {
        // 2 requests of 5,000 at $1/M = $0.01 even though the prefix is shared.
        let m = ModelPrice {
            input: Some(1.0),
            output: Some(2.0),
            ..Default::default()
        };
        let c = price_requests(
            &[req(0.0, 5_000, 0, 0), req(1.0, 5_000, 5_000, 0)],
            &m,
            &implicit(),
            CacheMode::On,
        );
        assert!((totals(&c).usd.unwrap() - 0.01).abs() < 1e-12);
    }

    #[test]
    fn writes_are_charged_whenever_the_model_has_a_write_price() {
        // gpt-5.6-like: OpenAI rules (writes not charged by the provider rule, blocks of 128)
        // but a write price of $5/M beside $4/M input. r0: 10,000 written at $5/M = $0.05.
        // r1 60 s later shares 10,000 (78 blocks = 9,984): 9,984 read at $0.40/M = $0.0039936
        // and 2,016 written at $5/M = $0.01008 -> $0.0140736.
        let m = ModelPrice {
            input: Some(4.0),
            cached_input: Some(0.4),
            cache_write: Some(5.0),
            output: Some(24.0),
            ..Default::default()
        };
        let rules = ProviderCache {
            cache_block_tokens: 128,
            ..implicit()
        };
        let c = price_requests(
            &[req(0.0, 10_000, 0, 0), req(60.0, 12_000, 10_000, 0)],
            &m,
            &rules,
            CacheMode::On,
        );
        assert_eq!(
            (c[0].cache_write_tokens, c[0].uncached_input_tokens),
            (10_000, 0)
        );
        assert!((c[0].usd.unwrap() - 0.05).abs() < 1e-12);
        assert_eq!(
            (c[1].cached_read_tokens, c[1].cache_write_tokens),
            (9_984, 2_016)
        );
        assert!((c[1].usd.unwrap() - 0.0140736).abs() < 1e-12);
        // Without a write price the same rules bill those tokens at input: 10,000 * $4/M.
        let plain = ModelPrice {
            cache_write: None,
            ..m
        };
        let c = price_requests(&[req(0.0, 10_000, 0, 0)], &plain, &rules, CacheMode::On);
        assert_eq!(c[0].cache_write_tokens, 0);
        assert!((c[0].usd.unwrap() - 0.04).abs() < 1e-12);
    }

    #[test]
    fn one_hour_writes_cost_the_one_hour_rate_and_live_an_hour() {
        // Sonnet ($3 input, no 1-hour price in the entry: 2x input = $6/M). r0 writes 10,000
        // with the 1-hour lifetime: $0.06. r1 comes 1,800 s later, past the 5-minute lifetime
        // but within the hour: reads 10,000 ($0.003) and writes 2,000 at $6/M ($0.012).
        let one_hour = |t, p, s| PricedRequest {
            write_1h_share: 1.0,
            ..req(t, p, s, 0)
        };
        let c = price_requests(
            &[one_hour(0.0, 10_000, 0), one_hour(1_800.0, 12_000, 10_000)],
            &sonnet(),
            &anthropic(),
            CacheMode::On,
        );
        assert_eq!(c[0].cache_write_1h_tokens, 10_000);
        assert!((c[0].usd.unwrap() - 0.06).abs() < 1e-12);
        assert_eq!(
            (c[1].cached_read_tokens, c[1].cache_write_1h_tokens),
            (10_000, 2_000)
        );
        assert!((c[1].usd.unwrap() - 0.015).abs() < 1e-12);
        // The entry's own 1-hour price wins over 2x input: $10/M -> 10,000 * $10/M = $0.10.
        let priced = ModelPrice {
            cache_write_1h: Some(10.0),
            ..sonnet()
        };
        let c = price_requests(
            &[one_hour(0.0, 10_000, 0)],
            &priced,
            &anthropic(),
            CacheMode::On,
        );
        assert!((c[0].usd.unwrap() - 0.10).abs() < 1e-12);
        // 5-minute writes 1,800 s apart: the cache has expired, all 12,000 are written.
        let c = price_requests(
            &[req(0.0, 10_000, 0, 0), req(1_800.0, 12_000, 10_000, 0)],
            &sonnet(),
            &anthropic(),
            CacheMode::On,
        );
        assert_eq!(
            (c[1].cached_read_tokens, c[1].cache_write_1h_tokens),
            (0, 0)
        );
    }
}
