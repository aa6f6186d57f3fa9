//! The six charts of the report. Each reads [`RunData`] only.

use super::{e, fit, Chart, ChartInfo, DrawError, LabelPlacer, NothingToDraw, FONT};
use crate::table::folder::{frontier_groups, summarizer_rows, RunData, SettingRow, Timeline};
use crate::table::format::{fmt_pct, fmt_tokens, fmt_usd_axis, money_format};
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordusize};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const TITLE: f64 = 30.0;
const AXIS: f64 = 22.0;
const TICK: f64 = 18.0;
const NOTE: f64 = 17.0;

const GREY: RGBColor = RGBColor(120, 120, 120);
const LIGHT: RGBColor = RGBColor(225, 225, 225);
const TOKENS_C: RGBColor = RGBColor(31, 119, 180);
const INVOC_C: RGBColor = RGBColor(230, 120, 20);
const BOTH_C: RGBColor = RGBColor(44, 160, 44);
const RECO_C: RGBColor = RGBColor(214, 39, 40);
const FRONT_C: RGBColor = RGBColor(60, 60, 60);
const ALT_C: RGBColor = RGBColor(148, 103, 189);
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(230, 120, 20),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

/// Each policy family's colour and whether its marker is a cross (the ones that clear tool
/// results) or a hollow triangle (the ones that summarize): one marker per family.
fn policy_marker(family: &str) -> (RGBColor, bool) {
    match family {
        "clear-tool-results" => (RGBColor(148, 103, 189), true),
        "mask-observations" => (RGBColor(140, 86, 75), true),
        "claude-code" => (RGBColor(227, 119, 194), false),
        "codex" => (RGBColor(23, 190, 207), false),
        "openhands" => (RGBColor(188, 189, 34), false),
        "langchain" => (RGBColor(127, 127, 127), false),
        "anthropic-compaction" => (RGBColor(204, 121, 167), false),
        _ => (RGBColor(31, 60, 120), false),
    }
}

fn kind_color(kind: &str) -> RGBColor {
    match kind {
        "tokens" => TOKENS_C,
        "invocations" => INVOC_C,
        "both" => BOTH_C,
        _ => GREY,
    }
}

fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font())
}

/// `[lo, hi]` padded by 8 % (and widened when flat) so markers never sit on the frame.
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    let span = (hi - lo).abs();
    let pad = if span > 0.0 {
        span * 0.08
    } else {
        lo.abs().max(1.0) * 0.1
    };
    (lo - pad, hi + pad)
}

/// Largest magnitude an axis spans. plotters' tick search never ends on an infinite span
/// (a value near f64::MAX padded by 8 % overflows), so every numeric axis goes through
/// [`axis`]: clamped to this, finite and never empty. Real data (USD, seconds, tokens,
/// percentages) are far below it; a larger value is drawn at the frame.
const AXIS_LIMIT: f64 = 1e15;

/// A finite, non-empty axis range from `lo` to `hi` whatever their values.
fn axis(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let fit = |v: f64| {
        if v.is_nan() {
            0.0
        } else {
            v.clamp(-AXIS_LIMIT, AXIS_LIMIT)
        }
    };
    let (lo, hi) = (fit(lo), fit(hi));
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    if hi > lo {
        lo..hi
    } else {
        lo..lo + lo.abs().max(1.0)
    }
}

fn min_max(v: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    v.fold(None, |acc, x| match acc {
        None => Some((x, x)),
        Some((a, b)) => Some((a.min(x), b.max(x))),
    })
}

/// Context line under a title: what the chart's settings share.
fn context(d: &RunData) -> String {
    match d.anchor() {
        Some(a) => format!(
            "summarizer {}, client {}, agent model {}",
            a.summarizer, a.client, a.agent_model
        ),
        None => String::new(),
    }
}

fn title<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    t: &str,
    sub: &str,
) -> Result<DrawingArea<DB, Shift>, DrawError> {
    let (w, _) = root.dim_in_pixel();
    root.draw(&Text::new(
        fit(root, t, TITLE, w - 40),
        (20, 12),
        font(TITLE),
    ))
    .map_err(e)?;
    if !sub.is_empty() {
        root.draw(&Text::new(
            fit(root, sub, NOTE, w - 40),
            (22, 50),
            font(NOTE).color(&GREY),
        ))
        .map_err(e)?;
    }
    Ok(root.margin(80, 10, 10, 25))
}

// ---------------------------------------------------------------------------------------
/// Cost against detail lost, one point per setting.
pub struct CostVsDetail<'a>(pub &'a RunData);

/// The detail axis of the first chart: broken references (what summaries failed to keep of
/// what the agent used later); runs made before that column fall back to `detail_lost`, and
/// the labels say which one is drawn.
struct DetailAxis {
    value: fn(&SettingRow) -> Option<f64>,
    subtitle: &'static str,
    x_desc: &'static str,
    budget_key: &'static str,
}

impl DetailAxis {
    fn of(d: &RunData) -> DetailAxis {
        if d.settings.iter().any(|s| s.broken_references().is_some()) {
            DetailAxis {
                value: SettingRow::broken_references,
                subtitle: "detail lost = mean share of the references the agent used later that no text it could still read held",
                x_desc: "broken references (% of the facts the agent used later, mean per session)",
                budget_key: "broken_references",
            }
        } else {
            DetailAxis {
                value: SettingRow::detail_lost,
                subtitle: "detail lost = mean share of history read only through a summary (run made before broken references)",
                x_desc: "detail lost (% of history read only through a summary, mean per session)",
                budget_key: "detail_lost",
            }
        }
    }
}

impl Chart for CostVsDetail<'_> {
    fn info(&self) -> ChartInfo {
        ChartInfo {
            stem: "cost_vs_detail",
            title: "Cost against detail lost",
            how_to_read: "Each dot is one setting; lower is cheaper and further left keeps more history verbatim, so the settings worth deploying lie on the dark frontier line; the dashed red line is the run's detail budget (when it set one), and the red ring, the recommendation, is the cheapest setting left of it.",
        }
    }

    fn check(&self) -> Result<String, NothingToDraw> {
        let n = self
            .0
            .settings
            .iter()
            .filter(|s| s.cost_usd().is_some() && (DetailAxis::of(self.0).value)(s).is_some())
            .count();
        if n == 0 {
            return Err("no setting has both cost_usd and a detail aggregate".into());
        }
        Ok(format!("{n} settings"))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        let d = self.0;
        let detail = DetailAxis::of(d);
        let pts = detail.points(&d.settings);
        // The guide's alternatives (docs/alternatives.md): their own marker; on the frontier
        // line where they win.
        let alts = detail.points(&d.alternatives);
        let sessions = d.sessions;
        let area = title(
            root,
            "Cost against detail lost, one point per setting",
            &format!(
                "cost = agent + summarizer calls over {sessions} sessions; {}",
                detail.subtitle
            ),
        )?;
        let (x0, x1) = min_max(pts.iter().chain(&alts).map(|p| p.1)).unwrap_or((0.0, 1.0));
        let (y0, y1) = min_max(pts.iter().chain(&alts).map(|p| p.2)).unwrap_or((0.0, 1.0));
        let (x0, x1) = padded(x0.min(0.0), x1);
        let (y0, y1) = padded(y0, y1);
        let mut chart = ChartBuilder::on(&area)
            .margin_right(20)
            .x_label_area_size(60)
            .y_label_area_size(110)
            .build_cartesian_2d(axis(x0, x1), axis(y0, y1))
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc(detail.x_desc)
            .y_desc("cost (USD, total over sessions)")
            .axis_desc_style(font(AXIS))
            .label_style(font(TICK))
            .x_label_formatter(&|v| format!("{v:.0} %"))
            .y_label_formatter(&|v| fmt_usd_axis(*v))
            .light_line_style(LIGHT.mix(0.5))
            .x_labels(8)
            .y_labels(8)
            .draw()
            .map_err(e)?;
        // Frontier first, so the markers sit on top of it.
        draw_frontier_line(&mut chart, &pts, &alts)?;
        // The detail budget the recommendation was chosen under: the ring is the cheapest
        // point left of this line.
        let budget = d
            .run
            .get("budgets")
            .and_then(|b| b.get(detail.budget_key))
            .and_then(serde_json::Value::as_f64)
            .map(|v| v * 100.0)
            .filter(|x| *x >= x0 && *x <= x1);
        if let Some(x) = budget {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x, y0), (x, y1)],
                    12,
                    8,
                    RECO_C.mix(0.7).stroke_width(2),
                ))
                .map_err(e)?
                .label(format!("detail budget: at most {x:.0} %"))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 24, y)], RECO_C.mix(0.7).stroke_width(2))
                });
        }
        draw_setting_markers(&mut chart, &pts)?;
        draw_marks(&mut chart, &pts, &alts)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.9))
            .border_style(GREY)
            .label_font(font(TICK))
            .draw()
            .map_err(e)?;
        // Labels: recommended, baseline, then frontier points numbered as in the report's
        // frontier table (F1 = cheapest). The legend's corner is reserved.
        let plot = chart.plotting_area();
        let (px, py) = plot.get_pixel_range();
        let bounds = (px.start, py.start, px.end, py.end);
        let mut placer = LabelPlacer::new();
        placer.reserve((px.end - 470, py.start, px.end, py.start + 200));
        for p in &pts {
            let (x, y) = chart.backend_coord(&(p.1, p.2));
            let r = if p.0.recommended { 14 } else { 9 };
            placer.reserve((x - r, y - r, x + r, y + r));
        }
        for (text, at, color) in point_labels(d, &detail, &pts, &alts) {
            let px = chart.backend_coord(&at);
            placer.place(root, &text, px, TICK, color, bounds)?;
        }
        Ok(())
    }
}

