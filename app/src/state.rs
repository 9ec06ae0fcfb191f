//! The page's reactive state, shared by all views through Leptos context.

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::compare::{ComparedRuns, Comparison};
use oomscope_report::{Report, ViewState};

/// Where the report on screen came from.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportOrigin {
    /// The embedded example fixture (its name).
    Example(String),
    /// The user's own files.
    User,
    /// The report the document carries (`oomscope analyze --html`, a
    /// notebook's `oomscope.show()`): see `embedded.rs`.
    Embedded,
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
    /// The labels of the two runs when the job compares them.
    pub comparing: Option<(String, String)>,
}

/// The comparison of two runs on screen.
#[derive(Debug, Clone, PartialEq)]
pub enum ShownComparison {
    /// Analysed here: both reports and their comparison.
    Analysed(Box<ComparedRuns>),
    /// Opened from a `#c=` link, which carries the comparison only.
    Shared(Box<Comparison>),
}

impl ShownComparison {
    pub fn comparison(&self) -> &Comparison {
        match self {
            ShownComparison::Analysed(runs) => &runs.comparison,
            ShownComparison::Shared(comparison) => comparison,
        }
    }
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
    /// A buffer another view (the padding table, the decision tree, an
    /// opened link) asks the module view, its timeline and the padding view
    /// to show: the timeline pins it, the padding table selects its row.
    pub buffer_focus: RwSignal<Option<BufferFocus>>,
    /// What the user has open: the section (`tree`, `timeline`, `padding`,
    /// `steps`; empty before any interaction), the module picked and the
    /// selection (see [`Selection`]). A link carries it; opening a link
    /// restores it.
    pub open_view: RwSignal<ViewState>,
    /// The comparison of two runs on screen (then `report` is `None`).
    pub comparison: RwSignal<Option<Arc<ShownComparison>>>,
    /// Whether the two drop targets of "Compare two runs" are open.
    pub compare_setup: RwSignal<bool>,
}

/// What `ViewState::selection` names (the text form travels in links).
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// A buffer of the view's module, by logical id.
    Buffer(i64),
    /// A buffer of the view's module without an id, by name.
    BufferName(String),
    /// A decision-tree node, by id.
    Node(String),
    /// A rank of the ranks view.
    Rank(u32),
}

impl Selection {
    pub fn parse(text: &str) -> Option<Selection> {
        if let Some(id) = text.strip_prefix("buffer:") {
            id.parse().ok().map(Selection::Buffer)
        } else if let Some(name) = text.strip_prefix("buffer-name:") {
            Some(Selection::BufferName(name.to_string()))
        } else if let Some(rank) = text.strip_prefix("rank:") {
            rank.parse().ok().map(Selection::Rank)
        } else {
            text.strip_prefix("node:")
                .map(|id| Selection::Node(id.to_string()))
        }
    }

    /// The selection of a buffer: by its logical id when it has one, else by
    /// name.
    pub fn of_buffer(id: Option<i64>, name: &str) -> Selection {
        match id {
            Some(id) => Selection::Buffer(id),
            None => Selection::BufferName(name.to_string()),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Selection::Buffer(id) => format!("buffer:{id}"),
            Selection::BufferName(name) => format!("buffer-name:{name}"),
            Selection::Node(id) => format!("node:{id}"),
            Selection::Rank(rank) => format!("rank:{rank}"),
        }
    }
}

/// Which buffer to show: the module by its display name and memory space,
/// the buffer by its id in the module (or its name when the id is unknown);
/// or, with `module` empty, the allocation of rank `listing_rank` in an OOM
/// error's listing.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferFocus {
    pub module: String,
    pub memory_space: oomscope_report::MemoryColor,
    pub buffer_id: Option<i64>,
    pub buffer_name: String,
    pub listing_rank: Option<u32>,
}

impl BufferFocus {
    /// Whether `id`/`name` is this buffer (by id when known, else by name).
    pub fn is(&self, id: Option<i64>, name: &str) -> bool {
        match (self.buffer_id, id) {
            (Some(a), Some(b)) => a == b,
            _ => self.buffer_name == name,
        }
    }
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
            open_view: RwSignal::new(ViewState::default()),
            comparison: RwSignal::new(None),
            compare_setup: RwSignal::new(false),
        }
    }
}

pub fn use_state() -> AppState {
    expect_context::<AppState>()
}
