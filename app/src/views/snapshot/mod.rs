//! PyTorch memory snapshots (issue 16), per device: the verdict with its
//! numbers, the Active Memory curve, the allocator's state at snapshot time,
//! the source lines holding the peak, and the shared stack view. The
//! analyzer computes every number; this view only draws.

mod curve;
mod geometry;

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{MemorySnapshot, Report};

use crate::format::{base_name, group_digits, share, Bytes};
use crate::widgets::stacks::StackView;
use crate::widgets::table_head::TableHead;

#[component]
pub fn SnapshotView(report: Arc<Report>) -> impl IntoView {
    if report.memory_snapshots.is_empty() {
        return ().into_any();
    }
    let snapshots = report.memory_snapshots.clone();
    view! {
        <section class="card" id="snapshots" aria-labelledby="snapshots-title">
            <h2 id="snapshots-title">"PyTorch memory snapshots"</h2>
            <crate::widgets::runtime_left_out::RuntimeLeftOut report=report.clone()/>
            {snapshots.into_iter().map(|s| view! { <DeviceSnapshot snapshot=s/> }).collect_view()}
        </section>
    }
    .into_any()
}

#[component]
fn DeviceSnapshot(snapshot: MemorySnapshot) -> impl IntoView {
    let has_curve = snapshot.active_memory_curve.len() > 1;
    view! {
        <div class="memory-snapshot" data-testid="memory-snapshot">
            <h3>{format!("{} · cuda:{}", base_name(&snapshot.input), snapshot.device)}</h3>
            <Verdict snapshot=snapshot.clone()/>
            {has_curve.then(|| view! { <curve::ActiveMemoryCurve snapshot=snapshot.clone()/> })}
            <StateTable snapshot=snapshot.clone()/>
            <TopLines snapshot=snapshot.clone()/>
            <StackView stacks=snapshot.stacks_at_peak/>
        </div>
    }
}

/// The numbers that answer "why": the peak, what the allocator holds, and the OOM.
#[component]
fn Verdict(snapshot: MemorySnapshot) -> impl IntoView {
    let peak = match snapshot.peak_event_index {
        Some(e) => view! {
            "Peak " <strong data-testid="snapshot-peak"><Bytes value=snapshot.peak_allocated_bytes/></strong> " allocated at trace event "
            {group_digits(e)} {format!(" of {}", group_digits(snapshot.trace_events))} "; "
        }
        .into_any(),
        None => view! { <strong data-testid="snapshot-peak"><Bytes value=snapshot.peak_allocated_bytes/></strong> " allocated (no allocation trace); " }.into_any(),
    };
    let oom = snapshot.oom.clone().map(|o| {
        view! {
            <p class="snapshot-oom" data-testid="snapshot-oom">
                <strong>"Out of memory"</strong> {format!(" at trace event {}: asked for ", group_digits(o.event_index))}
                <Bytes value=o.requested_bytes/> " with only " <Bytes value=o.device_free_bytes/> " free on the device; "
                <Bytes value=o.allocated_bytes/> " allocated and " <Bytes value=o.reserved_bytes/> " reserved by PyTorch at that moment."
            </p>
        }
    });
    view! {
        <p class="snapshot-verdict" role="status" data-testid="snapshot-verdict">
            {peak}
            <Bytes value=snapshot.reserved_bytes/> " reserved at the snapshot"
            {(snapshot.reserved_peak_bytes > snapshot.reserved_bytes).then(|| view! { " (up to " <Bytes value=snapshot.reserved_peak_bytes/> " during the trace)" })}
            "."
        </p>
        {oom}
    }
}

/// The allocator at snapshot time, as `_memory_viz segsum` splits it.
#[component]
fn StateTable(snapshot: MemorySnapshot) -> impl IntoView {
    let reserved = snapshot.reserved_bytes;
    let rows: Vec<(&str, u64)> = vec![
        ("Reserved (segments)", reserved),
        (
            "Allocated (active, after rounding)",
            snapshot.active_allocated_bytes,
        ),
        ("Allocated as requested", snapshot.allocated_requested_bytes),
        ("Active, pending free", snapshot.active_pending_free_bytes),
        ("Inactive (cached, free)", snapshot.inactive_bytes),
        (
            "Free inside blocks (rounding)",
            snapshot.free_internal_bytes,
        ),
        // "Fragmentation" names one number only: the free blocks stranded
        // between live ones, which only expandable segments return. The
        // free blocks of segsum's "external" count include whole free
        // segments that empty_cache() returns, so they get another name.
        (
            "Free outside blocks in use (segsum's external)",
            snapshot.free_external_bytes,
        ),
        ("Private pools (CUDA graphs)", snapshot.private_pool_bytes),
        (
            "Fragmentation: free blocks stranded between live ones (expandable_segments:True would return them)",
            snapshot.expandable_segments_would_return_bytes,
        ),
    ];
    view! {
        <table class="data" data-testid="snapshot-state">
            <caption>{format!("State at snapshot time: {} segments ({} expandable)", group_digits(snapshot.segments), group_digits(snapshot.expandable_segments))}</caption>
            <TableHead columns=vec![("", false), ("Bytes", true), ("Of reserved", true)]/>
            <tbody>
                {rows.into_iter().map(|(label, bytes)| view! {
                    <tr><td>{label}</td><td class="num"><Bytes value=bytes/></td><td class="num">{share(bytes, reserved).unwrap_or_default()}</td></tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
fn TopLines(snapshot: MemorySnapshot) -> impl IntoView {
    if snapshot.top_lines_at_peak.is_empty() {
        return ().into_any();
    }
    view! {
        <table class="data" data-testid="snapshot-lines">
            <caption>"Source lines holding the most bytes at the peak (first user frame)"</caption>
            <TableHead columns=vec![("Line", false), ("Allocations", true), ("Bytes", true)]/>
            <tbody>
                {snapshot.top_lines_at_peak.into_iter().map(|l| view! {
                    <tr><td>{l.frame}</td><td class="num">{group_digits(l.count)}</td><td class="num"><Bytes value=l.bytes/></td></tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}
