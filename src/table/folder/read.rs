//! Parsing the run folder's files: `settings.json`, `runs.csv`, `runs.parquet` (a row group
//! at a time), `timelines.json`.

use super::digest::Digest;
use super::{bad, DataError, SessionFigures, SessionRow, SettingRow, Timeline, RUN_COLUMNS};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

pub(super) fn read_text(path: &Path) -> Result<String, DataError> {
    std::fs::read_to_string(path).map_err(|source| DataError::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub(super) fn read_json(path: &Path) -> Result<Value, DataError> {
    let text = read_text(path)?;
    serde_json::from_str(&text)
        .map_err(|e| bad(path, format!("line {}: invalid JSON: {e}", e.line())))
}

/// Parses `recorded_compactions.json` (written by a sweep whose inputs record compactions,
/// `table::rundir::RECORDED_COMPACTIONS`); a bad field names its line and column.
/// Its figures are checked as the other run files' are: each finite and at most
/// [`MAX_TABLE_NUMBER`], none negative but `prompt_overhead`, and an estimate's `low` at most
/// its `high`; a bad one is named by its JSON path.
pub fn parse_recorded(path: &Path) -> Result<crate::backtest::Backtest, DataError> {
    let text = read_text(path)?;
    let at = |e: serde_json::Error| {
        bad(
            path,
            format!("line {} column {}: {e}", e.line(), e.column()),
        )
    };
    let value: Value = serde_json::from_str(&text).map_err(at)?;
    if let Some((json_path, what)) = recorded_figure_out_of_range(&value, "$") {
        return Err(bad(path, format!("{json_path}: {what}")));
    }
    serde_json::from_value(value).map_err(|e| bad(path, e.to_string()))
}

/// The first figure of `recorded_compactions.json` out of its range, with its JSON path.
fn recorded_figure_out_of_range(v: &Value, at: &str) -> Option<(String, String)> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| recorded_figure_out_of_range(x, &format!("{at}[{i}]"))),
        Value::Object(map) => {
            if let (Some(low), Some(high)) = (
                map.get("low").and_then(Value::as_f64),
                map.get("high").and_then(Value::as_f64),
            ) {
                if low > high {
                    return Some((at.to_string(), format!("low {low} is above high {high}")));
                }
            }
            map.iter().find_map(|(k, x)| {
                let here = format!("{at}.{k}");
                match x.as_f64() {
                    Some(f) if !f.is_finite() || f.abs() > MAX_TABLE_NUMBER => Some((
                        here,
                        format!("{f:e} is out of range (expected a finite number of magnitude at most {MAX_TABLE_NUMBER:e})"),
                    )),
                    Some(f) if f < 0.0 && k != "prompt_overhead" => {
                        Some((here, format!("{f} is negative (expected 0 or more)")))
                    }
                    _ => recorded_figure_out_of_range(x, &here),
                }
            })
        }
        _ => None,
    }
}

fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
        Value::String(s) => s.replace('_', "").parse().ok(),
        _ => None,
    }
}

fn as_bool(v: &Value) -> bool {
    match v {
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => s == "true" || s == "1",
        _ => false,
    }
}

fn as_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

pub use crate::settings::number::MAX_TABLE_NUMBER;

/// What a metric column's figures may be (metrics.md's list, `table::columns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    /// A share or a mean of flags: 0 to 1.
    Share,
    /// Counts, costs, waits: 0 or more.
    NonNegative,
    /// Savings, fitted figures: any finite number.
    Any,
    /// Text (`references_broken_basis`, `stuck_call`): never a number.
    Text,
}

