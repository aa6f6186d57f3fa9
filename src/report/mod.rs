//! report.md and a self-contained report.html from a run folder.
//!
//! Reads only the run folder's data (through [`crate::table::folder`]) and the charts it
//! renders; knows nothing of the engine. The report is first built as a list of [`Block`]s
//! holding raw strings, then rendered twice; each renderer escapes every string it emits
//! (see [`escape`]), so no data string reaches either file unescaped.

mod alternatives;
mod build;
pub mod escape;
pub mod explorer;
mod figures;
mod frontier;
mod pitfalls;
mod recommend;
mod recorded;
mod run_facts;

use crate::chart::{self, ChartOutcome};
use crate::table::folder::{DataError, RunData};
use std::path::Path;

pub use build::{build, run_name};

/// A span of text inside a paragraph or cell. Every variant holds raw, unescaped text.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    Text(String),
    Strong(String),
    Code(String),
}

/// One block of the report, renderer-neutral.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(u8, String),
    Para(Vec<Inline>),
    /// A paste-ready line.
    Code(String),
    List(Vec<Vec<Inline>>),
    Table {
        head: Vec<String>,
        rows: Vec<Vec<Vec<Inline>>>,
        numeric: Vec<bool>,
    },
    /// Where report.html's explorer goes (nothing in report.md, nothing printed).
    Explorer,
    Chart {
        stem: String,
        title: String,
        how: String,
        note: String,
        svg: Option<String>,
        skipped: Option<String>,
    },
}

/// Shorthand for a text cell.
pub fn t(s: impl Into<String>) -> Vec<Inline> {
    vec![Inline::Text(s.into())]
}

