//! Polars frames of the run folder and their writers: runs (one row per session × setting)
//! and settings (one row per setting), as Parquet, CSV and (settings) JSON.
//!
//! Writer options are set explicitly so the same rows give the same bytes: zstd at its
//! default level, min/max/null-count statistics, one row group per 65,536 rows, fixed float
//! precision in CSV, and nothing time- or path-dependent inside the files.

use super::columns::{metric_defs, Agg, Kind};
use super::summary::{AggValue, SettingSummary};
use super::{bad, Result, TableError};
use crate::cost::metrics::SessionMetrics;
use crate::cost::references::Basis;
use crate::for_each_metric;
use crate::sweep::grid::Setting;
use crate::sweep::run::{RunRow, SessionInfo, FLOAT_DECIMALS};
use polars::prelude::*;
use std::path::Path;

/// Rows per Parquet row group (fixed: part of the byte-determinism contract).
pub const ROW_GROUP_ROWS: usize = 65_536;

fn setting_columns(settings: Vec<&Setting>) -> Vec<Column> {
    let s = &settings;
    vec![
        Column::new(
            "trigger_kind".into(),
            s.iter().map(|x| x.trigger_kind.name()).collect::<Vec<_>>(),
        ),
        Column::new(
            "after_tokens".into(),
            s.iter().map(|x| x.after_tokens).collect::<Vec<_>>(),
        ),
        Column::new(
            "keep_recent_events".into(),
            s.iter().map(|x| x.keep_recent_events).collect::<Vec<_>>(),
        ),
        Column::new(
            "after_invocations".into(),
            s.iter().map(|x| x.after_invocations).collect::<Vec<_>>(),
        ),
        Column::new(
            "overlap".into(),
            s.iter().map(|x| x.overlap).collect::<Vec<_>>(),
        ),
        Column::new(
            "summarizer".into(),
            s.iter()
                .map(|x| x.summarizer.as_deref())
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "agent_model".into(),
            s.iter().map(|x| x.agent_model.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "client".into(),
            s.iter().map(|x| x.client.name()).collect::<Vec<_>>(),
        ),
        Column::new(
            "tokenizer".into(),
            s.iter().map(|x| x.tokenizer.as_str()).collect::<Vec<_>>(),
        ),
        Column::new(
            "setting_id".into(),
            s.iter().map(|x| x.setting_id).collect::<Vec<_>>(),
        ),
    ]
}

/// One row per (session, setting): session keys, the setting's fields, every metric.
pub fn runs_frame(
    sessions: &[SessionInfo],
    settings: &[Setting],
    rows: &[RunRow],
) -> Result<DataFrame> {
    let sess = |r: &RunRow| sessions.get(r.session as usize);
    let mut cols = vec![
        Column::new(
            "session_id".into(),
            rows.iter()
                .map(|r| sess(r).map_or("", |s| s.session_id.as_str()))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "source".into(),
            rows.iter()
                .map(|r| sess(r).map_or("", |s| s.source.as_str()))
                .collect::<Vec<_>>(),
        ),
    ];
    let set_refs: Vec<&Setting> = rows
        .iter()
        .map(|r| {
            settings
                .get(r.setting as usize)
                .ok_or(TableError::UnknownSetting(r.setting))
        })
        .collect::<Result<_>>()?;
    cols.extend(setting_columns(set_refs));
    macro_rules! col {
        ($f:ident, OptFloat, $u:expr, $a:ident) => {
            cols.push(Column::new(
                stringify!($f).into(),
                rows.iter()
                    .map(|r| r.metrics.$f)
                    .collect::<Vec<Option<f64>>>(),
            ));
        };
        ($f:ident, Basis, $u:expr, $a:ident) => {
            cols.push(Column::new(
                stringify!($f).into(),
                rows.iter().map(|r| r.metrics.$f.name()).collect::<Vec<_>>(),
            ));
        };
        ($f:ident, $k:ident, $u:expr, $a:ident) => {
            cols.push(Column::new(
                stringify!($f).into(),
                rows.iter().map(|r| r.metrics.$f).collect::<Vec<_>>(),
            ));
        };
    }
    for_each_metric!(col);
    DataFrame::new_infer_height(cols).map_err(|source| TableError::Polars {
        what: "building the runs frame",
        source,
    })
}

/// Rows back from a runs frame (what `merge` reads), with `session_index` mapping
/// `(source, session_id)` to the merged run's session order.
pub fn rows_from_runs_frame(
    df: &DataFrame,
    file: &str,
    session_index: &dyn Fn(&str, &str) -> Option<u32>,
) -> Result<Vec<RunRow>> {
    let col = |name: &str| {
        df.column(name)
            .map_err(|_| bad(file, format!("column `{name}` is missing")))
    };
    let ids = col("session_id")?
        .str()
        .map_err(|_| bad(file, "column `session_id` is not text"))?
        .clone();
    let srcs = col("source")?
        .str()
        .map_err(|_| bad(file, "column `source` is not text"))?
        .clone();
    let set = col("setting_id")?
        .u32()
        .map_err(|_| bad(file, "column `setting_id` is not UInt32"))?
        .clone();
    let n = df.height();
    let mut rows: Vec<RunRow> = Vec::with_capacity(n);
    for i in 0..n {
        let id = ids
            .get(i)
            .ok_or_else(|| bad(file, format!("row {i}: session_id is empty")))?;
        let src = srcs
            .get(i)
            .ok_or_else(|| bad(file, format!("row {i}: source is empty")))?;
        let session = session_index(src, id).ok_or_else(|| {
            bad(
                file,
                format!("row {i}: session `{id}` from `{src}` is not in the run's session list"),
            )
        })?;
        let setting = set
            .get(i)
            .ok_or_else(|| bad(file, format!("row {i}: setting_id is empty")))?;
        rows.push(RunRow {
            session,
            setting,
            metrics: SessionMetrics::default(),
        });
    }
    macro_rules! read {
        ($f:ident, Count, $u:expr, $a:ident) => {{
            let c = col(stringify!($f))?
                .u64()
                .map_err(|_| bad(file, format!("column `{}` is not UInt64", stringify!($f))))?
                .clone();
            for (i, r) in rows.iter_mut().enumerate() {
                r.metrics.$f = c
                    .get(i)
                    .ok_or_else(|| bad(file, format!("row {i}: `{}` is empty", stringify!($f))))?;
            }
        }};
        ($f:ident, Signed, $u:expr, $a:ident) => {{
            let c = col(stringify!($f))?
                .i64()
                .map_err(|_| bad(file, format!("column `{}` is not Int64", stringify!($f))))?
                .clone();
            for (i, r) in rows.iter_mut().enumerate() {
                r.metrics.$f = c
                    .get(i)
                    .ok_or_else(|| bad(file, format!("row {i}: `{}` is empty", stringify!($f))))?;
            }
        }};
        ($f:ident, Float, $u:expr, $a:ident) => {{
            let c = col(stringify!($f))?
                .f64()
                .map_err(|_| bad(file, format!("column `{}` is not Float64", stringify!($f))))?
                .clone();
            for (i, r) in rows.iter_mut().enumerate() {
                r.metrics.$f = c
                    .get(i)
                    .ok_or_else(|| bad(file, format!("row {i}: `{}` is empty", stringify!($f))))?;
            }
        }};
        ($f:ident, OptFloat, $u:expr, $a:ident) => {{
            let c = col(stringify!($f))?
                .f64()
                .map_err(|_| bad(file, format!("column `{}` is not Float64", stringify!($f))))?
                .clone();
            for (i, r) in rows.iter_mut().enumerate() {
                r.metrics.$f = c.get(i);
            }
        }};
        ($f:ident, Bool, $u:expr, $a:ident) => {{
            let c = col(stringify!($f))?
                .bool()
                .map_err(|_| bad(file, format!("column `{}` is not Boolean", stringify!($f))))?
                .clone();
            for (i, r) in rows.iter_mut().enumerate() {
                r.metrics.$f = c
                    .get(i)
                    .ok_or_else(|| bad(file, format!("row {i}: `{}` is empty", stringify!($f))))?;
            }
        }};
        ($f:ident, Basis, $u:expr, $a:ident) => {{
            let c = col(stringify!($f))?
                .str()
                .map_err(|_| bad(file, format!("column `{}` is not text", stringify!($f))))?
                .clone();
            for (i, r) in rows.iter_mut().enumerate() {
                let word = c
                    .get(i)
                    .ok_or_else(|| bad(file, format!("row {i}: `{}` is empty", stringify!($f))))?;
                r.metrics.$f = Basis::parse(word).ok_or_else(|| {
                    bad(
                        file,
                        format!(
                            "row {i}: `{}` is `{word}`, expected measured, estimated or none",
                            stringify!($f)
                        ),
                    )
                })?;
            }
        }};
    }
    for_each_metric!(read);
    Ok(rows)
}

/// One row per setting: its fields, label, aggregates, pareto, rank, recommended.
pub fn settings_frame(summaries: &[SettingSummary]) -> Result<DataFrame> {
    let mut cols = setting_columns(summaries.iter().map(|s| &s.setting).collect());
    cols.push(Column::new(
        "label".into(),
        summaries
            .iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "sessions".into(),
        summaries.iter().map(|s| s.sessions).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "cost_complete".into(),
        summaries
            .iter()
            .map(|s| s.cost_complete)
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "references_broken_basis".into(),
        summaries
            .iter()
            .map(|s| s.references_broken_basis.name())
            .collect::<Vec<_>>(),
    ));
    for (k, (name, integer)) in agg_columns().iter().enumerate() {
        if *integer {
            let v: Vec<Option<i64>> = summaries
                .iter()
                .map(|s| match s.aggs.get(k) {
                    Some((_, AggValue::Int(i))) => Some(*i),
                    _ => None,
                })
                .collect();
            cols.push(Column::new(name.as_str().into(), v));
        } else {
            let v: Vec<Option<f64>> = summaries
                .iter()
                .map(|s| s.aggs.get(k).and_then(|(_, v)| v.as_f64()))
                .collect();
            cols.push(Column::new(name.as_str().into(), v));
        }
    }
    cols.push(Column::new(
        "pareto".into(),
        summaries.iter().map(|s| s.pareto).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "within_budget".into(),
        summaries
            .iter()
            .map(|s| s.within_budget)
            .collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "rank".into(),
        summaries.iter().map(|s| s.rank).collect::<Vec<_>>(),
    ));
    cols.push(Column::new(
        "recommended".into(),
        summaries.iter().map(|s| s.recommended).collect::<Vec<_>>(),
    ));
    DataFrame::new_infer_height(cols).map_err(|source| TableError::Polars {
        what: "building the settings frame",
        source,
    })
}

/// `<metric>_<agg>` names in column order, and whether the column holds integers (sum and
/// max of a count stay counts; means and percentiles are floats).
pub fn agg_columns() -> Vec<(String, bool)> {
    let mut v = Vec::new();
    for d in metric_defs() {
        if d.kind == Kind::Bool {
            continue;
        }
        for a in d.aggs {
            let integer =
                matches!(d.kind, Kind::Count | Kind::Signed) && matches!(a, Agg::Sum | Agg::Max);
            v.push((format!("{}_{}", d.name, a.suffix()), integer));
        }
    }
    v
}

/// settings.json: an array of objects with the same columns as settings.csv.
pub fn settings_json(summaries: &[SettingSummary]) -> Result<String> {
    let mut arr = Vec::new();
    for s in summaries {
        let mut o = serde_json::Map::new();
        let st = &s.setting;
        o.insert("trigger_kind".into(), st.trigger_kind.name().into());
        o.insert(
            "after_tokens".into(),
            serde_json::to_value(st.after_tokens)?,
        );
        o.insert(
            "keep_recent_events".into(),
            serde_json::to_value(st.keep_recent_events)?,
        );
        o.insert(
            "after_invocations".into(),
            serde_json::to_value(st.after_invocations)?,
        );
        o.insert("overlap".into(), serde_json::to_value(st.overlap)?);
        o.insert("summarizer".into(), serde_json::to_value(&st.summarizer)?);
        o.insert("agent_model".into(), st.agent_model.clone().into());
        o.insert("client".into(), st.client.name().into());
        o.insert("tokenizer".into(), st.tokenizer.clone().into());
        o.insert("setting_id".into(), st.setting_id.into());
        o.insert("label".into(), s.label.clone().into());
        o.insert("sessions".into(), s.sessions.into());
        o.insert("cost_complete".into(), s.cost_complete.into());
        o.insert(
            "references_broken_basis".into(),
            s.references_broken_basis.name().into(),
        );
        for (n, v) in &s.aggs {
            o.insert(n.clone(), serde_json::to_value(v)?);
        }
        o.insert("pareto".into(), s.pareto.into());
        o.insert("within_budget".into(), s.within_budget.into());
        o.insert("rank".into(), s.rank.into());
        o.insert("recommended".into(), s.recommended.into());
        arr.push(serde_json::Value::Object(o));
    }
    let mut text = serde_json::to_string_pretty(&arr)?;
    text.push('\n');
    Ok(text)
}

pub fn parquet_bytes(df: &mut DataFrame) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    ParquetWriter::new(&mut buf)
        .with_compression(ParquetCompression::Zstd(None))
        .with_statistics(StatisticsOptions::default())
        .with_row_group_size(Some(ROW_GROUP_ROWS))
        .with_data_page_size(Some(1024 * 1024))
        .finish(df)
        .map_err(|source| TableError::Polars {
            what: "encoding Parquet",
            source,
        })?;
    Ok(buf)
}

