//! What the steps charts show, as data: a step series' line with its trend,
//! projection and jumps, and the [`Chart`] the shared plotters drawing makes
//! of the visible lines. No markup, no canvas: unit-tested here.

use oomscope_report::units::format_bytes;
use oomscope_report::StepSeries;

use crate::draw::line_chart::{Chart, Mark, MarkShape, RefLine, Series, Stroke};
use crate::format::base_name;

/// One line of a plot and what is drawn with it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotLine {
    pub label: String,
    pub color: &'static str,
    /// `(x, bytes)`, x increasing.
    pub points: Vec<(f64, f64)>,
    /// `(slope per x, intercept)`: drawn dashed over the points' x range.
    pub trend: Option<(f64, f64)>,
    /// From `(x, bytes)` to `(x, bytes)`: the projection to the limit, dotted.
    pub projection: Option<((f64, f64), (f64, f64))>,
    /// Points marked as sudden jumps.
    pub spikes: Vec<(f64, f64)>,
}

/// A plot: its lines (the visible ones), limits and axis rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub lines: Vec<PlotLine>,
    pub levels: Vec<RefLine>,
    /// Include the projections and limits in the axis ranges.
    pub fit_projection: bool,
}

/// `TPU_0 · memory · leak.log`: what a series is, short.
pub fn series_label(s: &StepSeries, with_input: bool) -> String {
    let device = if s.device.is_empty() {
        "device"
    } else {
        &s.device
    };
    let metric = if s.metric.is_empty() {
        "memory"
    } else {
        &s.metric
    };
    if with_input && !s.input.is_empty() {
        format!("{device} · {metric} · {}", base_name(&s.input))
    } else {
        format!("{device} · {metric}")
    }
}

/// `+2.00 MiB/step`.
pub fn slope_text(slope: f64) -> String {
    let sign = if slope < 0.0 { "−" } else { "+" };
    format!("{sign}{}/step", format_bytes(slope.abs().round() as u64))
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    crate::sort::sort_by(&mut values, f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

/// A series' line: the analyzer's slope drawn through the median residual
/// of the points (a drawing anchor), its projection from the last point to
/// the limit at the step the analyzer projects, its jumps on the points.
pub fn plot_line(s: &StepSeries, color: &'static str, with_input: bool) -> PlotLine {
    let points: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.step as f64, p.bytes as f64))
        .collect();
    let trend = s.slope_bytes_per_step.and_then(|slope| {
        let intercept = median(points.iter().map(|(x, y)| y - slope * x).collect())?;
        Some((slope, intercept))
    });
    let projection = match (s.projected_limit_step, s.limit_bytes, points.last(), trend) {
        (Some(step), Some(limit), Some(&(x, y)), Some((slope, intercept))) if step != u64::MAX => {
            Some((
                (x, y.max(intercept + slope * x)),
                (step as f64, limit as f64),
            ))
        }
        _ => None,
    };
    let spikes = s
        .spikes
        .iter()
        .filter_map(|&step| {
            s.points
                .iter()
                .find(|p| p.step >= step)
                .map(|p| (p.step as f64, p.bytes as f64))
        })
        .collect();
    PlotLine {
        label: series_label(s, with_input),
        color,
        points,
        trend,
        projection,
        spikes,
    }
}

impl Plot {
    /// The axes: the points' x range and largest value, widened to the
    /// projections and limits when `fit_projection`.
    fn ranges(&self) -> ((f64, f64), f64) {
        let mut x0 = f64::INFINITY;
        let mut x1 = f64::NEG_INFINITY;
        let mut y_top = 0.0f64;
        for line in &self.lines {
            for &(x, y) in &line.points {
                x0 = x0.min(x);
                x1 = x1.max(x);
                y_top = y_top.max(y);
            }
            if let (true, Some((_, (x, y)))) = (self.fit_projection, line.projection) {
                x1 = x1.max(x);
                y_top = y_top.max(y);
            }
        }
        if self.fit_projection {
            y_top = self.levels.iter().map(|l| l.bytes).fold(y_top, f64::max);
        }
        ((x0, x1), y_top)
    }