/// A setting drawn at (detail lost in %, cost in USD).
type Point<'a> = (&'a SettingRow, f64, f64);

/// A chart with both axes in plain numbers.
type XyChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

impl DetailAxis {
    /// The rows that have both a cost and this axis's detail figure, as points.
    fn points<'a>(&self, rows: &'a [SettingRow]) -> Vec<Point<'a>> {
        rows.iter()
            .filter_map(|s| Some((s, (self.value)(s)? * 100.0, s.cost_usd()?)))
            .collect()
    }
}

/// The Pareto frontier through the settings and the alternatives where they win.
fn draw_frontier_line<DB: DrawingBackend>(
    chart: &mut XyChart<DB>,
    pts: &[Point],
    alts: &[Point],
) -> Result<(), DrawError> {
    let mut front: Vec<(f64, f64)> = pts
        .iter()
        .chain(alts)
        .filter(|p| p.0.pareto && !p.0.never_compacts())
        .map(|p| (p.1, p.2))
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
    if front.len() > 1 {
        chart
            .draw_series(LineSeries::new(front.clone(), FRONT_C.stroke_width(3)))
            .map_err(e)?
            .label("Pareto frontier (cheapest for its detail lost)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], FRONT_C.stroke_width(3)));
    }
    Ok(())
}

/// One marker series per trigger kind, then one per other framework's policy family.
fn draw_setting_markers<DB: DrawingBackend>(
    chart: &mut XyChart<DB>,
    pts: &[Point],
) -> Result<(), DrawError> {
    for kind in ["tokens", "invocations", "both"] {
        let ps: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| p.0.trigger_kind == kind)
            .map(|p| (p.1, p.2))
            .collect();
        if ps.is_empty() {
            continue;
        }
        let c = kind_color(kind);
        let name = match kind {
            "tokens" => "trigger: after_tokens",
            "invocations" => "trigger: after_invocations",
            _ => "trigger: both",
        };
        chart
            .draw_series(ps.iter().map(|p| Circle::new(*p, 7, c.mix(0.85).filled())))
            .map_err(e)?
            .label(name)
            .legend(move |(x, y)| Circle::new((x + 12, y), 7, c.filled()));
    }
    // Other frameworks' policies (docs/policies.md): modelled, one marker per family.
    for &family in crate::policy::FAMILIES {
        let ps: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| p.0.policy == family)
            .map(|p| (p.1, p.2))
            .collect();
        if ps.is_empty() {
            continue;
        }
        let (c, cross) = policy_marker(family);
        let name = format!("policy (modelled): {family}");
        if cross {
            chart
                .draw_series(ps.iter().map(|p| Cross::new(*p, 8, c.stroke_width(3))))
                .map_err(e)?
                .label(name)
                .legend(move |(x, y)| Cross::new((x + 12, y), 7, c.stroke_width(3)));
        } else {
            chart
                .draw_series(
                    ps.iter()
                        .map(|p| TriangleMarker::new(*p, 9, c.stroke_width(3))),
                )
                .map_err(e)?
                .label(name)
                .legend(move |(x, y)| TriangleMarker::new((x + 12, y), 7, c.stroke_width(3)));
        }
    }
    Ok(())
}

/// The baseline's triangle, the alternatives' crosses and the recommendation's ring.
fn draw_marks<DB: DrawingBackend>(
    chart: &mut XyChart<DB>,
    pts: &[Point],
    alts: &[Point],
) -> Result<(), DrawError> {
    if let Some(b) = pts.iter().find(|p| p.0.is_baseline()) {
        chart
            .draw_series(std::iter::once(TriangleMarker::new(
                (b.1, b.2),
                11,
                BLACK.filled(),
            )))
            .map_err(e)?
            .label("baseline: no compaction")
            .legend(|(x, y)| TriangleMarker::new((x + 12, y), 8, BLACK.filled()));
    }
    if !alts.is_empty() {
        chart
            .draw_series(
                alts.iter()
                    .map(|p| Cross::new((p.1, p.2), 8, ALT_C.stroke_width(3))),
            )
            .map_err(e)?
            .label("the guide's alternatives")
            .legend(|(x, y)| Cross::new((x + 12, y), 6, ALT_C.stroke_width(3)));
    }
    if let Some(r) = pts.iter().find(|p| p.0.recommended) {
        chart
            .draw_series(std::iter::once(Circle::new(
                (r.1, r.2),
                14,
                RECO_C.stroke_width(4),
            )))
            .map_err(e)?
            .label("recommended")
            .legend(|(x, y)| Circle::new((x + 12, y), 8, RECO_C.stroke_width(3)));
    }
    Ok(())
}

/// The point labels in the order they are placed (a label that finds no room is left out):
/// recommended, the alternatives without compaction on the frontier (with their number), the
/// baseline, the other alternatives without compaction, then frontier numbers.
fn point_labels(
    d: &RunData,
    detail: &DetailAxis,
    pts: &[Point],
    alts: &[Point],
) -> Vec<(String, (f64, f64), RGBColor)> {
    let mut labels: Vec<(String, (f64, f64), RGBColor)> = Vec::new();
    if let Some(r) = pts.iter().find(|p| p.0.recommended) {
        labels.push((format!("recommended: {}", r.0.short()), (r.1, r.2), RECO_C));
    }
    let fr = frontier_groups(d);
    // Combinations are marked, not named.
    let mut off_frontier = Vec::new();
    for a in alts.iter().filter(|a| a.0.is_baseline()) {
        let at = (a.1, a.2);
        match fr
            .iter()
            .position(|g| g.iter().any(|x| std::ptr::eq(*x, a.0)))
        {
            Some(i) => labels.push((format!("F{} {}", i + 1, a.0.alternative), at, ALT_C)),
            None => off_frontier.push((a.0.alternative.clone(), at, ALT_C)),
        }
    }
    if let Some(b) = pts.iter().find(|p| p.0.is_baseline()) {
        labels.push(("baseline".to_string(), (b.1, b.2), BLACK));
    }
    labels.extend(off_frontier);
    // At most ~15 frontier labels, evenly spread (F1 and the last always), so a long
    // frontier stays readable; the report's table lists every one.
    let step = fr.len().div_ceil(15).max(1);
    for (i, g) in fr.iter().enumerate() {
        if !(i.is_multiple_of(step) || i + 1 == fr.len()) {
            continue;
        }
        let f = g[0];
        if !g.iter().any(|x| x.recommended || x.is_baseline()) {
            if let (Some(x), Some(y)) = ((detail.value)(f), f.cost_usd()) {
                labels.push((format!("F{}", i + 1), (x * 100.0, y), FRONT_C));
            }
        }
    }
    labels
}

