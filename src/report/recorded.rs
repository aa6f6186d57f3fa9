//! The report's "Recorded compactions" section (issue 37): every compaction the run's
//! transcripts record beside what the `as recorded` replay predicts, per framework how many
//! automatic ones it matched, and per session how near its prompt sizes come to the recorded
//! ones. Read from `recorded_compactions.json` (the sweep wrote it with `backtest`'s
//! comparison); no section when the run's inputs record no compaction.

use super::{t, Block, Inline};
use crate::backtest::{Backtest, CompactionRow, FrameworkStats, SessionRow};
use crate::table::folder::RunData;
use crate::table::format::fmt_int;

/// Rows of the per-compaction table shown; the file holds them all.
pub const RECORDED_LISTED: usize = 100;

pub(super) fn recorded_compactions(d: &RunData, b: &mut Vec<Block>) {
    let Some(r) = d.recorded.as_ref().filter(|r| !r.compactions.is_empty()) else {
        return;
    };
    b.push(Block::Heading(2, "Recorded compactions".into()));
    intro(r, b);
    b.push(compaction_table(&r.compactions));
    b.push(Block::Para(t(
        "Per framework: automatic compactions matched (predicted within 1 request), the median |Δ tokens before| % over the matched ones, and the median predicted / recorded tokens after and duration.",
    )));
    b.push(framework_table(r));
    b.push(Block::Para(t(
        "Per session: the recorded prompt size of each model request against the as-recorded replay's (median and p95 |error| %), on the basis its sizes rest on.",
    )));
    b.push(session_table(&r.sessions));
    refetch_blocks(r, b);
}

