//! The buffer-lifetime timeline of one module: program order (x) against
//! memory (y), every buffer a band from its definition to its last use at
//! its offset, with the heap and unpadded-heap envelopes, the HBM limit and
//! the peak. Explorable like a profiler: wheel zoom and drag pan on x,
//! shift-drag zooms to a selection, W/S zoom, A/D pan, F fits, Escape
//! unpins; hovering shows a buffer, clicking pins it with the instructions
//! that define and last use it; search by name, shape or op; the buffers
//! live at the peak in a table linked both ways with the chart; flags for
//! buffers that hold memory to the end of the program; export as SVG, PNG
//! and CSV.
//!
//! Speed: [`index::TimelineIndex`] is built once per module; a frame
//! culls by binary search and rasterises the visible bands into one image
//! ([`render::rasterize`]: each band at least a device pixel, so sub-pixel
//! buffers merge into per-pixel fills), for a window three views wide that
//! is kept while the zoom, colouring and emphasis stay the same: panning
//! and hovering only blit it and redraw the overlays. Frames are drawn in
//! `requestAnimationFrame`, at most one per display frame.
//!
//! Test hook: `window.__oomscope_load_report(json)` (installed by
//! [`install_test_hook`]) shows a report given as the analyzer's JSON, as
//! if the worker had returned it; the browser benchmark
//! (`tests/e2e/bench-timeline.mjs`) loads its synthetic 200k-buffer report
//! with it. The canvas exposes its frame in `data-*` attributes (visible
//! range, y maximum, plot rectangle, bands drawn, draw time) for tests.

pub mod index;
pub mod render;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use leptos::ev;
use leptos::html;
use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::{ModuleReport, Report};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::CanvasRenderingContext2d;

use crate::export::{self, CanvasPainter, SvgWriter};
use crate::format::{group_digits, percent, Bytes};
use crate::state::{AppState, ReportOrigin, Selection};
use crate::views::table::TableHead;
use index::{category_name, looks_like_gradient, Band, Flag, TimelineIndex, CATEGORIES};
use render::{ColourBy, Emphasis, Frame, RasterArea};

/// Canvas height in CSS pixels.
const HEIGHT: f64 = 460.0;
/// Fewest positions the view may show.
const MIN_SPAN: f64 = 4.0;
/// Search results listed.
const SEARCH_ROWS: usize = 30;
/// Peak-table rows before "show all".
const PEAK_ROWS: usize = 100;
/// Instructions listed for a pinned buffer.
const INSTRUCTION_ROWS: usize = 200;

/// Installs `window.__oomscope_load_report(json)`: parses a report and shows
/// it (returns an error text, or nothing on success). For tests and
/// benchmarks; harmless for users (it can only show a report).
pub fn install_test_hook(state: AppState) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let hook = Closure::<dyn Fn(String) -> JsValue>::new(move |json: String| {
        match serde_json::from_str::<Report>(&json) {
            Ok(report) => {
                crate::navigate::show_report(state, report, ReportOrigin::User);
                JsValue::UNDEFINED
            }
            Err(e) => JsValue::from_str(&format!("not a report: {e}")),
        }
    });
    let _ = js_sys::Reflect::set(
        &window,
        &JsValue::from_str("__oomscope_load_report"),
        hook.as_ref(),
    );
    // The hook lives as long as the page.
    hook.forget();
}

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

#[derive(Debug, Clone, PartialEq)]
struct Search {
    /// Per buffer: matched.
    mask: Vec<bool>,
    hits: Vec<u32>,
}

/// Where the pointer went down, for drag pan and selection.
#[derive(Debug, Clone, Copy)]
struct Drag {
    x: f64,
    y: f64,
    view: (f64, f64),
    select: bool,
    moved: bool,
}