// ---------------------------------------------------------------------------------------
/// after_tokens × keep_recent_events heatmap of one metric.
pub struct Heatmap<'a> {
    d: &'a RunData,
    stem: &'static str,
    title: &'static str,
    how: &'static str,
    /// The cell's value from the setting and the no-compaction row it is compared with.
    value: fn(&SettingRow, Option<&SettingRow>) -> Option<f64>,
    fmt: fn(f64) -> String,
    diverging: bool,
    unit: &'static str,
}

impl<'a> Heatmap<'a> {
    pub fn net_saved(d: &'a RunData) -> Self {
        Heatmap {
            d,
            stem: "heatmap_net_saved",
            title: "Net dollars saved by after_tokens and keep_recent_events",
            how: "Each cell is one size-triggered setting; green cells save money against no compaction after paying for the summaries, red cells cost more, and the number is USD saved over all sessions (the no-compaction cost minus the setting's cost, as in the frontier table); — marks a threshold no session reached (the same as no compaction).",
            // Against the run's own no-compaction row, so the cells match the report's
            // tables; `cost_saved_usd` only when the run has no baseline row.
            value: |s, base| match (base.and_then(|b| b.cost_usd()), s.cost_usd()) {
                (Some(b), Some(c)) => Some(b - c),
                _ => s.cost_saved_usd(),
            },
            // The report's precision: 4 decimals unless the no-compaction cost is $100+.
            fmt: money_format(d.baseline().and_then(|b| b.cost_usd()).unwrap_or(0.0)),
            diverging: true,
            unit: "net saved (USD, all sessions)",
        }
    }

    /// The detail heatmap: broken references, or `detail_lost` for runs made before them
    /// (the title says which). The file keeps its name, `heatmap_detail_lost`.
    pub fn detail_lost(d: &'a RunData) -> Self {
        if d.settings.iter().any(|s| s.broken_references().is_some()) {
            return Heatmap {
                d,
                stem: "heatmap_detail_lost",
                title: "Broken references by after_tokens and keep_recent_events",
                how: "Each cell is one size-triggered setting; darker cells lose more of the facts the agent used later (no text it could still read held them), so a higher threshold, more retained events or a summarizer that keeps more moves you toward the lighter corner; — marks a threshold no session reached (nothing summarized).",
                value: |s, _| s.broken_references(),
                fmt: fmt_pct,
                diverging: false,
                unit: "broken references (mean per session)",
            };
        }
        Heatmap {
            d,
            stem: "heatmap_detail_lost",
            title: "Detail lost by after_tokens and keep_recent_events",
            how: "Each cell is one size-triggered setting; darker cells read more of the history only through a summary, so a higher threshold or more retained events moves you toward the lighter corner; — marks a threshold no session reached (nothing summarized).",
            value: |s, _| s.detail_lost(),
            fmt: fmt_pct,
            diverging: false,
            unit: "detail lost (mean per session)",
        }
    }

    fn cells(&self) -> (Vec<u64>, Vec<u64>, Vec<Cell>) {
        let rows: Vec<&SettingRow> = self
            .d
            .same_context()
            .into_iter()
            .filter(|s| s.trigger_kind == "tokens")
            .collect();
        let mut xs: Vec<u64> = rows.iter().filter_map(|s| s.after_tokens).collect();
        let mut ys: Vec<u64> = rows.iter().filter_map(|s| s.keep_recent_events).collect();
        xs.sort_unstable();
        xs.dedup();
        ys.sort_unstable();
        ys.dedup();
        let base = self.d.baseline();
        let mut cells = Vec::new();
        for (i, x) in xs.iter().enumerate() {
            for (j, y) in ys.iter().enumerate() {
                if let Some(v) = rows
                    .iter()
                    .find(|s| s.after_tokens == Some(*x) && s.keep_recent_events == Some(*y))
                    .and_then(|s| (self.value)(s, base))
                {
                    cells.push((i, j, v));
                }
            }
        }
        (xs, ys, cells)
    }

    /// Cells whose setting never compacted (no session reached its threshold): shown as `—`,
    /// so a 0 there is not read as a compaction that costs or loses nothing.
    fn idle_cells(&self, xs: &[u64], ys: &[u64]) -> Vec<(usize, usize)> {
        self.d
            .same_context()
            .into_iter()
            .filter(|s| s.trigger_kind == "tokens" && s.never_compacts())
            .filter_map(|s| {
                let i = xs.iter().position(|x| Some(*x) == s.after_tokens)?;
                let j = ys.iter().position(|y| Some(*y) == s.keep_recent_events)?;
                Some((i, j))
            })
            .collect()
    }
}

/// One heatmap cell: column, row, value.
type Cell = (usize, usize, f64);

