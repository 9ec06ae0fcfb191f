//! Padding waste: what TPU tiled layouts cost, where, and how to get it
//! back. Per module (or, without a module, per OOM event's listed
//! allocations): padding at the peak as bytes and % of the peak; charts of
//! the buffers and the shapes (or ops, or source lines) that waste most,
//! padded against unpadded; a sortable table per buffer or grouped; the
//! per-dimension breakdown of a selected buffer's shape; the fix suggestions
//! with their estimated savings. A buffer row shows the buffer in the
//! module's timeline (through [`AppState::buffer_focus`]). Exports: SVG and
//! PNG of the charts, CSV of the table.
//!
//! All numbers come from the analyzer: the report's sizes (the compiler's
//! own) and the layout model (`oomscope_layout`: grouping, per-dimension
//! costs, suggestions) applied to shapes the report carries.
//!
//! [`AppState::buffer_focus`]: crate::state::AppState

pub mod bars;

use std::sync::Arc;

use leptos::html;
use leptos::prelude::*;
use oomscope_layout::{
    dimension_breakdown, group_buffers, parse_shape, size_of, suggest_fix, BufferPadding, GroupBy,
    Shape,
};
use oomscope_report::units::format_bytes;
use oomscope_report::{PaddingSummary, Report};

use crate::export::{self, SvgWriter};
use crate::format::{base_name, group_digits, memory_space_name, percent, Bytes};
use crate::state::{use_state, BufferFocus, Selection};
use crate::views::steps::plot::paint_canvas;
use bars::Bar;

/// Bars per chart.
const CHART_BARS: usize = 12;
/// Table rows before "show all".
const TABLE_ROWS: usize = 100;
/// Width of the SVG export.
const SVG_WIDTH: f64 = 1100.0;

/// What the view analyses: one module, or one OOM event's listed allocations.
#[derive(Debug, Clone)]
struct Subject {
    title: String,
    /// The peak the padding is a share of (module peak, or the OOM's used bytes).
    peak_bytes: Option<u64>,
    peak_unpadded_bytes: Option<u64>,
    summary: PaddingSummary,
    /// Buffers with padding.
    buffers: Vec<BufferPadding>,
    /// Every buffer considered, padded or not.
    buffer_count: usize,
    /// `(display name, memory space)` when the buffers are a module's.
    module: Option<(String, i64)>,
    /// The module has buffer lifetimes (a timeline to show a buffer in).
    has_timeline: bool,
}

impl Subject {
    /// The index in `buffers` of the buffer `focus` names, if this subject
    /// holds it (with padding: only padded buffers are listed).
    fn find(&self, focus: &BufferFocus) -> Option<usize> {
        match &self.module {
            Some((module, space)) => {
                if focus.module != *module || focus.memory_space != *space {
                    return None;
                }
                self.buffers.iter().position(|b| focus.is(b.id, &b.name))
            }
            // An event's allocations carry their listing rank as the id.
            None => {
                let rank = i64::from(focus.listing_rank?);
                if !focus.module.is_empty() {
                    return None;
                }
                self.buffers.iter().position(|b| b.id == Some(rank))
            }
        }
    }
}

/// Whether the padding view lists the buffer `focus` names (for links to it).
pub fn lists_buffer(report: &Report) -> impl Fn(&BufferFocus) -> bool {
    let subjects = subjects(report);
    move |focus| subjects.iter().any(|s| s.find(focus).is_some())
}

