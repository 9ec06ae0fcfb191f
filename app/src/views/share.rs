//! Permalinks on the page: the "Copy link" button, opening a link from the
//! page's URL fragment (`#r=…` or a comparison's `#c=…`, on load and on
//! `hashchange`), and the banner
//! that marks a shared report as such.
//!
//! Both directions run in the analysis worker (`worker_client::open_link`,
//! `worker_client::make_link`): a link is untrusted input and is never
//! decoded on the page's thread. What a link carries is shown as text only
//! (Leptos escapes text; nothing here sets HTML from report strings).
//!
//! A link carries what the sender had open ([`crate::navigate::current_view`]);
//! opening one restores it ([`crate::navigate::show_report`]).

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::Report;
use wasm_bindgen::prelude::*;

use crate::navigate::{base_url, SharedLink};
use crate::state::{use_state, AppState};
use crate::widgets::copy_link::CopyLinkButton;
use crate::worker_client;

/// Opens the link in the page's URL fragment, if any, and follows later
/// fragment changes. Returns whether the page was opened with a link (then
/// the embedded example must not replace it).
pub fn open_from_location(state: AppState) -> bool {
    let on_hash = gloo_events::EventListener::new(&gloo_utils::window(), "hashchange", move |_| {
        if let Some(link) = link_in_location() {
            link.open(state);
        }
    });
    // The listener lives as long as the page.
    on_hash.forget();
    match link_in_location() {
        Some(link) => {
            link.open(state);
            true
        }
        None => false,
    }
}

/// The fragment when it holds a report (`#r=…`) or a comparison (`#c=…`).
fn link_in_location() -> Option<SharedLink> {
    let hash = web_sys::window()?.location().hash().ok()?;
    SharedLink::parse(&hash)
}

/// The "Copy link" button (in the header), shown while a report is on screen.
#[component]
pub fn CopyLink() -> impl IntoView {
    let state = use_state();
    let make = move |done: worker_client::LinkCallback| {
        let Some(report) = state.report.get_untracked() else {
            return done(Err("no report on screen".to_string()));
        };
        let now = js_sys::Date::now().max(0.0) as u64;
        worker_client::make_link(
            state,
            &report,
            base_url(),
            crate::navigate::current_view(state),
            now,
            done,
        );
    };
    view! {
        <Show when=move || state.report.with(Option::is_some)>
            <CopyLinkButton make=make what="this report"/>
        </Show>
    }
}

/// Marks a report opened from a link: when it was made, from which inputs,
/// what detail the link dropped.
#[component]
pub fn SharedBanner(report: Arc<Report>) -> impl IntoView {
    let Some(shared) = report.shared.clone() else {
        return ().into_any();
    };
    let made = js_sys::Date::new(&JsValue::from_f64(shared.created_unix_ms as f64));
    let made_text = String::from(made.to_locale_string("en-GB", &JsValue::UNDEFINED));
    let made_iso = made.to_iso_string().as_string().unwrap_or_default();
    let names = report
        .inputs
        .iter()
        .map(|i| i.name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let names = if names.is_empty() {
        "no named inputs".to_string()
    } else {
        names
    };
    let reductions = (!shared.reductions.is_empty()).then(|| {
        view! {
            <p class="shared-reductions">"The link carries less detail than the original analysis: "</p>
            <ul class="shared-reductions">
                {shared.reductions.iter().map(|r| view! { <li>{r.clone()}</li> }).collect_view()}
            </ul>
        }
    });
    view! {
        <div class="example-banner shared-banner" role="note" data-created=shared.created_unix_ms.to_string()>
            <p>
                <strong>"Shared report"</strong>
                " · made "
                <time datetime=made_iso>{made_text}</time>
                " · from "
                <span class="shared-inputs">{names}</span>
            </p>
            <p class="muted">
                "Opened from a link: read-only, as the sender saw it. Drop your own files to analyse them."
            </p>
            {reductions}
        </div>
    }
    .into_any()
}
