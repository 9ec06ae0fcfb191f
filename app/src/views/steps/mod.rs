//! Memory over time: every step series of the report overlaid on one chart
//! (one line per device and metric, toggled from the legend) with its trend
//! (the analyzer's Theil–Sen slope), its projection to the limit (dotted, up
//! to the step the analyzer projects) and its sudden jumps; the sawtooth
//! period noted; hover for exact values. Allocator profiles (heap, stack and
//! free over time, from XProf's allocator events) get a second chart with the
//! allocations active at the peak. Each chart exports as SVG, PNG and CSV.
//!
//! The analyzer computes every number shown; this view only draws, with the
//! shared plotters line chart (`draw::line_chart`): `model` makes the chart
//! of the series, `plot_view` puts it on a canvas with toggles, hover and
//! exports, `series` and `allocator` are the two blocks.

mod allocator;
mod model;
mod plot_view;
mod series;

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::Report;

use allocator::AllocatorChart;
use series::StepSeriesChart;

#[component]
pub fn StepsView(report: Arc<Report>) -> impl IntoView {
    if report.step_series.is_empty() && report.allocator_profiles.is_empty() {
        return ().into_any();
    }
    let series = report.step_series.clone();
    let profiles = report.allocator_profiles.clone();
    view! {
        <section class="card" id="steps" aria-labelledby="steps-title">
            <h2 id="steps-title">"Memory over time"</h2>
            {(!series.is_empty()).then(|| view! { <StepSeriesChart series=series/> })}
            {profiles.into_iter().map(|p| view! { <AllocatorChart profile=p/> }).collect_view()}
        </section>
    }
    .into_any()
}
