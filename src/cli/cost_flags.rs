//! The cost flags `replay` and `sweep` share (`#[command(flatten)] cost: CostFlags`), and
//! turning them into a [`CostModel`]: files are read here, at the CLI edge.

use crate::cost::caching::{price_single, CacheMode};
use crate::cost::client::ClientMode;
use crate::cost::compute::CostModel;
use crate::cost::latency::LatencyTable;
use crate::cost::pricing::PriceTable;
use crate::summarize::live::{self, LiveError, LiveOptions};
use crate::summarize::python::{self, PythonOptions};
use crate::summarize::SummarizerSpec;
use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Where `python:` summarizers run (`replay`, `sweep`).
#[derive(Debug, Clone, Default, Args)]
pub struct PythonFlags {
    /// Python with google-adk for `python:` summarizers (default: $COMPACTION_SIM_PYTHON,
    /// else python3).
    #[arg(long, value_name = "PY")]
    pub python: Option<String>,
    /// The target's package folder: a `python:.dotted.path` is relative to it, as in the
    /// manifest's `summarizer=".summarizers.terse"`.
    #[arg(long, value_name = "DIR")]
    pub package: Option<PathBuf>,
}

impl PythonFlags {
    /// Start the Python workers of a `python:` summarizer, so a missing interpreter, a
    /// missing google-adk or a reference that does not import is one line before any replay.
    pub fn start(&self, spec: &SummarizerSpec, timeout: Duration) -> anyhow::Result<()> {
        let SummarizerSpec::Python(reference) = spec else {
            return Ok(());
        };
        let opts = PythonOptions {
            python: python::interpreter(self.python.as_deref()),
            package: self.package.clone(),
            timeout,
        };
        let pool = python::start(reference, &opts)?;
        let v = &pool.handshake.adk_version;
        if format!("google-adk=={v}") != python::ADK_REQUIREMENT {
            errln!(
                "warning: {} has google-adk {v}; the simulator follows {}",
                opts.python,
                python::ADK_REQUIREMENT
            );
        }
        Ok(())
    }
}

/// How `live:PROVIDER/MODEL` summarizers call their API (`replay`, `sweep`, `merge`). Keys
/// come from the environment only (GEMINI_API_KEY or GOOGLE_API_KEY, OPENAI_API_KEY,
/// ANTHROPIC_API_KEY).
#[derive(Debug, Clone, Args)]
pub struct LiveFlags {
    /// Base URL of the API for `live:` summarizers, e.g. a vLLM, Ollama or LiteLLM server's
    /// `http://127.0.0.1:8000/v1` (default: $OPENAI_BASE_URL or $ANTHROPIC_BASE_URL, else
    /// the provider's own).
    #[arg(long, value_name = "URL")]
    pub live_base_url: Option<String>,
    /// Folder of cached live summaries, one file per (provider, model, prompt) [default:
    /// live/ in the token-count cache folder; --no-cache does not turn it off].
    #[arg(long, value_name = "DIR")]
    pub live_cache: Option<PathBuf>,
    /// Live summarizer calls in flight at once.
    #[arg(long, value_name = "N", default_value_t = live::DEFAULT_CONCURRENCY as u16,
        value_parser = clap::value_parser!(u16).range(1..=256))]
    pub live_concurrency: u16,
    /// Most live calls made without --yes: the estimate is printed first, and a larger one
    /// is refused (exit 1).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub live_max_calls: u64,
    /// Make the live calls whatever their estimated number and cost.
    #[arg(long)]
    pub yes: bool,
}

impl LiveFlags {
    /// Start the clients of the `live:` summarizers among `specs` (keys and base URL checked
    /// before any replay). `token_cache` is the token-count cache folder, the default home of
    /// the summary cache.
    pub fn start(
        &self,
        specs: &[SummarizerSpec],
        timeout: Duration,
        token_cache: Option<&std::path::Path>,
    ) -> anyhow::Result<Vec<Arc<live::Client>>> {
        let opts = LiveOptions {
            base_url: self.live_base_url.clone(),
            cache_dir: self
                .live_cache
                .clone()
                .or_else(|| live::default_cache_dir(token_cache)),
            concurrency: usize::from(self.live_concurrency),
            timeout,
        };
        let mut started = Vec::new();
        for spec in specs {
            if let SummarizerSpec::Live { provider, model } = spec {
                let c = live::start(*provider, model, &opts)?;
                if opts.cache_dir.is_none() {
                    errln!(
                        "warning: summarizer `live:{}`: no cache folder is known (give --live-cache DIR): every rerun calls the API again",
                        c.target()
                    );
                }
                if !started
                    .iter()
                    .any(|x: &Arc<live::Client>| Arc::ptr_eq(x, &c))
                {
                    started.push(c);
                }
            }
        }
        Ok(started)
    }

