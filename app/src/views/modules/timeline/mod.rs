//! The buffer-lifetime timeline of one module: program order (x) against
//! memory (y), every buffer a band from its definition to its last use at
//! its offset, with the heap and unpadded-heap envelopes, the HBM limit and
//! the peak. Explorable like a profiler: Ctrl/⌘ + wheel zooms, drag pans,
//! shift-drag zooms to a selection, W/S zoom, A/D pan, F fits, Escape
//! unpins; hovering shows a buffer, clicking pins it with the instructions
//! that define and last use it; search by name, shape or op; the buffers
//! live at the peak in a table linked both ways with the chart; flags for
//! buffers that hold memory to the end of the program; export as SVG, PNG
//! and CSV.
//!
//! The parts: [`viewport`] (which positions are visible; pure),
//! [`canvas`] (the draw loop), [`input`] (pointer, wheel, keys),
//! [`tooltip`], [`pinned`] (the pinned buffer's card), [`peak_table`],
//! [`exports`]; [`index`] and [`render`] are the data structure and the
//! drawing they share. They meet in [`TimelineCtx`].
//!
//! Speed: [`index::TimelineIndex`] is built once per module; the raster
//! renderer ([`render::rasterize`]) draws 200k bands at display rate, which
//! a general chart library cannot.

mod canvas;
mod describe;
mod exports;
pub mod index;
mod input;
mod peak_table;
mod pinned;
pub mod render;
mod tooltip;
pub mod viewport;

use std::sync::Arc;

use leptos::html;
use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::ModuleReport;

use crate::export;
use crate::format::group_digits;
use crate::state::{use_state, Selection};
use index::{category_name, TimelineIndex, CATEGORIES};
use render::{ColourBy, Frame};
use viewport::Viewport;

/// Canvas height in CSS pixels.
const HEIGHT: f64 = 460.0;
/// Narrowest canvas drawn, in CSS pixels (narrower screens scroll it).
const MIN_WIDTH: f64 = 320.0;
/// Search results listed.
const SEARCH_ROWS: usize = 30;

#[derive(Debug, Clone, PartialEq)]
struct Search {
    /// Per buffer: matched.
    mask: Vec<bool>,
    hits: Vec<u32>,
}

/// The signals of the user's view of the timeline.
#[derive(Clone, Copy)]
struct Signals {
    view: RwSignal<Viewport>,
    colour_by: RwSignal<ColourBy>,
    search: Memo<Option<Arc<Search>>>,
    peak_only: RwSignal<bool>,
    /// The hovered buffer and the pointer's place in the canvas.
    hover: RwSignal<Option<(u32, f64, f64)>>,
    pinned: RwSignal<Option<u32>>,
    /// A shift-drag selection of positions.
    selection: RwSignal<Option<(f64, f64)>>,
    /// The canvas's CSS width at the last frame.
    width: RwSignal<f64>,
    notice: RwSignal<Option<String>>,
}

/// What the timeline's parts share.
#[derive(Clone)]
struct TimelineCtx {
    module: Arc<ModuleReport>,
    index: Arc<TimelineIndex>,
    peak_mask: Arc<Vec<bool>>,
    limit: Option<u64>,
    y_max: f64,
    canvas: NodeRef<html::Canvas>,
    signals: Signals,
}

impl TimelineCtx {
    fn total(&self) -> f64 {
        self.index.positions as f64
    }

    /// The frame of a canvas `width` CSS pixels wide at the current view.
    fn frame(&self, width: f64) -> Frame {
        let view = self.signals.view.get_untracked();
        Frame {
            width,
            height: HEIGHT,
            x0: view.x0,
            x1: view.x1,
            y_max: self.y_max,
        }
    }

    /// The buffers shown in full colour (the others fade), and an id that
    /// changes when they do.
    fn emphasis<'a>(&'a self, search: &'a Option<Arc<Search>>) -> (Option<&'a [bool]>, usize) {
        match (search, self.signals.peak_only.get_untracked()) {
            (Some(s), _) => (Some(&s.mask), Arc::as_ptr(s) as usize),
            (None, true) => (Some(&self.peak_mask), 1),
            (None, false) => (None, 0),
        }
    }

    /// Pins `buffer` and brings it into view.
    fn focus(&self, buffer: u32) {
        let s = self.signals;
        s.pinned.set(Some(buffer));
        if let Some(b) = self.module.buffers.get(buffer as usize) {
            let (start, end) = (b.start as f64, b.end.max(b.start) as f64 + 1.0);
            let view = s.view.get_untracked();
            let next = view.revealing(start, end);
            if next != view {
                s.view.set(next);
            }
        }
    }

    /// File names of exports start with this.
    fn stem(&self) -> String {
        export::file_stem(&self.module.display_name())
    }

    fn report(&self, result: Result<(), String>) {
        self.signals
            .notice
            .set(result.err().map(|e| format!("Export failed: {e}")));
    }
}

