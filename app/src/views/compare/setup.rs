//! "Compare two runs": two drop targets, A (before) and B (after), each
//! taking files, a folder, or a drop of either (zip/tar.gz included), each
//! with a label that defaults to the names given. "Compare" hands both sides
//! to the worker.
//!
//! A drop on a target belongs to that side only: it stops there, so the
//! page-wide drop (which analyses one report) never sees it.

use leptos::ev;
use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use oomscope_report::compare::{default_label, distinct_labels};
use oomscope_report::units::format_bytes;
use web_sys::{DragEvent, HtmlInputElement};

use crate::inputs::{self, PageInput};
use crate::state::use_state;
use crate::worker_client;

/// What one side holds so far.
#[derive(Clone, Copy)]
struct Side {
    /// `a` or `b`: element ids and test hooks.
    key: &'static str,
    title: &'static str,
    files: RwSignal<Vec<PageInput>, LocalStorage>,
    /// Dropped entries that could not be read: (path, message).
    errors: RwSignal<Vec<(String, String)>>,
    label: RwSignal<String>,
    /// Whether the user typed a label (then new files keep it).
    label_typed: RwSignal<bool>,
}

impl Side {
    fn new(key: &'static str, title: &'static str) -> Self {
        Side {
            key,
            title,
            files: RwSignal::new_local(Vec::new()),
            errors: RwSignal::new(Vec::new()),
            label: RwSignal::new(String::new()),
            label_typed: RwSignal::new(false),
        }
    }

    fn take(&self, files: Vec<PageInput>, errors: Vec<(String, String)>) {
        if !self.label_typed.get_untracked() {
            self.label
                .set(default_label(files.iter().map(|f| f.name.as_str())));
        }
        self.files.set(files);
        self.errors.set(errors);
    }

    /// The label to compare under: the user's, else the names given.
    fn label_now(&self) -> String {
        let typed = self.label.get_untracked().trim().to_string();
        if typed.is_empty() {
            self.files
                .with_untracked(|f| default_label(f.iter().map(|f| f.name.as_str())))
        } else {
            typed
        }
    }
}

#[component]
pub fn CompareSetup() -> impl IntoView {
    let state = use_state();
    let a = Side::new("a", "A: before");
    let b = Side::new("b", "B: after");
    let busy = move || state.job.with(Option::is_some);
    let ready = move || a.files.with(|f| !f.is_empty()) && b.files.with(|f| !f.is_empty());
    let compare = move |_| {
        let (files_a, files_b) = (a.files.get_untracked(), b.files.get_untracked());
        if files_a.is_empty() || files_b.is_empty() {
            state.notice.set(Some(
                "Give both runs some files before comparing them.".to_string(),
            ));
            return;
        }
        let labels = if a.label_typed.get_untracked() || b.label_typed.get_untracked() {
            (a.label_now(), b.label_now())
        } else {
            distinct_labels(a.label_now(), b.label_now())
        };
        worker_client::submit_comparison(state, files_a, files_b, labels);
    };
    view! {
        <section class="card compare-setup" id="compare-setup" aria-labelledby="compare-setup-title">
            <div class="section-head">
                <h2 id="compare-setup-title">"Compare two runs"</h2>
                <button type="button" class="button small secondary" on:click=move |_| state.compare_setup.set(false)>
                    "Close"
                </button>
            </div>
            <p class="hint">
                "Give the run before a change as A and the run after it as B (the same kinds of files on both sides: "
                "dump folders, HloProtos, XProf profiles, OOM logs, step logs, snapshots, JAX profiles). "
                "oomscope analyses each, then lines them up: the peak difference cut into named changes."
            </p>
            <div class="compare-targets">
                <SideTarget side=a/>
                <SideTarget side=b/>
            </div>
            <button type="button" id="compare-run" class="button" disabled=move || !ready() || busy() on:click=compare>
                "Compare A and B"
            </button>
        </section>
    }
}

#[component]
fn SideTarget(side: Side) -> impl IntoView {
    let dragging = RwSignal::new(false);
    let file_input: NodeRef<html::Input> = NodeRef::new();
    let folder_input: NodeRef<html::Input> = NodeRef::new();
    let on_picked = move |event: ev::Event| {
        let input: HtmlInputElement = event_target(&event);
        if let Some(list) = input.files() {
            side.take(inputs::from_file_list(&list), Vec::new());
        }
        input.set_value("");
    };
    let on_drop = move |event: DragEvent| {
        event.prevent_default();
        event.stop_propagation();
        dragging.set(false);
        let Some(transfer) = event.data_transfer() else {
            return;
        };
        let dropped = inputs::capture_drop(&transfer);
        spawn_local(async move {
            let (files, errors) = inputs::walk_dropped(dropped).await;
            side.take(files, errors);
        });
    };
    let on_over = move |event: DragEvent| {
        event.prevent_default();
        event.stop_propagation();
        dragging.set(true);
    };
    let key = side.key;
    view! {
        <div
            class="compare-target"
            class:dragging=move || dragging.get()
            id=format!("compare-{key}")
            data-side=key
            on:dragover=on_over
            on:dragleave=move |_| dragging.set(false)
            on:drop=on_drop
        >
            <h3>{side.title}</h3>
            <p class="muted">"Drop files or a folder here, or"</p>
            <div class="drop-actions">
                <button type="button" class="button small" on:click=move |_| {
                    if let Some(input) = file_input.get() { input.click(); }
                }>"Files…"</button>
                <button type="button" class="button small secondary" on:click=move |_| {
                    if let Some(input) = folder_input.get() { input.click(); }
                }>"Folder…"</button>
                <input id=format!("compare-{key}-files") class="visually-hidden" type="file" multiple=true tabindex="-1"
                    aria-label=format!("Files of run {}", key.to_uppercase()) node_ref=file_input on:change=on_picked/>
                <input id=format!("compare-{key}-folder") class="visually-hidden" type="file" prop:webkitdirectory=true tabindex="-1"
                    aria-label=format!("Folder of run {}", key.to_uppercase()) node_ref=folder_input on:change=on_picked/>
            </div>
            <label class="compare-label">
                "Label "
                <input
                    id=format!("compare-{key}-label")
                    type="text"
                    placeholder="the file or folder names"
                    prop:value=move || side.label.get()
                    on:input=move |ev| {
                        side.label_typed.set(true);
                        side.label.set(event_target_value(&ev));
                    }
                />
            </label>
            <GivenFiles side=side/>
        </div>
    }
}

/// How many files a side holds, their size, and what could not be read.
#[component]
fn GivenFiles(side: Side) -> impl IntoView {
    let summary = move || {
        side.files.with(|files| {
            let bytes: u64 = files.iter().map(|f| f.size_bytes).sum();
            match files.len() {
                0 => "No files yet.".to_string(),
                n => format!(
                    "{n} file{} ({})",
                    if n == 1 { "" } else { "s" },
                    format_bytes(bytes)
                ),
            }
        })
    };
    let errors = move || {
        side.errors
            .get()
            .into_iter()
            .map(|(path, message)| view! { <li class="input-error"><span class="error-input">{path}</span> ": " {message}</li> })
            .collect_view()
    };
    view! {
        <p class="compare-given" data-count=move || side.files.with(Vec::len).to_string()>{summary}</p>
        <ul class="compare-given-errors">{errors}</ul>
    }
}
