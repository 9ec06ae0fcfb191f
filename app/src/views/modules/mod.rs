//! The memory viewer of one compiled module: pickers for the memory space
//! and the module, the module's figures (labelled with which peak they are),
//! its heap over program order, and the buffers live at the peak.

pub mod timeline;
pub mod what_if;

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{
    BufferCategory, MemoryColor, MemorySpace, ModuleReport, OomKind, Report, SourceKind,
};

use crate::draw::line_chart::{LineChart, Marker, RefLine, Series, Stroke};
use crate::format::{base_name, percent, Bytes};
use crate::state::Selection;
use crate::widgets::table_head::TableHead;

/// Peak buffers listed before "show all".
const BUFFER_ROWS: usize = 50;

#[component]
pub fn ModulesView(report: Arc<Report>) -> impl IntoView {
    if report.modules.is_empty() {
        // A dump is what an XLA program's OOM lacks; run-time profiles, step
        // logs and PyTorch CUDA messages have their own sections.
        if !report
            .oom_events
            .iter()
            .any(|e| e.kind != OomKind::TorchCuda)
        {
            return ().into_any();
        }
        return view! {
            <section class="card" id="modules" aria-labelledby="modules-title">
                <h2 id="modules-title">"Memory by module"</h2>
                <p class="muted">
                    "No compiled module in these inputs. Add an XLA dump folder ("
                    <code>"XLA_FLAGS=--xla_dump_to=DIR"</code>
                    "), an HloProto or an XProf profile to see the heap over program order and the buffers live at the peak."
                </p>
            </section>
        }
        .into_any();
    }

    let mut spaces: Vec<MemoryColor> = report.modules.iter().map(|m| m.memory_space).collect();
    spaces.sort_unstable();
    spaces.dedup();
    // A shared report opens on the module its sender had selected.
    let shared_module = report
        .shared
        .as_ref()
        .map(|s| s.view.module as usize)
        .filter(|i| *i < report.modules.len());
    let space = RwSignal::new(match shared_module {
        Some(i) => report.modules[i].memory_space,
        None if spaces.contains(&MemoryColor::Device) => MemoryColor::Device,
        None => spaces[0],
    });
    let module_index = RwSignal::new(
        shared_module.unwrap_or_else(|| largest_in_space(&report, space.get_untracked())),
    );
    // The module picked is part of what a link carries.
    let open_view = crate::state::use_state().open_view;
    Effect::new(move |_| {
        let i = module_index.get() as u32;
        if open_view.with_untracked(|v| v.module != i) {
            // A buffer selected in another module is not one of this one's.
            open_view.update(|v| {
                v.module = i;
                if matches!(
                    Selection::parse(&v.selection),
                    Some(Selection::Buffer(_) | Selection::BufferName(_))
                ) {
                    v.selection.clear();
                }
            });
        }
    });

    let report_for_options = report.clone();
    let module_options = move || {
        let current = space.get();
        report_for_options
            .modules
            .iter()
            .enumerate()
            .filter(|(_, m)| m.memory_space == current)
            .map(|(i, m)| {
                let label = format!("{} — peak {}", m.display_name(), oomscope_report::units::format_bytes(m.peak_bytes));
                view! { <option value=i.to_string() selected=move || module_index.get() == i>{label}</option> }
            })
            .collect_view()
    };
    let report_for_space = report.clone();
    let on_space = move |ev: leptos::ev::Event| {
        if let Ok(value) = event_target_value(&ev)
            .parse::<i64>()
            .map(MemoryColor::from)
        {
            space.set(value);
            module_index.set(largest_in_space(&report_for_space, value));
        }
    };
    let on_module = move |ev: leptos::ev::Event| {
        if let Ok(value) = event_target_value(&ev).parse::<usize>() {
            module_index.set(value);
        }
    };
    // Another view asked to show a buffer: switch to its module.
    let report_for_focus = report.clone();
    let buffer_focus = crate::state::use_state().buffer_focus;
    Effect::new(move |_| {
        let Some(focus) = buffer_focus.get() else {
            return;
        };
        if let Some(i) = report_for_focus
            .modules
            .iter()
            .position(|m| m.memory_space == focus.memory_space && m.display_name() == focus.module)
        {
            space.set(focus.memory_space);
            module_index.set(i);
        }
    });
    let limit = hbm_limit(&report);
    let report_for_detail = report.clone();
    let detail = move || {
        let index = module_index.get();
        let module = report_for_detail.modules.get(index)?.clone();
        let limit = if module.memory_space == MemoryColor::Device {
            limit
        } else {
            None
        };
        Some(view! { <ModuleDetail module=module index=index limit=limit/> })
    };
    let count = report.modules.len();

    view! {
        <section class="card" id="modules" aria-labelledby="modules-title">
            <div class="section-head">
                <h2 id="modules-title">"Memory by module"</h2>
                <span class="muted">{format!("{count} module {}", if count == 1 { "analysis" } else { "analyses" })}</span>
            </div>
            <div class="pickers">
                <label>
                    <span>"Memory space"</span>
                    <select id="space-picker" on:change=on_space prop:value=move || space.get().to_string()>
                        {spaces
                            .iter()
                            .map(|s| {
                                // Named on the platform of its first module (colour 0
                                // is HBM on a TPU, host memory on the CPU).
                                let words = report
                                    .modules
                                    .iter()
                                    .find(|m| m.memory_space == *s)
                                    .map_or_else(|| s.words(), |m| m.space_words());
                                view! { <option value=s.to_string()>{words}</option> }
                            })
                            .collect_view()}
                    </select>
                </label>
                <label class="grow">
                    <span>"Module"</span>
                    <select id="module-picker" on:change=on_module>{module_options}</select>
                </label>
            </div>
            {detail}
        </section>
    }
    .into_any()
}

