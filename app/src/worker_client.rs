//! The page's side of the analysis worker: starts it, posts jobs, and turns
//! its messages into state updates. One job at a time; a new job supersedes
//! the running one (its late answers are ignored by job number). If the
//! worker dies (a crash, or its script failed to load), the page says so and
//! starts a fresh worker for the next job.
//!
//! Two runs are compared there too ([`submit_comparison`]).
//!
//! Permalinks are opened and made by the worker too ([`open_link`],
//! [`make_link`], and their comparison twins): a link is untrusted input and
//! is never decoded here.

use std::cell::RefCell;

use js_sys::{Array, Object, Reflect};
use leptos::prelude::*;
use oomscope_app::protocol::{
    AnalyzeRequest, CombineRequest, CompareRequest, LinkRequest, RequestFile, Rework,
    ReworkRequest, SnapshotWithoutRequest, WhatIfRequest, WorkerMessage, COMBINE_FIELD,
    COMPARE_FIELD, LINK_FIELD, PAYLOADS_FIELD, REQUEST_FIELD, REWORK_FIELD, SNAPSHOT_WITHOUT_FIELD,
    WHAT_IF_FIELD, WORKER_SCRIPT,
};
use oomscope_report::compare::{ComparedRuns, Comparison};
use oomscope_report::whatif::{PanelReplay, ReplayedCurve};
use oomscope_report::{Report, ViewState};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, MessageEvent, Worker};

use crate::inputs::{PageInput, Payload};
use crate::state::{AppState, FileProgress, Job, ReportOrigin, ShownComparison};

struct Client {
    worker: Worker,
    ready: bool,
    /// A job posted before the worker said it listens.
    pending: Option<(JsValue, Array)>,
    // The handlers live as long as the worker.
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(Event)>,
}

thread_local! {
    static CLIENT: RefCell<Option<Client>> = const { RefCell::new(None) };
    static NEXT_JOB: RefCell<u32> = const { RefCell::new(1) };
    /// The latest link being opened; older answers are ignored.
    static OPEN_JOB: RefCell<u32> = const { RefCell::new(0) };
    /// The link being made and who wants it.
    static MAKE_JOB: RefCell<Option<(u32, LinkCallback)>> = const { RefCell::new(None) };
    /// The inputs of the latest job posted with `may_split`, in case the
    /// worker answers that they are analysed one per worker.
    static SPLITTABLE: RefCell<Option<(u32, Vec<PageInput>)>> = const { RefCell::new(None) };
    /// The latest What-if replay asked for and who wants it; an answer to
    /// an older one is ignored.
    static REPLAY_JOB: RefCell<Option<(u32, ReplayCallback)>> = const { RefCell::new(None) };
    /// The latest rework asked for and who wants it.
    static REWORK_JOB: RefCell<Option<(u32, ReworkCallback)>> = const { RefCell::new(None) };
    /// The latest snapshot replay asked for and who wants it.
    static SNAPSHOT_JOB: RefCell<Option<(u32, SnapshotReplayCallback)>> = const { RefCell::new(None) };
}

/// Receives the report made again, or why it could not be.
pub type ReworkCallback = Box<dyn FnOnce(Result<Report, String>)>;

/// Asks the worker to make `report` (the one on screen) again for a choice
/// on the page; supersedes an unanswered request.
pub fn rework(state: AppState, report: &Report, rework: Rework, done: ReworkCallback) {
    let report_json = match serde_json::to_string(report) {
        Ok(json) => json,
        Err(e) => return done(Err(format!("the report could not be written: {e}"))),
    };
    let request = ReworkRequest {
        job: next_job(),
        rework,
    };
    REWORK_JOB.with(|r| *r.borrow_mut() = Some((request.job, done)));
    let message = Object::new();
    let json = serde_json::to_string(&request).unwrap_or_default();
    let _ = Reflect::set(&message, &REWORK_FIELD.into(), &json.into());
    let payloads = Array::of1(&report_json.into());
    let _ = Reflect::set(&message, &PAYLOADS_FIELD.into(), &payloads);
    send(state, message.into(), Array::new());
}

