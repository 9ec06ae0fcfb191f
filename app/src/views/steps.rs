//! Memory over time: every step series of the report overlaid on one chart
//! (one line per device and metric, toggled from the legend) with its trend
//! (the analyzer's Theil–Sen slope), its projection to the limit (dotted, up
//! to the step the analyzer projects) and its sudden jumps; the sawtooth
//! period noted; hover for exact values. Allocator profiles (heap, stack and
//! free over time, from XProf's allocator events) get a second chart with the
//! allocations active at the peak. Each chart exports as SVG, PNG and CSV.
//!
//! The analyzer computes every number shown; this view only draws (the trend
//! line's intercept, the median residual of the points, is a drawing anchor).



use std::sync::Arc;

use leptos::ev;
use leptos::html;
use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::{AllocatorProfile, Report, StepSeries};

use crate::draw::painter::SvgWriter;
use crate::export;
use crate::format::{base_name, group_digits, Bytes};
use crate::widgets::table_head::TableHead;
use crate::draw::line_plot::{paint_canvas, Level, LinePlot, PlotFrame, PlotLine, PALETTE};

/// Chart height in CSS pixels.
const HEIGHT: f64 = 360.0;
/// Size of the SVG export.
const SVG_SIZE: (f64, f64) = (1100.0, 420.0);
/// Allocations listed as active at an allocator's peak.
const ACTIVE_ROWS: usize = 15;

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

/// `TPU_0 · memory · leak.log`: what a series is, short.
fn series_label(s: &StepSeries, with_input: bool) -> String {
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
fn slope_text(slope: f64) -> String {
    let sign = if slope < 0.0 { "−" } else { "+" };
    format!("{sign}{}/step", format_bytes(slope.abs().round() as u64))
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    })
}

