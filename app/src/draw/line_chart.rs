//! Byte values (y) over a numeric x (program order, a training step, a
//! time), drawn with plotters: the one line-chart drawing of the page. The
//! same [`plot`] draws on the canvas (plotters' canvas back end) and into
//! the SVG export (its SVG back end), so an export is what the user saw.
//!
//! A [`Chart`] holds series (solid, dashed or dotted; held as steps or
//! interpolated), horizontal reference lines (limits), marks (a jump, the
//! end of a projection), one marked x (a peak), and optionally a title and
//! legend drawn in the image (charts whose legend is markup leave them
//! out). [`plot`] returns the [`PlotFrame`] that maps pixels back to data,
//! for hover.
//!
//! Series with more points than the canvas has pixels are drawn as their
//! per-pixel maximum, so a peak is never lost to sampling.

use leptos::html;
use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::draw::labels::{first_clear, TextBox};

/// Colours of overlaid series (colour-blind-safe order, dark enough on white).
pub const PALETTE: [&str; 8] = [
    "#0969da", "#bc4c00", "#1a7f37", "#8250df", "#cf222e", "#0e7490", "#9a6700", "#57606a",
];

/// How a series' line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    /// The values read.
    Solid,
    /// A model of them (a trend, an unpadded twin).
    Dashed,
    /// An extrapolation (a projection to the limit).
    Dotted,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Shown in the chart's own legend (when it draws one); empty for a
    /// series that belongs to another (a trend).
    pub label: String,
    /// `(x, bytes)`, x increasing.
    pub points: Vec<(f64, f64)>,
    pub color: &'static str,
    pub stroke: Stroke,
    /// Hold each value until the next point (a heap between events) rather
    /// than interpolating (a sampled quantity).
    pub steps: bool,
}

/// A horizontal reference line, e.g. a memory limit.
#[derive(Debug, Clone, PartialEq)]
pub struct RefLine {
    pub label: String,
    pub bytes: f64,
    pub color: &'static str,
}

/// A filled area under `points` (x, the area's top in bytes) down to
/// zero. Areas are drawn under the series, in order: a stacked chart passes
/// each band's cumulative top, the top band first, so each lower band
/// covers the one above it below its own top.
#[derive(Debug, Clone, PartialEq)]
pub struct Area {
    /// Names the area (a legend entry); tags its polygon in SVG as
    /// `data-series`.
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub color: &'static str,
    /// Hold each value until the next point.
    pub steps: bool,
}

/// A vertical line at an x other than the peak, dashed and labelled in its
/// colour (an out-of-memory event).
#[derive(Debug, Clone, PartialEq)]
pub struct EventLine {
    pub x: f64,
    pub label: String,
    pub color: &'static str,
}

/// A vertical line at one x, labelled (the peak).
#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkShape {
    /// A small filled square (where a projection meets the limit).
    Square,
    /// A downward triangle above the point (a sudden jump).
    Jump,
}

/// One data point marked with a shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub bytes: f64,
    pub color: &'static str,
    pub shape: MarkShape,
}

/// Everything a chart shows. Ranges default to the data's (x) and to the
/// series and reference lines (y); a caller that decides what the axes
/// include (the steps chart's "show the projection") sets them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    /// Drawn at the top with the series' legend when set.
    pub title: Option<String>,
    pub x_label: String,
    pub series: Vec<Series>,
    pub areas: Vec<Area>,
    pub lines: Vec<RefLine>,
    pub events: Vec<EventLine>,
    pub marks: Vec<Mark>,
    pub marker: Option<Marker>,
    pub x_range: Option<(f64, f64)>,
    /// The largest value the y axis must hold (rounded up to a tidy maximum).
    pub y_top: Option<f64>,
}

/// One drawn curve read at an x: what a hover shows for each curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub label: String,
    pub color: &'static str,
    pub bytes: u64,
}

/// The value of `points` at `x`: a step curve holds the last point at or
/// before `x`; at an x several points share (heap-simulator events of one
/// program position), it reads the highest, which the curve reaches there
/// (as its drawing and its peak marker show). Another curve is
/// interpolated between its neighbours. `None` before its first point or
/// after the last of an interpolated curve.
pub fn value_at(points: &[(f64, f64)], steps: bool, x: f64) -> Option<f64> {
    let after = points.partition_point(|p| p.0 <= x);
    let (x0, y0) = *points.get(after.checked_sub(1)?)?;
    if x0 == x {
        let same = points[..after].iter().rev().take_while(|p| p.0 == x0);
        return Some(same.map(|p| p.1).fold(y0, f64::max));
    }
    if steps {
        return Some(y0);
    }
    let (x1, y1) = *points.get(after)?;
    Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
}

