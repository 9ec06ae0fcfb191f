//! Horizontal padded-vs-unpadded bars, drawn with plotters, so that the
//! screen (plotters' canvas back end) and the SVG export (its SVG back end)
//! are one drawing: each bar is the buffer's (or group's) unpadded bytes
//! followed by the bytes padding adds, so the whole bar is the padded size;
//! the label on the right gives the padding and the expansion factor. Each
//! chart carries its title and legend.
//!
//! Sizes are in CSS pixels times `scale` (the device pixel ratio on a
//! canvas, 1 in SVG).

use oomscope_report::units::format_bytes;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

pub const UNPADDED: RGBColor = RGBColor(0x09, 0x69, 0xda);
pub const PADDING: RGBColor = RGBColor(0xe1, 0x6f, 0x24);
const AXIS: RGBColor = RGBColor(0x57, 0x60, 0x6a);
const GRID: RGBColor = RGBColor(0xe4, 0xe7, 0xeb);
const TEXT: RGBColor = RGBColor(0x1f, 0x23, 0x28);
const FONT: &str = "sans-serif";
const ROW: f64 = 24.0;
const TITLE: f64 = 34.0;
const AXIS_HEIGHT: f64 = 24.0;
const LEGEND: f64 = 24.0;
const LABEL_WIDTH: f64 = 250.0;
const VALUE_WIDTH: f64 = 190.0;
/// Characters of a label drawn (the rest is elided; the table has it all).
const LABEL_CHARS: usize = 38;

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub padded: u64,
    pub unpadded: u64,
}

/// Height in CSS pixels of a chart of `bars` bars.
pub fn height(bars: usize) -> f64 {
    TITLE + ROW * bars.max(1) as f64 + AXIS_HEIGHT + LEGEND
}

fn elide(text: &str) -> String {
    if text.chars().count() <= LABEL_CHARS {
        text.to_string()
    } else {
        let head: String = text.chars().take(LABEL_CHARS - 1).collect();
        format!("{head}…")
    }
}

fn expansion(bar: &Bar) -> f64 {
    if bar.unpadded > 0 {
        bar.padded as f64 / bar.unpadded as f64
    } else {
        1.0
    }
}

