//! CSV (or TSV) tables: a header naming a step column, or headerless
//! `step,bytes` rows.

use super::series_set::SeriesSet;
use super::text::{metric_name, parse_float};
use super::CSV;
use oomscope_report::units::{binary_multiplier, scale};
use oomscope_report::StepSeries;

/// CSV (or TSV) with a header naming a step column, or headerless `step,bytes`.
/// `None` when the text is not such a table.
pub(super) fn parse_csv(input_name: &str, text: &str) -> Option<Vec<StepSeries>> {
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
pub(super) struct CsvColumn {
    index: usize,
    metric: String,
    multiplier: u64,
    unit: &'static str,
}

/// Unit named in a CSV header or file name by a whole word: `memory_gib`,
/// `reserved (MiB)`, `max_reserved(GiB)`, `bytes`.
pub(super) fn csv_unit(h: &str) -> Option<(&'static str, u64)> {
    let h = h.to_ascii_lowercase();
    let words: Vec<&str> = h.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    for unit in ["GiB", "GB", "MiB", "MB", "KiB", "KB"] {
        if words.iter().any(|w| w.eq_ignore_ascii_case(unit)) {
            return Some((unit, binary_multiplier(unit)?));
        }
    }
    words.contains(&"bytes").then_some(("B", 1))
}
