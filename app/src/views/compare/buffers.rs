//! The buffers of a module whose bytes at the peak changed, ranked by the
//! size of the change: appeared, disappeared, grew, shrank, or a named
//! cause; both names and shapes, how they were paired.

use leptos::prelude::*;
use oomscope_report::compare::{BufferChange, ModuleComparison};

use crate::format::{Bytes, Difference};
use crate::widgets::table_head::TableHead;

/// Rows shown before "show all".
const FIRST_ROWS: usize = 15;

/// A vocabulary value as the JSON writes it (`metadata`, `temporary`).
pub fn json_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value)
        .map(|s| s.trim_matches('"').to_string())
        .unwrap_or_default()
}

#[component]
pub fn BufferChanges(module: ModuleComparison) -> impl IntoView {
    if module.buffers.is_empty() {
        return ().into_any();
    }
    let mut buffers = module.buffers;
    crate::sort::sort_by_key(&mut buffers, |b| {
        std::cmp::Reverse(b.difference_bytes.unsigned_abs())
    });
    let total = buffers.len();
    let show_all = RwSignal::new(false);
    let rows = move || {
        let shown = if show_all.get() {
            total
        } else {
            FIRST_ROWS.min(total)
        };
        buffers
            .iter()
            .take(shown)
            .enumerate()
            .map(|(i, b)| view! { <BufferRow rank=i + 1 buffer=b.clone()/> })
            .collect_view()
    };
    view! {
        <h4 class="subhead">"Buffers at the peak that changed, largest change first"</h4>
        <div class="table-scroll">
            <table class="data compare-buffers">
                <TableHead columns=vec![
                    ("#", true), ("Change", false), ("Buffer A", false), ("Buffer B", false), ("Shape A → B", false),
                    ("A", true), ("B", true), ("Difference", true), ("Paired by", false),
                ]/>
                <tbody>{rows}</tbody>
            </table>
        </div>
        {(total > FIRST_ROWS).then(|| view! {
            <button type="button" class="button small secondary" on:click=move |_| show_all.update(|s| *s = !*s)>
                {move || if show_all.get() { "Show fewer".to_string() } else { format!("Show all {total}") }}
            </button>
        })}
    }
    .into_any()
}

#[component]
fn BufferRow(rank: usize, buffer: BufferChange) -> impl IntoView {
    let b = buffer;
    let shape = if b.shape_a == b.shape_b || b.shape_b.is_empty() {
        b.shape_a.clone()
    } else if b.shape_a.is_empty() {
        b.shape_b.clone()
    } else {
        format!("{} → {}", b.shape_a, b.shape_b)
    };
    let title = [b.op_name.as_str(), b.source.as_str()]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" · ");
    view! {
        <tr class="compare-buffer" data-kind=b.kind.as_str() title=title>
            <td class="num">{rank}</td>
            <td>{b.kind.as_str()}</td>
            <td class="mono">{b.name_a.clone()}</td>
            <td class="mono">{b.name_b.clone()}</td>
            <td class="shape mono">{shape}</td>
            <td class="num"><Bytes value=b.bytes_a/></td>
            <td class="num"><Bytes value=b.bytes_b/></td>
            <td class="num"><Difference value=b.difference_bytes/></td>
            <td>{json_name(&b.matched_by)}</td>
        </tr>
    }
}
