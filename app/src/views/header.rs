//! The page header: name, what the tool is for, and the way back to the
//! example.

use leptos::prelude::*;

use crate::example;
use crate::state::{use_state, ReportOrigin};

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
            <Show when=move || example::available() && !showing_example()>
                <button
                    type="button"
                    class="button secondary"
                    disabled=busy
                    on:click=move |_| example::load(state)
                >
                    "Show the example"
                </button>
            </Show>
            <crate::views::share::CopyLink/>
        </header>
    }
}