fn lerp(a: RGBColor, b: RGBColor, t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let m = |x: u8, y: u8| (x as f64 + (y as f64 - x as f64) * t).round() as u8;
    RGBColor(m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

impl Chart for Heatmap<'_> {
    fn info(&self) -> ChartInfo {
        ChartInfo {
            stem: self.stem,
            title: self.title,
            how_to_read: self.how,
        }
    }

    fn check(&self) -> Result<String, NothingToDraw> {
        let (xs, ys, cells) = self.cells();
        if cells.is_empty() {
            return Err(
                "the grid has no after_tokens settings with this summarizer and client".into(),
            );
        }
        Ok(format!(
            "{} × {} cells; {}",
            xs.len(),
            ys.len(),
            context(self.d)
        ))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        let (xs, ys, cells) = self.cells();
        let area = title(
            root,
            self.title,
            &format!(
                "colour and numbers: {}; settings with {}",
                self.unit,
                context(self.d)
            ),
        )?;
        let (main, legend) = area.split_horizontally(area.dim_in_pixel().0 - 190);
        let mut chart = ChartBuilder::on(&main)
            .x_label_area_size(60)
            .y_label_area_size(110)
            .build_cartesian_2d(
                (0..xs.len().saturating_sub(1)).into_segmented(),
                (0..ys.len().saturating_sub(1)).into_segmented(),
            )
            .map_err(e)?;
        let xs2 = xs.clone();
        let ys2 = ys.clone();
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("after_tokens (prompt tokens that trigger a compaction)")
            .y_desc("keep_recent_events (raw events kept)")
            .axis_desc_style(font(AXIS))
            .label_style(font(TICK))
            .x_labels(xs.len() + 1)
            .y_labels(ys.len() + 1)
            .x_label_formatter(&move |v| match v {
                SegmentValue::CenterOf(i) => xs2
                    .get(*i)
                    .map(|x| fmt_tokens(*x as f64))
                    .unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&move |v| match v {
                SegmentValue::CenterOf(i) => ys2.get(*i).map(|y| y.to_string()).unwrap_or_default(),
                _ => String::new(),
            })
            .draw()
            .map_err(e)?;
        let (lo, hi) = min_max(cells.iter().map(|c| c.2)).unwrap_or((0.0, 1.0));
        let scale = Scale {
            lo,
            hi,
            diverging: self.diverging,
        };
        chart
            .draw_series(cells.iter().map(|&(i, j, v)| {
                Rectangle::new(
                    [
                        (SegmentValue::Exact(i), SegmentValue::Exact(j)),
                        (SegmentValue::Exact(i + 1), SegmentValue::Exact(j + 1)),
                    ],
                    scale.color(v).filled(),
                )
            }))
            .map_err(e)?;
        self.draw_values(root, &mut chart, &scale, (&xs[..], &ys[..]), &cells)?;
        self.draw_key(&legend.margin(10, 70, 30, 10), &scale)
    }
}

/// A grid of cells indexed by column and row.
type GridChart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<SegmentedCoord<RangedCoordusize>, SegmentedCoord<RangedCoordusize>>,
>;

/// A heatmap's colours: from the lowest to the highest value, or (diverging) red below zero
/// and green above it.
struct Scale {
    lo: f64,
    hi: f64,
    diverging: bool,
}

impl Scale {
    fn color(&self, v: f64) -> RGBColor {
        let (lo, hi) = (self.lo, self.hi);
        if self.diverging {
            let m = lo.abs().max(hi.abs()).max(1e-12);
            if v >= 0.0 {
                lerp(RGBColor(247, 247, 247), RGBColor(26, 152, 80), v / m)
            } else {
                lerp(RGBColor(247, 247, 247), RGBColor(215, 48, 39), -v / m)
            }
        } else {
            let span = (hi - lo).max(1e-12);
            lerp(
                RGBColor(242, 240, 247),
                RGBColor(84, 39, 143),
                (v - lo) / span,
            )
        }
    }
}

impl Heatmap<'_> {
    /// Cell values, when the cell is wide enough for them.
    fn draw_values<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        chart: &mut GridChart<DB>,
        scale: &Scale,
        (xs, ys): (&[u64], &[u64]),
        cells: &[Cell],
    ) -> Result<(), DrawError> {
        let cell_w = chart.plotting_area().dim_in_pixel().0 / xs.len().max(1) as u32;
        let cell_h = chart.plotting_area().dim_in_pixel().1 / ys.len().max(1) as u32;
        let size = (cell_h as f64 * 0.35).clamp(11.0, TICK);
        let idle = self.idle_cells(xs, ys);
        for &(i, j, v) in cells {
            let text = if idle.contains(&(i, j)) {
                "—".to_string()
            } else {
                (self.fmt)(v)
            };
            let c = scale.color(v);
            let dark = (c.0 as u32 + c.1 as u32 + c.2 as u32) < 380;
            let style = font(size)
                .color(if dark { &WHITE } else { &BLACK })
                .pos(Pos::new(HPos::Center, VPos::Center));
            let fits = root
                .estimate_text_size(&text, &style)
                .map(|(w, h)| w + 6 < cell_w && h + 4 < cell_h)
                .unwrap_or(false);
            if fits {
                chart
                    .draw_series(std::iter::once(Text::new(
                        text,
                        (SegmentValue::CenterOf(i), SegmentValue::CenterOf(j)),
                        style,
                    )))
                    .map_err(e)?;
            }
        }
        Ok(())
    }

    /// The colour key beside the grid, with its end values (and break-even when diverging).
    fn draw_key<DB: DrawingBackend>(
        &self,
        legend: &DrawingArea<DB, Shift>,
        scale: &Scale,
    ) -> Result<(), DrawError> {
        let (lo, hi) = (scale.lo, scale.hi);
        let (_, lh) = legend.dim_in_pixel();
        let steps = 40;
        for k in 0..steps {
            let t = k as f64 / (steps - 1) as f64;
            let v = hi - (hi - lo) * t;
            let y0 = (lh as f64 * k as f64 / steps as f64) as i32;
            let y1 = (lh as f64 * (k + 1) as f64 / steps as f64) as i32 + 1;
            legend
                .draw(&Rectangle::new(
                    [(0, y0), (30, y1)],
                    scale.color(v).filled(),
                ))
                .map_err(e)?;
        }
        legend
            .draw(&Text::new((self.fmt)(hi), (36, 0), font(TICK)))
            .map_err(e)?;
        legend
            .draw(&Text::new(
                (self.fmt)(lo),
                (36, lh as i32),
                font(TICK).pos(Pos::new(HPos::Left, VPos::Bottom)),
            ))
            .map_err(e)?;
        // Where the key crosses zero (saving turns into extra cost), when it is clear of the
        // end labels.
        if self.diverging && lo < 0.0 && hi > 0.0 {
            let y = (lh as f64 * hi / (hi - lo)) as i32;
            if y > 30 && y < lh as i32 - 30 {
                legend
                    .draw(&PathElement::new(
                        vec![(0, y), (34, y)],
                        BLACK.stroke_width(1),
                    ))
                    .map_err(e)?;
                legend
                    .draw(&Text::new(
                        "$0 (break-even)".to_string(),
                        (36, y),
                        font(TICK - 2.0).pos(Pos::new(HPos::Left, VPos::Center)),
                    ))
                    .map_err(e)?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
/// after_invocations × overlap: summarizer calls and detail lost, one line per overlap.
pub struct InvocationsOverlap<'a>(pub &'a RunData);

impl InvocationsOverlap<'_> {
    fn rows(&self) -> Vec<&SettingRow> {
        self.0
            .same_context()
            .into_iter()
            .filter(|s| {
                s.trigger_kind == "invocations"
                    && s.after_invocations.is_some()
                    && s.overlap.is_some()
            })
            .collect()
    }
}

impl Chart for InvocationsOverlap<'_> {
    fn info(&self) -> ChartInfo {
        ChartInfo {
            stem: "invocations_overlap",
            title: "Turn-triggered settings: after_invocations and overlap",
            how_to_read: "Left: how many summaries each turn-triggered setting writes (each is a paid, end-of-run summarizer call); right: the share of the facts the agent used later that its summaries failed to keep (broken references; for runs made before them, the share of history read only through a summary); one line per overlap, so compare lines to see what re-including earlier turns costs and buys.",
        }
    }

    fn check(&self) -> Result<String, NothingToDraw> {
        let n = self.rows().len();
        if n == 0 {
            return Err(
                "the grid has no after_invocations settings with this summarizer and client".into(),
            );
        }
        Ok(format!("{n} settings; {}", context(self.0)))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        let rows = self.rows();
        let area = title(
            root,
            "Turn-triggered settings: summaries written and what they lose",
            &format!("settings with {}", context(self.0)),
        )?;
        let panels = area.split_evenly((1, 2));
        let mut overlaps: Vec<u64> = rows.iter().filter_map(|s| s.overlap).collect();
        overlaps.sort_unstable();
        overlaps.dedup();
        let (ix0, ix1) = min_max(
            rows.iter()
                .filter_map(|s| s.after_invocations.map(|v| v as f64)),
        )
        .unwrap_or((1.0, 2.0));
        let (ix0, ix1) = padded(ix0, ix1);
        // The right panel is the run's detail axis (as the first chart's).
        let detail: (&str, Getter, bool) = if rows.iter().any(|s| s.broken_references().is_some()) {
            (
                "broken references (% of the facts used later, mean per session)",
                |s| s.broken_references().map(|v| v * 100.0),
                true,
            )
        } else {
            (
                "history read only through summaries (%, mean per session)",
                |s| s.detail_lost().map(|v| v * 100.0),
                true,
            )
        };
        let metrics: [(&str, Getter, bool); 2] = [
            (
                "summarizer calls (total over sessions)",
                |s| s.summarizer_calls(),
                false,
            ),
            detail,
        ];
        for (panel, metric) in panels.iter().zip(metrics) {
            draw_overlap_panel(panel, &rows, &overlaps, (ix0, ix1), metric)?;
        }
        Ok(())
    }
}

/// A figure of a setting, if it has it.
type Getter = fn(&SettingRow) -> Option<f64>;

/// One panel of the turn-triggered chart: `metric` (axis title, figure, whether a
/// percentage) against after_invocations, one line per overlap.
fn draw_overlap_panel<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    rows: &[&SettingRow],
    overlaps: &[u64],
    (ix0, ix1): (f64, f64),
    (desc, get, pct): (&str, Getter, bool),
) -> Result<(), DrawError> {
    let (y0, y1) = min_max(rows.iter().filter_map(|s| get(s))).unwrap_or((0.0, 1.0));
    let (_, y1) = padded(y0.min(0.0), y1);
    let mut chart = ChartBuilder::on(panel)
        .margin(10)
        .x_label_area_size(60)
        .y_label_area_size(80)
        .build_cartesian_2d(axis(ix0, ix1), axis(0.0, y1))
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("after_invocations (user turns)")
        .y_desc(desc)
        .axis_desc_style(font(NOTE + 1.0))
        .label_style(font(TICK))
        .x_labels(6)
        .y_labels(6)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&move |v| {
            if pct {
                format!("{v:.0} %")
            } else {
                format!("{v:.0}")
            }
        })
        .light_line_style(LIGHT.mix(0.5))
        .draw()
        .map_err(e)?;
    for (k, o) in overlaps.iter().enumerate() {
        let c = PALETTE[k % PALETTE.len()];
        let mut pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|s| s.overlap == Some(*o))
            .filter_map(|s| Some((s.after_invocations? as f64, get(s)?)))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart
            // Earlier overlaps are drawn wider and with bigger dots, so lines that
            // coincide still show every overlap.
            .draw_series(LineSeries::new(
                pts.clone(),
                c.stroke_width(7u32.saturating_sub(2 * k as u32).max(2)),
            ))
            .map_err(e)?
            .label(format!("overlap = {o}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
        chart
            .draw_series(
                pts.iter()
                    .map(|p| Circle::new(*p, (10 - 2 * k as i32).max(3), c.filled())),
            )
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font(font(TICK))
        .draw()
        .map_err(e)
}

// ---------------------------------------------------------------------------------------
/// End-of-run latency distribution per summarizer (× client when swept).
pub struct Latency<'a>(pub &'a RunData);

