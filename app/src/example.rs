//! The embedded example: a committed fixture's files (see `build.rs`),
//! analysed by the worker at startup exactly like dropped files.

use crate::inputs::PageInput;
use crate::state::{AppState, ReportOrigin};
use crate::worker_client;

include!(concat!(env!("OUT_DIR"), "/example.rs"));

/// Whether this build carries an example.
pub fn available() -> bool {
    !EXAMPLE_FILES.is_empty()
}

/// Analyses the example; the page shows the welcome screen until it is done
/// (or for good, if this build has none).
pub fn load(state: AppState) {
    if !available() {
        return;
    }
    let inputs = EXAMPLE_FILES
        .iter()
        .map(|(name, bytes)| PageInput::from_bytes(name, bytes))
        .collect();
    worker_client::submit(
        state,
        inputs,
        ReportOrigin::Example(EXAMPLE_NAME.to_string()),
    );
}