pub fn csv_bytes(df: &mut DataFrame) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    CsvWriter::new(&mut buf)
        .include_header(true)
        .with_float_precision(Some(FLOAT_DECIMALS as usize))
        .with_float_scientific(Some(false))
        .with_line_terminator("\n".into())
        .finish(df)
        .map_err(|source| TableError::Polars {
            what: "encoding CSV",
            source,
        })?;
    Ok(buf)
}

pub fn read_parquet(path: &Path) -> Result<DataFrame> {
    let f = std::fs::File::open(path).map_err(|source| TableError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    ParquetReader::new(f).finish().map_err(|e| {
        bad(
            &path.display().to_string(),
            format!("not a readable Parquet file: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::grid::{Budgets, GridSpec, Known};
    use crate::table::summary::summarize;

    fn fixture() -> (Vec<SessionInfo>, Vec<Setting>, Vec<RunRow>) {
        let k = Known {
            model: &|_| true,
            tokenizers: &["o200k"],
        };
        let settings = GridSpec::from_toml(
            "g",
            "after_tokens=[1000,2000]\nkeep_recent_events=[1]\nsummarizer=['agent','terse']",
        )
        .unwrap()
        .resolve(&k)
        .unwrap()
        .settings;
        let sessions: Vec<SessionInfo> = (0..3)
            .map(|i| SessionInfo {
                session_id: format!("s{i}"),
                source: format!("f{i}.json"),
                format: "adk".into(),
                events: 10,
                model_requests: 3,
                ..Default::default()
            })
            .collect();
        let mut rows = Vec::new();
        for s in 0..3u32 {
            for set in &settings {
                rows.push(RunRow {
                    session: s,
                    setting: set.setting_id,
                    metrics: SessionMetrics {
                        model_requests: 3,
                        tokens_saved_net: -(s as i64),
                        cost_usd: 0.000123 * (s + 1) as f64,
                        facts_dropped: if set.summarizer.as_deref() == Some("terse") {
                            Some(0.5)
                        } else {
                            None
                        },
                        cost_complete: true,
                        ..Default::default()
                    },
                });
            }
        }
        (sessions, settings, rows)
    }

    #[test]
    fn runs_round_trip_through_parquet() {
        let (sessions, settings, rows) = fixture();
        let mut df = runs_frame(&sessions, &settings, &rows).unwrap();
        assert_eq!(df.height(), rows.len());
        let bytes = parquet_bytes(&mut df).unwrap();
        let back = ParquetReader::new(std::io::Cursor::new(bytes))
            .finish()
            .unwrap();
        let idx = |src: &str, id: &str| {
            sessions
                .iter()
                .position(|s| s.source == src && s.session_id == id)
                .map(|i| i as u32)
        };
        let again = rows_from_runs_frame(&back, "runs.parquet", &idx).unwrap();
        assert_eq!(again, rows);
    }

    #[test]
    fn bytes_are_stable() {
        let (sessions, settings, rows) = fixture();
        let a = parquet_bytes(&mut runs_frame(&sessions, &settings, &rows).unwrap()).unwrap();
        let b = parquet_bytes(&mut runs_frame(&sessions, &settings, &rows).unwrap()).unwrap();
        assert_eq!(a, b);
        let sum = summarize(&settings, &rows, &Budgets::default());
        let csv =
            String::from_utf8(csv_bytes(&mut settings_frame(&sum).unwrap()).unwrap()).unwrap();
        let header = csv.lines().next().unwrap();
        assert!(header.starts_with("trigger_kind,after_tokens,keep_recent_events,after_invocations,overlap,summarizer,agent_model,client,tokenizer,setting_id,label"));
        assert!(
            header.contains("cost_usd_sum")
                && header.ends_with("pareto,within_budget,rank,recommended")
        );
        // fixed precision: 0.000123 + 0.000246 + 0.000369 = 0.000738
        assert!(csv.contains("0.000738"), "{csv}");
        let json: serde_json::Value = serde_json::from_str(&settings_json(&sum).unwrap()).unwrap();
        assert_eq!(json.as_array().unwrap().len(), settings.len());
        assert_eq!(json[0]["trigger_kind"], "none");
        assert!(json[0]["summarizer"].is_null());
    }
}
