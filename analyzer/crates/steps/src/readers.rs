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
//!   number; without one, the print's ordinal. Out-of-memory messages are left
//!   to the OOM-log parser.
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
//! which is what these tools compute. Values are rounded as printed.

use oomscope_report::units::{binary_multiplier, scale};
use oomscope_report::{StepPoint, StepSeries};
use std::borrow::Cow;
use std::collections::HashMap;

/// Every memory-per-step series found in `text`, in order of first appearance.
/// Points are in log order (not yet sorted or analysed; see
/// [`crate::analyze_series`]).
pub fn parse_step_log(input_name: &str, text: &str) -> Vec<StepSeries> {
    if let Some(series) = parse_csv(input_name, text) {
        return series;
    }
    let mut log = LogReader::new(input_name);
    for raw in text.lines() {
        log.line(raw);
    }
    log.finish()
}

/// Whether the start of a file looks like a log with memory per step: one of
/// the specific formats, or at least two free-form memory prints.
pub fn looks_like_step_log(head: &str) -> bool {
    parse_step_log("", head)
        .iter()
        .any(|s| (s.source != PYTORCH && s.source != MEMORY_STATS) || s.points.len() >= 2)
}

const TORCHTITAN: &str = "torchtitan";
const MAXTEXT: &str = "maxtext";
const PYTORCH: &str = "pytorch";
const TORCHTUNE: &str = "torchtune";
const TPU_INFO: &str = "tpu-info";
const MEMORY_STATS: &str = "memory_stats";
const CSV: &str = "csv";

/// Series under construction, keyed by (source, device, metric).
struct SeriesSet {
    input: String,
    index: HashMap<(String, String, String), usize>,
    series: Vec<StepSeries>,
    /// The series pushed to last.
    last: Option<usize>,
}

impl SeriesSet {
    fn new(input: &str) -> Self {
        SeriesSet {
            input: input.to_string(),
            index: HashMap::new(),
            series: Vec::new(),
            last: None,
        }
    }

    fn get(&mut self, source: &str, device: &str, metric: &str, unit: &str) -> &mut StepSeries {
        // Logs repeat the same few series line after line: try the last one first.
        let same = |s: &StepSeries| s.source == source && s.device == device && s.metric == metric;
        let i = match self.last {
            Some(i) if self.series.get(i).is_some_and(same) => i,
            _ => {
                let key = (source.to_string(), device.to_string(), metric.to_string());
                let next = self.series.len();
                let i = *self.index.entry(key).or_insert(next);
                if i == next {
                    self.series.push(StepSeries {
                        source: source.to_string(),
                        input: self.input.clone(),
                        device: device.to_string(),
                        metric: metric.to_string(),
                        unit: unit.to_string(),
                        ..Default::default()
                    });
                }
                i
            }
        };
        self.last = Some(i);
        &mut self.series[i]
    }