    /// Before the first live call: run `dry_run` (the replays, answered by the modelled
    /// summarizer of the same model), print how many calls the real run will make and what
    /// they should cost, and refuse (exit 1) when that is over --live-max-calls without --yes.
    pub fn check_estimate(
        &self,
        clients: &[Arc<live::Client>],
        cost: &CostModel,
        pricing_date: &str,
        dry_run: impl FnOnce() -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        if clients.is_empty() {
            return Ok(());
        }
        for c in clients {
            c.set_dry(true);
        }
        let dry = dry_run();
        let estimates: Vec<live::Estimate> = clients
            .iter()
            .map(|c| match cost.price(&c.model) {
                Some(p) => c.estimate(Some(&|i, o| price_single(i, o, p))),
                None => c.estimate(None),
            })
            .collect();
        for c in clients {
            c.set_dry(false);
        }
        dry?;
        let mut calls = 0;
        let mut usd = Some(0.0);
        for (c, e) in clients.iter().zip(&estimates) {
            calls += e.calls;
            usd = usd.zip(e.usd).map(|(a, b)| a + b);
            errln!(
                "summarizer `live:{}`: {} calls to make ({} spans already cached), about {} input + {} output tokens, {}",
                super::term(&c.target()),
                e.calls,
                e.cached,
                e.input_tokens,
                e.output_tokens,
                match e.usd {
                    Some(u) => format!("about ${u:.4} at the table's prices of {pricing_date}"),
                    None => format!("cost unknown: `{}` has no price in the table", super::term(&c.model)),
                }
            );
        }
        errln!("(an estimate, from a dry replay: cached summaries are used as they are, every other span is answered by the modelled summarizer of the same model and counted once per distinct prompt, or for a rolling summary seeded by a summary not yet written, once per session, seed and span; input tokens counted with the run's tokenizer, output from the latency table's length model)");
        let cost_text = usd.map_or("cost unknown".to_string(), |u| format!("${u:.4}"));
        if calls > self.live_max_calls && !self.yes {
            return Err(LiveError::TooManyCalls {
                calls,
                max: self.live_max_calls,
                cost: cost_text,
            }
            .into());
        }
        Ok(())
    }
}

/// How a grid's summarizers run (`sweep`, `merge`): where `python:` ones run, how `live:`
/// ones call, and the time limit of one call.
#[derive(Debug, Clone, Args)]
pub struct GridSummarizerFlags {
    #[command(flatten)]
    pub python: PythonFlags,
    #[command(flatten)]
    pub live: LiveFlags,
    /// Seconds a `command:`, `python:` or `live:` summarizer call may run before it counts
    /// as failed (above 0, at most a day).
    #[arg(long, value_name = "S", default_value_t = 60.0, value_parser = parse_timeout_seconds)]
    pub summarizer_timeout: f64,
}

impl GridSummarizerFlags {
    /// Start the workers of the grid's `python:` summarizers and the clients of its `live:`
    /// ones, before any replay. `token_cache` is the token-count cache folder (the summary
    /// cache's default home). Returns the call time limit and the live clients.
    pub fn start(
        &self,
        summarizers: &[String],
        token_cache: Option<&std::path::Path>,
    ) -> anyhow::Result<(Duration, Vec<Arc<live::Client>>)> {
        let timeout = check_timeout(self.summarizer_timeout)
            .map_err(|e| anyhow::anyhow!("--summarizer-timeout: {e}"))?;
        let mut specs = Vec::new();
        for s in summarizers {
            let spec = SummarizerSpec::parse(s).map_err(anyhow::Error::msg)?;
            self.python.start(&spec, timeout)?;
            specs.push(spec);
        }
        Ok((timeout, self.live.start(&specs, timeout, token_cache)?))
    }
}

