//! The comparison of inputs other than compiled modules: the same OOM
//! error before and after (each number's change), memory per step (growth
//! per step A vs B), allocator profiles and PyTorch timelines (peaks), and
//! PyTorch snapshots / JAX profiles (peaks, the stacks whose live bytes
//! changed most, new and vanished allocation sites).

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::compare::{
    Comparison, NumberChange, OomEventComparison, PeakComparison, SeriesComparison, StackChange,
    StackProfileComparison,
};
use oomscope_report::units::format_byte_difference;

use crate::format::{Bytes, Difference};
use crate::widgets::stacks::frame_label;
use crate::widgets::table_head::TableHead;

/// Stacks listed per profile.
const STACKS_SHOWN: usize = 10;

#[component]
pub fn OtherInputs(comparison: Arc<Comparison>) -> impl IntoView {
    let c = comparison;
    let peaks: Vec<PeakComparison> = c
        .allocator_profiles
        .iter()
        .chain(&c.memory_timelines)
        .cloned()
        .collect();
    view! {
        {c.oom_events.iter().cloned().map(|e| view! { <OomNumbers event=e/> }).collect_view()}
        {(!c.step_series.is_empty()).then(|| view! { <Series series=c.step_series.clone()/> })}
        {(!peaks.is_empty()).then(|| view! { <Peaks peaks=peaks/> })}
        {c.stack_profiles.iter().cloned().map(|p| view! { <StackProfile profile=p/> }).collect_view()}
    }
}

/// `used_bytes` → `used`.
fn field_name(field: &str) -> String {
    field
        .strip_suffix("_bytes")
        .unwrap_or(field)
        .replace('_', " ")
}

#[component]
fn OomNumbers(event: OomEventComparison) -> impl IntoView {
    let rows = event
        .numbers
        .iter()
        .map(|n| view! { <NumberRow number=n.clone()/> })
        .collect_view();
    view! {
        <section class="card compare-oom" aria-label="Out-of-memory error, before and after">
            <h3>{format!("Out-of-memory error ({}), number by number", event.memory_space)}</h3>
            <div class="table-scroll">
                <table class="data">
                    <TableHead columns=vec![("Number", false), ("A", true), ("B", true), ("Change", true)]/>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}

#[component]
fn NumberRow(number: NumberChange) -> impl IntoView {
    let side = |v: Option<u64>| {
        v.map(|b| view! { <Bytes value=b/> }.into_any())
            .unwrap_or_else(|| view! { "—" }.into_any())
    };
    view! {
        <tr class="compare-number" data-field=number.field.clone()>
            <td>{field_name(&number.field)}</td>
            <td class="num">{side(number.a)}</td>
            <td class="num">{side(number.b)}</td>
            <td class="num">{number.difference.map(|d| view! { <Difference value=d/> })}</td>
        </tr>
    }
}

#[component]
fn Series(series: Vec<SeriesComparison>) -> impl IntoView {
    let rows = series
        .iter()
        .map(|s| {
            view! {
                <tr class="compare-series" data-device=s.device.clone()>
                    <td>{format!("{} {}", s.device, s.metric)}</td>
                    <td class="num" data-field="growth-a"><Growth slope=s.slope_bytes_per_step_a/></td>
                    <td class="num" data-field="growth-b"><Growth slope=s.slope_bytes_per_step_b/></td>
                    <td class="num"><Bytes value=s.max_bytes_a/></td>
                    <td class="num"><Bytes value=s.max_bytes_b/></td>
                    <td class="num">{s.common_steps}</td>
                    <td class="change-text">{s.summary.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card compare-steps" aria-label="Memory per step, before and after">
            <h3>"Memory per step"</h3>
            <div class="table-scroll">
                <table class="data">
                    <TableHead columns=vec![("Series", false), ("Growth A", true), ("Growth B", true), ("Max A", true), ("Max B", true), ("Common steps", true), ("In words", false)]/>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}

/// Growth per step (`+2.00 MiB/step`, the rounded bytes in `data-bytes`);
/// a dash when the side has no trend.
#[component]
fn Growth(slope: Option<f64>) -> impl IntoView {
    slope.map(|x| x.round() as i64).map_or_else(
        || view! { "—" }.into_any(),
        |bytes| view! { <span class="bytes" data-bytes=bytes.to_string()>{format!("{}/step", format_byte_difference(bytes))}</span> }.into_any(),
    )
}

#[component]
fn Peaks(peaks: Vec<PeakComparison>) -> impl IntoView {
    let rows = peaks
        .iter()
        .map(|p| {
            view! {
                <tr class="compare-peak">
                    <td>{p.name.clone()}</td>
                    <td class="num"><Bytes value=p.peak_bytes_a/></td>
                    <td class="num"><Bytes value=p.peak_bytes_b/></td>
                    <td class="num"><Difference value=p.difference_bytes/></td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card compare-peaks" aria-label="Allocator and timeline peaks, before and after">
            <h3>"Allocator profiles and memory timelines"</h3>
            <div class="table-scroll">
                <table class="data">
                    <TableHead columns=vec![("Profile", false), ("Peak A", true), ("Peak B", true), ("Difference", true)]/>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}

#[component]
fn StackProfile(profile: StackProfileComparison) -> impl IntoView {
    let p = profile;
    let what = match p.kind {
        oomscope_report::compare::StackProfileKind::MemorySnapshot => "PyTorch memory snapshot",
        oomscope_report::compare::StackProfileKind::DeviceMemoryProfile => {
            "JAX device memory profile"
        }
    };
    let device = if p.device.is_empty() {
        String::new()
    } else {
        format!(", device {}", p.device)
    };
    let rows = p
        .stacks
        .iter()
        .take(STACKS_SHOWN)
        .map(|s| view! { <StackRow stack=s.clone()/> })
        .collect_view();
    view! {
        <section class="card compare-stacks" data-device=p.device.clone() aria-label=format!("{what}{device}, before and after")>
            <h3>{format!("{what}{device}")}</h3>
            <dl class="stats">
                <div class="stat" data-field="peak-a"><dt>"Peak A"</dt><dd><Bytes value=p.peak_bytes_a/></dd></div>
                <div class="stat" data-field="peak-b"><dt>"Peak B"</dt><dd><Bytes value=p.peak_bytes_b/></dd></div>
                <div class="stat" data-field="difference"><dt>"Difference (B − A)"</dt><dd><Difference value=p.difference_bytes/></dd></div>
                <div class="stat" data-field="sites"><dt>"Allocation sites"</dt><dd>{format!("{} new, {} vanished", p.new_sites, p.vanished_sites)}</dd></div>
            </dl>
            <h4 class="subhead">"The stacks whose live bytes changed most"</h4>
            <div class="table-scroll">
                <table class="data">
                    <TableHead columns=vec![("Allocated at", false), ("Change", false), ("A", true), ("B", true), ("Difference", true)]/>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
}

#[component]
fn StackRow(stack: StackChange) -> impl IntoView {
    let at = stack
        .frames
        .first()
        .map(frame_label)
        .unwrap_or_else(|| "(no frames)".to_string());
    let whole = stack
        .frames
        .iter()
        .map(frame_label)
        .collect::<Vec<_>>()
        .join("\n");
    view! {
        <tr class="compare-stack" data-kind=stack.kind.as_str()>
            <td class="mono" title=whole>{at}</td>
            <td>{stack.kind.as_str()}</td>
            <td class="num"><Bytes value=stack.bytes_a/></td>
            <td class="num"><Bytes value=stack.bytes_b/></td>
            <td class="num"><Difference value=stack.difference_bytes/></td>
        </tr>
    }
}