/// Receives a snapshot replayed without a line (one replay per device, its
/// what-if and curve), or why there is none.
pub type SnapshotReplayCallback = Box<dyn FnOnce(Result<Vec<ReplayedCurve>, String>)>;

/// Asks the worker to replay the snapshot `input` of the analysis on screen
/// without the allocations whose stack holds `frame`; supersedes an
/// unanswered request.
pub fn replay_snapshot_without(
    state: AppState,
    input: String,
    frame: String,
    done: SnapshotReplayCallback,
) {
    let request = SnapshotWithoutRequest {
        job: next_job(),
        input,
        frame,
    };
    SNAPSHOT_JOB.with(|r| *r.borrow_mut() = Some((request.job, done)));
    let message = Object::new();
    let json = serde_json::to_string(&request).unwrap_or_default();
    let _ = Reflect::set(&message, &SNAPSHOT_WITHOUT_FIELD.into(), &json.into());
    send(state, message.into(), Array::new());
}

/// Receives the What-if panel's replay, or why there is none.
pub type ReplayCallback = Box<dyn FnOnce(Result<PanelReplay, String>)>;

/// Asks the worker to replay a module of the report on screen (the panel
/// never replays on the page's thread); supersedes an unanswered request.
pub fn replay(state: AppState, mut request: WhatIfRequest, done: ReplayCallback) {
    request.job = next_job();
    REPLAY_JOB.with(|r| *r.borrow_mut() = Some((request.job, done)));
    let message = Object::new();
    let json = serde_json::to_string(&request).unwrap_or_default();
    let _ = Reflect::set(&message, &WHAT_IF_FIELD.into(), &json.into());
    send(state, message.into(), Array::new());
}

fn take_replay_callback(job: u32) -> Option<ReplayCallback> {
    REPLAY_JOB.with(|r| take_if_job(&mut r.borrow_mut(), job))
}

/// The callback waiting in `slot` when it waits for `job` (an answer to an
/// older request leaves a newer one waiting).
fn take_if_job<T>(slot: &mut Option<(u32, T)>, job: u32) -> Option<T> {
    if slot.as_ref().is_some_and(|(j, _)| *j == job) {
        slot.take().map(|(_, done)| done)
    } else {
        None
    }
}

/// Receives a made link (`url`, reductions applied) or why it failed.
pub type LinkCallback = Box<dyn FnOnce(Result<(String, Vec<String>), String>)>;

fn next_job() -> u32 {
    NEXT_JOB.with(|n| {
        let id = *n.borrow();
        *n.borrow_mut() = id.wrapping_add(1);
        id
    })
}

/// Decodes `link` (a URL or its `#r=…` fragment) in the worker; the report
/// replaces the one on screen, or the page says why the link is refused.
pub fn open_link(state: AppState, link: String) {
    let job = next_job();
    OPEN_JOB.with(|j| *j.borrow_mut() = job);
    post_link(state, &LinkRequest::Open { job, link });
}

/// Decodes a comparison link (`#c=…`) in the worker; the comparison
/// replaces what is on screen, or the page says why the link is refused.
pub fn open_comparison_link(state: AppState, link: String) {
    let job = next_job();
    OPEN_JOB.with(|j| *j.borrow_mut() = job);
    post_link(state, &LinkRequest::OpenComparison { job, link });
}

/// Encodes `comparison` as a link under `base_url` in the worker.
pub fn make_comparison_link(
    state: AppState,
    comparison: &Comparison,
    base_url: String,
    done: LinkCallback,
) {
    let comparison_json = match serde_json::to_string(comparison) {
        Ok(json) => json,
        Err(e) => return done(Err(format!("the comparison could not be written: {e}"))),
    };
    let job = next_job();
    MAKE_JOB.with(|m| *m.borrow_mut() = Some((job, done)));
    post_link(
        state,
        &LinkRequest::MakeComparison {
            job,
            comparison_json,
            base_url,
        },
    );
}