/// What the status quo's compactions cost in re-work: per framework, the tool calls repeated
/// after a compaction with a summary text, those returning what they returned before (detail
/// the agent had and obtained again), and the tokens and dollars these added to later prompts.
fn refetch_blocks(r: &Backtest, b: &mut Vec<Block>) {
    let measured = r.compactions.iter().any(|c| c.refetches.is_some());
    if !measured {
        return;
    }
    b.push(Block::Para(t(
        "Re-fetches after the compactions that record their summary text: tool calls repeating one made before the compaction (same tool, same arguments) up to the next one; \"same result\" ones returned exactly what the call returned before, detail the agent had and obtained again. Their tokens are the call's and the result's in every later prompt up to the next recorded compaction (provider's scale), priced at the session model's built-in rates (input for the first prompt, cached input where a prompt records cache reads); \"marked\" ones come from a model event with a broken reference, or gave back a fact the summary lost that the agent then used (docs/validation.md).",
    )));
    b.push(Block::Table {
        head: [
            "framework",
            "re-fetches",
            "same result",
            "marked broken",
            "tokens in later prompts",
            "USD",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .frameworks
            .iter()
            .map(|(name, f)| {
                vec![
                    t(name.clone()),
                    t(fmt_int(f.refetches as f64)),
                    t(fmt_int(f.refetches_same_result as f64)),
                    t(fmt_int(f.refetches_same_result_marked as f64)),
                    t(fmt_int(f.refetch_tokens as f64)),
                    t(format!("${:.4}", f.refetch_cost_usd)),
                ]
            })
            .collect(),
        numeric: vec![false, true, true, true, true, true],
    });
}

fn intro(r: &Backtest, b: &mut Vec<Block>) {
    // the kinds as the per-framework figures count them (`summarize_frameworks`)
    let sum = |f: fn(&FrameworkStats) -> u64| r.frameworks.values().map(f).sum::<u64>();
    let (auto, manual) = (sum(|f| f.auto_recorded), sum(|f| f.manual));
    let (micro, resumed) = (sum(|f| f.micro_recorded), sum(|f| f.resumed));
    // microcompactions and resumed files' opening records named only where there are some
    // (runs without keep their text)
    let named = |n: u64, what: &str| {
        if n > 0 {
            format!(", {n} {what}")
        } else {
            String::new()
        }
    };
    let micro = named(micro, "microcompactions") + &named(resumed, "opening a resumed file");
    let more = if r.compactions.len() > RECORDED_LISTED {
        format!(
            " The first {RECORDED_LISTED} are listed; recorded_compactions.json holds all {}.",
            r.compactions.len()
        )
    } else {
        String::new()
    };
    b.push(Block::Para(t(format!(
        "The transcripts record {} their framework made ({auto} automatic, {manual} manual{micro}), in {}. Each is shown beside what the `as recorded` row predicts: the session replayed under the setting its framework ran with, on the provider's token scale where the session records prompt sizes. Recorded figures are the transcript's (tokens before: Claude Code's preTokens, else the last recorded prompt; tokens after: the recorded prompt of the first request after it; summary tokens: the recorded summary's characters / 4 on the provider's scale; duration from timestamps); predicted ones are modelled. Manual compactions are listed, never matched. `compaction-sim backtest PATH` prints the same comparison (docs/validation.md).{more}",
        plural(r.compactions.len(), "compaction"),
        plural(r.sessions.len(), "session"),
    ))));
}

fn plural(n: usize, one: &str) -> String {
    format!(
        "{} {one}{}",
        fmt_int(n as f64),
        if n == 1 { "" } else { "s" }
    )
}

fn opt_int(v: Option<u64>) -> String {
    v.map_or_else(|| "–".to_string(), |x| fmt_int(x as f64))
}

fn opt_f(v: Option<f64>, unit: &str) -> String {
    v.map_or_else(|| "–".to_string(), |x| format!("{x:.2}{unit}"))
}

/// `recorded / predicted`.
fn pair(rec: String, pred: String) -> Vec<Inline> {
    t(format!("{rec} / {pred}"))
}

fn matched(c: &CompactionRow) -> String {
    match (c.matched, c.matched_with_fit) {
        (None, _) => "manual: listed".into(),
        (Some(true), _) => "yes".into(),
        (Some(false), Some(true)) => format!(
            "with fitted threshold {} ({})",
            opt_int(c.fitted_threshold),
            c.fitted_setting.as_deref().unwrap_or("")
        ),
        (Some(false), _) => "no".into(),
    }
}

/// The prediction a row shows: the rule's, or where only the fitted threshold matched, the
/// fitted threshold's (its `matched` cell says so).
struct Shown {
    request: Option<usize>,
    before: Option<u64>,
    after: Option<u64>,
    summary: Option<u64>,
    duration_s: Option<f64>,
}

impl Shown {
    fn of(c: &CompactionRow) -> Shown {
        if c.matched == Some(false) && c.matched_with_fit == Some(true) {
            return Shown {
                request: c.predicted_request_with_fit,
                before: c.predicted_tokens_before_with_fit,
                after: c.predicted_tokens_after_with_fit,
                summary: c.predicted_summary_tokens_with_fit,
                duration_s: c.predicted_duration_s_with_fit,
            };
        }
        Shown {
            request: c.predicted_request,
            before: c.predicted_tokens_before,
            after: c.predicted_tokens_after,
            summary: c.predicted_summary_tokens,
            duration_s: c.predicted_duration_s,
        }
    }
}

fn session_cell(source: &str, id: &str) -> Vec<Inline> {
    vec![Inline::Code(format!("{source}#{id}"))]
}

fn compaction_table(rows: &[CompactionRow]) -> Block {
    Block::Table {
        head: [
            "session",
            "framework",
            "trigger",
            "request (recorded / predicted)",
            "tokens before",
            "tokens after",
            "summary tokens",
            "duration, s",
            "matched",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .take(RECORDED_LISTED)
            .map(|c| {
                let p = Shown::of(c);
                vec![
                    session_cell(&c.source, &c.session_id),
                    t(c.framework.clone()),
                    t(if c.kind == crate::transcript::CompactionKind::Micro {
                        format!("micro, {}", c.trigger)
                    } else {
                        c.trigger.clone()
                    }),
                    pair(
                        opt_int(c.recorded_request.map(|x| x as u64)),
                        opt_int(p.request.map(|x| x as u64)),
                    ),
                    pair(opt_int(c.recorded_tokens_before), opt_int(p.before)),
                    pair(opt_int(c.recorded_tokens_after), opt_int(p.after)),
                    pair(opt_int(c.recorded_summary_tokens), opt_int(p.summary)),
                    pair(opt_f(c.recorded_duration_s, ""), opt_f(p.duration_s, "")),
                    t(matched(c)),
                ]
            })
            .collect(),
        numeric: vec![false, false, false, true, true, true, true, true, false],
    }
}

fn framework_row(name: &str, f: &FrameworkStats) -> Vec<Vec<Inline>> {
    vec![
        t(name.to_string()),
        t(fmt_int(f.sessions as f64)),
        t(fmt_int(f.auto_recorded as f64)),
        t(fmt_int(f.auto_matched as f64)),
        t(fmt_int(f.auto_matched_with_fit as f64)),
        t(fmt_int(f.manual as f64)),
        t(opt_f(f.median_abs_delta_tokens_before_pct, " %")),
        t(opt_f(f.tokens_after_ratio, "x")),
        t(opt_f(f.duration_ratio, "x")),
    ]
}

fn framework_table(r: &Backtest) -> Block {
    Block::Table {
        head: [
            "framework",
            "sessions",
            "automatic",
            "matched",
            "matched with a fitted threshold",
            "manual",
            "median |Δ tokens before|",
            "tokens after, predicted / recorded",
            "duration, predicted / recorded",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .frameworks
            .iter()
            .map(|(name, f)| framework_row(name, f))
            .collect(),
        numeric: vec![false, true, true, true, true, true, true, true, true],
    }
}

fn session_table(rows: &[SessionRow]) -> Block {
    Block::Table {
        head: [
            "session",
            "as recorded",
            "sizes",
            "requests compared",
            "median |error|",
            "p95 |error|",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .map(|s| {
                vec![
                    session_cell(&s.source, &s.session_id),
                    vec![Inline::Code(s.as_recorded.clone())],
                    t(s.prompt_basis.clone()),
                    t(fmt_int(s.requests_compared as f64)),
                    t(opt_f(s.prompt_error_p50_pct, " %")),
                    t(opt_f(s.prompt_error_p95_pct, " %")),
                ]
            })
            .collect(),
        numeric: vec![false, false, false, true, true, true],
    }
}
