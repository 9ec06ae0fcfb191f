//! The analysis Web Worker (`oomscope-worker`): receives the page's inputs,
//! reads `File`s itself (synchronously, in slices, so the page never holds
//! their bytes), runs `oomscope_analyzer::compare::analyze_loaded` and posts progress
//! and the report back. All parsing happens here, never on the page's thread.
//!
//! XProf profiles (which can be gigabytes) are not loaded at all: they go to
//! the analyzer as random-access sources ([`BlobSource`]) that it reads plane
//! by plane. Every other file is loaded whole, with progress.
//!
//! Built by trunk as `data-type="worker"` with a loader shim; see
//! `oomscope_app::protocol` for the messages.

use js_sys::{ArrayBuffer, Reflect, Uint8Array};
use oomscope_analyzer::compare::{
    analyze_loaded_keeping_programs, compare_inputs, Labels, SideInputs,
};
use oomscope_analyzer::{InputFile, InputSource, Progress, ReadAt};
use oomscope_app::protocol::{
    AnalyzeRequest, CombineRequest, CompareRequest, LinkRequest, ProgressThrottle, RequestFile,
    Rework, ReworkRequest, SnapshotWithoutRequest, WhatIfRequest, WorkerMessage, COMBINE_FIELD,
    COMPARE_FIELD, LINK_FIELD, MAX_INPUT_BYTES, PAYLOADS_FIELD, REQUEST_FIELD, REWORK_FIELD,
    SNAPSHOT_WITHOUT_FIELD, WHAT_IF_FIELD,
};
use oomscope_report::program::HeapProgram;
use oomscope_report::{units::format_bytes, InputError};
use std::cell::RefCell;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Blob, DedicatedWorkerGlobalScope, FileReaderSync, MessageEvent};

/// Bytes read from a `File` per synchronous read: bounds the transient copy.
const READ_SLICE_BYTES: u64 = 16 << 20;

thread_local! {
    /// The programs of the last analysis (the report on screen), which the
    /// What-if panel replays; replaced by every analysis, dropped by a
    /// comparison.
    static PROGRAMS: RefCell<Vec<HeapProgram>> = const { RefCell::new(Vec::new()) };
    /// What the next replay of the same module reuses.
    static PANEL_CACHE: RefCell<oomscope_analyzer::what_if::PanelCache> = RefCell::new(Default::default());
    /// The files of the last analysis (handles, not bytes), which a
    /// snapshot replay reads again: a snapshot's trace is never kept.
    static FILES: RefCell<Vec<(String, Blob)>> = const { RefCell::new(Vec::new()) };
}

fn main() {
    console_error_panic_hook::set_once();
    let scope: DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let handler_scope = scope.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let data = event.data();
        if let Some(json) = string_field(&data, WHAT_IF_FIELD) {
            return run_what_if(&handler_scope, &json);
        }
        if let Some(json) = string_field(&data, REWORK_FIELD) {
            return run_rework(&handler_scope, &data, &json);
        }
        if let Some(json) = string_field(&data, SNAPSHOT_WITHOUT_FIELD) {
            return run_snapshot_without(&handler_scope, &json);
        }
        match string_field(&data, LINK_FIELD) {
            Some(link_json) => run_link(&handler_scope, &link_json),
            None => run_job(&handler_scope, &data),
        }
    });
    scope.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    post(&scope, WorkerMessage::Ready);
}

/// Posts `message`: its JSON string, or, when it carries a document (a
/// report), `[message JSON, document]` (`WorkerMessage::into_parts`), the
/// document as its UTF-8 bytes in an `ArrayBuffer` moved to the page: no
/// conversion to a JavaScript string here and back on the page (for a
/// 4.4 MB report, 30 to 50 ms of the two threads) and no copy in between.
fn post(scope: &DedicatedWorkerGlobalScope, message: WorkerMessage) {
    // Posting to our own page cannot meaningfully fail; if it does the page
    // notices the missing answer through the worker's error event.
    let _ = match message.into_parts() {
        (json, None) => scope.post_message(&JsValue::from_str(&json)),
        (json, Some(document)) => {
            let bytes = Uint8Array::from(document.as_bytes());
            let parts = js_sys::Array::of2(&JsValue::from_str(&json), &bytes.buffer());
            scope.post_message_with_transfer(&parts, &js_sys::Array::of1(&bytes.buffer()))
        }
    };
}