/// The legend's entries for a colouring: (colour, label).
fn legend_entries(index: &TimelineIndex, colour_by: ColourBy) -> Vec<(String, String)> {
    let entries: Vec<(String, String)> = match colour_by {
        ColourBy::Category => CATEGORIES
            .iter()
            .enumerate()
            .filter(|(i, _)| index.bands.iter().any(|b| usize::from(b.category) == *i))
            .map(|(i, c)| {
                (
                    render::hex(render::CATEGORY_COLORS[i]),
                    category_name(*c).to_string(),
                )
            })
            .collect(),
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
                (render::hex(render::OP_COLORS[i]), label)
            })
            .collect(),
    };
    entries
}

#[component]
pub fn Timeline(module: ModuleReport, limit: Option<u64>) -> impl IntoView {
    if module.buffers.is_empty() {
        return ().into_any();
    }
    // The buffers live for the whole program (parameters, outputs,
    // constants) join the module's own, so that every buffer at the peak
    // is drawn, listed, searched and pinned alike.
    let mut module = module;
    let whole = index::add_whole_program(&mut module);
    let module = Arc::new(module);
    let index = Arc::new(TimelineIndex::with_whole_program(&module, whole));
    let full = Viewport::full(index.positions as f64);
    let y_max = render::y_axis_max(index.top_bytes.max(limit.unwrap_or(0)));
    let query = RwSignal::new(String::new());
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
            crate::sort::sort_by(&mut hits, |a, b| {
                module.buffers[*b as usize]
                    .size_bytes
                    .cmp(&module.buffers[*a as usize].size_bytes)
            });
            Some(Arc::new(Search { mask, hits }))
        })
    };
    let mut peak_mask = vec![false; module.buffers.len()];
    for &i in &index.peak_live {
        peak_mask[i as usize] = true;
    }
    let ctx = TimelineCtx {
        module: module.clone(),
        index: index.clone(),
        peak_mask: Arc::new(peak_mask),
        limit,
        y_max,
        canvas: NodeRef::new(),
        signals: Signals {
            view: RwSignal::new(full),
            colour_by: RwSignal::new(ColourBy::Category),
            search,
            peak_only: RwSignal::new(false),
            hover: RwSignal::new(None),
            pinned: RwSignal::new(None),
            selection: RwSignal::new(None),
            width: RwSignal::new(0.0),
            notice: RwSignal::new(None),
        },
    };
    let s = ctx.signals;
    canvas::start(&ctx);
    follow_buffer_focus(&ctx);
    share_pinned_buffer(&ctx);
    let handlers = input::Handlers::new(&ctx);

    let zoom_by = move |factor: f64| s.view.update(|v| *v = v.zoomed(factor, v.centre()));
    let export_svg = {
        let ctx = ctx.clone();
        move |_| ctx.report(exports::save_svg(&ctx))
    };
    let export_png = {
        let ctx = ctx.clone();
        move |_| ctx.report(exports::save_png(&ctx))
    };
    let export_csv = {
        let ctx = ctx.clone();
        move |_| ctx.report(exports::save_csv(&ctx))
    };

    // Text around the chart.
    let range_text = move || {
        let v = s.view.get();
        format!(
            "positions {}–{} of {}",
            v.x0.floor() as u64,
            v.x1.ceil() as u64,
            v.total as u64
        )
    };
    let placement_note = match index.placement {
        index::Placement::Compiler => "bands at the compiler's buffer offsets",
        index::Placement::Packed => "bands packed first-fit (the input gives no buffer offsets)",
    };
    // A shared report carries only the largest buffers live at the peak.
    let shared = use_state()
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
        move || {
            legend_entries(&index, s.colour_by.get())
                .into_iter()
                .map(|(colour, label)| swatch(colour, label))
                .collect_view()
        }
    };
    let pinned_panel = {
        let (module, index) = (module.clone(), index.clone());
        move || {
            let buffer = s.pinned.get()?;
            Some(
                view! { <pinned::PinnedBuffer module=module.clone() index=index.clone() buffer=buffer on_close=move || s.pinned.set(None)/> },
            )
        }
    };
    let search_results = search_results(&ctx);
    let flagged = index.flags.iter().filter(|f| f.is_some()).count();
    let description = format!(
        "Buffer lifetimes of {}: {} buffers over {} program positions, peak {} at position {}. Arrow keys or A and D pan, W and S zoom, F fits.",
        module.display_name(),
        group_digits(module.buffers.len() as u64),
        full.total as u64,
        format_bytes(module.peak_bytes),
        module.peak_position
    );
    let input::Handlers {
        wheel,
        pointer_down,
        pointer_move,
        pointer_up,
        key_down,
    } = handlers;

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
                    <select id="timeline-colour" on:change=move |ev| s.colour_by.set(if event_target_value(&ev) == "op" { ColourBy::Op } else { ColourBy::Category })>
                        <option value="category">"category"</option>
                        <option value="op">"op"</option>
                    </select>
                </label>
                <label class="check">
                    <input id="timeline-peak" type="checkbox" prop:checked=move || s.peak_only.get() on:change=move |ev| s.peak_only.set(event_target_checked(&ev))/>
                    <span>"Highlight buffers live at the peak"</span>
                </label>
                <span class="toolbar-gap"></span>
                <button type="button" class="button small secondary" on:click=move |_| zoom_by(0.5) aria-label="Zoom in">"+"</button>
                <button type="button" class="button small secondary" on:click=move |_| zoom_by(2.0) aria-label="Zoom out">"−"</button>
                <button type="button" class="button small secondary" id="timeline-reset" on:click=move |_| s.view.set(full)>"Reset zoom"</button>
                <button type="button" class="button small secondary" on:click=export_svg>"SVG"</button>
                <button type="button" class="button small secondary" on:click=export_png>"PNG"</button>
                <button type="button" class="button small secondary" on:click=export_csv>"CSV"</button>
            </div>
            {search_results}
            {move || s.notice.get().map(|n| view! { <p class="error-message" role="alert">{n}</p> })}
            <div class="timeline-stage">
                <canvas
                    node_ref=ctx.canvas
                    class="timeline-canvas"
                    tabindex="0"
                    role="img"
                    aria-label=description
                    on:wheel=wheel
                    on:pointerdown=pointer_down
                    on:pointermove=pointer_move
                    on:pointerup=pointer_up
                    on:pointerleave=move |_| s.hover.set(None)
                    on:keydown=key_down
                ></canvas>
                {tooltip::tooltip(&ctx)}
            </div>
            <div class="timeline-foot">
                <span class="legend">{legend}
                    <span class="legend-item"><span class="legend-swatch line" style:border-color=render::HEAP></span>"heap"</span>
                    <span class="legend-item"><span class="legend-swatch line dashed" style:border-color=render::UNPADDED></span>"heap, unpadded"</span>
                </span>
                <span class="muted timeline-range" aria-live="polite">{range_text}</span>
            </div>
            <p class="muted timeline-help">"Ctrl (⌘) + scroll to zoom, drag to pan, shift-drag to zoom to a range, click a buffer to pin it. Keys: W/S zoom, A/D pan, F fit, Esc unpin."</p>
            {pinned_panel}
            <peak_table::PeakTable ctx=ctx.clone() flagged=flagged/>
        </section>
    }
    .into_any()
}

