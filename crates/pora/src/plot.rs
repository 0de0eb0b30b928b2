//! Charts (SVG) for `pora bench --plot` and `pora tune --plot`: throughput vs depth per method
//! with the device ceiling as a dashed line, and latency percentiles vs depth. The input is
//! generic ([`Chart`] of [`Series`]) so both commands feed the same code. The SVG backend writes
//! `<text>` elements and plotters sizes text with its built-in estimate (no `ttf` feature), so
//! no system fonts are needed to draw or view the charts.

use anyhow::{anyhow, Context};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One line: `(x, y)` points, drawn in x order.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A labelled horizontal reference line (e.g. the device ceiling).
#[derive(Clone, Debug, PartialEq)]
pub struct HLine {
    pub label: String,
    pub y: f64,
}

/// One panel: lines over a log2 x axis (depth or reads in flight).
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Log10 y axis (latency spans decades); linear from zero otherwise.
    pub log_y: bool,
    pub series: Vec<Series>,
    pub hlines: Vec<HLine>,
}

impl Chart {
    /// Throughput (y) vs depth (x) per method, with an optional device ceiling.
    pub fn throughput(
        title: &str,
        x_label: &str,
        series: Vec<Series>,
        ceiling: Option<f64>,
    ) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: "samples / s".into(),
            log_y: false,
            series,
            hlines: ceiling
                .map(|y| HLine {
                    label: format!("device ceiling {}", si(y)),
                    y,
                })
                .into_iter()
                .collect(),
        }
    }

    /// Latency percentiles (µs, log y) vs depth; one series per method and percentile.
    pub fn latency(title: &str, x_label: &str, series: Vec<Series>) -> Chart {
        Chart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: "latency (µs)".into(),
            log_y: true,
            series,
            hlines: vec![],
        }
    }

    fn is_empty(&self) -> bool {
        self.series.iter().all(|s| s.points.is_empty())
    }
}

/// Strong, distinguishable colours (plotters' palettes include pale yellows).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
];

const PANEL_W: u32 = 1100;
/// Room right of the plot for the legend.
const LEGEND_W: u32 = 250;
const PANEL_H: u32 = 520;

/// Writes `charts` stacked vertically into one SVG file.
pub fn write_svg(path: &Path, charts: &[Chart]) -> anyhow::Result<()> {
    let charts: Vec<&Chart> = charts.iter().filter(|c| !c.is_empty()).collect();
    anyhow::ensure!(
        !charts.is_empty(),
        "nothing to plot into {}",
        path.display()
    );
    let root = SVGBackend::new(path, (PANEL_W, PANEL_H * charts.len() as u32)).into_drawing_area();
    // plotters' errors name neither the file nor the chart: every one is given both.
    root.fill(&WHITE)
        .map_err(|e| anyhow!("{}: drawing the background: {e}", path.display()))?;
    for (area, chart) in root.split_evenly((charts.len(), 1)).iter().zip(charts) {
        draw_panel(area, chart)
            .with_context(|| format!("{}: drawing `{}`", path.display(), chart.title))?;
    }
    root.present()
        .map_err(|e| anyhow!("writing {}: {e}", path.display()))
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> anyhow::Result<()> {
    let points = chart.series.iter().flat_map(|s| s.points.iter().copied());
    let (mut x_min, mut x_max, mut y_min, mut y_max) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in points.chain(chart.hlines.iter().map(|h| (f64::NAN, h.y))) {
        if x.is_finite() {
            (x_min, x_max) = (x_min.min(x), x_max.max(x));
        }
        (y_min, y_max) = (y_min.min(y), y_max.max(y));
    }
    // Whole powers of two around the data, so the log2 ticks land on depths.
    let x_range = (
        x_min.max(1.0).log2().floor().exp2(),
        x_max.max(2.0).log2().ceil().exp2().max(x_min * 2.0),
    );
    if chart.log_y {
        let (lo, hi) = (
            10f64.powf(y_min.max(1e-3).log10().floor()),
            10f64.powf(y_max.max(y_min * 10.0).log10().ceil()),
        );
        draw_with_y(area, chart, x_range, (lo..hi).log_scale())
    } else {
        let hi = (y_max * 1.12).max(1.0);
        draw_with_y(area, chart, x_range, 0f64..hi)
    }
}

fn draw_with_y<DB: DrawingBackend, Y>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    x: (f64, f64),
    y: Y,
) -> anyhow::Result<()>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("{e}");
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, ("sans-serif", 22))
        .margin(14)
        .margin_right(LEGEND_W)
        .x_label_area_size(48)
        .y_label_area_size(84)
        .build_cartesian_2d((x.0..x.1).log_scale().base(2.0), y)
        .map_err(e)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&|v| format!("{}", v.round()))
        .y_label_formatter(&|v| si(*v))
        .axis_desc_style(("sans-serif", 16))
        .label_style(("sans-serif", 13))
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(e)?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let mut pts = s.points.clone();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        ctx.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(e)?;
        ctx.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(e)?;
    }
    for h in &chart.hlines {
        ctx.draw_series(DashedLineSeries::new(
            vec![(x.0, h.y), (x.1, h.y)],
            10,
            6,
            BLACK.stroke_width(2),
        ))
        .map_err(e)?;
    }
    draw_legend(area, chart).map_err(e)
}