impl Latency<'_> {
    /// Per group: values of `end_of_run_latency_max_s` over (session, setting) rows that
    /// compacted at least once.
    pub fn groups(&self) -> Vec<(String, Vec<f64>)> {
        let d = self.0;
        let by_client = d.distinct(|s| &s.client).len() > 1;
        let mut groups: Vec<(String, Vec<f64>)> = Vec::new();
        // Each setting's latencies (rows that compacted, see `RunData::latency`).
        for (s, vals) in d.settings.iter().zip(&d.latency) {
            if vals.is_empty() {
                continue;
            }
            // Live summarizers' waits were measured; the others' are modelled.
            let name = if s.summarizer.starts_with("live:") {
                format!("{} (measured)", s.summarizer)
            } else {
                s.summarizer.clone()
            };
            let key = if by_client {
                format!("{name} / {}", s.client)
            } else {
                name
            };
            match groups.iter_mut().find(|g| g.0 == key) {
                Some(g) => g.1.extend_from_slice(vals),
                None => groups.push((key, vals.clone())),
            }
        }
        for g in &mut groups {
            g.1.sort_by(|a, b| a.total_cmp(b));
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups
    }
}

impl Chart for Latency<'_> {
    fn info(&self) -> ChartInfo {
        ChartInfo {
            stem: "latency_distribution",
            title: "End-of-run latency per summarizer",
            how_to_read: "Each box is one summarizer (and client mode, when swept), pooled over every setting of the grid that uses it: each session that compacted under a setting adds its longest wait for the terminal event after a run (n counts these session runs); the box spans the middle half, the bar is the median, the whiskers reach the 5th and 95th percentiles and dots mark the longer waits. A summarizer that calls no model (terse) adds no wait.",
        }
    }

    fn check(&self) -> Result<String, NothingToDraw> {
        let g = self.groups();
        if g.is_empty() {
            return Err(
                "no (session, setting) row compacted, so there is no end-of-run latency to show"
                    .into(),
            );
        }
        Ok(format!("{} groups", g.len()))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        let groups = self.groups();
        let area = title(
            root,
            "End-of-run latency added by compaction, per summarizer",
            "per session run that compacted, all settings pooled: the longest time a run's terminal event waited for the summarizer",
        )?;
        let ymax = groups
            .iter()
            .flat_map(|g| g.1.last().copied())
            .fold(0.0f64, f64::max);
        let ymax = if ymax > 0.0 { ymax * 1.12 } else { 1.0 };
        let n = groups.len();
        let mut chart = ChartBuilder::on(&area)
            .margin_right(20)
            .x_label_area_size(60)
            .y_label_area_size(90)
            .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), axis(0.0, ymax))
            .map_err(e)?;
        let plot_w = chart.plotting_area().dim_in_pixel().0;
        let names = column_labels(root, groups.iter().map(|g| g.0.as_str()), plot_w, TICK, 12);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("summarizer")
            .y_desc("longest end-of-run wait per session (s)")
            .axis_desc_style(font(AXIS))
            .label_style(font(TICK))
            .x_labels(n + 1)
            .y_labels(8)
            .x_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .y_label_formatter(&|v| format!("{v:.1} s"))
            .light_line_style(LIGHT.mix(0.5))
            .draw()
            .map_err(e)?;
        for (i, (_, vals)) in groups.iter().enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let q = |p| crate::stats::percentile(vals, p);
            let (p5, p25, p50, p75, p95) = (q(0.05), q(0.25), q(0.5), q(0.75), q(0.95));
            draw_box(&mut chart, i, (p5, p25, p50, p75, p95), c)?;
            chart
                .draw_series(
                    vals.iter()
                        .filter(|v| **v > p95)
                        .map(|v| Circle::new((SegmentValue::CenterOf(i), *v), 4, c.filled())),
                )
                .map_err(e)?;
            let style = font(NOTE)
                .color(&GREY)
                .pos(Pos::new(HPos::Center, VPos::Bottom));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((
                        SegmentValue::CenterOf(i),
                        vals.last().copied().unwrap_or(p95),
                    )) + Text::new(format!("n = {} session runs", vals.len()), (0, -6), style),
                ))
                .map_err(e)?;
        }
        Ok(())
    }
}

type SegChart<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<
        plotters::coord::ranged1d::SegmentedCoord<RangedCoordusize>,
        plotters::coord::types::RangedCoordf64,
    >,
>;

fn draw_box<DB: DrawingBackend>(
    chart: &mut SegChart<'_, DB>,
    i: usize,
    q: (f64, f64, f64, f64, f64),
    c: RGBColor,
) -> Result<(), DrawError> {
    let (p5, p25, p50, p75, p95) = q;
    // Box a third of the category wide: from 1/3 to 2/3 of segment i, in pixel offsets.
    let left = chart.backend_coord(&(SegmentValue::Exact(i), p50)).0;
    let right = chart.backend_coord(&(SegmentValue::Exact(i + 1), p50)).0;
    let w = (right - left) / 6;
    let mid = |v: f64| chart.backend_coord(&(SegmentValue::CenterOf(i), v));
    let area = chart.plotting_area().strip_coord_spec();
    let base = chart.plotting_area().get_base_pixel();
    let rel = |p: (i32, i32)| (p.0 - base.0, p.1 - base.1);
    let (cx, y25) = rel(mid(p25));
    let (_, y75) = rel(mid(p75));
    let (_, y50) = rel(mid(p50));
    let (_, y5) = rel(mid(p5));
    let (_, y95) = rel(mid(p95));
    area.draw(&PathElement::new(
        vec![(cx, y5), (cx, y95)],
        BLACK.stroke_width(2),
    ))
    .map_err(e)?;
    area.draw(&PathElement::new(
        vec![(cx - w / 2, y5), (cx + w / 2, y5)],
        BLACK.stroke_width(2),
    ))
    .map_err(e)?;
    area.draw(&PathElement::new(
        vec![(cx - w / 2, y95), (cx + w / 2, y95)],
        BLACK.stroke_width(2),
    ))
    .map_err(e)?;
    area.draw(&Rectangle::new(
        [(cx - w, y75), (cx + w, y25.max(y75 + 2))],
        c.mix(0.55).filled(),
    ))
    .map_err(e)?;
    area.draw(&Rectangle::new(
        [(cx - w, y75), (cx + w, y25.max(y75 + 2))],
        BLACK.stroke_width(2),
    ))
    .map_err(e)?;
    area.draw(&PathElement::new(
        vec![(cx - w, y50), (cx + w, y50)],
        BLACK.stroke_width(4),
    ))
    .map_err(e)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
/// Prompt size per model request of the longest sessions, baseline against recommended.
pub struct Timelines<'a>(pub &'a RunData);