impl Chart {
    /// Every named area and series of the chart read at `x`, in the order
    /// drawn (areas first): a hover reads today's curve and each curve
    /// drawn over it, not one alone.
    pub fn readings_at(&self, x: f64) -> Vec<Reading> {
        let areas = self
            .areas
            .iter()
            .map(|a| (&a.label, a.color, &a.points, a.steps));
        let series = self
            .series
            .iter()
            .map(|s| (&s.label, s.color, &s.points, s.steps));
        areas
            .chain(series)
            .filter(|(label, ..)| !label.is_empty())
            .filter_map(|(label, color, points, steps)| {
                let bytes = value_at(points, steps, x)?;
                Some(Reading {
                    label: label.clone(),
                    color,
                    bytes: bytes.max(0.0).round() as u64,
                })
            })
            .collect()
    }
}

/// Readings a hover lists at most (a chart of many ranks names the rest
/// by count).
const READINGS_LISTED: usize = 12;

/// The readings of a hover as markup: each curve's name and bytes, in its
/// colour, tagged for tests (`data-series`, `data-bytes`).
pub fn readings_view(readings: Vec<Reading>) -> impl IntoView {
    let more = readings.len().saturating_sub(READINGS_LISTED);
    let listed = readings
        .into_iter()
        .take(READINGS_LISTED)
        .enumerate()
        .map(|(i, r)| {
            // A separator a screen reader (and the text) keeps; the
            // swatch and the spacing are for the eye.
            view! {
                {(i > 0).then_some("; ")}
                <span class="reading" data-testid="chart-reading" data-series=r.label.clone() data-bytes=r.bytes.to_string()>
                    <span class="legend-swatch" style:border-color=r.color></span>
                    {format!("{}: {}", r.label, format_bytes(r.bytes))}
                </span>
            }
        })
        .collect_view();
    view! { {listed} {(more > 0).then(|| format!("; and {more} more curves"))} }
}

/// Where the plot area is (CSS pixels) and what it shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlotFrame {
    pub left: f64,
    pub top: f64,
    pub width: f64,
    pub height: f64,
    pub x0: f64,
    pub x1: f64,
    pub y_max: f64,
}

impl PlotFrame {
    pub fn px(&self, x: f64) -> f64 {
        self.left + (x - self.x0) / (self.x1 - self.x0) * self.width
    }
    /// The x value under a pixel column.
    pub fn x_at(&self, px: f64) -> f64 {
        self.x0 + (px - self.left) / self.width * (self.x1 - self.x0)
    }
}

const MARGIN_LEFT: f64 = 76.0;
const MARGIN_RIGHT: f64 = 16.0;
const MARGIN_TOP: f64 = 14.0;
const MARGIN_BOTTOM: f64 = 34.0;
/// Title and legend rows above the plot, when the chart draws them.
const HEADER: f64 = 44.0;
const AXIS: RGBColor = RGBColor(0x57, 0x60, 0x6a);
const GRID: RGBColor = RGBColor(0xe4, 0xe7, 0xeb);
const TEXT: RGBColor = RGBColor(0x1f, 0x23, 0x28);
const PEAK: RGBColor = RGBColor(0xbc, 0x4c, 0x00);
const JUMP: RGBColor = RGBColor(0xcf, 0x22, 0x2e);
const FONT: &str = "sans-serif";
/// Characters of a legend label drawn in the image.
const LEGEND_CHARS: usize = 60;

/// The heap curve of a module: a canvas with a markup legend.
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
        .map(|s| (s.label.clone(), s.color, s.stroke != Stroke::Solid))
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
    let chart = Chart {
        x_label: x_label.to_string(),
        series,
        lines,
        marker,
        ..Chart::default()
    };
    // Every x a curve changes at, for the keyboard to step through.
    let mut xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let chart = StoredValue::new(chart);
    let xs = StoredValue::new(xs);
    let frame: StoredValue<Option<PlotFrame>> = StoredValue::new(None);
    let hover = RwSignal::new(None::<f64>);

    Effect::new(move |_| {
        resized.track();
        if let Some(element) = canvas.get() {
            // Without a 2D context nothing is drawn; the figures are above.
            let drawn = chart.with_value(|c| draw_on_canvas(&element, None, c)).ok();
            // Where the plot is, for tests to point at an x.
            if let Some(f) = drawn {
                let _ = element.set_attribute("data-x0", &f.x0.to_string());
                let _ = element.set_attribute("data-x1", &f.x1.to_string());
                let _ = element.set_attribute(
                    "data-plot",
                    &format!("{},{},{},{}", f.left, f.top, f.width, f.height),
                );
            }
            frame.set_value(drawn);
        }
    });
    let on_move = move |ev: leptos::ev::PointerEvent| {
        let Some(f) = frame.get_value() else { return };
        let px = f64::from(ev.offset_x());
        hover.set((px >= f.left && px <= f.left + f.width).then(|| f.x_at(px).round()));
    };
    // Left and right step to the previous or next x where a curve changes;
    // Home and End to the ends; Escape leaves.
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        let now = hover.get_untracked();
        let next = xs.with_value(|xs| {
            let before = |x: f64| xs.iter().rev().find(|&&v| v < x).copied();
            let after = |x: f64| xs.iter().find(|&&v| v > x).copied();
            Ok(match (ev.key().as_str(), now) {
                ("ArrowRight", Some(x)) => Some(after(x).unwrap_or(x)),
                ("ArrowLeft", Some(x)) => Some(before(x).unwrap_or(x)),
                ("ArrowRight" | "ArrowLeft" | "Home", None) | ("Home", Some(_)) => {
                    xs.first().copied()
                }
                ("End", _) => xs.last().copied(),
                ("Escape", _) => None,
                _ => return Err(()),
            })
        });
        if let Ok(x) = next {
            ev.prevent_default();
            hover.set(x);
        }
    };
    let readout = move || {
        let Some(x) = hover.get() else {
            let hint = "Hover the chart, or focus it and use the arrow keys, to read every curve at a point.";
            return view! { <span>{hint}</span> }.into_any();
        };
        let readings = chart.with_value(|c| c.readings_at(x));
        view! { <span>{format!("At {x_label} {x}: ")}</span> {readings_view(readings)} }.into_any()
    };

    view! {
        <figure class="chart">
            <canvas node_ref=canvas role="img" aria-label=description.clone() tabindex="0"
                on:pointermove=on_move on:pointerleave=move |_| hover.set(None) on:keydown=on_key></canvas>
            <figcaption class="legend">{legend}</figcaption>
            <p class="curve-readout" aria-live="polite" data-testid="chart-readout" data-x=move || hover.get().map(|x| x.to_string())>{readout}</p>
        </figure>
    }
}