fn subjects(report: &Report) -> Vec<Subject> {
    let modules: Vec<Subject> = report
        .modules
        .iter()
        .filter_map(|m| {
            let summary = m.padding.clone()?;
            if summary.total_padding_bytes == 0 && summary.peak_padding_bytes == 0 {
                return None;
            }
            let all = oomscope_layout::buffer_padding(m);
            let buffer_count = all.len();
            Some(Subject {
                title: format!(
                    "{} · {}",
                    m.display_name(),
                    memory_space_name(m.memory_space)
                ),
                peak_bytes: Some(m.peak_bytes),
                peak_unpadded_bytes: Some(m.peak_unpadded_bytes),
                summary,
                buffers: all.into_iter().filter(|b| b.padding_bytes > 0).collect(),
                buffer_count,
                module: Some((m.display_name(), m.memory_space)),
                has_timeline: !m.buffers.is_empty(),
            })
        })
        .collect();
    if !modules.is_empty() {
        return modules;
    }
    report
        .oom_events
        .iter()
        .filter_map(|e| {
            let summary = e.padding.clone()?;
            let all: Vec<BufferPadding> = e
                .top_allocations
                .iter()
                .map(|a| {
                    // The model's exact sizes (the log's are rounded), as the
                    // analyzer's event padding uses them.
                    let (padded, unpadded) = match size_of(&a.shape) {
                        Ok(size) => (size.padded_bytes, size.unpadded_bytes),
                        Err(_) => (
                            a.size_bytes,
                            a.unpadded_bytes
                                .or(a.padding_bytes.map(|p| a.size_bytes.saturating_sub(p)))
                                .unwrap_or(a.size_bytes),
                        ),
                    };
                    BufferPadding {
                        // The rank stands for the id: it is how the
                        // decision tree cites a listed allocation.
                        id: Some(i64::from(a.rank)),
                        name: a
                            .xla_label
                            .clone()
                            .unwrap_or_else(|| format!("allocation #{}", a.rank)),
                        shape: a.shape.clone(),
                        op_name: a.op_name.clone().unwrap_or_default(),
                        source: a.source.clone().unwrap_or_default(),
                        padded_bytes: padded,
                        unpadded_bytes: unpadded,
                        padding_bytes: padded.saturating_sub(unpadded),
                        expansion: if unpadded > 0 {
                            padded as f64 / unpadded as f64
                        } else {
                            1.0
                        },
                    }
                })
                .collect();
            let buffer_count = all.len();
            Some(Subject {
                title: format!("OOM in {} (line {})", base_name(&e.input), e.line),
                peak_bytes: e.used_bytes,
                peak_unpadded_bytes: None,
                summary,
                buffers: all.into_iter().filter(|b| b.padding_bytes > 0).collect(),
                buffer_count,
                module: None,
                has_timeline: false,
            })
        })
        .collect()
}

#[component]
pub fn PaddingView(report: Arc<Report>) -> impl IntoView {
    let subjects = subjects(&report);
    if subjects.is_empty() {
        return ().into_any();
    }
    let first = subjects
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| (s.summary.peak_padding_bytes, s.summary.total_padding_bytes))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let chosen = RwSignal::new(first);
    let from_event = subjects[0].module.is_none();
    let subjects = Arc::new(subjects);
    // Another view asked to show a buffer: open the module (or OOM event)
    // that lists it; its table selects the row.
    {
        let subjects = subjects.clone();
        let buffer_focus = use_state().buffer_focus;
        Effect::new(move |_| {
            let Some(focus) = buffer_focus.get() else {
                return;
            };
            if let Some(i) = subjects.iter().position(|s| s.find(&focus).is_some()) {
                if chosen.get_untracked() != i {
                    chosen.set(i);
                }
            }
        });
    }
    let picker = (subjects.len() > 1).then(|| {
        let options = subjects
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let label = format!(
                    "{} — padding at the peak {}",
                    s.title,
                    format_bytes(s.summary.peak_padding_bytes)
                );
                view! { <option value=i.to_string() selected=i == first>{label}</option> }
            })
            .collect_view();
        view! {
            <div class="pickers">
                <label class="grow">
                    <span>{if from_event { "OOM event" } else { "Module" }}</span>
                    <select id="padding-module" prop:value=move || chosen.get().to_string() on:change=move |ev| {
                        if let Ok(i) = event_target_value(&ev).parse::<usize>() {
                            chosen.set(i);
                        }
                    }>{options}</select>
                </label>
            </div>
        }
    });
    let body = move || {
        let subject = subjects.get(chosen.get())?.clone();
        Some(view! { <SubjectView subject=subject/> })
    };
    view! {
        <section class="card" id="padding" aria-labelledby="padding-title">
            <div class="section-head">
                <h2 id="padding-title">"Padding waste"</h2>
                <span class="muted">
                    {if from_event {
                        "the allocations the OOM message lists, sized by the TPU layout model"
                    } else {
                        "bytes lost to tiled layouts (the compiler's padded vs unpadded sizes)"
                    }}
                </span>
            </div>
            {picker}
            {body}
        </section>
    }
    .into_any()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Grouping {
    Buffer,
    Shape,
    Op,
    Source,
}