#[component]
pub fn Timeline(module: ModuleReport, limit: Option<u64>) -> impl IntoView {
    if module.buffers.is_empty() {
        return ().into_any();
    }
    let module = Arc::new(module);
    let index = Arc::new(TimelineIndex::new(&module));
    let full = (0.0, index.positions as f64);
    let y_max = render::y_axis_max(index.top_bytes.max(limit.unwrap_or(0)));

    let view = RwSignal::new(full);
    let colour_by = RwSignal::new(ColourBy::Category);
    let query = RwSignal::new(String::new());
    let peak_only = RwSignal::new(false);
    let hover: RwSignal<Option<(u32, f64, f64)>> = RwSignal::new(None);
    let pinned: RwSignal<Option<u32>> = RwSignal::new(None);
    let selection: RwSignal<Option<(f64, f64)>> = RwSignal::new(None);
    let width = RwSignal::new(0.0f64);
    let notice: RwSignal<Option<String>> = RwSignal::new(None);
    let canvas: NodeRef<html::Canvas> = NodeRef::new();
    let drag: Rc<Cell<Option<Drag>>> = Rc::new(Cell::new(None));

    let search = {
        let module = module.clone();
        Memo::new(move |_| {
            let q = query.get();
            let q = q.trim();
            if q.is_empty() {
                return None;
            }
            let mask: Vec<bool> = module
                .buffers
                .iter()
                .map(|b| index::matches(b, q))
                .collect();
            let mut hits: Vec<u32> = (0..mask.len() as u32)
                .filter(|&i| mask[i as usize])
                .collect();
            hits.sort_by(|a, b| {
                module.buffers[*b as usize]
                    .size_bytes
                    .cmp(&module.buffers[*a as usize].size_bytes)
            });
            Some(Arc::new(Search { mask, hits }))
        })
    };
    let peak_mask: Arc<Vec<bool>> = {
        let mut mask = vec![false; module.buffers.len()];
        for &i in &index.peak_live {
            mask[i as usize] = true;
        }
        Arc::new(mask)
    };

    // Drawing, at most once per animation frame.
    let frame_of = move |w: f64| {
        let (x0, x1) = view.get_untracked();
        Frame {
            width: w,
            height: HEIGHT,
            x0,
            x1,
            y_max,
        }
    };
    let pixels: Rc<RefCell<Vec<u8>>> = Rc::new(RefCell::new(Vec::new()));
    let cache: Rc<RefCell<Option<RasterCache>>> = Rc::new(RefCell::new(None));
    let scheduled = Rc::new(Cell::new(false));
    let draw = {
        let (module, index, peak_mask) = (module.clone(), index.clone(), peak_mask.clone());
        move || {
            let Some(element) = canvas.get_untracked() else {
                return;
            };
            let started = now();
            let css_width = f64::from(element.client_width()).max(480.0);
            if width.get_untracked() != css_width {
                width.set(css_width);
            }
            let ratio = web_sys::window()
                .map(|w| w.device_pixel_ratio())
                .unwrap_or(1.0)
                .clamp(1.0, 3.0);
            let (dw, dh) = (
                (css_width * ratio).round() as u32,
                (HEIGHT * ratio).round() as u32,
            );
            if element.width() != dw || element.height() != dh {
                element.set_width(dw);
                element.set_height(dh);
            }
            let Some(ctx) = context(&element) else { return };
            let frame = frame_of(css_width);
            let search = search.get_untracked();
            let mask: Option<&[bool]> = match (&search, peak_only.get_untracked()) {
                (Some(s), _) => Some(&s.mask),
                (None, true) => Some(&peak_mask),
                (None, false) => None,
            };
            let _ = ctx.set_transform(1.0, 0.0, 0.0, 1.0, 0.0, 0.0);
            ctx.set_fill_style_str("#ffffff");
            ctx.fill_rect(0.0, 0.0, f64::from(dw), f64::from(dh));
            let mask_id = match (&search, peak_only.get_untracked()) {
                (Some(s), _) => Arc::as_ptr(s) as usize,
                (None, true) => 1,
                (None, false) => 0,
            };
            let pw = (frame.plot_width() * ratio).round().max(1.0);
            let ph = (frame.plot_height() * ratio).round().max(1.0);
            let span = frame.x1 - frame.x0;
            let sx = pw / span;
            // Panning keeps the span up to rounding: one part in 10^9.
            let key = ((span * 1e9 / full.1).round() as u64, pw as u32, ph as u32, colour_by.get_untracked(), mask_id);
            let mut cache = cache.borrow_mut();
            let reusable = cache.as_ref().is_some_and(|c: &RasterCache| {
                c.key == key && frame.x0 >= c.x0 && (frame.x0 - c.x0) * sx + pw <= f64::from(c.width) + 0.5
            });
            if !reusable {
                // A window three views wide (clipped to the program), so
                // that panning at this zoom level only moves the image.
                let x0 = (frame.x0 - span).max(0.0);
                let x1 = (frame.x1 + span).min(full.1).max(x0 + span);
                let width = ((x1 - x0) * sx).round().max(pw);
                let area = RasterArea { x0, x1: x0 + width / sx, y_max, width: width as usize, height: ph as usize };
                let mut pixels = pixels.borrow_mut();
                let drawn = render::rasterize(&index, &area, colour_by.get_untracked(), &Emphasis { mask }, &mut pixels);
                // Copied out of wasm memory: a view into it would detach
                // when the memory grows.
                let data = js_sys::Uint8ClampedArray::new_with_length(pixels.len() as u32);
                data.copy_from(&pixels);
                *cache = web_sys::ImageData::new_with_js_u8_clamped_array_and_sh(&data, width as u32, ph as u32)
                    .ok()
                    .map(|image| RasterCache { key, x0, width: width as u32, image, drawn });
            }
            let mut drawn = 0;
            if let Some(c) = cache.as_ref() {
                let offset = ((frame.x0 - c.x0) * sx).round().clamp(0.0, (f64::from(c.width) - pw).max(0.0));
                let _ = ctx.put_image_data_with_dirty_x_and_dirty_y_and_dirty_width_and_dirty_height(
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
            let _ = ctx.set_transform(ratio, 0.0, 0.0, ratio, 0.0, 0.0);
            let mut painter = CanvasPainter { ctx: &ctx };
            render::paint_overlays(&module, &frame, limit, &mut painter);
            for (buffer, color, line) in [
                (hover.get_untracked().map(|h| h.0), "#0969da", 1.5),
                (pinned.get_untracked(), "#1f2328", 2.5),
            ] {
                if let Some(band) =
                    buffer.and_then(|b| index.band_of.get(b as usize).copied().flatten())
                {
                    outline(&ctx, &frame, &index.bands[band as usize], color, line);
                }
            }
            if let Some((a, b)) = selection.get_untracked() {
                let (x0, x1) = (frame.px(a.min(b)), frame.px(a.max(b)));
                ctx.set_fill_style_str("rgba(9, 105, 218, 0.15)");
                ctx.fill_rect(x0, frame.plot_top(), x1 - x0, frame.plot_height());
            }
            let set = |name: &str, value: String| {
                let _ = element.set_attribute(name, &value);
            };
            set("data-x0", frame.x0.to_string());
            set("data-x1", frame.x1.to_string());
            set("data-y-max", y_max.to_string());
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
    };
    let draw = Rc::new(draw);
    let request_draw = {
        let (draw, scheduled) = (draw.clone(), scheduled.clone());
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
    };
    {
        let request_draw = request_draw.clone();
        Effect::new(move |_| {
            view.track();
            colour_by.track();
            search.track();
            peak_only.track();
            hover.track();
            pinned.track();
            selection.track();
            request_draw();
        });
    }
    let resize = {
        let request_draw = request_draw.clone();
        window_event_listener(ev::resize, move |_| request_draw())
    };
    on_cleanup(move || resize.remove());

    // View changes.
    let set_view = move |x0: f64, x1: f64| {
        let span = (x1 - x0).clamp(MIN_SPAN.min(full.1), full.1);
        let x0 = x0.clamp(0.0, full.1 - span);
        view.set((x0, x0 + span));
    };
    let zoom = move |factor: f64, anchor: f64| {
        let (x0, x1) = view.get_untracked();
        set_view(
            anchor - (anchor - x0) * factor,
            anchor + (x1 - anchor) * factor,
        );
    };
    let pan = move |fraction: f64| {
        let (x0, x1) = view.get_untracked();
        let d = (x1 - x0) * fraction;
        set_view(x0 + d, x1 + d);
    };
    let focus_buffer = {
        let module = module.clone();
        move |buffer: u32| {
            pinned.set(Some(buffer));
            if let Some(b) = module.buffers.get(buffer as usize) {
                let (s, e) = (b.start as f64, b.end.max(b.start) as f64 + 1.0);
                let (x0, x1) = view.get_untracked();
                if s < x0 || e > x1 {
                    let margin = ((e - s) * 0.25).max(MIN_SPAN);
                    set_view(s - margin, e + margin);
                }
            }
        }
    };

    // Another view (the padding table) asked to show a buffer of this module.
    {
        let (module, focus_buffer) = (module.clone(), focus_buffer.clone());
        let buffer_focus = crate::state::use_state().buffer_focus;
        Effect::new(move |_| {
            let Some(focus) = buffer_focus.get() else {
                return;
            };
            if focus.module != module.display_name() || focus.memory_space != module.memory_space {
                return;
            }
            let found = module.buffers.iter().position(|b| match focus.buffer_id {
                Some(id) => b.id == id,
                None => b.name == focus.buffer_name,
            });
            if let Some(i) = found {
                focus_buffer(i as u32);
            }
        });
    }

    // The pinned buffer is the selection a link carries.
    {
        let module = module.clone();
        let open_view = crate::state::use_state().open_view;
        Effect::new(move |mounted: Option<()>| {
            let selected = pinned
                .get()
                .and_then(|i| module.buffers.get(i as usize))
                // A shared report's lifetimes without a logical id carry -1.
                .map(|b| Selection::of_buffer((b.id >= 0).then_some(b.id), &b.name).text());
            let current = open_view.with_untracked(|v| v.selection.clone());
            match selected {
                Some(text) if text != current => open_view.update(|v| v.selection = text),
                // Unpinned (not merely mounted): drop a buffer selection.
                None if mounted.is_some()
                    && matches!(
                        Selection::parse(&current),
                        Some(Selection::Buffer(_) | Selection::BufferName(_))
                    ) =>
                {
                    open_view.update(|v| v.selection.clear())
                }
                _ => {}
            }
        });
    }

    // Pointer and keyboard.
    let local = move |ev: &web_sys::MouseEvent| -> Option<(f64, f64, Frame)> {
        let element = canvas.get_untracked()?;
        let rect = element.get_bounding_client_rect();
        Some((
            f64::from(ev.client_x()) - rect.left(),
            f64::from(ev.client_y()) - rect.top(),
            frame_of(rect.width()),
        ))
    };
    let hit_at = {
        let index = index.clone();
        move |x: f64, y: f64, frame: &Frame| -> Option<Band> {
            if x < frame.plot_left()
                || x > frame.plot_left() + frame.plot_width()
                || y < frame.plot_top()
                || y > frame.plot_top() + frame.plot_height()
            {
                return None;
            }
            index.hit(
                frame.position_at(x),
                frame.bytes_at(y),
                frame.positions_per_px() * 2.0,
                frame.bytes_per_px() * 2.0,
            )
        }
    };
    let on_wheel = move |ev: ev::WheelEvent| {
        let Some((x, _, frame)) = local(&ev) else {
            return;
        };
        ev.prevent_default();
        if ev.shift_key() || ev.delta_x().abs() > ev.delta_y().abs() {
            let delta = if ev.shift_key() {
                ev.delta_y()
            } else {
                ev.delta_x()
            };
            pan(delta / frame.plot_width());
        } else {
            zoom(
                (ev.delta_y() * 0.002).exp(),
                frame.position_at(x).clamp(frame.x0, frame.x1),
            );
        }
    };
    let on_pointerdown = {
        let drag = drag.clone();
        move |ev: ev::PointerEvent| {
            if ev.button() != 0 {
                return;
            }
            let Some((x, y, _)) = local(&ev) else { return };
            if let Some(element) = canvas.get_untracked() {
                let _ = element.set_pointer_capture(ev.pointer_id());
                let _ = element.focus();
            }
            drag.set(Some(Drag {
                x,
                y,
                view: view.get_untracked(),
                select: ev.shift_key(),
                moved: false,
            }));
        }
    };
    let on_pointermove = {
        let (drag, hit_at) = (drag.clone(), hit_at.clone());
        move |ev: ev::PointerEvent| {
            let Some((x, y, frame)) = local(&ev) else {
                return;
            };
            match drag.get() {
                Some(mut d) => {
                    if (x - d.x).abs() + (y - d.y).abs() > 3.0 {
                        d.moved = true;
                    }
                    drag.set(Some(d));
                    if !d.moved {
                        return;
                    }
                    hover.set(None);
                    if d.select {
                        selection.set(Some((frame.position_at(d.x), frame.position_at(x))));
                    } else {
                        let per_px = (d.view.1 - d.view.0) / frame.plot_width();
                        let shift = (d.x - x) * per_px;
                        set_view(d.view.0 + shift, d.view.1 + shift);
                    }
                }
                None => {
                    let next = hit_at(x, y, &frame).map(|b| (b.buffer, x, y));
                    if next != hover.get_untracked() {
                        hover.set(next);
                    }
                }
            }
        }
    };
    let on_pointerup = {
        let (drag, hit_at, focus_buffer) = (drag.clone(), hit_at.clone(), focus_buffer.clone());
        move |ev: ev::PointerEvent| {
            let Some(d) = drag.take() else { return };
            let Some((x, y, frame)) = local(&ev) else {
                return;
            };
            if let Some((a, b)) = selection.get_untracked() {
                selection.set(None);
                if (frame.px(a) - frame.px(b)).abs() >= 4.0 {
                    set_view(a.min(b), a.max(b));
                }
                return;
            }
            if !d.moved {
                match hit_at(x, y, &frame) {
                    Some(band) => focus_buffer(band.buffer),
                    None => pinned.set(None),
                }
            }
        }
    };
    let on_keydown = move |ev: ev::KeyboardEvent| {
        let (x0, x1) = view.get_untracked();
        let centre = (x0 + x1) / 2.0;
        match ev.key().to_ascii_lowercase().as_str() {
            "w" | "+" | "=" => zoom(0.7, centre),
            "s" | "-" => zoom(1.0 / 0.7, centre),
            "a" | "arrowleft" => pan(-0.15),
            "d" | "arrowright" => pan(0.15),
            "f" | "0" => view.set(full),
            "escape" => pinned.set(None),
            _ => return,
        }
        ev.prevent_default();
    };

    // Exports.
    let stem = export::file_stem(&module.display_name());
    let export_svg = {
        let (module, index, peak_mask, stem) = (
            module.clone(),
            index.clone(),
            peak_mask.clone(),
            stem.clone(),
        );
        move |_| {
            let frame = frame_of(width.get_untracked().max(480.0));
            let search = search.get_untracked();
            let mask: Option<&[bool]> = match (&search, peak_only.get_untracked()) {
                (Some(s), _) => Some(&s.mask),
                (None, true) => Some(&peak_mask),
                (None, false) => None,
            };
            let mut svg = SvgWriter::new(frame.width, frame.height);
            render::paint_bands(
                &index,
                &frame,
                colour_by.get_untracked(),
                &Emphasis { mask },
                &mut svg,
            );
            render::paint_overlays(&module, &frame, limit, &mut svg);
            report_error(
                notice,
                export::download_text(
                    &format!("{stem}.timeline.svg"),
                    "image/svg+xml",
                    &svg.finish(),
                ),
            );
        }
    };
    let export_png = {
        let stem = stem.clone();
        move |_| {
            if let Some(element) = canvas.get_untracked() {
                report_error(
                    notice,
                    export::download_canvas_png(&format!("{stem}.timeline.png"), &element),
                );
            }
        }
    };
    let export_csv = {
        let (module, index, stem) = (module.clone(), index.clone(), stem.clone());
        move |_| {
            let rows = index.peak_live.iter().map(|&i| csv_row(&module, &index, i));
            let text = export::csv(&CSV_HEADER, rows);
            report_error(
                notice,
                export::download_text(&format!("{stem}.peak-buffers.csv"), "text/csv", &text),
            );
        }
    };

    // Text around the chart.
    let range_text = move || {
        let (x0, x1) = view.get();
        format!(
            "positions {}–{} of {}",
            x0.floor() as u64,
            x1.ceil() as u64,
            full.1 as u64
        )
    };
    let placement_note = match index.placement {
        index::Placement::Compiler => "bands at the compiler's buffer offsets",
        index::Placement::Packed => "bands packed first-fit (the input gives no buffer offsets)",
    };
    // A shared report carries only the largest buffers live at the peak.
    let shared = crate::state::use_state()
        .report
        .with_untracked(|r| r.as_ref().is_some_and(|r| r.shared.is_some()));
    let buffer_count = if shared {
        format!(
            "{} buffers live at the peak, as the link carries them",
            group_digits(module.buffers.len() as u64)
        )
    } else {
        format!("{} buffers", group_digits(module.buffers.len() as u64))
    };
    let legend = {
        let index = index.clone();
        move || match colour_by.get() {
            ColourBy::Category => CATEGORIES
                .iter()
                .enumerate()
                .filter(|(i, _)| index.bands.iter().any(|b| usize::from(b.category) == *i))
                .map(|(i, c)| {
                    swatch(
                        render::hex(render::CATEGORY_COLORS[i]),
                        category_name(*c).to_string(),
                    )
                })
                .collect_view(),
            ColourBy::Op => index
                .ops
                .iter()
                .take(render::OP_COLORS.len())
                .enumerate()
                .map(|(i, op)| {
                    let label = if i + 1 == render::OP_COLORS.len()
                        && index.ops.len() > render::OP_COLORS.len()
                    {
                        "other ops".to_string()
                    } else {
                        op.clone()
                    };
                    swatch(render::hex(render::OP_COLORS[i]), label)
                })
                .collect_view(),
        }
    };
    let tooltip = {
        let (module, index) = (module.clone(), index.clone());
        move || {
            let (buffer, x, y) = hover.get()?;
            let b = module.buffers.get(buffer as usize)?;
            let flag = index.flags.get(buffer as usize).copied().flatten();
            let left = if x > width.get_untracked() * 0.6 {
                x - 360.0
            } else {
                x + 16.0
            };
            let top = if y > HEIGHT * 0.55 {
                y - 170.0
            } else {
                y + 16.0
            };
            Some(view! {
                <div class="timeline-tooltip" role="tooltip" data-buffer=b.name.clone() style:left=format!("{left:.0}px") style:top=format!("{top:.0}px")>
                    <div class="tt-name mono">{b.name.clone()}</div>
                    <div class="tt-shape mono">{b.shape.clone()}</div>
                    <dl>
                        <dt>"Size"</dt><dd><Bytes value=b.size_bytes/>{padding_note(b.size_bytes, b.unpadded_bytes)}</dd>
                        <dt>"Lifetime"</dt><dd>{lifetime_text(b.start, b.end)}</dd>
                        <dt>"Kind"</dt><dd>{category_name(b.category)}</dd>
                        {(!b.op_name.is_empty()).then(|| view! { <dt>"Op"</dt><dd class="mono">{b.op_name.clone()}</dd> })}
                        {(!b.source.is_empty()).then(|| view! { <dt>"Source"</dt><dd class="mono">{b.source.clone()}</dd> })}
                    </dl>
                    {flag.map(|f| view! { <div class="tt-flag">{flag_text(f, b)}</div> })}
                </div>
            })
        }
    };
    let pinned_panel = {
        let (module, index) = (module.clone(), index.clone());
        move || {
            let buffer = pinned.get()?;
            Some(
                view! { <PinnedBuffer module=module.clone() index=index.clone() buffer=buffer on_close=move || pinned.set(None)/> },
            )
        }
    };
    let search_results = {
        let (module, focus_buffer) = (module.clone(), focus_buffer.clone());
        move || {
            let result = search.get()?;
            let total = result.hits.len();
            let focus_buffer = focus_buffer.clone();
            let items = result
                .hits
                .iter()
                .take(SEARCH_ROWS)
                .map(|&i| {
                    let b = &module.buffers[i as usize];
                    let focus_buffer = focus_buffer.clone();
                    view! {
                        <li>
                            <button type="button" class="link-button" data-buffer=b.name.clone() on:click=move |_| focus_buffer(i)>
                                <span class="mono">{b.name.clone()}</span>
                                " " <span class="muted">{format_bytes(b.size_bytes)} " · " {b.shape.clone()}</span>
                            </button>
                        </li>
                    }
                })
                .collect_view();
            Some(view! {
                <div class="timeline-search-results" aria-live="polite">
                    <p class="muted" data-count=total.to_string()>
                        {match total {
                            0 => "No buffer matches.".to_string(),
                            1 => "1 buffer matches.".to_string(),
                            n if n > SEARCH_ROWS => format!("{} buffers match; the {SEARCH_ROWS} largest:", group_digits(n as u64)),
                            n => format!("{n} buffers match."),
                        }}
                    </p>
                    <ul>{items}</ul>
                </div>
            })
        }
    };
    let flagged = index.flags.iter().filter(|f| f.is_some()).count();
    let description = format!(
        "Buffer lifetimes of {}: {} buffers over {} program positions, peak {} at position {}. Arrow keys or A and D pan, W and S zoom, F fits.",
        module.display_name(),
        group_digits(module.buffers.len() as u64),
        full.1 as u64,
        format_bytes(module.peak_bytes),
        module.peak_position
    );

    view! {
        <section class="timeline" aria-label="Buffer lifetimes">
            <div class="timeline-head">
                <h3 class="subhead">"Buffer lifetimes"</h3>
                <span class="muted">{format!("{buffer_count} · {placement_note}")}</span>
            </div>
            <div class="timeline-toolbar" role="toolbar" aria-label="Timeline controls">
                <label class="timeline-search">
                    <span>"Search"</span>
                    <input id="timeline-search" type="search" placeholder="name, shape or op"
                        prop:value=move || query.get()
                        on:input=move |ev| query.set(event_target_value(&ev))/>
                </label>
                <label>
                    <span>"Colour by"</span>
                    <select id="timeline-colour" on:change=move |ev| colour_by.set(if event_target_value(&ev) == "op" { ColourBy::Op } else { ColourBy::Category })>
                        <option value="category">"category"</option>
                        <option value="op">"op"</option>
                    </select>
                </label>
                <label class="check">
                    <input id="timeline-peak" type="checkbox" prop:checked=move || peak_only.get() on:change=move |ev| peak_only.set(event_target_checked(&ev))/>
                    <span>"Highlight buffers live at the peak"</span>
                </label>
                <span class="toolbar-gap"></span>
                <button type="button" class="button small secondary" on:click=move |_| zoom(0.5, (view.get_untracked().0 + view.get_untracked().1) / 2.0) aria-label="Zoom in">"+"</button>
                <button type="button" class="button small secondary" on:click=move |_| zoom(2.0, (view.get_untracked().0 + view.get_untracked().1) / 2.0) aria-label="Zoom out">"−"</button>
                <button type="button" class="button small secondary" id="timeline-reset" on:click=move |_| view.set(full)>"Reset zoom"</button>
                <button type="button" class="button small secondary" on:click=export_svg>"SVG"</button>
                <button type="button" class="button small secondary" on:click=export_png>"PNG"</button>
                <button type="button" class="button small secondary" on:click=export_csv>"CSV"</button>
            </div>
            {search_results}
            {move || notice.get().map(|n| view! { <p class="error-message" role="alert">{n}</p> })}
            <div class="timeline-stage">
                <canvas
                    node_ref=canvas
                    class="timeline-canvas"
                    tabindex="0"
                    role="img"
                    aria-label=description
                    on:wheel=on_wheel
                    on:pointerdown=on_pointerdown
                    on:pointermove=on_pointermove
                    on:pointerup=on_pointerup
                    on:pointerleave=move |_| hover.set(None)
                    on:keydown=on_keydown
                ></canvas>
                {tooltip}
            </div>
            <div class="timeline-foot">
                <span class="legend">{legend}
                    <span class="legend-item"><span class="legend-swatch line" style:border-color=render::HEAP></span>"heap"</span>
                    <span class="legend-item"><span class="legend-swatch line dashed" style:border-color=render::UNPADDED></span>"heap, unpadded"</span>
                    {(index.base_bytes > 0).then(|| swatch(render::hex(render::BASE), "live throughout (no buffer)".to_string()))}
                </span>
                <span class="muted timeline-range" aria-live="polite">{range_text}</span>
            </div>
            <p class="muted timeline-help">"Scroll to zoom, drag to pan, shift-drag to zoom to a range, click a buffer to pin it. Keys: W/S zoom, A/D pan, F fit, Esc unpin."</p>
            {pinned_panel}
            <PeakTable module=module.clone() index=index.clone() pinned=pinned flagged=flagged focus=focus_buffer/>
        </section>
    }
    .into_any()
}

fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
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

fn outline(ctx: &CanvasRenderingContext2d, frame: &Frame, band: &Band, color: &str, line: f64) {
    let left = frame.plot_left();
    let right = left + frame.plot_width();
    let x0 = frame.px(band.start as f64).clamp(left, right);
    let x1 = frame.px(band.end as f64).clamp(left, right).max(x0 + 1.0);
    let y0 = frame.py(band.y1 as f64);
    let y1 = frame.py(band.y0 as f64).max(y0 + 1.0);
    ctx.set_stroke_style_str(color);
    ctx.set_line_width(line);
    ctx.stroke_rect(
        x0 - line / 2.0,
        y0 - line / 2.0,
        x1 - x0 + line,
        y1 - y0 + line,
    );
}

fn report_error(notice: RwSignal<Option<String>>, result: Result<(), String>) {
    notice.set(result.err().map(|e| format!("Export failed: {e}")));
}

fn swatch(color: String, label: String) -> impl IntoView {
    view! {
        <span class="legend-item"><span class="legend-swatch fill" style:background-color=color></span>{label}</span>
    }
}

fn lifetime_text(start: u64, end: u64) -> String {
    let end = end.max(start);
    format!(
        "positions {start}–{end} ({} positions)",
        group_digits(end - start + 1)
    )
}

fn padding_note(padded: u64, unpadded: u64) -> Option<String> {
    (padded > unpadded).then(|| {
        format!(
            " · unpadded {} (+{} padding)",
            format_bytes(unpadded),
            percent(padded - unpadded, unpadded.max(1)).unwrap_or_default()
        )
    })
}

fn flag_text(flag: Flag, b: &oomscope_report::BufferLifetime) -> String {
    let gradient = if looks_like_gradient(&b.op_name, &b.name) {
        "Gradient-like buffer "
    } else {
        "Buffer "
    };
    match flag {
        Flag::HeldToEnd => format!(
            "⚑ {gradient}held to the end of the program (an output, or kept alive): its memory is never reused after its last use. In-place sharding or donation mistakes keep gradients alive like this."
        ),
        Flag::LongLived => format!("⚑ {gradient}live for more than half the program, across the peak."),
    }
}

const CSV_HEADER: [&str; 13] = [
    "name",
    "shape",
    "size_bytes",
    "unpadded_bytes",
    "padding_bytes",
    "category",
    "start",
    "end",
    "offset_bytes",
    "op_name",
    "opcode",
    "source",
    "flag",
];

fn csv_row(module: &ModuleReport, index: &TimelineIndex, buffer: u32) -> Vec<String> {
    let b = &module.buffers[buffer as usize];
    vec![
        b.name.clone(),
        b.shape.clone(),
        b.size_bytes.to_string(),
        b.unpadded_bytes.to_string(),
        b.size_bytes.saturating_sub(b.unpadded_bytes).to_string(),
        category_name(b.category).to_string(),
        b.start.to_string(),
        b.end.to_string(),
        index.band_of[buffer as usize]
            .map(|i| index.bands[i as usize].y0)
            .unwrap_or(0)
            .to_string(),
        b.op_name.clone(),
        b.opcode.clone(),
        b.source.clone(),
        index.flags[buffer as usize]
            .map(|f| f.label().to_string())
            .unwrap_or_default(),
    ]
}

#[component]
fn PinnedBuffer(
    module: Arc<ModuleReport>,
    index: Arc<TimelineIndex>,
    buffer: u32,
    on_close: impl Fn() + 'static,
) -> impl IntoView {
    let Some(b) = module.buffers.get(buffer as usize) else {
        return ().into_any();
    };
    let end = b.end.max(b.start);
    let name_at = |p: u64| {
        module
            .instructions
            .get(p as usize)
            .filter(|s| !s.is_empty())
            .cloned()
    };
    let defined = name_at(b.start);
    // A heap-simulator trace names a free event after the freed buffer's own
    // instruction; the instruction that last used it is then the nearest
    // earlier position naming another one. A dump's positions are the
    // instructions themselves.
    let last_use = match name_at(end) {
        Some(own) if end > b.start && defined.as_ref() == Some(&own) => (b.start..end)
            .rev()
            .find_map(|p| name_at(p).filter(|n| *n != own))
            .map(|n| format!("{n} (the instruction before its free at {end})")),
        other => other,
    };
    let during: Vec<(u64, String)> = (b.start..=end)
        .take(INSTRUCTION_ROWS)
        .filter_map(|p| name_at(p).map(|n| (p, n)))
        .collect();
    let more = (end - b.start + 1).saturating_sub(INSTRUCTION_ROWS as u64);
    let flag = index.flags.get(buffer as usize).copied().flatten();
    let (start, name) = (b.start, b.name.clone());
    view! {
        <div class="timeline-pinned" data-buffer=name.clone() aria-label="Pinned buffer">
            <div class="pinned-head">
                <strong class="mono">{name.clone()}</strong>
                <button type="button" class="button small secondary" on:click=move |_| on_close()>"Unpin"</button>
            </div>
            <dl class="pinned-facts">
                <div><dt>"Shape"</dt><dd class="mono">{b.shape.clone()}</dd></div>
                <div><dt>"Size"</dt><dd><Bytes value=b.size_bytes/>{padding_note(b.size_bytes, b.unpadded_bytes)}</dd></div>
                <div><dt>"Kind"</dt><dd>{category_name(b.category)}</dd></div>
                <div><dt>"Lifetime"</dt><dd>{lifetime_text(b.start, b.end)}</dd></div>
                <div><dt>"Defined by"</dt><dd class="mono" data-field="defined">{defined.unwrap_or_else(|| "(not recorded)".into())}</dd></div>
                <div><dt>"Last used by"</dt><dd class="mono" data-field="last-use">{last_use.unwrap_or_else(|| "(not recorded)".into())}</dd></div>
                {(!b.op_name.is_empty()).then(|| view! { <div><dt>"Op"</dt><dd class="mono">{b.op_name.clone()}</dd></div> })}
                {(!b.source.is_empty()).then(|| view! { <div><dt>"Source"</dt><dd class="mono">{b.source.clone()}</dd></div> })}
            </dl>
            {flag.map(|f| view! { <p class="tt-flag">{flag_text(f, b)}</p> })}
            {(!during.is_empty()).then(|| view! {
                <details class="pinned-instructions">
                    <summary>{format!("Instructions while it is live ({})", group_digits(end - start + 1))}</summary>
                    <ol>
                        {during.into_iter().map(|(p, n)| {
                            let role = if p == start { " — defines it" } else if p == end { " — last use" } else { "" };
                            view! { <li value=p.to_string()><span class="mono">{n}</span>{role}</li> }
                        }).collect_view()}
                    </ol>
                    {(more > 0).then(|| view! { <p class="muted">{format!("… and {} more", group_digits(more))}</p> })}
                </details>
            })}
        </div>
    }
    .into_any()
}

#[component]
fn PeakTable<F>(
    module: Arc<ModuleReport>,
    index: Arc<TimelineIndex>,
    pinned: RwSignal<Option<u32>>,
    flagged: usize,
    focus: F,
) -> impl IntoView
where
    F: Fn(u32) + Clone + Send + Sync + 'static,
{
    let total = index.peak_live.len();
    let show_all = RwSignal::new(false);
    // Pinning from the chart scrolls the table to the buffer's row.
    Effect::new(move |_| {
        let Some(buffer) = pinned.get() else { return };
        let Some(document) = web_sys::window().and_then(|w| w.document()) else {
            return;
        };
        // Scroll the table's own box, never the page: the reader is
        // looking at the chart (or at the view that asked for the buffer).
        let row = document
            .query_selector(&format!("table.timeline-peak tr[data-index=\"{buffer}\"]"))
            .ok()
            .flatten();
        let container = row
            .as_ref()
            .and_then(|r| r.closest(".timeline-table").ok().flatten());
        if let (Some(row), Some(container)) = (row, container) {
            let below = row.get_bounding_client_rect().top() - container.get_bounding_client_rect().top();
            let centred = f64::from(container.scroll_top()) + below - f64::from(container.client_height()) / 2.0;
            container.set_scroll_top(centred.max(0.0) as i32);
        }
    });
    let rows = move || {
        let shown = if show_all.get() {
            total
        } else {
            total.min(PEAK_ROWS)
        };
        index.peak_live[..shown]
            .iter()
            .map(|&i| {
                let b = &module.buffers[i as usize];
                let flag = index.flags[i as usize];
                let focus = focus.clone();
                let focus_key = focus.clone();
                view! {
                    <tr data-index=i.to_string() data-buffer=b.name.clone() tabindex="0"
                        class:selected=move || pinned.get() == Some(i)
                        aria-selected=move || (pinned.get() == Some(i)).to_string()
                        on:click=move |_| focus(i)
                        on:keydown=move |ev: ev::KeyboardEvent| if ev.key() == "Enter" { focus_key(i) }>
                        <td class="mono" title=b.name.clone()>{b.name.clone()}</td>
                        <td class="num"><Bytes value=b.size_bytes/></td>
                        <td class="num">{percent(b.size_bytes, module.peak_bytes).unwrap_or_default()}</td>
                        <td class="num">{(b.size_bytes > b.unpadded_bytes).then(|| view! { <Bytes value=b.size_bytes - b.unpadded_bytes/> })}</td>
                        <td>{category_name(b.category)}</td>
                        <td class="num">{format!("{}–{}", b.start, b.end.max(b.start))}</td>
                        <td>{flag.map(|f| view! { <span class="flag" title=flag_text(f, b)>{"⚑ "}{f.label()}</span> })}</td>
                        <td class="mono shape">{b.shape.clone()}</td>
                        <td class="mono" title=b.op_name.clone()>{b.op_name.clone()}</td>
                        <td class="mono">{b.source.clone()}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <h4 class="subhead">
            {format!("Buffers live at the peak ({total})")}
            {(flagged > 0).then(|| view! { <span class="flag-count">{format!(" · ⚑ {flagged} flagged as holding memory long")}</span> })}
        </h4>
        <div class="table-scroll timeline-table">
            <table class="data timeline-peak">
                <TableHead columns=vec![
                    ("Buffer", false), ("Size", true), ("Of peak", true), ("Padding", true), ("Kind", false),
                    ("Lifetime", true), ("Flag", false), ("Shape", false), ("Operation", false), ("Source", false),
                ]/>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <Show when=move || { !show_all.get() && total > PEAK_ROWS }>
            <button type="button" class="button small secondary" on:click=move |_| show_all.set(true)>
                {format!("Show all {total} buffers")}
            </button>
        </Show>
    }
}
