//! For a report opened from a link, the note above the run-time sections
//! (snapshots, device memory profiles, timelines) saying what the link left
//! out of them: the reductions that name them.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::Report;

/// For a report opened from a link, what the link left out of its run-time
/// sections (snapshots, device memory profiles, timelines): the reductions
/// that name them. Shown above those sections.
pub fn runtime_left_out(report: &Report) -> Option<String> {
    let shared = report.shared.as_ref()?;
    let notes: Vec<&str> = shared
        .reductions
        .iter()
        .filter(|r| r.starts_with("run-time"))
        .map(|r| r.strip_prefix("run-time sections: ").unwrap_or(r))
        .collect();
    (!notes.is_empty()).then(|| format!("The link carries only: {}.", notes.join("; ")))
}

/// [`runtime_left_out`] as a note, or nothing.
#[component]
pub fn RuntimeLeftOut(report: Arc<Report>) -> impl IntoView {
    runtime_left_out(&report).map(|text| {
        view! { <p class="muted shared-runtime-note" data-testid="shared-runtime-note">{text}</p> }
    })
}
