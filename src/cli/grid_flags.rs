//! The grid's axes and budgets as `sweep` flags, and the grid keys they mirror.

use crate::sweep::grid::{AxisItem, AxisSpec, Budgets, GridSpec};
use clap::Args;

/// The grid axes and budgets as flags (boxed: they would make every `Command` large).
#[derive(Debug, Args)]
pub struct AxisFlags {
    /// Trigger kinds: tokens, invocations, both (comma-separated).
    #[arg(long, value_name = "LIST")]
    pub trigger: Option<String>,
    /// Values or ranges, e.g. `40k..200k:20k` or `40k,80k`.
    #[arg(long, value_name = "LIST")]
    pub after_tokens: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub keep_recent_events: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub after_invocations: Option<String>,
    #[arg(long, value_name = "LIST")]
    pub overlap: Option<String>,
    /// agent, model:NAME, terse, command:PROGRAM, ... (comma-separated or repeated).
    #[arg(long, value_name = "LIST")]
    pub summarizer: Vec<String>,
    /// Agent model(s) to price requests at; `recorded` = each session's own.
    #[arg(long, value_name = "LIST")]
    pub agent_model: Option<String>,
    /// Client mode(s): waits, streams.
    #[arg(long, value_name = "LIST")]
    pub client: Option<String>,
    /// Token counter(s): o200k, cl100k, adk-chars.
    #[arg(long, value_name = "LIST")]
    pub tokenizer: Option<String>,
    /// Caps of the capped-runs alternative, e.g. `10,25,50`: each replays the sessions as
    /// RunConfig(max_llm_calls=N) would have run them.
    #[arg(long, value_name = "LIST")]
    pub max_llm_calls: Option<String>,
    /// Split rules of the split alternative, e.g. `lossless,idle=30m`: each replays every
    /// session cut into independent sessions (docs/alternatives.md "Split").
    #[arg(long, value_name = "LIST")]
    pub split: Option<String>,
    /// Largest acceptable share of broken references (0..1, mean per session) for the
    /// recommendation [default grid: 0.2].
    #[arg(long, value_name = "X")]
    pub budget_broken_references: Option<f64>,
    /// Largest acceptable mean detail lost (0..1: history read only through summaries).
    #[arg(long, value_name = "X")]
    pub budget_detail_lost: Option<f64>,
    /// Largest acceptable summary wait, seconds (p95 over sessions of the longest wait).
    #[arg(long, value_name = "S")]
    pub budget_latency: Option<f64>,
    /// Other frameworks' policies replayed beside the ADK settings (docs/policies.md):
    /// clear-tool-results, mask-observations, claude-code, codex, openhands, langchain,
    /// gemini-cli, turn-summary, hybrid, anthropic-compaction, or all.
    #[arg(long, value_name = "LIST")]
    pub policy: Option<String>,
    /// clear-tool-results: prompt tokens above which old tool results are cleared [100k].
    #[arg(long, value_name = "LIST")]
    pub clear_trigger: Option<String>,
    /// clear-tool-results: newest tool results kept [3].
    #[arg(long, value_name = "LIST")]
    pub clear_keep: Option<String>,
    /// clear-tool-results: clear only when at least this many tokens would be [0].
    #[arg(long, value_name = "LIST")]
    pub clear_at_least: Option<String>,
    /// clear-tool-results: tool names never cleared (one list, not an axis).
    #[arg(long, value_name = "NAMES")]
    pub clear_exclude_tools: Option<String>,
    /// mask-observations: turns whose tool results stay verbatim [10].
    #[arg(long, value_name = "LIST")]
    pub mask_window: Option<String>,
    /// claude-code: CLAUDE_AUTOCOMPACT_PCT_OVERRIDE values, 1..100 [unset].
    #[arg(long, value_name = "LIST")]
    pub pct: Option<String>,
    /// claude-code: its auto-compact window (autoCompactWindow /
    /// CLAUDE_CODE_AUTO_COMPACT_WINDOW), tokens [200k]; not the price table's window.
    #[arg(long, value_name = "LIST")]
    pub cc_window: Option<String>,
    /// codex: auto_compact_token_limit as % of the context window [90].
    #[arg(long, value_name = "LIST")]
    pub codex_pct: Option<String>,
    /// openhands: max_size, events in the view [240].
    #[arg(long, value_name = "LIST")]
    pub openhands_max_size: Option<String>,
    /// openhands: keep_first [2].
    #[arg(long, value_name = "LIST")]
    pub openhands_keep_first: Option<String>,
    /// langchain: triggers auto (deepagents: fraction:0.85, tokens:170000 without a window),
    /// tokens:N, messages:N or fraction:F [auto].
    #[arg(long, value_name = "LIST")]
    pub lc_trigger: Option<String>,
    /// langchain: messages kept [20].
    #[arg(long, value_name = "LIST")]
    pub lc_keep: Option<String>,
    /// gemini-cli: compression threshold, fraction of the window [0.5].
    #[arg(long, value_name = "LIST")]
    pub gemini_threshold: Option<String>,
    /// turn-summary: turns each summary replaces (summarize_every_n_turns n) [21].
    #[arg(long, value_name = "LIST")]
    pub ts_n: Option<String>,
    /// turn-summary: newest turns kept raw (keep_last_m_turns) [10].
    #[arg(long, value_name = "LIST")]
    pub ts_m: Option<String>,
    /// hybrid: turns each summary replaces [43].
    #[arg(long, value_name = "LIST")]
    pub hybrid_n: Option<String>,
    /// hybrid: newest turns kept raw at a summary [10].
    #[arg(long, value_name = "LIST")]
    pub hybrid_m: Option<String>,
    /// hybrid: turns whose observations stay unmasked (last_n_observations n) [10].
    #[arg(long, value_name = "LIST")]
    pub hybrid_window: Option<String>,
    /// codex: tokens of user messages kept, 64k (remote compaction v2) or 20k (local) [64k].
    #[arg(long, value_name = "LIST")]
    pub codex_retain: Option<String>,
    /// gemini-cli: default (chat compression) or generalist (experimental profile) [default].
    #[arg(long, value_name = "LIST")]
    pub gemini_profile: Option<String>,
    /// langchain: trim_tokens_to_summarize, tokens the summarizer reads, or none [4000].
    #[arg(long, value_name = "LIST")]
    pub lc_trim: Option<String>,
    /// openhands: max_tokens, the condenser's token trigger, or none [none].
    #[arg(long, value_name = "LIST")]
    pub openhands_max_tokens: Option<String>,
    /// anthropic-compaction: input tokens above which the API compacts, 50k or more [150k].
    #[arg(long, value_name = "LIST")]
    pub anthropic_trigger: Option<String>,
}

