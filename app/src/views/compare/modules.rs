//! One matched module: peak A, peak B, the difference, padding at the peak
//! on each side, the changes in words with their bytes (they sum to the
//! difference; `other` is what no buffer explains), and the buffers behind
//! them.

use leptos::prelude::*;
use oomscope_report::compare::{ModuleComparison, ModuleMatch};
use oomscope_report::MemoryColor;

use crate::format::{Bytes, Difference};
use crate::widgets::table_head::TableHead;

use super::buffers::BufferChanges;

fn matched_by_text(m: &ModuleComparison) -> String {
    match m.matched_by {
        ModuleMatch::SameName => "matched by name".to_string(),
        ModuleMatch::SameProgram => format!(
            "matched by program ({:.0}% in common)",
            m.similarity * 100.0
        ),
        ModuleMatch::LowConfidence => format!(
            "paired for lack of a better match ({:.0}% in common)",
            m.similarity * 100.0
        ),
    }
}

/// Which peak both sides show, in words.
fn peak_kind_text(kind: &str) -> String {
    match kind {
        "heap_simulator" => "peaks are XProf's heap-simulator peaks (padded)".to_string(),
        "live_range" => "peaks are the compiler's live-range peaks (unpadded)".to_string(),
        "" => String::new(),
        other => format!("peaks: {other}"),
    }
}

#[component]
pub fn ModuleCard(module: ModuleComparison) -> impl IntoView {
    let m = module;
    let title = if m.module_a == m.module_b {
        m.module_a.clone()
    } else {
        format!("{} → {}", m.module_a, m.module_b)
    };
    let space =
        (m.memory_space != MemoryColor::Device).then(|| format!(" · {}", m.memory_space.words()));
    let summary = (!m.summary.is_empty())
        .then(|| view! { <p class="compare-summary">{m.summary.clone()}</p> });
    let (name, memory_space, aria) = (
        m.name.clone(),
        m.memory_space.to_string(),
        format!("Module {title}"),
    );
    view! {
        <section class="card compare-module" data-module=name data-memory-space=memory_space aria-label=aria>
            <h3><span class="mono">{title}</span>{space}</h3>
            <p class="muted">{matched_by_text(&m)} " · " {peak_kind_text(&m.peak_kind)}</p>
            <dl class="stats">
                <div class="stat" data-field="peak-a"><dt>"Peak A"</dt><dd><Bytes value=m.peak_bytes_a/></dd></div>
                <div class="stat" data-field="peak-b"><dt>"Peak B"</dt><dd><Bytes value=m.peak_bytes_b/></dd></div>
                <div class="stat" data-field="difference"><dt>"Difference (B − A)"</dt><dd><Difference value=m.difference_bytes/></dd></div>
                <div class="stat" data-field="padding-a"><dt>"Padding at peak A"</dt><dd><Bytes value=m.peak_padding_bytes_a/></dd></div>
                <div class="stat" data-field="padding-b"><dt>"Padding at peak B"</dt><dd><Bytes value=m.peak_padding_bytes_b/></dd></div>
            </dl>
            {summary}
            <Changes module=m.clone()/>
            <BufferChanges module=m/>
        </section>
    }
}

/// The named changes, largest first: they sum to the difference.
#[component]
fn Changes(module: ModuleComparison) -> impl IntoView {
    if module.changes.is_empty() {
        return view! { <p class="muted">"No change at the peak."</p> }.into_any();
    }
    let rows = module
        .changes
        .iter()
        .map(|ch| {
            view! {
                <tr class="compare-change" data-kind=ch.kind.as_str()>
                    <td>{ch.kind.as_str()}</td>
                    <td class="num"><Difference value=ch.bytes/></td>
                    <td class="num">{ch.buffers}</td>
                    <td class="change-text">{ch.text.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <h4 class="subhead">"What changed"</h4>
        <div class="table-scroll">
            <table class="data compare-changes">
                <TableHead columns=vec![("Change", false), ("At the peak", true), ("Buffers", true), ("In words", false)]/>
                <tbody>{rows}</tbody>
                <tfoot>
                    <tr>
                        <td>"explained by buffers"</td>
                        <td class="num" data-field="explained"><Difference value=module.explained_bytes/></td>
                        <td></td>
                        <td class="muted">"the rest, if any, is the “other” change: what no buffer at the peak explains"</td>
                    </tr>
                </tfoot>
            </table>
        </div>
    }
    .into_any()
}
