//! A pool of analysis workers for a drop of many files that the analyzer
//! reads one by one (issue 26: 64 ranks of 100 MB snapshots): each worker
//! takes the next file, analyses it alone and hands back that file's report
//! (already its summary: the snapshot's numbers, its curve downsampled
//! keeping the exact peak, its stacks at the peak). The page keeps only
//! those reports (JSON text), terminates the workers as soon as the queue
//! is empty (a wasm worker's memory never shrinks), and asks the main
//! worker to put the reports together (`worker_client::combine`).
//!
//! The analyzer decides which drops go here (the main worker answers
//! `PerFile`); this module only orchestrates. One pool at a time: a new
//! job ends the running one.

use std::cell::RefCell;
use std::collections::VecDeque;

use js_sys::{Array, Object, Reflect};
use leptos::prelude::*;
use oomscope_app::protocol::{
    pool_size, AnalyzeRequest, RequestFile, WorkerMessage, PAYLOADS_FIELD, REQUEST_FIELD,
    WORKER_SCRIPT,
};
use oomscope_report::{InputError, Report};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, MessageEvent, Worker};

use crate::inputs::{PageInput, Payload};
use crate::state::AppState;

struct Member {
    worker: Worker,
    ready: bool,
    /// The part (its job number and file index) this worker is analysing.
    busy: Option<(u32, usize)>,
    /// Files it has analysed.
    done: u32,
    /// The file it takes once ready (a fresh worker replacing a worn one).
    reserved: Option<usize>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(Event)>,
}

struct Pool {
    /// The page's job (what `AppState::job` shows and the combined report answers).
    job: u32,
    inputs: Vec<PageInput>,
    queue: VecDeque<usize>,
    /// Each file's report (JSON), once analysed.
    parts: Vec<Option<String>>,
    members: Vec<Option<Member>>,
    next_part: u32,
}

thread_local! {
    static POOL: RefCell<Option<Pool>> = const { RefCell::new(None) };
    /// Ended workers whose handlers may still be running (a worker is ended
    /// from its own message handler): dropped when the next pool starts.
    static RETIRED: RefCell<Vec<Member>> = const { RefCell::new(Vec::new()) };
}

/// Terminates `member`'s worker (its memory goes back) and keeps its
/// handlers alive until no call of theirs can be running.
fn retire(member: Member) {
    member.worker.terminate();
    RETIRED.with(|r| r.borrow_mut().push(member));
}

/// Ends the running pool, if any (a new job supersedes it).
pub fn stop() {
    if let Some(pool) = POOL.with(|p| p.borrow_mut().take()) {
        pool.members.into_iter().flatten().for_each(retire);
    }
}

/// Analyses `inputs` (the page's job `job`) one file per worker.
pub fn start(state: AppState, job: u32, inputs: Vec<PageInput>) {
    stop();
    // Called from the main worker's handler, never a pool worker's.
    RETIRED.with(|r| r.borrow_mut().clear());
    let cores = web_sys::window()
        .map(|w| w.navigator().hardware_concurrency() as usize)
        .unwrap_or(1);
    let largest = inputs.iter().map(|i| i.size_bytes).max().unwrap_or(0);
    let size = pool_size(cores, largest, inputs.len());
    let count = inputs.len();
    POOL.with(|p| {
        *p.borrow_mut() = Some(Pool {
            job,
            inputs,
            queue: (0..count).collect(),
            parts: vec![None; count],
            members: Vec::new(),
            // Part jobs are numbered apart from the page's jobs; only this
            // pool's workers see them.
            next_part: 1,
        })
    });
    for slot in 0..size {
        match start_member(state, slot) {
            Ok(member) => POOL.with(|p| {
                if let Some(pool) = p.borrow_mut().as_mut() {
                    pool.members.push(Some(member));
                }
            }),
            Err(message) => {
                stop();
                state.job.set(None);
                state.notice.set(Some(message));
                return;
            }
        }
    }
}

