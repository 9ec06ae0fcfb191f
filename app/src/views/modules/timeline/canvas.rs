//! The timeline's canvas and its draw loop. A frame culls by binary search
//! and rasterises the visible bands into one image ([`render::rasterize`]),
//! for a window three views wide that is kept while the zoom, colouring and
//! emphasis stay the same: panning and hovering only blit it and redraw the
//! overlays. Frames are drawn in `requestAnimationFrame`, at most one per
//! display frame, whenever a signal the picture depends on changes or the
//! window is resized.
//!
//! The canvas exposes its frame in `data-*` attributes (visible range, y
//! maximum, plot rectangle, bands drawn, draw time) for tests and the
//! browser benchmark.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use gloo_events::EventListener;
use leptos::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;

use super::index::Band;
use super::render::{self, ColourBy, Emphasis, Frame, RasterArea};
use super::{TimelineCtx, HEIGHT};
use crate::draw::painter::CanvasPainter;

/// The bands rasterised for a window of positions at one zoom level.
struct RasterCache {
    /// (span in billionths of the program, plot width, plot height,
    /// colouring, emphasis id).
    key: (u64, u32, u32, ColourBy, usize),
    /// Position at the image's first column.
    x0: f64,
    width: u32,
    image: web_sys::ImageData,
    /// Bands in the window.
    drawn: usize,
}

/// Starts drawing the timeline on its canvas: now, and again whenever what
/// it shows changes.
pub fn start(ctx: &TimelineCtx) {
    let pixels: Rc<RefCell<Vec<u8>>> = Rc::new(RefCell::new(Vec::new()));
    let cache: Rc<RefCell<Option<RasterCache>>> = Rc::new(RefCell::new(None));
    let draw = {
        let ctx = ctx.clone();
        move || draw(&ctx, &mut pixels.borrow_mut(), &mut cache.borrow_mut())
    };
    let request_draw = request_draw(ctx, draw);
    {
        let request_draw = request_draw.clone();
        let s = ctx.signals;
        Effect::new(move |_| {
            s.view.track();
            s.colour_by.track();
            s.search.track();
            s.peak_only.track();
            s.hover.track();
            s.pinned.track();
            s.selection.track();
            request_draw();
        });
    }
    let window = gloo_utils::window();
    let resize = EventListener::new(&window, "resize", move |_| request_draw());
    // Dropped (removed) with the timeline.
    let resize = send_wrapper::SendWrapper::new(resize);
    on_cleanup(move || drop(resize));
}

/// A function that schedules one `draw` for the next animation frame (at
/// most one pending).
fn request_draw(ctx: &TimelineCtx, draw: impl Fn() + 'static) -> Rc<dyn Fn()> {
    let draw = Rc::new(draw);
    let scheduled = Rc::new(Cell::new(false));
    let view = ctx.signals.view;
    Rc::new(move || {
        if scheduled.replace(true) {
            return;
        }
        let (draw, scheduled) = (draw.clone(), scheduled.clone());
        request_animation_frame(move || {
            scheduled.set(false);
            // The report may have been replaced since the frame was
            // requested: its signals are gone, and so is the canvas.
            if view.try_get_untracked().is_none() {
                return;
            }
            draw();
        });
    })
}