fn largest_in_space(report: &Report, space: MemoryColor) -> usize {
    report
        .modules
        .iter()
        .enumerate()
        .filter(|(_, m)| m.memory_space == space)
        .max_by_key(|(_, m)| m.peak_bytes)
        .map(|(i, _)| i)
        .unwrap_or(0)
}

/// The HBM limit an OOM event states, to draw against HBM heaps.
fn hbm_limit(report: &Report) -> Option<u64> {
    report
        .oom_events
        .iter()
        .find(|e| e.memory_space == MemorySpace::Hbm)
        .and_then(|e| e.limit())
}

/// Where a module's analysis came from, in words.
fn source_kind_label(kind: &SourceKind) -> &'static str {
    match kind {
        SourceKind::HloProto => "the compiled program (HloProto)",
        SourceKind::Xplane => "an XProf profile",
        SourceKind::XlaDumpText => "the XLA dump's text files",
        SourceKind::Other(_) => "the inputs",
    }
}

#[component]
fn ModuleDetail(module: ModuleReport, index: usize, limit: Option<u64>) -> impl IntoView {
    let peak_share = limit
        .and_then(|l| percent(module.peak_bytes, l))
        .map(|p| format!("{p} of the HBM limit"));
    // With buffer lifetimes the timeline draws the heap (and every buffer);
    // without them this simple heap chart is the picture.
    let chart = (!module.heap_bytes.is_empty() && module.buffers.is_empty()).then(|| {
        // A downsampled curve (shared report) gives each point's position.
        let at = |i: usize| module.heap_positions.get(i).map_or(i as f64, |p| *p as f64);
        let padded: Vec<(f64, f64)> = module.heap_bytes.iter().enumerate().map(|(i, b)| (at(i), *b as f64)).collect();
        let unpadded: Vec<(f64, f64)> =
            module.unpadded_heap_bytes.iter().enumerate().map(|(i, b)| (at(i), *b as f64)).collect();
        let mut series = vec![Series { label: "Heap (padded)".into(), points: padded, color: "#0969da", stroke: Stroke::Solid, steps: true }];
        if !unpadded.is_empty() {
            series.push(Series { label: "Heap (unpadded)".into(), points: unpadded, color: "#8250df", stroke: Stroke::Dashed, steps: true });
        }
        let lines = limit
            .map(|l| vec![RefLine { label: format!("HBM limit {}", oomscope_report::units::format_bytes(l)), bytes: l as f64, color: "#cf222e" }])
            .unwrap_or_default();
        let marker = Some(Marker {
            x: module.peak_position as f64,
            label: format!("peak {} at {}", oomscope_report::units::format_bytes(module.peak_bytes), module.peak_position),
        });
        let description = format!(
            "Heap size over program order for {}: peak {} at position {} of {}.",
            module.display_name(),
            oomscope_report::units::format_bytes(module.peak_bytes),
            module.peak_position,
            module.heap_positions.last().map_or(module.heap_bytes.len() as u64, |p| p + 1)
        );
        view! { <LineChart series=series lines=lines marker=marker x_label="program order (heap-simulator event)" description=description/> }
    });
    let buffers = module.peak_buffers.clone();
    let peak = module.peak_bytes;
    view! {
        <div class="module-detail" data-module=module.display_name()>
            <p class="module-source muted">
                {module.peak_kind.words()} " · from " {source_kind_label(&module.source_kind)} " "
                <span class="mono" title=module.input.clone()>{base_name(&module.input).to_string()}</span>
            </p>
            <dl class="stats">
                <div class="stat" data-field="peak">
                    <dt>"Peak"</dt>
                    <dd><Bytes value=module.peak_bytes/>{peak_share.map(|n| view! { <span class="stat-note">{n}</span> })}</dd>
                </div>
                <div class="stat" data-field="peak_unpadded">
                    <dt>"Peak, unpadded"</dt>
                    <dd><Bytes value=module.peak_unpadded_bytes/></dd>
                </div>
                <div class="stat" data-field="parameters">
                    <dt>"Parameters"</dt>
                    <dd><Bytes value=module.parameters_bytes/></dd>
                </div>
                <div class="stat" data-field="live_out">
                    <dt>"Maybe live out"</dt>
                    <dd><Bytes value=module.maybe_live_out_bytes/></dd>
                </div>
                <div class="stat" data-field="total_allocation">
                    <dt>"Total allocation"</dt>
                    <dd><Bytes value=module.total_allocation_bytes/></dd>
                </div>
                {module.compiler_peak_bytes.map(|b| view! {
                    <div class="stat" data-field="compiler_peak">
                        <dt>"Compiler's live-range sum"</dt>
                        <dd><Bytes value=b/><span class="stat-note">{compiler_figure_note(b, module.peak_bytes)}</span></dd>
                    </div>
                })}
            </dl>
            <what_if::WhatIfPanel module=module.clone() index=index limit=limit/>
            {chart}
            <timeline::Timeline module=module.clone() limit=limit/>
            // With a timeline, its own table lists the buffers live at the
            // peak (those live throughout too); XProf's list, as its Memory
            // Viewer shows it (small buffers merged), stays one click away.
            {if module.buffers.is_empty() {
                view! { <PeakBuffers buffers=buffers peak=peak/> }.into_any()
            } else {
                view! {
                    <details class="xprof-peak-list">
                        <summary>{format!("XProf's Memory Viewer list of the buffers at the peak ({}), with parameters and constants", buffers.len())}</summary>
                        <PeakBuffers buffers=buffers peak=peak/>
                    </details>
                }
                .into_any()
            }}
        </div>
    }
}

