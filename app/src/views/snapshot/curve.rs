//! The Active Memory curve of one device: allocated bytes over trace events
//! (the analyzer's downsampled curve, peak kept exactly), the reserved line
//! on top, the OOM and the peak marked, `external_annotations` phases under
//! it; hover reads the bytes at a point; the curve exports as CSV.

use leptos::prelude::*;
use oomscope_report::units::format_bytes;
use oomscope_report::{CurvePoint, MemorySnapshot};
use wasm_bindgen::JsCast;

use super::geometry::{allocated_area, point_at, reserved_line, Scale, HEIGHT, WIDTH};
use crate::export;
use crate::format::{base_name, group_digits};

/// Height of the phase band under the curve (viewBox units).
const PHASE_ROW: f64 = 14.0;
/// Phases drawn at most (their names are in the report).
const PHASES_DRAWN: usize = 60;

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

#[component]
pub fn ActiveMemoryCurve(snapshot: MemorySnapshot) -> impl IntoView {
    let points = snapshot.active_memory_curve.clone();
    let oom_event = snapshot.oom.as_ref().map(|o| o.event_index);
    let scale = Scale::of(&points, oom_event);
    let area = allocated_area(&points, scale);
    let reserved = reserved_line(&points, scale);
    let peak = snapshot
        .peak_event_index
        .map(|e| (scale.x(e), scale.y(snapshot.peak_allocated_bytes)));
    let oom_x = oom_event.map(|e| scale.x(e));
    let phases: Vec<_> = snapshot.phases.iter().take(PHASES_DRAWN).cloned().collect();
    let height = HEIGHT
        + if phases.is_empty() {
            0.0
        } else {
            PHASE_ROW + 2.0
        };
    let description = format!(
        "Active memory over {} trace events: peak {} allocated, reserved up to {}",
        group_digits(snapshot.trace_events),
        format_bytes(snapshot.peak_allocated_bytes),
        format_bytes(scale.top_bytes)
    );

    let hover = RwSignal::new(None::<u64>);
    let points = StoredValue::new(points);
    let on_move = move |ev: web_sys::MouseEvent| {
        let Some(target) = ev
            .current_target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        else {
            return;
        };
        let rect = target.get_bounding_client_rect();
        if rect.width() > 0.0 {
            hover.set(Some(scale.event_at(
                (f64::from(ev.client_x()) - rect.left()) / rect.width() * WIDTH,
            )));
        }
    };
    let readout = move || match hover.get() {
        None => "Hover the curve for the bytes at a point.".to_string(),
        Some(event) => points.with_value(|p| match point_at(p, event) {
            Some(p) => format!(
                "Event {}: {} allocated, {} reserved",
                group_digits(event),
                format_bytes(p.allocated_bytes),
                format_bytes(p.reserved_bytes)
            ),
            None => format!("Event {}", group_digits(event)),
        }),
    };
    let hover_line = move || {
        hover.get().map(|e| {
            let x = format!("{:.1}", scale.x(e));
            view! { <line x1=x.clone() x2=x y1="0" y2=HEIGHT.to_string() stroke="#1f2328" stroke-width="1" pointer-events="none"></line> }
        })
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

    view! {
        <figure class="snapshot-curve" data-testid="snapshot-curve">
            <figcaption>
                "Active memory over the trace (allocated, filled; reserved, the line above)"
                <button type="button" class="export" on:click=export_csv>"Export CSV"</button>
            </figcaption>
            <svg
                viewBox=format!("0 0 {WIDTH} {height}")
                preserveAspectRatio="none"
                role="img"
                aria-label=description
                on:mousemove=on_move
                on:mouseleave=move |_| hover.set(None)
            >
                <path class="allocated" d=area fill="#0969da" fill-opacity="0.55"><title>"Allocated"</title></path>
                <path class="reserved" d=reserved fill="none" stroke="#bf8700" stroke-width="2" vector-effect="non-scaling-stroke"><title>"Reserved"</title></path>
                {peak.map(|(x, y)| view! {
                    <circle class="peak" cx=format!("{x:.1}") cy=format!("{y:.1}") r="4" fill="#1a7f37">
                        <title>{format!("Peak {} at event {}", format_bytes(snapshot.peak_allocated_bytes), snapshot.peak_event_index.unwrap_or(0))}</title>
                    </circle>
                })}
                {oom_x.map(|x| view! {
                    <line class="oom" x1=format!("{x:.1}") x2=format!("{x:.1}") y1="0" y2=HEIGHT.to_string() stroke="#cf222e" stroke-width="2" stroke-dasharray="6 4" vector-effect="non-scaling-stroke">
                        <title>{format!("Out of memory at event {}", oom_event.unwrap_or(0))}</title>
                    </line>
                })}
                {phases.into_iter().enumerate().map(|(i, ph)| {
                    let x0 = scale.x(ph.start_event_index);
                    let x1 = scale.x(ph.end_event_index.unwrap_or(scale.last_event));
                    view! {
                        <rect class="phase" x=format!("{x0:.1}") y=(HEIGHT + 2.0).to_string() width=format!("{:.1}", (x1 - x0).max(1.0)) height=PHASE_ROW.to_string()
                            fill=if i % 2 == 0 { "#8c959f" } else { "#afb8c1" }>
                            <title>{ph.name}</title>
                        </rect>
                    }
                }).collect_view()}
                {hover_line}
            </svg>
            <p class="curve-readout" aria-live="polite">{readout}</p>
            {move || error.get().map(|e| view! { <p class="error">{format!("Export failed: {e}")}</p> })}
        </figure>
    }
}
