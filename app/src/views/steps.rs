//! Memory over training steps: each series read from a training log, with
//! its trend (growth per step, the step where it reaches the limit, a
//! sawtooth period, sudden jumps). (The step-series issue builds the full
//! view on this.)

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::{units::format_bytes, Report, StepSeries};

use crate::format::{base_name, Bytes};
use crate::views::chart::{LineChart, RefLine, Series};

#[component]
pub fn StepsView(report: Arc<Report>) -> impl IntoView {
    if report.step_series.is_empty() {
        return ().into_any();
    }
    let series = report.step_series.clone();
    view! {
        <section class="card" id="steps" aria-labelledby="steps-title">
            <h2 id="steps-title">"Memory over steps"</h2>
            {series.into_iter().map(|s| view! { <OneSeries series=s/> }).collect_view()}
        </section>
    }
    .into_any()
}

#[component]
fn OneSeries(series: StepSeries) -> impl IntoView {
    let title = format!(
        "{} · {} · {}",
        if series.device.is_empty() {
            "device"
        } else {
            &series.device
        },
        if series.metric.is_empty() {
            "memory"
        } else {
            &series.metric
        },
        series.source
    );
    let last = series.points.last().map(|p| p.bytes);
    let first = series.points.first().map(|p| p.bytes);
    let points: Vec<(f64, f64)> = series
        .points
        .iter()
        .map(|p| (p.step as f64, p.bytes as f64))
        .collect();
    let lines = series
        .limit_bytes
        .map(|l| {
            vec![RefLine {
                label: format!("limit {}", format_bytes(l)),
                bytes: l as f64,
                color: "#cf222e",
            }]
        })
        .unwrap_or_default();
    let description = format!(
        "{title}: {} points from step {} to {}.",
        series.points.len(),
        series.points.first().map(|p| p.step).unwrap_or(0),
        series.points.last().map(|p| p.step).unwrap_or(0)
    );
    let chart = (series.points.len() > 1).then(|| {
        view! {
            <LineChart
                series=vec![Series { label: series.metric.clone(), points, color: "#0969da", dashed: false, steps: false }]
                lines=lines
                marker=None
                x_label="step"
                description=description
            />
        }
    });
    let slope = series.slope_bytes_per_step.map(|s| {
        let sign = if s < 0.0 { "−" } else { "+" };
        format!("{sign}{} per step", format_bytes(s.abs().round() as u64))
    });
    view! {
        <div class="series" data-device=series.device.clone()>
            <h3 class="subhead">{title} <span class="muted mono">{format!(" {}", base_name(&series.input))}</span></h3>
            <dl class="stats">
                {first.map(|b| view! { <div class="stat"><dt>"First step"</dt><dd><Bytes value=b/></dd></div> })}
                {last.map(|b| view! { <div class="stat"><dt>"Last step"</dt><dd><Bytes value=b/></dd></div> })}
                {slope.map(|s| view! { <div class="stat" data-field="slope"><dt>"Trend"</dt><dd>{s}</dd></div> })}
                {series.projected_limit_step.map(|s| view! {
                    <div class="stat" data-field="projected"><dt>"Reaches the limit at step"</dt><dd>{s}</dd></div>
                })}
                {series.sawtooth_period_steps.map(|p| view! {
                    <div class="stat" data-field="sawtooth"><dt>"Sawtooth period"</dt><dd>{format!("{p} steps")}</dd></div>
                })}
                {(!series.spikes.is_empty()).then(|| view! {
                    <div class="stat" data-field="spikes">
                        <dt>"Jumps at steps"</dt>
                        <dd>{series.spikes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")}</dd>
                    </div>
                })}
            </dl>
            {chart}
        </div>
    }
}
