//! The comparison chart, a PNG drawn with `plotters`: pairs per second by
//! concurrency on the left, the hand-off latency distribution on the right.
//! Both axes that span orders of magnitude are logarithmic, since the
//! polling peers are a thousand times slower to hand off than pub/sub.

use std::path::Path;

use plotters::coord::combinators::IntoLogRange;

use plotters::prelude::*;

/// One line of the chart.
pub(crate) struct Series {
    pub(crate) name: String,
    /// (x, y) in the panel's units.
    pub(crate) points: Vec<(f64, f64)>,
    /// The library's colour; `None` for a reference, drawn dashed in
    /// black.
    pub(crate) color: Option<usize>,
}

type Failure = Box<dyn std::error::Error>;

/// Draws `pairs` (x: tasks, y: pairs/s) and `latencies` (x: ms, y:
/// percentile) side by side into `path`.
pub(crate) fn draw(
    path: &Path,
    pairs: &[Series],
    latencies: &[Series],
    workers: usize,
) -> Result<(), Failure> {
    let root = BitMapBackend::new(path, (1400, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(700);
    draw_pairs(&left, pairs)?;
    draw_latencies(&right, latencies, workers)?;
    root.present()?;
    Ok(())
}

/// `12000` as `12k`, for an axis.
fn thousands(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.0}k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

fn color(i: usize) -> RGBColor {
    // redlease's rows first, in the strongest colours.
    const COLORS: [RGBColor; 8] = [
        RGBColor(200, 30, 30),
        RGBColor(240, 130, 40),
        RGBColor(230, 60, 160),
        RGBColor(30, 90, 200),
        RGBColor(40, 160, 60),
        RGBColor(140, 60, 170),
        RGBColor(100, 100, 100),
        // Not black: black is the references'.
        RGBColor(0, 150, 150),
    ];
    COLORS[i % COLORS.len()]
}

/// The range of the points' `axis` coordinate, widened to whole powers of
/// ten for a log scale.
fn log_range(series: &[Series], axis: fn(&(f64, f64)) -> f64) -> std::ops::Range<f64> {
    let values = series.iter().flat_map(|s| s.points.iter().map(axis));
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return 1.0..10.0;
    }
    10f64.powf(lo.log10().floor())..10f64.powf(hi.log10().ceil())
}

fn draw_pairs(
    area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    series: &[Series],
) -> Result<(), Failure> {
    let spreads: Vec<Spread> = series
        .iter()
        .map(|s| Spread {
            name: s.name.clone(),
            points: s.points.iter().map(|&(x, y)| (x, y, y, y)).collect(),
            color: s.color,
        })
        .collect();
    let panel = Panel {
        caption: "uncontended lock+unlock pairs/s",
        y_desc: "pairs per second",
        // The upper left is empty: rates grow with tasks.
        legend: SeriesLabelPosition::UpperLeft,
    };
    draw_spreads(area, panel, &spreads)
}

fn draw_latencies(
    area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    series: &[Series],
    workers: usize,
) -> Result<(), Failure> {
    let x = log_range(series, |p| p.0);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("hand-off latency, {workers} workers on one key"),
            ("sans-serif", 22),
        )
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(x.log_scale(), 0f64..100f64)?;
    chart
        .configure_mesh()
        .x_desc("release to next acquire, ms")
        .y_desc("percentile")
        .x_label_formatter(&|v| format!("{v}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 15))
        .draw()?;
    for s in series {
        let c = s.color.map_or(BLACK, color);
        let style = ShapeStyle::from(&c).stroke_width(2);
        chart
            .draw_series(LineSeries::new(s.points.clone(), style))?
            .label(&s.name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;
    Ok(())
}

/// One subject's pairs per second by tasks in a `versus` panel: the median
/// of the runs and their range.
pub(crate) struct Spread {
    pub(crate) name: String,
    /// (tasks, median, lowest, highest).
    pub(crate) points: Vec<(f64, f64, f64, f64)>,
    /// `None` for a reference (a limit), drawn dashed in black.
    pub(crate) color: Option<usize>,
}

/// Draws one panel per server (its title, its subjects) side by side into
/// `path`: pairs per second by tasks, each point the median of the runs
/// with a bar over their range.
pub(crate) fn draw_versus(path: &Path, panels: &[(String, Vec<Spread>)]) -> Result<(), Failure> {
    let width = 700 * panels.len().max(1) as u32;
    let root = BitMapBackend::new(path, (width, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, (title, spreads)) in root
        .split_evenly((1, panels.len().max(1)))
        .iter()
        .zip(panels)
    {
        let panel = Panel {
            caption: title,
            y_desc: "pairs per second (median, range of the runs)",
            legend: SeriesLabelPosition::LowerRight,
        };
        draw_spreads(area, panel, spreads)?;
    }
    root.present()?;
    Ok(())
}

/// A pairs-per-second panel's words and where its legend goes.
struct Panel<'a> {
    caption: &'a str,
    y_desc: &'a str,
    legend: SeriesLabelPosition,
}

/// Pairs per second by tasks, log on both axes: a line per subject through
/// its medians, with a bar over each point's range where it has one.
fn draw_spreads(
    area: &DrawingArea<BitMapBackend, plotters::coord::Shift>,
    panel: Panel<'_>,
    spreads: &[Spread],
) -> Result<(), Failure> {
    // The ranges, as series, only to size the axes.
    let bounds: Vec<Series> = spreads
        .iter()
        .map(|s| Series {
            name: String::new(),
            points: (s.points.iter())
                .flat_map(|&(x, _, lo, hi)| [(x, lo), (x, hi)])
                .collect(),
            color: None,
        })
        .collect();
    let x = log_range(&bounds, |p| p.0);
    let y = log_range(&bounds, |p| p.1);
    let mut chart = ChartBuilder::on(area)
        .caption(panel.caption, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x.log_scale(), y.log_scale())?;
    chart
        .configure_mesh()
        .x_desc("concurrent tasks on one client")
        .y_desc(panel.y_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| thousands(*v))
        .label_style(("sans-serif", 15))
        .draw()?;
    for s in spreads {
        let c = s.color.map_or(BLACK, color);
        let style = ShapeStyle::from(&c).stroke_width(2);
        let medians: Vec<(f64, f64)> = s.points.iter().map(|&(x, m, _, _)| (x, m)).collect();
        if s.color.is_none() {
            chart
                .draw_series(DashedLineSeries::new(medians, 8, 6, style))?
                .label(&s.name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
            continue;
        }
        chart
            .draw_series(LineSeries::new(medians.clone(), style))?
            .label(&s.name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        chart.draw_series(medians.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
        chart.draw_series(
            (s.points.iter())
                .filter(|&&(_, _, lo, hi)| lo < hi)
                .map(|&(x, m, lo, hi)| ErrorBar::new_vertical(x, lo, m, hi, style, 10)),
        )?;
    }
    chart
        .configure_series_labels()
        .position(panel.legend)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()?;
    Ok(())
}
