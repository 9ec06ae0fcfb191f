//! Training logs → memory per step, one [`StepSeries`] per source, device and metric.
//!
//! Formats, with where their exact spelling comes from:
//! - **torchtitan** (`torchtitan/components/metrics.py`):
//!   `step: 10  loss:  7.9000  memory: 23.45GiB(24.67%)  tps: ...`, colour codes
//!   included, `validate step: N` lines, forks that print `Step N: ... memory: ...`.
//!   `memory` is torchtitan's peak *reserved* bytes since the previous log line
//!   (`reserved_bytes.all.peak`), so its metric is `max_reserved`; the limit is the
//!   `CUDA capacity: ... with X GiB memory` line, else derived from the percentage.
//!   `max_active`/`max_reserved`/`active`/`reserved` keys print as their own metrics.
//!   `N CUDA memory allocation retries.` warnings (printed while a step's
//!   metrics are gathered, just before its line) become the `max_reserved`
//!   series' `allocation_retries` at that step (bytes = the retry count).
//! - **maxtext** (`max_utils.print_mem_stats`): `Memstats: <label>:` then one
//!   `\tUsing (GB) 1.79 / 95.74 (1.869647%) on TPU_0(...)` line per local device;
//!   the step is the last `completed step: N` before it (0 before the first).
//!   maxtext computes "GB" as bytes / 2^30, so these are binary. `RAMstats`
//!   (`Using (GB) u / t (p%) -->  Available:a`) become the `host RAM` device, and
//!   the compile-time estimate (`Total memory size: ...` or `Total estimated
//!   memory size: ...`, also bytes / 2^30) becomes one-point `compile_estimate_*`
//!   series.
//! - **PyTorch prints**: `key: 1.2 GiB` pairs whose key names allocated, reserved,
//!   active or cached memory (`allocated: 1.2 GiB reserved: 2.0 GiB`,
//!   `torch.cuda.memory_allocated(): 1234.5 MB`), torchtune's
//!   `peak_memory_active:47.32` (GiB). The step is the line's `step`/`iter`
//!   number; without one, the print's ordinal. A print met once that names
//!   no step (a comment's prose) is no series: a series needs steps.
//!   Out-of-memory messages are left to the OOM-log parser.
//! - **Allocator statistics dicts** printed per step: JAX/XLA
//!   `device.memory_stats()` (`bytes_in_use`, `peak_bytes_in_use`, with
//!   `bytes_limit` as the limit) and PyTorch/XLA `xm.get_memory_info()`
//!   (`bytes_used`/`bytes_limit`, older `kb_free`/`kb_total`), source `memory_stats`.
//! - **tpu-info** tables captured over time (`watch tpu-info`, `--streaming`):
//!   rows `| 0 | 18.45 GiB / 31.25 GiB | 100.00% |` (or the box-drawn variant);
//!   each header row naming HBM usage starts a new snapshot, and the snapshot
//!   index is the step.
//! - **CSV** `step,bytes` with a header naming a step column; every other numeric
//!   column is a series (unit from the header, e.g. `memory_gib`, else bytes).
//!   Headerless `N,BYTES` rows are read as step and bytes.
//!
//! Units follow `oomscope_report::units`: `GB` and `GiB` are both 2^30 here,

mod csv;
mod maxtext;
mod pytorch;
mod series_set;
mod text;
mod torchtitan;
mod tpu_info;
mod wrap;

use oomscope_report::units::scale;
use oomscope_report::StepSeries;
use series_set::SeriesSet;
use std::collections::{HashMap, HashSet};
use text::{split_rank_prefix, strip_ansi};

/// Every memory-per-step series found in `text`, in order of first appearance.
/// Points are in log order (not yet sorted or analysed; see
/// [`crate::analyze_series`]).
pub fn parse_step_log(input_name: &str, text: &str) -> Vec<StepSeries> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if let Some(series) = csv::parse_csv(input_name, text) {
        return series;
    }
    let mut best = read_lines(input_name, text);
    // A log cut at a fixed width: read it joined, keep what reads more.
    // (Large logs are written by programs, not pasted through a cutter:
    // they are read once.)
    let widths = if text.len() <= MAX_UNWRAP_BYTES {
        wrap::widths(text)
    } else {
        Vec::new()
    };
    for width in widths {
        let joined = read_lines(input_name, &wrap::unwrap(text, width.chars));
        // On a tie at a repeated width the joined reading wins: a cut
        // line's pieces can read as many free-form prints as the whole
        // lines (with ordinals for the steps their cut took away).
        let (j, b) = (points(&joined), points(&best));
        if j > b || (width.repeated && j == b) {
            best = joined;
        }
    }
    best
}