/// Every metric column the sweep writes, by name: the run's per-session columns and the
/// settings' aggregates (`cost_usd_sum`, `detail_lost_p95`...), built once.
fn column_ranges() -> &'static std::collections::HashMap<String, Range> {
    use crate::table::columns::{metric_defs, Kind};
    static RANGES: std::sync::OnceLock<std::collections::HashMap<String, Range>> =
        std::sync::OnceLock::new();
    RANGES.get_or_init(|| {
        let mut map = std::collections::HashMap::new();
        for d in metric_defs() {
            let range = match d.kind {
                Kind::Basis | Kind::OptText => Range::Text,
                _ if d.unit.starts_with("share") => Range::Share,
                Kind::Bool => Range::Share,
                Kind::Count | Kind::OptCount => Range::NonNegative,
                Kind::Float if ["USD", "s", "references"].contains(&d.unit) => {
                    match d.name.contains("saved") {
                        true => Range::Any,
                        false => Range::NonNegative,
                    }
                }
                _ => Range::Any,
            };
            map.insert(d.name.to_string(), range);
            for a in d.aggs {
                // The mean of a flag is a share; the other aggregates keep the column's range.
                map.insert(format!("{}_{}", d.name, a.suffix()), range);
            }
        }
        map
    })
}

/// What is wrong with the number `v` of column `name`, if anything: not finite, beyond
/// [`MAX_TABLE_NUMBER`], or outside its column's range (a share above 1, a negative cost
/// or count), so that a tampered or damaged folder is refused instead of shown.
fn out_of_range(name: &str, v: f64) -> Option<String> {
    if !v.is_finite() || v.abs() > MAX_TABLE_NUMBER {
        return Some(format!(
            "{v:e} is out of range (expected a finite number of magnitude at most {MAX_TABLE_NUMBER:e})"
        ));
    }
    match column_ranges().get(name) {
        Some(Range::Share) if !(0.0..=1.0).contains(&v) => {
            Some(format!("{v} is not a share (expected 0 to 1)"))
        }
        Some(Range::NonNegative) if v < 0.0 => {
            Some(format!("{v} is negative (expected 0 or more)"))
        }
        Some(Range::Text) => Some(format!("{v} is a number (expected text)")),
        _ => None,
    }
}

/// What is wrong with a non-number `v` in column `name`, if the column holds numbers: a
/// figure written as text (`"abc"`, even `"1.5"`) would otherwise be read as missing.
fn not_a_number(name: &str, v: &Value) -> Option<String> {
    match (column_ranges().get(name), v) {
        (None | Some(Range::Text), _) | (_, Value::Null) => None,
        (Some(Range::Share), Value::Bool(_)) => None,
        (Some(_), other) => Some(format!(
            "{} is not a number",
            crate::transcript::util::one_line(&other.to_string(), 40)
        )),
    }
}

/// Parses `settings.json` (an array of objects, or `{"settings": [...]}`).
pub fn parse_settings(path: &Path, v: &Value) -> Result<Vec<SettingRow>, DataError> {
    let arr = v
        .as_array()
        .or_else(|| v.get("settings").and_then(Value::as_array))
        .ok_or_else(|| bad(path, "$: expected an array of setting rows"))?;
    let mut out = Vec::with_capacity(arr.len());
    for (i, row) in arr.iter().enumerate() {
        let obj = row
            .as_object()
            .ok_or_else(|| bad(path, format!("$[{i}]: expected an object")))?;
        let setting_id = as_string(obj.get("setting_id"));
        if setting_id.is_empty() {
            return Err(bad(path, format!("$[{i}].setting_id: missing")));
        }
        let mut numbers = BTreeMap::new();
        for (k, val) in obj {
            if let Some(f) = val.as_f64() {
                if let Some(what) = out_of_range(k, f) {
                    return Err(bad(path, format!("$[{i}].{k}: {what}")));
                }
                numbers.insert(k.clone(), f);
            } else if let Some(what) = not_a_number(k, val) {
                return Err(bad(path, format!("$[{i}].{k}: {what}")));
            } else if let Some(b) = val.as_bool() {
                // Flags such as cost_complete, as 1/0.
                numbers.insert(k.clone(), if b { 1.0 } else { 0.0 });
            }
        }
        let trigger_kind = match as_string(obj.get("trigger_kind")).as_str() {
            "" => "none".to_string(),
            t => t.to_string(),
        };
        out.push(SettingRow {
            setting_id,
            trigger_kind,
            after_tokens: obj.get("after_tokens").and_then(as_u64),
            keep_recent_events: obj.get("keep_recent_events").and_then(as_u64),
            after_invocations: obj.get("after_invocations").and_then(as_u64),
            overlap: obj.get("overlap").and_then(as_u64),
            summarizer: as_string(obj.get("summarizer")),
            agent_model: as_string(obj.get("agent_model")),
            client: as_string(obj.get("client")),
            tokenizer: as_string(obj.get("tokenizer")),
            label: as_string(obj.get("label")),
            pareto: obj.get("pareto").is_some_and(as_bool),
            rank: obj.get("rank").and_then(as_u64),
            recommended: obj.get("recommended").is_some_and(as_bool),
            numbers,
            references_basis: as_string(obj.get("references_broken_basis")),
            alternative: as_string(obj.get("alternative")),
            policy: as_string(obj.get("policy")),
            policy_setting: as_string(obj.get("policy_setting")),
        });
    }
    Ok(out)
}