fn plot_line(s: &StepSeries, color: &'static str, with_input: bool) -> PlotLine {
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

#[component]
fn StepSeriesChart(series: Vec<StepSeries>) -> impl IntoView {
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
    let levels: Vec<Level> = limits
        .iter()
        .map(|&l| Level {
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

#[component]
fn AllocatorChart(profile: AllocatorProfile) -> impl IntoView {
    let ms = |ps: u64| ps as f64 / 1e9;
    let series = |name: &str,
                  color: &'static str,
                  value: fn(&oomscope_report::AllocatorPoint) -> u64| PlotLine {
        label: name.to_string(),
        color,
        points: profile
            .timeline
            .iter()
            .map(|p| (ms(p.time_ps), value(p) as f64))
            .collect(),
        trend: None,
        projection: None,
        spikes: Vec::new(),
    };
    let lines = vec![
        series("heap", PALETTE[0], |p| p.heap_bytes),
        series("stack", PALETTE[1], |p| p.stack_bytes),
        series("free", PALETTE[2], |p| p.free_bytes),
    ];
    let levels = (profile.capacity_bytes > 0)
        .then(|| Level {
            label: format!("capacity {}", format_bytes(profile.capacity_bytes)),
            bytes: profile.capacity_bytes as f64,
            color: "#cf222e",
        })
        .into_iter()
        .collect();
    let csv = export::csv(
        &[
            "allocator",
            "time_ps",
            "heap_bytes",
            "stack_bytes",
            "free_bytes",
        ],
        profile.timeline.iter().map(|p| {
            vec![
                profile.allocator.clone(),
                p.time_ps.to_string(),
                p.heap_bytes.to_string(),
                p.stack_bytes.to_string(),
                p.free_bytes.to_string(),
            ]
        }),
    );
    let title = format!("Allocator {}", profile.allocator);
    let description = format!(
        "{title}: heap {} at the peak ({:.3} ms), {} timeline points.",
        format_bytes(profile.peak_heap_bytes),
        ms(profile.peak_time_ps),
        profile.timeline.len()
    );
    let mut active = profile.active_at_peak.clone();
    active.sort_by_key(|a| std::cmp::Reverse(a.allocation_bytes));
    let active_total = active.len();
    let active_rows = active
        .iter()
        .take(ACTIVE_ROWS)
        .map(|a| {
            view! {
                <tr>
                    <td class="num"><Bytes value=a.allocation_bytes/></td>
                    <td class="num"><Bytes value=a.requested_bytes/></td>
                    <td class="num">{a.occurrences}</td>
                    <td class="mono" title=a.op_name.clone()>{a.op_name.clone()}</td>
                    <td class="mono shape">{a.shape.clone()}</td>
                    <td>{a.data_type.clone()}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div class="allocator-block" data-allocator=profile.allocator.clone()>
            <h3 class="subhead">{title.clone()} <span class="muted mono">{format!(" {}", base_name(&profile.input))}</span></h3>
            <dl class="stats">
                <div class="stat" data-field="peak_heap"><dt>"Heap at the peak"</dt><dd><Bytes value=profile.peak_heap_bytes/></dd></div>
                <div class="stat"><dt>"Stack at the peak"</dt><dd><Bytes value=profile.peak_stack_bytes/></dd></div>
                <div class="stat"><dt>"Peak at"</dt><dd>{format!("{:.3} ms", ms(profile.peak_time_ps))}</dd></div>
                {(profile.capacity_bytes > 0).then(|| view! { <div class="stat"><dt>"Capacity"</dt><dd><Bytes value=profile.capacity_bytes/></dd></div> })}
                <div class="stat"><dt>"Fragmentation at the peak"</dt><dd>{format!("{:.1}%", profile.fragmentation_at_peak * 100.0)}</dd></div>
            </dl>
            <PlotView
                lines=lines
                levels=levels
                title=title
                x_label="time (ms)"
                x_name="ms"
                file_stem=format!("oomscope-allocator-{}", export::file_stem(&profile.allocator))
                csv=csv
                projection_toggle=false
                projection_shown=false
                description=description
            />
            {(active_total > 0).then(|| view! {
                <h4 class="subhead">{format!("Allocations active at the peak ({active_total}, largest {})", active_total.min(ACTIVE_ROWS))}</h4>
                <div class="table-scroll">
                    <table class="data">
                        <TableHead columns=vec![
                            ("Allocated", true), ("Requested", true), ("Count", true), ("Operation", false), ("Shape", false), ("Type", false),
                        ]/>
                        <tbody>{active_rows}</tbody>
                    </table>
                </div>
            })}
        </div>
    }
}

/// One value under the pointer: series, x, bytes.
#[derive(Debug, Clone, PartialEq)]
struct HoverValue {
    label: String,
    color: &'static str,
    x: f64,
    bytes: u64,
}

/// A [`LinePlot`] on a canvas with legend toggles, hover values and export.
#[component]
fn PlotView(
    lines: Vec<PlotLine>,
    levels: Vec<Level>,
    title: String,
    x_label: &'static str,
    /// What x is called in the hover (`step`, `ms`).
    x_name: &'static str,
    #[prop(into)] file_stem: String,
    csv: String,
    /// Offer "show the projection to the limit" (it widens the axes).
    projection_toggle: bool,
    /// Whether the axes include the projection at first.
    projection_shown: bool,
    description: String,
) -> impl IntoView {
    let visible = RwSignal::new(vec![true; lines.len()]);
    let fit_projection = RwSignal::new(projection_shown);
    let hover: RwSignal<Option<(f64, f64, Vec<HoverValue>)>> = RwSignal::new(None);
    let notice: RwSignal<Option<String>> = RwSignal::new(None);
    let frame: StoredValue<Option<PlotFrame>> = StoredValue::new(None);
    let resized = crate::listen::window_resize_counter();
    let canvas: NodeRef<html::Canvas> = NodeRef::new();
    let lines = Arc::new(lines);
    let levels = Arc::new(levels);

    let plot = {
        let (lines, levels, title) = (lines.clone(), levels.clone(), title.clone());
        move || LinePlot {
            title: title.clone(),
            x_label: x_label.to_string(),
            lines: lines
                .iter()
                .zip(visible.get_untracked())
                .filter(|(_, v)| *v)
                .map(|(l, _)| l.clone())
                .collect(),
            levels: levels.to_vec(),
            fit_projection: fit_projection.get_untracked(),
        }
    };
    {
        let plot = plot.clone();
        Effect::new(move |_| {
            resized.track();
            visible.track();
            fit_projection.track();
            let Some(element) = canvas.get() else { return };
            let p = plot();
            paint_canvas(&element, HEIGHT, |painter, width| {
                let f = p.draw(painter, width, HEIGHT);
                let _ = element.set_attribute("data-x0", &f.x0.to_string());
                let _ = element.set_attribute("data-x1", &f.x1.to_string());
                let _ = element.set_attribute("data-y-max", &f.y_max.to_string());
                let _ = element.set_attribute(
                    "data-plot",
                    &format!("{},{},{},{}", f.left, f.top, f.width, f.height),
                );
                frame.set_value(Some(f));
            });
        });
    }

    let on_move = {
        let lines = lines.clone();
        move |ev: ev::PointerEvent| {
            let Some(f) = frame.get_value() else { return };
            let (px, py) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
            if px < f.left || px > f.left + f.width {
                hover.set(None);
                return;
            }
            let x = f.x_at(px);
            let shown = visible.get_untracked();
            let values: Vec<HoverValue> = lines
                .iter()
                .zip(shown)
                .filter(|(_, v)| *v)
                .filter_map(|(l, _)| {
                    let i = l.points.partition_point(|p| p.0 < x);
                    let candidates = [i.checked_sub(1), Some(i)];
                    let (px_, py_) = candidates
                        .into_iter()
                        .flatten()
                        .filter_map(|j| l.points.get(j))
                        .min_by(|a, b| (a.0 - x).abs().total_cmp(&(b.0 - x).abs()))?;
                    // Only values within a few pixels of the pointer.
                    ((f.px(*px_) - px).abs() <= 24.0).then(|| HoverValue {
                        label: l.label.clone(),
                        color: l.color,
                        x: *px_,
                        bytes: *py_ as u64,
                    })
                })
                .collect();
            if values.is_empty() {
                hover.set(None);
            } else {
                hover.set(Some((px, py, values)));
            }
        }
    };

    let export_svg = {
        let plot = plot.clone();
        let stem = file_stem.clone();
        move |_| {
            let (w, h) = SVG_SIZE;
            let mut svg = SvgWriter::new(w, h);
            plot().draw(&mut svg, w, h);
            notice.set(
                export::download_text(&format!("{stem}.svg"), "image/svg+xml", &svg.finish()).err(),
            );
        }
    };
    let export_png = {
        let stem = file_stem.clone();
        move |_| {
            if let Some(element) = canvas.get_untracked() {
                notice.set(export::download_canvas_png(&format!("{stem}.png"), &element).err());
            }
        }
    };
    let export_csv = {
        let stem = file_stem.clone();
        move |_| notice.set(export::download_text(&format!("{stem}.csv"), "text/csv", &csv).err())
    };

    let toggles = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            view! {
                <label class="series-toggle">
                    <input type="checkbox"
                        prop:checked=move || visible.get().get(i).copied().unwrap_or(false)
                        on:change=move |ev| visible.update(|v| if let Some(slot) = v.get_mut(i) { *slot = event_target_checked(&ev) })/>
                    <span class="legend-swatch line" style:border-color=l.color></span>
                    {l.label.clone()}
                </label>
            }
        })
        .collect_view();
    let has_trend = lines.iter().any(|l| l.trend.is_some());
    let has_spikes = lines.iter().any(|l| !l.spikes.is_empty());

    let tooltip = move || {
        let (px, py, values) = hover.get()?;
        let f = frame.get_value()?;
        let left = if px > f.left + f.width * 0.6 {
            px - 250.0
        } else {
            px + 14.0
        };
        let x = values.first().map(|v| v.x).unwrap_or(0.0);
        Some(view! {
            <div class="plot-crosshair" style:left=format!("{:.0}px", f.px(x)) style:top=format!("{:.0}px", f.top) style:height=format!("{:.0}px", f.height)></div>
            <div class="plot-tooltip" role="tooltip" style:left=format!("{left:.0}px") style:top=format!("{:.0}px", (py - 20.0).max(0.0))>
                <div class="tt-x" data-x=x.to_string()>{format!("{x_name} {}", if x_name == "step" { group_digits(x.round() as u64) } else { format!("{x:.3}") })}</div>
                {values.into_iter().map(|v| view! {
                    <div class="tt-row" data-series=v.label.clone()>
                        <span class="legend-swatch line" style:border-color=v.color></span>
                        <span class="tt-label">{v.label.clone()}</span>
                        <Bytes value=v.bytes/>
                    </div>
                }).collect_view()}
            </div>
        })
    };

    view! {
        <div class="plot-view">
            <div class="plot-toolbar" role="toolbar" aria-label=format!("{title}: controls")>
                <span class="plot-toggles" role="group" aria-label="Series shown">{toggles}</span>
                <span class="toolbar-gap"></span>
                {projection_toggle.then(|| view! {
                    <label class="series-toggle">
                        <input type="checkbox" class="fit-projection" prop:checked=move || fit_projection.get()
                            on:change=move |ev| fit_projection.set(event_target_checked(&ev))/>
                        "Show the projection to the limit"
                    </label>
                })}
                <button type="button" class="button small secondary" on:click=export_svg aria-label=format!("Export {title} as SVG")>"SVG"</button>
                <button type="button" class="button small secondary" on:click=export_png aria-label=format!("Export {title} as PNG")>"PNG"</button>
                <button type="button" class="button small secondary" on:click=export_csv aria-label=format!("Export {title} as CSV")>"CSV"</button>
            </div>
            {move || notice.get().map(|n| view! { <p class="error-message" role="alert">{format!("Export failed: {n}")}</p> })}
            <div class="plot-stage">
                <canvas node_ref=canvas class="plot-canvas" role="img" aria-label=description
                    on:pointermove=on_move on:pointerleave=move |_| hover.set(None)></canvas>
                {tooltip}
            </div>
            <p class="plot-key muted">
                "Solid: the values read. "
                {has_trend.then_some("Dashed: the trend (robust slope). ")}
                {projection_toggle.then_some("Dotted: the projection to the limit at that slope (an estimate). ")}
                {has_spikes.then_some("Red marks: sudden jumps. ")}
                "Hover for exact values."
            </p>
        </div>
    }
}