/// A session id as a chart title: printable characters only, at most 48.
pub fn display_id(id: &str) -> String {
    let clean: String = id
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.chars().count() > 48 {
        clean.chars().take(47).collect::<String>() + "…"
    } else {
        clean
    }
}

impl Chart for Timelines<'_> {
    fn info(&self) -> ChartInfo {
        ChartInfo {
            stem: "prompt_timeline",
            title: "Prompt size over the longest sessions",
            how_to_read: "Grey is what each model request would send with no compaction, blue what it sends with the recommended setting; each red line is a compaction, where the blue sawtooth drops, and the gap between the lines is the tokens saved.",
        }
    }

    fn check(&self) -> Result<String, NothingToDraw> {
        let n = self
            .0
            .timelines
            .iter()
            .filter(|t| !t.baseline.is_empty())
            .count();
        if n == 0 {
            return Err("timelines.json is missing or has no model requests".into());
        }
        if self.0.recommended().is_none() {
            return Err(
                "no setting met the budgets, so there is no recommended setting to draw against no compaction".into(),
            );
        }
        Ok(format!("{} sessions", n.min(3)))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        let mut tls: Vec<_> = self
            .0
            .timelines
            .iter()
            .filter(|t| !t.baseline.is_empty())
            .collect();
        tls.sort_by(|a, b| {
            b.baseline
                .len()
                .cmp(&a.baseline.len())
                .then(a.session_id.cmp(&b.session_id))
        });
        tls.truncate(3);
        let reco = self
            .0
            .recommended()
            .map(|s| s.label.clone())
            .unwrap_or_default();
        // Room on the header's right for the key.
        let reco = fit(root, &reco, NOTE, root.dim_in_pixel().0.saturating_sub(520));
        let area = title(
            root,
            "Prompt size per model request: no compaction against the recommended setting",
            &reco,
        )?;
        let panels = area.split_evenly((tls.len(), 1));
        for (k, (panel, t)) in panels.iter().zip(&tls).enumerate() {
            draw_timeline(panel, t, k + 1 == tls.len())?;
        }
        draw_timeline_key(root)
    }
}

/// One session's prompt sizes, no compaction against the recommended setting, with a red
/// line at each compaction; the `last` panel carries the x axis title.
fn draw_timeline<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    t: &Timeline,
    last: bool,
) -> Result<(), DrawError> {
    let ymax = t
        .baseline
        .iter()
        .chain(&t.compacted)
        .fold(0.0f64, |a, b| a.max(*b))
        * 1.1;
    let n = t.baseline.len();
    let mut chart = ChartBuilder::on(panel)
        .margin(6)
        .caption(
            format!(
                "session {}: {} model requests, {} {}",
                display_id(&t.session_id),
                t.baseline.len(),
                t.compactions.len(),
                if t.compactions.len() == 1 {
                    "compaction"
                } else {
                    "compactions"
                }
            ),
            font(NOTE + 1.0),
        )
        .x_label_area_size(if last { 55 } else { 28 })
        .y_label_area_size(90)
        .build_cartesian_2d(0f64..(n.max(2) - 1) as f64, axis(0.0, ymax.max(1.0)))
        .map_err(e)?;
    let mut mesh = chart.configure_mesh();
    mesh.label_style(font(TICK))
        .axis_desc_style(font(NOTE + 1.0))
        .y_desc("prompt (tokens)")
        .y_labels(4)
        .x_labels(10)
        .x_label_formatter(&|v| format!("{}", (*v as usize) + 1))
        .y_label_formatter(&|v| fmt_tokens(*v))
        .light_line_style(LIGHT.mix(0.5));
    if last {
        mesh.x_desc("model request # in the session");
    }
    mesh.draw().map_err(e)?;
    for &c in &t.compactions {
        let x = c as f64 - 0.5;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, 0.0), (x, ymax)],
                RECO_C.mix(0.7).stroke_width(2),
            )))
            .map_err(e)?;
    }
    let numbered = |v: &[f64]| -> Vec<(f64, f64)> {
        v.iter().enumerate().map(|(i, v)| (i as f64, *v)).collect()
    };
    chart
        .draw_series(LineSeries::new(
            numbered(t.baseline.as_slice()),
            GREY.stroke_width(3),
        ))
        .map_err(e)?;
    chart
        .draw_series(LineSeries::new(
            numbered(t.compacted.as_slice()),
            TOKENS_C.stroke_width(3),
        ))
        .map_err(e)?;
    Ok(())
}

/// The key sits in the header, right of the setting, so it never covers a line.
fn draw_timeline_key<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
    let (w, _) = root.dim_in_pixel();
    let mut x = w as i32 - 20;
    let y = 58;
    let items: [(&str, RGBColor, bool); 3] = [
        ("compaction", RECO_C, true),
        ("recommended", TOKENS_C, false),
        ("no compaction", GREY, false),
    ];
    for (text, c, vertical) in items {
        let style = font(NOTE).pos(Pos::new(HPos::Right, VPos::Center));
        let (tw, _) = root.estimate_text_size(text, &style).map_err(e)?;
        root.draw(&Text::new(text.to_string(), (x, y), style))
            .map_err(e)?;
        x -= tw as i32 + 8;
        if vertical {
            root.draw(&PathElement::new(
                vec![(x - 6, y - 9), (x - 6, y + 9)],
                RECO_C.stroke_width(2),
            ))
            .map_err(e)?;
            x -= 12;
        } else {
            root.draw(&PathElement::new(
                vec![(x - 26, y), (x, y)],
                c.stroke_width(3),
            ))
            .map_err(e)?;
            x -= 26;
        }
        x -= 22;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
/// Summarizers side by side: cost, latency, detail lost, facts dropped.
pub struct Summarizers<'a>(pub &'a RunData);

impl Chart for Summarizers<'_> {
    fn info(&self) -> ChartInfo {
        ChartInfo {
            stem: "summarizer_comparison",
            title: "Summarizers compared",
            how_to_read: "Each panel compares the summarizers at the same trigger setting (the recommended one where the grid has it); shorter bars are better in every panel. Broken references are measured on the text of summarizers that write one and estimated for modelled ones (agent, model:NAME), whose whiskers span the low bound (facts beyond ADK's 2,000-character cut) to the high bound (every reference at risk); n/a marks a number the summarizer cannot have (modelled summarizers write no text, so facts dropped is unknown).",
        }
    }

    fn check(&self) -> Result<String, NothingToDraw> {
        let rows = summarizer_rows(self.0);
        if rows.is_empty() {
            return Err("no compacting setting in the run".into());
        }
        Ok(format!("{} summarizers", rows.len()))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), DrawError> {
        let rows = summarizer_rows(self.0);
        let sub = self
            .0
            .anchor()
            .map(|a| format!("each at {} where the grid has it, else at its best-ranked setting (see the report's table)", a.short()))
            .unwrap_or_default();
        let area = title(root, "Summarizers compared at one trigger setting", &sub)?;
        // Many summarizers: one full-width panel per metric, so bars and names keep room.
        let panels = if rows.len() > 5 {
            area.split_evenly((4, 1))
        } else {
            area.split_evenly((2, 2))
        };
        for (panel, metric) in panels.iter().zip(summarizer_metrics(&rows)) {
            draw_summarizer_panel(root, panel, &rows, metric)?;
        }
        Ok(())
    }
}

/// The names under the columns of a bar chart `plot_w` pixels wide, each shortened to its
/// column at `size` px with `pad` px to spare.
fn column_labels<'a, DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    names: impl ExactSizeIterator<Item = &'a str>,
    plot_w: u32,
    size: f64,
    pad: u32,
) -> Vec<String> {
    let n = names.len();
    names
        .map(|name| {
            fit(
                root,
                name,
                size,
                (plot_w / n.max(1) as u32).saturating_sub(pad),
            )
        })
        .collect()
}