fn read_lines(input_name: &str, text: &str) -> Vec<StepSeries> {
    let mut log = LogReader::new(input_name);
    for raw in text.lines() {
        log.line(raw);
    }
    log.finish()
}

/// How much a reading found: points (and allocation retries) of the
/// specific formats first (a cut line's pieces can still read as free-form
/// prints, as many as the whole lines), then of every series.
fn points(series: &[StepSeries]) -> (usize, usize) {
    let count = |s: &&StepSeries| s.points.len() + s.allocation_retries.len();
    (
        series.iter().filter(|s| !is_free_form(&s.source)).map(|s| count(&s)).sum(),
        series.iter().map(|s| count(&s)).sum(),
    )
}

/// Whether the start of a file looks like a log with memory per step: one of
/// the specific formats, or at least two free-form memory prints.
pub fn looks_like_step_log(head: &str) -> bool {
    parse_step_log("", head)
        .iter()
        .any(|s| !is_free_form(&s.source) || s.points.len() >= 2)
}

const TORCHTITAN: &str = "torchtitan";
const MAXTEXT: &str = "maxtext";
const PYTORCH: &str = "pytorch";
const TORCHTUNE: &str = "torchtune";
const TPU_INFO: &str = "tpu-info";
const MEMORY_STATS: &str = "memory_stats";
const CSV: &str = "csv";
/// Line-by-line reader of the text formats; keeps the little state they need.
struct LogReader {
    set: SeriesSet,
    /// Last maxtext `completed step: N`.
    maxtext_step: u64,
    /// Step wall times printed by maxtext (`completed step: N, seconds: X`).
    step_seconds: Vec<f64>,
    /// `tpu-info` snapshot counter (incremented by each HBM-usage header row).
    tpu_info_snapshot: Option<u64>,
    /// Ordinal of PyTorch prints without a step number, per series key.
    pytorch_ordinals: HashMap<(String, String), u64>,
    /// torchtitan device capacity from the `capacity: ... with X GiB memory` line.
    torchtitan_capacity: Option<u64>,
    /// Per torchtitan series: the (bytes, percent) pair with the largest percent,
    /// from which the limit is derived when the capacity line is absent.
    torchtitan_pct: HashMap<usize, (u64, f64)>,
    /// torchtitan allocator retries printed for a device, waiting for the
    /// step line they belong to (printed right after them).
    torchtitan_retries: HashMap<String, u64>,
    /// Free-form series given a point with the step it names.
    stepped: HashSet<usize>,
}

impl LogReader {
    fn new(input: &str) -> Self {
        LogReader {
            set: SeriesSet::new(input),
            maxtext_step: 0,
            step_seconds: Vec::new(),
            tpu_info_snapshot: None,
            pytorch_ordinals: HashMap::new(),
            torchtitan_capacity: None,
            torchtitan_pct: HashMap::new(),
            torchtitan_retries: HashMap::new(),
            stepped: HashSet::new(),
        }
    }

    fn line(&mut self, raw: &str) {
        if raw.len() > MAX_LINE {
            return;
        }
        let clean = strip_ansi(raw);
        let (rank, line) = split_rank_prefix(&clean);
        if self.maxtext(line) || self.tpu_info(line) || self.torchtitan(line, rank.as_deref()) {
            return;
        }
        self.pytorch(line, rank.as_deref());
    }