impl Grouping {
    const ALL: [Grouping; 4] = [
        Grouping::Buffer,
        Grouping::Shape,
        Grouping::Op,
        Grouping::Source,
    ];
    fn label(self) -> &'static str {
        match self {
            Grouping::Buffer => "buffer",
            Grouping::Shape => "shape",
            Grouping::Op => "op",
            Grouping::Source => "source line",
        }
    }
    fn by(self) -> Option<GroupBy> {
        match self {
            Grouping::Buffer => None,
            Grouping::Shape => Some(GroupBy::Shape),
            Grouping::Op => Some(GroupBy::OpName),
            Grouping::Source => Some(GroupBy::Source),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
    Name,
    Count,
    Padded,
    Unpadded,
    Waste,
    Expansion,
}

/// One table row: a buffer, or a group of buffers.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    key: String,
    /// The shape, for buffers and shape groups.
    shape: String,
    count: u64,
    padded: u64,
    unpadded: u64,
    waste: u64,
    expansion: f64,
    op: String,
    source: String,
    /// Index into the subject's buffers, for a buffer row.
    buffer: Option<usize>,
}

fn rows_of(subject: &Subject, grouping: Grouping) -> Vec<Row> {
    match grouping.by() {
        None => subject
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| Row {
                key: if b.name.is_empty() {
                    b.shape.clone()
                } else {
                    b.name.clone()
                },
                shape: b.shape.clone(),
                count: 1,
                padded: b.padded_bytes,
                unpadded: b.unpadded_bytes,
                waste: b.padding_bytes,
                expansion: b.expansion,
                op: b.op_name.clone(),
                source: b.source.clone(),
                buffer: Some(i),
            })
            .collect(),
        Some(by) => group_buffers(&subject.buffers, by)
            .into_iter()
            .map(|g| Row {
                shape: if by == GroupBy::Shape {
                    g.key.clone()
                } else {
                    String::new()
                },
                key: if g.key.is_empty() {
                    "(unknown)".to_string()
                } else {
                    g.key
                },
                count: g.count,
                padded: g.padded_bytes,
                unpadded: g.unpadded_bytes,
                waste: g.padding_bytes,
                expansion: g.expansion,
                op: String::new(),
                source: String::new(),
                buffer: None,
            })
            .collect(),
    }
}

fn sort_rows(rows: &mut [Row], key: SortKey, descending: bool) {
    rows.sort_by(|a, b| {
        let order = match key {
            SortKey::Name => a.key.cmp(&b.key),
            SortKey::Count => a.count.cmp(&b.count),
            SortKey::Padded => a.padded.cmp(&b.padded),
            SortKey::Unpadded => a.unpadded.cmp(&b.unpadded),
            SortKey::Waste => a.waste.cmp(&b.waste),
            SortKey::Expansion => a.expansion.total_cmp(&b.expansion),
        };
        let order = if descending { order.reverse() } else { order };
        order
            .then_with(|| b.waste.cmp(&a.waste))
            .then_with(|| a.key.cmp(&b.key))
    });
}

fn bars_of(rows: &[Row]) -> Vec<Bar> {
    let mut sorted = rows.to_vec();
    sort_rows(&mut sorted, SortKey::Waste, true);
    sorted
        .into_iter()
        .take(CHART_BARS)
        .map(|r| Bar {
            label: r.key,
            padded: r.padded,
            unpadded: r.unpadded,
        })
        .collect()
}

