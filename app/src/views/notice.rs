//! A problem with the page itself (the worker died, a report could not be
//! read), as opposed to a problem with one input.

use leptos::prelude::*;

use crate::state::use_state;

#[component]
pub fn Notice() -> impl IntoView {
    let state = use_state();
    move || {
        state.notice.get().map(|text| {
            view! {
                <div class="notice" role="alert">
                    <span>{text}</span>
                    <button
                        type="button"
                        class="button small secondary"
                        on:click=move |_| state.notice.set(None)
                    >
                        "Dismiss"
                    </button>
                </div>
            }
        })
    }
}
