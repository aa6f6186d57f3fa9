//! `compaction-sim replay FILE`: replay one transcript under one setting and print the
//! timeline, one row per model request (or `--json`, with the oracle's field names).

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{json, Value};

use super::cost_flags::CostFlags;
use crate::cost::client::ClientMode;
use crate::cost::compute::FALLBACK_AGENT_MODEL;
use crate::cost::compute::{render_metrics, MetricsSetting};
use crate::cost::evaluate::{evaluate, CostSetting, Evaluation, SessionCostInputs};
use crate::cost::CostModel;
use crate::engine::{self, Config, Phase, Replay, UsageMode};
use crate::settings::{Compaction, Written};
use crate::summarize::SummarizerSpec;
use crate::tokens::sizes::SessionSizes;
use crate::tokens::{count_sessions, CacheOpts, Tokenizer};
use crate::transcript::{detect, Session};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Transcript file (any supported format), or an ADK session database URL
    /// (sqlite:///FILE.db, postgresql://USER@HOST:PORT/DB; with --session, --app, --user).
    #[arg(value_name = "FILE")]
    pub file: String,
    /// FILE names one of the 40 sample sessions (`transcripts/NAME`, a checkout's
    /// transcripts/: `synth --sessions 40 --seed 6`), generated into a temporary folder.
    #[arg(long)]
    pub samples: bool,
    /// Compact once the last request's prompt reaches this many tokens (needs --keep-recent-events).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub after_tokens: Option<i64>,
    /// Raw events the size trigger leaves alone.
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub keep_recent_events: Option<i64>,
    /// Compact every N invocations (needs --overlap).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub after_invocations: Option<i64>,
    /// Earlier invocations each sliding summary re-includes.
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub overlap: Option<i64>,
    /// Summarizer, agent model, client mode, prices and latency (shared with `sweep`).
    #[command(flatten)]
    pub cost: CostFlags,
    /// 1-based summarizer calls that fail (comma list), as the oracle's --fail-calls.
    #[arg(long, value_name = "LIST", default_value = "")]
    pub fail_calls: String,
    /// Token counter for the history columns: o200k, cl100k or adk-chars.
    #[arg(long, value_name = "T", default_value = "o200k")]
    pub tokenizer: String,
    /// Recorded usage: adjust (default), recorded or strip.
    #[arg(long, value_name = "MODE", default_value = "adjust")]
    pub usage: String,
    /// Which sessions (`--session` in files and databases; `--app`, `--user`, `--since` in
    /// databases).
    #[command(flatten)]
    pub db: super::db_flags::DbFlags,
    /// JSON with the oracle's field names instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(mut args: ReplayArgs) -> Result<u8> {
    super::exit_at_once_on_signal();
    let (mut files, _samples) =
        super::samples::inputs(args.samples, std::slice::from_ref(&args.file), "replay")?;
    args.file = files.remove(0);
    let setting = match written(&args).validate() {
        Ok(s) => s,
        Err(r) => {
            errln!("refused: --{}: {}", r.field.replace('_', "-"), r.message);
            return Ok(super::EXIT_REFUSED);
        }
    };
    let how = How::from_args(&args, &setting)?;
    let sessions = read_sessions(&args)?;
    super::warn_orphan_responses(sessions.iter().map(|s| {
        (
            s.source.as_str(),
            s.id.as_str(),
            crate::transcript::util::orphan_responses(&s.events) as u64,
        )
    }));
    let prepared = prepare(&sessions, how.tok)?;
    let pricing = Pricing::start(&args.cost, &how.spec)?;
    let replayer = Replayer {
        args: &args,
        how: &how,
        pricing: &pricing,
    };
    let model = &pricing.model;
    let pairs = || sessions.iter().zip(&prepared);
    args.cost
        .live
        .check_estimate(&pricing.live, model, &model.prices.pricing_date, || {
            for (session, (sizes, inputs)) in pairs() {
                replayer.evaluate(session, sizes, inputs)?;
            }
            Ok(())
        })?;
    let mut out_json = Vec::new();
    for (session, (sizes, inputs)) in pairs() {
        let e = replayer.evaluate(session, sizes, inputs)?;
        for w in &e.summarizer_errors {
            errln!("warning: {}", super::term(&w.to_string()));
        }
        if args.json {
            out_json.push(replayer.json(session, sizes, &e)?);
        } else {
            replayer.print(session, sizes, inputs, &e, &setting.normalised())?;
        }
    }
    super::cost_flags::report_live(&pricing.live, args.json)?;
    if args.json {
        let v = if out_json.len() == 1 {
            out_json.remove(0)
        } else {
            Value::Array(out_json)
        };
        outln!("{}", serde_json::to_string_pretty(&v)?);
    }
    Ok(super::EXIT_OK)
}