/// CSV text that does not split into records.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    #[error("line {line}: unterminated quoted field")]
    Unterminated { line: usize },
}

/// Splits CSV text (RFC 4180: quoted fields, doubled quotes, newlines inside quotes) into
/// records, each with the 1-based line it starts on.
pub fn parse_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, CsvError> {
    let mut records = Vec::new();
    let mut field = String::new();
    let mut record = Vec::new();
    let mut in_quotes = false;
    let mut line = 1usize;
    let mut start_line = 1usize;
    let mut chars = text.chars().peekable();
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        if in_quotes {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => in_quotes = false,
                '\n' => {
                    line += 1;
                    field.push(c);
                }
                _ => field.push(c),
            }
            continue;
        }
        match c {
            '"' => in_quotes = true,
            ',' => record.push(std::mem::take(&mut field)),
            '\r' => {}
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push((start_line, std::mem::take(&mut record)));
                line += 1;
                start_line = line;
                any = false;
            }
            _ => field.push(c),
        }
    }
    if in_quotes {
        return Err(CsvError::Unterminated { line: start_line });
    }
    if any {
        record.push(field);
        records.push((start_line, record));
    }
    Ok(records)
}

/// Parses `runs.csv`: `session_id, source, setting_id` + numeric metric columns.
pub fn parse_runs(path: &Path, text: &str) -> Result<Vec<SessionRow>, DataError> {
    let records = parse_csv(text).map_err(|e| bad(path, e.to_string()))?;
    let mut it = records.into_iter();
    let Some((_, header)) = it.next() else {
        return Ok(Vec::new());
    };
    let col = |name: &str| header.iter().position(|h| h == name);
    let (Some(sid), Some(set)) = (col("session_id"), col("setting_id")) else {
        return Err(bad(
            path,
            "line 1: header needs session_id and setting_id columns",
        ));
    };
    let src = col("source");
    let call = col("stuck_call");
    let mut out = Vec::new();
    for (line, rec) in it {
        if rec.len() == 1 && rec[0].is_empty() {
            continue;
        }
        if rec.len() != header.len() {
            return Err(bad(
                path,
                format!(
                    "line {line}: {} fields, header has {}",
                    rec.len(),
                    header.len()
                ),
            ));
        }
        let mut figures = SessionFigures::default();
        for (i, h) in header.iter().enumerate() {
            if i == sid || i == set || Some(i) == src || Some(i) == call {
                continue;
            }
            let value = match rec[i].trim() {
                "" => None,
                "true" => Some(1.0),
                "false" => Some(0.0),
                cell => match cell.parse::<f64>() {
                    Ok(f) => {
                        if let Some(what) = out_of_range(h, f) {
                            return Err(bad(path, format!("line {line}: column {h}: {what}")));
                        }
                        Some(f)
                    }
                    Err(_) => match not_a_number(h, &Value::String(cell.to_string())) {
                        Some(what) => {
                            return Err(bad(path, format!("line {line}: column {h}: {what}")))
                        }
                        None => None,
                    },
                },
            };
            if let (Some(v), Some(slot)) = (value, figures.slot(h)) {
                *slot = Some(v);
            }
        }
        out.push(SessionRow {
            session_id: rec[sid].clone(),
            source: src.map(|i| rec[i].clone()).unwrap_or_default(),
            setting_id: rec[set].clone(),
            figures,
            stuck_call: call.map(|i| rec[i].clone()).filter(|c| !c.is_empty()),
        });
    }
    Ok(out)
}