/// After the run: what the live clients really did, and summaries the cache could not keep.
pub fn report_live(clients: &[Arc<live::Client>], quiet: bool) -> anyhow::Result<()> {
    for c in clients {
        if !quiet {
            outln!(
                "summarizer `live:{}`: {} requests sent, {} summaries read from the cache",
                super::term(&c.target()),
                c.requests(),
                c.cache_hits()
            );
        }
        let errors = c.cache_errors();
        if let Some(first) = errors.first() {
            errln!(
                "warning: summarizer `live:{}`: {} summaries could not be cached (first: {})",
                super::term(&c.target()),
                errors.len(),
                super::term(first)
            );
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Args)]
pub struct CostFlags {
    /// The agent's model for pricing and latency (default: the model the transcript names).
    #[arg(long)]
    pub model: Option<String>,
    /// Who writes summaries: agent, model:NAME, terse, command:PROGRAM [ARGS], python:REF
    /// (your BaseEventsSummarizer: path/file.py:NAME, package.module:NAME or .dotted.path),
    /// live:PROVIDER/MODEL (gemini, openai or anthropic, called with ADK's prompt), fixed:N,
    /// ratio:R, echo[:N] or none.
    #[arg(long, default_value = "agent")]
    pub summarizer: String,
    /// Seconds a `command:`, `python:` or `live:` summarizer call may run before it counts
    /// as failed (above 0, at most a day).
    #[arg(long, default_value_t = 60.0, value_parser = parse_timeout_seconds)]
    pub summarizer_timeout: f64,
    #[command(flatten)]
    pub python: PythonFlags,
    #[command(flatten)]
    pub live: LiveFlags,
    /// `waits` (the next turn starts after the summary) or `streams` (at its recorded time;
    /// a summary still being written then is discarded).
    #[arg(long, default_value = "waits")]
    pub client: String,
    /// Extra or replacement prices: our TOML shape, or LiteLLM's
    /// model_prices_and_context_window.json (its entries merge over the built-in ones;
    /// malformed entries are skipped with a warning).
    #[arg(long, value_name = "FILE")]
    pub pricing: Option<PathBuf>,
    /// Latency parameters (the file `calibrate` writes, or the same shape by hand).
    #[arg(long, value_name = "FILE")]
    pub latency: Option<PathBuf>,
    /// Price every prompt token at the input rate (no prompt caching).
    #[arg(long)]
    pub no_cache: bool,
}

impl CostFlags {
    /// Prices, latency and caching, with the user's files applied.
    pub fn cost_model(&self) -> anyhow::Result<CostModel> {
        let mut prices = PriceTable::builtin();
        if let Some(p) = &self.pricing {
            let name = p.display().to_string();
            let text = crate::atomic::read_capped(p, crate::atomic::MAX_CONFIG_BYTES)
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            prices.apply_file(&name, &text)?;
            for w in &prices.warnings {
                errln!("warning: {w}");
            }
        }
        let mut latency = LatencyTable::builtin();
        if let Some(p) = &self.latency {
            let name = p.display().to_string();
            let text = crate::atomic::read_capped(p, crate::atomic::MAX_CONFIG_BYTES)
                .map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            latency.apply_file(&name, &text)?;
        }
        let model = CostModel {
            prices,
            latency,
            cache: if self.no_cache {
                CacheMode::Off
            } else {
                CacheMode::On
            },
        };
        // Names the user typed must exist (near names listed); recorded names may be unpriced.
        if let Some(m) = &self.model {
            model.check_model(m)?;
        }
        if let SummarizerSpec::Model(m) = self.summarizer_spec()? {
            model.check_model(&m)?;
        }
        Ok(model)
    }

    pub fn summarizer_spec(&self) -> anyhow::Result<SummarizerSpec> {
        SummarizerSpec::parse(&self.summarizer).map_err(|e| anyhow::anyhow!("--summarizer: {e}"))
    }

    pub fn client_mode(&self) -> anyhow::Result<ClientMode> {
        self.client
            .parse::<ClientMode>()
            .map_err(|e| anyhow::anyhow!("--client: {e}"))
    }

    pub fn command_timeout(&self) -> anyhow::Result<Duration> {
        check_timeout(self.summarizer_timeout)
            .map_err(|e| anyhow::anyhow!("--summarizer-timeout: {e}"))
    }

    /// Start the Python workers of a `python:` summarizer (see [`PythonFlags::start`]).
    pub fn start_python(&self, spec: &SummarizerSpec) -> anyhow::Result<()> {
        self.python.start(spec, self.command_timeout()?)
    }

    /// The agent model of a session: `--model`, else the one the transcript names.
    pub fn agent_model<'a>(&'a self, session_model: Option<&'a str>) -> Option<&'a str> {
        self.model.as_deref().or(session_model)
    }
}

/// Longest timeout a duration flag accepts: a day. Longer waits are typos (`1e20`), and
/// a bound keeps deadline arithmetic (`Instant + Duration`) far from overflow.
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// A duration flag's value that is not a usable number of seconds.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DurationFlagError {
    #[error("`{0}` is not a number of seconds")]
    NotANumber(String),
    #[error("{0} s is out of range: expected a finite number of seconds above 0 and at most {MAX_TIMEOUT_S} (a day)")]
    OutOfRange(f64),
}

/// A timeout in seconds: finite, above 0, at most [`MAX_TIMEOUT_S`].
pub fn check_timeout(s: f64) -> Result<Duration, DurationFlagError> {
    if !(s.is_finite() && s > 0.0 && s <= MAX_TIMEOUT_S) {
        return Err(DurationFlagError::OutOfRange(s));
    }
    Duration::try_from_secs_f64(s).map_err(|_| DurationFlagError::OutOfRange(s))
}