/// Draws the chart on `area` (its whole height is [`height`] × `scale`).
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    scale: f64,
    title: &str,
    bars: &[Bar],
) -> Result<(), String> {
    let px = |v: f64| (v * scale).round() as i32;
    let font = |size: f64| (FONT, size * scale);
    let text = |size: f64, colour: &'static RGBColor| {
        TextStyle::from(font(size).into_font()).color(colour)
    };
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    area.fill(&WHITE).map_err(err)?;
    let (_, full_height) = area.dim_in_pixel();
    let legend_top = full_height as i32 - px(LEGEND);
    let (chart_area, legend_area) = area.split_vertically(legend_top);

    let rows = bars.len().max(1);
    let max = bars
        .iter()
        .map(|b| b.padded.max(b.unpadded))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let mut chart = ChartBuilder::on(&chart_area)
        .margin_top(px(TITLE))
        .margin_left(px(8.0))
        .margin_right(px(VALUE_WIDTH))
        .x_label_area_size(px(AXIS_HEIGHT))
        .y_label_area_size(px(LABEL_WIDTH - 8.0))
        .build_cartesian_2d(0f64..max, 0f64..rows as f64)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(AXIS.stroke_width(1))
        .x_labels(5)
        .x_label_formatter(&|b| format_bytes(*b as u64))
        .y_labels(0)
        .x_label_style(text(11.0, &AXIS))
        .draw()
        .map_err(err)?;
    // Row 0 at the top: bar i fills [y, y + 1) with y = rows - 1 - i; its
    // label is left of the axis, its padding note right of the bar.
    let half_gap = px(5.0) as u32;
    let left = chart.backend_coord(&(0.0, 0.0)).0;
    for (i, bar) in bars.iter().enumerate() {
        let y = (rows - 1 - i) as f64;
        let unpadded = bar.unpadded.min(bar.padded) as f64;
        let padded = bar.padded as f64;
        let band = |from: f64, to: f64, colour: RGBColor| {
            let mut r = Rectangle::new([(from, y + 1.0), (to, y)], colour.filled());
            r.set_margin(half_gap, half_gap, 0, 0);
            r
        };
        chart
            .draw_series([
                band(0.0, unpadded, UNPADDED),
                band(unpadded, padded, PADDING),
            ])
            .map_err(err)?;
        let (x, mid) = chart.backend_coord(&(padded, y + 0.5));
        let note = format!(
            "+{} · {:.2}×",
            format_bytes(bar.padded.saturating_sub(bar.unpadded)),
            expansion(bar)
        );
        chart_area
            .draw(&Text::new(
                note,
                (x + px(6.0), mid),
                text(12.0, &TEXT).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        chart_area
            .draw(&Text::new(
                elide(&bar.label),
                (left - px(8.0), mid),
                text(12.0, &TEXT).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(err)?;
    }
    if bars.is_empty() {
        chart_area
            .draw(&Text::new(
                "no padding",
                (px(LABEL_WIDTH), px(TITLE + ROW / 2.0)),
                text(12.0, &AXIS).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
    }
    // Title, and the legend under the axis.
    area.draw(&Text::new(
        title.to_string(),
        (px(12.0), px(TITLE / 2.0)),
        TextStyle::from(font(13.0).into_font().style(FontStyle::Bold))
            .color(&TEXT)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    ))
    .map_err(err)?;
    let mid = px(LEGEND / 2.0);
    let mut x = px(LABEL_WIDTH);
    for (colour, label) in [
        (UNPADDED, "unpadded (the data)"),
        (PADDING, "padding (layout rounding)"),
    ] {
        legend_area
            .draw(&Rectangle::new(
                [(x, mid - px(5.0)), (x + px(10.0), mid + px(5.0))],
                colour.filled(),
            ))
            .map_err(err)?;
        legend_area
            .draw(&Text::new(
                label,
                (x + px(14.0), mid),
                text(12.0, &AXIS).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        x += px(180.0);
    }
    Ok(())
}

/// Several charts, one under the other, as one SVG document `width` CSS
/// pixels wide: each (title, bars).
pub fn svg(width: f64, charts: &[(String, &[Bar])]) -> Result<String, String> {
    let heights: Vec<u32> = charts
        .iter()
        .map(|(_, b)| height(b.len()).round() as u32)
        .collect();
    let total: u32 = heights.iter().sum();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width.round() as u32, total.max(1)))
            .into_drawing_area();
        let mut rest = root;
        for ((title, bars), h) in charts.iter().zip(&heights) {
            let (top, bottom) = rest.split_vertically(*h);
            draw(&top, 1.0, title, bars)?;
            rest = bottom;
        }
        rest.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// Draws a chart on a canvas at the device's pixel ratio; the width is the
/// canvas's laid-out width, the height [`height`].
pub fn draw_on_canvas(
    canvas: &web_sys::HtmlCanvasElement,
    title: &str,
    bars: &[Bar],
) -> Result<(), String> {
    let ratio = gloo_utils::window().device_pixel_ratio().clamp(1.0, 3.0);
    let width = f64::from(canvas.client_width()).max(300.0);
    canvas.set_width((width * ratio).round() as u32);
    canvas.set_height((height(bars.len()) * ratio).round() as u32);
    let backend = plotters_canvas::CanvasBackend::with_canvas_object(canvas.clone())
        .ok_or("the canvas has no 2D context")?;
    let area = backend.into_drawing_area();
    draw(&area, ratio, title, bars)?;
    area.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_show_padding_on_top_of_the_data() {
        let bars = vec![Bar {
            label: "s32[100000,10]".into(),
            padded: 51_200_000,
            unpadded: 4_000_000,
        }];
        let doc = svg(900.0, &[("Padding by shape".to_string(), &bars)]).unwrap();
        let lower = doc.to_ascii_lowercase();
        for colour in [UNPADDED, PADDING] {
            let hex = format!("#{:02x}{:02x}{:02x}", colour.0, colour.1, colour.2);
            assert!(lower.contains(&hex), "{hex} in {doc}");
        }
        assert!(doc.contains("12.80×"), "{doc}");
        assert!(doc.contains("s32[100000,10]"), "the label");
        assert!(doc.contains("Padding by shape"), "the title");
        assert!(doc.contains("padding (layout rounding)"), "the legend");
        assert_eq!(elide(&"x".repeat(100)).chars().count(), LABEL_CHARS);
    }

    #[test]
    fn two_charts_stack_in_one_svg() {
        let a = vec![Bar {
            label: "a".into(),
            padded: 10,
            unpadded: 5,
        }];
        let b: Vec<Bar> = Vec::new();
        let doc = svg(600.0, &[("A".into(), &a), ("B".into(), &b)]).unwrap();
        let total = (height(1) + height(0)).round() as u32;
        assert!(
            doc.contains(&format!("height=\"{total}\"")),
            "{}",
            &doc[..200.min(doc.len())]
        );
        assert!(doc.contains("no padding"));
    }
}
