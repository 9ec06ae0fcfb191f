//! The messages between the page and the analysis Web Worker.
//!
//! The page posts one JS object per analysis job:
//! `{ request: <AnalyzeRequest as JSON>, payloads: [Blob | ArrayBuffer, ...] }`,
//! where `payloads[i]` holds the bytes of `request.files[i]`. Payloads are
//! never copied by the page: `File`s (which are `Blob`s) are handed over as
//! handles and read by the worker itself, bytes the page owns (the embedded
//! example, a pasted log) travel as transferred `ArrayBuffer`s.
//!
//! A comparison of two runs is one job too:
//! `{ compare: <CompareRequest as JSON>, payloads: [...] }`, where the
//! payloads hold `request.a`'s bytes and then `request.b`'s.
//!
//! The worker answers with JSON strings of [`WorkerMessage`]: `Ready` once it
//! listens, then for each job a stream of `Progress` and one `Done` carrying
//! the report (`Compared` carrying both reports and their comparison).

use serde::{Deserialize, Serialize};

/// Script the page starts the worker from (trunk's loader shim for the
/// `oomscope-worker` binary; worker outputs are not hashed by trunk).
pub const WORKER_SCRIPT: &str = "./oomscope-worker_loader.js";

/// Field of the page's message holding the [`AnalyzeRequest`] JSON.
pub const REQUEST_FIELD: &str = "request";
/// Field of the page's message holding the payload array.
pub const PAYLOADS_FIELD: &str = "payloads";

/// Field of the page's message holding a [`LinkRequest`] JSON instead of
/// an analysis job.
pub const LINK_FIELD: &str = "link";

/// Field of the page's message holding a [`CompareRequest`] JSON instead
/// of an [`AnalyzeRequest`].
pub const COMPARE_FIELD: &str = "compare";

/// Field of the page's message holding a [`CombineRequest`] JSON: the
/// payloads are then the reports (JSON strings) of single files analysed
/// in the pool, in drop order.
pub const COMBINE_FIELD: &str = "combine";

/// Put together the reports of single files analysed apart
/// (`oomscope_analyzer::ranks::combine`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CombineRequest {
    pub job: u32,
}

/// A wasm worker's memory only grows: reading a snapshot takes up to twice
/// its size plus 64 MiB (the unpickler's bound) and the worker keeps that.
/// The pool is sized so that its workers together stay near this budget.
pub const POOL_MEMORY_BUDGET_BYTES: u64 = 1 << 30;
/// More workers than this gain little (each loads and compiles the
/// analyzer) and cost memory.
pub const POOL_MAX_WORKERS: usize = 8;

/// Workers of the pool for a drop whose largest file is `largest_bytes`,
/// on a machine of `cores` (`navigator.hardwareConcurrency`): one per
/// core, at most [`POOL_MAX_WORKERS`], and no more than
/// [`POOL_MEMORY_BUDGET_BYTES`] holds; never fewer than one, never more
/// than `files`.
pub fn pool_size(cores: usize, largest_bytes: u64, files: usize) -> usize {
    let per_worker = largest_bytes.saturating_mul(2).saturating_add(64 << 20);
    let by_memory = (POOL_MEMORY_BUDGET_BYTES / per_worker.max(1)) as usize;
    cores.min(POOL_MAX_WORKERS).min(by_memory).min(files).max(1)
}

/// Field of the page's message holding a [`SnapshotWithoutRequest`] JSON:
/// the snapshot view asks for a snapshot replayed without a line.
pub const SNAPSHOT_WITHOUT_FIELD: &str = "snapshot_without";

/// Replay the snapshot `input` of the analysis on screen without the
/// allocations whose stack holds `frame` (a line of its table:
/// `oomscope_analyzer::what_if::snapshot_without`). The worker reads the
/// file again: it keeps the files of its latest analysis, never a trace (a
/// snapshot out of an archive is expanded again from the archive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotWithoutRequest {
    pub job: u32,
    pub input: String,
    pub frame: String,
}

/// Field of the page's message holding a [`ReworkRequest`] JSON; its
/// payload is the JSON of the report on screen.
pub const REWORK_FIELD: &str = "rework";