#[component]
fn SubjectView(subject: Subject) -> impl IntoView {
    let subject = Arc::new(subject);
    let grouping = RwSignal::new(Grouping::Buffer);
    let sort = RwSignal::new((SortKey::Waste, true));
    let show_all = RwSignal::new(false);
    let selected: RwSignal<Option<Row>> = RwSignal::new(None);
    let notice: RwSignal<Option<String>> = RwSignal::new(None);
    let buffer_focus = use_state().buffer_focus;
    let open_view = use_state().open_view;

    let buffer_rows = Arc::new(rows_of(&subject, Grouping::Buffer));
    let rows = {
        let subject = subject.clone();
        Memo::new(move |_| {
            let mut rows = rows_of(&subject, grouping.get());
            let (key, descending) = sort.get();
            sort_rows(&mut rows, key, descending);
            rows
        })
    };
    let group_bars = {
        let subject = subject.clone();
        Memo::new(move |_| {
            let g = match grouping.get() {
                Grouping::Buffer => Grouping::Shape,
                other => other,
            };
            (g, bars_of(&rows_of(&subject, g)))
        })
    };
    let buffer_bars = bars_of(&buffer_rows);

    // Charts.
    let buffer_canvas: NodeRef<html::Canvas> = NodeRef::new();
    let group_canvas: NodeRef<html::Canvas> = NodeRef::new();
    let buffer_title = format!("Padding by buffer (largest {})", buffer_bars.len());
    let group_title =
        move |g: Grouping, n: usize| format!("Padding by {} (largest {n})", g.label());
    {
        let (bars, title) = (buffer_bars.clone(), buffer_title.clone());
        let resized = window_resize_counter();
        Effect::new(move |_| {
            resized.track();
            if let Some(c) = buffer_canvas.get() {
                paint_canvas(&c, bars::height(bars.len()), |p, w| {
                    bars::draw(p, 0.0, w, &title, &bars);
                });
            }
        });
    }
    {
        let resized = window_resize_counter();
        Effect::new(move |_| {
            resized.track();
            let (g, bars) = group_bars.get();
            if let Some(c) = group_canvas.get() {
                paint_canvas(&c, bars::height(bars.len()), |p, w| {
                    bars::draw(p, 0.0, w, &group_title(g, bars.len()), &bars);
                });
            }
        });
    }
    let stem = export::file_stem(&format!(
        "oomscope-padding-{}",
        subject.title.split(' ').next().unwrap_or("")
    ));
    let export_svg = {
        let (bars, title, stem) = (buffer_bars.clone(), buffer_title.clone(), stem.clone());
        move |_| {
            let (g, group) = group_bars.get_untracked();
            let (h1, h2) = (bars::height(bars.len()), bars::height(group.len()));
            let mut svg = SvgWriter::new(SVG_WIDTH, h1 + h2);
            bars::draw(&mut svg, 0.0, SVG_WIDTH, &title, &bars);
            bars::draw(
                &mut svg,
                h1,
                SVG_WIDTH,
                &group_title(g, group.len()),
                &group,
            );
            notice.set(
                export::download_text(&format!("{stem}.svg"), "image/svg+xml", &svg.finish()).err(),
            );
        }
    };
    let export_png = {
        let stem = stem.clone();
        move |_| {
            if let Some(c) = buffer_canvas.get_untracked() {
                notice.set(export::download_canvas_png(&format!("{stem}.png"), &c).err());
            }
        }
    };
    let export_csv = {
        let stem = stem.clone();
        move |_| {
            let g = grouping.get_untracked();
            let text = export::csv(
                &[
                    g.label(),
                    "shape",
                    "buffers",
                    "padded_bytes",
                    "unpadded_bytes",
                    "padding_bytes",
                    "expansion",
                    "op_name",
                    "source",
                ],
                rows.get_untracked().into_iter().map(|r| {
                    vec![
                        r.key,
                        r.shape,
                        r.count.to_string(),
                        r.padded.to_string(),
                        r.unpadded.to_string(),
                        r.waste.to_string(),
                        format!("{:.4}", r.expansion),
                        r.op,
                        r.source,
                    ]
                }),
            );
            notice.set(
                export::download_text(
                    &format!("{stem}-by-{}.csv", g.label().replace(' ', "-")),
                    "text/csv",
                    &text,
                )
                .err(),
            );
        }
    };

    // Selecting a row: breakdown here, and the buffer in the timeline.
    let select = {
        let subject = subject.clone();
        move |row: Row| {
            if let (Some(i), Some((module, space))) = (row.buffer, subject.module.as_ref()) {
                if let Some(b) = subject.buffers.get(i) {
                    // The selection a link carries (the module view follows
                    // the focus to this module and records it).
                    open_view.update(|v| v.selection = Selection::of_buffer(b.id, &b.name).text());
                    buffer_focus.set(Some(BufferFocus {
                        module: module.clone(),
                        memory_space: *space,
                        buffer_id: b.id,
                        buffer_name: b.name.clone(),
                        listing_rank: None,
                    }));
                }
            }
            selected.set(Some(row));
        }
    };

    // Another view asked to show one of these buffers: select its row.
    {
        let (subject, buffer_rows) = (subject.clone(), buffer_rows.clone());
        Effect::new(move |_| {
            let Some(focus) = buffer_focus.get() else {
                return;
            };
            let Some(i) = subject.find(&focus) else {
                return;
            };
            let Some(row) = buffer_rows.iter().find(|r| r.buffer == Some(i)).cloned() else {
                return;
            };
            if selected.get_untracked().as_ref() == Some(&row) {
                return;
            }
            grouping.set(Grouping::Buffer);
            let position = rows.with_untracked(|rows| rows.iter().position(|r| r.key == row.key));
            if position.is_none_or(|p| p >= TABLE_ROWS) {
                show_all.set(true);
            }
            selected.set(Some(row));
        });
    }

    let header = move |label: &'static str, key: SortKey, numeric: bool| {
        let aria = move || {
            let (k, d) = sort.get();
            if k != key {
                "none"
            } else if d {
                "descending"
            } else {
                "ascending"
            }
        };
        let arrow = move || {
            let (k, d) = sort.get();
            if k != key {
                ""
            } else if d {
                " ▼"
            } else {
                " ▲"
            }
        };
        view! {
            <th scope="col" class:num=numeric aria-sort=aria>
                <button type="button" class="sort-button" data-sort=label
                    on:click=move |_| sort.update(|(k, d)| {
                        if *k == key {
                            *d = !*d;
                        } else {
                            *k = key;
                            *d = key != SortKey::Name;
                        }
                    })>
                    {label}{arrow}
                </button>
            </th>
        }
    };

    let table_rows = {
        let select = select.clone();
        move || {
            let rows = rows.get();
            let total = rows.len();
            let shown = if show_all.get() {
                total
            } else {
                total.min(TABLE_ROWS)
            };
            let is_buffer = grouping.get() == Grouping::Buffer;
            rows.into_iter()
                .take(shown)
                .map(|row| {
                    let is_selected = {
                        let key = row.key.clone();
                        move || selected.get().is_some_and(|s| s.key == key)
                    };
                    let (on_click, on_key) = {
                        let (select, r1, r2) = (select.clone(), row.clone(), row.clone());
                        let select2 = select.clone();
                        (
                            move |_| select(r1.clone()),
                            move |ev: leptos::ev::KeyboardEvent| {
                                if ev.key() == "Enter" || ev.key() == " " {
                                    ev.prevent_default();
                                    select2(r2.clone());
                                }
                            },
                        )
                    };
                    view! {
                        <tr tabindex="0" class:selected=is_selected.clone() aria-selected=move || is_selected().to_string()
                            data-key=row.key.clone() data-waste=row.waste.to_string()
                            on:click=on_click on:keydown=on_key>
                            <td class="mono key" title=row.key.clone()>{row.key.clone()}</td>
                            {is_buffer.then(|| view! { <td class="mono shape">{row.shape.clone()}</td> })}
                            {(!is_buffer).then(|| view! { <td class="num">{group_digits(row.count)}</td> })}
                            <td class="num"><Bytes value=row.padded/></td>
                            <td class="num"><Bytes value=row.unpadded/></td>
                            <td class="num waste"><Bytes value=row.waste/></td>
                            <td class="num">{format!("{:.2}×", row.expansion)}</td>
                            {is_buffer.then(|| view! { <td class="mono" title=row.op.clone()>{row.op.clone()}</td> })}
                        </tr>
                    }
                })
                .collect_view()
        }
    };
    let total_rows = move || rows.with(|r| r.len());

    let peak_share = subject
        .peak_bytes
        .and_then(|p| percent(subject.summary.peak_padding_bytes, p))
        .map(|p| format!("{p} of the peak"));
    let suggestions = subject
        .summary
        .top
        .iter()
        .filter(|e| !e.suggestion.is_empty())
        .map(|e| {
            view! {
                <li data-shape=e.shape.clone()>
                    <span class="mono">{e.shape.clone()}</span>
                    {format!(" ({}×, {}): ", e.count, format_bytes(e.padding_bytes))}
                    {e.suggestion.clone()}
                    {e.suggestion_saves_bytes.map(|b| view! {
                        <span class="estimate">" Estimated saving over all " {e.count} " buffers: " <Bytes value=b/> " (estimate)"</span>
                    })}
                </li>
            }
        })
        .collect::<Vec<_>>();
    let estimated_total: u64 = subject
        .summary
        .top
        .iter()
        .filter_map(|e| e.suggestion_saves_bytes)
        .sum();
    let has_timeline = subject.has_timeline;

    view! {
        <div class="padding-subject" data-module=subject.module.as_ref().map(|(n, _)| n.clone()).unwrap_or_default()>
            <dl class="stats">
                <div class="stat" data-field="peak_padding">
                    <dt>"Padding at the peak"</dt>
                    <dd><Bytes value=subject.summary.peak_padding_bytes/><span class="stat-note">{peak_share}</span></dd>
                </div>
                <div class="stat" data-field="total_padding">
                    <dt>"Padding, all buffers"</dt>
                    <dd><Bytes value=subject.summary.total_padding_bytes/>
                        <span class="stat-note">{format!("{} of {} buffers padded", group_digits(subject.buffers.len() as u64), group_digits(subject.buffer_count as u64))}</span>
                    </dd>
                </div>
                {subject.peak_bytes.map(|p| view! {
                    <div class="stat" data-field="peak"><dt>"Peak, padded"</dt><dd><Bytes value=p/></dd></div>
                })}
                {subject.peak_unpadded_bytes.map(|p| view! {
                    <div class="stat" data-field="peak_unpadded"><dt>"Peak, unpadded"</dt><dd><Bytes value=p/></dd></div>
                })}
                {(estimated_total > 0).then(|| view! {
                    <div class="stat" data-field="estimated_saving"><dt>"Suggestions could save"</dt><dd><Bytes value=estimated_total/><span class="stat-note">"estimate, over the listed shapes"</span></dd></div>
                })}
            </dl>
            <div class="plot-toolbar" role="toolbar" aria-label="Padding controls">
                <span class="segmented" role="radiogroup" aria-label="Group the table by">
                    <span class="segmented-label">"Group by"</span>
                    {Grouping::ALL.into_iter().map(|g| view! {
                        <button type="button" role="radio" class="segment" data-group=g.label()
                            aria-checked=move || (grouping.get() == g).to_string()
                            class:active=move || grouping.get() == g
                            on:click=move |_| { grouping.set(g); show_all.set(false); }>
                            {g.label()}
                        </button>
                    }).collect_view()}
                </span>
                <span class="toolbar-gap"></span>
                <button type="button" class="button small secondary" data-export="svg" on:click=export_svg aria-label="Export the padding charts as SVG">"SVG"</button>
                <button type="button" class="button small secondary" data-export="png" on:click=export_png aria-label="Export the padding-by-buffer chart as PNG">"PNG"</button>
                <button type="button" class="button small secondary" data-export="csv" on:click=export_csv aria-label="Export the padding table as CSV">"CSV"</button>
            </div>
            {move || notice.get().map(|n| view! { <p class="error-message" role="alert">{format!("Export failed: {n}")}</p> })}
            <div class="padding-charts">
                <canvas node_ref=buffer_canvas class="padding-canvas" data-chart="buffers" role="img"
                    style:height=format!("{}px", bars::height(buffer_bars.len()))
                    aria-label=format!("{buffer_title}: padded against unpadded bytes per buffer.")></canvas>
                <canvas node_ref=group_canvas class="padding-canvas" data-chart="groups" role="img"
                    style:height=move || format!("{}px", bars::height(group_bars.with(|(_, b)| b.len())))
                    aria-label=move || { let (g, b) = group_bars.get(); format!("{}: padded against unpadded bytes.", group_title(g, b.len())) }></canvas>
            </div>
            <div class="padding-detail">
                {move || selected.get().map(|row| view! { <Breakdown row=row has_timeline=has_timeline/> })}
            </div>
            <div class="table-scroll">
                <table class="data padding-table" aria-describedby="padding-table-help">
                    <thead>
                        <tr>
                            {move || {
                                let g = grouping.get();
                                let is_buffer = g == Grouping::Buffer;
                                let name = match g {
                                    Grouping::Buffer => "Buffer",
                                    Grouping::Shape => "Shape",
                                    Grouping::Op => "Op",
                                    Grouping::Source => "Source line",
                                };
                                view! {
                                    {header(name, SortKey::Name, false)}
                                    {is_buffer.then(|| view! { <th scope="col">"Shape"</th> })}
                                    {(!is_buffer).then(|| header("Buffers", SortKey::Count, true))}
                                    {header("Padded", SortKey::Padded, true)}
                                    {header("Unpadded", SortKey::Unpadded, true)}
                                    {header("Waste", SortKey::Waste, true)}
                                    {header("Expansion", SortKey::Expansion, true)}
                                    {is_buffer.then(|| view! { <th scope="col">"Op"</th> })}
                                }
                            }}
                        </tr>
                    </thead>
                    <tbody>{table_rows}</tbody>
                </table>
            </div>
            <p class="muted table-help" id="padding-table-help">
                "Sort with the column headers. Select a row (click, or Enter) for its per-dimension breakdown"
                {has_timeline.then_some("; a buffer row also pins the buffer in the module's timeline")}
                "."
            </p>
            <Show when=move || { !show_all.get() && total_rows() > TABLE_ROWS }>
                <button type="button" class="button small secondary" on:click=move |_| show_all.set(true)>
                    {move || format!("Show all {} rows", group_digits(total_rows() as u64))}
                </button>
            </Show>
            {(!suggestions.is_empty()).then(|| view! {
                <h3 class="subhead">"How to get it back"</h3>
                <p class="muted">"Each suggestion is sized with the same layout model. They are estimates: the compiler may pick other tiles for a changed shape."</p>
                <ul class="suggestions">{suggestions}</ul>
            })}
        </div>
    }
}

