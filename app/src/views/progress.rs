//! The analysis in flight: one progress bar per input (bytes the worker has
//! loaded), then what the analyzer is doing with it.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;

use crate::format::percent;
use crate::state::{use_state, FileProgress, Job, ReportOrigin};

#[component]
pub fn ProgressList() -> impl IntoView {
    let state = use_state();
    move || state.job.get().map(|job| view! { <JobProgress job=job/> })
}

#[component]
fn JobProgress(job: Job) -> impl IntoView {
    let title = match (&job.comparing, &job.origin) {
        (Some((a, b)), _) => format!("Comparing {a} (A) with {b} (B): {} files…", job.files.len()),
        (None, ReportOrigin::Example(name)) => format!("Analysing the example ({name})…"),
        (None, ReportOrigin::User | ReportOrigin::Embedded) => format!(
            "Analysing {} file{}…",
            job.files.len(),
            if job.files.len() == 1 { "" } else { "s" }
        ),
    };
    let current = job.current.clone().map(|(input, stage, done, total)| {
        let what = if input.is_empty() {
            stage
        } else {
            format!("{stage}: {input}")
        };
        view! {
            <p class="progress-current">
                {what} " " <span class="muted">{percent(done, total).unwrap_or_default()}</span>
            </p>
        }
    });
    view! {
        <section class="card progress" aria-live="polite" aria-busy="true" aria-labelledby="progress-title">
            <h2 id="progress-title">{title}</h2>
            {current}
            <ul class="progress-files">
                {job.files.into_iter().map(|file| view! { <FileRow file=file/> }).collect_view()}
            </ul>
        </section>
    }
}

#[component]
fn FileRow(file: FileProgress) -> impl IntoView {
    let stage = if file.stage.is_empty() {
        "queued".to_string()
    } else {
        file.stage.clone()
    };
    // <progress> wants a float maximum; an empty file is done at once.
    let max = file.size_bytes.max(1).to_string();
    let value = file.loaded_bytes.min(file.size_bytes).to_string();
    let label = format!("{}: {}", file.name, stage);
    view! {
        <li class="progress-file" data-input=file.name.clone()>
            <span class="file-name" title=file.name.clone()>{file.name.clone()}</span>
            <progress max=max value=value aria-label=label></progress>
            <span class="file-stage">{stage}</span>
            <span class="file-size muted">{format_bytes(file.size_bytes)}</span>
        </li>
    }
}
