//! Two runs compared (issue 18): the two drop targets that start a
//! comparison ([`setup`]), then the comparison itself, in this order: who A
//! and B are, what is partial about it (notes), both sides' headline
//! numbers ([`sides`]), each matched module's peaks with the difference cut
//! into named changes and the buffers behind them ([`modules`],
//! [`buffers`]), the decision tree's estimates next to the real change
//! ([`estimates`]), and the other inputs: OOM errors number by number,
//! memory per step, allocator and run-time profiles ([`runtime`]).
//! [`exports`] saves it (JSON, CSV) and links it (`#c=`).
//!
//! Every number comes from the analyzer's `Comparison`; a comparison opened
//! from a link is drawn from the same type, so it looks the same.

mod buffers;
mod estimates;
mod exports;
mod modules;
mod runtime;
pub mod setup;
mod sides;

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::compare::Comparison;

use crate::state::{use_state, ShownComparison};

/// The compare setup when open, and the comparison on screen, if any.
#[component]
pub fn CompareView() -> impl IntoView {
    let state = use_state();
    view! {
        <Show when=move || state.compare_setup.get()>
            <setup::CompareSetup/>
        </Show>
        {move || state.comparison.get().map(|shown| view! { <ComparisonSections shown=shown/> })}
    }
}

#[component]
fn ComparisonSections(shown: Arc<ShownComparison>) -> impl IntoView {
    let c: Arc<Comparison> = Arc::new(shown.comparison().clone());
    let shared = matches!(*shown, ShownComparison::Shared(_));
    let unmatched = (!c.only_in_a.is_empty() || !c.only_in_b.is_empty())
        .then(|| view! { <Unmatched comparison=c.clone()/> });
    view! {
        <article class="comparison" id=crate::navigate::COMPARISON_SECTION aria-label="Comparison of two runs">
            <section class="card compare-head" aria-labelledby="comparison-title">
                <div class="section-head">
                    <h2 id="comparison-title">
                        "A: " <span class="compare-label-a">{c.a.label.clone()}</span>
                        " · B: " <span class="compare-label-b">{c.b.label.clone()}</span>
                    </h2>
                    <exports::ComparisonExports shown=shown.clone()/>
                </div>
                {shared.then(|| view! { <SharedNote reductions=c.reductions.clone()/> })}
                <Notes comparison=c.clone()/>
                <sides::Sides comparison=c.clone()/>
            </section>
            <ModuleCards comparison=c.clone()/>
            {unmatched}
            <estimates::Estimates comparison=c.clone()/>
            <runtime::OtherInputs comparison=c/>
        </article>
    }
}

/// Module cards shown before "Show all": real programs have a handful of
/// modules; a link or a dump with thousands would otherwise render thousands
/// of cards at once.
const MODULE_CARDS: usize = 24;

/// One card per matched module that allocates something, the first
/// [`MODULE_CARDS`] until asked; memory spaces empty on both sides (VMEM of
/// a program with no kernel) are one line.
#[component]
fn ModuleCards(comparison: Arc<Comparison>) -> impl IntoView {
    let all = RwSignal::new(false);
    let (used, empty): (Vec<_>, Vec<_>) = comparison
        .modules
        .iter()
        .cloned()
        .partition(|m| m.peak_bytes_a > 0 || m.peak_bytes_b > 0);
    let total = used.len();
    let empty_line = (!empty.is_empty()).then(|| {
        let names: Vec<String> = empty
            .iter()
            .map(|m| format!("{} in {}", m.module_a, m.memory_space.words()))
            .collect();
        view! { <p class="muted compare-empty-modules">"Nothing allocated on either side: " {names.join("; ")}</p> }
    });
    view! {
        {move || {
            let shown = if all.get() { total } else { total.min(MODULE_CARDS) };
            used[..shown]
                .iter()
                .cloned()
                .map(|m| view! { <modules::ModuleCard module=m/> })
                .collect_view()
        }}
        {empty_line}
        {(total > MODULE_CARDS).then(|| view! {
            <button class="show-all-modules" on:click=move |_| all.set(true) hidden=move || all.get()>
                {format!("Show all {total} modules")}
            </button>
        })}
    }
}

/// Why the comparison is partial: no module in common, a side that failed,
/// a low-confidence pairing.
#[component]
fn Notes(comparison: Arc<Comparison>) -> impl IntoView {
    comparison
        .notes
        .iter()
        .map(|n| {
            let kind = buffers::json_name(&n.kind);
            view! { <p class="compare-note" role="note" data-kind=kind>{n.text.clone()}</p> }
        })
        .collect_view()
}

/// A comparison opened from a link: read-only, and what the link dropped.
#[component]
fn SharedNote(reductions: Vec<String>) -> impl IntoView {
    let reduced = (!reductions.is_empty()).then(|| {
        view! {
            <ul class="shared-reductions">
                {reductions.into_iter().map(|r| view! { <li>{r}</li> }).collect_view()}
            </ul>
        }
    });
    view! {
        <div class="example-banner shared-banner" role="note">
            <p><strong>"Shared comparison"</strong>" · opened from a link, as the sender saw it (the two reports themselves are not in the link)."</p>
            {reduced}
        </div>
    }
}

/// Modules only one side has.
#[component]
fn Unmatched(comparison: Arc<Comparison>) -> impl IntoView {
    let list = |names: &[String]| names.join(", ");
    view! {
        <section class="card compare-unmatched" aria-label="Modules on one side only">
            <h3>"Modules on one side only"</h3>
            {(!comparison.only_in_a.is_empty()).then(|| view! {
                <p data-side="a">"Only in A: " <span class="mono">{list(&comparison.only_in_a)}</span></p>
            })}
            {(!comparison.only_in_b.is_empty()).then(|| view! {
                <p data-side="b">"Only in B: " <span class="mono">{list(&comparison.only_in_b)}</span></p>
            })}
        </section>
    }
}
