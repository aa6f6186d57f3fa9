//! `compaction-sim backtest PATH...`: every compaction the transcripts record, beside what the
//! `as recorded` replay predicts (the policy the framework ran with, on the provider's token
//! scale), per framework how many automatic ones it matched (docs/policies.md).

use anyhow::Result;
use clap::Args;

use crate::backtest::holdout::{add_holdout, Figures, FitSide};
use crate::backtest::{backtest, Backtest, CompactionRow, SessionRow};
use crate::tokens::sizes::SessionSizes;
use crate::tokens::{count_sessions, CacheOpts, Tokenizer};

#[derive(Debug, Args)]
pub struct BacktestArgs {
    /// Transcript files or folders (any supported format).
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<String>,
    /// Token counter the provider-scale fit is made on: o200k, cl100k or adk-chars.
    #[arg(long, value_name = "T", default_value = "o200k")]
    pub tokenizer: Tokenizer,
    /// `{"compactions": [...], "frameworks": {...}, "sessions": [...], "fits": [...]}` instead
    /// of the table (with the held-out figures of `--holdout`).
    #[arg(long)]
    pub json: bool,
    /// Refit every figure fitted on recorded data without each session in turn and print the
    /// held-out figures beside the in-sample ones (docs/validation.md).
    #[arg(long)]
    pub holdout: bool,

    #[command(flatten)]
    pub db: super::db_flags::DbFlags,
}

pub fn run(args: BacktestArgs) -> Result<u8> {
    super::exit_at_once_on_signal();
    let filter = args.db.filter(&args.paths, false)?;
    let loaded = crate::transcript::load_inputs(&args.paths, None, &filter);
    super::print_capped("skipped: ", loaded.skipped.iter().map(|e| e.to_string()));
    super::print_merged(&loaded.merged);
    super::print_notes(loaded.sessions.iter().flat_map(|s| &s.notes));
    let mut sessions = loaded.sessions;
    if sessions.is_empty() {
        let shown: Vec<String> = args
            .paths
            .iter()
            .map(|p| super::term(&crate::transcript::db::url::redact(p)).into_owned())
            .collect();
        errln!("error: no session read from {}", shown.join(" "));
        return Ok(super::EXIT_BAD_INPUT);
    }
    sessions.sort_by(|a, b| (&a.source, &a.id).cmp(&(&b.source, &b.id)));
    let counts = match args.tokenizer {
        Tokenizer::AdkChars => None,
        tok => Some(count_sessions(&sessions, tok, &CacheOpts::disabled())?),
    };
    let sizes: Vec<SessionSizes> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| SessionSizes::new(s, counts.as_ref().map(|c| c[i].as_slice())))
        .collect();
    let mut result = backtest(&sessions, &sizes);
    if args.holdout || args.json {
        add_holdout(&mut result, &sessions, &sizes);
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        out!("{}", render(&result));
        if args.holdout {
            out!("{}", render_holdout(&result));
        }
    }
    Ok(super::EXIT_OK)
}

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

fn row_line(c: &CompactionRow) -> String {
    let matched = match (c.matched, c.matched_with_fit) {
        (None, _) if c.resumed => "listed (file starts with it)".to_string(),
        (None, _) if c.trigger == "manual" => "listed (applied as recorded)".to_string(),
        (None, _) => "listed".to_string(),
        (Some(true), _) => "yes".to_string(),
        (Some(false), Some(true)) => format!("with fit {}", opt(c.fitted_threshold)),
        (Some(false), _) => "no".to_string(),
    };
    format!(
        "{:<44} {:<5} {:<7} {:>5} {:>5} {:>8} {:>8} {:>7} {:>7}  {}",
        super::term(&short(&c.source)),
        c.kind.name(),
        super::term(&c.trigger),
        opt(c.recorded_request),
        opt(c.predicted_request),
        opt(c.recorded_tokens_before),
        opt(c.predicted_tokens_before),
        opt(c.recorded_tokens_after),
        opt(c.predicted_tokens_after),
        matched
    )
}