fn run_job(scope: &DedicatedWorkerGlobalScope, data: &JsValue) {
    if let Some(json) = string_field(data, COMPARE_FIELD) {
        return run_compare(scope, data, &json);
    }
    if let Some(json) = string_field(data, COMBINE_FIELD) {
        return run_combine(scope, data, &json);
    }
    let request = string_field(data, REQUEST_FIELD)
        .ok_or_else(|| "the message has no request".to_string())
        .and_then(|json| {
            serde_json::from_str::<AnalyzeRequest>(&json).map_err(|e| format!("bad request: {e}"))
        });
    let request = match request {
        Ok(request) => request,
        Err(message) => {
            post(scope, WorkerMessage::Failed { job: 0, message });
            return;
        }
    };
    let job = request.job;
    let payloads = payloads_of(data);
    keep_files(&request.files, &payloads);
    let names: Vec<&str> = request.files.iter().map(|f| f.name.as_str()).collect();
    if request.may_split && oomscope_analyzer::ranks::per_file(&names) {
        post(scope, WorkerMessage::PerFile { job });
        return;
    }
    let mut send_progress = progress_sender(scope, job);
    let side = load_inputs(&request.files, &payloads, 0, &mut send_progress);
    let (mut report, programs) = analyze_loaded_keeping_programs(side, &mut send_progress);
    PROGRAMS.with(|p| *p.borrow_mut() = programs);
    PANEL_CACHE.with(|c| *c.borrow_mut() = Default::default());
    if request.summary {
        report = oomscope_analyzer::ranks::summary(report);
    }
    post_report(scope, job, &report);
}

/// Answers job `job` with `report` (its JSON).
fn post_report(scope: &DedicatedWorkerGlobalScope, job: u32, report: &oomscope_report::Report) {
    match serde_json::to_string(report) {
        Ok(report_json) => post(scope, WorkerMessage::Done { job, report_json }),
        Err(e) => post(
            scope,
            WorkerMessage::Failed {
                job,
                message: format!("report: {e}"),
            },
        ),
    }
}

/// Puts together the reports of single files the page's pool analysed
/// (the payloads, JSON strings in drop order): one report, as if the files
/// had been analysed together. A part that cannot be read is named.
fn run_combine(scope: &DedicatedWorkerGlobalScope, data: &JsValue, json: &str) {
    let job = match serde_json::from_str::<CombineRequest>(json) {
        Ok(request) => request.job,
        Err(e) => {
            let message = format!("bad combine request: {e}");
            post(scope, WorkerMessage::Failed { job: 0, message });
            return;
        }
    };
    // A combined report has no program of its own to replay.
    PROGRAMS.with(|p| p.borrow_mut().clear());
    PANEL_CACHE.with(|c| *c.borrow_mut() = Default::default());
    let payloads = payloads_of(data);
    let mut parts = Vec::with_capacity(payloads.length() as usize);
    for (i, part) in payloads.iter().enumerate() {
        let text = part.as_string().unwrap_or_default();
        match serde_json::from_str::<oomscope_report::Report>(&text) {
            Ok(report) => parts.push(report),
            Err(e) => {
                let message = format!("the report of file {} could not be read: {e}", i + 1);
                post(scope, WorkerMessage::Failed { job, message });
                return;
            }
        }
    }
    let report = oomscope_analyzer::ranks::combine(parts);
    post_report(scope, job, &report);
}

/// The request `json` holds; `None` once the handler's failure (`failed`,
/// for job 0: the request names no job the page could match) is posted.
fn parse<T: serde::de::DeserializeOwned>(
    scope: &DedicatedWorkerGlobalScope,
    json: &str,
    failed: fn(u32, String) -> WorkerMessage,
) -> Option<T> {
    match serde_json::from_str::<T>(json) {
        Ok(request) => Some(request),
        Err(e) => {
            post(scope, failed(0, format!("bad request: {e}")));
            None
        }
    }
}

/// The What-if panel's replay of one module of the report on screen.
fn run_what_if(scope: &DedicatedWorkerGlobalScope, json: &str) {
    let Some(request) = parse::<WhatIfRequest>(scope, json, |job, message| {
        WorkerMessage::ReplayFailed { job, message }
    }) else {
        return;
    };
    let job = request.job;
    let answer = PROGRAMS
        .with(|p| {
            PANEL_CACHE.with(|c| {
                oomscope_analyzer::what_if::panel(
                    &p.borrow(),
                    &mut c.borrow_mut(),
                    &request.module,
                    request.memory_space,
                    &request.choice,
                    request.limit_bytes,
                )
            })
        })
        .and_then(|r| serde_json::to_string(&r).map_err(|e| format!("replay: {e}")));
    post(
        scope,
        match answer {
            Ok(replay_json) => WorkerMessage::Replayed { job, replay_json },
            Err(message) => WorkerMessage::ReplayFailed { job, message },
        },
    );
}