/// A window-resize counter to redraw on.
fn window_resize_counter() -> RwSignal<u32> {
    let counter = RwSignal::new(0u32);
    let listener = window_event_listener(leptos::ev::resize, move |_| {
        counter.update(|n| *n = n.wrapping_add(1))
    });
    on_cleanup(move || listener.remove());
    counter
}

/// Per-dimension costs of the selected row's shape, and its fix.
#[component]
fn Breakdown(row: Row, has_timeline: bool) -> impl IntoView {
    let array = match parse_shape(&row.shape) {
        Ok(Shape::Array(array)) => Some(array),
        _ => None,
    };
    let dims = array.as_ref().map(dimension_breakdown).unwrap_or_default();
    let fix = array.as_ref().and_then(suggest_fix);
    let rows = dims
        .iter()
        .map(|d| view! {
            <tr data-dimension=d.dimension.to_string()>
                <td class="num">{d.dimension}</td>
                <td class="num">{if d.minor_position == 0 { "most minor".to_string() } else { d.minor_position.to_string() }}</td>
                <td class="num">{group_digits(d.size)}</td>
                <td class="num">{if d.tile > 1 { group_digits(d.tile) } else { "—".to_string() }}</td>
                <td class="num">{group_digits(d.padded_size)}</td>
                <td class="num"><Bytes value=d.padding_bytes/></td>
            </tr>
        })
        .collect_view();
    let show_in_timeline = move |_| crate::navigate::scroll_to("modules");
    view! {
        <div class="padding-breakdown" aria-live="polite" data-key=row.key.clone()>
            <div class="pinned-head">
                <strong class="mono">{row.key.clone()}</strong>
                {(row.buffer.is_some() && has_timeline).then(|| view! {
                    <button type="button" class="button small secondary" on:click=show_in_timeline>"Show in the timeline"</button>
                })}
            </div>
            <p>
                {(row.shape != row.key && !row.shape.is_empty()).then(|| view! { <span class="mono">{row.shape.clone()}</span> " · " })}
                <Bytes value=row.unpadded/> " of data take " <Bytes value=row.padded/>
                {format!(" ({:.2}×): ", row.expansion)} <Bytes value=row.waste/> " of padding"
                {(row.count > 1).then(|| format!(" over {} buffers", group_digits(row.count)))} "."
            </p>
            {(!dims.is_empty()).then(|| view! {
                <table class="data dims">
                    <caption class="visually-hidden">"What each dimension's rounding costs, per buffer"</caption>
                    <thead>
                        <tr>
                            <th scope="col" class="num">"Dimension"</th>
                            <th scope="col" class="num">"Minor position"</th>
                            <th scope="col" class="num">"Size"</th>
                            <th scope="col" class="num">"Rounded to a multiple of"</th>
                            <th scope="col" class="num">"Padded size"</th>
                            <th scope="col" class="num">"This rounding costs (per buffer)"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            })}
            {(array.is_none() && !row.shape.is_empty()).then(|| view! { <p class="muted">"Not an array shape (a tuple or unreadable): no per-dimension breakdown."</p> })}
            {row.shape.is_empty().then(|| view! { <p class="muted">"Group by buffer or shape for a per-dimension breakdown."</p> })}
            {fix.map(|f| view! {
                <p class="estimate">"Suggestion: " {f.text} " → " <span class="mono">{f.new_shape}</span></p>
            })}
        </div>
    }
}
