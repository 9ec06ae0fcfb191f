//! The page's composition: the header and the report's sections, in
//! order (`main.rs` places the rest: notice, drop zone, progress, the
//! comparison). Views never place (or call) each other, they meet in
//! `AppState`.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::Report;

use crate::example;
use crate::state::{use_state, ReportOrigin};
use crate::views::{device, diagnosis, inputs, modules, padding, runtime, share, steps, verdict};

#[component]
pub fn ReportView() -> impl IntoView {
    let state = use_state();
    move || {
        let origin = state.origin.get();
        state
            .report
            .get()
            .map(|report| view! { <ReportSections report=report origin=origin/> })
    }
}

#[component]
fn ReportSections(report: Arc<Report>, origin: Option<ReportOrigin>) -> impl IntoView {
    let banner = match origin {
        Some(ReportOrigin::Example(name)) => Some(view! {
            <p class="example-banner" role="note">
                <strong>"Example report. "</strong>
                "This is oomscope's analysis of "
                <code>{name}</code>
                ", the compile log and XLA dump folder of a real JAX program compiled for TPU"
                {(!example::EXAMPLE_DESCRIPTION.is_empty()).then(|| format!(" ({})", example::EXAMPLE_DESCRIPTION))}
                ". Drop your own files to replace it."
            </p>
        }),
        _ => None,
    };
    // The section the user works in is what a link made now would open.
    let state = use_state();
    let note = move |ev: &web_sys::Event| crate::navigate::note_section(state, ev);
    view! {
        <article
            class="report"
            aria-label="Report"
            on:pointerdown=move |ev| note(&ev)
            on:focusin=move |ev| note(&ev)
        >
            {banner}
            <share::SharedBanner report=report.clone()/>
            <verdict::Verdict report=report.clone()/>
            <crate::views::ranks::RanksView report=report.clone()/>
            <device::DevicePicker report=report.clone()/>
            <inputs::InputErrors report=report.clone()/>
            <diagnosis::DiagnosisView report=report.clone()/>
            <modules::ModulesView report=report.clone()/>
            <padding::PaddingView report=report.clone()/>
            <steps::StepsView report=report.clone()/>
            <runtime::RuntimeView report=report.clone()/>
            <crate::views::snapshot::SnapshotView report=report.clone()/>
            <inputs::InputsView report=report/>
        </article>
    }
}

/// The page header: name, what the tool is for, the way back to the
/// example, and Copy link.
#[component]
pub fn Header() -> impl IntoView {
    let state = use_state();
    let showing_example = move || matches!(state.origin.get(), Some(ReportOrigin::Example(_)));
    let busy = move || state.job.with(Option::is_some);
    view! {
        <header class="page-header">
            <div class="brand">
                <span class="brand-mark" aria-hidden="true"></span>
                <span class="brand-name">"oomscope"</span>
            </div>
            <p class="tagline">
                "Out-of-memory investigator for XLA (TPU, GPU) and PyTorch jobs. "
                "Your files are analysed inside this page and never uploaded."
            </p>
            <Show when=move || !crate::embedded::active() && example::available() && !showing_example()>
                <button
                    type="button"
                    class="button secondary"
                    disabled=busy
                    on:click=move |_| example::load(state)
                >
                    "Show the example"
                </button>
            </Show>
            {if crate::embedded::active() {
                // No worker here to make a link: the command made it.
                crate::embedded::link().map(|link| view! {
                    <a class="button secondary" href=link target="_blank" rel="noopener noreferrer">
                        "Open on the full page"
                    </a>
                }.into_any())
            } else {
                Some(view! { <share::CopyLink/> }.into_any())
            }}
        </header>
    }
}
