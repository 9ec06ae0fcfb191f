//! Series under construction, one per (source, device, metric).

use oomscope_report::{StepPoint, StepSeries};
use std::collections::HashMap;

/// Series under construction, keyed by (source, device, metric).
pub(super) struct SeriesSet {
    input: String,
    index: HashMap<(String, String, String), usize>,
    pub(super) series: Vec<StepSeries>,
    /// The series pushed to last.
    pub(super) last: Option<usize>,
}

impl SeriesSet {
    pub(super) fn new(input: &str) -> Self {
        SeriesSet {
            input: input.to_string(),
            index: HashMap::new(),
            series: Vec::new(),
            last: None,
        }
    }

    pub(super) fn get(
        &mut self,
        source: &str,
        device: &str,
        metric: &str,
        unit: &str,
    ) -> &mut StepSeries {
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

    pub(super) fn push(
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
