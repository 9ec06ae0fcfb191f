//! Byte values over a numeric x (a training step, a time) drawn once for two
//! targets through [`Painter`]: the on-screen canvas and the SVG export. The
//! same [`LinePlot::draw`] makes both, so an export is what the user saw.
//!
//! Drawn: a grid with byte labels, each visible series as a line, its trend
//! (dashed), its projection to the limit (dotted, ending on the limit line),
//! its spikes (marked), and horizontal limit lines. [`PlotFrame`] maps data
//! to pixels and back, for hover.

use oomscope_report::units::format_bytes;
use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;

use crate::draw::painter::{Align, CanvasPainter, Painter};

const MARGIN_LEFT: f64 = 84.0;
const MARGIN_RIGHT: f64 = 20.0;
const MARGIN_TOP: f64 = 56.0;
const MARGIN_BOTTOM: f64 = 44.0;
const AXIS: &str = "#57606a";
const GRID: &str = "#e4e7eb";
const TEXT: &str = "#1f2328";

/// Colours of overlaid series (colour-blind-safe order, dark enough on white).
pub const PALETTE: [&str; 8] = [
    "#0969da", "#bc4c00", "#1a7f37", "#8250df", "#cf222e", "#0e7490", "#9a6700", "#57606a",
];

/// One line of the plot.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotLine {
    pub label: String,
    pub color: &'static str,
    /// `(x, bytes)`, x increasing.
    pub points: Vec<(f64, f64)>,
    /// `(slope per x, intercept)`: drawn dashed over the points' x range.
    pub trend: Option<(f64, f64)>,
    /// From `(x, bytes)` to `(x, bytes)`: the projection to the limit, dotted.
    pub projection: Option<((f64, f64), (f64, f64))>,
    /// Points marked as sudden jumps.
    pub spikes: Vec<(f64, f64)>,
}

/// A horizontal reference line, e.g. a memory limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    pub label: String,
    pub bytes: f64,
    pub color: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LinePlot {
    pub title: String,
    pub x_label: String,
    pub lines: Vec<PlotLine>,
    pub levels: Vec<Level>,
    /// Include the projections and levels in the axis ranges.
    pub fit_projection: bool,
}

/// Where the plot area is and what it shows.
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
    pub fn py(&self, bytes: f64) -> f64 {
        self.top + self.height - bytes / self.y_max * self.height
    }
    /// The x value under a pixel column.
    pub fn x_at(&self, px: f64) -> f64 {
        self.x0 + (px - self.left) / self.width * (self.x1 - self.x0)
    }
}

