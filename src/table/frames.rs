//! Polars frames of the run folder and their writers: runs (one row per session × setting)
//! and settings (one row per setting), as Parquet, CSV and (settings) JSON.
//!
//! Writer options are set explicitly so the same rows give the same bytes: zstd at its
//! default level, min/max/null-count statistics, one row group per 65,536 rows, fixed float
//! precision in CSV, and nothing time- or path-dependent inside the files.

use super::columns::{metric_defs, Agg, Kind, MetricDef};
use super::summary::{AggValue, SettingSummary};
use super::{bad, Result, TableError};
use crate::cost::metrics::SessionMetrics;
use crate::detail::references::Basis;
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

/// The `policy` and `policy_setting` columns (docs/policies.md): the other framework's
/// policy a row replays and its numbers; empty for ADK settings. Kept last so that a run
/// without `--policy` differs from one made before them only by these two empty columns.
fn policy_columns(settings: &[&Setting]) -> Vec<Column> {
    vec![
        Column::new(
            "policy".into(),
            settings
                .iter()
                .map(|x| x.policy.as_ref().map(|p| p.family()))
                .collect::<Vec<_>>(),
        ),
        Column::new(
            "policy_setting".into(),
            settings
                .iter()
                .map(|x| x.policy.as_ref().map(|p| p.params()))
                .collect::<Vec<_>>(),
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
    let policy_cols = policy_columns(&set_refs);
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
        ($f:ident, OptCount, $u:expr, $a:ident) => {
            cols.push(Column::new(
                stringify!($f).into(),
                rows.iter()
                    .map(|r| r.metrics.$f)
                    .collect::<Vec<Option<u64>>>(),
            ));
        };
        ($f:ident, OptText, $u:expr, $a:ident) => {
            cols.push(Column::new(
                stringify!($f).into(),
                rows.iter()
                    .map(|r| r.metrics.$f.as_deref())
                    .collect::<Vec<Option<&str>>>(),
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
    cols.extend(policy_cols);
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
    fill_metrics(df, file, &mut rows)?;
    Ok(rows)
}

/// The metric columns of a runs frame into `rows` (parallel to the frame's rows), each
/// checked for its stored type; only `facts_dropped`-like optional floats may be empty.
fn fill_metrics(df: &DataFrame, file: &str, rows: &mut [RunRow]) -> Result<()> {
    let col = |name: &str| {
        df.column(name)
            .map_err(|_| bad(file, format!("column `{name}` is missing")))
    };
    let not = |name: &str, t: &str| bad(file, format!("column `{name}` is not {t}"));
    let empty = |i: usize, name: &str| bad(file, format!("row {i}: `{name}` is empty"));
    macro_rules! required {
        ($f:ident, $cast:ident, $t:expr) => {{
            let name = stringify!($f);
            let c = col(name)?.$cast().map_err(|_| not(name, $t))?;
            for (i, (r, v)) in rows.iter_mut().zip(c.iter()).enumerate() {
                r.metrics.$f = v.ok_or_else(|| empty(i, name))?;
            }
        }};
    }
    macro_rules! read {
        ($f:ident, Count, $u:expr, $a:ident) => {
            required!($f, u64, "UInt64")
        };
        ($f:ident, Signed, $u:expr, $a:ident) => {
            required!($f, i64, "Int64")
        };
        ($f:ident, Float, $u:expr, $a:ident) => {
            required!($f, f64, "Float64")
        };
        ($f:ident, Bool, $u:expr, $a:ident) => {
            required!($f, bool, "Boolean")
        };
        ($f:ident, OptFloat, $u:expr, $a:ident) => {{
            let name = stringify!($f);
            let c = col(name)?.f64().map_err(|_| not(name, "Float64"))?;
            for (r, v) in rows.iter_mut().zip(c.iter()) {
                r.metrics.$f = v;
            }
        }};
        ($f:ident, OptCount, $u:expr, $a:ident) => {{
            let name = stringify!($f);
            let c = col(name)?.u64().map_err(|_| not(name, "UInt64"))?;
            for (r, v) in rows.iter_mut().zip(c.iter()) {
                r.metrics.$f = v;
            }
        }};
        ($f:ident, OptText, $u:expr, $a:ident) => {{
            let name = stringify!($f);
            let c = col(name)?.str().map_err(|_| not(name, "text"))?;
            for (r, v) in rows.iter_mut().zip(c.iter()) {
                r.metrics.$f = v.map(str::to_string);
            }
        }};
        ($f:ident, Basis, $u:expr, $a:ident) => {{
            let name = stringify!($f);
            let c = col(name)?.str().map_err(|_| not(name, "text"))?;
            for (i, (r, word)) in rows.iter_mut().zip(c.iter()).enumerate() {
                let word = word.ok_or_else(|| empty(i, name))?;
                r.metrics.$f = Basis::parse(word).ok_or_else(|| {
                    bad(
                        file,
                        format!(
                            "row {i}: `{name}` is `{word}`, expected measured, estimated or none"
                        ),
                    )
                })?;
            }
        }};
    }
    for_each_metric!(read);
    Ok(())
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
        "alternative".into(),
        summaries
            .iter()
            .map(|s| s.setting.alternative_text())
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
    cols.extend(pitfall_columns(summaries));
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
    let set_refs: Vec<&Setting> = summaries.iter().map(|s| &s.setting).collect();
    cols.extend(policy_columns(&set_refs));
    DataFrame::new_infer_height(cols).map_err(|source| TableError::Polars {
        what: "building the settings frame",
        source,
    })
}

/// The settings columns of ADK's pitfalls (docs/pitfalls.md), after the aggregates.
fn pitfall_columns(summaries: &[SettingSummary]) -> Vec<Column> {
    let col = |name: &str, get: fn(&SettingSummary) -> u64| {
        Column::new(name.into(), summaries.iter().map(get).collect::<Vec<_>>())
    };
    vec![
        col("thrash", |s| s.pitfalls.thrash),
        col("thrash_sessions", |s| s.pitfalls.thrash_sessions),
        col("stuck_sessions", |s| s.pitfalls.stuck_sessions),
    ]
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
        o.insert("alternative".into(), st.alternative_text().into());
        o.insert("sessions".into(), s.sessions.into());
        o.insert("cost_complete".into(), s.cost_complete.into());
        o.insert(
            "references_broken_basis".into(),
            s.references_broken_basis.name().into(),
        );
        for (n, v) in &s.aggs {
            o.insert(n.clone(), serde_json::to_value(v)?);
        }
        o.insert("thrash".into(), s.pitfalls.thrash.into());
        o.insert("thrash_sessions".into(), s.pitfalls.thrash_sessions.into());
        o.insert("stuck_sessions".into(), s.pitfalls.stuck_sessions.into());
        o.insert("pareto".into(), s.pareto.into());
        o.insert("within_budget".into(), s.within_budget.into());
        o.insert("rank".into(), s.rank.into());
        o.insert("recommended".into(), s.recommended.into());
        // only on policy rows: a run without `--policy` writes the same JSON as before
        if let Some(p) = &st.policy {
            o.insert("policy".into(), p.family().into());
            o.insert("policy_setting".into(), p.params().into());
        }
        arr.push(serde_json::Value::Object(o));
    }
    let mut text = serde_json::to_string_pretty(&arr)?;
    text.push('\n');
    Ok(text)
}

/// `runs.csv` is written for runs of at most this many (session, setting) rows, unless asked
/// for (`--runs-csv`): above it the CSV (~400 bytes a row) outgrows what a spreadsheet opens,
/// and `runs.parquet` holds the same rows (docs/sweeps.md "The run folder").
pub const RUNS_CSV_MAX_ROWS: u64 = 500_000;

fn parquet_writer<W: std::io::Write>(w: W) -> ParquetWriter<W> {
    ParquetWriter::new(w)
        .with_compression(ParquetCompression::Zstd(None))
        .with_statistics(StatisticsOptions::default())
        .with_row_group_size(Some(ROW_GROUP_ROWS))
        .with_data_page_size(Some(1024 * 1024))
}

fn csv_writer<W: std::io::Write>(w: W) -> CsvWriter<W> {
    CsvWriter::new(w)
        .include_header(true)
        .with_float_precision(Some(FLOAT_DECIMALS as usize))
        .with_float_scientific(Some(false))
        .with_line_terminator("\n".into())
}

fn polars(what: &'static str) -> impl FnOnce(PolarsError) -> TableError {
    move |source| TableError::Polars { what, source }
}

/// Written unbuffered: both writers hand over whole encoded pages or batches of lines.
type FileOut = std::fs::File;

/// `runs.parquet` (and `runs.csv` when asked) written as rows come, a row group of
/// [`ROW_GROUP_ROWS`] at a time, so a sweep holds one row group of rows, not all of them.
/// Rows must be pushed in (session, setting) order; the files appear (atomically) only at
/// [`RunsWriter::finish`].
pub struct RunsWriter<'a> {
    sessions: &'a [SessionInfo],
    settings: &'a [Setting],
    buf: Vec<RunRow>,
    rows: u64,
    parquet: (
        crate::atomic::AtomicFile,
        polars::io::parquet::write::BatchedWriter<FileOut>,
    ),
    csv: Option<(
        crate::atomic::AtomicFile,
        polars::io::csv::write::BatchedWriter<FileOut>,
    )>,
}

impl<'a> RunsWriter<'a> {
    /// Start `runs.parquet` (and `runs.csv` when `csv`) in `dir`.
    pub fn create(
        dir: &Path,
        sessions: &'a [SessionInfo],
        settings: &'a [Setting],
        csv: bool,
    ) -> Result<RunsWriter<'a>> {
        let schema = runs_frame(sessions, settings, &[])?
            .schema()
            .as_ref()
            .clone();
        let open = |name: &str| -> Result<(crate::atomic::AtomicFile, FileOut)> {
            let f = crate::atomic::AtomicFile::create(&dir.join(name))?;
            let h = f.handle()?;
            Ok((f, h))
        };
        let (pf, pw) = open("runs.parquet")?;
        let parquet = (
            pf,
            parquet_writer(pw)
                .batched(&schema)
                .map_err(polars("starting runs.parquet"))?,
        );
        let csv = if csv {
            let (cf, cw) = open("runs.csv")?;
            Some((
                cf,
                csv_writer(cw)
                    .batched(&schema)
                    .map_err(polars("starting runs.csv"))?,
            ))
        } else {
            None
        };
        Ok(RunsWriter {
            sessions,
            settings,
            buf: Vec::with_capacity(ROW_GROUP_ROWS),
            rows: 0,
            parquet,
            csv,
        })
    }

    /// Append rows; every full row group is encoded and written at once.
    pub fn push(&mut self, rows: impl IntoIterator<Item = RunRow>) -> Result<()> {
        for r in rows {
            self.buf.push(r);
            if self.buf.len() == ROW_GROUP_ROWS {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let df = runs_frame(self.sessions, self.settings, &self.buf)?;
        self.parquet
            .1
            .write_batch(&df)
            .map_err(polars("encoding runs.parquet"))?;
        if let Some((_, w)) = &mut self.csv {
            w.write_batch(&df).map_err(polars("encoding runs.csv"))?;
        }
        self.rows += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Write the last rows and the footers, and put the files in place. Returns the rows
    /// written.
    pub fn finish(mut self) -> Result<u64> {
        self.flush()?;
        let RunsWriter { parquet, csv, .. } = self;
        let (pf, pw) = parquet;
        pw.finish().map_err(polars("finishing runs.parquet"))?;
        drop(pw);
        pf.commit()?;
        if let Some((cf, mut cw)) = csv {
            cw.finish().map_err(polars("finishing runs.csv"))?;
            drop(cw);
            cf.commit()?;
        }
        Ok(self.rows)
    }
}

/// A Parquet file opened for reading one row group at a time (each a frame of at most
/// [`ROW_GROUP_ROWS`] rows, in file order), so a table of any length is read in bounded
/// memory.
pub struct RowGroups {
    path: std::path::PathBuf,
    file: String,
    columns: Vec<String>,
    metadata: std::sync::Arc<polars::io::parquet::read::FileMetadata>,
    /// (first row, rows) of each row group.
    groups: Vec<(usize, usize)>,
}

impl RowGroups {
    pub fn open(path: &Path) -> Result<RowGroups> {
        let file = path.display().to_string();
        let mut head = ParquetReader::new(Self::file(path)?);
        let unreadable = |e: PolarsError| bad(&file, format!("not a readable Parquet file: {e}"));
        let columns = head
            .schema()
            .map_err(unreadable)?
            .iter_names()
            .map(|n| n.to_string())
            .collect();
        let metadata = head.get_metadata().map_err(unreadable)?.clone();
        let mut start = 0usize;
        let groups = metadata
            .row_groups
            .iter()
            .map(|g| {
                let r = (start, g.num_rows());
                start += g.num_rows();
                r
            })
            .collect();
        Ok(RowGroups {
            path: path.to_path_buf(),
            file,
            columns,
            metadata,
            groups,
        })
    }

    fn file(path: &Path) -> Result<std::fs::File> {
        std::fs::File::open(path).map_err(|source| TableError::Read {
            path: path.to_path_buf(),
            source,
        })
    }

    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// The file's column names.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Row group `i`, `columns` only (all of them when empty). A missing column is an error
    /// naming the file.
    pub fn read(&self, i: usize, columns: &[&str]) -> Result<DataFrame> {
        for c in columns {
            if !self.columns.iter().any(|n| n == c) {
                return Err(bad(&self.file, format!("column `{c}` is missing")));
            }
        }
        let Some(&(start, n)) = self.groups.get(i) else {
            return Err(bad(&self.file, format!("no row group {i}")));
        };
        let mut r = ParquetReader::new(Self::file(&self.path)?);
        r.set_metadata(self.metadata.clone());
        let cols: Vec<String> = columns.iter().map(|c| c.to_string()).collect();
        r.with_columns((!cols.is_empty()).then_some(cols))
            .with_slice(Some((start, n)))
            .finish()
            .map_err(|e| bad(&self.file, format!("not a readable Parquet file: {e}")))
    }
}

/// Read `columns` (all of them when empty) of a Parquet file one row group at a time.
pub fn for_each_row_group(
    path: &Path,
    columns: &[&str],
    f: &mut dyn FnMut(&DataFrame) -> Result<()>,
) -> Result<()> {
    let groups = RowGroups::open(path)?;
    for i in 0..groups.len() {
        f(&groups.read(i, columns)?)?;
    }
    Ok(())
}

/// A metric column of a runs frame as [`MetricDef::get`] would give it per row (counts as
/// floats, booleans as 1/0, nulls and text as `None`).
pub fn metric_column(df: &DataFrame, d: &MetricDef, file: &str) -> Result<Vec<Option<f64>>> {
    let c = df
        .column(d.name)
        .map_err(|_| bad(file, format!("column `{}` is missing", d.name)))?;
    let wrong = |t: &str| bad(file, format!("column `{}` is not {t}", d.name));
    Ok(match d.kind {
        Kind::Count | Kind::OptCount => c
            .u64()
            .map_err(|_| wrong("UInt64"))?
            .iter()
            .map(|v| v.map(|v| v as f64))
            .collect(),
        Kind::Signed => c
            .i64()
            .map_err(|_| wrong("Int64"))?
            .iter()
            .map(|v| v.map(|v| v as f64))
            .collect(),
        Kind::Float | Kind::OptFloat => c.f64().map_err(|_| wrong("Float64"))?.iter().collect(),
        Kind::Bool => c
            .bool()
            .map_err(|_| wrong("Boolean"))?
            .iter()
            .map(|v| v.map(|b| if b { 1.0 } else { 0.0 }))
            .collect(),
        Kind::Basis | Kind::OptText => vec![None; df.height()],
    })
}

/// The `setting_id` column of a runs frame.
pub fn setting_ids(df: &DataFrame, file: &str) -> Result<Vec<Option<u32>>> {
    Ok(df
        .column("setting_id")
        .map_err(|_| bad(file, "column `setting_id` is missing"))?
        .u32()
        .map_err(|_| bad(file, "column `setting_id` is not UInt32"))?
        .iter()
        .collect())
}

pub fn parquet_bytes(df: &mut DataFrame) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    parquet_writer(&mut buf)
        .finish(df)
        .map_err(|source| TableError::Polars {
            what: "encoding Parquet",
            source,
        })?;
    Ok(buf)
}

pub fn csv_bytes(df: &mut DataFrame) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    csv_writer(&mut buf)
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

    /// Issue 13: the streamed writer gives the bytes the whole-frame writer gave (a run
    /// under one row group is byte-identical to the runs written before streaming).
    #[test]
    fn streamed_runs_equal_the_whole_frame() {
        let (sessions, settings, rows) = fixture();
        let d = tempfile::tempdir().unwrap();
        let mut w = RunsWriter::create(d.path(), &sessions, &settings, true).unwrap();
        for r in &rows {
            w.push([r.clone()]).unwrap();
        }
        assert_eq!(w.finish().unwrap(), rows.len() as u64);
        let mut df = runs_frame(&sessions, &settings, &rows).unwrap();
        assert!(
            std::fs::read(d.path().join("runs.parquet")).unwrap()
                == parquet_bytes(&mut df).unwrap()
        );
        assert!(std::fs::read(d.path().join("runs.csv")).unwrap() == csv_bytes(&mut df).unwrap());
        // No rows: the header and the schema alone, as before.
        let e = tempfile::tempdir().unwrap();
        RunsWriter::create(e.path(), &sessions, &settings, true)
            .unwrap()
            .finish()
            .unwrap();
        let mut empty = runs_frame(&sessions, &settings, &[]).unwrap();
        assert!(
            std::fs::read(e.path().join("runs.parquet")).unwrap()
                == parquet_bytes(&mut empty).unwrap()
        );
        assert!(
            std::fs::read(e.path().join("runs.csv")).unwrap() == csv_bytes(&mut empty).unwrap()
        );
        let names: Vec<_> = std::fs::read_dir(e.path())
            .unwrap()
            .map(|f| f.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        assert_eq!(names.len(), 2, "no temp files left: {names:?}");
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
                && header.ends_with("pareto,within_budget,rank,recommended,policy,policy_setting")
        );
        // fixed precision: 0.000123 + 0.000246 + 0.000369 = 0.000738
        assert!(csv.contains("0.000738"), "{csv}");
        let json: serde_json::Value = serde_json::from_str(&settings_json(&sum).unwrap()).unwrap();
        assert_eq!(json.as_array().unwrap().len(), settings.len());
        assert_eq!(json[0]["trigger_kind"], "none");
        assert!(json[0]["summarizer"].is_null());
    }
}