/// The report on screen (the payload, its JSON) made again for a choice on
/// the page: a picked device, a corrected rank.
fn run_rework(scope: &DedicatedWorkerGlobalScope, data: &JsValue, json: &str) {
    let Some(request) = parse::<ReworkRequest>(scope, json, |job, message| {
        WorkerMessage::ReworkFailed { job, message }
    }) else {
        return;
    };
    let job = request.job;
    let answer = payloads_of(data)
        .get(0)
        .as_string()
        .ok_or_else(|| "the page sent no report".to_string())
        .and_then(|text| {
            serde_json::from_str::<oomscope_report::Report>(&text)
                .map_err(|e| format!("the report could not be read: {e}"))
        })
        .and_then(|mut report| {
            match request.rework {
                Rework::Device(device) => {
                    report.diagnosis = oomscope_diagnosis::diagnose_with(&report, device.as_ref());
                }
                Rework::Rank { correction, device } => {
                    oomscope_ranks::regroup(&mut report, vec![correction]);
                    // The headline names the first rank finding: made again
                    // too (for the device picked), unless replays made it.
                    if report.diagnosis.what_if.is_empty() {
                        report.diagnosis =
                            oomscope_diagnosis::diagnose_with(&report, device.as_ref());
                    }
                }
            }
            serde_json::to_string(&report).map_err(|e| format!("report: {e}"))
        });
    post(
        scope,
        match answer {
            Ok(report_json) => WorkerMessage::Reworked { job, report_json },
            Err(message) => WorkerMessage::ReworkFailed { job, message },
        },
    );
}

/// Keeps the handles of the job's files on disk (`File`s are `Blob`s; bytes
/// the page moved in are not kept) for a later snapshot replay.
fn keep_files(files: &[RequestFile], payloads: &js_sys::Array) {
    let kept = files
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let blob = payloads.get(i as u32).dyn_into::<Blob>().ok()?;
            Some((f.name.clone(), blob))
        })
        .collect();
    FILES.with(|f| *f.borrow_mut() = kept);
}

/// A snapshot of the analysis on screen replayed without a line, its file
/// read again by slices (`oomscope_analyzer::what_if::snapshot_without`),
/// or, for a snapshot that came out of an archive, the archive read again
/// and that member alone expanded.
fn run_snapshot_without(scope: &DedicatedWorkerGlobalScope, json: &str) {
    let Some(request) = parse::<SnapshotWithoutRequest>(scope, json, |job, message| {
        WorkerMessage::SnapshotReplayFailed { job, message }
    }) else {
        return;
    };
    let job = request.job;
    let (input, frame) = (request.input.as_str(), request.frame.as_str());
    let kept = |holds: &dyn Fn(&str) -> bool| {
        FILES.with(|f| {
            f.borrow()
                .iter()
                .find(|(name, _)| holds(name))
                .map(|(name, blob)| (name.clone(), blob.clone()))
        })
    };
    let gone = || format!("{input} is no longer at hand here: drop it again to replay it");
    let answer = match kept(&|name| name == input) {
        Some((_, blob)) => blob_source(&blob)
            .ok_or_else(gone)
            .and_then(|source| oomscope_analyzer::what_if::snapshot_without(input, &source, frame)),
        None => match kept(&|name| oomscope_analyzer::archive::may_hold(name, input)) {
            Some((name, blob)) => load_payload(&name, &blob.into(), &mut |_| {}).and_then(|data| {
                let archive = InputFile { name, data };
                oomscope_analyzer::what_if::snapshot_without_in_archive(archive, input, frame)
            }),
            None => Err(gone()),
        },
    }
    .and_then(|replays| serde_json::to_string(&replays).map_err(|e| format!("replay: {e}")));
    post(
        scope,
        match answer {
            Ok(replays_json) => WorkerMessage::SnapshotReplayed { job, replays_json },
            Err(message) => WorkerMessage::SnapshotReplayFailed { job, message },
        },
    );
}