/// Encodes `report` as a link under `base_url` in the worker.
pub fn make_link(
    state: AppState,
    report: &Report,
    base_url: String,
    view: ViewState,
    created_unix_ms: u64,
    done: LinkCallback,
) {
    let report_json = match serde_json::to_string(report) {
        Ok(json) => json,
        Err(e) => return done(Err(format!("the report could not be written: {e}"))),
    };
    let job = next_job();
    MAKE_JOB.with(|m| *m.borrow_mut() = Some((job, done)));
    post_link(
        state,
        &LinkRequest::Make {
            job,
            report_json,
            base_url,
            view,
            created_unix_ms,
        },
    );
}

fn post_link(state: AppState, request: &LinkRequest) {
    let message = Object::new();
    let json = serde_json::to_string(request).unwrap_or_default();
    let _ = Reflect::set(&message, &LINK_FIELD.into(), &json.into());
    send(state, message.into(), Array::new());
}

/// Analyses `inputs` in the worker; the result replaces the report on screen.
pub fn submit(state: AppState, inputs: Vec<PageInput>, origin: ReportOrigin) {
    let id = next_job();
    // Files on disk can be analysed one per worker if the analyzer says
    // they are read alone; the page keeps them until it answers.
    let may_split =
        inputs.len() >= 2 && inputs.iter().all(|i| matches!(i.payload, Payload::Blob(_)));
    let request = AnalyzeRequest {
        job: id,
        files: request_files(&inputs),
        may_split,
        summary: false,
    };
    SPLITTABLE.with(|s| *s.borrow_mut() = may_split.then(|| (id, inputs.clone())));
    let (payloads, transfer) = payloads(&inputs);
    let message = Object::new();
    let request_json = serde_json::to_string(&request).unwrap_or_default();
    let _ = Reflect::set(&message, &REQUEST_FIELD.into(), &request_json.into());
    let _ = Reflect::set(&message, &PAYLOADS_FIELD.into(), &payloads);
    start_job(
        state,
        Job {
            id,
            origin,
            files: progress_rows(&inputs),
            current: None,
            comparing: None,
        },
    );
    send(state, message.into(), transfer);
}

/// Compares run `a` with run `b` in the worker, under the labels given;
/// the comparison replaces what is on screen.
pub fn submit_comparison(
    state: AppState,
    a: Vec<PageInput>,
    b: Vec<PageInput>,
    labels: (String, String),
) {
    let id = next_job();
    let request = CompareRequest {
        job: id,
        a: request_files(&a),
        b: request_files(&b),
        label_a: Some(labels.0.clone()),
        label_b: Some(labels.1.clone()),
    };
    let both: Vec<PageInput> = a.into_iter().chain(b).collect();
    let (payloads, transfer) = payloads(&both);
    let message = Object::new();
    let request_json = serde_json::to_string(&request).unwrap_or_default();
    let _ = Reflect::set(&message, &COMPARE_FIELD.into(), &request_json.into());
    let _ = Reflect::set(&message, &PAYLOADS_FIELD.into(), &payloads);
    let job = Job {
        id,
        origin: ReportOrigin::User,
        files: progress_rows(&both),
        current: None,
        comparing: Some(labels),
    };
    start_job(state, job);
    send(state, message.into(), transfer);
}

fn request_files(inputs: &[PageInput]) -> Vec<RequestFile> {
    inputs
        .iter()
        .map(|i| RequestFile {
            name: i.name.clone(),
            size_bytes: i.size_bytes,
        })
        .collect()
}

