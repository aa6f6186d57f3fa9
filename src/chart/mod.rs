//! Charts (plotters), each written as SVG and PNG into the run folder.
//!
//! Reads only the run folder's data ([`crate::table::folder::RunData`]); knows nothing of the engine. Text is
//! drawn with DejaVu Sans compiled into the binary (`src/data/fonts/`, Bitstream Vera
//! licence) and registered as plotters' `sans-serif`, so PNGs look the same on every machine
//! whatever fonts it has.

pub mod plots;

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

use crate::table::folder::RunData;

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
    /// The note under the chart, or why the data has nothing to draw; checked before any
    /// file is written.
    fn check(&self) -> Result<String, NothingToDraw>;
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError>;
}

/// Why a chart is skipped: the run's data has nothing for it (the report says so).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NothingToDraw(pub String);

impl From<&str> for NothingToDraw {
    fn from(reason: &str) -> Self {
        NothingToDraw(reason.to_string())
    }
}

impl From<String> for NothingToDraw {
    fn from(reason: String) -> Self {
        NothingToDraw(reason)
    }
}

/// A drawing or encoding failure, as plotters or the PNG encoder words it (their error
/// types are generic over the backend, so the text is what is kept).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(String);

/// Maps a plotters or encoder error to a [`DrawError`].
pub(crate) fn e<E: std::fmt::Display>(err: E) -> DrawError {
    DrawError(err.to_string())
}

/// Why a chart could not be written. Drawing failures are the chart code's (plotters gives
/// text); a file that cannot be written is the machine's (exit 3, see [`crate::error`]).
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("chart {stem}: cannot draw: {source}")]
    Draw {
        stem: &'static str,
        #[source]
        source: DrawError,
    },
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
        Err(NothingToDraw(reason)) => return Ok(ChartOutcome::Skipped { info, reason }),
    };
    let draw = |source| ChartError::Draw {
        stem: info.stem,
        source,
    };
    let svg = render_svg(c).map_err(draw)?;
    let png = render_png(c).map_err(draw)?;
    crate::atomic::write_atomic(&out_dir.join(format!("{}.svg", info.stem)), svg.as_bytes())?;
    crate::atomic::write_atomic(&out_dir.join(format!("{}.png", info.stem)), &png)?;
    Ok(ChartOutcome::Rendered { info, svg, note })
}

pub(crate) fn render_svg<C: Chart>(c: &C) -> Result<String, DrawError> {
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
fn render_png<C: Chart>(c: &C) -> Result<Vec<u8>, DrawError> {
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

/// Shortens `text` with a middle `…` until it fits `max_px` at `size` px in the embedded
/// font; the tail is kept (names like `model:…-lite` differ at their ends).
pub(crate) fn fit<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
    size: f64,
    max_px: u32,
) -> String {
    let style = TextStyle::from((FONT, size).into_font());
    longest_fitting(text, |s: &str| {
        root.estimate_text_size(s, &style)
            .map(|(w, _)| w <= max_px)
            .unwrap_or(true)
    })
}

/// `text` itself when it `fits`, else the longest middle-shortened form that does (2/5 of
/// the kept characters from the head, the rest from the tail), else `…`. Longer forms are
/// wider, so the longest is found by bisection: about 2·log2(len) measurements, where trying
/// every length from the longest down measured a 100,000-character name 100,000 times (each
/// measurement as long as the name: minutes, and a signal waited for it).
fn longest_fitting(text: &str, mut fits: impl FnMut(&str) -> bool) -> String {
    if fits(text) {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let shortened = |n: usize| -> String {
        let head = n * 2 / 5;
        let tail = n - head;
        chars[..head].iter().collect::<String>()
            + "…"
            + &chars[chars.len() - tail..].iter().collect::<String>()
    };
    // Invariant: `lo` fits (or is 0, "…" alone), `hi` does not.
    let (mut lo, mut hi) = (0usize, chars.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(&shortened(mid)) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if lo >= 1 {
        return shortened(lo);
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
    ) -> Result<bool, DrawError> {
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
    use super::longest_fitting;

    /// Issue 39 item 6: a 200,000-character name is shortened with a few dozen width
    /// measurements (it took one per character, each as long as the name), to the same text
    /// as trying every length from the longest down.
    #[test]
    fn shortening_a_long_name_measures_it_a_logarithmic_number_of_times() {
        let width = |s: &str| {
            s.chars()
                .map(|c| if c == 'W' { 3 } else { 1 })
                .sum::<usize>()
        };
        let long: String = (0..200_000)
            .map(|i| if i % 7 == 0 { 'W' } else { 'a' })
            .collect();
        let mut calls = 0usize;
        let got = longest_fitting(&long, |s| {
            calls += 1;
            width(s) <= 40
        });
        assert!(calls <= 2 * 18 + 2, "{calls} measurements");
        assert!(width(&got) <= 40 && got.contains('…'), "{got}");
        // The same answer as the exhaustive search, on names short enough for it.
        for text in ["", "abc", "WWWWWWWWWW", &long[..300], &long[..1000]] {
            for max in [0, 1, 2, 5, 17, 40, 10_000] {
                let fits = |s: &str| width(s) <= max;
                let chars: Vec<char> = text.chars().collect();
                let want = if fits(text) {
                    text.to_string()
                } else {
                    (1..chars.len())
                        .rev()
                        .map(|n| {
                            let head = n * 2 / 5;
                            chars[..head].iter().collect::<String>()
                                + "…"
                                + &chars[chars.len() - (n - head)..].iter().collect::<String>()
                        })
                        .find(|s| fits(s))
                        .unwrap_or_else(|| "…".to_string())
                };
                assert_eq!(longest_fitting(text, fits), want, "{max}");
            }
        }
    }
}
