//! The Active Memory curve of one device: allocated bytes over trace events
//! (the analyzer's downsampled curve, peak kept exactly), the reserved line
//! on top, the OOM and the peak marked, drawn by the page's one line chart
//! (plotters: labelled axes, bytes up, trace events along); the
//! `external_annotations` phases listed under it; hover reads every line
//! drawn at a point (today's allocated and reserved, each replay); the
//! curve exports as CSV. The lines replayed without (on the page, carried
//! by a link, or the analyzer's own shown from the what-if table) are drawn
//! over it, dashed, each in its colour.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::whatif::ReplayedCurve;
use oomscope_report::{CurvePoint, MemorySnapshot};
use wasm_bindgen::JsCast;

use super::geometry::Scale;
use crate::draw::line_chart::{
    inline_svg, readings_view, Area, Chart, EventLine, Marker, Series, Stroke, PALETTE,
};
use crate::export;
use crate::format::{base_name, group_digits};

/// The chart's size in CSS pixels (it scales to the page's width).
const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 300.0;
/// Phases listed at most (their names are in the report).
const PHASES_LISTED: usize = 60;
pub const ALLOCATED: &str = "#6cb6ff";
pub const RESERVED: &str = "#9a6700";
pub const OOM: &str = "#cf222e";

fn csv_of(points: &[CurvePoint]) -> String {
    export::csv(
        &["event_index", "allocated_bytes", "reserved_bytes"],
        points.iter().map(|p| {
            vec![
                p.event_index.to_string(),
                p.allocated_bytes.to_string(),
                p.reserved_bytes.to_string(),
            ]
        }),
    )
}

/// The colour of the `i`th line replayed without (the palette less the
/// curve's own colours).
fn replay_color(i: usize) -> &'static str {
    let free: Vec<&'static str> = PALETTE
        .into_iter()
        .filter(|c| ![RESERVED, OOM].contains(c))
        .collect();
    free[i % free.len()]
}

/// The curve as a chart: allocated filled, reserved a line, the peak and
/// the OOM marked, and each replay dashed over them.
fn chart_of(snapshot: &MemorySnapshot, scale: Scale, replays: &[ReplayedCurve]) -> Chart {
    let points = &snapshot.active_memory_curve;
    let allocated: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.event_index as f64, p.allocated_bytes as f64))
        .collect();
    let reserved: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.event_index as f64, p.reserved_bytes as f64))
        .collect();
    Chart {
        x_label: "trace event (allocations and frees, in order)".into(),
        areas: vec![Area {
            label: "Allocated".into(),
            points: allocated,
            color: ALLOCATED,
            steps: true,
        }],
        series: std::iter::once(Series {
            label: "Reserved".into(),
            points: reserved,
            color: RESERVED,
            stroke: Stroke::Solid,
            steps: true,
        })
        .chain(replays.iter().enumerate().map(|(i, c)| {
            Series {
                label: format!("without {}", c.what_if.frame.as_deref().unwrap_or_default()),
                points: c
                    .positions
                    .iter()
                    .zip(&c.heap_bytes)
                    .map(|(x, y)| (*x as f64, *y as f64))
                    .collect(),
                color: replay_color(i),
                stroke: Stroke::Dashed,
                steps: true,
            }
        }))
        .collect(),
        events: snapshot
            .oom
            .iter()
            .map(|o| EventLine {
                x: o.event_index as f64,
                label: format!("out of memory at event {}", group_digits(o.event_index)),
                color: OOM,
            })
            .collect(),
        marker: snapshot.peak_event_index.map(|e| Marker {
            x: e as f64,
            label: format!(
                "peak {} at event {}",
                format_bytes(snapshot.peak_allocated_bytes),
                group_digits(e)
            ),
        }),
        x_range: Some((0.0, scale.last_event as f64)),
        ..Chart::default()
    }
}

