//! The step series block: every series overlaid on one plot, the notes
//! (sawtooth, projection) and the table of series with their trends.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::StepSeries;

use super::model::{plot_line, series_label, slope_text, PlotLine};
use super::plot_view::PlotView;
use crate::draw::line_chart::{RefLine, PALETTE};
use crate::export;
use crate::format::{base_name, group_digits, Bytes};
use crate::widgets::table_head::TableHead;

#[component]
pub fn StepSeriesChart(series: Vec<StepSeries>) -> impl IntoView {
    let mut inputs: Vec<&str> = series.iter().map(|s| s.input.as_str()).collect();
    inputs.sort_unstable();
    inputs.dedup();
    let with_input = inputs.len() > 1;
    let lines: Vec<PlotLine> = series
        .iter()
        .enumerate()
        .map(|(i, s)| plot_line(s, PALETTE[i % PALETTE.len()], with_input))
        .collect();
    let mut limits: Vec<u64> = series.iter().filter_map(|s| s.limit_bytes).collect();
    limits.sort_unstable();
    limits.dedup();
    let levels: Vec<RefLine> = limits
        .iter()
        .map(|&l| RefLine {
            label: format!("limit {}", format_bytes(l)),
            bytes: l as f64,
            color: "#cf222e",
        })
        .collect();
    let has_projection = lines.iter().any(|l| l.projection.is_some());
    // Widen the axes to the projections at first only when they stay near
    // the data (within 3× its step span); otherwise the data would be a
    // sliver, and the notes below state the projection anyway.
    let (first_step, last_step) = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    let projection_shown = has_projection
        && lines
            .iter()
            .filter_map(|l| l.projection)
            .all(|(_, (x, _))| x <= last_step + 3.0 * (last_step - first_step));
    let csv = export::csv(
        &[
            "device", "metric", "source", "input", "unit", "step", "bytes",
        ],
        series.iter().flat_map(|s| {
            s.points.iter().map(move |p| {
                vec![
                    s.device.clone(),
                    s.metric.clone(),
                    s.source.clone(),
                    s.input.clone(),
                    s.unit.clone(),
                    p.step.to_string(),
                    p.bytes.to_string(),
                ]
            })
        }),
    );
    let rows = series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let first = s.points.first().map(|p| p.bytes);
            let last = s.points.last().map(|p| p.bytes);
            let peak = s.points.iter().map(|p| p.bytes).max();
            let steps = match (s.points.first(), s.points.last()) {
                (Some(a), Some(b)) => format!("{}–{}", group_digits(a.step), group_digits(b.step)),
                _ => String::new(),
            };
            let color = PALETTE[i % PALETTE.len()];
            let spike_steps = s.spikes.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
            view! {
                <tr data-series=i.to_string()>
                    <td><span class="legend-swatch line" style:border-color=color></span> " " {series_label(s, with_input)}</td>
                    <td class="mono" title=s.input.clone()>{format!("{} ({})", base_name(&s.input), s.source)}</td>
                    <td class="num">{steps}</td>
                    <td class="num">{first.map(|b| view! { <Bytes value=b/> })}</td>
                    <td class="num">{last.map(|b| view! { <Bytes value=b/> })}</td>
                    <td class="num">{peak.map(|b| view! { <Bytes value=b/> })}</td>
                    <td class="num slope" data-slope=s.slope_bytes_per_step.map(|v| v.to_string()).unwrap_or_default()>
                        {s.slope_bytes_per_step.map(slope_text)}
                    </td>
                    <td class="num" data-field="projected">{s.projected_limit_step.map(|p| if p == u64::MAX { "never".to_string() } else { group_digits(p) })}</td>
                    <td class="num" data-field="sawtooth">{s.sawtooth_period_steps.map(|p| format!("{p} steps"))}</td>
                    <td class="num" data-field="spikes" title=spike_steps>
                        {(!s.spikes.is_empty()).then(|| format!("{} (first at {})", s.spikes.len(), group_digits(s.spikes[0])))}
                    </td>
                </tr>
            }
        })
        .collect_view();
    let title = if series.len() == 1 {
        format!("Memory per step: {}", series_label(&series[0], true))
    } else {
        format!("Memory per step: {} series", series.len())
    };
    let description = format!(
        "{title}. {}",
        series
            .iter()
            .map(|s| format!(
                "{}: {} points{}",
                series_label(s, with_input),
                s.points.len(),
                s.slope_bytes_per_step
                    .map(|v| format!(", trend {}", slope_text(v)))
                    .unwrap_or_default()
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let notes = series
        .iter()
        .filter_map(|s| {
            s.sawtooth_period_steps.map(|p| format!("{} rises and falls with a period of {p} steps (a sawtooth: memory kept between log or checkpoint intervals).", series_label(s, with_input)))
        })
        .chain(series.iter().filter_map(|s| {
            match (s.projected_limit_step, s.limit_bytes, s.slope_bytes_per_step) {
                (Some(step), Some(limit), Some(slope)) if step != u64::MAX => Some(format!(
                    "At {} the trend of {} reaches the limit of {} at step {} (a projection, assuming the trend holds).",
                    slope_text(slope),
                    series_label(s, with_input),
                    format_bytes(limit),
                    group_digits(step)
                )),
                _ => None,
            }
        }))
        .map(|n| view! { <li>{n}</li> })
        .collect_view();
    view! {
        <div class="steps-block">
            <PlotView
                lines=lines
                levels=levels
                title=title
                x_label="training step"
                x_name="step"
                file_stem="oomscope-steps"
                csv=csv
                projection_toggle=has_projection
                projection_shown=projection_shown
                description=description
            />
            <ul class="steps-notes">{notes}</ul>
            <div class="table-scroll">
                <table class="data steps-table">
                    <caption class="visually-hidden">"Step series and their trends"</caption>
                    <TableHead columns=vec![
                        ("Series", false), ("Input", false), ("Steps", true), ("First", true), ("Last", true),
                        ("Peak", true), ("Trend", true), ("Limit at step", true), ("Sawtooth", true), ("Jumps", true),
                    ]/>
                    <tbody>{rows}</tbody>
                </table>
            </div>
        </div>
    }
}