type Fmt = fn(f64) -> String;
/// A figure's low and high bounds, when it is an estimate with bounds.
type Bounds = fn(&SettingRow) -> Option<(f64, f64)>;
/// One panel of the summarizer comparison: its caption, figure, tick format and whiskers.
type SummarizerMetric = (&'static str, Getter, Fmt, Bounds);

/// Cost, end-of-run wait, detail and facts dropped, in panel order.
fn summarizer_metrics(rows: &[&SettingRow]) -> [SummarizerMetric; 4] {
    let no_bounds: Bounds = |_| None;
    // The detail panel: broken references pooled over sessions, with the low..high
    // bounds of estimated summarizers as whiskers; runs made before the column fall
    // back to detail lost.
    let detail: SummarizerMetric = if rows.iter().any(|s| s.broken_references_pooled().is_some()) {
        (
            "broken references (% of all references; whiskers: bounds of estimates)",
            |s| s.broken_references_pooled().map(|p| p.0),
            fmt_pct,
            |s| {
                (s.references_basis == "estimated")
                    .then(|| s.broken_references_pooled().map(|p| (p.1, p.2)))
                    .flatten()
            },
        )
    } else {
        (
            "history read only through summaries (mean per session)",
            |s| s.detail_lost(),
            fmt_pct,
            no_bounds,
        )
    };
    [
        (
            "cost (USD, all sessions)",
            |s| s.cost_usd(),
            fmt_usd_axis,
            no_bounds,
        ),
        (
            "longest end-of-run wait (s, p95 over sessions)",
            |s| s.end_of_run_latency_p95(),
            |v| format!("{v:.1} s"),
            no_bounds,
        ),
        detail,
        (
            "facts dropped (mean per session)",
            |s| s.facts_dropped(),
            fmt_pct,
            no_bounds,
        ),
    ]
}

/// Bars over the summarizers, one per column.
type BarChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<SegmentedCoord<RangedCoordusize>, RangedCoordf64>>;

/// One panel: a bar per summarizer (n/a where it has no value), whiskers for estimates.
fn draw_summarizer_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panel: &DrawingArea<DB, Shift>,
    rows: &[&SettingRow],
    (desc, get, fmtv, bounds): SummarizerMetric,
) -> Result<(), DrawError> {
    let n = rows.len();
    let vals: Vec<Option<f64>> = rows.iter().map(|s| get(s)).collect();
    let whiskers: Vec<Option<(f64, f64)>> = rows.iter().map(|s| bounds(s)).collect();
    let ymax = vals
        .iter()
        .flatten()
        .chain(whiskers.iter().flatten().map(|w| &w.1))
        .fold(0.0f64, |a, b| a.max(*b));
    let ymax = if ymax > 0.0 { ymax * 1.25 } else { 1.0 };
    // A lone summarizer sits in the middle of three columns: plotters maps every point of
    // a one-value segmented axis to one pixel, which drew its bar `width="-190"`.
    let (cols, off) = if n == 1 { (3, 1) } else { (n, 0) };
    let mut chart = ChartBuilder::on(panel)
        .margin(8)
        .caption(desc, font(NOTE + 1.0))
        .x_label_area_size(40)
        .y_label_area_size(90)
        .build_cartesian_2d(
            (0..cols.saturating_sub(1)).into_segmented(),
            axis(0.0, ymax),
        )
        .map_err(e)?;
    let plot_w = chart.plotting_area().dim_in_pixel().0;
    let names = column_labels(
        root,
        rows.iter().map(|s| s.summarizer.as_str()),
        plot_w / (cols / n.max(1)) as u32,
        TICK - 2.0,
        8,
    );
    chart
        .configure_mesh()
        .disable_x_mesh()
        .label_style(font(TICK - 2.0))
        .x_labels(cols + 1)
        .y_labels(5)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => i
                .checked_sub(off)
                .and_then(|i| names.get(i).cloned())
                .unwrap_or_default(),
            _ => String::new(),
        })
        .y_label_formatter(&|v| fmtv(*v))
        .light_line_style(LIGHT.mix(0.5))
        .draw()
        .map_err(e)?;
    let slot = plot_w / cols.max(1) as u32;
    for (i, v) in vals.iter().enumerate() {
        let style = font(NOTE).pos(Pos::new(HPos::Center, VPos::Bottom));
        match v {
            Some(v) => {
                let bar = Bar {
                    i,
                    col: i + off,
                    value: *v,
                    whisker: whiskers[i],
                    slot,
                };
                bar.draw(root, &mut chart, fmtv(*v), style)?;
            }
            None => {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((SegmentValue::CenterOf(i + off), 0.0))
                            + Text::new("n/a", (0, -4), style.color(&GREY)),
                    ))
                    .map_err(e)?;
            }
        }
    }
    Ok(())
}

/// Summarizer `i`'s bar in a panel whose columns are `slot` pixels wide.
struct Bar {
    i: usize,
    /// Its column (`i`, or the middle one for a lone summarizer).
    col: usize,
    value: f64,
    whisker: Option<(f64, f64)>,
    slot: u32,
}