fn start_member(state: AppState, slot: usize) -> Result<Member, String> {
    let worker = Worker::new(WORKER_SCRIPT)
        .map_err(|e| format!("The analysis workers could not be started: {e:?}"))?;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        if let Ok(message) = crate::worker_client::message_of(&event) {
            on_message(state, slot, message);
        }
    });
    let on_error = Closure::<dyn FnMut(Event)>::new(move |event: Event| {
        event.prevent_default();
        let detail = crate::worker_client::error_detail(&event)
            .unwrap_or_else(|| "the worker stopped".to_string());
        // The file it held fails alone; a fresh worker takes the rest. A
        // worker that died holding no file (its script did not load) is not
        // started again: the other workers take the rest.
        let held = with_pool(|pool| {
            let member = pool.members.get_mut(slot)?.take()?;
            let busy = member.busy.map(|(_, index)| index);
            if let Some(reserved) = member.reserved {
                pool.queue.push_front(reserved);
            }
            retire(member);
            busy
        })
        .flatten();
        if let Some(index) = held {
            fail_part(
                state,
                index,
                format!("the analysis stopped unexpectedly ({detail})"),
            );
            if let Ok(member) = start_member(state, slot) {
                with_pool(|pool| pool.members[slot] = Some(member));
            }
        }
        abandon_if_no_worker(state);
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    Ok(Member {
        worker,
        ready: false,
        busy: None,
        done: 0,
        reserved: None,
        _on_message: on_message,
        _on_error: on_error,
    })
}

fn with_pool<T>(f: impl FnOnce(&mut Pool) -> T) -> Option<T> {
    POOL.with(|p| p.borrow_mut().as_mut().map(f))
}

fn on_message(state: AppState, slot: usize, message: WorkerMessage) {
    match message {
        WorkerMessage::Ready => {
            with_pool(|pool| {
                if let Some(member) = pool.members.get_mut(slot).and_then(Option::as_mut) {
                    member.ready = true;
                }
            });
            dispatch(state, slot);
        }
        WorkerMessage::Progress {
            job,
            input,
            done_bytes,
            total_bytes,
            stage,
        } => {
            if busy_with(slot) != Some(job) {
                return;
            }
            let page_job = with_pool(|pool| pool.job);
            state.job.update(|current| {
                let Some(current) = current.as_mut().filter(|j| Some(j.id) == page_job) else {
                    return;
                };
                if let Some(row) = current.files.iter_mut().find(|f| f.name == input) {
                    row.loaded_bytes = if stage == "loading" {
                        done_bytes
                    } else {
                        row.size_bytes
                    };
                    row.stage = stage.clone();
                }
                current.current = Some((input, stage, done_bytes, total_bytes));
            });
        }
        WorkerMessage::Done { job, report_json } => {
            let Some(index) = finish(slot, job) else {
                return;
            };
            set_part(state, index, report_json);
            next_worker(state, slot);
        }
        WorkerMessage::Failed { job, message } => {
            if let Some(index) = finish(slot, job) {
                fail_part(state, index, message);
                next_worker(state, slot);
            }
        }
        // A pool worker is sent analysis jobs only.
        _ => {}
    }
}

/// The part job `slot` is working on.
fn busy_with(slot: usize) -> Option<u32> {
    with_pool(|pool| {
        pool.members
            .get(slot)
            .and_then(Option::as_ref)
            .and_then(|m| m.busy.map(|(job, _)| job))
    })
    .flatten()
}

/// Frees `slot` from part job `job`, returning the file index it was.
fn finish(slot: usize, job: u32) -> Option<usize> {
    with_pool(|pool| {
        let member = pool.members.get_mut(slot)?.as_mut()?;
        match member.busy {
            Some((busy, index)) if busy == job => {
                member.busy = None;
                Some(index)
            }
            _ => None,
        }
    })
    .flatten()
}

/// A worker that has analysed [`FILES_PER_WORKER`] files is replaced by a
/// fresh one for the next: a wasm worker's memory never shrinks, and the
/// garbage of reading files (the `ArrayBuffer`s of `FileReaderSync`) is
/// collected lazily, so a worker that read file after file grew with them
/// (measured: the tab from 0.9 to 1.7 GiB over 64 snapshots of 100 MB on
/// two workers). A fresh worker costs loading the cached analyzer.
const FILES_PER_WORKER: u32 = 1;

/// After a file: the same worker takes the next one, or a fresh worker does
/// once this one has read its share, or none when the queue is empty.
fn next_worker(state: AppState, slot: usize) {
    let worn = with_pool(|pool| {
        let member = pool.members.get_mut(slot)?.as_mut()?;
        member.done += 1;
        Some(member.done >= FILES_PER_WORKER && !pool.queue.is_empty())
    })
    .flatten()
    .unwrap_or(false);
    if !worn {
        return dispatch(state, slot);
    }
    // A worker that cannot be started leaves the file to the worn one.
    let Ok(mut fresh) = start_member(state, slot) else {
        return dispatch(state, slot);
    };
    with_pool(|pool| {
        // The next file is its own from now: another worker finishing
        // before it is ready must not think a file is left for it.
        fresh.reserved = pool.queue.pop_front();
        if let Some(old) = pool.members[slot].replace(fresh) {
            retire(old);
        }
    });
}

/// Hands `slot` the next file, or ends the worker when none is left.
fn dispatch(state: AppState, slot: usize) {
    let next = with_pool(|pool| {
        let member = pool.members.get(slot)?.as_ref()?;
        if !member.ready || member.busy.is_some() {
            return None;
        }
        let reserved = pool.members[slot].as_mut()?.reserved.take();
        let Some(index) = reserved.or_else(|| pool.queue.pop_front()) else {
            // Nothing left for it: its memory goes back at once.
            if let Some(done) = pool.members[slot].take() {
                retire(done);
            }
            return None;
        };
        let part = pool.next_part;
        pool.next_part += 1;
        let member = pool.members[slot].as_mut()?;
        member.busy = Some((part, index));
        Some((
            member.worker.clone(),
            part,
            index,
            pool.inputs[index].clone(),
        ))
    })
    .flatten();
    let Some((worker, part, index, input)) = next else {
        return;
    };
    let request = AnalyzeRequest {
        job: part,
        files: vec![RequestFile {
            name: input.name.clone(),
            size_bytes: input.size_bytes,
        }],
        may_split: false,
        summary: true,
    };
    let message = Object::new();
    let payloads = Array::new();
    if let Payload::Blob(blob) = &input.payload {
        payloads.push(blob);
    }
    let json = serde_json::to_string(&request).unwrap_or_default();
    let _ = Reflect::set(&message, &REQUEST_FIELD.into(), &json.into());
    let _ = Reflect::set(&message, &PAYLOADS_FIELD.into(), &payloads);
    if let Err(e) = worker.post_message(&message) {
        finish(slot, part);
        fail_part(
            state,
            index,
            format!("could not be handed to a worker: {e:?}"),
        );
    }
}

/// With no worker left, the files still queued fail (each named), so the
/// drop ends with what was analysed.
fn abandon_if_no_worker(state: AppState) {
    let left = with_pool(|pool| {
        if pool.members.iter().any(Option::is_some) {
            return Vec::new();
        }
        pool.queue.drain(..).collect()
    })
    .unwrap_or_default();
    for index in left {
        fail_part(
            state,
            index,
            "no analysis worker could be started".to_string(),
        );
    }
}

/// A file that could not be analysed: its part is a report naming it.
fn fail_part(state: AppState, index: usize, message: String) {
    let Some(name) = with_pool(|pool| pool.inputs[index].name.clone()) else {
        return;
    };
    let report = Report {
        errors: vec![InputError {
            message: format!("{name}: {message}"),
            input: name,
        }],
        ..Report::new()
    };
    set_part(
        state,
        index,
        serde_json::to_string(&report).unwrap_or_default(),
    );
}

/// Keeps file `index`'s report; once every file has one, the pool ends and
/// the main worker puts them together.
fn set_part(state: AppState, index: usize, report_json: String) {
    let Some((job, name, complete)) = with_pool(|pool| {
        pool.parts[index] = Some(report_json);
        let complete = pool.parts.iter().all(Option::is_some);
        (pool.job, pool.inputs[index].name.clone(), complete)
    }) else {
        return;
    };
    state.job.update(|current| {
        if let Some(row) = current
            .as_mut()
            .filter(|j| j.id == job)
            .and_then(|j| j.files.iter_mut().find(|f| f.name == name))
        {
            row.loaded_bytes = row.size_bytes;
            row.stage = "done".to_string();
        }
    });
    if !complete {
        return;
    }
    let Some(pool) = POOL.with(|p| p.borrow_mut().take()) else {
        return;
    };
    pool.members.into_iter().flatten().for_each(retire);
    let parts: Vec<String> = pool.parts.into_iter().flatten().collect();
    crate::worker_client::combine(state, pool.job, parts);
}
