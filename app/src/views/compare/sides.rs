//! Both sides' headline numbers, shown whatever matched: the label, the
//! inputs, whether the side loaded (and its errors), its answer in one
//! sentence, and its largest module peaks.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::compare::{ComparedSide, Comparison};
use oomscope_report::MemoryColor;

use crate::format::Bytes;

/// Module peaks listed per side.
const PEAKS_SHOWN: usize = 5;

#[component]
pub fn Sides(comparison: Arc<Comparison>) -> impl IntoView {
    view! {
        <div class="compare-sides">
            <SideCard key="a" side=comparison.a.clone()/>
            <SideCard key="b" side=comparison.b.clone()/>
        </div>
    }
}

#[component]
fn SideCard(key: &'static str, side: ComparedSide) -> impl IntoView {
    let inputs = match side.inputs.len() {
        0 => String::new(),
        1 => "1 input".to_string(),
        n => format!("{n} inputs"),
    };
    let status = side
        .failed
        .then(|| view! { <span class="badge compare-failed">"could not be loaded"</span> });
    let errors = (!side.errors.is_empty()).then(|| {
        view! {
            <ul class="compare-side-errors">
                {side.errors.iter().map(|e| view! { <li class="input-error">{e.clone()}</li> }).collect_view()}
            </ul>
        }
    });
    let headline = (!side.headline.is_empty())
        .then(|| view! { <p class="compare-headline">{side.headline.clone()}</p> });
    let more = side.module_peaks.len().saturating_sub(PEAKS_SHOWN);
    let peaks = side
        .module_peaks
        .iter()
        .take(PEAKS_SHOWN)
        .map(|p| {
            let space = (p.memory_space != MemoryColor::Device).then(|| format!(" · {}", p.memory_space.words()));
            view! {
                <li class="compare-side-peak" data-module=p.module.clone() data-memory-space=p.memory_space.to_string()>
                    <span class="mono">{p.module.clone()}</span>{space} ": peak " <Bytes value=p.peak_bytes/>
                </li>
            }
        })
        .collect_view();
    view! {
        <div class="compare-side" data-side=key data-failed=side.failed.to_string()>
            <h3>
                <span class="badge">{key.to_uppercase()}</span> " " {side.label.clone()} " " {status}
            </h3>
            <p class="muted">{inputs}</p>
            {headline}
            <ul class="compare-side-peaks">{peaks}</ul>
            {(more > 0).then(|| view! { <p class="muted">{format!("and {more} more modules")}</p> })}
            {errors}
        </div>
    }
}
