//! Padding waste: what TPU tiled layouts cost, where, and how to get it
//! back. Per module (or, without a module, per OOM event's listed
//! allocations): padding at the peak as bytes and % of the peak; charts of
//! the buffers and the shapes (or ops, or source lines) that waste most,
//! padded against unpadded ([`charts`]); a sortable table per buffer or
//! grouped ([`table`]); the per-dimension breakdown of a selected buffer's
//! shape ([`breakdown`]); the fix suggestions with their estimated savings
//! ([`suggestions`]). A buffer row shows the buffer in the module's
//! timeline (through [`AppState::buffer_focus`]). Exports: SVG and PNG of
//! the charts, CSV of the table.
//!
//! All numbers come from the analyzer: the report's sizes (the compiler's
//! own) and the layout model (`oomscope_layout`: grouping, per-dimension
//! costs, suggestions) applied to shapes the report carries; the rows and
//! bars are [`crate::model::padding`].
//!
//! [`AppState::buffer_focus`]: crate::state::AppState

mod breakdown;
mod charts;
mod suggestions;
mod table;

use std::sync::Arc;

use leptos::html;
use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::Report;

use crate::export;
use crate::format::{group_digits, percent, Bytes};
use crate::model::padding::{
    bars_of, first_subject, rows_of, sort_rows, subjects, Grouping, Row, SortKey, Subject,
};
use crate::state::{use_state, BufferFocus, Selection};
use breakdown::Breakdown;
use charts::{ChartData, PaddingCharts};
use suggestions::{estimated_saving, Suggestions};
use table::{PaddingTable, TableState};

#[component]
pub fn PaddingView(report: Arc<Report>) -> impl IntoView {
    let subjects = subjects(&report);
    if subjects.is_empty() {
        return ().into_any();
    }
    let first = first_subject(&subjects);
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

#[component]
fn SubjectView(subject: Subject) -> impl IntoView {
    let subject = Arc::new(subject);
    let grouping = RwSignal::new(Grouping::Buffer);
    let sort = RwSignal::new((SortKey::Waste, true));
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
    let table = TableState {
        rows,
        grouping,
        sort,
        show_all: RwSignal::new(false),
        selected,
        scroll_top: RwSignal::new(0.0),
        scroller: NodeRef::new(),
    };
    let charts = ChartData {
        buffer_bars: bars_of(&buffer_rows),
        group_bars: {
            let subject = subject.clone();
            Memo::new(move |_| {
                let g = match grouping.get() {
                    Grouping::Buffer => Grouping::Shape,
                    other => other,
                };
                (g, bars_of(&rows_of(&subject, g)))
            })
        },
    };
    let buffer_canvas: NodeRef<html::Canvas> = NodeRef::new();

    let stem = export::file_stem(&format!(
        "oomscope-padding-{}",
        subject.title.split(' ').next().unwrap_or("")
    ));
    let export_svg = {
        let (charts, stem) = (charts.clone(), stem.clone());
        move |_| notice.set(charts::save_svg(&charts, &stem).err())
    };
    let export_png = {
        let stem = stem.clone();
        move |_| {
            notice.set(match buffer_canvas.get_untracked() {
                Some(c) => export::download_canvas_png(&format!("{stem}.png"), &c).err(),
                None => Some("no chart to save".to_string()),
            });
        }
    };
    let export_csv = move |_| {
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
            if let Some(position) =
                rows.with_untracked(|rows| rows.iter().position(|r| r.key == row.key))
            {
                table.reveal(position);
            }
            selected.set(Some(row));
        });
    }

    let peak_share = subject
        .peak_bytes
        .and_then(|p| percent(subject.summary.peak_padding_bytes, p))
        .map(|p| format!("{p} of the peak"));
    let estimated_total = estimated_saving(&subject.summary);
    let has_timeline = subject.has_timeline;
    let no_buffers = subject.buffers.is_empty();

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
                    <div class="stat" data-field="estimated_saving"><dt>"Suggestions could save"</dt><dd><Bytes value=estimated_total/><span class="stat-note">"estimate, over all buffers of the listed shapes (not only those at the peak)"</span></dd></div>
                })}
            </dl>
            <div class="plot-toolbar" role="toolbar" aria-label="Padding controls">
                <span class="segmented" role="radiogroup" aria-label="Group the table by">
                    <span class="segmented-label">"Group by"</span>
                    {Grouping::ALL.into_iter().map(|g| view! {
                        <button type="button" role="radio" class="segment" data-group=g.label()
                            aria-checked=move || (grouping.get() == g).to_string()
                            class:active=move || grouping.get() == g
                            on:click=move |_| { grouping.set(g); table.show_all.set(false); }>
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
            {no_buffers.then(|| view! {
                <p class="muted">"The inputs give these totals but no padded buffer to chart (a shared link carries only the largest buffers)."</p>
            })}
            <PaddingCharts data=charts buffer_canvas=buffer_canvas/>
            <div class="padding-detail">
                {move || selected.get().map(|row| view! { <Breakdown row=row has_timeline=has_timeline/> })}
            </div>
            <PaddingTable table=table select=select has_timeline=has_timeline/>
            <Suggestions summary=subject.summary.clone()/>
        </div>
    }
}
