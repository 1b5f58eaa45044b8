//! PNG plots for the benchmarks, drawn with plotters (SVG) and rasterised with resvg
//! using an embedded font, so nothing has to be installed.

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::Path;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn svg_to_png(svg: &str, path: &Path, (w, h): (u32, u32)) -> Result<()> {
    let mut opt = resvg::usvg::Options::default();
    {
        let db = opt.fontdb_mut();
        db.load_font_data(FONT.to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        db.set_serif_family("DejaVu Sans");
    }
    opt.font_family = "DejaVu Sans".into();
    let tree = resvg::usvg::Tree::from_str(svg, &opt).context("rendering the plot")?;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(w, h).context("plot size")?;
    pixmap.fill(resvg::tiny_skia::Color::WHITE);
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
        .save_png(path)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

const SIZE: (u32, u32) = (960, 540);
/// Bar colours; red is kept for the legacy baseline.
const PALETTE: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn f(v: &serde_json::Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or(0.0)
}

/// Fig. 6: median authentication delay per (m, n) with 5 %–95 % whiskers, and the
/// legacy flow's median as a baseline.
pub fn auth_delay(path: &Path, rows: &[serde_json::Value]) -> Result<()> {
    let mut ms: Vec<u64> = rows.iter().filter_map(|r| r["m"].as_u64()).collect();
    ms.dedup();
    ms.sort();
    ms.dedup();
    let mut ns: Vec<u64> = rows.iter().filter_map(|r| r["n"].as_u64()).collect();
    ns.sort();
    ns.dedup();
    let ymax = rows
        .iter()
        .map(|r| f(&r["privatedrop"], "p95_ms").max(f(&r["legacy"], "p95_ms")))
        .fold(1.0f64, f64::max)
        * 1.15;
    let legacy: f64 = {
        let mut v: Vec<f64> = rows.iter().map(|r| f(&r["legacy"], "median_ms")).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let groups = ns.len() as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Authentication delay: PrivateDrop vs legacy AirDrop",
                ("sans-serif", 24),
            )
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..groups, 0.0..ymax)?;
        let labels = ns.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(ns.len() * 2 + 1)
            .x_label_formatter(&|x| {
                let i = x.floor() as usize;
                if (x - x.floor() - 0.5).abs() < 1e-6 && i < labels.len() {
                    format!("n = {}", labels[i])
                } else {
                    String::new()
                }
            })
            .y_desc("median delay [ms] (whiskers: 5 % / 95 %)")
            .label_style(("sans-serif", 15))
            .draw()?;
        let width = 0.8 / ms.len().max(1) as f64;
        for (k, m) in ms.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let bars: Vec<(f64, &serde_json::Value)> = rows
                .iter()
                .filter(|r| r["m"].as_u64() == Some(*m))
                .filter_map(|r| {
                    let i = ns.iter().position(|n| Some(*n) == r["n"].as_u64())?;
                    Some((i as f64 + 0.1 + k as f64 * width, &r["privatedrop"]))
                })
                .collect();
            chart
                .draw_series(
                    bars.iter().map(|(x, v)| {
                        Rectangle::new([(*x, 0.0), (*x + width * 0.9, f(v, "median_ms"))], color.filled())
                    }),
                )?
                .label(format!("PrivateDrop, m = {m}"))
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
            chart.draw_series(bars.iter().map(|(x, v)| {
                let c = *x + width * 0.45;
                PathElement::new(vec![(c, f(v, "p5_ms")), (c, f(v, "p95_ms"))], BLACK.stroke_width(2))
            }))?;
        }
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, legacy), (groups, legacy)],
                RED.stroke_width(3),
            ))?
            .label(format!("legacy AirDrop (median {legacy:.1} ms)"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], RED.stroke_width(3)));
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
        root.present()?;
    }
    svg_to_png(&svg, path, SIZE)
}

/// Fig. 10: precomputation time against n, with the least-squares line.
pub fn precomputation(path: &Path, points: &[(u32, f64)], slope_ms: f64) -> Result<()> {
    let xmax = points.iter().map(|(n, _)| *n as f64).fold(1.0, f64::max) * 1.05;
    let ymax = points.iter().map(|(_, t)| *t).fold(1.0, f64::max) * 1.2;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Address-book precomputation (all cores)", ("sans-serif", 24))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..xmax, 0.0..ymax)?;
        chart
            .configure_mesh()
            .x_desc("address-book entries n")
            .y_desc("time [ms]")
            .label_style(("sans-serif", 15))
            .draw()?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|(n, t)| Circle::new((*n as f64, *t), 6, PALETTE[0].filled())),
            )?
            .label("measured (median of 3)")
            .legend(|(x, y)| Circle::new((x + 7, y), 6, PALETTE[0].filled()));
        if slope_ms.is_finite() {
            let (mx, my) = {
                let k = points.len().max(1) as f64;
                (
                    points.iter().map(|(n, _)| *n as f64).sum::<f64>() / k,
                    points.iter().map(|(_, t)| *t).sum::<f64>() / k,
                )
            };
            let at = |x: f64| my + slope_ms * (x - mx);
            chart
                .draw_series(LineSeries::new(
                    vec![(0.0, at(0.0)), (xmax, at(xmax))],
                    RED.stroke_width(2),
                ))?
                .label(format!("fit: {:.4} ms per entry", slope_ms))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], RED.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
        root.present()?;
    }
    svg_to_png(&svg, path, SIZE)
}

/// A line plot of several series (points joined, markers drawn); `log_y` puts the
/// y axis on a log scale. Used by `tacit bench pros` for the PROS paper's figures.
pub fn lines(
    path: &Path,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_y: bool,
) -> Result<()> {
    let svg = lines_svg(title, x_desc, y_desc, series, log_y)?;
    svg_to_png(&svg, path, SIZE)
}

/// [`lines`] as SVG text (`tacit bench reproduce` writes it as is).
pub fn lines_svg(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
    log_y: bool,
) -> Result<String> {
    let pts = series.iter().flat_map(|(_, v)| v.iter());
    let xmax = pts.clone().map(|p| p.0).fold(1e-9, f64::max) * 1.05;
    let xmin = pts.clone().map(|p| p.0).fold(f64::INFINITY, f64::min).min(0.0);
    let ymax = pts.clone().map(|p| p.1).fold(1e-9, f64::max) * 1.3;
    let ymin_pos = pts.map(|p| p.1).filter(|y| *y > 0.0).fold(f64::INFINITY, f64::min);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE)?;
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(72);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_desc)
                    .y_desc(y_desc)
                    .label_style(("sans-serif", 15))
                    .draw()?;
                for (i, (name, v)) in series.iter().enumerate() {
                    let c = if i < PALETTE.len() {
                        PALETTE[i]
                    } else {
                        RGBColor(214, 39, 40)
                    };
                    let pts: Vec<(f64, f64)> = v.iter().copied().filter(|p| !log_y || p.1 > 0.0).collect();
                    chart
                        .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                        .label(name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], c.stroke_width(3)));
                    chart.draw_series(pts.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.9))
                    .border_style(BLACK)
                    .label_font(("sans-serif", 15))
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()?;
            }};
        }
        if log_y {
            let lo = if ymin_pos.is_finite() { ymin_pos / 2.0 } else { 1e-3 };
            draw!(b.build_cartesian_2d(xmin..xmax, (lo..ymax).log_scale())?);
        } else {
            draw!(b.build_cartesian_2d(xmin..xmax, 0.0..ymax)?);
        }
        root.present()?;
    }
    Ok(svg)
}
