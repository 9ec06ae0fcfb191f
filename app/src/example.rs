//! The embedded example: the report of a committed fixture's files,
//! analysed at build time by the same analyzer the worker runs (see
//! `build.rs`). Shown without starting the worker, so that a first visit
//! does not wait for (or download) the analyzer.

use leptos::prelude::*;

use crate::state::{AppState, ReportOrigin};

include!(concat!(env!("OUT_DIR"), "/example.rs"));

/// Whether this build carries an example.
pub fn available() -> bool {
    !EXAMPLE_REPORT.is_empty()
}

/// Shows the example (the page shows the welcome screen if this build has
/// none).
pub fn load(state: AppState) {
    if !available() {
        return;
    }
    match serde_json::from_str(EXAMPLE_REPORT) {
        Ok(report) => crate::navigate::show_report(
            state,
            report,
            ReportOrigin::Example(EXAMPLE_NAME.to_string()),
        ),
        Err(e) => state
            .notice
            .set(Some(format!("The embedded example could not be read: {e}"))),
    }
}