fn draw(ctx: &TimelineCtx, pixels: &mut Vec<u8>, cache: &mut Option<RasterCache>) {
    let s = ctx.signals;
    let Some(element) = ctx.canvas.get_untracked() else {
        return;
    };
    let started = now();
    let css_width = f64::from(element.client_width()).max(super::MIN_WIDTH);
    if s.width.get_untracked() != css_width {
        s.width.set(css_width);
    }
    let ratio = gloo_utils::window().device_pixel_ratio().clamp(1.0, 3.0);
    let (dw, dh) = (
        (css_width * ratio).round() as u32,
        (HEIGHT * ratio).round() as u32,
    );
    if element.width() != dw || element.height() != dh {
        element.set_width(dw);
        element.set_height(dh);
    }
    let Some(c2d) = context(&element) else { return };
    let frame = ctx.frame(css_width);
    let search = s.search.get_untracked();
    let (mask, mask_id) = ctx.emphasis(&search);
    let _ = c2d.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
    c2d.set_fill_style_str("#ffffff");
    c2d.fill_rect(0.0, 0.0, f64::from(dw), f64::from(dh));
    let pw = (frame.plot_width() * ratio).round().max(1.0);
    let ph = (frame.plot_height() * ratio).round().max(1.0);
    let span = frame.x1 - frame.x0;
    let total = ctx.total();
    let sx = pw / span;
    // Panning keeps the span up to rounding: one part in 10^9.
    let key = (
        (span * 1e9 / total).round() as u64,
        pw as u32,
        ph as u32,
        s.colour_by.get_untracked(),
        mask_id,
    );
    let reusable = cache.as_ref().is_some_and(|c: &RasterCache| {
        c.key == key && frame.x0 >= c.x0 && (frame.x0 - c.x0) * sx + pw <= f64::from(c.width) + 0.5
    });
    if !reusable {
        // A window three views wide (clipped to the program), so that
        // panning at this zoom level only moves the image.
        let x0 = (frame.x0 - span).max(0.0);
        let x1 = (frame.x1 + span).min(total).max(x0 + span);
        let width = ((x1 - x0) * sx).round().max(pw);
        let area = RasterArea {
            x0,
            x1: x0 + width / sx,
            y_max: ctx.y_max,
            width: width as usize,
            height: ph as usize,
        };
        let drawn = render::rasterize(
            &ctx.index,
            &area,
            s.colour_by.get_untracked(),
            &Emphasis { mask },
            pixels,
        );
        // Copied out of wasm memory: a view into it would detach when the
        // memory grows.
        let data = js_sys::Uint8ClampedArray::new_with_length(pixels.len() as u32);
        data.copy_from(pixels);
        *cache =
            web_sys::ImageData::new_with_js_u8_clamped_array_and_sh(&data, width as u32, ph as u32)
                .ok()
                .map(|image| RasterCache {
                    key,
                    x0,
                    width: width as u32,
                    image,
                    drawn,
                });
    }
    let mut drawn = 0;
    if let Some(c) = cache.as_ref() {
        let offset = ((frame.x0 - c.x0) * sx)
            .round()
            .clamp(0.0, (f64::from(c.width) - pw).max(0.0));
        let _ = c2d.put_image_data_with_dirty_x_and_dirty_y_and_dirty_width_and_dirty_height(
            &c.image,
            (frame.plot_left() * ratio).round() - offset,
            (frame.plot_top() * ratio).round(),
            offset,
            0.0,
            pw,
            ph,
        );
        drawn = c.drawn;
    }
    let _ = c2d.set_transform(ratio, 0.0, 0.0, ratio, 0.0, 0.0);
    let mut painter = CanvasPainter { ctx: &c2d };
    render::paint_whole_program_labels(&ctx.module, &ctx.index, &frame, &mut painter);
    render::paint_overlays(&ctx.module, &frame, ctx.limit, &mut painter);
    for (buffer, color, line) in [
        (s.hover.get_untracked().map(|h| h.0), "#0969da", 1.5),
        (s.pinned.get_untracked(), "#1f2328", 2.5),
    ] {
        if let Some(band) =
            buffer.and_then(|b| ctx.index.band_of.get(b as usize).copied().flatten())
        {
            outline(&c2d, &frame, &ctx.index.bands[band as usize], color, line);
        }
    }
    if let Some((a, b)) = s.selection.get_untracked() {
        let (x0, x1) = (frame.px(a.min(b)), frame.px(a.max(b)));
        c2d.set_fill_style_str("rgba(9, 105, 218, 0.15)");
        c2d.fill_rect(x0, frame.plot_top(), x1 - x0, frame.plot_height());
    }
    let set = |name: &str, value: String| {
        let _ = element.set_attribute(name, &value);
    };
    set("data-x0", frame.x0.to_string());
    set("data-x1", frame.x1.to_string());
    set("data-y-max", ctx.y_max.to_string());
    set(
        "data-plot",
        format!(
            "{},{},{},{}",
            frame.plot_left(),
            frame.plot_top(),
            frame.plot_width(),
            frame.plot_height()
        ),
    );
    set("data-bands-drawn", drawn.to_string());
    set("data-draw-ms", format!("{:.3}", now() - started));
}

fn now() -> f64 {
    gloo_utils::window()
        .performance()
        .map(|p| p.now())
        .unwrap_or(0.0)
}

fn context(canvas: &web_sys::HtmlCanvasElement) -> Option<CanvasRenderingContext2d> {
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
}

fn outline(c2d: &CanvasRenderingContext2d, frame: &Frame, band: &Band, color: &str, line: f64) {
    let left = frame.plot_left();
    let right = left + frame.plot_width();
    let x0 = frame.px(band.start as f64).clamp(left, right);
    let x1 = frame.px(band.end as f64).clamp(left, right).max(x0 + 1.0);
    let y0 = frame.py(band.y1 as f64);
    let y1 = frame.py(band.y0 as f64).max(y0 + 1.0);
    c2d.set_stroke_style_str(color);
    c2d.set_line_width(line);
    c2d.stroke_rect(
        x0 - line / 2.0,
        y0 - line / 2.0,
        x1 - x0 + line,
        y1 - y0 + line,
    );
}