impl Bar {
    /// The bar, its whisker with caps, and `label` above both when it fits the slot.
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        chart: &mut BarChart<DB>,
        label: String,
        style: TextStyle,
    ) -> Result<(), DrawError> {
        let (i, v, col) = (self.i, self.value, self.col);
        let c = PALETTE[i % PALETTE.len()];
        let mut bar = Rectangle::new(
            [
                (SegmentValue::Exact(col), 0.0),
                (SegmentValue::Exact(col + 1), v),
            ],
            c.mix(0.8).filled(),
        );
        let gap = self.slot / 5;
        bar.set_margin(0, 0, gap, gap);
        chart.draw_series(std::iter::once(bar)).map_err(e)?;
        if let Some((lo, hi)) = self.whisker {
            let x = SegmentValue::CenterOf(col);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x.clone(), lo), (x.clone(), hi)],
                    BLACK.stroke_width(2),
                )))
                .map_err(e)?;
            // Caps: short horizontal ticks at both ends.
            for y in [lo, hi] {
                chart
                    .draw_series(std::iter::once(
                        EmptyElement::at((x.clone(), y))
                            + PathElement::new(vec![(-8, 0), (8, 0)], BLACK.stroke_width(2)),
                    ))
                    .map_err(e)?;
            }
        }
        // The value above the bar, when it fits the bar's slot.
        let fits = root
            .estimate_text_size(&label, &style)
            .map(|(w, _)| w + 4 <= self.slot)
            .unwrap_or(false);
        if fits {
            chart
                .draw_series(std::iter::once(
                    // Above the whisker, when there is one.
                    EmptyElement::at((
                        SegmentValue::CenterOf(col),
                        self.whisker.map_or(v, |w| v.max(w.1)),
                    )) + Text::new(label, (0, -4), style),
                ))
                .map_err(e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::folder::{frontier, idle_frontier, parse_runs, parse_settings};
    use std::path::Path;

    /// Two summarizers × two client modes over one trigger, plus a baseline.
    fn data() -> RunData {
        let settings = serde_json::json!([
            {"setting_id": 0, "trigger_kind": "none", "summarizer": null, "client": "waits", "agent_model": "m", "tokenizer": "o200k", "label": "no compaction", "cost_usd_sum": 10.0, "detail_lost_mean": 0.0, "pareto": true},
            {"setting_id": 1, "trigger_kind": "tokens", "after_tokens": 80000, "keep_recent_events": 20, "summarizer": "agent", "client": "waits", "agent_model": "m", "tokenizer": "o200k", "label": "compaction=Compaction(after_tokens=80_000, keep_recent_events=20)", "cost_usd_sum": 8.0, "cost_saved_usd_sum": 1.5, "detail_lost_mean": 0.2, "pareto": true, "recommended": true, "rank": 1},
            {"setting_id": 2, "trigger_kind": "tokens", "after_tokens": 80000, "keep_recent_events": 20, "summarizer": "agent", "client": "streams", "agent_model": "m", "tokenizer": "o200k", "label": "x", "cost_usd_sum": 8.5, "detail_lost_mean": 0.2, "pareto": false, "rank": 3},
            {"setting_id": 3, "trigger_kind": "tokens", "after_tokens": 40000, "keep_recent_events": 20, "summarizer": "terse", "client": "waits", "agent_model": "m", "tokenizer": "o200k", "label": "y", "cost_usd_sum": 7.0, "detail_lost_mean": 0.3, "pareto": true, "rank": 2}
        ]);
        let runs = "session_id,source,setting_id,summarizer_calls,end_of_run_latency_max_s\n\
                    a,f,1,2,3.0\nb,f,1,0,0.0\na,f,2,1,5.0\na,f,3,4,0.01\na,f,0,0,0\n";
        RunData::from_rows(
            Path::new("."),
            serde_json::json!({}),
            parse_settings(Path::new("settings.json"), &settings).expect("settings"),
            parse_runs(Path::new("runs.csv"), runs).expect("runs"),
            Vec::new(),
        )
    }

    #[test]
    fn axes_are_finite_and_never_empty() {
        for (lo, hi) in [
            (0.0, f64::INFINITY),
            (f64::NEG_INFINITY, 1e308),
            (f64::NAN, 1.0),
            (5.0, 5.0),
            (1e300, -1e300),
            (0.0, f64::MAX * 1.08),
        ] {
            let r = axis(lo, hi);
            assert!(
                r.start.is_finite() && r.end.is_finite() && r.end > r.start,
                "{lo}..{hi}: {r:?}"
            );
            assert!(r.end - r.start <= 2.0 * AXIS_LIMIT, "{r:?}");
        }
        assert_eq!(axis(1.0, 2.0), 1.0..2.0);
    }

    /// Every chart draws (and so ends) with values near f64::MAX in every column it plots.
    #[test]
    fn charts_with_huge_values_terminate() {
        crate::chart::register_fonts();
        let mut d = data();
        for s in &mut d.settings {
            for v in s.numbers.values_mut() {
                *v = 1e308;
            }
        }
        for r in &mut d.runs {
            r.figures = r.figures.map(|_| 1e308);
        }
        for v in d.latency.iter_mut().flatten() {
            *v = 1e308;
        }
        let r = crate::chart::render_svg(&CostVsDetail(&d));
        assert!(r.is_ok(), "{:?}", r.err());
        assert!(crate::chart::render_svg(&Heatmap::net_saved(&d)).is_ok());
        assert!(crate::chart::render_svg(&Heatmap::detail_lost(&d)).is_ok());
        let _ = crate::chart::render_svg(&InvocationsOverlap(&d));
        let _ = crate::chart::render_svg(&Latency(&d));
        let _ = crate::chart::render_svg(&Summarizers(&d));
    }

    /// Issue 39 item 9: every summarizer count, one alone included, draws bars of positive
    /// width (a lone summarizer drew `width="-190"`).
    #[test]
    fn summarizer_bars_never_have_a_negative_width() {
        crate::chart::register_fonts();
        for keep in [1usize, 2, 7] {
            let mut d = data();
            d.settings.retain(|s| s.summarizer != "terse");
            for k in 1..keep {
                let mut extra = d.settings[1].clone();
                extra.setting_id = format!("{}", 10 + k);
                extra.summarizer = format!("command:s{k}");
                extra.recommended = false;
                d.settings.push(extra);
            }
            assert_eq!(summarizer_rows(&d).len(), keep);
            let svg = crate::chart::render_svg(&Summarizers(&d)).expect("drawn");
            let bars = svg.matches("<rect").count();
            assert!(bars > 1, "{keep}: no bar drawn");
            for w in svg.split("width=\"").skip(1) {
                let w: f64 = w.split('"').next().unwrap().parse().expect("a number");
                assert!(w >= 0.0, "{keep} summarizers: width {w}");
            }
        }
    }

    #[test]
    fn latency_groups_split_by_client_when_swept_and_skip_rows_that_never_compacted() {
        let d = data();
        let g = Latency(&d).groups();
        let keys: Vec<&str> = g.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(keys, ["agent / streams", "agent / waits", "terse / waits"]);
        // Session b under setting 1 made no summarizer call: not in the distribution.
        assert_eq!(g[1].1, vec![3.0]);
    }

    #[test]
    fn a_live_summarizers_waits_are_labelled_measured() {
        let mut d = data();
        for s in &mut d.settings {
            if s.summarizer == "terse" {
                s.summarizer = "live:gemini/gemini-2.5-flash".into();
            }
        }
        let keys: Vec<String> = Latency(&d).groups().into_iter().map(|g| g.0).collect();
        assert_eq!(
            keys,
            [
                "agent / streams",
                "agent / waits",
                "live:gemini/gemini-2.5-flash (measured) / waits"
            ]
        );
    }

    #[test]
    fn summarizers_are_compared_at_the_recommended_trigger_else_their_best_rank() {
        let d = data();
        let rows = summarizer_rows(&d);
        let ids: Vec<&str> = rows.iter().map(|s| s.setting_id.as_str()).collect();
        // agent: same trigger and client as the recommendation (1, not 2); terse has no
        // 80k/20 setting, so its best-ranked one (3).
        assert_eq!(ids, ["1", "3"]);
    }

    #[test]
    fn net_saved_cells_compare_with_the_runs_own_no_compaction_row() {
        let d = data();
        // Setting 1 costs 8.0 against the baseline row's 10.0: 2.0 saved, the frontier
        // table's number, not the per-session `cost_saved_usd_sum` (1.5), whose baseline is
        // priced differently.
        let (xs, ys, cells) = Heatmap::net_saved(&d).cells();
        assert_eq!((xs, ys), (vec![80000], vec![20]));
        assert_eq!(cells, vec![(0, 0, 2.0)]);
    }

    #[test]
    fn heatmap_marks_cells_whose_threshold_no_session_reached() {
        let mut d = data();
        let mut idle = d.settings[1].clone();
        idle.setting_id = "9".into();
        idle.recommended = false;
        idle.after_tokens = Some(160_000);
        idle.numbers.insert("summarizer_calls_sum".into(), 0.0);
        d.settings.push(idle);
        d.settings[1]
            .numbers
            .insert("summarizer_calls_sum".into(), 3.0);
        let h = Heatmap::detail_lost(&d);
        let (xs, ys, _) = h.cells();
        assert_eq!(xs, vec![80_000, 160_000]);
        assert_eq!(h.idle_cells(&xs, &ys), vec![(1, 0)]);
    }

    #[test]
    fn detail_charts_use_broken_references_when_the_run_has_them() {
        let mut d = data();
        // A run made before the column: detail_lost, said so in the title.
        assert!(Heatmap::detail_lost(&d).title.starts_with("Detail lost"));
        assert_eq!(DetailAxis::of(&d).budget_key, "detail_lost");
        d.settings[1]
            .numbers
            .insert("references_broken_share_mean".into(), 0.375);
        let h = Heatmap::detail_lost(&d);
        assert!(h.title.starts_with("Broken references"));
        let (_, _, cells) = h.cells();
        assert_eq!(cells, vec![(0, 0, 0.375)]);
        assert_eq!(DetailAxis::of(&d).budget_key, "broken_references");
    }

    #[test]
    fn settings_that_never_compacted_leave_the_frontier() {
        let mut d = data();
        let mut idle = d.settings[1].clone();
        idle.setting_id = "9".into();
        idle.recommended = false;
        idle.numbers.insert("summarizer_calls_sum".into(), 0.0);
        d.settings.push(idle);
        let f: Vec<&str> = frontier(&d).iter().map(|s| s.setting_id.as_str()).collect();
        assert!(!f.contains(&"9"), "{f:?}");
        let idle: Vec<&str> = idle_frontier(&d)
            .iter()
            .map(|s| s.setting_id.as_str())
            .collect();
        assert_eq!(idle, ["9"]);
    }

    #[test]
    fn frontier_is_cheapest_first_and_quantiles_interpolate() {
        let d = data();
        let f: Vec<&str> = frontier(&d).iter().map(|s| s.setting_id.as_str()).collect();
        assert_eq!(f, ["3", "1", "0"]);
    }
}