/// The inputs' payloads in order, and the buffers among them to transfer.
fn payloads(inputs: &[PageInput]) -> (Array, Array) {
    let payloads = Array::new();
    let transfer = Array::new();
    for input in inputs {
        match &input.payload {
            Payload::Blob(blob) => {
                payloads.push(blob);
            }
            Payload::Bytes(buffer) => {
                payloads.push(buffer);
                transfer.push(buffer);
            }
        }
    }
    (payloads, transfer)
}

fn progress_rows(inputs: &[PageInput]) -> Vec<FileProgress> {
    inputs
        .iter()
        .map(|i| FileProgress {
            name: i.name.clone(),
            size_bytes: i.size_bytes,
            loaded_bytes: 0,
            stage: String::new(),
        })
        .collect()
}

/// Puts together the reports of `parts` (single files the pool analysed,
/// in drop order) in the worker, as job `job`'s answer.
pub fn combine(state: AppState, job: u32, parts: Vec<String>) {
    if state.job.get_untracked().is_none_or(|j| j.id != job) {
        return;
    }
    let message = Object::new();
    let request_json = serde_json::to_string(&CombineRequest { job }).unwrap_or_default();
    let payloads: Array = parts.into_iter().map(JsValue::from).collect();
    let _ = Reflect::set(&message, &COMBINE_FIELD.into(), &request_json.into());
    let _ = Reflect::set(&message, &PAYLOADS_FIELD.into(), &payloads);
    state.job.update(|j| {
        if let Some(j) = j.as_mut() {
            j.current = Some((String::new(), "combining".to_string(), 0, 0));
        }
    });
    send(state, message.into(), Array::new());
}

fn start_job(state: AppState, job: Job) {
    // A new job supersedes a pool still analysing the previous one.
    crate::worker_pool::stop();
    state.notice.set(None);
    state.job.set(Some(job));
}

/// Starts the worker if it is not running, so that it is ready (fetched and
/// compiled) by the time the user's files arrive. Called when the user
/// shows intent (a drag over the page, the pointer or focus on the drop
/// zone); the page itself never needs it (the example is built in).
pub fn warm_up(state: AppState) {
    CLIENT.with(|cell| {
        let mut client = cell.borrow_mut();
        if client.is_none() {
            // A worker that cannot start is reported when files are sent.
            *client = start_worker(state).ok();
        }
    });
}

/// Posts `message` to the worker, starting it if needed; a message posted
/// before the worker listens waits (and replaces an older waiting one).
fn send(state: AppState, message: JsValue, transfer: Array) {
    CLIENT.with(|cell| {
        let mut client = cell.borrow_mut();
        if client.is_none() {
            match start_worker(state) {
                Ok(started) => *client = Some(started),
                Err(message) => {
                    state.job.set(None);
                    state.notice.set(Some(message));
                    return;
                }
            }
        }
        let Some(client) = client.as_mut() else {
            return;
        };
        if client.ready {
            post(state, &client.worker, &message, &transfer);
        } else {
            client.pending = Some((message, transfer));
        }
    });
}

fn post(state: AppState, worker: &Worker, message: &JsValue, transfer: &Array) {
    if let Err(e) = worker.post_message_with_transfer(message, transfer) {
        state.job.set(None);
        state.notice.set(Some(format!(
            "Could not hand the files to the analysis worker: {e:?}"
        )));
    }
}

fn start_worker(state: AppState) -> Result<Client, String> {
    let worker = Worker::new(WORKER_SCRIPT)
        .map_err(|e| format!("The analysis worker could not be started: {e:?}"))?;
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let text = event.data().as_string().unwrap_or_default();
        match WorkerMessage::from_json(&text) {
            Ok(message) => on_worker_message(state, message),
            Err(e) => state.notice.set(Some(e)),
        }
    });
    // A script error inside the worker is an `ErrorEvent` with a message; a
    // worker script that failed to load is a plain `Event`.
    let on_error = Closure::<dyn FnMut(Event)>::new(move |event: Event| {
        event.prevent_default();
        let detail = error_detail(&event)
            .unwrap_or_else(|| "the worker script could not be loaded".to_string());
        // Drop the dead worker; the next job starts a fresh one.
        CLIENT.with(|cell| {
            if let Some(client) = cell.borrow_mut().take() {
                client.worker.terminate();
            }
        });
        let had_job = state.job.get_untracked().is_some();
        state.job.set(None);
        state.notice.set(Some(if had_job {
            format!(
                "The analysis stopped unexpectedly ({detail}). The files were not analysed; \
                 dropping them again starts a fresh worker."
            )
        } else {
            format!("The analysis worker failed to start ({detail}).")
        }));
    });
    worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    Ok(Client {
        worker,
        ready: false,
        pending: None,
        _on_message: on_message,
        _on_error: on_error,
    })
}

