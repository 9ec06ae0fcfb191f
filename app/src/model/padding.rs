//! What the padding view shows, as data: the subjects it analyses (a
//! module's buffers, or an OOM event's listed allocations), their rows per
//! buffer or group, sorted, and the bars of its charts. No markup: the
//! decision tree asks it whether a cited buffer is listed, the padding view
//! draws it.

use oomscope_layout::{group_buffers, BufferPadding, GroupBy};
use oomscope_report::{PaddingSummary, Report};

use crate::draw::bars::Bar;
use crate::format::base_name;
use crate::state::BufferFocus;

/// Bars per chart.
pub const CHART_BARS: usize = 12;

/// What the view analyses: one module, or one OOM event's listed allocations.
#[derive(Debug, Clone)]
pub struct Subject {
    pub title: String,
    /// The peak the padding is a share of (module peak, or the OOM's used bytes).
    pub peak_bytes: Option<u64>,
    pub peak_unpadded_bytes: Option<u64>,
    pub summary: PaddingSummary,
    /// Buffers with padding.
    pub buffers: Vec<BufferPadding>,
    /// Every buffer considered, padded or not.
    pub buffer_count: usize,
    /// `(display name, memory space)` when the buffers are a module's.
    pub module: Option<(String, oomscope_report::MemoryColor)>,
    /// The module has buffer lifetimes (a timeline to show a buffer in).
    pub has_timeline: bool,
}

impl Subject {
    /// The index in `buffers` of the buffer `focus` names, if this subject
    /// holds it (with padding: only padded buffers are listed).
    pub fn find(&self, focus: &BufferFocus) -> Option<usize> {
        match &self.module {
            Some((module, space)) => {
                if focus.module != *module || focus.memory_space != *space {
                    return None;
                }
                self.buffers.iter().position(|b| focus.is(b.id, &b.name))
            }
            // An event's allocations carry their listing rank as the id.
            None => {
                let rank = i64::from(focus.listing_rank?);
                if !focus.module.is_empty() {
                    return None;
                }
                self.buffers.iter().position(|b| b.id == Some(rank))
            }
        }
    }
}

/// Whether the padding view lists the buffer `focus` names (for links to it).
pub fn lists_buffer(report: &Report) -> impl Fn(&BufferFocus) -> bool {
    let subjects = subjects(report);
    move |focus| subjects.iter().any(|s| s.find(focus).is_some())
}

pub fn subjects(report: &Report) -> Vec<Subject> {
    let modules: Vec<Subject> = report
        .modules
        .iter()
        .filter_map(|m| {
            let summary = m.padding.clone()?;
            if summary.total_padding_bytes == 0 && summary.peak_padding_bytes == 0 {
                return None;
            }
            let all = oomscope_layout::buffer_padding(m);
            let buffer_count = all.len();
            Some(Subject {
                title: format!("{} · {}", m.display_name(), m.space_words()),
                peak_bytes: Some(m.peak_bytes),
                peak_unpadded_bytes: Some(m.peak_unpadded_bytes),
                summary,
                buffers: all.into_iter().filter(|b| b.padding_bytes > 0).collect(),
                buffer_count,
                module: Some((m.display_name(), m.memory_space)),
                has_timeline: !m.buffers.is_empty(),
            })
        })
        .collect();
    if !modules.is_empty() {
        return modules;
    }
    report
        .oom_events
        .iter()
        .filter_map(|e| {
            let summary = e.padding.clone()?;
            let all = oomscope_layout::event_buffer_padding(e);
            let buffer_count = all.len();
            Some(Subject {
                title: format!("OOM in {} (line {})", base_name(&e.input), e.line),
                peak_bytes: e.used_bytes,
                peak_unpadded_bytes: None,
                summary,
                buffers: all.into_iter().filter(|b| b.padding_bytes > 0).collect(),
                buffer_count,
                module: None,
                has_timeline: false,
            })
        })
        .collect()
}

/// The subject the view opens on: the one with the most padding at the
/// peak, in HBM (memory space 0) when any subject is (other spaces hold
/// scalars and small buffers whose padding ratio is large and bytes few).
pub fn first_subject(subjects: &[Subject]) -> usize {
    subjects
        .iter()
        .enumerate()
        .max_by_key(|(_, s)| {
            let hbm = s
                .module
                .as_ref()
                .is_none_or(|(_, space)| *space == oomscope_report::MemoryColor::Device);
            (
                hbm,
                s.summary.peak_padding_bytes,
                s.summary.total_padding_bytes,
            )
        })
        .map(|(i, _)| i)
        .unwrap_or(0)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    Buffer,
    Shape,
    Op,
    Source,
}

