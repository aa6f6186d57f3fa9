//! Charts (plotters), each written as SVG and PNG into the run folder.
//!
//! Reads only the run folder's data ([`data::RunData`]); knows nothing of the engine. Text is
//! drawn with DejaVu Sans compiled into the binary (`src/data/fonts/`, Bitstream Vera
//! licence) and registered as plotters' `sans-serif`, so PNGs look the same on every machine
//! whatever fonts it has.

pub mod data;
pub mod plots;

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

pub use data::{DataError, RunData, RunRow, SettingRow, Timeline};

/// Chart size in pixels (PNG) and user units (SVG viewBox).
pub const WIDTH: u32 = 1200;
pub const HEIGHT: u32 = 800;

/// The family name every chart asks for; bound to the embedded font.
pub const FONT: &str = "sans-serif";

static FONT_BYTES: &[u8] = include_bytes!("../data/fonts/DejaVuSans.ttf");

/// Registers the embedded font once per process.
pub fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TTF compiled in; a failure here would be a build defect,
        // and plotters would then report FontUnavailable on the first text it draws.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES);
    });
}

/// One chart the report shows: how to name, title and read it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChartInfo {
    /// File stem: `<stem>.svg` and `<stem>.png` in the run folder.
    pub stem: &'static str,
    pub title: &'static str,
    /// One sentence on how to read it.
    pub how_to_read: &'static str,
}

/// The outcome for one chart.
#[derive(Debug, Clone)]
pub enum ChartOutcome {
    Rendered {
        info: ChartInfo,
        svg: String,
        note: String,
    },
    /// Not drawn because the run's data has nothing for it (e.g. no invocation settings).
    Skipped { info: ChartInfo, reason: String },
}

impl ChartOutcome {
    pub fn info(&self) -> &ChartInfo {
        match self {
            ChartOutcome::Rendered { info, .. } | ChartOutcome::Skipped { info, .. } => info,
        }
    }
}

/// A chart drawable on any backend, so SVG and PNG come from the same code.
pub(crate) trait Chart {
    fn info(&self) -> ChartInfo;
    /// `Err(reason)` when the data has nothing to draw; checked before any file is written.
    fn check(&self) -> Result<String, String>;
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// Maps a plotters error to text (the chart code uses `String` errors).
pub(crate) fn e<E: std::fmt::Display>(err: E) -> String {
    err.to_string()
}

/// Why a chart could not be written. Drawing failures are the chart code's (plotters gives
/// text); a file that cannot be written is the machine's (exit 3, see [`crate::error`]).
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("chart {stem}: cannot draw: {message}")]
    Draw { stem: &'static str, message: String },
    #[error(transparent)]
    Write(#[from] crate::atomic::AtomicError),
    /// A signal arrived between two charts.
    #[error(transparent)]
    Interrupted(#[from] crate::sweep::run::Cancelled),
}

impl crate::error::Classify for ChartError {
    fn exit_kind(&self) -> crate::error::ExitKind {
        match self {
            // Data the chart cannot draw came from the run folder the user gave.
            ChartError::Draw { .. } => crate::error::ExitKind::BadInput,
            ChartError::Write(_) => crate::error::ExitKind::Environment,
            ChartError::Interrupted(_) => crate::error::ExitKind::Interrupted,
        }
    }
}

/// Renders every chart into `out_dir` (SVG and PNG, written atomically) and returns what
/// was drawn or skipped, in report order. Stops between charts once `cancel` is set.
pub fn render_all(
    d: &RunData,
    out_dir: &Path,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<Vec<ChartOutcome>, ChartError> {
    register_fonts();
    let out = vec![
        render(&plots::CostVsDetail(d), out_dir, cancel)?,
        render(&plots::Heatmap::net_saved(d), out_dir, cancel)?,
        render(&plots::Heatmap::detail_lost(d), out_dir, cancel)?,
        render(&plots::InvocationsOverlap(d), out_dir, cancel)?,
        render(&plots::Latency(d), out_dir, cancel)?,
        render(&plots::Timelines(d), out_dir, cancel)?,
        render(&plots::Summarizers(d), out_dir, cancel)?,
    ];
    Ok(out)
}

fn render<C: Chart>(
    c: &C,
    out_dir: &Path,
    cancel: &std::sync::atomic::AtomicBool,
) -> Result<ChartOutcome, ChartError> {
    if cancel.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(crate::sweep::run::Cancelled.into());
    }
    let info = c.info();
    let note = match c.check() {
        Ok(n) => n,
        Err(reason) => return Ok(ChartOutcome::Skipped { info, reason }),
    };
    let draw = |message| ChartError::Draw {
        stem: info.stem,
        message,
    };
    let svg = render_svg(c).map_err(draw)?;
    let png = render_png(c).map_err(draw)?;
    crate::atomic::write_atomic(&out_dir.join(format!("{}.svg", info.stem)), svg.as_bytes())?;
    crate::atomic::write_atomic(&out_dir.join(format!("{}.png", info.stem)), &png)?;
    Ok(ChartOutcome::Rendered { info, svg, note })
}

pub(crate) fn render_svg<C: Chart>(c: &C) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        c.draw(&root)?;
        root.present().map_err(e)?;
    }
    Ok(svg)
}