/// The message of a worker's error event: a script error inside the worker
/// is an `ErrorEvent` with one, a script that failed to load a plain `Event`.
pub fn error_detail(event: &Event) -> Option<String> {
    Reflect::get(event, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .filter(|m| !m.is_empty())
}

fn on_worker_message(state: AppState, message: WorkerMessage) {
    match message {
        WorkerMessage::Ready => {
            let pending = CLIENT.with(|cell| {
                let mut client = cell.borrow_mut();
                let client = client.as_mut()?;
                client.ready = true;
                client
                    .pending
                    .take()
                    .map(|(m, t)| (client.worker.clone(), m, t))
            });
            if let Some((worker, message, transfer)) = pending {
                post(state, &worker, &message, &transfer);
            }
        }
        WorkerMessage::Progress {
            job,
            input,
            done_bytes,
            total_bytes,
            stage,
        } => {
            state.job.update(|current| {
                let Some(current) = current.as_mut().filter(|j| j.id == job) else {
                    return;
                };
                apply_progress(current, &input, &stage, done_bytes, total_bytes);
            });
        }
        WorkerMessage::PerFile { job } => {
            let inputs = SPLITTABLE.with(|s| s.borrow_mut().take().filter(|(j, _)| *j == job));
            if let Some((_, inputs)) =
                inputs.filter(|_| state.job.get_untracked().is_some_and(|j| j.id == job))
            {
                crate::worker_pool::start(state, job, inputs);
            }
        }
        WorkerMessage::Done { job, report_json } => {
            let Some(running) = state.job.get_untracked().filter(|j| j.id == job) else {
                return;
            };
            state.job.set(None);
            match serde_json::from_str::<Report>(&report_json) {
                Ok(report) => crate::navigate::show_report(state, report, running.origin),
                Err(e) => state
                    .notice
                    .set(Some(format!("The worker's report could not be read: {e}"))),
            }
        }
        WorkerMessage::Compared { job, runs_json } => {
            if state.job.get_untracked().is_none_or(|j| j.id != job) {
                return;
            }
            state.job.set(None);
            match serde_json::from_str::<ComparedRuns>(&runs_json) {
                Ok(runs) => crate::navigate::show_comparison(
                    state,
                    ShownComparison::Analysed(Box::new(runs)),
                ),
                Err(e) => state.notice.set(Some(format!(
                    "The worker's comparison could not be read: {e}"
                ))),
            }
        }
        WorkerMessage::ComparisonOpened {
            job,
            comparison_json,
        } => {
            let latest = OPEN_JOB.with(|j| *j.borrow()) == job;
            let newer_analysis = state.job.get_untracked().is_some_and(|j| j.id > job);
            if !latest || newer_analysis {
                return;
            }
            match serde_json::from_str::<Comparison>(&comparison_json) {
                Ok(comparison) => {
                    state.notice.set(None);
                    crate::navigate::show_comparison(
                        state,
                        ShownComparison::Shared(Box::new(comparison)),
                    );
                }
                Err(e) => state.notice.set(Some(format!(
                    "The shared comparison could not be read: {e}"
                ))),
            }
        }
        WorkerMessage::LinkOpened { job, report_json } => {
            let latest = OPEN_JOB.with(|j| *j.borrow()) == job;
            let newer_analysis = state.job.get_untracked().is_some_and(|j| j.id > job);
            if !latest || newer_analysis {
                return;
            }
            match serde_json::from_str::<Report>(&report_json) {
                Ok(report) => {
                    state.notice.set(None);
                    crate::navigate::show_report(state, report, ReportOrigin::User);
                }
                Err(e) => state
                    .notice
                    .set(Some(format!("The shared report could not be read: {e}"))),
            }
        }
        WorkerMessage::LinkMade {
            job,
            url,
            reductions,
        } => {
            if let Some(done) = take_make_callback(job) {
                done(Ok((url, reductions)));
            }
        }
        WorkerMessage::LinkFailed { job, message } => {
            if let Some(done) = take_make_callback(job) {
                done(Err(message));
            } else if job == 0 || OPEN_JOB.with(|j| *j.borrow()) == job {
                state.notice.set(Some(format!(
                    "This shared link could not be opened: {message}"
                )));
            }
        }
        WorkerMessage::Replayed { job, replay_json } => {
            if let Some(done) = take_replay_callback(job) {
                done(
                    serde_json::from_str::<PanelReplay>(&replay_json)
                        .map_err(|e| format!("the worker's replay could not be read: {e}")),
                );
            }
        }
        WorkerMessage::ReplayFailed { job, message } => {
            if let Some(done) = take_replay_callback(job) {
                done(Err(message));
            }
        }
        WorkerMessage::Reworked { job, report_json } => {
            if let Some(done) = REWORK_JOB.with(|r| take_if_job(&mut r.borrow_mut(), job)) {
                done(
                    serde_json::from_str::<Report>(&report_json)
                        .map_err(|e| format!("the worker's report could not be read: {e}")),
                );
            }
        }
        WorkerMessage::ReworkFailed { job, message } => {
            if let Some(done) = REWORK_JOB.with(|r| take_if_job(&mut r.borrow_mut(), job)) {
                done(Err(message));
            }
        }
        WorkerMessage::SnapshotReplayed { job, replays_json } => {
            if let Some(done) = SNAPSHOT_JOB.with(|r| take_if_job(&mut r.borrow_mut(), job)) {
                done(
                    serde_json::from_str::<Vec<ReplayedCurve>>(&replays_json)
                        .map_err(|e| format!("the worker's replay could not be read: {e}")),
                );
            }
        }
        WorkerMessage::SnapshotReplayFailed { job, message } => {
            if let Some(done) = SNAPSHOT_JOB.with(|r| take_if_job(&mut r.borrow_mut(), job)) {
                done(Err(message));
            }
        }
        WorkerMessage::Failed { job, message } => {
            if state
                .job
                .get_untracked()
                .is_some_and(|j| j.id == job || job == 0)
            {
                state.job.set(None);
            }
            state
                .notice
                .set(Some(format!("The analysis failed: {message}")));
        }
    }
}

fn take_make_callback(job: u32) -> Option<LinkCallback> {
    MAKE_JOB.with(|m| take_if_job(&mut m.borrow_mut(), job))
}

/// `loading` comes from the worker reading a file (bytes of that file);
/// every other stage comes from the analyzer (bytes over all inputs).
fn apply_progress(job: &mut Job, input: &str, stage: &str, done: u64, total: u64) {
    let row = job.files.iter().position(|f| f.name == input);
    if stage == "loading" {
        if let Some(row) = row {
            job.files[row].loaded_bytes = done;
            job.files[row].stage = stage.to_string();
        }
        return;
    }
    if let Some(row) = row {
        for earlier in &mut job.files[..row] {
            earlier.stage = "done".to_string();
        }
        job.files[row].loaded_bytes = job.files[row].size_bytes;
        job.files[row].stage = stage.to_string();
    }
    job.current = Some((input.to_string(), stage.to_string(), done, total));
}
