//! The "Copy link" button and what it says: making the link (in the
//! worker), copying it to the clipboard, or a field to copy it from when
//! the browser refuses, and the detail the link dropped to fit. Used for a
//! report (in the header) and for a comparison; what to link is the
//! caller's `make`.

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::state::use_state;
use crate::worker_client::LinkCallback;

/// Outcome of the last "Copy link".
#[derive(Debug, Clone, PartialEq)]
enum Made {
    Working,
    Link {
        url: String,
        reductions: Vec<String>,
        copied: bool,
    },
    Failed(String),
}

/// `make` starts making the link and calls its argument with the outcome;
/// `what` names what the link carries ("this report").
#[component]
pub fn CopyLinkButton<F>(make: F, what: &'static str) -> impl IntoView
where
    F: Fn(LinkCallback) + Copy + Send + Sync + 'static,
{
    let state = use_state();
    let made: RwSignal<Option<Made>> = RwSignal::new(None);
    // A new report or comparison makes the old link stale.
    Effect::new(move |_| {
        state.report.track();
        state.comparison.track();
        made.set(None);
    });
    let link_field: NodeRef<leptos::html::Input> = NodeRef::new();
    let on_click = move |_| {
        made.set(Some(Made::Working));
        make(Box::new(move |result| match result {
            Ok((url, reductions)) => {
                made.set(Some(Made::Link {
                    url: url.clone(),
                    reductions: reductions.clone(),
                    copied: false,
                }));
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
        }));
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
                        aria-label=format!("Link to {what}")
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
        <div class="share">
            <button
                type="button"
                id="copy-link"
                class="button secondary"
                title=format!("A link that carries {what} itself (in the part after #, which is never sent to any server)")
                on:click=on_click
            >
                "Copy link"
            </button>
            {status}
        </div>
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
        function
            .call1(c, &JsValue::from_str(&text))
            .ok()?
            .dyn_into::<js_sys::Promise>()
            .ok()
    });
    match write {
        Some(promise) => wasm_bindgen_futures::spawn_local(async move {
            done(wasm_bindgen_futures::JsFuture::from(promise).await.is_ok());
        }),
        None => done(false),
    }
}
