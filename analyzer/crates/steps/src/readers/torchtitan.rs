//! torchtitan (`torchtitan/components/metrics.py`): step lines with
//! `memory: X GiB(Y%)`, the device capacity line, and the allocator's
//! `N CUDA memory allocation retries.` warnings.

use super::text::{find_step, metric_name, scan_sizes, SizeKv};
use super::{LogReader, TORCHTITAN};
use oomscope_report::units::{binary_multiplier, scale};

impl LogReader {
    /// torchtitan step lines and its capacity line.
    pub(super) fn torchtitan(&mut self, line: &str, rank: Option<&str>) -> bool {
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
}

/// torchtitan's `CUDA capacity: NVIDIA H100 80GB HBM3 with 79.11GiB memory`.
pub(super) fn torchtitan_capacity(line: &str) -> Option<u64> {
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