/// Draws `chart` on a canvas at the device's pixel ratio; the width is the
/// canvas's laid-out width, the height `height` CSS pixels (else its
/// laid-out height).
pub fn draw_on_canvas(
    canvas: &web_sys::HtmlCanvasElement,
    height: Option<f64>,
    chart: &Chart,
) -> Result<PlotFrame, String> {
    let ratio = gloo_utils::window().device_pixel_ratio().clamp(1.0, 3.0);
    let width = f64::from(canvas.client_width()).max(300.0);
    let height = height.unwrap_or_else(|| f64::from(canvas.client_height()).max(160.0));
    canvas.set_width((width * ratio).round() as u32);
    canvas.set_height((height * ratio).round() as u32);
    let backend = plotters_canvas::CanvasBackend::with_canvas_object(canvas.clone())
        .ok_or("the canvas has no 2D context")?;
    let area = backend.into_drawing_area();
    let frame = plot(&area, ratio, chart)?;
    area.present().map_err(|e| e.to_string())?;
    Ok(frame)
}

/// `chart` as an SVG document `width` × `height` CSS pixels.
pub fn svg(chart: &Chart, width: f64, height: f64) -> Result<String, String> {
    svg_and_frame(chart, width, height).map(|(doc, _)| doc)
}

/// `chart` as an SVG document, and where its plot is in it.
fn svg_and_frame(chart: &Chart, width: f64, height: f64) -> Result<(String, PlotFrame), String> {
    let mut out = String::new();
    let frame;
    {
        let area = SVGBackend::with_string(&mut out, (width.round() as u32, height.round() as u32))
            .into_drawing_area();
        frame = plot(&area, 1.0, chart)?;
        area.present().map_err(|e| e.to_string())?;
    }
    Ok((out, frame))
}

/// `chart` as an SVG document to place in the page: scaled to its box
/// (`viewBox`), each area's polygon tagged `data-series="label"` in the
/// order drawn, so that a legend can be checked against what it names.
pub fn inline_svg(chart: &Chart, width: f64, height: f64) -> Result<(String, PlotFrame), String> {
    let (doc, frame) = svg_and_frame(chart, width, height)?;
    let mut out = String::with_capacity(doc.len() + 64 * chart.areas.len());
    let mut rest = doc.as_str();
    let mut labels = chart.areas.iter().map(|a| a.label.as_str());
    while let Some(at) = rest.find("<polygon ") {
        out.push_str(&rest[..at]);
        out.push_str("<polygon ");
        if let Some(label) = labels.next() {
            out.push_str(&format!("data-series=\"{}\" ", xml_escape(label)));
        }
        rest = &rest[at + "<polygon ".len()..];
    }
    out.push_str(rest);
    Ok((out, frame))
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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

/// The axes' ranges: the caller's, else the data's.
fn ranges(chart: &Chart) -> (f64, f64, f64) {
    let (mut x0, mut x1) = chart.x_range.unwrap_or_else(|| {
        chart
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .chain(
                chart
                    .areas
                    .iter()
                    .flat_map(|a| a.points.iter().map(|p| p.0)),
            )
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                (lo.min(x), hi.max(x))
            })
    });
    if !x0.is_finite() || !x1.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y_top = chart.y_top.unwrap_or_else(|| {
        chart
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(
                chart
                    .areas
                    .iter()
                    .flat_map(|a| a.points.iter().map(|p| p.1)),
            )
            .chain(chart.lines.iter().map(|l| l.bytes))
            .fold(0.0f64, f64::max)
    });
    (x0, x1, nice_ceiling(y_top * 1.04))
}

