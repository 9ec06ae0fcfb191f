//! `tpu-info` tables captured over time (`watch tpu-info`, `--streaming`):
//! plain (`| 0 | 18.45 GiB / 31.25 GiB | ... |`) and box-drawn rows; each
//! header row naming HBM usage starts a new snapshot (the step).

use super::text::parse_float;
use super::{LogReader, TPU_INFO};
use oomscope_report::units::{binary_multiplier, scale};

impl LogReader {
    /// `tpu-info` table rows: `| chip | U GiB / L GiB | ...`.
    pub(super) fn tpu_info(&mut self, line: &str) -> bool {
        let is_table = line.contains('|') || line.contains('│') || line.contains('┃');
        if !is_table {
            return false;
        }
        // Cells follow the first border; text before it is a logger's prefix.
        let cells: Vec<&str> = line
            .split(['|', '│', '┃'])
            .skip(1)
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