/// clap value parser for timeout flags (a usage error naming the flag when out of range).
pub fn parse_timeout_seconds(text: &str) -> Result<f64, DurationFlagError> {
    let s: f64 = text
        .trim()
        .parse()
        .map_err(|_| DurationFlagError::NotANumber(text.to_string()))?;
    check_timeout(s)?;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        cost: CostFlags,
    }

    fn flags(args: &[&str]) -> CostFlags {
        let mut v = vec!["t"];
        v.extend_from_slice(args);
        T::parse_from(v).cost
    }

    fn err(args: &[&str]) -> String {
        let e = flags(args).cost_model().unwrap_err().to_string();
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn defaults_are_agent_waits_with_cache() {
        let f = flags(&[]);
        assert_eq!(f.summarizer_spec().unwrap(), SummarizerSpec::Agent);
        assert_eq!(f.client_mode().unwrap(), ClientMode::Waits);
        assert_eq!(f.cost_model().unwrap().cache, CacheMode::On);
        assert_eq!(
            flags(&["--no-cache"]).cost_model().unwrap().cache,
            CacheMode::Off
        );
    }

    #[test]
    fn unknown_models_list_near_names() {
        let e = err(&["--model", "gpt-4.1-mni"]);
        assert!(
            e.starts_with("unknown model `gpt-4.1-mni` (did you mean: gpt-4.1-mini"),
            "{e}"
        );
        let e = err(&["--summarizer", "model:gemini-2.5-flash-lte"]);
        assert!(e.contains("did you mean: gemini-2.5-flash-lite"), "{e}");
    }

    #[test]
    fn bad_files_are_one_line_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("prices.toml");
        std::fs::write(&p, "[models.\"x\"]\ninput = \"free\"\n").unwrap();
        let e = err(&["--pricing", p.to_str().unwrap()]);
        assert!(e.starts_with(&format!("{}: line 2:", p.display())), "{e}");
        let l = dir.path().join("lat.toml");
        std::fs::write(
            &l,
            "[models.x]\nttft_s = -1.0\nprefill_tokens_per_s = 1.0\ndecode_tokens_per_s = 1.0\n",
        )
        .unwrap();
        let e = err(&["--latency", l.to_str().unwrap()]);
        assert_eq!(
            e,
            format!(
                "{}: models.\"x\": ttft_s must be >= 0 and the rates > 0",
                l.display()
            )
        );
        let e = err(&["--pricing", "/no/such/prices.json"]);
        assert!(e.starts_with("/no/such/prices.json: "), "{e}");
    }

    #[test]
    fn bad_spellings() {
        assert!(flags(&["--client", "stream"])
            .client_mode()
            .unwrap_err()
            .to_string()
            .starts_with("--client: unknown client mode `stream`"));
        assert!(flags(&["--summarizer", "gpt"])
            .summarizer_spec()
            .unwrap_err()
            .to_string()
            .starts_with("--summarizer: unknown summarizer `gpt`"));
    }

    #[test]
    fn timeout_flag_range_is_checked_by_clap() {
        for bad in ["0", "-1", "1e20", "NaN", "inf", "86401", "soon"] {
            let e = T::try_parse_from(["t", &format!("--summarizer-timeout={bad}")])
                .err()
                .map(|e| e.to_string());
            assert!(
                e.as_deref()
                    .is_some_and(|e| e.contains("--summarizer-timeout")
                        && e.lines().next().is_some_and(|l| l.contains(bad))),
                "{bad}: {e:?}"
            );
        }
        let f = flags(&["--summarizer-timeout", "86400"]);
        assert_eq!(f.command_timeout().unwrap(), Duration::from_secs(86_400));
        // Set without clap (as a library caller may), the range check still holds.
        let mut f = flags(&[]);
        f.summarizer_timeout = 1e20;
        assert!(f.command_timeout().is_err());
    }

    #[test]
    fn litellm_file_extends_the_table() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("model_prices_and_context_window.json");
        std::fs::write(&p, r#"{"claude-opus-4-6": {"litellm_provider": "anthropic", "input_cost_per_token": 5e-06, "output_cost_per_token": 2.5e-05}}"#).unwrap();
        let m = flags(&[
            "--pricing",
            p.to_str().unwrap(),
            "--model",
            "claude-opus-4-6",
        ])
        .cost_model()
        .unwrap();
        assert_eq!(m.check_model("claude-opus-4-6").unwrap(), "claude-opus-4-6");
        assert!(m.check_model("gpt-5").is_ok());
    }
}