    fn push(
        &mut self,
        source: &str,
        device: &str,
        metric: &str,
        unit: &str,
        step: u64,
        bytes: u64,
    ) -> &mut StepSeries {
        let s = self.get(source, device, metric, unit);
        s.points.push(StepPoint { step, bytes });
        s
    }
}

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
        self.set.series
    }

    /// maxtext memstats, RAMstats, step lines and the compile-time estimate.
    fn maxtext(&mut self, line: &str) -> bool {
        if let Some(pos) = line.find("completed step:") {
            if let Some((step, _)) = parse_uint(line[pos + "completed step:".len()..].trim_start())
            {
                self.maxtext_step = step;
            }
            if let Some(at) = line.find("seconds:") {
                if let Some((secs, _)) = parse_float(line[at + "seconds:".len()..].trim_start()) {
                    if secs.is_finite() && secs >= 0.0 {
                        self.step_seconds.push(secs);
                    }
                }
            }
            return true;
        }
        if let Some(pos) = line.find("Using (GB)") {
            let rest = &line[pos + "Using (GB)".len()..];
            let Some((used, rest)) = parse_float(rest.trim_start()) else {
                return true;
            };
            let rest = rest.trim_start();
            let Some(rest) = rest.strip_prefix('/') else {
                return true;
            };
            let Some((limit, rest)) = parse_float(rest.trim_start()) else {
                return true;
            };
            let (device, metric) = if let Some(on) = rest.find(" on ") {
                let dev = rest[on + 4..].trim();
                let end = dev
                    .find(|c: char| c == '(' || c.is_whitespace())
                    .unwrap_or(dev.len());
                (dev[..end].to_string(), "bytes_in_use")
            } else if rest.contains("Available") {
                ("host RAM".to_string(), "ram_used")
            } else {
                return true;
            };
            let gib = 1u64 << 30;
            let step = self.maxtext_step;
            let s = self
                .set
                .push(MAXTEXT, &device, metric, "GB", step, scale(used, gib));
            s.limit_bytes = Some(scale(limit, gib));
            return true;
        }
        let lower_start = line.trim_start();
        if lower_start.starts_with("Total memory size:")
            || lower_start.starts_with("Total estimated memory size:")
        {
            let step = self.maxtext_step;
            for kv in scan_sizes(lower_start) {
                let name = kv.key.to_ascii_lowercase().replace("estimated ", "");
                let name = name.trim_end_matches(" size").trim().replace(' ', "_");
                let name = if name == "total_memory" {
                    "total".to_string()
                } else {
                    name
                };
                self.set.push(
                    MAXTEXT,
                    "",
                    &format!("compile_estimate_{name}"),
                    &kv.unit,
                    step,
                    kv.bytes,
                );
            }
            return true;
        }
        false
    }

    /// `tpu-info` table rows: `| chip | U GiB / L GiB | ...`.
    fn tpu_info(&mut self, line: &str) -> bool {
        let is_table = line.contains('|') || line.contains('│') || line.contains('┃');
        if !is_table {
            return false;
        }
        let cells: Vec<&str> = line
            .split(['|', '│', '┃'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let lower = line.to_ascii_lowercase();
        if lower.contains("hbm usage") || lower.contains("memory usage") {
            if cells
                .first()
                .is_some_and(|c| c.eq_ignore_ascii_case("chip"))
            {
                self.tpu_info_snapshot =
                    Some(self.tpu_info_snapshot.map_or(0, |n| n.saturating_add(1)));
            }
            return true;
        }
        let Some(usage) = cells.iter().find_map(|c| parse_used_of_limit(c)) else {
            return false;
        };
        let Some(chip) = cells.first() else {
            return false;
        };
        let step = self.tpu_info_snapshot.unwrap_or(0);
        let s = self.set.push(
            TPU_INFO,
            &format!("chip {chip}"),
            "hbm_usage",
            &usage.unit,
            step,
            usage.used,
        );
        s.limit_bytes = Some(usage.limit);
        true
    }

    /// torchtitan step lines and its capacity line.
    fn torchtitan(&mut self, line: &str, rank: Option<&str>) -> bool {
        if let Some(cap) = torchtitan_capacity(line) {
            self.torchtitan_capacity = Some(cap);
            return true;
        }
        let Some((step, validation, rest)) = find_step(line) else {
            return false;
        };
        let sizes = scan_sizes(rest);
        let memory: Vec<&SizeKv> = sizes
            .iter()
            .filter(|kv| {
                let k = kv.key.to_ascii_lowercase();
                k == "memory"
                    || k.contains("active")
                    || k.contains("reserved")
                    || k.contains("allocated")
            })
            .collect();
        // torchtitan always prints a percentage after its GiB value.
        if memory.is_empty() || !memory.iter().any(|kv| kv.pct.is_some()) {
            return false;
        }
        let device = rank.unwrap_or("");
        for kv in memory {
            let base = if kv.key.eq_ignore_ascii_case("memory") {
                "max_reserved".to_string()
            } else {
                metric_name(&kv.key)
            };
            let metric = if validation {
                format!("validation_{base}")
            } else {
                base
            };
            self.set
                .push(TORCHTITAN, device, &metric, &kv.unit, step, kv.bytes);
            if let (Some(pct), Some(i)) = (kv.pct, self.set.last) {
                let best = self.torchtitan_pct.entry(i).or_insert((kv.bytes, pct));
                if pct > best.1 {
                    *best = (kv.bytes, pct);
                }
            }
        }
        true
    }

    /// PyTorch allocated/reserved prints and torchtune's per-step metrics.
    fn pytorch(&mut self, line: &str, rank: Option<&str>) {
        let lower = line.to_ascii_lowercase();
        if lower.contains("out of memory")
            || lower.contains("outofmemory")
            || lower.contains("tried to allocate")
        {
            return;
        }
        let step = find_step(line).map(|(s, _, _)| s);
        let device = rank
            .map(str::to_string)
            .or_else(|| find_device(line))
            .unwrap_or_default();
        let mut found: Vec<Found> = Vec::new();
        for kv in scan_sizes(line) {
            let key = kv.key.to_ascii_lowercase();
            // TPU/XLA messages write one-letter units (`528.00M`); PyTorch prints do not.
            if kv.unit.len() >= 2 && is_pytorch_memory_key(&key) {
                found.push(Found {
                    metric: metric_name(&kv.key),
                    unit: kv.unit,
                    bytes: kv.bytes,
                    limit: None,
                    source: PYTORCH,
                });
            }
        }
        // torchtune: `peak_memory_active:47.32 peak_memory_alloc:... peak_memory_reserved:...` in GiB.
        let mut rest = line;
        while let Some(pos) = rest.find("peak_memory_") {
            let after = &rest[pos..];
            let Some(colon) = after.find(':') else { break };
            let key = &after[..colon];
            if let Some((v, _)) = parse_float(&after[colon + 1..]) {
                if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    found.push(Found {
                        metric: key.to_string(),
                        unit: "GiB".to_string(),
                        bytes: scale(v, 1 << 30),
                        limit: None,
                        source: TORCHTUNE,
                    });
                }
            }
            rest = &after[colon..];
        }
        found.extend(memory_stats_dict(line));
        for Found {
            metric,
            unit,
            bytes,
            limit,
            source,
        } in found
        {
            let step = match step {
                Some(s) => s,
                None => {
                    let ord = self
                        .pytorch_ordinals
                        .entry((device.clone(), metric.clone()))
                        .or_insert(0);
                    let s = *ord;
                    *ord = ord.saturating_add(1);
                    s
                }
            };
            let s = self.set.push(source, &device, &metric, &unit, step, bytes);
            if limit.is_some() {
                s.limit_bytes = limit;
            }
        }
    }
}

