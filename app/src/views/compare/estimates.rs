//! A's decision-tree estimates next to what the change really did: the
//! tree said "bf16 would save X"; B is A in bf16, and saved Y.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::compare::Comparison;

use crate::format::{fact_label, Bytes};
use crate::widgets::table_head::TableHead;

/// Bytes saved; a negative saving (the change cost memory) is written
/// with its sign.
#[component]
fn Saving(value: i64) -> impl IntoView {
    if value >= 0 {
        view! { <Bytes value=value as u64/> }.into_any()
    } else {
        view! {
            <span class="bytes" data-bytes=value.to_string()>{oomscope_report::units::format_signed_bytes(value)}</span>
        }
        .into_any()
    }
}

#[component]
pub fn Estimates(comparison: Arc<Comparison>) -> impl IntoView {
    if comparison.estimates.is_empty() {
        return ().into_any();
    }
    let rows = comparison
        .estimates
        .iter()
        .map(|e| {
            view! {
                <tr class="compare-estimate" data-kind=e.kind.as_str()>
                    <td>{e.kind.as_str()}</td>
                    <td>{fact_label(&e.fact)} <span class="muted">{format!(" ({})", e.node)}</span></td>
                    <td class="num" data-field="estimate"><Saving value=e.estimate_bytes/></td>
                    <td class="num" data-field="actual"><Saving value=e.actual_bytes/></td>
                    <td class="mono">{e.module.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card compare-estimates" aria-labelledby="compare-estimates-title">
            <h3 id="compare-estimates-title">"A's estimates against the real change"</h3>
            <p class="muted">"What A's decision tree estimated a remedy would save, next to what B's change saved at the peak (positive = saved)."</p>
            <div class="table-scroll">
                <table class="data">
                    <TableHead columns=vec![("Change", false), ("Estimate", false), ("Estimated", true), ("Real", true), ("Module", false)]/>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </section>
    }
    .into_any()
}