/// Draws `chart` on `area`; sizes are CSS pixels times `scale`.
pub fn plot<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    scale: f64,
    chart: &Chart,
) -> Result<PlotFrame, String> {
    let px = |v: f64| (v * scale).round() as i32;
    let width_of = |v: f64| px(v).max(1) as u32;
    let text = |colour: RGBColor, bold: bool| {
        let font = (FONT, 12.0 * scale).into_font();
        let font = if bold {
            font.style(FontStyle::Bold)
        } else {
            font
        };
        TextStyle {
            font,
            color: colour.to_backend_color(),
            pos: Pos::new(HPos::Left, VPos::Top),
        }
    };
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.fill(&WHITE).map_err(err)?;
    let (x0, x1, y_max) = ranges(chart);
    // plotters picks decimal round ticks: counted in the unit of the axis
    // top (KiB, MiB, GiB) they are tidy byte values (512 MiB, 1.5 GiB).
    let unit = byte_unit(y_max);
    let y = |bytes: f64| bytes / unit;

    let header = if chart.title.is_some() { HEADER } else { 0.0 };
    if let Some(title) = &chart.title {
        area.draw(&Text::new(
            title.clone(),
            (px(MARGIN_LEFT), px(8.0)),
            text(TEXT, true),
        ))
        .map_err(err)?;
        let mut x = MARGIN_LEFT;
        let width = f64::from(area.dim_in_pixel().0) / scale;
        for s in chart.series.iter().filter(|s| !s.label.is_empty()) {
            let label: String = s.label.chars().take(LEGEND_CHARS).collect();
            let item = label.chars().count() as f64 * 6.6 + 34.0;
            if x + item > width {
                break;
            }
            let colour = rgb(s.color);
            area.draw(&PathElement::new(
                vec![(px(x), px(34.0)), (px(x + 18.0), px(34.0))],
                colour.stroke_width(width_of(2.5)),
            ))
            .map_err(err)?;
            area.draw(&Text::new(
                label,
                (px(x + 24.0), px(34.0)),
                text(TEXT, false).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
            x += item;
        }
    }

    let mut plane = ChartBuilder::on(area)
        .margin_top(px(MARGIN_TOP + header))
        .margin_right(px(MARGIN_RIGHT))
        .x_label_area_size(px(MARGIN_BOTTOM))
        .y_label_area_size(px(MARGIN_LEFT))
        .build_cartesian_2d(x0..x1, 0f64..y(y_max))
        .map_err(err)?;
    plane
        .configure_mesh()
        .disable_x_mesh()
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS.stroke_width(1))
        .y_labels(5)
        .y_label_formatter(&|v| format_bytes((*v * unit).round() as u64))
        .x_labels(5)
        .x_label_formatter(&|v| tick_label(*v))
        .x_desc(chart.x_label.as_str())
        .label_style(text(AXIS, false))
        .axis_desc_style(text(AXIS, false))
        .draw()
        .map_err(err)?;

    let plot_width = f64::from(plane.plotting_area().dim_in_pixel().0);
    for a in &chart.areas {
        let visible = clip(&a.points, x0, x1, y_max);
        let thin = per_pixel_max(&visible, x0, x1 - x0, plot_width);
        let thin: Vec<(f64, f64)> = thin.into_iter().map(|(x, bytes)| (x, y(bytes))).collect();
        let mut outline = if a.steps { as_steps(&thin) } else { thin };
        if let (Some(&(first, _)), Some(&(last, _))) = (outline.first(), outline.last()) {
            outline.push((last, 0.0));
            outline.push((first, 0.0));
            plane
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    rgb(a.color).filled(),
                )))
                .map_err(err)?;
        }
    }
    // The series as drawn (clipped, thinned, stepped), and in CSS pixels,
    // so that a limit's label can keep off them.
    let drawn: Vec<Vec<(f64, f64)>> = chart
        .series
        .iter()
        .map(|s| {
            let visible = clip(&s.points, x0, x1, y_max);
            let thin = per_pixel_max(&visible, x0, x1 - x0, plot_width);
            let thin: Vec<(f64, f64)> = thin.into_iter().map(|(x, bytes)| (x, y(bytes))).collect();
            if s.steps {
                as_steps(&thin)
            } else {
                thin
            }
        })
        .collect();
    let in_pixels: Vec<Vec<(f64, f64)>> = drawn
        .iter()
        .map(|points| {
            points
                .iter()
                .map(|p| {
                    let (a, b) = plane.backend_coord(p);
                    (f64::from(a) / scale, f64::from(b) / scale)
                })
                .collect()
        })
        .collect();
    let series_lines: Vec<&[(f64, f64)]> = in_pixels.iter().map(Vec::as_slice).collect();

    // Near-equal limits (one per series) share one label.
    let mut labelled: Vec<f64> = Vec::new();
    for line in chart.lines.iter().filter(|l| l.bytes <= y_max) {
        let colour = rgb(line.color);
        plane
            .draw_series(DashedLineSeries::new(
                [(x0, y(line.bytes)), (x1, y(line.bytes))],
                px(6.0),
                px(4.0),
                colour.stroke_width(width_of(1.5)),
            ))
            .map_err(err)?;
        if labelled.iter().all(|&b| (b - line.bytes).abs() > 0.01 * b) {
            // Right above the line, else right below, left above, left
            // below: the first place whose text hides no series.
            let (right, at) = plane.backend_coord(&(x1, y(line.bytes)));
            let (left, _) = plane.backend_coord(&(x0, y(line.bytes)));
            let (right, left, at) = (
                f64::from(right) / scale,
                f64::from(left) / scale,
                f64::from(at) / scale,
            );
            let chars = line.label.chars().count();
            let places = [
                (right - 4.0, at - 10.0, true),
                (right - 4.0, at + 10.0, true),
                (left + 4.0, at - 10.0, false),
                (left + 4.0, at + 10.0, false),
            ];
            let boxes: Vec<TextBox> = places
                .iter()
                .map(|&(x, ty, from_right)| TextBox::of(chars, x, ty, from_right, true))
                .collect();
            let (x, ty, from_right) = places[first_clear(&boxes, &series_lines)];
            let anchor = if from_right { HPos::Right } else { HPos::Left };
            area.draw(&Text::new(
                line.label.clone(),
                (px(x), px(ty)),
                text(colour, true).pos(Pos::new(anchor, VPos::Center)),
            ))
            .map_err(err)?;
            labelled.push(line.bytes);
        }
    }

    for (s, points) in chart.series.iter().zip(drawn) {
        let colour = rgb(s.color);
        match s.stroke {
            Stroke::Solid => plane
                .draw_series(LineSeries::new(points, colour.stroke_width(width_of(1.75))))
                .map(|_| ()),
            Stroke::Dashed => plane
                .draw_series(DashedLineSeries::new(
                    points,
                    px(6.0),
                    px(4.0),
                    colour.stroke_width(width_of(1.25)),
                ))
                .map(|_| ()),
            Stroke::Dotted => plane
                .draw_series(DashedLineSeries::new(
                    points,
                    px(2.0),
                    px(3.0),
                    colour.stroke_width(width_of(1.5)),
                ))
                .map(|_| ()),
        }
        .map_err(err)?;
    }

    for mark in chart
        .marks
        .iter()
        .filter(|m| (x0..=x1).contains(&m.x) && m.bytes <= y_max)
    {
        let colour = rgb(mark.color);
        let at = (mark.x, y(mark.bytes));
        match mark.shape {
            MarkShape::Square => plane.draw_series(std::iter::once(
                EmptyElement::at(at)
                    + Rectangle::new([(-px(3.0), -px(3.0)), (px(3.0), px(3.0))], colour.filled()),
            )),
            MarkShape::Jump => plane.draw_series(std::iter::once(
                EmptyElement::at(at)
                    + PathElement::new(
                        vec![
                            (-px(5.0), -px(12.0)),
                            (0, -px(4.0)),
                            (px(5.0), -px(12.0)),
                            (-px(5.0), -px(12.0)),
                        ],
                        JUMP.stroke_width(width_of(2.0)),
                    ),
            )),
        }
        .map_err(err)?;
    }

    for event in chart.events.iter().filter(|e| (x0..=x1).contains(&e.x)) {
        let colour = rgb(event.color);
        plane
            .draw_series(DashedLineSeries::new(
                [(event.x, 0.0), (event.x, y(y_max))],
                px(6.0),
                px(4.0),
                colour.stroke_width(width_of(2.0)),
            ))
            .map_err(err)?;
        let (x, top) = plane.backend_coord(&(event.x, y(y_max)));
        let (anchor, dx) = label_beside(event.x, x0, x1, px(4.0));
        area.draw(&Text::new(
            event.label.clone(),
            (x + dx, top + px(16.0)),
            text(colour, true).pos(Pos::new(anchor, VPos::Top)),
        ))
        .map_err(err)?;
    }

    if let Some(marker) = &chart.marker {
        plane
            .draw_series(LineSeries::new(
                [(marker.x, 0.0), (marker.x, y(y_max))],
                PEAK.stroke_width(width_of(1.0)),
            ))
            .map_err(err)?;
        let (x, top) = plane.backend_coord(&(marker.x, y(y_max)));
        let (anchor, dx) = label_beside(marker.x, x0, x1, px(4.0));
        area.draw(&Text::new(
            marker.label.clone(),
            (x + dx, top + px(2.0)),
            text(PEAK, false).pos(Pos::new(anchor, VPos::Top)),
        ))
        .map_err(err)?;
    }

    let (xs, ys) = plane.plotting_area().get_pixel_range();
    Ok(PlotFrame {
        left: f64::from(xs.start) / scale,
        top: f64::from(ys.start) / scale,
        width: f64::from(xs.end - xs.start) / scale,
        height: f64::from(ys.end - ys.start) / scale,
        x0,
        x1,
        y_max,
    })
}