/// The last two path components: enough to find the file.
fn short(source: &str) -> String {
    let parts: Vec<&str> = source.rsplit('/').take(2).collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

/// The table: one line per recorded compaction, then per framework, then per session.
pub fn render(b: &Backtest) -> String {
    let mut out = format!(
        "{:<44} {:<5} {:<7} {:>5} {:>5} {:>8} {:>8} {:>7} {:>7}  matched\n",
        "session", "kind", "trigger", "req", "pred", "before", "pred", "after", "pred"
    );
    for c in &b.compactions {
        out.push_str(&row_line(c));
        out.push('\n');
    }
    out.push_str(
        "\nframework      sessions  auto  matched  with-fit  manual  micro  matched  resumed  |d before| %  after ratio\n",
    );
    for (name, f) in &b.frameworks {
        out.push_str(&format!(
            "{:<14} {:>8} {:>5} {:>8} {:>9} {:>7} {:>6} {:>8} {:>8} {:>13} {:>12}\n",
            name,
            f.sessions,
            f.auto_recorded,
            f.auto_matched,
            f.auto_matched_with_fit,
            f.manual,
            f.micro_recorded,
            f.micro_matched,
            f.resumed,
            opt(f.median_abs_delta_tokens_before_pct),
            opt(f.tokens_after_ratio)
        ));
    }
    out.push_str(&kept_table(b));
    out.push_str("\nsession                                      as recorded\n");
    for s in &b.sessions {
        out.push_str(&format!(
            "{:<44} {}; sizes: {} (overhead {}, scale {}, fit p50 {} %); prompt error p50 {} % p95 {} %{}\n",
            super::term(&short(&s.source)),
            super::term(&s.as_recorded),
            s.prompt_basis,
            opt(s.prompt_overhead),
            opt(s.prompt_scale),
            opt(s.prompt_fit_error_p50),
            opt(s.prompt_error_p50_pct),
            opt(s.prompt_error_p95_pct),
            tokens_sent(s)
        ));
        if let Some(n) = s.predicted_microcompactions {
            out.pop();
            out.push_str(&format!("; microcompactions by the rule {n}\n"));
        }
    }
    out
}

/// SWE-agent's recorded `tokens_sent` beside the as-recorded replay's prompt tokens.
fn tokens_sent(s: &SessionRow) -> String {
    let Some(sent) = s.recorded_tokens_sent else {
        return String::new();
    };
    let counted = s
        .litellm_prompt_tokens_total
        .unwrap_or(s.prompt_tokens_total);
    format!(
        "; tokens_sent recorded {sent} ({} api calls), replayed {counted} (ratio {}; basis: {}), \
         no compaction {}",
        opt(s.recorded_api_calls),
        opt(s.tokens_sent_ratio),
        s.tokens_sent_basis.as_deref().unwrap_or("run tokenizer"),
        s.no_compaction_prompt_tokens_total
    )
}

/// What real summaries kept: per recorded compaction with a summary text, the references at
/// risk at its cut, those its text broke, the `agent` estimate (low-high), and re-fetches
/// (repeated, marked; same result, marked, their tokens in later prompts and USD); then the
/// re-fetches per framework.
fn kept_table(b: &Backtest) -> String {
    let rows: Vec<&CompactionRow> = b
        .compactions
        .iter()
        .filter(|c| c.summary_refs_broken.is_some())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nwhat real summaries kept\n{:<44} {:>5} {:>8} {:>7} {:>16} {:>9} {:>7} {:>5} {:>7} {:>8} {:>9}\n",
        "session", "req", "at risk", "broken", "agent (low-high)", "refetches", "marked", "same",
        "marked", "tokens", "USD"
    );
    for c in rows {
        let agent = c.agent_estimate.map_or_else(
            || "-".to_string(),
            |a| format!("{} ({}-{})", a.value, a.low, a.high),
        );
        out.push_str(&format!(
            "{:<44} {:>5} {:>8} {:>7} {:>16} {:>9} {:>7} {:>5} {:>7} {:>8} {:>9}\n",
            super::term(&short(&c.source)),
            opt(c.recorded_request),
            opt(c.summary_refs_at_risk),
            opt(c.summary_refs_broken),
            agent,
            opt(c.refetches),
            opt(c.refetches_marked_broken),
            opt(c.refetches_same_result),
            opt(c.refetches_same_result_marked),
            opt(c.refetch_tokens),
            opt(c.refetch_cost_usd.map(|x| format!("{x:.4}")))
        ));
    }
    out.push_str(
        "\nre-fetches     repeated  same result  marked  tokens in later prompts       USD\n",
    );
    for (name, f) in &b.frameworks {
        out.push_str(&format!(
            "{:<14} {:>8} {:>12} {:>7} {:>24} {:>9.4}\n",
            name,
            f.refetches,
            f.refetches_same_result,
            f.refetches_same_result_marked,
            f.refetch_tokens,
            f.refetch_cost_usd
        ));
    }
    out
}

