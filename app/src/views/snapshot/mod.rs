//! PyTorch memory snapshots (issue 16), per device: the verdict with its
//! numbers, the Active Memory curve, the allocator's state at snapshot time,
//! the source lines holding the peak (each can be replayed without, in the
//! worker), the what-ifs, and the shared stack view. The analyzer computes
//! every number; this view only draws.
//!
//! The lines replayed without live in `AppState::open_view`
//! (`snapshot_without`, each with its replayed curve), so a link carries
//! them and whoever opens it sees them replayed, drawn over the curve.

mod curve;
mod geometry;
mod what_if;

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::whatif::ReplayedCurve;
use oomscope_report::{MemorySnapshot, Report, NO_STACK_LINE};

use crate::format::{base_name, group_digits, share, Bytes};
use crate::state::{use_state, AppState, ReportOrigin};
use crate::widgets::stacks::StackView;
use crate::widgets::table_head::TableHead;

#[component]
pub fn SnapshotView(report: Arc<Report>) -> impl IntoView {
    if report.memory_snapshots.is_empty() {
        return ().into_any();
    }
    let snapshots = report.memory_snapshots.clone();
    let state = use_state();
    // The worker still has the files of an analysis made here, not those of
    // a link or the example.
    let replayable =
        report.shared.is_none() && state.origin.get_untracked() == Some(ReportOrigin::User);
    let limit_of = |s: &MemorySnapshot| {
        report
            .oom_events
            .iter()
            .filter(|e| {
                e.input == s.input || e.extra.get("cuda_device") == Some(&u64::from(s.device))
            })
            .find_map(|e| e.limit())
    };
    let snapshots: Vec<(MemorySnapshot, Option<u64>)> = snapshots
        .into_iter()
        .map(|s| {
            let limit = limit_of(&s);
            (s, limit)
        })
        .collect();
    view! {
        <section class="card" id="snapshots" aria-labelledby="snapshots-title">
            <h2 id="snapshots-title">"PyTorch memory snapshots"</h2>
            <crate::widgets::runtime_left_out::RuntimeLeftOut report=report.clone()/>
            {snapshots.into_iter().map(|(s, limit)| view! { <DeviceSnapshot snapshot=s limit=limit replayable=replayable state=state/> }).collect_view()}
        </section>
    }
    .into_any()
}

/// The lines of `snapshot` replayed without, from the view state.
fn replays_of(state: AppState, snapshot: &MemorySnapshot) -> Signal<Vec<ReplayedCurve>> {
    let (input, device) = (snapshot.input.clone(), snapshot.device);
    Signal::derive(move || {
        state.open_view.with(|v| {
            v.snapshot_without
                .iter()
                .filter(|c| c.what_if.module == input && c.what_if.device == Some(device))
                .cloned()
                .collect()
        })
    })
}

#[component]
fn DeviceSnapshot(
    snapshot: MemorySnapshot,
    limit: Option<u64>,
    replayable: bool,
    state: AppState,
) -> impl IntoView {
    let has_curve = snapshot.active_memory_curve.len() > 1;
    let replays = replays_of(state, &snapshot);
    let status = RwSignal::new(String::new());
    let replay = replayable.then_some(Replay { state, status });
    let what_ifs =
        replayable || !snapshot.what_if.is_empty() || !replays.with_untracked(Vec::is_empty);
    view! {
        <div class="memory-snapshot" data-testid="memory-snapshot">
            <h3>{format!("{} · cuda:{}", base_name(&snapshot.input), snapshot.device)}</h3>
            <Verdict snapshot=snapshot.clone()/>
            {has_curve.then(|| view! { <curve::ActiveMemoryCurve snapshot=snapshot.clone() replays=replays/> })}
            <StateTable snapshot=snapshot.clone()/>
            <TopLines snapshot=snapshot.clone() replay=replay/>
            {what_ifs.then(|| view! {
                <p class="muted" role="status" data-testid="snapshot-replay-status">{move || status.get()}</p>
                <what_if::SnapshotWhatIfs snapshot=snapshot.clone() picked=replays limit=limit state=state/>
            })}
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

/// What a line's "Replay without" needs: the worker, and where its answer
/// goes (the view state, which a link carries).
#[derive(Clone, Copy)]
struct Replay {
    state: AppState,
    status: RwSignal<String>,
}

impl Replay {
    /// Asks the worker for the snapshot `input` without `frame`'s allocations.
    fn without(self, input: String, frame: String) {
        self.status
            .set(format!("Replaying the trace without {frame}…"));
        let Replay { state, status } = self;
        crate::worker_client::replay_snapshot_without(
            state,
            input,
            frame.clone(),
            Box::new(move |answer| match answer {
                Ok(replays) if replays.is_empty() => {
                    status.set(format!("No allocation has {frame} on its stack."))
                }
                Ok(replays) => {
                    state.open_view.update(|v| {
                        for c in replays {
                            let w = &c.what_if;
                            v.snapshot_without.retain(|o| {
                                let o = &o.what_if;
                                !(o.module == w.module
                                    && o.device == w.device
                                    && o.frame == w.frame)
                            });
                            v.snapshot_without.push(c);
                        }
                    });
                    status.set(String::new());
                }
                Err(message) => status.set(message),
            }),
        );
    }
}

/// Why a line of `snapshot` cannot be replayed without, if it cannot: the
/// replay takes allocations out of the trace by a frame of their stack.
fn not_replayable(snapshot: &MemorySnapshot, frame: &str) -> Option<&'static str> {
    if snapshot.trace_events == 0 {
        Some("no allocation trace (record_memory_history was off): nothing to replay")
    } else if frame == NO_STACK_LINE {
        Some("no frame recorded: no line to take out")
    } else {
        None
    }
}

#[component]
fn TopLines(snapshot: MemorySnapshot, replay: Option<Replay>) -> impl IntoView {
    if snapshot.top_lines_at_peak.is_empty() {
        return ().into_any();
    }
    let input = snapshot.input.clone();
    // Without a trace no line can be replayed: one line says so, not one
    // per row.
    let traced = snapshot.trace_events > 0;
    let action = |frame: &str| {
        let r = replay?;
        if let Some(why) = not_replayable(&snapshot, frame) {
            return traced.then(|| {
                view! { <span class="muted" data-testid="snapshot-not-replayable">{why}</span> }
                    .into_any()
            });
        }
        let (input, frame) = (input.clone(), frame.to_string());
        Some(
            view! {
                <button type="button" data-testid="snapshot-without" on:click=move |_| r.without(input.clone(), frame.clone())>"Replay without"</button>
            }
            .into_any(),
        )
    };
    let caption_note = (replay.is_some() && !traced).then(|| {
        view! { <div class="muted" data-testid="snapshot-not-replayable">{not_replayable(&snapshot, "")}</div> }
    });
    let rows = snapshot
        .top_lines_at_peak
        .iter()
        .map(|l| {
            let action = action(&l.frame);
            view! {
                <tr data-frame=l.frame.clone()><td>{l.frame.clone()}</td><td class="num">{group_digits(l.count)}</td><td class="num"><Bytes value=l.bytes/></td><td>{action}</td></tr>
            }
        })
        .collect_view();
    view! {
        <table class="data" data-testid="snapshot-lines">
            <caption>"Source lines holding the most bytes at the peak (first user frame)" {caption_note}</caption>
            <TableHead columns=vec![("Line", false), ("Allocations", true), ("Bytes", true), ("What if", false)]/>
            <tbody>{rows}</tbody>
        </table>
    }
    .into_any()
}