/// What the compiler's own figure is (the total its `-live-range.txt`
/// prints at its peak moment, the only source of `compiler_peak_bytes`) and
/// why it differs from the peak shown beside it.
fn compiler_figure_note(figure: u64, peak: u64) -> String {
    let why = "the total the compiler's live-range dump prints at its own peak moment: logical (unpadded) sizes, a while loop's tuple aliases counted once per alias";
    if figure > peak {
        format!("{why}, so it is larger than the peak, which counts each buffer once")
    } else if figure < peak {
        format!("{why}; the peak counts padding and parameters, so it is larger")
    } else {
        format!("{why}; here it equals the peak")
    }
}

fn category_name(category: BufferCategory) -> &'static str {
    match category {
        BufferCategory::Parameter => "parameter",
        BufferCategory::Output => "output",
        BufferCategory::ThreadLocal => "thread-local",
        BufferCategory::Constant => "constant",
        BufferCategory::Temporary => "temporary",
        BufferCategory::Small => "small (merged)",
    }
}

#[component]
fn PeakBuffers(buffers: Vec<oomscope_report::PeakBuffer>, peak: u64) -> impl IntoView {
    if buffers.is_empty() {
        return view! { <p class="muted">"The input lists no buffers at the peak."</p> }.into_any();
    }
    let mut buffers = buffers;
    crate::sort::sort_by_key(&mut buffers, |b| std::cmp::Reverse(b.size_bytes));
    let total = buffers.len();
    let show_all = RwSignal::new(false);
    let rows = move || {
        let shown = if show_all.get() {
            total
        } else {
            total.min(BUFFER_ROWS)
        };
        buffers[..shown]
            .iter()
            .map(|b| {
                let padding = b.size_bytes.saturating_sub(b.unpadded_bytes);
                view! {
                    <tr>
                        <td class="mono" title=b.name.clone()>{b.name.clone()}</td>
                        <td class="num"><Bytes value=b.size_bytes/></td>
                        <td class="num">{crate::format::share(b.size_bytes, peak).unwrap_or_default()}</td>
                        <td class="num">{(padding > 0).then(|| view! { <Bytes value=padding/> })}</td>
                        <td>{category_name(b.category)}</td>
                        <td class="mono shape">{b.shape.clone()}</td>
                        <td class="mono" title=b.op_name.clone()>{b.op_name.clone()}</td>
                        <td class="mono">{b.source.clone()}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    view! {
        <h3 class="subhead">{format!("Buffers live at the peak, as XProf's Memory Viewer lists them ({total})")}</h3>
        <div class="table-scroll">
            <table class="data peak-buffers">
                <TableHead columns=vec![("Buffer", false), ("Size", true), ("Of peak", true), ("Padding", true), ("Kind", false), ("Shape", false), ("Operation", false), ("Source", false)]/>
                <tbody>{rows}</tbody>
            </table>
        </div>
        <Show when=move || { !show_all.get() && total > BUFFER_ROWS }>
            <button type="button" class="button small secondary" on:click=move |_| show_all.set(true)>
                {format!("Show all {total} buffers")}
            </button>
        </Show>
    }
    .into_any()
}
