//! A report embedded in the document itself, by `oomscope analyze --html`
//! (what a notebook's `oomscope.show()` displays): the page's own wasm draws
//! it inside an `<iframe srcdoc>`, with no server, no network and no worker.
//!
//! The report is the analyzer's JSON, written by the user's own `oomscope`
//! command into a `<script type="application/json">` element: it is read
//! here as the embedded example is, never as a link (links are untrusted and
//! only the worker decodes them, which an embedded page does not have).

use std::sync::OnceLock;

use leptos::prelude::*;

use crate::state::{AppState, ReportOrigin};

/// The element holding the report's JSON (`analyzer/src/cli/html.rs`
/// writes it; the two names must agree).
pub const REPORT_ELEMENT: &str = "oomscope-report";
/// Its attribute holding the report's link on the full page, when made.
pub const LINK_ATTRIBUTE: &str = "data-link";

struct Embedded {
    json: String,
    link: Option<String>,
}

fn embedded() -> Option<&'static Embedded> {
    static FOUND: OnceLock<Option<Embedded>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let element = gloo_utils::document().get_element_by_id(REPORT_ELEMENT)?;
            Some(Embedded {
                json: element.text_content().unwrap_or_default(),
                link: element
                    .get_attribute(LINK_ATTRIBUTE)
                    .filter(|l| !l.is_empty()),
            })
        })
        .as_ref()
}

/// Whether this page is an embedded report (no drop zone, no worker).
pub fn active() -> bool {
    embedded().is_some()
}

/// The full page's link to the embedded report, when the command made one.
pub fn link() -> Option<&'static str> {
    embedded()?.link.as_deref()
}

/// Shows the embedded report; false when there is none. A report that
/// does not parse is said in the notice, naming the problem.
pub fn load(state: AppState) -> bool {
    let Some(found) = embedded() else {
        return false;
    };
    match serde_json::from_str(&found.json) {
        Ok(report) => crate::navigate::show_report(state, report, ReportOrigin::Embedded),
        Err(e) => state
            .notice
            .set(Some(format!("The embedded report could not be read: {e}"))),
    }
    true
}
