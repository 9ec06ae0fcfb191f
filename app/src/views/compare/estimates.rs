//! A's decision-tree estimates next to what the change really did: the
//! tree said "bf16 would save X"; B is A in bf16, and saved Y.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::compare::Comparison;

use crate::format::{fact_label, Difference};
use crate::widgets::table_head::TableHead;

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
                    <td class="num" data-field="estimate"><Difference value=e.estimate_bytes/></td>
                    <td class="num" data-field="actual"><Difference value=e.actual_bytes/></td>
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