/// Compares two runs: each side loaded as an analysis job's inputs, then
/// `oomscope_analyzer::compare` (both analyses, then the comparison).
fn run_compare(scope: &DedicatedWorkerGlobalScope, data: &JsValue, json: &str) {
    let request = match serde_json::from_str::<CompareRequest>(json) {
        Ok(request) => request,
        Err(e) => {
            let message = format!("bad comparison request: {e}");
            post(scope, WorkerMessage::Failed { job: 0, message });
            return;
        }
    };
    PROGRAMS.with(|p| p.borrow_mut().clear());
    PANEL_CACHE.with(|c| *c.borrow_mut() = Default::default());
    let payloads = payloads_of(data);
    let job = request.job;
    let mut send_progress = progress_sender(scope, job);
    let a = load_inputs(&request.a, &payloads, 0, &mut send_progress);
    let b = load_inputs(&request.b, &payloads, request.a.len(), &mut send_progress);
    let labels = Labels {
        a: request.label_a,
        b: request.label_b,
    };
    let runs = compare_inputs(a, b, labels, &mut send_progress).without_lifetimes();
    match serde_json::to_string(&runs) {
        Ok(runs_json) => post(scope, WorkerMessage::Compared { job, runs_json }),
        Err(e) => post(
            scope,
            WorkerMessage::Failed {
                job,
                message: format!("comparison: {e}"),
            },
        ),
    }
}

fn string_field(data: &JsValue, field: &str) -> Option<String> {
    Reflect::get(data, &JsValue::from_str(field))
        .ok()
        .and_then(|v| v.as_string())
}

fn payloads_of(data: &JsValue) -> js_sys::Array {
    Reflect::get(data, &JsValue::from_str(PAYLOADS_FIELD))
        .ok()
        .and_then(|v| v.dyn_into().ok())
        .unwrap_or_default()
}

/// Posts the analyzer's progress for `job`, a message per stage change or
/// whole percent.
fn progress_sender(scope: &DedicatedWorkerGlobalScope, job: u32) -> impl FnMut(Progress) + '_ {
    let mut throttle = ProgressThrottle::default();
    move |p: Progress| {
        if throttle.should_send(&p.input, &p.stage, p.done_bytes, p.total_bytes) {
            post(
                scope,
                WorkerMessage::Progress {
                    job,
                    input: p.input,
                    done_bytes: p.done_bytes,
                    total_bytes: p.total_bytes,
                    stage: p.stage,
                },
            );
        }
    }
}

/// The inputs `files`, whose bytes are `payloads[first..]`: profiles and
/// snapshots as sources read by slices, the rest loaded whole; what cannot
/// be loaded is named with the reason.
fn load_inputs(
    files: &[RequestFile],
    payloads: &js_sys::Array,
    first: usize,
    progress: &mut dyn FnMut(Progress),
) -> SideInputs {
    let mut side = SideInputs::default();
    for (index, file) in files.iter().enumerate() {
        let payload = payloads.get((first + index) as u32);
        if let Some(source) = profile_source(&file.name, &payload) {
            side.sources.push(InputSource {
                name: file.name.clone(),
                source: Box::new(source),
            });
            continue;
        }
        match load_payload(&file.name, &payload, progress) {
            Ok(data) => side.files.push(InputFile {
                name: file.name.clone(),
                data,
            }),
            Err(message) => side.unreadable.push(InputError {
                input: file.name.clone(),
                message,
            }),
        }
    }
    side
}

