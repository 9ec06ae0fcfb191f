//! The page's reactive state, shared by all views through Leptos context.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::Report;

/// Where the report on screen came from.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportOrigin {
    /// The embedded example fixture (its name).
    Example(String),
    /// The user's own files.
    User,
}

/// One input of the running job, as shown in the progress list.
#[derive(Debug, Clone, PartialEq)]
pub struct FileProgress {
    pub name: String,
    pub size_bytes: u64,
    /// Bytes the worker has loaded from the file so far.
    pub loaded_bytes: u64,
    /// What the analyzer is doing with it (`loading`, `reading`, ...); empty
    /// while queued, `done` once the analyzer moved past it.
    pub stage: String,
}

/// The analysis in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: u32,
    pub origin: ReportOrigin,
    pub files: Vec<FileProgress>,
    /// Latest analyzer progress over all inputs: (input, stage, done, total).
    pub current: Option<(String, String, u64, u64)>,
}

#[derive(Clone, Copy)]
pub struct AppState {
    pub report: RwSignal<Option<Arc<Report>>>,
    pub origin: RwSignal<Option<ReportOrigin>>,
    pub job: RwSignal<Option<Job>>,
    /// A problem with the page itself (not with an input), shown above all.
    pub notice: RwSignal<Option<String>>,
    /// Problems found before analysis, e.g. a dropped folder that could not
    /// be listed: (path, message). Shown with the report's own errors.
    pub gather_errors: RwSignal<Vec<(String, String)>>,
    /// A buffer another view (e.g. the padding table) asks the module view
    /// and its timeline to show and pin.
    pub buffer_focus: RwSignal<Option<BufferFocus>>,
}

/// Which buffer to show: the module by its display name and memory space,
/// the buffer by its id in the module (or its name when the id is unknown).
#[derive(Debug, Clone, PartialEq)]
pub struct BufferFocus {
    pub module: String,
    pub memory_space: i64,
    pub buffer_id: Option<i64>,
    pub buffer_name: String,
}

impl AppState {
    pub fn new() -> Self {
        AppState {
            report: RwSignal::new(None),
            origin: RwSignal::new(None),
            job: RwSignal::new(None),
            notice: RwSignal::new(None),
            gather_errors: RwSignal::new(Vec::new()),
            buffer_focus: RwSignal::new(None),
        }
    }
}

pub fn use_state() -> AppState {
    expect_context::<AppState>()
}