/// What `render_run` wrote.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub charts_drawn: usize,
    pub charts_skipped: Vec<(String, String)>,
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Chart(#[from] chart::ChartError),
    #[error(transparent)]
    Write(#[from] crate::atomic::AtomicError),
    /// A run folder whose settings.json holds no setting: nothing to report, and a page
    /// rendered from it would have no setting to show.
    #[error("{}: no settings: an empty run has nothing to report", .0.display())]
    EmptyRun(std::path::PathBuf),
}

impl crate::error::Classify for ReportError {
    fn exit_kind(&self) -> crate::error::ExitKind {
        use crate::error::{io_kind, ExitKind};
        match self {
            ReportError::Data(DataError::Io { source, .. }) => io_kind(source),
            ReportError::Data(_) => ExitKind::BadInput,
            ReportError::Chart(c) => c.exit_kind(),
            ReportError::Write(_) => ExitKind::Environment,
            ReportError::EmptyRun(_) => ExitKind::BadInput,
        }
    }
}

/// Renders the charts, report.md and report.html into `dir` from `dir`'s data files,
/// stopping between charts once `cancel` is set (a signal).
pub fn render_run(
    dir: &Path,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<Rendered, ReportError> {
    let data = RunData::load(dir)?;
    if data.settings.is_empty() {
        return Err(ReportError::EmptyRun(dir.join("settings.json")));
    }
    let charts = chart::render_all(&data, dir, cancel)?;
    let blocks = build(&data, &charts);
    crate::atomic::write_atomic(&dir.join("report.md"), to_markdown(&blocks).as_bytes())?;
    let island = explorer::island(&data, build::money_decimals(&data));
    crate::atomic::write_atomic(
        &dir.join("report.html"),
        to_html(&blocks, &title(&data), Some(&island)).as_bytes(),
    )?;
    let mut skipped = Vec::new();
    let mut drawn = 0;
    for c in &charts {
        match c {
            ChartOutcome::Rendered { .. } => drawn += 1,
            ChartOutcome::Skipped { info, reason } => {
                skipped.push((info.stem.to_string(), reason.clone()))
            }
        }
    }
    Ok(Rendered {
        charts_drawn: drawn,
        charts_skipped: skipped,
    })
}

fn title(d: &RunData) -> String {
    format!("Compaction report: {}", build::run_name(d))
}

fn md_inline(parts: &[Inline]) -> String {
    let mut s = String::new();
    for p in parts {
        match p {
            Inline::Text(x) => s.push_str(&escape::md(x)),
            Inline::Strong(x) => {
                s.push_str("**");
                s.push_str(&escape::md(x));
                s.push_str("**");
            }
            // A code span shows its content literally (quotes included), but a raw `<` would
            // still reach naive viewers and `|` / backticks break GFM tables and spans; such
            // text is escaped as plain text instead.
            Inline::Code(x) => {
                if x.chars()
                    .any(|c| matches!(c, '<' | '>' | '&' | '`' | '|') || c.is_control())
                {
                    s.push_str(&escape::md(x));
                } else {
                    s.push('`');
                    s.push_str(x);
                    s.push('`');
                }
            }
        }
    }
    s
}

/// report.md: GitHub-flavoured Markdown; charts as links to the PNGs next to it.
pub fn to_markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                out.push_str(&"#".repeat(*level as usize));
                out.push(' ');
                out.push_str(&escape::md(text));
                out.push_str("\n\n");
            }
            Block::Para(parts) => {
                out.push_str(&md_inline(parts));
                out.push_str("\n\n");
            }
            Block::Explorer => {}
            Block::Code(code) => {
                out.push_str(&escape::md_code_block(code));
                out.push('\n');
            }
            Block::List(items) => {
                for it in items {
                    out.push_str("- ");
                    out.push_str(&md_inline(it));
                    out.push('\n');
                }
                out.push('\n');
            }
            Block::Table {
                head,
                rows,
                numeric,
            } => {
                out.push('|');
                for h in head {
                    out.push(' ');
                    out.push_str(&escape::md(h));
                    out.push_str(" |");
                }
                out.push_str("\n|");
                for i in 0..head.len() {
                    out.push_str(if numeric.get(i).copied().unwrap_or(false) {
                        "---:|"
                    } else {
                        "---|"
                    });
                }
                out.push('\n');
                for r in rows {
                    out.push('|');
                    for c in r {
                        out.push(' ');
                        out.push_str(&md_inline(c));
                        out.push_str(" |");
                    }
                    out.push('\n');
                }
                out.push('\n');
            }
            Block::Chart {
                stem,
                title,
                how,
                note,
                svg,
                skipped,
            } => {
                out.push_str("### ");
                out.push_str(&escape::md(title));
                out.push_str("\n\n");
                match (svg, skipped) {
                    (Some(_), _) => {
                        // The stem is one of the fixed chart names, never data.
                        out.push_str(&format!("![{}]({stem}.png)\n\n", escape::md(title)));
                        out.push_str(&escape::md(how));
                        if !note.is_empty() {
                            out.push_str(&format!(" ({})", escape::md(note)));
                        }
                        out.push_str(&format!(" Vector version: [{stem}.svg]({stem}.svg).\n\n"));
                    }
                    (None, reason) => {
                        out.push_str(&format!(
                            "Not drawn: {}.\n\n",
                            escape::md(reason.as_deref().unwrap_or("no data"))
                        ));
                    }
                }
            }
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn html_inline(parts: &[Inline]) -> String {
    let mut s = String::new();
    for p in parts {
        match p {
            Inline::Text(x) => s.push_str(&escape::html(x)),
            Inline::Strong(x) => s.push_str(&format!("<strong>{}</strong>", escape::html(x))),
            Inline::Code(x) => s.push_str(&format!("<code>{}</code>", escape::html(x))),
        }
    }
    s
}

const CSS: &str = r#"
:root { color-scheme: light; }
body { font-family: "DejaVu Sans", system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 1100px; margin: 2em auto; padding: 0 1.2em; color: #1d1d1f; line-height: 1.5; }
h1 { font-size: 1.8em; margin-bottom: .2em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
pre { background: #f4f6f8; border: 1px solid #d0d7de; border-left: 5px solid #d62728; padding: .8em 1em; overflow-x: auto; font-size: 1.05em; white-space: pre-wrap; word-break: break-all; }
code { font-family: "DejaVu Sans Mono", ui-monospace, Menlo, Consolas, monospace; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .8em 0 1.2em; font-size: .92em; }
th, td { border: 1px solid #d0d7de; padding: .3em .6em; vertical-align: top; }
th { background: #f4f6f8; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td code { font-size: .95em; }
p code { white-space: nowrap; }
figure { margin: 1em 0 2em; }
figure svg { width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #444; font-size: .95em; margin-top: .3em; }
.skipped { color: #666; font-style: italic; }
#explorer { border: 1px solid #d0d7de; border-radius: 6px; padding: 0 1em 1em; margin: 1.5em 0; background: #fbfcfd; }
.ex-controls { display: flex; flex-wrap: wrap; gap: .4em 1.2em; margin: .6em 0; }
.ex-controls label { white-space: nowrap; }
#explorer-chart { width: 100%; height: auto; border: 1px solid #eee; background: #fff; }
#explorer-paste { user-select: all; }
@media print {
  #explorer { display: none !important; }
  body { max-width: none; margin: 0; padding: 0; font-size: 9pt; }
  h2, h3 { break-after: avoid; }
  tr, pre, li { break-inside: avoid; }
  thead { display: table-header-group; }
  section.chart { break-inside: avoid; }
  .scroll { overflow: visible; }
  pre { white-space: pre-wrap; }
  figure { margin: .5em 0 1em; }
}
"#;

/// report.html: one file, no external resources (the CSP forbids any), charts inline as
/// SVG. With `island` (the explorer's data, see [`explorer::island`]) the page also carries
/// the explorer's one script, the only one the CSP lets run (by its hash); without scripts
/// the page is the static report.
pub fn to_html(blocks: &[Block], title: &str, island: Option<&str>) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let script_src = match island {
        Some(_) => format!("script-src {}; ", explorer::script_source()),
        None => String::new(),
    };
    out.push_str(&format!("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; {script_src}style-src 'unsafe-inline'; img-src data:\">\n"));
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!(
        "<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        escape::html(title)
    ));
    for b in blocks {
        match b {
            Block::Heading(level, text) => {
                let l = (*level).clamp(1, 6);
                out.push_str(&format!("<h{l}>{}</h{l}>\n", escape::html(text)));
            }
            Block::Para(parts) => out.push_str(&format!("<p>{}</p>\n", html_inline(parts))),
            Block::Explorer => {
                if island.is_some() {
                    out.push_str("<section id=\"explorer\" hidden></section>\n");
                }
            }
            Block::Code(code) => {
                out.push_str(&format!("<pre><code>{}</code></pre>\n", escape::html(code)))
            }
            Block::List(items) => {
                out.push_str("<ul>\n");
                for it in items {
                    out.push_str(&format!("<li>{}</li>\n", html_inline(it)));
                }
                out.push_str("</ul>\n");
            }
            Block::Table {
                head,
                rows,
                numeric,
            } => html_table(&mut out, head, rows, numeric),
            Block::Chart {
                stem,
                title,
                how,
                note,
                svg,
                skipped,
            } => html_chart(
                &mut out,
                stem,
                title,
                how,
                note,
                svg.as_deref(),
                skipped.as_deref(),
            ),
        }
    }
    if let Some(island) = island {
        out.push_str("<script type=\"application/json\" id=\"explorer-data\">");
        out.push_str(island);
        out.push_str("</script>\n<script>");
        out.push_str(explorer::SCRIPT);
        out.push_str("</script>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

/// A table in a scrolling box; numeric columns are right-aligned (class `num`).
fn html_table(out: &mut String, head: &[String], rows: &[Vec<Vec<Inline>>], numeric: &[bool]) {
    out.push_str("<div class=\"scroll\"><table>\n<thead><tr>");
    for h in head {
        out.push_str(&format!("<th>{}</th>", escape::html(h)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if numeric.get(i).copied().unwrap_or(false) {
                " class=\"num\""
            } else {
                ""
            };
            out.push_str(&format!("<td{class}>{}</td>", html_inline(c)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table></div>\n");
}

/// A chart's section: heading, the inline SVG and its caption, or why it was not drawn.
/// Heading, chart and caption stay together on a printed page.
fn html_chart(
    out: &mut String,
    stem: &str,
    title: &str,
    how: &str,
    note: &str,
    svg: Option<&str>,
    skipped: Option<&str>,
) {
    out.push_str("<section class=\"chart\">\n");
    out.push_str(&format!("<h3 id=\"{stem}\">{}</h3>\n", escape::html(title)));
    match svg {
        Some(svg) => {
            out.push_str("<figure>\n");
            out.push_str(&sanitize_svg(svg));
            let note = if note.is_empty() {
                String::new()
            } else {
                format!(" ({})", escape::html(note))
            };
            out.push_str(&format!(
                "\n<figcaption>{}{note}</figcaption>\n</figure>\n",
                escape::html(how)
            ));
        }
        None => out.push_str(&format!(
            "<p class=\"skipped\">Not drawn: {}.</p>\n",
            escape::html(skipped.unwrap_or("no data"))
        )),
    }
    out.push_str("</section>\n");
}

/// plotters' SVG with its XML declaration dropped (not allowed inline) and an accessible
/// role. plotters escapes every text node and attribute it writes.
fn sanitize_svg(svg: &str) -> String {
    let body = match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    };
    body.replacen("<svg", "<svg role=\"img\"", 1)
}
