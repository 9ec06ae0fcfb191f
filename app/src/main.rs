//! oomscope's page: a Leptos client-side app that gathers the user's files,
//! hands them to the analysis worker (`src/bin/worker.rs`) and draws the
//! `Report` it returns. Nothing here parses inputs.
//!
//! Layout: `state` (signals shared through context), `inputs` (files,
//! folders, drops, paste → named inputs), `worker_client` (the worker's
//! page side), `worker_pool` (many files analysed one per worker),
//! `navigate` (showing a report, the view a link carries, scrolling to
//! sections), `example` (the embedded default), `page` (where
//! the views go), `views/` (one component per section of the report, none
//! calling another), `model` (data more than one view needs), `draw` (shared
//! drawing: canvas and SVG), `widgets` (shared bits of markup).

mod draw;
mod embedded;
mod example;
mod export;
mod format;
mod inputs;
mod listen;
mod model;
mod navigate;
mod page;
mod sort;
mod state;
mod views;
mod widgets;
mod worker_client;
mod worker_pool;

use leptos::prelude::*;

use state::AppState;

fn main() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

#[component]
fn App() -> impl IntoView {
    let state = AppState::new();
    provide_context(state);
    navigate::install_test_hook(state);
    // A report the document carries is all an embedded page shows; a link
    // in the URL shows the report it carries, not the example.
    let embedded = embedded::load(state);
    if !embedded {
        if !views::share::open_from_location(state) {
            example::load(state);
        }
        offline::register_service_worker();
    }

    view! {
        <page::Header/>
        <main id="main">
            <views::notice::Notice/>
            {(!embedded).then(|| view! {
                <views::drop_zone::DropZone/>
                <views::progress::ProgressList/>
                <views::compare::CompareView/>
            })}
            <page::ReportView/>
        </main>
        <footer class="page-footer">
            "oomscope analyses your files inside this page; nothing is uploaded. "
            "Works offline once loaded."
        </footer>
    }
}

mod offline {
    //! Registers `sw.js`, which caches the page's versioned assets so that
    //! it opens without a network after the first visit.

    use wasm_bindgen::JsValue;

    pub fn register_service_worker() {
        let Some(window) = web_sys::window() else {
            return;
        };
        let navigator = window.navigator();
        // Absent outside secure contexts (and in some private modes).
        let available = js_sys::Reflect::get(&navigator, &JsValue::from_str("serviceWorker"))
            .is_ok_and(|v| !v.is_undefined() && !v.is_null());
        if available {
            // Best effort: the page works without it, only not offline.
            let _ = navigator.service_worker().register("./sw.js");
        }
    }
}