/// A choice made on the page that changes the verdict: the worker makes
/// the report on screen again with it (the page links no analysis:
/// `oomscope_diagnosis`'s tree and `oomscope_ranks`'s grouping run there).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rework {
    /// The verdict for this device's limit (none: as analysed):
    /// `oomscope_diagnosis::diagnose_with`.
    Device(Option<oomscope_report::DeviceLimit>),
    /// A file's rank or step corrected (`oomscope_ranks::regroup`), then
    /// the verdict again for the device picked.
    Rank {
        correction: oomscope_report::RankOverride,
        device: Option<oomscope_report::DeviceLimit>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReworkRequest {
    pub job: u32,
    pub rework: Rework,
}

/// Field of the page's message holding a [`WhatIfRequest`] JSON: the
/// What-if panel asks the worker to replay a module of the report on screen.
pub const WHAT_IF_FIELD: &str = "what_if";

/// Replay `choice` on `module` (its display name) in `memory_space`, with
/// the programs the worker kept from the analysis on screen
/// (`oomscope_analyzer::what_if::panel`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIfRequest {
    pub job: u32,
    pub module: String,
    pub memory_space: oomscope_report::MemoryColor,
    pub choice: oomscope_report::whatif::WhatIfChoice,
    /// The limit the page draws (the OOM message's, or the picked device's).
    pub limit_bytes: Option<u64>,
}

/// Compare two runs: each side's inputs, in payload order (A's, then B's),
/// and what the user calls each side (`None`: the file and folder names).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRequest {
    pub job: u32,
    pub a: Vec<RequestFile>,
    pub b: Vec<RequestFile>,
    pub label_a: Option<String>,
    pub label_b: Option<String>,
}

/// Permalink work, done in the worker: links are untrusted input, so they
/// are never decoded on the page's thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LinkRequest {
    /// Decode a link (or its `#r=…` fragment) into a report.
    Open { job: u32, link: String },
    /// Decode a comparison link (`#c=…`) into a comparison.
    OpenComparison { job: u32, link: String },
    /// Encode a comparison (its JSON) as a link under `base_url`.
    MakeComparison {
        job: u32,
        comparison_json: String,
        base_url: String,
    },
    /// Encode a report (the analyzer's JSON) as a link under `base_url`.
    Make {
        job: u32,
        report_json: String,
        base_url: String,
        view: oomscope_report::ViewState,
        created_unix_ms: u64,
    },
}

/// Largest single input the browser build loads into memory. wasm32 has a
/// 4 GiB address space shared by the decoded data structures, so bigger
/// inputs get a per-file error pointing to the command line instead of
/// taking the worker down.
pub const MAX_INPUT_BYTES: u64 = 1536 << 20;

/// One analysis job: the inputs in payload order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyzeRequest {
    /// Increasing job number, echoed in every answer so that a late answer
    /// to a superseded job is ignored.
    pub job: u32,
    pub files: Vec<RequestFile>,
    /// The page still holds every input (all are `File`s) and can analyse
    /// them one per worker: the worker answers [`WorkerMessage::PerFile`]
    /// instead of analysing when the analyzer says the files are read
    /// alone (`oomscope_analyzer::ranks::per_file`).
    #[serde(default)]
    pub may_split: bool,
    /// One file of a pool: answer its summary
    /// (`oomscope_analyzer::ranks::summary`), what the page keeps of it.
    #[serde(default)]
    pub summary: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestFile {
    /// Path relative to what was dropped, e.g. `dump/module_0001.after_optimizations.txt`.
    pub name: String,
    pub size_bytes: u64,
}

/// Everything the worker says to the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerMessage {
    /// The worker's message handler is installed; jobs may be posted.
    Ready,
    Progress {
        job: u32,
        input: String,
        done_bytes: u64,
        total_bytes: u64,
        stage: String,
    },
    /// The finished report, as the analyzer's JSON.
    Done { job: u32, report_json: String },
    /// The job's files are each analysed alone: the page analyses them in
    /// its pool of workers, one file per job, then asks for a
    /// [`CombineRequest`].
    PerFile { job: u32 },
    /// Two runs compared: `oomscope_report::compare::ComparedRuns` as JSON
    /// (both reports without buffer lifetimes, and their comparison).
    Compared { job: u32, runs_json: String },
    /// The job could not run at all (e.g. a malformed message).
    Failed { job: u32, message: String },
    /// A link decoded into this report (the analyzer's JSON, `shared` set).
    LinkOpened { job: u32, report_json: String },
    /// A comparison link decoded (`oomscope_report::compare::Comparison` as
    /// JSON, `reductions` set).
    ComparisonOpened { job: u32, comparison_json: String },
    /// A link made for the report or comparison on screen.
    LinkMade {
        job: u32,
        url: String,
        reductions: Vec<String>,
    },
    /// A link could not be opened or made: the reason, for the user.
    LinkFailed { job: u32, message: String },
    /// The What-if panel's replay (`oomscope_report::whatif::PanelReplay`
    /// as JSON).
    Replayed { job: u32, replay_json: String },
    /// No replay: the module has no program here (the reason, for the user).
    ReplayFailed { job: u32, message: String },
    /// The report on screen made again for a [`Rework`] (its JSON).
    Reworked { job: u32, report_json: String },
    /// A [`Rework`] could not be made (the reason, for the user).
    ReworkFailed { job: u32, message: String },
    /// A snapshot replayed without a line: the replays
    /// (`Vec<oomscope_report::whatif::ReplayedCurve>`, one per device, each
    /// its what-if and curve) as JSON.
    SnapshotReplayed { job: u32, replays_json: String },
    /// No snapshot replay (the reason, for the user).
    SnapshotReplayFailed { job: u32, message: String },
}