#[component]
pub fn ActiveMemoryCurve(
    snapshot: MemorySnapshot,
    replays: Signal<Vec<ReplayedCurve>>,
) -> impl IntoView {
    let oom_event = snapshot.oom.as_ref().map(|o| o.event_index);
    let scale = Scale::of(&snapshot.active_memory_curve, oom_event);
    // Drawn again when a line is replayed or shown; the frame (pixels to
    // events) stays: a replay never peaks above today's curve.
    let chart = {
        let snapshot = snapshot.clone();
        Memo::new(move |_| replays.with(|r| chart_of(&snapshot, scale, r)))
    };
    let drawn = Memo::new(move |_| {
        chart.with(|c| match inline_svg(c, WIDTH, HEIGHT) {
            Ok((svg, frame)) => (svg, Some(frame)),
            Err(_) => (String::new(), None),
        })
    });
    let frame = drawn.with_untracked(|d| d.1);
    let svg = move || drawn.with(|d| d.0.clone());
    let phases: Vec<_> = snapshot
        .phases
        .iter()
        .take(PHASES_LISTED)
        .cloned()
        .collect();
    let description = format!(
        "Active memory over {} trace events: peak {} allocated, reserved up to {}",
        group_digits(snapshot.trace_events),
        format_bytes(snapshot.peak_allocated_bytes),
        format_bytes(scale.top_bytes)
    );

    let hover = RwSignal::new(None::<u64>);
    let points = StoredValue::new(snapshot.active_memory_curve.clone());
    let on_move = move |ev: web_sys::MouseEvent| {
        let (Some(frame), Some(target)) = (
            frame,
            ev.current_target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok()),
        ) else {
            return;
        };
        let rect = target.get_bounding_client_rect();
        if rect.width() > 0.0 {
            let x = (f64::from(ev.client_x()) - rect.left()) / rect.width() * WIDTH;
            let event = frame.x_at(x).round().clamp(0.0, scale.last_event as f64);
            hover.set(Some(event as u64));
        }
    };
    // Today's allocated and reserved bytes and each line drawn over them,
    // all read at the hovered event.
    let readout = move || match hover.get() {
        None => {
            view! { <span>"Hover the curve for the bytes of every line drawn at a point."</span> }
                .into_any()
        }
        Some(event) => {
            let readings = chart.with(|c| c.readings_at(event as f64));
            view! { <span>{format!("Event {}: ", group_digits(event))}</span> {readings_view(readings)} }.into_any()
        }
    };
    let error = RwSignal::new(None::<String>);
    let file = format!(
        "{}.cuda{}.active-memory.csv",
        export::file_stem(base_name(&snapshot.input)),
        snapshot.device
    );
    let export_csv = move |_| {
        error.set(points.with_value(|p| export::download_text(&file, "text/csv", &csv_of(p)).err()))
    };
    let has_oom = oom_event.is_some();
    let phase_list = (!phases.is_empty()).then(|| {
        let total = snapshot.phases.len();
        view! {
            <details class="snapshot-phases" data-testid="snapshot-phases">
                <summary>{format!("Phases the program recorded ({total}, from the snapshot's external annotations)")}</summary>
                <ol>
                    {phases.into_iter().map(|ph| view! {
                        <li><span class="mono">{ph.name}</span>
                            {format!(": events {}–{}", group_digits(ph.start_event_index), ph.end_event_index.map_or("end".into(), group_digits))}
                        </li>
                    }).collect_view()}
                </ol>
            </details>
        }
    });

    view! {
        <figure class="snapshot-curve chart-figure" data-testid="snapshot-curve">
            <figcaption class="chart-head">
                <span>"Active memory over the trace"</span>
                <button type="button" class="button small secondary" on:click=export_csv>"Export CSV"</button>
            </figcaption>
            <div class="chart-svg" role="img" aria-label=description
                data-x0=frame.map(|f| f.x0.to_string()) data-x1=frame.map(|f| f.x1.to_string())
                data-plot=frame.map(|f| format!("{},{},{},{}", f.left, f.top, f.width, f.height))
                on:mousemove=on_move on:mouseleave=move |_| hover.set(None)
                inner_html=svg></div>
            <div class="legend">
                <span class="legend-item"><span class="legend-swatch fill" style:background-color=ALLOCATED></span>"allocated"</span>
                <span class="legend-item"><span class="legend-swatch" style:border-color=RESERVED></span>"reserved by PyTorch"</span>
                <span class="legend-item"><span class="legend-swatch peak-mark"></span>"peak"</span>
                {has_oom.then(|| view! { <span class="legend-item"><span class="legend-swatch dashed" style:border-color=OOM></span>"out of memory"</span> })}
                {move || replays.get().into_iter().enumerate().map(|(i, c)| {
                    let frame = c.what_if.frame.clone().unwrap_or_default();
                    view! {
                        <span class="legend-item" data-testid="snapshot-curve-replay" data-frame=frame.clone()
                            data-peak-bytes=c.what_if.predicted_peak_bytes.to_string() data-points=c.heap_bytes.len().to_string()>
                            <span class="legend-swatch dashed" style:border-color=replay_color(i)></span>
                            {format!("without {frame} (peak {})", format_bytes(c.what_if.predicted_peak_bytes))}
                        </span>
                    }
                }).collect_view()}
            </div>
            <p class="curve-readout" aria-live="polite" data-testid="chart-readout" data-x=move || hover.get().map(|x| x.to_string())>{readout}</p>
            {phase_list}
            {move || error.get().map(|e| view! { <p class="error">{format!("Export failed: {e}")}</p> })}
        </figure>
    }
}