    /// The chart of this plot, for the canvas and the SVG export alike.
    pub fn chart(&self) -> Chart {
        let (x_range, y_top) = self.ranges();
        let mut series = Vec::new();
        let mut marks = Vec::new();
        for line in &self.lines {
            let model = |label: String, points: Vec<(f64, f64)>, stroke: Stroke| Series {
                label,
                points,
                color: line.color,
                stroke,
                steps: false,
            };
            series.push(model(
                line.label.clone(),
                line.points.clone(),
                Stroke::Solid,
            ));
            if let (Some((slope, intercept)), Some(first), Some(last)) =
                (line.trend, line.points.first(), line.points.last())
            {
                let at = |x: f64| (x, intercept + slope * x);
                series.push(model(
                    String::new(),
                    vec![at(first.0), at(last.0)],
                    Stroke::Dashed,
                ));
            }
            if let Some((from, to)) = line.projection {
                series.push(model(String::new(), vec![from, to], Stroke::Dotted));
                marks.push(Mark {
                    x: to.0,
                    bytes: to.1,
                    color: line.color,
                    shape: MarkShape::Square,
                });
            }
            marks.extend(line.spikes.iter().map(|&(x, bytes)| Mark {
                x,
                bytes,
                color: line.color,
                shape: MarkShape::Jump,
            }));
        }
        Chart {
            title: Some(self.title.clone()),
            x_label: self.x_label.clone(),
            series,
            lines: self.levels.clone(),
            marks,
            marker: None,
            x_range: Some(x_range),
            y_top: Some(y_top),
            ..Chart::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oomscope_report::StepPoint;

    fn plot(fit_projection: bool) -> Plot {
        Plot {
            title: "t".into(),
            x_label: "step".into(),
            lines: vec![PlotLine {
                label: "a".into(),
                color: "#0969da",
                points: vec![(0.0, 10.0), (100.0, 20.0)],
                trend: Some((0.1, 10.0)),
                projection: Some(((100.0, 20.0), (1000.0, 110.0))),
                spikes: vec![(50.0, 15.0)],
            }],
            levels: vec![RefLine {
                label: "limit".into(),
                bytes: 110.0,
                color: "#cf222e",
            }],
            fit_projection,
        }
    }

    #[test]
    fn projection_and_limit_widen_the_axes_only_when_asked() {
        let narrow = plot(false).chart();
        assert_eq!(narrow.x_range, Some((0.0, 100.0)));
        assert_eq!(narrow.y_top, Some(20.0));
        let wide = plot(true).chart();
        assert_eq!(wide.x_range, Some((0.0, 1000.0)));
        assert_eq!(wide.y_top, Some(110.0));
        let strokes: Vec<Stroke> = wide.series.iter().map(|s| s.stroke).collect();
        assert_eq!(strokes, [Stroke::Solid, Stroke::Dashed, Stroke::Dotted]);
        let shapes: Vec<MarkShape> = wide.marks.iter().map(|m| m.shape).collect();
        assert_eq!(shapes, [MarkShape::Square, MarkShape::Jump]);
    }

    #[test]
    fn a_series_line_carries_trend_projection_and_jumps() {
        let s = StepSeries {
            device: "TPU_0".into(),
            input: "runs/leak.log".into(),
            points: (0..10)
                .map(|i| StepPoint {
                    step: i * 10,
                    bytes: 1000 + i * 100,
                })
                .collect(),
            slope_bytes_per_step: Some(10.0),
            limit_bytes: Some(5000),
            projected_limit_step: Some(400),
            spikes: vec![35],
            ..StepSeries::default()
        };
        let line = plot_line(&s, "#0969da", true);
        assert_eq!(line.label, "TPU_0 · memory · leak.log");
        assert_eq!(line.trend, Some((10.0, 1000.0)));
        assert_eq!(line.projection, Some(((90.0, 1900.0), (400.0, 5000.0))));
        assert_eq!(line.spikes, vec![(40.0, 1400.0)]);
        assert_eq!(slope_text(-2.0 * 1024.0 * 1024.0), "−2.00 MiB/step");
        let never = StepSeries {
            projected_limit_step: Some(u64::MAX),
            ..s
        };
        assert_eq!(plot_line(&never, "#0969da", false).projection, None);
    }
}
