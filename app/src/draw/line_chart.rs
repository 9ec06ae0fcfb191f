//! A plain line chart on a `<canvas>`: byte values (y) over an index or a
//! step (x), with horizontal reference lines (a limit) and one marked x (a
//! peak). Used by the module heap view and the step series view.
//!
//! Series with more points than the canvas has pixels are drawn as their
//! per-pixel maximum, so a peak is never lost to sampling.

use leptos::html;
use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;

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
const AXIS_COLOR: &str = "#57606a";
const GRID_COLOR: &str = "#e4e7eb";
const FONT: &str = "12px system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

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
            draw(&element, &series, &lines, marker.as_ref(), x_label);
        }
    });

    view! {
        <figure class="chart">
            <canvas node_ref=canvas role="img" aria-label=description.clone()></canvas>
            <figcaption class="legend">{legend}</figcaption>
        </figure>
    }
}

fn draw(
    canvas: &web_sys::HtmlCanvasElement,
    series: &[Series],
    lines: &[RefLine],
    marker: Option<&Marker>,
    x_label: &str,
) {
    let ratio = web_sys::window()
        .map(|w| w.device_pixel_ratio())
        .unwrap_or(1.0)
        .max(1.0);
    let width = f64::from(canvas.client_width()).max(320.0);
    let height = f64::from(canvas.client_height()).max(160.0);
    canvas.set_width((width * ratio) as u32);
    canvas.set_height((height * ratio) as u32);
    let Some(ctx) = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    let _ = ctx.scale(ratio, ratio);
    ctx.clear_rect(0.0, 0.0, width, height);
    ctx.set_font(FONT);

    let all_x = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = all_x.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if !x_min.is_finite() {
        return;
    }
    let x_span = if x_max > x_min { x_max - x_min } else { 1.0 };
    let y_top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(lines.iter().map(|l| l.bytes))
        .fold(0.0f64, f64::max);
    let y_max = nice_ceiling(y_top * 1.04);

    let plot_w = width - MARGIN_LEFT - MARGIN_RIGHT;
    let plot_h = height - MARGIN_TOP - MARGIN_BOTTOM;
    let to_x = |x: f64| MARGIN_LEFT + (x - x_min) / x_span * plot_w;
    let to_y = |y: f64| MARGIN_TOP + plot_h - (y / y_max) * plot_h;

    // Grid and y labels.
    ctx.set_line_width(1.0);
    ctx.set_text_align("right");
    ctx.set_text_baseline("middle");
    for i in 0..=4 {
        let value = y_max * f64::from(i) / 4.0;
        let y = to_y(value).round() + 0.5;
        ctx.set_stroke_style_str(GRID_COLOR);
        ctx.begin_path();
        ctx.move_to(MARGIN_LEFT, y);
        ctx.line_to(MARGIN_LEFT + plot_w, y);
        ctx.stroke();
        ctx.set_fill_style_str(AXIS_COLOR);
        let _ = ctx.fill_text(&format_bytes(value as u64), MARGIN_LEFT - 8.0, y);
    }
    // X labels.
    ctx.set_text_align("center");
    ctx.set_text_baseline("top");
    for i in 0..=4 {
        let value = x_min + x_span * f64::from(i) / 4.0;
        let _ = ctx.fill_text(
            &format!("{}", value.round() as i64),
            to_x(value),
            MARGIN_TOP + plot_h + 6.0,
        );
    }
    let _ = ctx.fill_text(
        x_label,
        MARGIN_LEFT + plot_w / 2.0,
        MARGIN_TOP + plot_h + 20.0,
    );

    for line in lines {
        let y = to_y(line.bytes).round() + 0.5;
        ctx.set_stroke_style_str(line.color);
        ctx.set_line_width(1.5);
        let _ = ctx.set_line_dash(&dash(&[6.0, 4.0]));
        ctx.begin_path();
        ctx.move_to(MARGIN_LEFT, y);
        ctx.line_to(MARGIN_LEFT + plot_w, y);
        ctx.stroke();
        let _ = ctx.set_line_dash(&dash(&[]));
        ctx.set_fill_style_str(line.color);
        ctx.set_text_align("right");
        ctx.set_text_baseline("bottom");
        let _ = ctx.fill_text(&line.label, MARGIN_LEFT + plot_w - 4.0, y - 3.0);
    }

    for s in series {
        let points = per_pixel_max(&s.points, x_min, x_span, plot_w);
        ctx.set_stroke_style_str(s.color);
        ctx.set_line_width(if s.dashed { 1.25 } else { 1.75 });
        let _ = ctx.set_line_dash(&dash(if s.dashed { &[4.0, 3.0] } else { &[] }));
        ctx.begin_path();
        let mut previous_y = None;
        for (x, y) in &points {
            match previous_y {
                None => ctx.move_to(to_x(*x), to_y(*y)),
                Some(held) => {
                    if s.steps {
                        ctx.line_to(to_x(*x), to_y(held));
                    }
                    ctx.line_to(to_x(*x), to_y(*y));
                }
            }
            previous_y = Some(*y);
        }
        ctx.stroke();
        let _ = ctx.set_line_dash(&dash(&[]));
    }

    if let Some(marker) = marker {
        let x = to_x(marker.x).round() + 0.5;
        ctx.set_stroke_style_str("#bc4c00");
        ctx.set_line_width(1.0);
        ctx.begin_path();
        ctx.move_to(x, MARGIN_TOP);
        ctx.line_to(x, MARGIN_TOP + plot_h);
        ctx.stroke();
        ctx.set_fill_style_str("#bc4c00");
        ctx.set_text_baseline("top");
        let right_half = x > MARGIN_LEFT + plot_w / 2.0;
        ctx.set_text_align(if right_half { "right" } else { "left" });
        let _ = ctx.fill_text(
            &marker.label,
            if right_half { x - 4.0 } else { x + 4.0 },
            MARGIN_TOP + 2.0,
        );
    }
}

fn dash(pattern: &[f64]) -> wasm_bindgen::JsValue {
    pattern
        .iter()
        .map(|v| wasm_bindgen::JsValue::from_f64(*v))
        .collect::<js_sys::Array>()
        .into()
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

/// Rounds a byte value up to a tidy axis maximum (1, 2, 2.5, 5 × a power of
/// 1024 or 10), so grid labels read well.
fn nice_ceiling(value: f64) -> f64 {
    if value <= 0.0 {
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
        .find(|candidate| *candidate >= scaled)
        .unwrap_or(10.0 * magnitude);
    step * unit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_maximum_is_tidy_and_covers_the_value() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(900.0), 1000.0);
        assert_eq!(
            nice_ceiling(3.0 * 1024.0 * 1024.0 * 1024.0),
            5.0 * 1024.0 * 1024.0 * 1024.0
        );
        let v = 17.6 * 1024.0 * 1024.0 * 1024.0;
        assert!(nice_ceiling(v) >= v);
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
