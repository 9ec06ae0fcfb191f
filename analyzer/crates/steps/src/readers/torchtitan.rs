//! torchtitan (`torchtitan/components/metrics.py`): step lines with
//! `memory: X GiB(Y%)`, the device capacity line, and the allocator's
//! `N CUDA memory allocation retries.` warnings.

use super::text::{find_step, metric_name, scan_sizes, SizeKv};
use super::{LogReader, TORCHTITAN};
use oomscope_report::units::{binary_multiplier, scale};
use oomscope_report::StepPoint;

/// The metric of torchtitan's `memory:` value (peak reserved bytes).
const MAX_RESERVED: &str = "max_reserved";

impl LogReader {
    /// torchtitan step lines and its capacity line.
    pub(super) fn torchtitan(&mut self, line: &str, rank: Option<&str>) -> bool {
        if let Some(cap) = torchtitan_capacity(line) {
            self.torchtitan_capacity = Some(cap);
            return true;
        }
        if let Some(retries) = allocation_retries(line) {
            let device = rank.unwrap_or("").to_string();
            self.torchtitan_retries.insert(device, retries);
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
                MAX_RESERVED.to_string()
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
        if !validation {
            if let Some(retries) = self.torchtitan_retries.remove(device) {
                self.push_retries(
                    device,
                    StepPoint {
                        step,
                        bytes: retries,
                    },
                );
            }
        }
        true
    }

    /// Adds an allocator-retries point to the device's `max_reserved` series.
    fn push_retries(&mut self, device: &str, point: StepPoint) {
        let found = self
            .set
            .series
            .iter_mut()
            .find(|s| s.source == TORCHTITAN && s.device == device && s.metric == MAX_RESERVED);
        if let Some(s) = found {
            s.allocation_retries.push(point);
        }
    }

    /// Retries printed after a device's last step line (a log cut before the
    /// step line they belong to) go with that last step.
    pub(super) fn flush_torchtitan_retries(&mut self) {
        let pending: Vec<(String, u64)> = self.torchtitan_retries.drain().collect();
        for (device, retries) in pending {
            let last_step = self
                .set
                .series
                .iter()
                .find(|s| s.source == TORCHTITAN && s.device == device && s.metric == MAX_RESERVED)
                .and_then(|s| s.points.last())
                .map(|p| p.step);
            if let Some(step) = last_step {
                self.push_retries(
                    &device,
                    StepPoint {
                        step,
                        bytes: retries,
                    },
                );
            }
        }
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

/// torchtitan's `DeviceMemoryMonitor.get_peak_stats` warning
/// `{num_retries} {DEVICE} memory allocation retries.` (`CUDA`, `XPU`,
/// `NPU`, ...; one release printed the bound method instead of the device
/// name). It is printed while the metrics of a step are gathered, just
/// before that step's line; the count is `num_alloc_retries` as the allocator
/// reports it.
pub(super) fn allocation_retries(line: &str) -> Option<u64> {
    let at = line.find(" memory allocation retries")?;
    line[..at]
        .split_whitespace()
        .rev()
        .take(12)
        .find_map(|w| w.parse::<u64>().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_warning() {
        assert_eq!(
            allocation_retries("[titan] 2026-02-24 19:41:01,031 - root - WARNING - 9 CUDA memory allocation retries."),
            Some(9)
        );
        assert_eq!(
            allocation_retries("WARNING - 12 <built-in method upper of str object at 0x7f3a> memory allocation retries."),
            Some(12)
        );
        assert_eq!(
            allocation_retries("WARNING - 2 CUDA OOM errors thrown."),
            None
        );
    }
}