    fn finish(mut self) -> Vec<StepSeries> {
        // The median step time ignores the first, compiling steps' outliers.
        let seconds_per_step = if self.step_seconds.is_empty() {
            None
        } else {
            self.step_seconds.sort_by(f64::total_cmp);
            Some(self.step_seconds[self.step_seconds.len() / 2])
        };
        for s in &mut self.set.series {
            s.seconds_per_step = seconds_per_step;
        }
        self.flush_torchtitan_retries();
        for (i, s) in self.set.series.iter_mut().enumerate() {
            if s.source != TORCHTITAN || s.limit_bytes.is_some() {
                continue;
            }
            if let Some(cap) = self.torchtitan_capacity {
                s.limit_bytes = Some(cap);
            } else if let Some(&(bytes, pct)) = self.torchtitan_pct.get(&i) {
                if pct > 0.0 {
                    s.limit_bytes = Some(scale(bytes as f64 * 100.0 / pct, 1));
                }
            }
        }
        // A free-form print met once, naming no step, is prose, not memory
        // per step (a pasted comment's `allocated_by_pytorch=22.90 GiB`): a
        // series needs steps. The formats that name their steps keep one.
        let stepped = self.stepped;
        self.set
            .series
            .into_iter()
            .enumerate()
            .filter(|(i, s)| !is_free_form(&s.source) || s.points.len() >= 2 || stepped.contains(i))
            .map(|(_, s)| s)
            .collect()
    }
}

/// Sources read from free-form prints rather than a log format that names
/// its steps.
fn is_free_form(source: &str) -> bool {
    [PYTORCH, TORCHTUNE, MEMORY_STATS].contains(&source)
}

/// Texts up to this size are also read with cut lines joined.
const MAX_UNWRAP_BYTES: usize = 64 << 20;

/// Lines longer than this are not log lines (minified data, binary); skipped.
const MAX_LINE: usize = 64 * 1024;

#[cfg(test)]
mod tests {
    use super::text::{find_step, scan_sizes, strip_ansi};
    use super::*;

    #[test]
    fn strips_colour_codes_with_and_without_escape() {
        assert_eq!(
            strip_ansi("\u{1b}[31mstep:  1  \u{1b}[32mloss"),
            "step:  1  loss"
        );
        assert_eq!(strip_ansi("[31mstep: 2[39m"), "step: 2");
        assert_eq!(strip_ansi("[rank0]:x"), "[rank0]:x");
    }

    #[test]
    fn keys_stop_at_values_and_units() {
        let kvs = scan_sizes("allocated: 1.5 GiB reserved: 2.0 GiB");
        let keys: Vec<&str> = kvs.iter().map(|k| k.key.as_str()).collect();
        assert_eq!(keys, ["allocated", "reserved"]);
        assert_eq!(kvs[0].bytes, 3 << 29);
        let kvs = scan_sizes("loss:  3.24  grad_norm:  0.83  memory:  9.46GiB(64.99%)  tps: 7,282");
        assert_eq!(kvs.len(), 1);
        assert_eq!(kvs[0].key, "memory");
        assert_eq!(kvs[0].pct, Some(64.99));
    }

    #[test]
    fn tpu_info_box_drawn_table() {
        // The layout of older tpu-info releases (rich box-drawing tables).
        let text = "┏━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┓\n\
            ┃ Chip ┃ HBM usage             ┃ Duty cycle ┃\n\
            ┡━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━┩\n\
            │ 0    │ 13.49 GiB / 15.75 GiB │      0.00% │\n\
            │ 1    │ 0.00 GiB / 15.75 GiB  │      0.00% │\n\
            └──────┴───────────────────────┴────────────┘\n";
        let series = parse_step_log("box", text);
        assert_eq!(series.len(), 2);
        assert_eq!(series[0].device, "chip 0");
        assert_eq!(series[0].points[0].bytes, scale(13.49, 1 << 30));
        assert_eq!(series[1].limit_bytes, Some(scale(15.75, 1 << 30)));
    }

    #[test]
    fn step_numbers() {
        assert_eq!(find_step("step: 14  loss").map(|s| s.0), Some(14));
        assert_eq!(find_step("Step 3 | loss:2.4").map(|s| s.0), Some(3));
        assert_eq!(
            find_step("validate step: 7  loss").map(|s| (s.0, s.1)),
            Some((7, true))
        );
        assert_eq!(find_step("steps=1.5"), None);
        assert_eq!(find_step("no numbers here"), None);
    }
}