/// The chart as PNG bytes, drawn and encoded in memory: the file is then written through the
/// one atomic writer, so a full disk never leaves half a PNG.
fn render_png<C: Chart>(c: &C) -> Result<Vec<u8>, String> {
    use image::ImageEncoder;
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        root.fill(&WHITE).map_err(e)?;
        c.draw(&root)?;
        root.present().map_err(e)?;
    }
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&rgb, WIDTH, HEIGHT, image::ColorType::Rgb8)
        .map_err(e)?;
    Ok(png)
}

/// `$1,234.56`, or 4 significant decimals below a dollar.
pub fn fmt_usd(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let a = v.abs();
    if a == 0.0 {
        return "$0.00".to_string();
    }
    if a < 1.0 {
        return format!("{sign}${a:.4}");
    }
    let cents = format!("{a:.2}");
    let (int, frac) = cents.split_once('.').unwrap_or((&cents, "00"));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("{sign}${grouped}.{frac}")
}

/// USD with 4 decimals (`$1.4259`), for runs whose totals are a few dollars: cents would hide
/// differences between settings, and the sweep's own summary prints 4 decimals too.
pub fn fmt_usd4(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let text = format!("{:.4}", v.abs());
    let (int_part, frac) = text.split_once('.').unwrap_or((&text, "0000"));
    let mut grouped = String::new();
    for (i, ch) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("{sign}${grouped}.{frac}")
}

/// Axis ticks in USD: two significant digits below a dollar (`$0.50`, `$0.012`), cents above.
pub fn fmt_usd_axis(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "$0".to_string();
    }
    if a >= 1.0 {
        return fmt_usd(v);
    }
    let decimals = (1 - a.log10().floor() as i32).clamp(2, 8) as usize;
    let sign = if v < 0.0 { "-" } else { "" };
    format!("{sign}${a:.decimals$}")
}

/// The most decimals a dollar amount is printed with: the run folder's tables hold 6
/// (`sweep::run::FLOAT_DECIMALS`), so two stored amounts that read the same are the same.
pub const MAX_USD_DECIMALS: usize = 6;
/// The most decimals a percentage is printed with: a share's 6 stored decimals.
pub const MAX_PCT_DECIMALS: usize = 4;

/// A 0..1 share as a percentage with one decimal.
pub fn fmt_pct(v: f64) -> String {
    fmt_pct_to(v, 1)
}

/// A 0..1 share as a percentage with `decimals` decimals (tables that must tell close
/// values apart, see [`decimals_to_tell_apart`]).
pub fn fmt_pct_to(v: f64, decimals: usize) -> String {
    format!("{:.decimals$} %", v * 100.0)
}