/// Keys of PyTorch-style memory prints: allocated, reserved, active or cached
/// memory, or plain `memory`/`gpu memory`; not capacities, free memory or the
/// descriptive keys of error messages (`Extra memory due to padding`).
fn is_pytorch_memory_key(key: &str) -> bool {
    let words: Vec<&str> = key
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let excluded = [
        "capacity",
        "total",
        "free",
        "padding",
        "extra",
        "due",
        "limit",
        "size",
        "available",
    ];
    if words.iter().any(|w| excluded.contains(w)) {
        return false;
    }
    let named = ["alloc", "reserv", "active", "cache"]
        .iter()
        .any(|w| key.contains(w));
    let plain = words.len() <= 3 && words.last().is_some_and(|w| *w == "memory" || *w == "mem");
    named || plain
}

/// Lines longer than this are not log lines (minified data, binary); skipped.
const MAX_LINE: usize = 64 * 1024;

/// Removes ANSI escape sequences (`ESC [ ... m` and other CSI sequences) and
/// the bare `[31m` remnants left when the ESC byte was lost in copying.
fn strip_ansi(line: &str) -> Cow<'_, str> {
    let bytes = line.as_bytes();
    let has_code = bytes.iter().enumerate().any(|(i, &b)| {
        b == 0x1b || (b == b'[' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
    });
    if !has_code {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let rest = &line[i..];
        if c == '\u{1b}' {
            if rest[1..].starts_with('[') {
                chars.next();
                // Parameters then one final byte in 0x40..=0x7e.
                for (_, d) in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        if c == '[' {
            let body: &str = &rest[1..];
            let len = body
                .find(|ch: char| !(ch.is_ascii_digit() || ch == ';'))
                .unwrap_or(body.len());
            if len > 0 && len <= 8 && body[len..].starts_with('m') {
                for _ in 0..=len {
                    chars.next();
                }
                continue;
            }
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// `[rank3]:rest` (torchrun) or `[default3]:rest` → ("rank 3", rest).
fn split_rank_prefix(line: &str) -> (Option<String>, &str) {
    let t = line.trim_start();
    for prefix in ["[rank", "[default"] {
        if let Some(after) = t.strip_prefix(prefix) {
            if let Some((n, rest)) = parse_uint(after) {
                if let Some(rest) = rest.strip_prefix("]:") {
                    return (Some(format!("rank {n}")), rest);
                }
            }
        }
    }
    (None, line)
}

/// The device a print names: `cuda:1` (also written `GPU 1`), `xla:0`, `TPU_3`.
fn find_device(line: &str) -> Option<String> {
    for (prefix, name) in [
        ("cuda:", "cuda:"),
        ("GPU ", "cuda:"),
        ("xla:", "xla:"),
        ("TPU_", "TPU_"),
    ] {
        if let Some(pos) = line.find(prefix) {
            if let Some((n, _)) = parse_uint(&line[pos + prefix.len()..]) {
                return Some(format!("{name}{n}"));
            }
        }
    }
    None
}

/// One memory value found in a print.
struct Found {
    metric: String,
    unit: String,
    bytes: u64,
    limit: Option<u64>,
    source: &'static str,
}

/// Printed allocator statistics dicts: JAX/XLA `device.memory_stats()`
/// (`{'bytes_in_use': N, 'peak_bytes_in_use': N, 'bytes_limit': N, ...}`) and
/// PyTorch/XLA `xm.get_memory_info()` (`{'bytes_used': N, 'bytes_limit': N}`,
/// older `{'kb_free': N, 'kb_total': N}`). Integers are bytes (KiB for `kb_`).
fn memory_stats_dict(line: &str) -> Vec<Found> {
    let limit = dict_int(line, "bytes_limit");
    let mut out: Vec<Found> = ["bytes_in_use", "peak_bytes_in_use", "bytes_used"]
        .iter()
        .filter_map(|key| {
            let bytes = dict_int(line, key)?;
            Some(Found {
                metric: key.to_string(),
                unit: "B".to_string(),
                bytes,
                limit,
                source: MEMORY_STATS,
            })
        })
        .collect();
    if let (Some(free), Some(total)) = (dict_int(line, "kb_free"), dict_int(line, "kb_total")) {
        out.push(Found {
            metric: "used".to_string(),
            unit: "KiB".to_string(),
            bytes: total.saturating_sub(free).saturating_mul(1024),
            limit: Some(total.saturating_mul(1024)),
            source: MEMORY_STATS,
        });
    }
    out
}

/// The integer after a whole-word dict key: `'key': N`, `"key": N`, `key=N`.
fn dict_int(line: &str, key: &str) -> Option<u64> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(off) = line.get(from..)?.find(key) {
        let pos = from + off;
        from = pos + key.len();
        let word_start = pos == 0
            || !bytes
                .get(pos - 1)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
        let after = line
            .get(from..)?
            .trim_start_matches(['\'', '"'])
            .trim_start();
        let Some(after) = after.strip_prefix([':', '=']) else {
            continue;
        };
        if word_start {
            if let Some((v, _)) = parse_uint(after.trim_start()) {
                return Some(v);
            }
        }
    }
    None
}

/// The step number of a line: `step: N`, `step N`, `Step N:`, `step=N`,
/// `iter N`, `iteration: N`. Returns (step, is `validate step`, text after it).
fn find_step(line: &str) -> Option<(u64, bool, &str)> {
    let bytes = line.as_bytes();
    for word in ["step", "iteration", "iter"] {
        let mut from = 0;
        while let Some(pos) = find_ascii_ci(bytes, word.as_bytes(), from) {
            from = pos + word.len();
            let before_ok = pos == 0
                || !bytes
                    .get(pos - 1)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
            if !before_ok {
                continue;
            }
            // `pos` starts an ASCII match, so it is a char boundary.
            let after = line.get(pos + word.len()..)?;
            let sep_len = after.len() - after.trim_start_matches([' ', ':', '=', '\t', '#']).len();
            let after = &after[sep_len..];
            if sep_len == 0 {
                continue;
            }
            if let Some((n, rest)) = parse_uint(after) {
                // `step 3/100`: fine; `step 1.5`: not a step.
                if rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
                    continue;
                }
                let before = line[..pos].trim_end().as_bytes();
                let validation = ["validate", "validation"].iter().any(|w| {
                    before.len() >= w.len()
                        && before[before.len() - w.len()..].eq_ignore_ascii_case(w.as_bytes())
                });
                return Some((n, validation, rest));
            }
        }
    }
    None
}

/// Position of an ASCII `needle` in `hay` at or after `from`, ignoring ASCII case.
fn find_ascii_ci(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let last = hay.len().checked_sub(needle.len())?;
    (from..=last).find(|&i| hay[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// torchtitan's `CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory`.
fn torchtitan_capacity(line: &str) -> Option<u64> {
    let cap = line.find(" capacity: ")?;
    let rest = &line[cap..];
    let with = rest.rfind(" with ")?;
    let value = rest[with + 6..].trim();
    let value = value.strip_suffix("memory")?.trim();
    let split = value.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = value.split_at(split);
    let v: f64 = num.parse().ok()?;
    Some(scale(v, binary_multiplier(unit)?))
}

/// One `key: value unit (pct%)` found in a line.
struct SizeKv {
    key: String,
    bytes: u64,
    unit: String,
    pct: Option<f64>,
}

/// Every `key: <number> <byte unit>` (or `key=...`) in a line, with an optional
/// `(NN.NN%)` right after the unit. The key is up to four words before the
/// separator, stopping at numbers, units and other separators.
fn scan_sizes(line: &str) -> Vec<SizeKv> {
    let mut out = Vec::new();
    for (sep_pos, _) in line.match_indices([':', '=']) {
        let Some(after) = line.get(sep_pos + 1..) else {
            continue;
        };
        let Some((value, rest)) = parse_float(after.trim_start()) else {
            continue;
        };
        let rest_trim = rest.trim_start();
        let unit_len = rest_trim
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest_trim.len());
        let unit = &rest_trim[..unit_len];
        if unit.is_empty() {
            continue;
        }
        let Some(mult) = binary_multiplier(unit) else {
            continue;
        };
        let after_unit = rest_trim[unit_len..].trim_start();
        let pct = after_unit
            .strip_prefix('(')
            .and_then(|p| parse_float(p.trim_start()))
            .and_then(|(v, r)| r.trim_start().starts_with('%').then_some(v));
        let key = key_before(&line[..sep_pos]);
        if key.is_empty() {
            continue;
        }
        out.push(SizeKv {
            key,
            bytes: scale(value, mult),
            unit: unit.to_string(),
            pct,
        });
    }
    out
}

/// The key words right before a `:`/`=` separator.
fn key_before(prefix: &str) -> String {
    let segment_start = prefix
        .rfind([',', ';', '|', '\t', '[', ']', '{', '}', '"', '\''])
        .map_or(0, |p| p + 1);
    let segment = &prefix[segment_start..];
    let mut words: Vec<&str> = Vec::new();
    for w in segment.split(' ').rev() {
        if w.is_empty() {
            if words.is_empty() {
                continue;
            }
            break; // two spaces separate torchtitan's fields
        }
        let is_unit = binary_multiplier(w).is_some();
        let numeric = w.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
        if is_unit || numeric || w.contains([':', '=']) || words.len() == 4 {
            break;
        }
        words.push(w);
    }
    words.reverse();
    words.join(" ")
}

/// `Memory Allocated` → `memory_allocated`; `torch.cuda.memory_reserved()` → `memory_reserved`.
fn metric_name(key: &str) -> String {
    let k = key.trim().to_ascii_lowercase();
    let k = k.strip_prefix("torch.cuda.").unwrap_or(&k);
    let mut out = String::new();
    for c in k.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_string()
}

struct UsedOfLimit {
    used: u64,
    limit: u64,
    unit: String,
}

/// `18.45 GiB / 31.25 GiB` (a tpu-info cell).
fn parse_used_of_limit(cell: &str) -> Option<UsedOfLimit> {
    let (used, rest) = parse_float(cell.trim())?;
    let (unit, rest) = split_unit(rest.trim_start());
    let rest = rest.trim_start().strip_prefix('/')?;
    let (limit, rest) = parse_float(rest.trim_start())?;
    let (limit_unit, rest) = split_unit(rest.trim_start());
    if !rest.trim().is_empty() {
        return None;
    }
    let um = binary_multiplier(unit).filter(|_| !unit.is_empty())?;
    let lm = binary_multiplier(limit_unit).filter(|_| !limit_unit.is_empty())?;
    Some(UsedOfLimit {
        used: scale(used, um),
        limit: scale(limit, lm),
        unit: unit.to_string(),
    })
}

fn split_unit(s: &str) -> (&str, &str) {
    let n = s
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(s.len());
    s.split_at(n)
}

/// A leading unsigned decimal number (`12`, `1.5`, `1e3`, `.5`); the rest of the text.
fn parse_float(s: &str) -> Option<(f64, &str)> {
    let bytes = s.as_bytes();
    let mut end = 0;
    let mut digits = 0;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
        digits += 1;
    }
    if end < bytes.len() && bytes[end] == b'.' {
        end += 1;
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
            digits += 1;
        }
    }
    if digits == 0 || digits > 40 {
        return None;
    }
    if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut e = end + 1;
        if e < bytes.len() && (bytes[e] == b'+' || bytes[e] == b'-') {
            e += 1;
        }
        let start = e;
        while e < bytes.len() && bytes[e].is_ascii_digit() {
            e += 1;
        }
        if e > start {
            end = e;
        }
    }
    let v: f64 = s[..end].parse().ok()?;
    v.is_finite().then_some((v, &s[end..]))
}

/// A leading unsigned integer that fits in u64; the rest of the text.
fn parse_uint(s: &str) -> Option<(u64, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let v: u64 = s[..end].parse().ok()?;
    Some((v, &s[end..]))
}

/// CSV (or TSV) with a header naming a step column, or headerless `step,bytes`.
/// `None` when the text is not such a table.
fn parse_csv(input_name: &str, text: &str) -> Option<Vec<StepSeries>> {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    let first = lines.next()?;
    let sep = if first.contains(',') {
        ','
    } else if first.contains('\t') {
        '\t'
    } else {
        return None;
    };
    let header: Vec<String> = first
        .split(sep)
        .map(|h| h.trim().trim_matches('"').to_string())
        .collect();
    if header.len() < 2 || header.iter().any(|h| h.len() > 64 || h.contains(':')) {
        return None;
    }
    let header_lower: Vec<String> = header.iter().map(|h| h.to_ascii_lowercase()).collect();
    let has_header = header
        .iter()
        .any(|h| parse_float(h).is_none_or(|(_, rest)| !rest.is_empty()));
    let (step_col, value_cols, data_first) = if has_header {
        let step_col = header_lower
            .iter()
            .position(|h| h == "step" || h.starts_with("step") || h.contains("iter"))?;
        let name_hint = input_name.to_ascii_lowercase();
        let cols: Vec<CsvColumn> = header_lower
            .iter()
            .enumerate()
            .filter(|(i, h)| {
                *i != step_col
                    && !h.contains("time")
                    && !h.contains("loss")
                    && !h.contains("pct")
                    && !h.contains('%')
            })
            .map(|(i, h)| {
                // TensorBoard exports name the tag only in the file name.
                let named =
                    csv_unit(h).or_else(|| (h == "value").then(|| csv_unit(&name_hint)).flatten());
                let (unit, multiplier) = named.unwrap_or(("B", 1));
                CsvColumn {
                    index: i,
                    metric: metric_name(&header[i]),
                    multiplier,
                    unit,
                }
            })
            .collect();
        (step_col, cols, None)
    } else {
        if header.len() != 2 {
            return None;
        }
        let bytes = CsvColumn {
            index: 1,
            metric: "bytes".to_string(),
            multiplier: 1,
            unit: "B",
        };
        (0, vec![bytes], Some(first))
    };
    if value_cols.is_empty() {
        return None;
    }
    let mut set = SeriesSet::new(input_name);
    let mut rows = 0usize;
    let mut bad = 0usize;
    for line in data_first.into_iter().chain(lines) {
        let cells: Vec<&str> = line
            .split(sep)
            .map(|c| c.trim().trim_matches('"'))
            .collect();
        if cells.len() != header.len() {
            bad += 1;
            continue;
        }
        let step = cells
            .get(step_col)
            .and_then(|c| parse_float(c))
            .filter(|(_, r)| r.is_empty())
            .map(|(v, _)| v);
        let Some(step) = step.filter(|v| *v >= 0.0 && *v < u64::MAX as f64) else {
            bad += 1;
            continue;
        };
        rows += 1;
        for col in &value_cols {
            if let Some((v, "")) = cells.get(col.index).and_then(|c| parse_float(c)) {
                set.push(
                    CSV,
                    "",
                    &col.metric,
                    col.unit,
                    step as u64,
                    scale(v, col.multiplier),
                );
            }
        }
    }
    // A table whose rows are mostly not numeric is not a step series.
    (rows > 0 && rows >= bad).then_some(set.series)
}

/// A value column of a CSV table.
struct CsvColumn {
    index: usize,
    metric: String,
    multiplier: u64,
    unit: &'static str,
}

/// Unit named in a CSV header or file name by a whole word: `memory_gib`,
/// `reserved (MiB)`, `max_reserved(GiB)`, `bytes`.
fn csv_unit(h: &str) -> Option<(&'static str, u64)> {
    let h = h.to_ascii_lowercase();
    let words: Vec<&str> = h.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    for unit in ["GiB", "GB", "MiB", "MB", "KiB", "KB"] {
        if words.iter().any(|w| w.eq_ignore_ascii_case(unit)) {
            return Some((unit, binary_multiplier(unit)?));
        }
    }
    words.contains(&"bytes").then_some(("B", 1))
}

#[cfg(test)]
mod tests {
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
