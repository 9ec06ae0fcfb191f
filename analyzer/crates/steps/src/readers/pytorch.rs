//! PyTorch allocated/reserved prints, torchtune's `peak_memory_*` metrics and
//! printed allocator statistics dicts (JAX `memory_stats()`, PyTorch/XLA
//! `get_memory_info()`).

use super::text::{find_device, find_step, metric_name, parse_float, parse_uint, scan_sizes};
use super::{LogReader, MEMORY_STATS, PYTORCH, TORCHTUNE};
use oomscope_report::units::scale;

impl LogReader {
    /// PyTorch allocated/reserved prints and torchtune's per-step metrics.
    pub(super) fn pytorch(&mut self, line: &str, rank: Option<&str>) {
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
            let explicit_step = step.is_some();
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
            if explicit_step {
                if let Some(i) = self.set.last {
                    self.stepped.insert(i);
                }
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