/// Opens or makes a permalink. Decoding happens only here: a link is
/// untrusted input, and `oomscope_permalink::decode` bounds and validates it.
fn run_link(scope: &DedicatedWorkerGlobalScope, link_json: &str) {
    let request = match serde_json::from_str::<LinkRequest>(link_json) {
        Ok(request) => request,
        Err(e) => {
            let message = format!("bad link request: {e}");
            post(scope, WorkerMessage::LinkFailed { job: 0, message });
            return;
        }
    };
    let answer = match request {
        LinkRequest::Open { job, link } => match oomscope_permalink::decode(&link)
            .map_err(|e| e.to_string())
            .and_then(|report| serde_json::to_string(&report).map_err(|e| format!("report: {e}")))
        {
            Ok(report_json) => WorkerMessage::LinkOpened { job, report_json },
            Err(message) => WorkerMessage::LinkFailed { job, message },
        },
        LinkRequest::OpenComparison { job, link } => {
            match oomscope_permalink::decode_comparison(&link)
                .map_err(|e| e.to_string())
                .and_then(|c| serde_json::to_string(&c).map_err(|e| format!("comparison: {e}")))
            {
                Ok(comparison_json) => WorkerMessage::ComparisonOpened {
                    job,
                    comparison_json,
                },
                Err(message) => WorkerMessage::LinkFailed { job, message },
            }
        }
        LinkRequest::MakeComparison {
            job,
            comparison_json,
            base_url,
        } => {
            match serde_json::from_str::<oomscope_report::compare::Comparison>(&comparison_json)
                .map_err(|e| format!("the comparison on screen could not be read: {e}"))
                .and_then(|c| {
                    oomscope_permalink::encode_comparison_link(&c, &base_url)
                        .map_err(|e| e.to_string())
                }) {
                Ok(link) => WorkerMessage::LinkMade {
                    job,
                    url: link.url,
                    reductions: link.reductions,
                },
                Err(message) => WorkerMessage::LinkFailed { job, message },
            }
        }
        LinkRequest::Make {
            job,
            report_json,
            base_url,
            view,
            created_unix_ms,
        } => {
            match serde_json::from_str::<oomscope_report::Report>(&report_json)
                .map_err(|e| format!("the report on screen could not be read: {e}"))
                .and_then(|report| {
                    oomscope_permalink::encode_link_at(&report, &base_url, &view, created_unix_ms)
                        .map_err(|e| e.to_string())
                }) {
                Ok(link) => WorkerMessage::LinkMade {
                    job,
                    url: link.url,
                    reductions: link.reductions,
                },
                Err(message) => WorkerMessage::LinkFailed { job, message },
            }
        }
    };
    post(scope, answer);
}

/// The bytes of one input: an `ArrayBuffer` (moved in from the page) or a
/// `Blob`/`File` read here in slices.
fn load_payload(
    name: &str,
    payload: &JsValue,
    progress: &mut dyn FnMut(Progress),
) -> Result<Vec<u8>, String> {
    if let Some(buffer) = payload.dyn_ref::<ArrayBuffer>() {
        let size = u64::from(buffer.byte_length());
        check_size(size)?;
        return Ok(Uint8Array::new(buffer).to_vec());
    }
    let blob = payload
        .dyn_ref::<Blob>()
        .ok_or_else(|| "the page sent no data for this input".to_string())?;
    let size = blob.size() as u64;
    check_size(size)?;
    let mut data = Vec::new();
    data.try_reserve_exact(size as usize).map_err(|_| {
        format!(
            "not enough memory to load {} in the browser",
            format_bytes(size)
        )
    })?;
    data.resize(size as usize, 0);
    let reader = FileReaderSync::new().map_err(|e| format!("cannot read files here: {e:?}"))?;
    let mut start = 0u64;
    while start < size {
        let end = (start + READ_SLICE_BYTES).min(size);
        let slice = blob
            .slice_with_f64_and_f64(start as f64, end as f64)
            .map_err(|e| format!("cannot slice the file: {e:?}"))?;
        let buffer = reader
            .read_as_array_buffer(&slice)
            .map_err(|e| format!("the browser could not read the file: {}", js_error_text(&e)))?;
        let bytes = Uint8Array::new(&buffer);
        let got = u64::from(bytes.length());
        if got != end - start {
            return Err(format!(
                "the file changed while reading it ({} bytes expected at offset {start}, {got} read)",
                end - start
            ));
        }
        bytes.copy_to(&mut data[start as usize..end as usize]);
        release(&buffer);
        start = end;
        progress(Progress {
            input: name.to_string(),
            done_bytes: start,
            total_bytes: size,
            stage: "loading".to_string(),
        });
    }
    Ok(data)
}

/// A file the analyzer reads by slices: an XProf profile on disk.
fn profile_source(name: &str, payload: &JsValue) -> Option<BlobSource> {
    let blob = payload.dyn_ref::<Blob>()?;
    if !oomscope_analyzer::readers::reads_by_slices(name) {
        return None;
    }
    blob_source(blob)
}

/// Random access to `blob`, read by slices.
fn blob_source(blob: &Blob) -> Option<BlobSource> {
    let reader = FileReaderSync::new().ok()?;
    Some(BlobSource {
        blob: blob.clone(),
        size: blob.size() as u64,
        reader,
        cache: RefCell::new(None),
    })
}