fn text_axis(s: &Option<String>) -> Option<AxisSpec> {
    s.as_ref().map(|t| AxisSpec::One(AxisItem::Text(t.clone())))
}

/// The axis flags as grid keys; those not given stay `None` (the base grid's stand).
pub fn flag_axes(a: &AxisFlags, combine: bool) -> GridSpec {
    GridSpec {
        trigger: text_axis(&a.trigger),
        after_tokens: text_axis(&a.after_tokens),
        keep_recent_events: text_axis(&a.keep_recent_events),
        after_invocations: text_axis(&a.after_invocations),
        overlap: text_axis(&a.overlap),
        summarizer: (!a.summarizer.is_empty()).then(|| {
            AxisSpec::Many(
                a.summarizer
                    .iter()
                    .map(|s| AxisItem::Text(s.clone()))
                    .collect(),
            )
        }),
        agent_model: text_axis(&a.agent_model),
        client: text_axis(&a.client),
        tokenizer: text_axis(&a.tokenizer),
        max_llm_calls: text_axis(&a.max_llm_calls),
        artifacts: None,
        split: text_axis(&a.split),
        combine: combine.then_some(true),
        budget: flag_budgets(a),
        policy: text_axis(&a.policy),
        clear_trigger: text_axis(&a.clear_trigger),
        clear_keep: text_axis(&a.clear_keep),
        clear_at_least: text_axis(&a.clear_at_least),
        clear_exclude_tools: text_axis(&a.clear_exclude_tools),
        mask_window: text_axis(&a.mask_window),
        pct: text_axis(&a.pct),
        cc_window: text_axis(&a.cc_window),
        codex_pct: text_axis(&a.codex_pct),
        openhands_max_size: text_axis(&a.openhands_max_size),
        openhands_keep_first: text_axis(&a.openhands_keep_first),
        lc_trigger: text_axis(&a.lc_trigger),
        lc_keep: text_axis(&a.lc_keep),
        gemini_threshold: text_axis(&a.gemini_threshold),
        ts_n: text_axis(&a.ts_n),
        ts_m: text_axis(&a.ts_m),
        hybrid_n: text_axis(&a.hybrid_n),
        hybrid_m: text_axis(&a.hybrid_m),
        hybrid_window: text_axis(&a.hybrid_window),
        codex_retain: text_axis(&a.codex_retain),
        gemini_profile: text_axis(&a.gemini_profile),
        lc_trim: text_axis(&a.lc_trim),
        openhands_max_tokens: text_axis(&a.openhands_max_tokens),
        anthropic_trigger: text_axis(&a.anthropic_trigger),
    }
}

/// The budget flags, when any is given (they replace the base grid's budget whole).
fn flag_budgets(a: &AxisFlags) -> Option<Budgets> {
    let given = a.budget_broken_references.is_some()
        || a.budget_detail_lost.is_some()
        || a.budget_latency.is_some();
    given.then_some(Budgets {
        broken_references: a.budget_broken_references,
        detail_lost: a.budget_detail_lost,
        latency_s: a.budget_latency,
    })
}
