//! Where inputs come in: drag-and-drop of files and whole folders anywhere
//! on the page, a file picker, a folder picker and a box to paste a log;
//! and the way into comparing two runs (which opens its own drop targets).
//! Every control is a labelled button or field, usable from the keyboard.

use leptos::ev;
use leptos::html;
use leptos::prelude::*;
use leptos::task::spawn_local;
use web_sys::{DragEvent, HtmlInputElement};

use crate::inputs::{self, PageInput};
use crate::state::{use_state, AppState, ReportOrigin};
use crate::worker_client;

/// Name given to pasted text, as if it were a file.
const PASTED_NAME: &str = "pasted log.txt";

fn analyse(state: AppState, inputs: Vec<PageInput>, gather_errors: Vec<(String, String)>) {
    if inputs.is_empty() {
        state.notice.set(Some(if gather_errors.is_empty() {
            "Nothing to analyse: the drop held no files.".to_string()
        } else {
            format!(
                "Nothing could be read from what was dropped: {}",
                describe(&gather_errors)
            )
        }));
        return;
    }
    state.gather_errors.set(gather_errors);
    worker_client::submit(state, inputs, ReportOrigin::User);
}

fn describe(errors: &[(String, String)]) -> String {
    errors
        .iter()
        .map(|(path, message)| format!("{path}: {message}"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[component]
pub fn DropZone() -> impl IntoView {
    let state = use_state();
    let dragging = RwSignal::new(false);
    let file_input: NodeRef<html::Input> = NodeRef::new();
    let folder_input: NodeRef<html::Input> = NodeRef::new();
    let paste_text: NodeRef<html::Textarea> = NodeRef::new();
    let compact = move || {
        state.report.with(Option::is_some)
            || state.comparison.with(Option::is_some)
            || state.job.with(Option::is_some)
    };

    // The whole window accepts drops, so a near miss does not make the
    // browser open the file instead.
    let over = window_event_listener(ev::dragover, move |event: DragEvent| {
        event.prevent_default();
        if let Some(transfer) = event.data_transfer() {
            transfer.set_drop_effect("copy");
        }
        if !dragging.get_untracked() {
            worker_client::warm_up(state);
        }
        dragging.set(true);
    });
    let leave = window_event_listener(ev::dragleave, move |event: DragEvent| {
        // Leaving the window (not moving between elements) has no related target.
        if event.related_target().is_none() {
            dragging.set(false);
        }
    });
    let drop = window_event_listener(ev::drop, move |event: DragEvent| {
        event.prevent_default();
        dragging.set(false);
        let Some(transfer) = event.data_transfer() else {
            return;
        };
        let dropped = inputs::capture_drop(&transfer);
        spawn_local(async move {
            let (inputs, errors) = inputs::walk_dropped(dropped).await;
            analyse(state, inputs, errors);
        });
    });
    on_cleanup(move || {
        over.remove();
        leave.remove();
        drop.remove();
    });

    let on_picked = move |event: ev::Event| {
        let input: HtmlInputElement = event_target(&event);
        if let Some(list) = input.files() {
            analyse(state, inputs::from_file_list(&list), Vec::new());
        }
        // Picking the same files again must fire `change` again.
        input.set_value("");
    };
    let analyse_pasted = move |_| {
        let Some(area) = paste_text.get() else { return };
        let text = area.value();
        if text.trim().is_empty() {
            state.notice.set(Some(
                "The paste box is empty: paste a log first.".to_string(),
            ));
            return;
        }
        analyse(
            state,
            vec![PageInput::from_bytes(PASTED_NAME, text.as_bytes())],
            Vec::new(),
        );
    };

    view! {
        <section class="drop-zone" class:compact=compact class:dragging=move || dragging.get() aria-labelledby="drop-title"
            on:pointerenter=move |_| worker_client::warm_up(state)
            on:focusin=move |_| worker_client::warm_up(state)>
            <div class="drop-text">
                <h2 id="drop-title">"Analyse your files"</h2>
                <p class="hint">
                    "Drop anywhere on this page: OOM error logs, XLA dump folders ("
                    <code>"--xla_dump_to"</code> "), XProf profiles (" <code>"*.xplane.pb"</code>
                    "), HloProtos, training logs, PyTorch memory snapshots (" <code>"*.pickle"</code>
                    "), JAX device memory profiles (" <code>"*.prof"</code> "), PyTorch memory timelines and traces, or .zip / .tar.gz archives of them."
                </p>
            </div>
            <div class="drop-actions">
                <button type="button" class="button" on:click=move |_| {
                    if let Some(input) = file_input.get() { input.click(); }
                }>"Choose files…"</button>
                <button type="button" class="button secondary" on:click=move |_| {
                    if let Some(input) = folder_input.get() { input.click(); }
                }>"Choose a folder…"</button>
                <button type="button" id="compare-open" class="button secondary"
                    title="Drop the files of two runs, A and B (before and after a change), and see what changed"
                    on:click=move |_| state.compare_setup.set(true)>
                    "Compare two runs…"
                </button>
                <input
                    id="file-input"
                    class="visually-hidden"
                    type="file"
                    multiple=true
                    tabindex="-1"
                    aria-label="Files to analyse"
                    node_ref=file_input
                    on:change=on_picked
                />
                <input
                    id="folder-input"
                    class="visually-hidden"
                    type="file"
                    prop:webkitdirectory=true
                    tabindex="-1"
                    aria-label="Folder to analyse"
                    node_ref=folder_input
                    on:change=on_picked
                />
            </div>
            <details class="paste">
                <summary>"Paste a log instead"</summary>
                <label for="paste-text">"Log text (an error message, a whole log, or a training log)"</label>
                <textarea
                    id="paste-text"
                    rows="8"
                    spellcheck="false"
                    placeholder="RESOURCE_EXHAUSTED: Ran out of memory in memory space hbm. Used 17.60G of 16.00G hbm…"
                    node_ref=paste_text
                ></textarea>
                <button type="button" class="button" on:click=analyse_pasted>"Analyse pasted text"</button>
            </details>
            <div class="drop-overlay" aria-hidden="true">"Drop to analyse"</div>
        </section>
    }
}