/// Bytes of the block that serves small reads. Skipping a plane takes a few
/// tiny reads (field header, id, name) and a large profile has hundreds of
/// thousands of planes; each `FileReaderSync` call costs about a millisecond,
/// so tiny reads are answered from one cached block read ahead.
const CACHE_BLOCK_BYTES: u64 = 1 << 20;

/// Random access to a `Blob` through synchronous reads of its slices.
struct BlobSource {
    blob: Blob,
    size: u64,
    reader: FileReaderSync,
    /// The last block read for small reads: (offset, bytes).
    cache: RefCell<Option<(u64, Vec<u8>)>>,
}

impl ReadAt for BlobSource {
    fn len(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|end| *end <= self.size)
            .ok_or_else(|| {
                std::io::Error::other(format!("read past the end of the file (offset {offset})"))
            })?;
        if buf.len() as u64 >= CACHE_BLOCK_BYTES / 4 {
            return self.read_direct(offset, buf);
        }
        let mut cache = self.cache.borrow_mut();
        let cached = |c: &Option<(u64, Vec<u8>)>| matches!(c, Some((start, data)) if offset >= *start && end <= *start + data.len() as u64);
        if !cached(&cache) {
            let stop = offset.saturating_add(CACHE_BLOCK_BYTES).min(self.size);
            let mut block = vec![0u8; (stop - offset) as usize];
            self.read_direct(offset, &mut block)?;
            *cache = Some((offset, block));
        }
        if let Some((start, data)) = cache.as_ref() {
            let at = (offset - start) as usize;
            buf.copy_from_slice(&data[at..at + buf.len()]);
        }
        Ok(())
    }
}

impl BlobSource {
    /// Reads `buf.len()` bytes at `offset` straight from the blob, in slices.
    /// Each slice's `ArrayBuffer` is released once copied ([`release`]).
    fn read_direct(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let io_error = |message: String| std::io::Error::other(message);
        let end = offset + buf.len() as u64;
        let mut start = offset;
        while start < end {
            let stop = (start + READ_SLICE_BYTES).min(end);
            let slice = self
                .blob
                .slice_with_f64_and_f64(start as f64, stop as f64)
                .map_err(|e| io_error(js_error_text(&e)))?;
            let buffer = self
                .reader
                .read_as_array_buffer(&slice)
                .map_err(|e| io_error(js_error_text(&e)))?;
            let bytes = Uint8Array::new(&buffer);
            if u64::from(bytes.length()) != stop - start {
                return Err(io_error("the file changed while reading it".to_string()));
            }
            let at = (start - offset) as usize;
            bytes.copy_to(&mut buf[at..at + (stop - start) as usize]);
            release(&buffer);
            start = stop;
        }
        Ok(())
    }
}

/// Frees the bytes of a slice once copied into wasm memory. `FileReaderSync`
/// makes a new `ArrayBuffer` per read, and its bytes stay held until a full
/// garbage collection, which a worker busy in one synchronous call seldom
/// reaches: on a 1 GB snapshot 120 to 390 MiB of read slices piled up beside
/// the wasm memory (issue 28), and detaching them (`transfer(0)`) did not
/// free them either. Transferred into a message on a channel whose ports are
/// then closed, the bytes go with the undelivered message at once (measured:
/// the tab's peak 524 MiB against 860 MiB, at the same speed). Reading
/// slices as binary strings also freed them, at 1.5× the time (the UTF-8
/// round trip into wasm memory). Where no channel can be made, the buffer is
/// detached.
fn release(buffer: &ArrayBuffer) {
    if let Ok(channel) = web_sys::MessageChannel::new() {
        let transfer = js_sys::Array::of1(buffer);
        let sent = channel
            .port1()
            .post_message_with_transferable(buffer, &transfer)
            .is_ok();
        channel.port1().close();
        channel.port2().close();
        if sent {
            return;
        }
    }
    let _ = buffer.transfer_with_length(0);
}

fn check_size(size: u64) -> Result<(), String> {
    if size > MAX_INPUT_BYTES {
        return Err(format!(
            "{} is larger than the {} the browser can load; run `oomscope analyze` on it instead",
            format_bytes(size),
            format_bytes(MAX_INPUT_BYTES)
        ));
    }
    Ok(())
}

fn js_error_text(value: &JsValue) -> String {
    value
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| value.as_string())
        .unwrap_or_else(|| format!("{value:?}"))
}