impl WorkerMessage {
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail; keep a readable
        // message rather than a panic should it ever.
        serde_json::to_string(self)
            .unwrap_or_else(|e| format!(r#"{{"type":"failed","job":0,"message":"{e}"}}"#))
    }

    pub fn from_json(text: &str) -> Result<Self, String> {
        serde_json::from_str(text).map_err(|e| format!("unreadable worker message: {e}"))
    }
}

/// Decides which progress updates are worth a message: the first and last
/// of each input and stage, and otherwise one per percent of the input.
#[derive(Debug, Default)]
pub struct ProgressThrottle {
    input: String,
    stage: String,
    last_percent: u64,
}

impl ProgressThrottle {
    pub fn should_send(&mut self, input: &str, stage: &str, done: u64, total: u64) -> bool {
        let percent = done.saturating_mul(100).checked_div(total).unwrap_or(100);
        let changed = input != self.input || stage != self.stage;
        if changed {
            self.input = input.to_string();
            self.stage = stage.to_string();
            self.last_percent = percent;
            return true;
        }
        if percent > self.last_percent {
            self.last_percent = percent;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_messages_round_trip_as_tagged_json() {
        let msg = WorkerMessage::Progress {
            job: 3,
            input: "dump/a.txt".into(),
            done_bytes: 10,
            total_bytes: 20,
            stage: "reading".into(),
        };
        let json = msg.to_json();
        assert!(json.contains(r#""type":"progress""#), "{json}");
        assert_eq!(WorkerMessage::from_json(&json), Ok(msg));
        assert!(WorkerMessage::from_json("{").is_err());
    }

    #[test]
    fn comparison_requests_and_answers_round_trip() {
        let request = CompareRequest {
            job: 4,
            a: vec![RequestFile {
                name: "f32/compile.log".into(),
                size_bytes: 10,
            }],
            b: vec![RequestFile {
                name: "bf16/compile.log".into(),
                size_bytes: 9,
            }],
            label_a: Some("f32".into()),
            label_b: None,
        };
        let json = serde_json::to_string(&request).unwrap();
        assert_eq!(
            serde_json::from_str::<CompareRequest>(&json).unwrap(),
            request
        );
        let link = LinkRequest::OpenComparison {
            job: 5,
            link: "#c=1.abc".into(),
        };
        let json = serde_json::to_string(&link).unwrap();
        assert!(json.contains(r#""type":"open_comparison""#), "{json}");
        let answer = WorkerMessage::Compared {
            job: 4,
            runs_json: "{}".into(),
        };
        assert_eq!(WorkerMessage::from_json(&answer.to_json()), Ok(answer));
    }

    #[test]
    fn the_pool_has_a_worker_per_core_within_the_memory_budget() {
        const MB: u64 = 1 << 20;
        // 64 snapshots of 100 MB on 2 cores: both cores.
        assert_eq!(pool_size(2, 100 * MB, 64), 2);
        // 16 cores: capped, then by memory (264 MiB a worker).
        assert_eq!(pool_size(16, 100 * MB, 64), 3);
        assert_eq!(pool_size(16, MB, 64), POOL_MAX_WORKERS);
        // Fewer files than cores; a file too big for the budget still runs.
        assert_eq!(pool_size(8, MB, 3), 3);
        assert_eq!(pool_size(8, 2048 * MB, 64), 1);
        assert_eq!(pool_size(0, MB, 64), 1);
    }

    #[test]
    fn throttle_sends_stage_changes_and_whole_percents_only() {
        let mut t = ProgressThrottle::default();
        assert!(t.should_send("a", "reading", 0, 1000));
        assert!(!t.should_send("a", "reading", 5, 1000));
        assert!(t.should_send("a", "reading", 10, 1000));
        assert!(!t.should_send("a", "reading", 11, 1000));
        assert!(t.should_send("a", "parsing", 11, 1000));
        assert!(t.should_send("a", "parsing", 1000, 1000));
        assert!(!t.should_send("a", "parsing", 1000, 1000));
        assert!(t.should_send("b", "reading", 0, 0));
    }
}