/// USD with `decimals` decimals and grouped thousands (`$1,234.5678`).
pub fn fmt_usd_to(v: f64, decimals: usize) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let text = format!("{:.decimals$}", v.abs());
    let (int_part, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut grouped = String::new();
    for (i, ch) in int_part.chars().enumerate() {
        if i > 0 && (int_part.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    if frac.is_empty() {
        format!("{sign}${grouped}")
    } else {
        format!("{sign}${grouped}.{frac}")
    }
}

/// The fewest decimals from `from` up to `to` at which `fmt` prints every two distinct
/// `values` differently (`to` when none does): a table whose rows are a trade must not show
/// two steps of it with the same figure.
pub fn decimals_to_tell_apart(
    values: &[f64],
    from: usize,
    to: usize,
    fmt: impl Fn(f64, usize) -> String,
) -> usize {
    let mut distinct: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    (from..=to)
        .find(|&dec| {
            let mut printed: Vec<String> = distinct.iter().map(|&v| fmt(v, dec)).collect();
            printed.dedup();
            printed.len() == distinct.len()
        })
        .unwrap_or(to)
}

/// Token counts as `80k` / `1.2M`.
pub fn fmt_tokens(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v.abs() >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Shortens `text` with a middle `…` until it fits `max_px` at `size` px in the embedded
/// font; the tail is kept (names like `model:…-lite` differ at their ends).
pub(crate) fn fit<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    size: f64,
    max_px: u32,
) -> String {
    let style = TextStyle::from((FONT, size).into_font());
    let fits = |s: &str| {
        root.estimate_text_size(s, &style)
            .map(|(w, _)| w <= max_px)
            .unwrap_or(true)
    };
    if fits(text) {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut n = chars.len();
    while n > 1 {
        n -= 1;
        let head = n * 2 / 5;
        let tail = n - head;
        let s: String = chars[..head].iter().collect::<String>()
            + "…"
            + &chars[chars.len() - tail..].iter().collect::<String>();
        if fits(&s) {
            return s;
        }
    }
    "…".to_string()
}

/// Places point labels without overlaps: tries right, left, above, below each anchor and
/// drops a label no position can take (it is still in the report's tables).
pub(crate) struct LabelPlacer {
    taken: Vec<(i32, i32, i32, i32)>,
}

impl LabelPlacer {
    pub fn new() -> Self {
        LabelPlacer { taken: Vec::new() }
    }

    /// Reserves a rectangle (e.g. a marker or the legend) so no label covers it.
    pub fn reserve(&mut self, r: (i32, i32, i32, i32)) {
        self.taken.push(r);
    }

    fn free(&self, r: (i32, i32, i32, i32), bounds: (i32, i32, i32, i32)) -> bool {
        r.0 >= bounds.0
            && r.1 >= bounds.1
            && r.2 <= bounds.2
            && r.3 <= bounds.3
            && self
                .taken
                .iter()
                .all(|t| r.2 < t.0 || r.0 > t.2 || r.3 < t.1 || r.1 > t.3)
    }

    /// Draws `text` near pixel `at` (absolute), inside `bounds`; returns false if dropped.
    pub fn place<DB: DrawingBackend>(
        &mut self,
        root: &DrawingArea<DB, Shift>,
        text: &str,
        at: (i32, i32),
        size: f64,
        color: RGBColor,
        bounds: (i32, i32, i32, i32),
    ) -> Result<bool, String> {
        let style = TextStyle::from((FONT, size).into_font()).color(&color);
        let (w, h) = root.estimate_text_size(text, &style).map_err(e)?;
        let (w, h) = (w as i32, h as i32);
        let gap = 22;
        let candidates = [
            (at.0 + gap, at.1 - h / 2),
            (at.0 - gap - w, at.1 - h / 2),
            (at.0 - w / 2, at.1 - gap - h),
            (at.0 - w / 2, at.1 + gap),
            (at.0 + gap, at.1 - gap - h),
            (at.0 + gap, at.1 + gap),
            (at.0 - gap - w, at.1 - gap - h),
            (at.0 - gap - w, at.1 + gap),
        ];
        for (x, y) in candidates {
            let r = (x - 2, y - 2, x + w + 2, y + h + 2);
            if self.free(r, bounds) {
                self.taken.push(r);
                root.draw(&Text::new(text.to_string(), (x, y), style.clone()))
                    .map_err(e)?;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_share_formats_carry_units() {
        assert_eq!(fmt_usd(1234.5), "$1,234.50");
        assert_eq!(fmt_usd(-12.0), "-$12.00");
        assert_eq!(fmt_usd(0.01234), "$0.0123");
        assert_eq!(fmt_pct(0.1234), "12.3 %");
        assert_eq!(fmt_usd_axis(0.5), "$0.50");
        assert_eq!(fmt_usd_axis(0.0123), "$0.012");
        assert_eq!(fmt_usd_axis(0.0), "$0");
        assert_eq!(fmt_usd_axis(2.0), "$2.00");
        assert_eq!(fmt_tokens(80_000.0), "80k");
        assert_eq!(fmt_tokens(1_260_000.0), "1.3M");
    }
}
