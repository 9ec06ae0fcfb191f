//! Run-time memory (issue 17): PyTorch memory timelines and Kineto traces as
//! memory over time, stacked by category, with the peak; JAX device memory
//! profiles as totals, per-device balance bars and top source lines; series
//! of profiles with the stacks that grow across them (the leak, with its
//! line). Live bytes by stack are drawn by the shared stack view, not here.
//! The analyzer computes every number; this view only draws.

mod area;

use std::sync::Arc;

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::{
    DeviceMemoryProfile, DeviceMemorySeries, Frame, MemoryTimeline, Report, TimelineSource,
};

use crate::draw::line_chart::{inline_svg, Area, Chart, Marker, PALETTE};
use crate::format::{base_name, group_digits, Bytes};
use crate::widgets::table_head::TableHead;

/// The memory-over-time chart's size in CSS pixels (it scales to the page).
const CHART_WIDTH: f64 = 960.0;
const CHART_HEIGHT: f64 = 300.0;

/// PyTorch's category names, in the order the analyzer stacks them.
const CATEGORY_LABELS: [&str; 8] = [
    "Parameter",
    "Optimizer state",
    "Input",
    "Temporary",
    "Activation",
    "Gradient",
    "Autograd detail",
    "Unknown",
];

#[component]
pub fn RuntimeView(report: Arc<Report>) -> impl IntoView {
    if report.memory_timelines.is_empty() && report.device_memory_profiles.is_empty() {
        return ().into_any();
    }
    let series = report.device_memory_series.clone();
    let profiles = report.device_memory_profiles.clone();
    let timelines = report.memory_timelines.clone();
    view! {
        <section class="card" id="runtime" aria-labelledby="runtime-title">
            <h2 id="runtime-title">"Run-time memory"</h2>
            <crate::widgets::runtime_left_out::RuntimeLeftOut report=report.clone()/>
            {series.into_iter().map(|s| view! { <SeriesView series=s/> }).collect_view()}
            {timelines.into_iter().map(|t| view! { <TimelineView timeline=t/> }).collect_view()}
            {profiles.into_iter().map(|p| view! { <ProfileView profile=p/> }).collect_view()}
        </section>
    }
    .into_any()
}

/// `train.py:42 (step)`.
fn frame_label(f: &Frame) -> String {
    let file = base_name(&f.file);
    match (file.is_empty(), f.line) {
        (true, _) => f.function.clone(),
        (false, 0) => format!("{file} ({})", f.function),
        (false, line) => format!("{file}:{line} ({})", f.function),
    }
}