/// The setting as the flags write it, for the manifest's checks.
fn written(args: &ReplayArgs) -> Written {
    Written {
        after_tokens: args.after_tokens,
        keep_recent_events: args.keep_recent_events,
        after_invocations: args.after_invocations,
        overlap: args.overlap,
        summarizer: None,
        unknown: Vec::new(),
    }
}

/// How the replay runs besides the setting: the engine's config, the token counter, the
/// summarizer and the calls made to fail.
struct How {
    cfg: Config,
    tok: Tokenizer,
    spec: SummarizerSpec,
    fail: Vec<u32>,
}

impl How {
    fn from_args(args: &ReplayArgs, setting: &Compaction) -> Result<How> {
        let usage = UsageMode::parse(&args.usage).ok_or_else(|| {
            anyhow::anyhow!(
                "--usage `{}`: expected adjust, recorded or strip",
                args.usage
            )
        })?;
        let tok: Tokenizer = args
            .tokenizer
            .parse::<Tokenizer>()
            .map_err(anyhow::Error::new)?;
        let spec = args.cost.summarizer_spec()?;
        let fail: Vec<u32> = args
            .fail_calls
            .split(',')
            .filter(|x| !x.trim().is_empty())
            .map(|x| {
                x.trim()
                    .parse()
                    .with_context(|| format!("--fail-calls: `{x}` is not a call number"))
            })
            .collect::<Result<_>>()?;
        Ok(How {
            cfg: Config::from_setting(setting, usage),
            tok,
            spec,
            fail,
        })
    }
}

/// The sessions of FILE that `--session` (and, in a database, the other filters) select.
/// Any session that cannot be read is fatal, as a bad file is.
fn read_sessions(args: &ReplayArgs) -> Result<Vec<Session>> {
    let filter = args.db.filter(std::slice::from_ref(&args.file), true)?;
    let sessions = if crate::transcript::db::is_db_url(&args.file) {
        // A database: the filter selects in SQL.
        let (sessions, skipped) = crate::transcript::db::load_arg(&args.file, &filter);
        if let Some(e) = skipped.into_iter().next() {
            anyhow::bail!("{e}");
        }
        sessions
    } else {
        detect::load_file(&args.file, None).map_err(anyhow::Error::new)?
    };
    let sessions: Vec<Session> = match &args.db.session {
        Some(id) => sessions.into_iter().filter(|s| &s.id == id).collect(),
        None => sessions,
    };
    if sessions.is_empty() {
        anyhow::bail!(
            "{}: no session{}",
            crate::transcript::db::url::redact(&args.file),
            args.db
                .session
                .as_ref()
                .map_or(String::new(), |s| format!(" `{s}`"))
        );
    }
    super::print_notes(sessions.iter().flat_map(|s| &s.notes));
    Ok(sessions)
}