/// Another view (the padding table, the tree, a link) asked to show a
/// buffer of this module: pin it.
fn follow_buffer_focus(ctx: &TimelineCtx) {
    let ctx = ctx.clone();
    let buffer_focus = use_state().buffer_focus;
    Effect::new(move |_| {
        let Some(focus) = buffer_focus.get() else {
            return;
        };
        let module = &ctx.module;
        if focus.module != module.display_name() || focus.memory_space != module.memory_space {
            return;
        }
        let found = module.buffers.iter().position(|b| match focus.buffer_id {
            Some(id) => b.id == id,
            None => b.name == focus.buffer_name,
        });
        if let Some(i) = found {
            ctx.focus(i as u32);
        }
    });
}

/// The pinned buffer is the selection a link carries.
fn share_pinned_buffer(ctx: &TimelineCtx) {
    let (module, pinned) = (ctx.module.clone(), ctx.signals.pinned);
    let open_view = use_state().open_view;
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

/// The search's matches, largest first, each pinning its buffer.
fn search_results(ctx: &TimelineCtx) -> impl Fn() -> Option<AnyView> + Send + Sync + 'static {
    let ctx = ctx.clone();
    move || {
        let result = ctx.signals.search.get()?;
        let total = result.hits.len();
        let items = result
            .hits
            .iter()
            .take(SEARCH_ROWS)
            .map(|&i| {
                let b = &ctx.module.buffers[i as usize];
                let ctx = ctx.clone();
                view! {
                    <li>
                        <button type="button" class="link-button" data-buffer=b.name.clone() on:click=move |_| ctx.focus(i)>
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
        }.into_any())
    }
}

fn swatch(color: String, label: String) -> impl IntoView {
    view! {
        <span class="legend-item"><span class="legend-swatch fill" style:background-color=color></span>{label}</span>
    }
}
