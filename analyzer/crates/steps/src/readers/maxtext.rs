//! maxtext (`max_utils.print_mem_stats`, `print_system_information`,
//! `memory_analysis`): memstats and RAMstats per device, `completed step: N`
//! lines (step and wall time), and the compile-time memory estimate.

use super::text::{parse_float, parse_uint, scan_sizes};
use super::{LogReader, MAXTEXT};
use oomscope_report::units::scale;

impl LogReader {
    /// maxtext memstats, RAMstats, step lines and the compile-time estimate.
    pub(super) fn maxtext(&mut self, line: &str) -> bool {
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
        // The label may sit behind a logger's prefix.
        let label = line
            .find("Total memory size:")
            .or_else(|| line.find("Total estimated memory size:"));
        let lower_start = label.map_or("", |at| &line[at..]);
        if label.is_some() {
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
}
