//! Parser for `*-memory-usage-report.txt`.
//!
//! Newer compilers print one block per memory space:
//! ```text
//! Memory Space: default (color=0)
//! Total bytes: 12083424768 (11.25GiB)
//!   cumulative_size;       size;       offset; used_by_n_values; shapes_list
//!     3.66GiB( 33%);    3.66GiB;   3933208576;                1; f32[32768,30001]
//! ```
//! Older ones print `Total bytes used: N` and `Allocations sorted by size:`
//! rows ending in the allocation header (`allocation 20: size 25.64GiB, ...`).
//! Sizes in rows are rounded for humans; only the totals are exact.

use crate::hlo::clip;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryUsageReport<'a> {
    pub spaces: Vec<MemorySpaceUsage<'a>>,
    /// Older format: the `allocation N: size ...` blocks with their rows.
    pub allocations: Vec<AllocationUsage<'a>>,
    /// Older format: `Total bytes used: N` over all allocations.
    pub total_bytes_used: Option<u64>,
    pub problems: Vec<(u32, String)>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemorySpaceUsage<'a> {
    /// `default`, `vmem`, `smem`, `color_6`, ...
    pub name: &'a str,
    pub color: i64,
    pub total_bytes: u64,
    pub rows: Vec<UsageRow<'a>>,
}

/// An allocation block of the older format.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllocationUsage<'a> {
    /// The header as printed, e.g. `allocation 20: size 25.64GiB, preallocated-temp:`.
    pub header: &'a str,
    pub rows: Vec<UsageRow<'a>>,
}

/// One row of a usage table (one allocation or part of the temp allocation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageRow<'a> {
    /// The `size` column as printed (rounded, e.g. `3.66GiB`).
    pub size: &'a str,
    pub offset: u64,
    pub used_by_n_values: u64,
    pub shapes: &'a str,
}

pub fn parse(text: &str) -> MemoryUsageReport<'_> {
    let mut out = MemoryUsageReport::default();
    // Rows belong to the block (memory space or allocation) opened last.
    let mut rows_of_allocation = false;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(rest) = line.strip_prefix("Memory Space: ") {
            rows_of_allocation = false;
            let parsed = rest
                .split_once(" (color=")
                .and_then(|(name, color)| Some((name, color.trim_end_matches(')').parse().ok()?)));
            match parsed {
                Some((name, color)) => out.spaces.push(MemorySpaceUsage {
                    name,
                    color,
                    ..Default::default()
                }),
                None => problem(&mut out, i, line),
            }
        } else if line.starts_with("allocation ") {
            rows_of_allocation = true;
            out.allocations.push(AllocationUsage {
                header: line,
                rows: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("Total bytes used: ") {
            out.total_bytes_used = rest.split(' ').next().and_then(|n| n.parse().ok());
        } else if let Some(rest) = line.strip_prefix("Total bytes: ") {
            match (
                rest.split(' ').next().and_then(|n| n.parse().ok()),
                out.spaces.last_mut(),
            ) {
                (Some(total), Some(space)) => space.total_bytes = total,
                _ => problem(&mut out, i, line),
            }
        } else if line.matches(';').count() == 4 && !line.starts_with("cumulative_size") {
            let columns: Vec<&str> = line.split(';').map(str::trim).collect();
            let row = match columns.as_slice() {
                [_, size, offset, n, shapes] => (|| {
                    Some(UsageRow {
                        size,
                        offset: offset.parse().ok()?,
                        used_by_n_values: n.parse().ok()?,
                        shapes,
                    })
                })(),
                _ => None,
            };
            let rows = if rows_of_allocation {
                out.allocations.last_mut().map(|a| &mut a.rows)
            } else {
                out.spaces.last_mut().map(|s| &mut s.rows)
            };
            match (row, rows) {
                (Some(row), Some(rows)) => rows.push(row),
                _ => problem(&mut out, i, line),
            }
        }
    }
    out
}

fn problem(out: &mut MemoryUsageReport<'_>, index: usize, text: &str) {
    if out.problems.len() < 100 {
        out.problems.push((
            (index + 1) as u32,
            format!("unreadable memory-usage line `{}`", clip(text)),
        ));
    }
}