/// Each session's sizes (counted with `tok`; `adk-chars` needs no counts) and cost inputs.
fn prepare(sessions: &[Session], tok: Tokenizer) -> Result<Vec<(SessionSizes, SessionCostInputs)>> {
    let counts = match tok {
        Tokenizer::AdkChars => None,
        _ => Some(count_sessions(sessions, tok, &CacheOpts::disabled())?),
    };
    // The per-part counts end in the sizes; a long session's are tens of MB, dropped here.
    Ok(sessions
        .iter()
        .enumerate()
        .map(|(si, session)| {
            let per_event = counts.as_ref().and_then(|c| c.get(si)).map(Vec::as_slice);
            (
                SessionSizes::new(session, per_event),
                SessionCostInputs::new(session, tok),
            )
        })
        .collect())
}

/// Prices, client mode and the summarizers started (a `python:` worker, `live:` clients).
struct Pricing {
    model: CostModel,
    client: ClientMode,
    timeout: Duration,
    live: Vec<Arc<crate::summarize::live::Client>>,
}

impl Pricing {
    fn start(cost: &CostFlags, spec: &SummarizerSpec) -> Result<Pricing> {
        let model = cost.cost_model()?;
        let client = cost.client_mode()?;
        let timeout = cost.command_timeout()?;
        cost.start_python(spec)?;
        let live = cost.live.start(
            std::slice::from_ref(spec),
            timeout,
            CacheOpts::resolve(None, false).dir.as_deref(),
        )?;
        Ok(Pricing {
            model,
            client,
            timeout,
            live,
        })
    }
}

/// One session replayed and priced, then shown as the table or as JSON.
struct Replayer<'a> {
    args: &'a ReplayArgs,
    how: &'a How,
    pricing: &'a Pricing,
}

impl Replayer<'_> {
    /// Same rule as `sweep`: `--model`, else the recorded model, else the documented default.
    fn agent_model<'s>(&'s self, session: &'s Session) -> &'s str {
        self.args
            .cost
            .agent_model(session.model.as_deref())
            .unwrap_or(FALLBACK_AGENT_MODEL)
    }

    fn evaluate(
        &self,
        session: &Session,
        sizes: &SessionSizes,
        inputs: &SessionCostInputs,
    ) -> Result<Evaluation> {
        let p = self.pricing;
        let mut cs = CostSetting::new(&self.how.spec, Some(self.agent_model(session)), p.client);
        cs.command_timeout = p.timeout;
        cs.fail_calls = self.how.fail.clone();
        let run = |s: &dyn engine::Summarizer| engine::replay(sizes, &self.how.cfg, s);
        evaluate(session, sizes, inputs, &p.model, &cs, &run)
            .map_err(|e| anyhow::anyhow!("--summarizer: {e}"))
    }

    /// The timeline table, then the session's metrics.
    fn print(
        &self,
        session: &Session,
        sizes: &SessionSizes,
        inputs: &SessionCostInputs,
        e: &Evaluation,
        setting: &str,
    ) -> Result<()> {
        print_table(session, sizes, &e.replay, setting, self.args, self.how.tok)?;
        let ms = MetricsSetting {
            agent_model: Some(self.agent_model(session)),
            summarizer: &self.how.spec,
            client: self.pricing.client,
            attachment_tokens: &inputs.attachments,
            event_facts: None,
            references: None,
            attachments_once: false,
            summary_family: None,
        };
        outln!();
        out!("{}", render_metrics(&e.metrics, &self.pricing.model, &ms));
        Ok(())
    }

    /// The oracle's JSON with the session's metrics.
    fn json(&self, session: &Session, sizes: &SessionSizes, e: &Evaluation) -> Result<Value> {
        let (cfg, tok) = (&self.how.cfg, self.how.tok);
        let mut v = to_json(session, sizes, &e.replay, cfg, self.args, tok);
        if let Value::Object(o) = &mut v {
            o.insert("metrics".into(), serde_json::to_value(&e.metrics)?);
        }
        Ok(v)
    }
}