/// Fold `runs.parquet` into `digest` a row group at a time, reading the key columns and the
/// [`RUN_COLUMNS`] it has; numbers are checked as in runs.csv.
pub(super) fn digest_parquet(path: &Path, digest: &mut Digest) -> Result<(), DataError> {
    use crate::table::frames::RowGroups;
    use polars::prelude::DataType;
    let table = |e: crate::table::TableError| bad(path, e.to_string());
    let groups = RowGroups::open(path).map_err(|e| match e {
        crate::table::TableError::Read { source, .. } => DataError::Io {
            path: path.to_path_buf(),
            source,
        },
        other => table(other),
    })?;
    let wanted: Vec<&str> = RUN_COLUMNS
        .iter()
        .copied()
        .filter(|c| groups.columns().iter().any(|n| n == c))
        .collect();
    let mut cols = vec!["session_id", "source", "setting_id"];
    let has_call = groups.columns().iter().any(|n| n == "stuck_call");
    if has_call {
        cols.push("stuck_call");
    }
    cols.extend(&wanted);
    let mut row0 = 0usize;
    for g in 0..groups.len() {
        let df = groups.read(g, &cols).map_err(table)?;
        let text = |name: &str| -> Result<Vec<Option<String>>, DataError> {
            let c = df
                .column(name)
                .and_then(|c| c.cast(&DataType::String))
                .map_err(|e| bad(path, format!("column {name}: {e}")))?;
            let s = c
                .str()
                .map_err(|e| bad(path, format!("column {name}: {e}")))?;
            Ok(s.iter().map(|v| v.map(str::to_string)).collect())
        };
        let ids = text("session_id")?;
        let sources = text("source")?;
        let sets = text("setting_id")?;
        let calls = if has_call {
            text("stuck_call")?
        } else {
            vec![None; df.height()]
        };
        let mut nums: Vec<Vec<Option<f64>>> = Vec::with_capacity(wanted.len());
        for name in &wanted {
            let c = df
                .column(name)
                .and_then(|c| c.cast(&DataType::Float64))
                .map_err(|e| bad(path, format!("column {name}: {e}")))?;
            let v: Vec<Option<f64>> = c
                .f64()
                .map_err(|e| bad(path, format!("column {name}: {e}")))?
                .iter()
                .collect();
            for (i, x) in v.iter().enumerate() {
                if let Some(what) = x.and_then(|x| out_of_range(name, x)) {
                    return Err(bad(
                        path,
                        format!("row {}: column {name}: {what}", row0 + i + 1),
                    ));
                }
            }
            nums.push(v);
        }
        for i in 0..df.height() {
            let mut figures = SessionFigures::default();
            for (k, w) in wanted.iter().enumerate() {
                if let Some(slot) = figures.slot(w) {
                    *slot = nums[k][i];
                }
            }
            digest.add(
                ids[i].as_deref().unwrap_or(""),
                sources[i].as_deref().unwrap_or(""),
                sets[i].as_deref().unwrap_or(""),
                &figures,
                calls[i].as_deref(),
            );
        }
        row0 += df.height();
    }
    Ok(())
}

