//! An allocator profile (XProf's allocator events): heap, stack and free
//! over time, its figures at the peak and the allocations active there.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::AllocatorProfile;

use super::model::PlotLine;
use super::plot_view::PlotView;
use crate::draw::line_chart::{RefLine, PALETTE};
use crate::export;
use crate::format::{base_name, Bytes};
use crate::widgets::table_head::TableHead;

/// Allocations listed as active at an allocator's peak.
const ACTIVE_ROWS: usize = 15;

#[component]
pub fn AllocatorChart(profile: AllocatorProfile) -> impl IntoView {
    let ms = |ps: u64| ps as f64 / 1e9;
    let series = |name: &str,
                  color: &'static str,
                  value: fn(&oomscope_report::AllocatorPoint) -> u64| PlotLine {
        label: name.to_string(),
        color,
        points: profile
            .timeline
            .iter()
            .map(|p| (ms(p.time_ps), value(p) as f64))
            .collect(),
        trend: None,
        projection: None,
        spikes: Vec::new(),
    };
    let lines = vec![
        series("heap", PALETTE[0], |p| p.heap_bytes),
        series("stack", PALETTE[1], |p| p.stack_bytes),
        series("free", PALETTE[2], |p| p.free_bytes),
    ];
    let levels = (profile.capacity_bytes > 0)
        .then(|| RefLine {
            label: format!("capacity {}", format_bytes(profile.capacity_bytes)),
            bytes: profile.capacity_bytes as f64,
            color: "#cf222e",
        })
        .into_iter()
        .collect();
    let csv = export::csv(
        &[
            "allocator",
            "time_ps",
            "heap_bytes",
            "stack_bytes",
            "free_bytes",
        ],
        profile.timeline.iter().map(|p| {
            vec![
                profile.allocator.clone(),
                p.time_ps.to_string(),
                p.heap_bytes.to_string(),
                p.stack_bytes.to_string(),
                p.free_bytes.to_string(),
            ]
        }),
    );
    let title = format!("Allocator {}", profile.allocator);
    let description = format!(
        "{title}: heap {} at the peak ({:.3} ms), {} timeline points.",
        format_bytes(profile.peak_heap_bytes),
        ms(profile.peak_time_ps),
        profile.timeline.len()
    );
    let mut active = profile.active_at_peak.clone();
    crate::sort::sort_by_key(&mut active, |a| std::cmp::Reverse(a.allocation_bytes));
    let active_total = active.len();
    let active_rows = active
        .iter()
        .take(ACTIVE_ROWS)
        .map(|a| {
            view! {
                <tr>
                    <td class="num"><Bytes value=a.allocation_bytes/></td>
                    <td class="num"><Bytes value=a.requested_bytes/></td>
                    <td class="num">{a.occurrences}</td>
                    <td class="mono" title=a.op_name.clone()>{a.op_name.clone()}</td>
                    <td class="mono shape">{a.shape.clone()}</td>
                    <td>{a.data_type.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="allocator-block" data-allocator=profile.allocator.clone()>
            <h3 class="subhead">{title.clone()} <span class="muted mono">{format!(" {}", base_name(&profile.input))}</span></h3>
            <dl class="stats">
                <div class="stat" data-field="peak_heap"><dt>"Heap at the peak"</dt><dd><Bytes value=profile.peak_heap_bytes/></dd></div>
                <div class="stat"><dt>"Stack at the peak"</dt><dd><Bytes value=profile.peak_stack_bytes/></dd></div>
                <div class="stat"><dt>"Peak at"</dt><dd>{format!("{:.3} ms", ms(profile.peak_time_ps))}</dd></div>
                {(profile.capacity_bytes > 0).then(|| view! { <div class="stat"><dt>"Capacity"</dt><dd><Bytes value=profile.capacity_bytes/></dd></div> })}
                <div class="stat"><dt>"Fragmentation at the peak"</dt><dd>{format!("{:.1}%", profile.fragmentation_at_peak * 100.0)}</dd></div>
            </dl>
            <PlotView
                lines=lines
                levels=levels
                title=title
                x_label="time (ms)"
                x_name="ms"
                file_stem=format!("oomscope-allocator-{}", export::file_stem(&profile.allocator))
                csv=csv
                projection_toggle=false
                projection_shown=false
                description=description
            />
            {(active_total > 0).then(|| view! {
                <h4 class="subhead">{format!("Allocations active at the peak ({active_total}, largest {})", active_total.min(ACTIVE_ROWS))}</h4>
                <div class="table-scroll">
                    <table class="data">
                        <TableHead columns=vec![
                            ("Allocated", true), ("Requested", true), ("Count", true), ("Operation", false), ("Shape", false), ("Type", false),
                        ]/>
                        <tbody>{active_rows}</tbody>
                    </table>
                </div>
            })}
        </div>
    }
}