fn ordinals(v: &[u32]) -> String {
    if v.is_empty() {
        "-".into()
    } else {
        v.iter()
            .map(|o| format!("#{o}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

fn print_table(
    session: &Session,
    sizes: &SessionSizes,
    r: &Replay,
    setting: &str,
    args: &ReplayArgs,
    tok: Tokenizer,
) -> Result<()> {
    // Ids, paths and agent names come from the transcript: escaped for the terminal.
    outln!(
        "session {} ({}), {} events, {} invocations",
        super::term(&session.id),
        super::term(&session.source),
        sizes.n,
        sizes.blocks()
    );
    outln!(
        "setting {setting}; summarizer {}; usage {}; tokens: {} (recorded prompt_token_count when present, else history only)",
        args.cost.summarizer, args.usage, tok
    );
    outln!(
        "{:>4} {:>6} {:>4} {:<18} {:>9} {:>10} {:>10} {:>9} {:>10}  {:<14} fired before",
        "req",
        "event",
        "inv",
        "agent",
        "measured",
        "baseline",
        "prompt",
        "saved",
        "hidden",
        "summaries"
    );
    let mut req_i = 0;
    for inv in &r.invocations {
        while let Some(q) = r.requests.get(req_i) {
            if q.invocation_index != inv.index {
                break;
            }
            print_request(req_i + 1, q, sizes, r)?;
            req_i += 1;
        }
        if let Some(c) = inv.post_compaction.and_then(|o| r.compaction(o)) {
            outln!(
                "     after invocation {}: #{} post_invocation {} over events {}-{} ({} raw events, summary {} chars)",
                inv.index,
                c.ordinal,
                c.trigger.name(),
                c.summarized_events.start,
                c.summarized_events.end.saturating_sub(1),
                c.raw_events_in_range,
                c.summary_chars
            );
        }
    }
    print_totals(r)
}

/// One row of the timeline: the `number`-th request, and the compactions fired before it.
fn print_request(
    number: usize,
    q: &crate::engine::Request,
    sizes: &SessionSizes,
    r: &Replay,
) -> Result<()> {
    let fired: Vec<String> = r
        .pre_request(q)
        .iter()
        .filter_map(|o| r.compaction(*o))
        .map(|c| {
            format!(
                "#{} pre_request token_threshold, events {}-{}",
                c.ordinal,
                c.summarized_events.start,
                c.summarized_events.end.saturating_sub(1)
            )
        })
        .collect();
    let agent = sizes
        .authors
        .get(q.author as usize)
        .map_or("?", String::as_str);
    outln!(
        "{:>4} {:>6} {:>4} {:<18} {:>9} {:>10} {:>10} {:>9} {:>10}  {:<14} {}",
        number,
        q.event_index,
        q.invocation_index,
        super::term(&agent.chars().take(18).collect::<String>()),
        q.measured_prompt_tokens
            .map_or("-".into(), |m| m.to_string()),
        q.baseline_prompt_tokens,
        q.prompt_tokens,
        i128::from(q.baseline_prompt_tokens) - i128::from(q.prompt_tokens),
        q.hidden_tokens,
        ordinals(r.carried(q)),
        fired.join("; ")
    );
    Ok(())
}

/// The replay's totals line, and the blank line after it.
fn print_totals(r: &Replay) -> Result<()> {
    let t = &r.totals;
    // Saturating: recorded counts are at most 2^53 each, but nothing bounds how many.
    let total = |f: fn(&crate::engine::Request) -> u64| {
        r.requests.iter().map(f).fold(0u64, u64::saturating_add)
    };
    let base = total(|q| q.baseline_prompt_tokens);
    let comp = total(|q| q.prompt_tokens);
    outln!(
        "{} model requests; prompt tokens {} -> {} (saved {}); {} summarizer calls ({} failed or empty), {} compactions \
         ({} pre-request, {} post-invocation token, {} sliding); summarizer read {} tokens, wrote {}; final summaries {}",
        r.requests.len(),
        base,
        comp,
        i128::from(base) - i128::from(comp),
        t.summarizer_calls,
        t.failed_or_empty_summaries,
        t.compactions,
        t.pre_request_token_threshold,
        t.post_invocation_token_threshold,
        t.post_invocation_sliding_window,
        t.summarizer_input_tokens,
        t.summarizer_output_tokens,
        ordinals(&t.final_retained_summaries)
    );
    outln!();
    Ok(())
}

fn sizes_json(contents: u32, adk: u64, json_chars: u64) -> Value {
    json!({"contents": contents, "adk_chars": adk, "est_tokens": adk / 4, "json_chars": json_chars})
}

/// The replay with the oracle's field names (shared/oracle/README.md "Output"), plus the
/// token columns the oracle has no equivalent for.
pub fn to_json(
    session: &Session,
    sizes: &SessionSizes,
    r: &Replay,
    cfg: &Config,
    args: &ReplayArgs,
    tok: Tokenizer,
) -> Value {
    let compactions: Vec<Value> = r.compactions.iter().map(compaction_json).collect();
    let failures: Vec<Value> = r
        .calls
        .iter()
        .filter(|c| c.result != engine::CallResult::Summary)
        .map(|c| {
            json!({"summarizer_call": c.call, "phase": c.phase.name(), "trigger": c.trigger.name(),
            "result": c.result, "invocation_index": c.invocation_index})
        })
        .collect();
    json!({
        "transcript": {"path": crate::transcript::db::url::redact(&args.file), "session": session.id, "events": sizes.n, "invocations": sizes.blocks()},
        "config": {
            "compaction_interval": cfg.sliding.map(|s| s.0), "overlap_size": cfg.sliding.map(|s| s.1),
            "token_threshold": cfg.token.map(|t| t.0), "event_retention_size": cfg.token.map(|t| t.1),
        },
        "summarizer": args.cost.summarizer,
        "fail_calls": args.fail_calls,
        "usage_mode": cfg.usage.name(),
        "tokenizer": tok.name(),
        "pre_request_check": cfg.pre_request,
        "measured_agent": sizes.main_agent.and_then(|a| sizes.authors.get(a as usize)),
        "summarizer_template_fixed_chars": engine::TEMPLATE_FIXED_CHARS,
        "invocations": invocations_json(session, sizes, r),
        "compactions": compactions,
        "failures": failures,
        "totals": totals_json(r),
    })
}

/// Per invocation: its model calls, the compactions before and after them, and the history
/// the next request starts from.
fn invocations_json(session: &Session, sizes: &SessionSizes, r: &Replay) -> Vec<Value> {
    let mut req_i = 0;
    r.invocations
        .iter()
        .map(|inv| {
            let mut calls = Vec::new();
            let mut pre = Vec::new();
            while let Some(q) = r.requests.get(req_i) {
                if q.invocation_index != inv.index {
                    break;
                }
                pre.extend_from_slice(r.pre_request(q));
                calls.push(request_json(q, sizes, r));
                req_i += 1;
            }
            let lo = inv.first_event_index as usize;
            json!({
                "index": inv.index,
                "invocation_id": session.events.get(lo).map(|e| e.invocation_id.clone()),
                "events": inv.events,
                "first_event_index": inv.first_event_index,
                "first_timestamp": inv.first_timestamp,
                "last_timestamp": inv.last_timestamp,
                "model_calls": calls,
                "pre_request_compactions": pre,
                "post_invocation": {
                    "measured_prompt_tokens": inv.post_measured_prompt_tokens,
                    "compaction": inv.post_compaction,
                    "trigger": inv.post_trigger.map(|t| t.name()),
                },
                "next_request_history": {"contents": inv.next_request_contents, "adk_chars": inv.next_request_adk_chars,
                    "est_tokens": inv.next_request_adk_chars / 4, "history_tokens": inv.next_request_history_tokens},
                "next_request_history_uncompacted": {"adk_chars": inv.next_request_adk_chars_uncompacted,
                    "est_tokens": inv.next_request_adk_chars_uncompacted / 4,
                    "history_tokens": inv.next_request_baseline_history_tokens},
                "retained_summaries": r.retained_ordinals(inv),
                "summarizer_calls": inv.summarizer_calls,
            })
        })
        .collect()
}

fn request_json(q: &crate::engine::Request, sizes: &SessionSizes, r: &Replay) -> Value {
    json!({
        "event_index": q.event_index,
        "author": sizes.authors.get(q.author as usize),
        "measured_prompt_tokens": q.measured_prompt_tokens,
        "request_contents": sizes_json(q.contents, q.adk_chars, q.json_chars),
        "request_contents_uncompacted": sizes_json(q.contents_uncompacted, q.adk_chars_uncompacted, q.json_chars_uncompacted),
        "recorded_prompt_tokens": q.recorded_prompt_tokens,
        "replayed_prompt_tokens": q.replayed_prompt_tokens,
        "baseline_prompt_tokens": q.baseline_prompt_tokens,
        "prompt_tokens": q.prompt_tokens,
        "history_tokens": q.history_tokens,
        "baseline_history_tokens": q.baseline_history_tokens,
        "summary_tokens": q.summary_tokens,
        "hidden_tokens": q.hidden_tokens,
        "hidden_event_ranges": r.hidden(q),
        "shared_prefix_tokens": q.shared_prefix_tokens,
        "summaries": r.carried(q),
    })
}

fn compaction_json(c: &crate::engine::Compaction) -> Value {
    json!({
        "ordinal": c.ordinal,
        "phase": c.phase.name(),
        "trigger": c.trigger.name(),
        "invocation_index": c.invocation_index,
        "before_event_index": c.before_event_index,
        "start_timestamp": c.start_timestamp,
        "end_timestamp": c.end_timestamp,
        "summarizer_input_events": c.summarizer_input_events,
        "seeded_with_previous_summary": c.seeded_with_previous_summary,
        "raw_events_in_range": c.raw_events_in_range,
        "first_raw_event_index": c.first_raw_event_index,
        "last_raw_event_index": c.last_raw_event_index,
        "invocations_in_range": c.invocations_in_range.to_vec(),
        "summarizer_call": c.summarizer_call,
        "summarizer_prompt_chars": c.summarizer_prompt_chars,
        "summarizer_history_chars": c.summarizer_history_chars,
        "summary_chars": c.summary_chars,
        "summary_json_chars": c.summary_json_chars,
        "summary_tokens": c.summary_tokens,
        "summarizer_input_tokens": c.summarizer_input_tokens,
        "retained": c.retained,
        "subsumed_by": c.subsumed_by,
    })
}

fn totals_json(r: &Replay) -> Value {
    let t = &r.totals;
    let mut by = serde_json::Map::new();
    for (k, v) in [
        (
            "post_invocation:sliding_window",
            t.post_invocation_sliding_window,
        ),
        (
            "post_invocation:token_threshold",
            t.post_invocation_token_threshold,
        ),
        ("pre_request:token_threshold", t.pre_request_token_threshold),
    ] {
        if v > 0 {
            by.insert(k.into(), v.into());
        }
    }
    json!({
        "summarizer_calls": t.summarizer_calls,
        "compactions": t.compactions,
        "compactions_by_trigger": by,
        "failed_or_empty_summaries": t.failed_or_empty_summaries,
        "summarizer_prompt_chars": t.summarizer_prompt_chars,
        "summary_chars": t.summary_chars,
        "summarizer_input_tokens": t.summarizer_input_tokens,
        "summarizer_output_tokens": t.summarizer_output_tokens,
        "final_retained_summaries": t.final_retained_summaries,
        "pre_request_compactions": r.compactions.iter().filter(|c| c.phase == Phase::PreRequest).count(),
    })
}