/// A list of prompt sizes: plain numbers, or objects with `prompt_tokens` (the sweep's
/// `{request, prompt_tokens}` rows).
fn num_array(v: Option<&Value>) -> Vec<f64> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| {
                    x.as_f64()
                        .or_else(|| x.get("prompt_tokens").and_then(Value::as_f64))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Parses `timelines.json`: `{"sessions": [...]}` (or a bare array) of
/// `{session_id, baseline: [{request, prompt_tokens}], recommended: [...], compactions:
/// [{before_request, kind, applied}]}`; number arrays and `requests: [{baseline_prompt_tokens,
/// prompt_tokens}]` are accepted too. Compactions with `applied: false` (discarded or empty
/// summaries) changed no prompt and are left out.
pub fn parse_timelines(path: &Path, v: &Value) -> Result<Vec<Timeline>, DataError> {
    let arr = v
        .as_array()
        .or_else(|| v.get("sessions").and_then(Value::as_array))
        .or_else(|| v.get("timelines").and_then(Value::as_array))
        .ok_or_else(|| bad(path, "$: expected an array of session timelines"))?;
    let mut out = Vec::new();
    for (i, t) in arr.iter().enumerate() {
        let obj = t
            .as_object()
            .ok_or_else(|| bad(path, format!("$[{i}]: expected an object")))?;
        let mut tl = Timeline {
            session_id: as_string(obj.get("session_id")),
            setting_id: as_string(obj.get("setting_id")),
            ..Timeline::default()
        };
        if let Some(reqs) = obj.get("requests").and_then(Value::as_array) {
            for (j, r) in reqs.iter().enumerate() {
                let b = r.get("baseline_prompt_tokens").and_then(Value::as_f64);
                let p = r.get("prompt_tokens").and_then(Value::as_f64);
                match (b, p) {
                    (Some(b), Some(p)) => {
                        tl.baseline.push(b);
                        tl.compacted.push(p);
                    }
                    _ => {
                        return Err(bad(
                            path,
                            format!(
                            "$[{i}].requests[{j}]: needs baseline_prompt_tokens and prompt_tokens"
                        ),
                        ))
                    }
                }
            }
        } else {
            tl.baseline = num_array(obj.get("baseline"));
            tl.compacted = num_array(obj.get("compacted").or_else(|| obj.get("recommended")));
            // A run where no setting met the budgets has no recommended setting, so its
            // timelines carry the baseline alone.
            if !tl.compacted.is_empty() && tl.baseline.len() != tl.compacted.len() {
                return Err(bad(
                    path,
                    format!("$[{i}]: baseline and compacted differ in length"),
                ));
            }
        }
        if let Some(cs) = obj.get("compactions").and_then(Value::as_array) {
            for c in cs {
                if c.get("applied").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                let idx = as_u64(c)
                    .or_else(|| c.get("before_request").and_then(as_u64))
                    .or_else(|| c.get("request_index").and_then(as_u64))
                    .or_else(|| c.get("at_request").and_then(as_u64));
                if let Some(idx) = idx {
                    tl.compactions.push(idx as usize);
                }
            }
        }
        out.push(tl);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::folder::RunData;

    /// The report keeps per-session rows only where it reads them: the baseline's, the
    /// recommended setting's, and the tightest cap's where a run failed. An alternative's
    /// rows are not kept (per session they were most of what the report's memory grew by).
    #[test]
    fn only_the_rows_the_report_reads_are_kept() {
        let settings = serde_json::json!([
            {"setting_id": 0, "trigger_kind": "none", "label": "no compaction", "cost_usd_sum": 10.0},
            {"setting_id": 1, "trigger_kind": "tokens", "after_tokens": 1000, "keep_recent_events": 2, "label": "x", "cost_usd_sum": 8.0, "recommended": true},
            {"setting_id": 2, "trigger_kind": "tokens", "after_tokens": 2000, "keep_recent_events": 2, "label": "y", "cost_usd_sum": 9.0},
            {"setting_id": 3, "trigger_kind": "none", "alternative": "artifacts", "label": "a", "cost_usd_sum": 7.0},
            {"setting_id": 4, "trigger_kind": "none", "alternative": "max_llm_calls=10", "label": "c10", "cost_usd_sum": 6.0},
            {"setting_id": 5, "trigger_kind": "none", "alternative": "max_llm_calls=5", "label": "c5", "cost_usd_sum": 5.0}
        ]);
        let mut runs = String::from("session_id,source,setting_id,invocations_failed\n");
        for s in ["a", "b"] {
            for id in 0..=5 {
                let failed = u32::from(s == "a" && id >= 4);
                runs.push_str(&format!("{s},f,{id},{failed}\n"));
            }
        }
        let d = RunData::from_rows(
            Path::new("."),
            serde_json::json!({}),
            parse_settings(Path::new("settings.json"), &settings).expect("settings"),
            parse_runs(Path::new("runs.csv"), &runs).expect("runs"),
            Vec::new(),
        );
        let kept: Vec<(&str, &str)> = d
            .runs
            .iter()
            .map(|r| (r.session_id.as_str(), r.setting_id.as_str()))
            .collect();
        assert_eq!(
            kept,
            vec![("a", "0"), ("a", "1"), ("a", "5"), ("b", "0"), ("b", "1")]
        );
        assert_eq!(d.sessions, 2);
    }

    #[test]
    fn broken_references_pool_counts_over_sessions_with_their_bounds() {
        let mut s = SettingRow::default();
        assert_eq!(
            s.broken_references_pooled(),
            None,
            "run made before the columns"
        );
        for (k, v) in [
            ("references_sum", 200.0),
            ("references_broken_sum", 50.0),
            ("references_broken_low_sum", 10.0),
            ("references_broken_high_sum", 80.0),
        ] {
            s.numbers.insert(k.into(), v);
        }
        assert_eq!(s.broken_references_pooled(), Some((0.25, 0.05, 0.4)));
        s.numbers.insert("references_sum".into(), 0.0);
        assert_eq!(
            s.broken_references_pooled(),
            None,
            "no references: no share"
        );
    }

    #[test]
    fn csv_handles_quotes_commas_and_newlines() {
        let recs = parse_csv("a,b\n\"x, \"\"y\"\"\",\"1\n2\"\nlast,3").unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[1].1, vec!["x, \"y\"".to_string(), "1\n2".to_string()]);
        assert_eq!(
            recs[2].0, 4,
            "record after an embedded newline starts on line 4"
        );
        assert!(parse_csv("\"open").is_err());
    }

    #[test]
    fn runs_csv_reports_the_bad_line() {
        let err = parse_runs(
            Path::new("runs.csv"),
            "session_id,setting_id,cost_usd\na,s1,1.5\nb,s1\n",
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "runs.csv: line 3: 2 fields, header has 3");
    }

    /// Issue 47 item 9: a tampered `recorded_compactions.json` is refused as the other run
    /// files are, naming the file once and the figure by its JSON path.
    #[test]
    fn tampered_recorded_compactions_figures_are_refused_with_their_json_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recorded_compactions.json");
        let fw = |ratio: &str| {
            format!(
                r#"{{"compactions": [], "frameworks": {{"claude_code": {{"sessions": 1, "auto_recorded": 1,
                "auto_matched": 1, "manual": 0, "auto_matched_with_fit": 0,
                "median_abs_delta_tokens_before_pct": null, "tokens_after_ratio": {ratio},
                "duration_ratio": null}}}}, "sessions": []}}"#
            )
        };
        std::fs::write(&path, fw("0.5")).unwrap();
        assert!(parse_recorded(&path).is_ok());
        let shown = path.display().to_string();
        for (ratio, says) in [
            ("-1.0", "-1 is negative"),
            (&format!("1{}", "0".repeat(300)), "out of range"),
        ] {
            std::fs::write(&path, fw(ratio)).unwrap();
            let e = parse_recorded(&path).unwrap_err().to_string();
            assert!(
                e.contains("$.frameworks.claude_code.tokens_after_ratio") && e.contains(says),
                "{e}"
            );
            assert_eq!(e.matches(&shown).count(), 1, "{e}");
        }
        std::fs::write(
            &path,
            r#"{"compactions": [{"agent_estimate": {"value": 3, "low": 5, "high": 2}}], "frameworks": {}, "sessions": []}"#,
        )
        .unwrap();
        let e = parse_recorded(&path).unwrap_err().to_string();
        assert!(
            e.contains("$.compactions[0].agent_estimate: low 5 is above high 2"),
            "{e}"
        );
    }
}