impl Grouping {
    pub const ALL: [Grouping; 4] = [
        Grouping::Buffer,
        Grouping::Shape,
        Grouping::Op,
        Grouping::Source,
    ];
    pub fn label(self) -> &'static str {
        match self {
            Grouping::Buffer => "buffer",
            Grouping::Shape => "shape",
            Grouping::Op => "op",
            Grouping::Source => "source line",
        }
    }
    pub fn by(self) -> Option<GroupBy> {
        match self {
            Grouping::Buffer => None,
            Grouping::Shape => Some(GroupBy::Shape),
            Grouping::Op => Some(GroupBy::OpName),
            Grouping::Source => Some(GroupBy::Source),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Name,
    Count,
    Padded,
    Unpadded,
    Waste,
    Expansion,
}

/// One table row: a buffer, or a group of buffers.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    /// The shape, for buffers and shape groups.
    pub shape: String,
    pub count: u64,
    pub padded: u64,
    pub unpadded: u64,
    pub waste: u64,
    pub expansion: f64,
    pub op: String,
    pub source: String,
    /// Index into the subject's buffers, for a buffer row.
    pub buffer: Option<usize>,
}

pub fn rows_of(subject: &Subject, grouping: Grouping) -> Vec<Row> {
    match grouping.by() {
        None => subject
            .buffers
            .iter()
            .enumerate()
            .map(|(i, b)| Row {
                key: if b.name.is_empty() {
                    b.shape.clone()
                } else {
                    b.name.clone()
                },
                shape: b.shape.clone(),
                count: 1,
                padded: b.padded_bytes,
                unpadded: b.unpadded_bytes,
                waste: b.padding_bytes,
                expansion: b.expansion,
                op: b.op_name.clone(),
                source: b.source.clone(),
                buffer: Some(i),
            })
            .collect(),
        Some(by) => group_buffers(&subject.buffers, by)
            .into_iter()
            .map(|g| Row {
                shape: if by == GroupBy::Shape {
                    g.key.clone()
                } else {
                    String::new()
                },
                key: if g.key.is_empty() {
                    "(unknown)".to_string()
                } else {
                    g.key
                },
                count: g.count,
                padded: g.padded_bytes,
                unpadded: g.unpadded_bytes,
                waste: g.padding_bytes,
                expansion: g.expansion,
                op: String::new(),
                source: String::new(),
                buffer: None,
            })
            .collect(),
    }
}

pub fn sort_rows(rows: &mut [Row], key: SortKey, descending: bool) {
    crate::sort::sort_by(rows, |a, b| {
        let order = match key {
            SortKey::Name => a.key.cmp(&b.key),
            SortKey::Count => a.count.cmp(&b.count),
            SortKey::Padded => a.padded.cmp(&b.padded),
            SortKey::Unpadded => a.unpadded.cmp(&b.unpadded),
            SortKey::Waste => a.waste.cmp(&b.waste),
            SortKey::Expansion => a.expansion.total_cmp(&b.expansion),
        };
        let order = if descending { order.reverse() } else { order };
        order
            .then_with(|| b.waste.cmp(&a.waste))
            .then_with(|| a.key.cmp(&b.key))
    });
}

pub fn bars_of(rows: &[Row]) -> Vec<Bar> {
    let mut sorted = rows.to_vec();
    sort_rows(&mut sorted, SortKey::Waste, true);
    sorted
        .into_iter()
        .take(CHART_BARS)
        .map(|r| Bar {
            label: r.key,
            padded: r.padded,
            unpadded: r.unpadded,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subject(space: Option<i64>, peak_padding: u64) -> Subject {
        Subject {
            title: String::new(),
            peak_bytes: None,
            peak_unpadded_bytes: None,
            summary: PaddingSummary {
                peak_padding_bytes: peak_padding,
                ..Default::default()
            },
            buffers: Vec::new(),
            buffer_count: 0,
            module: space.map(|s| ("m".to_string(), oomscope_report::MemoryColor::from(s))),
            has_timeline: false,
        }
    }

    #[test]
    fn opens_on_hbm_even_when_another_space_pads_more() {
        let subjects = [
            subject(Some(6), 1 << 30),
            subject(Some(0), 10),
            subject(Some(0), 20),
        ];
        assert_eq!(first_subject(&subjects), 2);
        assert_eq!(
            first_subject(&[subject(Some(1), 5), subject(Some(6), 7)]),
            1
        );
        assert_eq!(first_subject(&[subject(None, 5), subject(None, 7)]), 1);
        assert_eq!(first_subject(&[]), 0);
    }

    #[test]
    fn rows_sort_by_any_column_then_by_waste() {
        let row = |key: &str, waste: u64, count: u64| Row {
            key: key.to_string(),
            shape: String::new(),
            count,
            padded: waste * 2,
            unpadded: waste,
            waste,
            expansion: 2.0,
            op: String::new(),
            source: String::new(),
            buffer: None,
        };
        let mut rows = vec![row("b", 5, 1), row("a", 9, 1), row("c", 7, 3)];
        sort_rows(&mut rows, SortKey::Waste, true);
        assert_eq!(rows.iter().map(|r| r.waste).collect::<Vec<_>>(), [9, 7, 5]);
        sort_rows(&mut rows, SortKey::Name, false);
        assert_eq!(
            rows.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        // Equal counts fall back to the larger waste first.
        sort_rows(&mut rows, SortKey::Count, false);
        assert_eq!(
            rows.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(bars_of(&rows)[0].label, "a");
    }
}