/// Where the label of a vertical line at `x` goes: `gap` pixels right of
/// it in the left half of `[x0, x1]`, left of it in the right half, so that
/// it stays inside the plot.
fn label_beside(x: f64, x0: f64, x1: f64, gap: i32) -> (HPos, i32) {
    if x > x0 + (x1 - x0) / 2.0 {
        (HPos::Right, -gap)
    } else {
        (HPos::Left, gap)
    }
}

/// The part of a line inside `[x0, x1] × [0, y_max]`: points past `x1` are
/// cut where the line crosses it (a projection beyond the axes), values
/// above the axis are held at its top.
fn clip(points: &[(f64, f64)], x0: f64, x1: f64, y_max: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len());
    for (i, &(x, y)) in points.iter().enumerate() {
        if x > x1 {
            if let Some(&(xa, ya)) = i.checked_sub(1).and_then(|j| points.get(j)) {
                if xa < x1 {
                    out.push((x1, ya + (y - ya) * (x1 - xa) / (x - xa)));
                }
            }
            break;
        }
        if x >= x0 {
            out.push((x, y));
        }
    }
    for p in &mut out {
        p.1 = p.1.clamp(0.0, y_max);
    }
    out
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

/// Thins a series to one point per pixel column, its maximum, so that
/// peaks stay visible: also a short series, where a peak that lasts no time
/// (an allocation freed within the same microsecond, as in a Kineto trace)
/// would otherwise be a vertical line of no width, drawn as nothing.
fn per_pixel_max(points: &[(f64, f64)], x_min: f64, x_span: f64, plot_w: f64) -> Vec<(f64, f64)> {
    let columns = plot_w.max(1.0) as usize;
    let column_width = x_span / columns.max(1) as f64;
    let column_of = |x: f64| (((x - x_min) / x_span) * (columns - 1) as f64) as usize;
    // Per column: its first x, its maximum, and the value it ends on.
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(columns * 2);
    let mut current: Option<(usize, f64, f64, f64)> = None;
    let close =
        |out: &mut Vec<(f64, f64)>, (_, cx, max, last): (usize, f64, f64, f64), next_x: f64| {
            out.push((cx, max));
            // A column that ends below its maximum holds the maximum one column
            // wide, then what it ends on (the next point's value follows).
            if last < max {
                out.push(((cx + column_width).min(next_x), last));
            }
        };
    for &(x, y) in points {
        let column = column_of(x);
        match current {
            Some((c, cx, max, _)) if c == column => current = Some((c, cx, max.max(y), y)),
            Some(done) => {
                close(&mut out, done, x);
                current = Some((column, x, y, y));
            }
            None => current = Some((column, x, y, y)),
        }
    }
    if let Some(done) = current {
        close(&mut out, done, f64::INFINITY);
    }
    out
}

