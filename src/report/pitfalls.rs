//! The report's warnings about ADK's known compaction pitfalls (docs/pitfalls.md): settings
//! whose summary re-fires compaction every turn, and sessions where compaction stuck behind a
//! call never answered. No section when the run has neither.

use super::build::table_label;
use super::figures::{thrashing, Thrashing};
use super::{t, Block, Inline};
use crate::table::folder::{RunData, STUCK_LISTED};
use crate::table::format::fmt_int as int;

pub(super) fn pitfalls(d: &RunData, b: &mut Vec<Block>) {
    let thrash = thrashing(d);
    if thrash.is_empty() && d.stuck_sessions == 0 {
        return;
    }
    b.push(Block::Heading(2, "ADK pitfalls".into()));
    if !thrash.is_empty() {
        thrash_warning(&thrash, b);
    }
    if d.stuck_sessions > 0 {
        compaction_stuck(d, b);
    }
}

fn plural(n: f64, one: &str, many: &str) -> String {
    format!("{} {}", int(n), if n == 1.0 { one } else { many })
}

fn thrash_warning(thrash: &[Thrashing], b: &mut Vec<Block>) {
    b.push(Block::Para(t(
        "Warning: a summary at or above after_tokens re-fires compaction on every turn (google/adk-go#1439; google-adk 2.13.0 does it before every model call). These settings are never recommended:",
    )));
    b.push(Block::List(
        thrash
            .iter()
            .map(|x| {
                let at = x
                    .setting
                    .after_tokens
                    .map_or_else(|| "n/a".to_string(), |a| int(a as f64));
                vec![
                    Inline::Code(table_label(x.setting)),
                    Inline::Text(format!(
                        ": after_tokens {at}: in {} the summary alone reaches the threshold, so compaction re-fires on every turn ({}); raise after_tokens above the summary size.",
                        plural(x.sessions, "session", "sessions"),
                        plural(x.compactions, "extra summarizer call", "extra summarizer calls"),
                    )),
                ]
            })
            .collect(),
    ));
}

fn compaction_stuck(d: &RunData, b: &mut Vec<Block>) {
    let n = d.stuck_sessions as f64;
    b.push(Block::Para(t(format!(
        "Compaction stuck in {}: a long-running function call was never answered, and google-adk 2.13.0 compacts nothing from that call on (google/adk-python#7236), while the prompt keeps growing. Answer or cancel such calls (docs/pitfalls.md).{}",
        plural(n, "session", "sessions"),
        if d.stuck_sessions > STUCK_LISTED {
            format!(" The first {STUCK_LISTED} are listed.")
        } else {
            String::new()
        }
    ))));
    b.push(Block::Table {
        head: vec![
            "session".into(),
            "call".into(),
            "event".into(),
            "stuck history tokens".into(),
            "under".into(),
        ],
        rows: d
            .stuck
            .iter()
            .map(|x| {
                let setting = d
                    .setting(&x.setting_id)
                    .map_or_else(|| x.setting_id.clone(), table_label);
                let more = x.settings.saturating_sub(1);
                vec![
                    vec![Inline::Code(format!("{}#{}", x.source, x.session_id))],
                    vec![Inline::Code(x.call.clone())],
                    t(int(x.event as f64)),
                    t(int(x.tokens)),
                    vec![
                        Inline::Code(setting),
                        Inline::Text(if more == 0 {
                            String::new()
                        } else {
                            format!(" and {more} more")
                        }),
                    ],
                ]
            })
            .collect(),
        numeric: vec![false, false, true, true, false],
    });
}