/// The legend in the panel's right margin, outside the plot, so it never hides a line or the
/// ceiling (plotters clips its own legend to the plotting area).
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let x = area.dim_in_pixel().0 as i32 - LEGEND_W as i32 + 8;
    let font = ("sans-serif", 14).into_font().color(&BLACK);
    let mut y = 56;
    for (i, s) in chart.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        area.draw(&PathElement::new(
            vec![(x, y), (x + 24, y)],
            color.stroke_width(2),
        ))?;
        area.draw(&Circle::new((x + 12, y), 3, color.filled()))?;
        area.draw(&Text::new(s.label.clone(), (x + 32, y - 8), font.clone()))?;
        y += 22;
    }
    for h in &chart.hlines {
        for dash in [0, 14] {
            area.draw(&PathElement::new(
                vec![(x + dash, y), (x + dash + 10, y)],
                BLACK.stroke_width(2),
            ))?;
        }
        area.draw(&Text::new(h.label.clone(), (x + 32, y - 8), font.clone()))?;
        y += 22;
    }
    Ok(())
}

/// 1234567 -> "1.23M": short tick labels.
pub fn si(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.3}M", v / 1e6).replace(".000M", "M")
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3).replace(".0k", "k")
    } else if a >= 1.0 || a == 0.0 {
        format!("{}", (v * 10.0).round() / 10.0)
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Vec<Chart> {
        let depths = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];
        let curve = |cap: f64, lat_us: f64| -> Vec<(f64, f64)> {
            depths
                .iter()
                .map(|d| (*d, (d * 1e6 / lat_us).min(cap)))
                .collect()
        };
        let thr = Chart::throughput(
            "pora tune: mining throughput vs reads in flight",
            "reads in flight per worker (depth)",
            vec![
                Series {
                    label: "uring-direct".into(),
                    points: curve(180_000.0, 90.0),
                },
                Series {
                    label: "pread".into(),
                    points: curve(60_000.0, 110.0),
                },
            ],
            Some(200_000.0),
        );
        let lat = Chart::latency(
            "raw random-read latency",
            "reads in flight",
            vec![
                Series {
                    label: "uring-direct p50".into(),
                    points: depths.iter().map(|d| (*d, 80.0 + d)).collect(),
                },
                Series {
                    label: "uring-direct p99".into(),
                    points: depths.iter().map(|d| (*d, 200.0 + 8.0 * d)).collect(),
                },
                Series {
                    label: "uring-direct p99.9".into(),
                    points: depths.iter().map(|d| (*d, 400.0 + 20.0 * d)).collect(),
                },
            ],
        );
        vec![thr, lat]
    }

    #[test]
    fn svg_has_titles_labels_legend_and_ceiling() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.svg");
        write_svg(&path, &demo()).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in [
            "mining throughput vs reads in flight",
            "samples / s",
            "uring-direct",
            "pread",
            "device ceiling 200k",
            "p99.9",
            "latency",
        ] {
            assert!(svg.contains(text), "missing `{text}` in the SVG");
        }
        // The dashed ceiling is drawn as separate short segments.
        assert!(svg.matches("<polyline").count() > 10);
        if let Ok(out) = std::env::var("PORA_PLOT_DEMO") {
            std::fs::copy(&path, out).unwrap();
        }
    }

    #[test]
    fn empty_input_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let empty = Chart::throughput(
            "x",
            "y",
            vec![Series {
                label: "a".into(),
                points: vec![],
            }],
            None,
        );
        let path = dir.path().join("e.svg");
        let err = write_svg(&path, &[empty]).unwrap_err().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
    }

    /// A file that cannot be written: the error names it.
    #[test]
    fn an_unwritable_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("t.svg");
        let err = format!("{:#}", write_svg(&path, &demo()).unwrap_err());
        assert!(err.contains(&path.display().to_string()), "{err}");
    }

    #[test]
    fn si_labels() {
        assert_eq!(si(1_234_567.0), "1.235M");
        assert_eq!(si(2_000_000.0), "2M");
        assert_eq!(si(174_763.0), "174.8k");
        assert_eq!(si(0.0), "0");
        assert_eq!(si(12.34), "12.3");
    }
}
