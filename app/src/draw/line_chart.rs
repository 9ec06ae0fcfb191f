//! A plain line chart on a `<canvas>`, drawn with plotters: byte values (y)
//! over an index (x), with horizontal reference lines (a limit) and one
//! marked x (a peak). The module view's heap curve when there are no buffer
//! lifetimes to draw a timeline from.
//!
//! Series with more points than the canvas has pixels are drawn as their
//! per-pixel maximum, so a peak is never lost to sampling.

use leptos::html;
use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::line_plot::nice_ceiling;

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    /// `(x, bytes)`, x increasing.
    pub points: Vec<(f64, f64)>,
    pub color: &'static str,
    pub dashed: bool,
    /// Hold each value until the next point (a heap between events) rather
    /// than interpolating (a sampled quantity).
    pub steps: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    pub label: String,
    pub bytes: f64,
    pub color: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

const MARGIN_LEFT: f64 = 76.0;
const MARGIN_RIGHT: f64 = 16.0;
const MARGIN_TOP: f64 = 14.0;
const MARGIN_BOTTOM: f64 = 34.0;
const AXIS: RGBColor = RGBColor(0x57, 0x60, 0x6a);
const GRID: RGBColor = RGBColor(0xe4, 0xe7, 0xeb);
const PEAK: RGBColor = RGBColor(0xbc, 0x4c, 0x00);
const FONT: &str = "sans-serif";

#[component]
pub fn LineChart(
    series: Vec<Series>,
    #[prop(optional)] lines: Vec<RefLine>,
    marker: Option<Marker>,
    x_label: &'static str,
    /// Text alternative for screen readers.
    description: String,
) -> impl IntoView {
    let canvas: NodeRef<html::Canvas> = NodeRef::new();
    let resized = crate::listen::window_resize_counter();

    let legend = series
        .iter()
        .map(|s| (s.label.clone(), s.color, s.dashed))
        .chain(lines.iter().map(|l| (l.label.clone(), l.color, true)))
        .map(|(label, color, dashed)| {
            view! {
                <span class="legend-item">
                    <span class="legend-swatch" class:dashed=dashed style:border-color=color></span>
                    {label}
                </span>
            }
        })
        .collect_view();

    Effect::new(move |_| {
        resized.track();
        if let Some(element) = canvas.get() {
            // Without a 2D context nothing is drawn; the figures are above.
            let _ = draw(&element, &series, &lines, marker.as_ref(), x_label);
        }
    });

    view! {
        <figure class="chart">
            <canvas node_ref=canvas role="img" aria-label=description.clone()></canvas>
            <figcaption class="legend">{legend}</figcaption>
        </figure>
    }
}

/// Draws the chart on its canvas at the device's pixel ratio.
fn draw(
    canvas: &web_sys::HtmlCanvasElement,
    series: &[Series],
    lines: &[RefLine],
    marker: Option<&Marker>,
    x_label: &str,
) -> Result<(), String> {
    let ratio = gloo_utils::window().device_pixel_ratio().clamp(1.0, 3.0);
    let width = f64::from(canvas.client_width()).max(300.0);
    let height = f64::from(canvas.client_height()).max(160.0);
    canvas.set_width((width * ratio).round() as u32);
    canvas.set_height((height * ratio).round() as u32);
    let backend = plotters_canvas::CanvasBackend::with_canvas_object(canvas.clone())
        .ok_or("the canvas has no 2D context")?;
    let area = backend.into_drawing_area();
    plot(&area, ratio, series, lines, marker, x_label)?;
    area.present().map_err(|e| e.to_string())
}

/// `#0969da` → its colour (grey for anything else).
fn rgb(hex: &str) -> RGBColor {
    let channel = |i: usize| {
        hex.get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0x80)
    };
    RGBColor(channel(1), channel(3), channel(5))
}