fn side_line(s: &FitSide) -> String {
    let medians: Vec<String> = s.median.iter().map(|(g, m)| format!("{g} {m}")).collect();
    let values = match (s.value_min, s.value_max) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a}-{b}"),
        _ => "-".to_string(),
    };
    format!(
        "fit {values}; {} sessions ({} without a fit), {} outcomes; median {}",
        s.sessions,
        s.sessions_without_fit,
        s.outcomes,
        medians.join(", ")
    )
}

fn figures_line(f: &Figures) -> String {
    let mut out = format!(
        "matched {}, |d before| % {}, after ratio {}",
        f.auto_matched,
        opt(f.median_abs_delta_tokens_before_pct),
        opt(f.tokens_after_ratio)
    );
    if let Some(e) = f.prompt_fit_error_p50_pct {
        out.push_str(&format!(", prompt fit error p50 % {e}"));
    }
    if let Some(e) = f.output_estimate_error_p50_pct {
        out.push_str(&format!(", output estimate error p50 % {e}"));
    }
    if let Some(r) = f.tokens_sent_ratio {
        out.push_str(&format!(", tokens_sent ratio {r}"));
        for (v, m) in &f.tokens_sent_ratio_by_version {
            out.push_str(&format!(" ({v} {m})"));
        }
    }
    if !f.tokens_sent_ratio_unfitted_by_version.is_empty() {
        let v: Vec<String> = f
            .tokens_sent_ratio_unfitted_by_version
            .iter()
            .map(|(v, m)| format!("{v} {m}"))
            .collect();
        out.push_str(&format!(", as replayed (unfitted) {}", v.join(", ")));
    }
    out
}

/// `--holdout`: every fitted figure in sample and held out, then per framework its figures
/// both ways.
pub fn render_holdout(b: &Backtest) -> String {
    let mut out = String::from("\nfitted figures: in sample / held out (leave one session out)\n");
    for r in &b.fits {
        out.push_str(&format!(
            "{} [{}] ({}{}):\n  in sample: {}\n  held out:  {}\n",
            r.figure,
            r.framework,
            r.unit,
            r.shipped
                .map_or_else(String::new, |v| format!(", shipped {v}")),
            side_line(&r.in_sample),
            side_line(&r.held_out)
        ));
    }
    out.push_str("\nper framework: in sample / held out\n");
    for (name, f) in &b.frameworks {
        let (Some(i), Some(h)) = (&f.in_sample, &f.held_out) else {
            continue;
        };
        out.push_str(&format!(
            "{name}\n  in sample: {}\n  held out:  {}\n",
            figures_line(i),
            figures_line(h)
        ));
    }
    out
}