/// `12000` → `12,000`; `2.5` → `2.50`.
fn tick_label(value: f64) -> String {
    if value.fract().abs() < 1e-9 && value.abs() < 1e15 {
        let digits = crate::format::group_digits(value.abs().round() as u64);
        if value < 0.0 {
            format!("-{digits}")
        } else {
            digits
        }
    } else {
        format!("{value:.2}")
    }
}

/// The power of 1024 (1 B, KiB, MiB, ...) an axis up to `top` bytes counts in.
fn byte_unit(top: f64) -> f64 {
    let mut unit = 1.0;
    while top / unit >= 1024.0 {
        unit *= 1024.0;
    }
    unit
}

/// Rounds a byte value up to a tidy axis maximum (1, 2, 2.5, 5 × a power of
/// 1024 and 10).
pub fn nice_ceiling(value: f64) -> f64 {
    if value <= 0.0 || !value.is_finite() {
        return 1.0;
    }
    let mut unit = 1.0;
    while value / unit >= 1024.0 {
        unit *= 1024.0;
    }
    let scaled = value / unit;
    let magnitude = 10f64.powf(scaled.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|c| *c >= scaled)
        .unwrap_or(10.0 * magnitude);
    step * unit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts an SVG document draws (plotters writes each on its own line).
    fn texts(doc: &str) -> Vec<&str> {
        doc.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('<'))
            .collect()
    }

    fn heap() -> Series {
        Series {
            label: "Heap".into(),
            points: vec![(0.0, 1.0e9), (5.0, 3.0e9), (9.0, 2.0e9)],
            color: "#0969da",
            stroke: Stroke::Solid,
            steps: true,
        }
    }

    /// The `y` of the text element holding `label`.
    fn text_y(doc: &str, label: &str) -> f64 {
        let at = doc.find(label).expect("the label is drawn");
        let open = doc[..at].rfind("<text").unwrap();
        let y = doc[open..].find(" y=\"").unwrap() + open + 4;
        doc[y..y + doc[y..].find('"').unwrap()].parse().unwrap()
    }

    #[test]
    fn areas_are_tagged_in_order_and_events_labelled() {
        let area = |label: &str, top: f64| Area {
            label: label.into(),
            points: vec![(0.0, top / 2.0), (9.0, top)],
            color: "#0969da",
            steps: true,
        };
        let chart = Chart {
            x_label: "trace event".into(),
            areas: vec![area("Top", 3.0e9), area("Bottom", 1.0e9)],
            events: vec![EventLine {
                x: 5.0,
                label: "out of memory at event 5".into(),
                color: "#cf222e",
            }],
            ..Chart::default()
        };
        let (doc, frame) = inline_svg(&chart, 600.0, 260.0).unwrap();
        let top = doc.find("<polygon data-series=\"Top\" ").unwrap();
        let bottom = doc.find("<polygon data-series=\"Bottom\" ").unwrap();
        assert!(top < bottom, "the top band first, the lower one over it");
        assert!(doc.contains("out of memory at event 5") && doc.contains("trace event"));
        assert!((frame.x_at(frame.px(5.0)) - 5.0).abs() < 1e-9);
        assert!(frame.y_max >= 3.0e9);
    }

    #[test]
    fn a_limits_label_keeps_off_a_series_running_just_above_it() {
        let gib = 1073741824.0;
        let limit = RefLine {
            label: "HBM limit 15.75 GiB".into(),
            bytes: 15.75 * gib,
            color: "#cf222e",
        };
        let heap = |level: f64| Series {
            points: vec![(0.0, 5.0 * gib), (10.0, level), (100.0, level)],
            ..heap()
        };
        let place = |level: f64| {
            let chart = Chart {
                x_label: "program order".into(),
                series: vec![heap(level)],
                lines: vec![limit.clone()],
                ..Chart::default()
            };
            let (doc, frame) = inline_svg(&chart, 700.0, 300.0).unwrap();
            let line = frame.top + frame.height * (1.0 - limit.bytes / frame.y_max);
            text_y(&doc, "HBM limit 15.75 GiB") - line
        };
        // Far below the limit, the label sits above its line; just above
        // it (16.06 GiB, as a train step's outputs and weights hold it),
        // below.
        assert!(place(8.0 * gib) < 0.0);
        assert!(place(16.06 * gib) > 0.0);
    }

    #[test]
    fn steps_hold_each_value_until_the_next_point() {
        assert_eq!(
            as_steps(&[(0.0, 1.0), (2.0, 5.0), (3.0, 2.0)]),
            [(0.0, 1.0), (2.0, 1.0), (2.0, 5.0), (3.0, 5.0), (3.0, 2.0)]
        );
        assert_eq!(rgb("#0969da"), RGBColor(0x09, 0x69, 0xda));
        assert_eq!(tick_label(12000.0), "12,000");
        assert_eq!(nice_ceiling(3.1 * 1024.0 * 1024.0), 5.0 * 1024.0 * 1024.0);
        assert_eq!(byte_unit(5.0 * 1024.0 * 1024.0), 1024.0 * 1024.0);
        assert_eq!(byte_unit(100.0), 1.0);
    }

    #[test]
    fn the_chart_draws_its_parts_in_svg() {
        let chart = Chart {
            x_label: "program order".into(),
            series: vec![heap()],
            lines: vec![RefLine {
                label: "HBM limit 4.00 GiB".into(),
                bytes: 4.0 * 1073741824.0,
                color: "#cf222e",
            }],
            marker: Some(Marker {
                x: 5.0,
                label: "peak 2.79 GiB at 5".into(),
            }),
            ..Chart::default()
        };
        let doc = svg(&chart, 600.0, 260.0).unwrap();
        for part in [
            "HBM limit 4.00 GiB",
            "peak 2.79 GiB at 5",
            "program order",
            "GiB",
        ] {
            assert!(doc.contains(part), "{part} in the chart");
        }
        // The axis counts in GiB: its labels are tidy (2.00 GiB, 4.00 GiB),
        // not decimal byte counts shown in GiB (953.67 MiB, 1.86 GiB).
        let labels = texts(&doc);
        assert!(
            labels.contains(&"2.00 GiB") && labels.contains(&"4.00 GiB"),
            "{labels:?}"
        );
        assert!(
            !texts(&doc).contains(&"Heap"),
            "no legend in the image without a title"
        );
    }

    #[test]
    fn a_titled_chart_carries_its_legend_trend_projection_and_jumps() {
        let trend = Series {
            label: String::new(),
            points: vec![(0.0, 1.0e9), (9.0, 2.5e9)],
            stroke: Stroke::Dashed,
            steps: false,
            ..heap()
        };
        let projection = Series {
            label: String::new(),
            points: vec![(9.0, 2.5e9), (90.0, 8.0e9)],
            stroke: Stroke::Dotted,
            steps: false,
            ..heap()
        };
        let solid = svg(
            &Chart {
                series: vec![heap()],
                ..Chart::default()
            },
            800.0,
            300.0,
        )
        .unwrap();
        let chart = Chart {
            title: Some("Memory per step".into()),
            x_label: "training step".into(),
            series: vec![heap(), trend, projection],
            marks: vec![Mark {
                x: 5.0,
                bytes: 3.0e9,
                color: "#0969da",
                shape: MarkShape::Jump,
            }],
            x_range: Some((0.0, 40.0)),
            ..Chart::default()
        };
        let doc = svg(&chart, 800.0, 300.0).unwrap();
        assert!(
            texts(&doc).contains(&"Memory per step") && texts(&doc).contains(&"Heap"),
            "title and legend"
        );
        let lines = |d: &str| d.to_ascii_lowercase().matches("#0969da").count();
        assert!(
            lines(&doc) > lines(&solid) + 10,
            "the dashed trend and dotted projection are drawn as dashes"
        );
        assert!(
            doc.to_ascii_lowercase().contains("#cf222e"),
            "the jump mark"
        );
    }

    #[test]
    fn lines_are_cut_at_the_axes() {
        let cut = clip(
            &[(0.0, 10.0), (100.0, 20.0), (1000.0, 110.0)],
            0.0,
            100.0,
            15.0,
        );
        assert_eq!(cut, vec![(0.0, 10.0), (100.0, 15.0)]);
        let crossing = clip(&[(50.0, 10.0), (150.0, 20.0)], 0.0, 100.0, 100.0);
        assert_eq!(crossing, vec![(50.0, 10.0), (100.0, 15.0)]);
    }

    #[test]
    fn a_peak_that_lasts_no_time_keeps_its_column() {
        // Few points, two at the peak's time: the peak is drawn a column wide.
        let points = [(0.0, 1.0), (5.0, 9.0), (5.0, 2.0), (10.0, 2.0)];
        let thin = per_pixel_max(&points, 0.0, 10.0, 100.0);
        let steps = as_steps(&thin);
        let at_peak: Vec<&(f64, f64)> = steps.iter().filter(|p| p.1 == 9.0).collect();
        assert_eq!(at_peak.len(), 2, "{steps:?}");
        assert!(at_peak[1].0 > at_peak[0].0, "{steps:?}");
        // One column (0.1) wide, not until the next point: then 2 again.
        assert!((at_peak[1].0 - 5.1).abs() < 1e-9, "{steps:?}");
        assert_eq!(steps.last(), Some(&(10.0, 2.0)));
    }

    #[test]
    fn thinning_keeps_the_maximum() {
        let points: Vec<(f64, f64)> = (0..10_000)
            .map(|i| (i as f64, if i == 5_123 { 99.0 } else { 1.0 }))
            .collect();
        let thin = per_pixel_max(&points, 0.0, 9_999.0, 100.0);
        assert!(thin.len() <= 200);
        assert!(thin.iter().any(|p| p.1 == 99.0));
    }

    #[test]
    fn a_hover_reads_every_curve_at_its_x() {
        let chart = Chart {
            areas: vec![Area {
                label: "Allocated".into(),
                points: vec![(0.0, 10.0), (5.0, 40.0), (9.0, 20.0)],
                color: "#000000",
                steps: true,
            }],
            series: vec![
                // Three events at x 6: read at 6, the highest; after 6, the last.
                Series {
                    label: "without f".into(),
                    points: vec![(0.0, 10.0), (6.0, 25.0), (6.0, 30.0), (6.0, 5.0)],
                    color: "#111111",
                    stroke: Stroke::Dashed,
                    steps: true,
                },
                Series {
                    label: "sampled".into(),
                    points: vec![(2.0, 0.0), (4.0, 100.0)],
                    color: "#222222",
                    stroke: Stroke::Solid,
                    steps: false,
                },
                // A trend belongs to another series: not read on its own.
                Series {
                    label: String::new(),
                    points: vec![(0.0, 1.0)],
                    color: "#333333",
                    stroke: Stroke::Dotted,
                    steps: true,
                },
            ],
            ..Chart::default()
        };
        let at = |x: f64| {
            chart
                .readings_at(x)
                .into_iter()
                .map(|r| (r.label, r.bytes))
                .collect::<Vec<_>>()
        };
        let r = |l: &str, b: u64| (l.to_string(), b);
        // Steps hold the last point at or before x; a sampled curve is
        // interpolated, and read only within its points.
        assert_eq!(
            at(3.0),
            vec![r("Allocated", 10), r("without f", 10), r("sampled", 50)]
        );
        assert_eq!(at(5.0), vec![r("Allocated", 40), r("without f", 10)]);
        assert_eq!(at(6.0), vec![r("Allocated", 40), r("without f", 30)]);
        assert_eq!(at(7.0), vec![r("Allocated", 40), r("without f", 5)]);
        assert_eq!(at(100.0), vec![r("Allocated", 20), r("without f", 5)]);
        assert_eq!(at(-1.0), vec![]);
    }
}