/// Draws the chart on `area`; sizes are CSS pixels times `scale`.
pub fn plot<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    scale: f64,
    series: &[Series],
    lines: &[RefLine],
    marker: Option<&Marker>,
    x_label: &str,
) -> Result<(), String> {
    let px = |v: f64| (v * scale).round() as i32;
    let text = |colour: RGBColor| TextStyle {
        font: (FONT, 12.0 * scale).into_font(),
        color: colour.to_backend_color(),
        pos: Pos::new(HPos::Left, VPos::Top),
    };
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.fill(&WHITE).map_err(err)?;
    let all_x = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = all_x.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if !x_min.is_finite() {
        return Ok(());
    }
    let x_span = if x_max > x_min { x_max - x_min } else { 1.0 };
    let y_top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(lines.iter().map(|l| l.bytes))
        .fold(0.0f64, f64::max);
    let y_max = nice_ceiling(y_top * 1.04);
    let x_end = x_min + x_span;

    let mut chart = ChartBuilder::on(area)
        .margin_top(px(MARGIN_TOP))
        .margin_right(px(MARGIN_RIGHT))
        .x_label_area_size(px(MARGIN_BOTTOM))
        .y_label_area_size(px(MARGIN_LEFT))
        .build_cartesian_2d(x_min..x_end, 0f64..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS.stroke_width(1))
        .y_labels(5)
        .y_label_formatter(&|v| format_bytes(*v as u64))
        .x_labels(5)
        .x_label_formatter(&|v| format!("{}", v.round() as i64))
        .x_desc(x_label)
        .label_style(text(AXIS))
        .axis_desc_style(text(AXIS))
        .draw()
        .map_err(err)?;

    for line in lines {
        let colour = rgb(line.color);
        chart
            .draw_series(DashedLineSeries::new(
                [(x_min, line.bytes), (x_end, line.bytes)],
                px(6.0),
                px(4.0),
                colour.stroke_width(px(1.5) as u32),
            ))
            .map_err(err)?;
        let (x, y) = chart.backend_coord(&(x_end, line.bytes));
        area.draw(&Text::new(
            line.label.clone(),
            (x - px(4.0), y - px(3.0)),
            text(colour).pos(Pos::new(HPos::Right, VPos::Bottom)),
        ))
        .map_err(err)?;
    }

    let plot_width = f64::from(chart.plotting_area().dim_in_pixel().0);
    for s in series {
        let thin = per_pixel_max(&s.points, x_min, x_span, plot_width);
        let points = if s.steps { as_steps(&thin) } else { thin };
        let colour = rgb(s.color);
        if s.dashed {
            chart
                .draw_series(DashedLineSeries::new(points, px(4.0), px(3.0), colour.stroke_width(px(1.25) as u32)))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(px(1.75).max(1) as u32)))
                .map_err(err)?;
        }
    }

    if let Some(marker) = marker {
        chart
            .draw_series(LineSeries::new([(marker.x, 0.0), (marker.x, y_max)], PEAK.stroke_width(px(1.0).max(1) as u32)))
            .map_err(err)?;
        let (x, top) = chart.backend_coord(&(marker.x, y_max));
        let right_half = marker.x > x_min + x_span / 2.0;
        let (anchor, dx) = if right_half { (HPos::Right, -px(4.0)) } else { (HPos::Left, px(4.0)) };
        area.draw(&Text::new(
            marker.label.clone(),
            (x + dx, top + px(2.0)),
            text(PEAK).pos(Pos::new(anchor, VPos::Top)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// A held value between points: each point after the first is preceded
/// by the previous value at its x.
fn as_steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        if i > 0 {
            out.push((x, points[i - 1].1));
        }
        out.push((x, y));
    }
    out
}

/// Thins a series to at most two points per pixel column, keeping each
/// column's maximum so peaks stay visible.
fn per_pixel_max(points: &[(f64, f64)], x_min: f64, x_span: f64, plot_w: f64) -> Vec<(f64, f64)> {
    let columns = plot_w.max(1.0) as usize;
    if points.len() <= columns * 2 {
        return points.to_vec();
    }
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(columns);
    let mut current: Option<(usize, f64, f64)> = None;
    for &(x, y) in points {
        let column = (((x - x_min) / x_span) * (columns - 1) as f64) as usize;
        match current {
            Some((c, cx, cy)) if c == column => {
                if y > cy {
                    current = Some((c, cx, y));
                }
            }
            Some((_, cx, cy)) => {
                out.push((cx, cy));
                current = Some((column, x, y));
            }
            None => current = Some((column, x, y)),
        }
    }
    if let Some((_, cx, cy)) = current {
        out.push((cx, cy));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_hold_each_value_until_the_next_point() {
        assert_eq!(
            as_steps(&[(0.0, 1.0), (2.0, 5.0), (3.0, 2.0)]),
            [(0.0, 1.0), (2.0, 1.0), (2.0, 5.0), (3.0, 5.0), (3.0, 2.0)]
        );
        assert_eq!(rgb("#0969da"), RGBColor(0x09, 0x69, 0xda));
    }

    #[test]
    fn the_chart_draws_its_parts_in_svg() {
        let series = vec![Series {
            label: "Heap".into(),
            points: vec![(0.0, 1.0e9), (5.0, 3.0e9), (9.0, 2.0e9)],
            color: "#0969da",
            dashed: false,
            steps: true,
        }];
        let lines = vec![RefLine { label: "HBM limit 4.00 GiB".into(), bytes: 4.0 * 1073741824.0, color: "#cf222e" }];
        let marker = Marker { x: 5.0, label: "peak 2.79 GiB at 5".into() };
        let mut svg = String::new();
        {
            let area = SVGBackend::with_string(&mut svg, (600, 260)).into_drawing_area();
            plot(&area, 1.0, &series, &lines, Some(&marker), "program order").unwrap();
            area.present().unwrap();
        }
        for part in ["HBM limit 4.00 GiB", "peak 2.79 GiB at 5", "program order", "GiB"] {
            assert!(svg.contains(part), "{part} in the chart");
        }
    }

    #[test]
    fn thinning_keeps_the_maximum() {
        let points: Vec<(f64, f64)> = (0..10_000)
            .map(|i| (i as f64, if i == 5_123 { 99.0 } else { 1.0 }))
            .collect();
        let thin = per_pixel_max(&points, 0.0, 9_999.0, 100.0);
        assert!(thin.len() <= 100);
        assert!(thin.iter().any(|p| p.1 == 99.0));
    }
}
