//! What if, for one snapshot (issue 25): the analyzer's replays of its
//! trace (without the allocations of a line, `expandable_segments`, the
//! failed allocation placed), each next to today's number and the limit
//! when one is known, then the lines the user asked to replay without (a
//! button on each line of the table: the worker reads the file again and
//! replays it; the page never replays; a link carries them). A line the
//! analyzer replayed comes with its curve (`MemorySnapshot::what_if_curves`):
//! its row draws or hides it over the Active Memory curve, as a line
//! replayed on the page is drawn (one list in the view state, which a link
//! carries), none at first so that the chart stays readable.

use leptos::prelude::*;
use oomscope_report::whatif::{Remedy, ReplayedCurve, WhatIf};
use oomscope_report::MemorySnapshot;

use crate::format::{Bytes, Difference};
use crate::state::AppState;
use crate::widgets::table_head::TableHead;

/// Today's number a what-if changes: reserved memory for
/// `expandable_segments`, else the allocated peak.
fn today(s: &MemorySnapshot, w: &WhatIf) -> u64 {
    match w.remedy {
        Remedy::ExpandableSegments => s.reserved_peak_bytes.max(s.reserved_bytes),
        _ => s.peak_allocated_bytes,
    }
}

fn title(w: &WhatIf) -> String {
    match w.remedy {
        Remedy::WithoutAllocations => format!(
            "Without the allocations of {}",
            w.frame.as_deref().unwrap_or("a line")
        ),
        Remedy::ExpandableSegments => "With expandable_segments:True (reserved memory)".into(),
        Remedy::FailedAllocationPlaced => format!(
            "The failed allocation placed ({} had to be freed)",
            oomscope_report::units::format_bytes(w.must_free_bytes.unwrap_or(0))
        ),
        other => other.as_str().to_string(),
    }
}

/// The report's what-ifs of `snapshot` and those `picked` on the page,
/// a picked line replacing the report's entry for the same line.
pub fn shown(snapshot: &MemorySnapshot, picked: &[ReplayedCurve]) -> Vec<WhatIf> {
    let mut all = snapshot.what_if.clone();
    for w in picked
        .iter()
        .map(|c| &c.what_if)
        .filter(|w| w.device == Some(snapshot.device))
    {
        all.retain(|o| !(o.remedy == w.remedy && o.frame == w.frame));
        all.push(w.clone());
    }
    all
}

/// Whether `c` and `w` are the same line of the same snapshot.
fn same_line(c: &WhatIf, w: &WhatIf) -> bool {
    c.remedy == w.remedy && c.module == w.module && c.device == w.device && c.frame == w.frame
}

/// Draws (or hides) the analyzer's curve of one line over the Active
/// Memory curve: it joins (or leaves) the lines drawn, in the view state.
fn toggle(state: AppState, curve: &ReplayedCurve) {
    state.open_view.update(|v| {
        let drawn = &mut v.snapshot_without;
        let before = drawn.len();
        drawn.retain(|o| !same_line(&o.what_if, &curve.what_if));
        if drawn.len() == before {
            drawn.push(curve.clone());
        }
    });
}

#[component]
pub fn SnapshotWhatIfs(
    snapshot: MemorySnapshot,
    picked: Signal<Vec<ReplayedCurve>>,
    limit: Option<u64>,
    state: AppState,
) -> impl IntoView {
    let curves = StoredValue::new(snapshot.what_if_curves.clone());
    let rows = move || {
        shown(&snapshot, &picked.get())
            .into_iter()
            .map(|w| {
                let now = today(&snapshot, &w);
                let change = w.predicted_peak_bytes as i64 - now as i64;
                let fits = limit.map(|l| {
                    if w.predicted_peak_bytes <= l {
                        "fits"
                    } else {
                        "over the limit"
                    }
                });
                let curve = curves.with_value(|cs| {
                    cs.iter().find(|c| same_line(&c.what_if, &w)).cloned()
                });
                let draw = curve.map(|c| {
                    let drawn = picked.with_untracked(|p| p.iter().any(|o| same_line(&o.what_if, &c.what_if)));
                    view! {
                        <button type="button" class="button small secondary" data-testid="snapshot-what-if-draw"
                            aria-pressed=drawn.to_string() on:click=move |_| toggle(state, &c)>
                            {if drawn { "Hide curve" } else { "Draw curve" }}
                        </button>
                    }
                });
                view! {
                    <tr data-testid="snapshot-what-if" data-remedy=w.remedy.as_str() data-frame=w.frame.clone().unwrap_or_default()>
                        <td>{title(&w)}<div class="muted">{w.scope.clone()}</div></td>
                        <td class="num"><Bytes value=now/></td>
                        <td class="num" data-testid="snapshot-what-if-peak"><Bytes value=w.predicted_peak_bytes/></td>
                        <td class="num"><Difference value=change/></td>
                        <td>{fits}</td>
                        <td>{draw}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let caption = match limit {
        Some(l) => view! { "What if: the trace replayed with a change · limit " <Bytes value=l/> }
            .into_any(),
        None => "What if: the trace replayed with a change (the snapshot records no device limit)"
            .into_any(),
    };
    view! {
        <table class="data" data-testid="snapshot-what-ifs">
            <caption>{caption}</caption>
            <TableHead columns=vec![("Change", false), ("Today", true), ("Predicted peak", true), ("Difference", true), ("Limit", false), ("Curve", false)]/>
            <tbody>{rows}</tbody>
        </table>
    }
}
