//! The cost flags `replay` and `sweep` share (`#[command(flatten)] cost: CostFlags`), and
//! turning them into a [`CostModel`]: files are read here, at the CLI edge.

use crate::cost::caching::CacheMode;
use crate::cost::client::ClientMode;
use crate::cost::compute::CostModel;
use crate::cost::latency::LatencyTable;
use crate::cost::pricing::PriceTable;
use crate::cost::summarizers::SummarizerSpec;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Args)]
pub struct CostFlags {
    /// The agent's model for pricing and latency (default: the model the transcript names).
    #[arg(long)]
    pub model: Option<String>,
    /// Who writes summaries: agent, model:NAME, terse, command:PROGRAM [ARGS], fixed:N,
    /// ratio:R, echo[:N] or none.
    #[arg(long, default_value = "agent")]
    pub summarizer: String,
    /// Seconds a `command:` summarizer may run before the call counts as failed.
    #[arg(long, default_value_t = 60.0)]
    pub summarizer_timeout: f64,
    /// `waits` (the next turn starts after the summary) or `streams` (at its recorded time;
    /// a summary still being written then is discarded).
    #[arg(long, default_value = "waits")]
    pub client: String,
    /// Extra or replacement prices: our TOML shape or LiteLLM's JSON.
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
            let text = std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            prices.apply_file(&name, &text)?;
        }
        let mut latency = LatencyTable::builtin();
        if let Some(p) = &self.latency {
            let name = p.display().to_string();
            let text = std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
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
        if !(self.summarizer_timeout.is_finite() && self.summarizer_timeout > 0.0) {
            anyhow::bail!("--summarizer-timeout: must be a positive number of seconds");
        }
        Ok(Duration::from_secs_f64(self.summarizer_timeout))
    }

    /// The agent model of a session: `--model`, else the one the transcript names.
    pub fn agent_model<'a>(&'a self, session_model: Option<&'a str>) -> Option<&'a str> {
        self.model.as_deref().or(session_model)
    }
}