impl LinePlot {
    /// The axis ranges for a drawing `width` × `height` pixels.
    pub fn frame(&self, width: f64, height: f64) -> PlotFrame {
        let mut x0 = f64::INFINITY;
        let mut x1 = f64::NEG_INFINITY;
        let mut y_top = 0.0f64;
        for line in &self.lines {
            for &(x, y) in &line.points {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y_top = y_top.max(y);
            }
            if self.fit_projection {
                if let Some((_, (x, y))) = line.projection {
                    x1 = x1.max(x);
                    y_top = y_top.max(y);
                }
            }
        }
        if self.fit_projection {
            for level in &self.levels {
                y_top = y_top.max(level.bytes);
            }
        }
        if !x0.is_finite() {
            (x0, x1) = (0.0, 1.0);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        PlotFrame {
            left: MARGIN_LEFT,
            top: MARGIN_TOP,
            width: (width - MARGIN_LEFT - MARGIN_RIGHT).max(10.0),
            height: (height - MARGIN_TOP - MARGIN_BOTTOM).max(10.0),
            x0,
            x1,
            y_max: nice_ceiling(y_top * 1.05),
        }
    }

    /// Draws the plot on `p` (`width` × `height` CSS pixels) and returns its frame.
    pub fn draw(&self, p: &mut dyn Painter, width: f64, height: f64) -> PlotFrame {
        let f = self.frame(width, height);
        p.rect(0.0, 0.0, width, height, "#ffffff", None);
        p.text(f.left, 16.0, &self.title, TEXT, Align::Left, true);
        // Legend on its own row under the title (text widths estimated).
        let mut x = f.left;
        for line in &self.lines {
            let label: String = line.label.chars().take(60).collect();
            let item = label.chars().count() as f64 * 6.6 + 34.0;
            if x + item > width {
                break;
            }
            p.line(&[(x, 36.0), (x + 18.0, 36.0)], line.color, 2.5, &[]);
            p.text(x + 24.0, 36.0, &label, TEXT, Align::Left, false);
            x += item;
        }
        // Grid, y labels.
        for i in 0..=4 {
            let value = f.y_max * f64::from(i) / 4.0;
            let y = f.py(value).round() + 0.5;
            p.line(&[(f.left, y), (f.left + f.width, y)], GRID, 1.0, &[]);
            p.text(
                f.left - 8.0,
                y,
                &format_bytes(value as u64),
                AXIS,
                Align::Right,
                false,
            );
        }
        // X ticks.
        for value in ticks(f.x0, f.x1, (f.width / 110.0).max(2.0) as usize) {
            let x = f.px(value).round() + 0.5;
            p.line(
                &[(x, f.top + f.height), (x, f.top + f.height + 4.0)],
                AXIS,
                1.0,
                &[],
            );
            p.text(
                x,
                f.top + f.height + 14.0,
                &tick_label(value),
                AXIS,
                Align::Center,
                false,
            );
        }
        p.line(
            &[
                (f.left, f.top + f.height + 0.5),
                (f.left + f.width, f.top + f.height + 0.5),
            ],
            AXIS,
            1.0,
            &[],
        );
        p.text(
            f.left + f.width / 2.0,
            height - 10.0,
            &self.x_label,
            AXIS,
            Align::Center,
            false,
        );

        let clip_y = |y: f64| y.clamp(f.top, f.top + f.height);
        let mut labelled: Vec<f64> = Vec::new();
        for level in &self.levels {
            if level.bytes > f.y_max {
                continue;
            }
            let y = f.py(level.bytes).round() + 0.5;
            p.line(
                &[(f.left, y), (f.left + f.width, y)],
                level.color,
                1.5,
                &[6.0, 4.0],
            );
            // Near-equal limits (one per series) share one label.
            if labelled.iter().all(|&b| (b - level.bytes).abs() > 0.01 * b) {
                p.text(
                    f.left + f.width - 4.0,
                    y - 9.0,
                    &level.label,
                    level.color,
                    Align::Right,
                    true,
                );
                labelled.push(level.bytes);
            }
        }
        for line in &self.lines {
            let pts: Vec<(f64, f64)> = line
                .points
                .iter()
                .map(|&(x, y)| (f.px(x), clip_y(f.py(y))))
                .collect();
            p.line(&pts, line.color, 1.75, &[]);
            if let (Some((slope, intercept)), Some(first), Some(last)) =
                (line.trend, line.points.first(), line.points.last())
            {
                let at = |x: f64| (f.px(x), clip_y(f.py(intercept + slope * x)));
                p.line(&[at(first.0), at(last.0)], line.color, 1.25, &[6.0, 4.0]);
            }
            if let Some(((xa, ya), (xb, yb))) = line.projection {
                // Clip to the visible x range (the projection may run past it).
                let xb_visible = xb.min(f.x1);
                let t = if xb > xa {
                    (xb_visible - xa) / (xb - xa)
                } else {
                    1.0
                };
                let yb_visible = ya + (yb - ya) * t;
                p.line(
                    &[
                        (f.px(xa), clip_y(f.py(ya))),
                        (f.px(xb_visible), clip_y(f.py(yb_visible))),
                    ],
                    line.color,
                    1.5,
                    &[2.0, 3.0],
                );
                if xb <= f.x1 && yb <= f.y_max {
                    p.rect(f.px(xb) - 3.0, f.py(yb) - 3.0, 6.0, 6.0, line.color, None);
                }
            }
            for &(x, y) in &line.spikes {
                let (cx, cy) = (f.px(x), clip_y(f.py(y)));
                p.line(
                    &[
                        (cx - 5.0, cy - 12.0),
                        (cx, cy - 4.0),
                        (cx + 5.0, cy - 12.0),
                        (cx - 5.0, cy - 12.0),
                    ],
                    "#cf222e",
                    2.0,
                    &[],
                );
            }
        }
        f
    }
}

/// Paints on a canvas through [`Painter`] at the device's pixel ratio;
/// `height` in CSS pixels, the width is the canvas's laid-out width.
/// Returns the CSS width drawn at.
pub fn paint_canvas(
    canvas: &web_sys::HtmlCanvasElement,
    height: f64,
    draw: impl FnOnce(&mut dyn Painter, f64),
) -> f64 {
    let ratio = web_sys::window()
        .map(|w| w.device_pixel_ratio())
        .unwrap_or(1.0)
        .clamp(1.0, 3.0);
    let width = f64::from(canvas.client_width()).max(320.0);
    canvas.set_width((width * ratio).round() as u32);
    canvas.set_height((height * ratio).round() as u32);
    let Some(ctx) = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
    else {
        return width;
    };
    let _ = ctx.set_transform(ratio, 0.0, 0.0, ratio, 0.0, 0.0);
    let mut painter = CanvasPainter { ctx: &ctx };
    draw(&mut painter, width);
    width
}

/// Around `count` round tick values between `lo` and `hi`.
fn ticks(lo: f64, hi: f64, count: usize) -> Vec<f64> {
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return vec![lo];
    }
    let raw = span / count.max(1) as f64;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
        .max(1e-9);
    let mut out = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi + step * 1e-9 && out.len() < 50 {
        out.push(v);
        v += step;
    }
    out
}

/// `12000` → `12,000`; `2.5` → `2.5`.
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
    use crate::draw::painter::SvgWriter;

    #[test]
    fn ticks_are_round_and_inside() {
        assert_eq!(ticks(0.0, 400.0, 4), vec![0.0, 100.0, 200.0, 300.0, 400.0]);
        assert!(ticks(3.0, 3.0, 4).len() == 1);
        assert_eq!(tick_label(12000.0), "12,000");
    }

    #[test]
    fn projection_and_limit_widen_the_frame_only_when_asked() {
        let mut plot = LinePlot {
            title: "t".into(),
            x_label: "step".into(),
            lines: vec![PlotLine {
                label: "a".into(),
                color: PALETTE[0],
                points: vec![(0.0, 10.0), (100.0, 20.0)],
                trend: Some((0.1, 10.0)),
                projection: Some(((100.0, 20.0), (1000.0, 110.0))),
                spikes: vec![(50.0, 15.0)],
            }],
            levels: vec![Level {
                label: "limit".into(),
                bytes: 110.0,
                color: "#cf222e",
            }],
            fit_projection: false,
        };
        assert_eq!(plot.frame(800.0, 300.0).x1, 100.0);
        plot.fit_projection = true;
        let f = plot.frame(800.0, 300.0);
        assert_eq!(f.x1, 1000.0);
        assert!(f.y_max >= 110.0);
        let mut svg = SvgWriter::new(800.0, 300.0);
        plot.draw(&mut svg, 800.0, 300.0);
        let doc = svg.finish();
        assert!(
            doc.contains("stroke-dasharray=\"2 3\""),
            "projection drawn dotted"
        );
        assert!(doc.contains(">limit<"));
    }
}
