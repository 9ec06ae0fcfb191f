//! Permalinks on the page: the "Copy link" button, opening a link from the
//! page's URL fragment (`#r=…`, on load and on `hashchange`), and the banner
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
use wasm_bindgen::JsCast;

use crate::state::{use_state, AppState};
use crate::worker_client;

/// Opens the link in the page's URL fragment, if any, and follows later
/// fragment changes. Returns whether the page was opened with a link (then
/// the embedded example must not replace it).
pub fn open_from_location(state: AppState) -> bool {
    let on_hash = gloo_events::EventListener::new(&gloo_utils::window(), "hashchange", move |_| {
        if let Some(link) = link_in_location() {
            worker_client::open_link(state, link);
        }
    });
    // The listener lives as long as the page.
    on_hash.forget();
    match link_in_location() {
        Some(link) => {
            worker_client::open_link(state, link);
            true
        }
        None => false,
    }
}

/// The fragment when it holds a report (`#r=…`).
fn link_in_location() -> Option<String> {
    let hash = web_sys::window()?.location().hash().ok()?;
    hash.trim_start_matches('#').starts_with("r=").then_some(hash)
}

/// The link's target: this page, without its fragment.
fn base_url() -> String {
    let Some(location) = web_sys::window().map(|w| w.location()) else {
        return String::new();
    };
    format!(
        "{}{}",
        location.origin().unwrap_or_default(),
        location.pathname().unwrap_or_default()
    )
}

/// Outcome of the last "Copy link".
#[derive(Debug, Clone, PartialEq)]
enum Made {
    Working,
    Link { url: String, reductions: Vec<String>, copied: bool },
    Failed(String),
}

/// The "Copy link" button (in the header), shown while a report is on screen.
#[component]
pub fn CopyLink() -> impl IntoView {
    let state = use_state();
    let made: RwSignal<Option<Made>> = RwSignal::new(None);
    // A new report makes the old link stale.
    Effect::new(move |_| {
        state.report.track();
        made.set(None);
    });
    let link_field: NodeRef<leptos::html::Input> = NodeRef::new();
    let on_click = move |_| {
        let Some(report) = state.report.get_untracked() else {
            return;
        };
        made.set(Some(Made::Working));
        let now = js_sys::Date::now().max(0.0) as u64;
        worker_client::make_link(
            state,
            &report,
            base_url(),
            crate::navigate::current_view(state),
            now,
            Box::new(move |result| match result {
                Ok((url, reductions)) => {
                    made.set(Some(Made::Link { url: url.clone(), reductions: reductions.clone(), copied: false }));
                    copy_to_clipboard(url, move |copied| {
                        made.update(|m| {
                            if let Some(Made::Link { copied: c, .. }) = m {
                                *c = copied;
                            }
                        });
                        if !copied {
                            // Fallback: select the link for the user to copy.
                            if let Some(input) = link_field.get_untracked() {
                                input.select();
                            }
                        }
                    });
                }
                Err(message) => made.set(Some(Made::Failed(message))),
            }),
        );
    };
    let status = move || {
        made.get().map(|made| match made {
            Made::Working => view! { <span class="muted">"Making the link…"</span> }.into_any(),
            Made::Failed(message) => view! {
                <span class="share-error" role="alert">{format!("No link: {message}")}</span>
            }
            .into_any(),
            Made::Link { url, reductions, copied } => {
                let length = url.chars().count();
                let note = if copied {
                    format!("Link copied ({length} characters).")
                } else {
                    format!("Link ready ({length} characters): select it and copy.")
                };
                let reduced = (!reductions.is_empty())
                    .then(|| view! { <span class="share-reduced">{format!("link reduced: {}", reductions.join("; "))}</span> });
                view! {
                    <div class="share-notice" role="status">
                    <span class="share-status" data-length=length.to_string() data-copied=copied.to_string()>{note}</span>
                    {reduced}
                    <input
                        id="share-link"
                        class="share-link mono"
                        type="text"
                        readonly
                        node_ref=link_field
                        prop:value=url
                        aria-label="Link to this report"
                        on:focus=move |ev| {
                            if let Some(input) = ev.target().and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok()) {
                                input.select();
                            }
                        }
                    />
                    </div>
                }
                .into_any()
            }
        })
    };
    view! {
        <Show when=move || state.report.with(Option::is_some)>
            <div class="share">
                <button
                    type="button"
                    id="copy-link"
                    class="button secondary"
                    title="A link that carries this report itself (in the part after #, which is never sent to any server)"
                    on:click=on_click
                >
                    "Copy link"
                </button>
                {status}
            </div>
        </Show>
    }
}

/// Writes `text` to the clipboard when the browser allows it; `done` says
/// whether it did.
fn copy_to_clipboard(text: String, done: impl FnOnce(bool) + 'static) {
    let clipboard = web_sys::window()
        .map(|w| w.navigator())
        .and_then(|n| js_sys::Reflect::get(&n, &JsValue::from_str("clipboard")).ok())
        .filter(|c| !c.is_undefined() && !c.is_null());
    let write = clipboard.as_ref().and_then(|c| {
        let function = js_sys::Reflect::get(c, &JsValue::from_str("writeText")).ok()?;
        let function = function.dyn_into::<js_sys::Function>().ok()?;
        function.call1(c, &JsValue::from_str(&text)).ok()?.dyn_into::<js_sys::Promise>().ok()
    });
    match write {
        Some(promise) => wasm_bindgen_futures::spawn_local(async move {
            done(wasm_bindgen_futures::JsFuture::from(promise).await.is_ok());
        }),
        None => done(false),
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
    let names = report.inputs.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join(", ");
    let names = if names.is_empty() { "no named inputs".to_string() } else { names };
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