#[component]
fn SeriesView(series: DeviceMemorySeries) -> impl IntoView {
    let names: Vec<String> = series
        .inputs
        .iter()
        .map(|i| base_name(i).to_string())
        .collect();
    // One column per profile, headed by its file's name (not "Bytes" each).
    let header = view! {
        <thead>
            <tr>
                <th scope="col">"Created at"</th>
                {names.iter().map(|n| view! { <th scope="col" class="num">{n.clone()}</th> }).collect_view()}
                <th scope="col" class="num">"Growth"</th>
            </tr>
        </thead>
    };
    let headline = series.growing_stacks.first().map(|g| {
        format!(
            "Buffers created at {} grow by {} across these profiles.",
            frame_label(&g.frame),
            format_bytes(g.growth_bytes)
        )
    });
    view! {
        <div class="runtime-series" data-testid="device-memory-series">
            <h3>{format!("Series of {} profiles: {}", names.len(), names.join(", "))}</h3>
            <p role="status">{headline.unwrap_or_else(|| "No stack grows across these profiles.".into())}</p>
            <table class="data">
                <caption>"Stacks whose live bytes grow from profile to profile (in profile order)"</caption>
                {header}
                <tbody>
                    {series
                        .growing_stacks
                        .into_iter()
                        .map(|g| view! {
                            <tr>
                                <td title=g.frame.file.clone()>{frame_label(&g.frame)}</td>
                                {g.bytes_per_profile.into_iter().map(|b| view! { <td class="num"><Bytes value=b/></td> }).collect_view()}
                                <td class="num"><Bytes value=g.growth_bytes/></td>
                            </tr>
                        })
                        .collect_view()}
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn TimelineView(timeline: MemoryTimeline) -> impl IntoView {
    let source = match timeline.source {
        TimelineSource::TorchMemoryTimelineRaw => "PyTorch memory timeline (raw)",
        TimelineSource::TorchMemoryTimelineJson => "PyTorch memory timeline",
        TimelineSource::Kineto => "Kineto trace",
    };
    let device = if timeline.device.is_empty() {
        String::new()
    } else {
        format!(" · {}", timeline.device)
    };
    let categorized = timeline.points.iter().any(|p| !p.by_category.is_empty());
    let bands = if categorized {
        CATEGORY_LABELS.len()
    } else {
        1
    };
    let label = |i: usize| {
        if categorized {
            CATEGORY_LABELS[i]
        } else {
            "Allocated"
        }
    };
    let axis = area::TimeAxis::of(&timeline.points);
    let tops = area::stacked_tops(&timeline.points, bands, &axis);
    // Only the bands that hold bytes are drawn and named; the top band
    // first, so that each lower band covers it below its own top.
    let drawn: Vec<usize> = (0..bands)
        .filter(|&i| {
            let below = |k: usize| if i == 0 { 0.0 } else { tops[i - 1][k].1 };
            tops[i].iter().enumerate().any(|(k, t)| t.1 > below(k))
        })
        .collect();
    let chart = Chart {
        x_label: axis.label(),
        areas: drawn
            .iter()
            .rev()
            .map(|&i| Area {
                label: label(i).to_string(),
                points: tops[i].clone(),
                color: PALETTE[i % PALETTE.len()],
                steps: true,
            })
            .collect(),
        marker: Some(Marker {
            x: axis.x(timeline.peak_time),
            label: format!(
                "peak {} at {:.1} {}",
                format_bytes(timeline.peak_bytes),
                axis.x(timeline.peak_time),
                axis.unit
            ),
        }),
        ..Chart::default()
    };
    let svg = inline_svg(&chart, CHART_WIDTH, CHART_HEIGHT)
        .map(|(svg, _)| svg)
        .unwrap_or_default();
    let description = format!(
        "{source}{device}: peak {} at {} µs, final {}",
        format_bytes(timeline.peak_bytes),
        timeline.peak_time,
        format_bytes(timeline.final_bytes)
    );
    let legend = drawn
        .iter()
        .map(|&i| {
            view! { <span class="legend-item" data-series=label(i)><span class="legend-swatch fill" style:background-color=PALETTE[i % PALETTE.len()]></span>{label(i)}</span> }
        })
        .collect_view();
    let by_category: Vec<(String, u64)> = timeline
        .peak_by_category
        .clone()
        .into_iter()
        .filter(|(_, b)| *b > 0)
        .collect();
    view! {
        <figure class="runtime-timeline chart-figure" data-testid="memory-timeline">
            <figcaption>
                <strong>{format!("{source}{device}")}</strong>
                " · " {base_name(&timeline.input).to_string()}
                " · peak " <Bytes value=timeline.peak_bytes/>
                " · final " <Bytes value=timeline.final_bytes/>
                {format!(" · {} events", group_digits(timeline.events))}
            </figcaption>
            <div class="chart-svg" role="img" aria-label=description inner_html=svg></div>
            <div class="legend">{legend}</div>
            {(!by_category.is_empty()).then(|| view! {
                <table class="data">
                    <caption>"Bytes at the peak, by category"</caption>
                    <TableHead columns=vec![("Category", false), ("Bytes", true)]/>
                    <tbody>
                        {by_category.into_iter().map(|(c, b)| view! { <tr><td>{c}</td><td class="num"><Bytes value=b/></td></tr> }).collect_view()}
                    </tbody>
                </table>
            })}
        </figure>
    }
}

#[component]
fn ProfileView(profile: DeviceMemoryProfile) -> impl IntoView {
    let max = profile
        .devices
        .iter()
        .map(|d| d.buffer_bytes)
        .max()
        .unwrap_or(0)
        .max(1);
    let heaviest = profile.balance.as_ref().map(|b| b.heaviest_device.clone());
    let uneven = profile
        .balance
        .as_ref()
        .is_some_and(|b| b.max_bytes > b.min_bytes);
    let mut devices: Vec<_> = profile.devices.iter().collect();
    crate::sort::sort_by(&mut devices, |a, b| {
        device_order(&a.device).cmp(&device_order(&b.device))
    });
    let bars = devices
        .into_iter()
        .map(|d| {
            let width = format!("{:.1}%", d.buffer_bytes as f64 * 100.0 / max as f64);
            let hot = uneven && heaviest.as_deref() == Some(d.device.as_str());
            view! {
                <div class="runtime-device">
                    <span>{d.device.clone()}</span>
                    <span class="runtime-bar-track">
                        <span style:width=width style:background=if hot { "#cf222e" } else { "#0969da" } class="runtime-bar"></span>
                    </span>
                    <span class="num"><Bytes value=d.buffer_bytes/></span>
                </div>
            }
        })
        .collect_view();
    view! {
        <div class="runtime-profile" data-testid="device-memory-profile">
            <h3>{format!("JAX device memory profile · {}", base_name(&profile.input))}</h3>
            <p>
                <Bytes value=profile.buffer_bytes/> {format!(
                    " in {} live buffer{} on {} device{}; ",
                    group_digits(profile.buffer_count),
                    if profile.buffer_count == 1 { "" } else { "s" },
                    profile.devices.len(),
                    if profile.devices.len() == 1 { "" } else { "s" }
                )}
                {format!("{} executable{}", group_digits(profile.executable_count), if profile.executable_count == 1 { "" } else { "s" })}
                {(profile.executable_bytes > 0).then(|| view! { " (" <Bytes value=profile.executable_bytes/> ")" })}
                "."
            </p>
            <div role="list" aria-label="Live buffer bytes per device">{bars}</div>
            <table class="data">
                <caption>"Source lines holding the most bytes (innermost user frame)"</caption>
                <TableHead columns=vec![("Line", false), ("Buffers", true), ("Bytes", true)]/>
                <tbody>
                    {profile
                        .top_lines
                        .into_iter()
                        .map(|l| view! {
                            <tr>
                                <td title=l.frame.file.clone()>{frame_label(&l.frame)}</td>
                                <td class="num">{group_digits(l.count)}</td>
                                <td class="num"><Bytes value=l.bytes/></td>
                            </tr>
                        })
                        .collect_view()}
                </tbody>
            </table>
            <crate::widgets::stacks::StackView stacks=profile.top_stacks/>
        </div>
    }
}

/// A device name's sort key: its kind, then its number as a number
/// (`cpu:2` before `cpu:10`), then the whole name.
fn device_order(name: &str) -> (&str, u64, &str) {
    let kind = name.trim_end_matches(|c: char| c.is_ascii_digit());
    let number = name[kind.len()..].parse().unwrap_or(u64::MAX);
    (kind, number, name)
}

#[cfg(test)]
mod tests {
    use super::device_order;

    #[test]
    fn devices_sort_by_kind_then_number() {
        let mut names = vec![
            "cpu:2", "cpu:10", "TPU_1", "cpu:0", "cpu:7", "TPU_0", "cpu:1", "host",
        ];
        crate::sort::sort_by(&mut names, |a, b| device_order(a).cmp(&device_order(b)));
        assert_eq!(
            names,
            ["TPU_0", "TPU_1", "cpu:0", "cpu:1", "cpu:2", "cpu:7", "cpu:10", "host"]
        );
    }
}
