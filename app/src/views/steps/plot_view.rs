//! A [`Plot`] on a canvas, drawn by the shared plotters line chart, with
//! legend toggles, the projection toggle, hover values and the exports (SVG
//! from the same drawing, PNG from the canvas, CSV of the values).

use std::sync::Arc;

use leptos::ev;
use leptos::html;
use leptos::prelude::*;

use super::model::{Plot, PlotLine};
use crate::draw::line_chart::{self, PlotFrame, RefLine};
use crate::export;
use crate::format::{group_digits, Bytes};

/// Chart height in CSS pixels.
const HEIGHT: f64 = 360.0;
/// Size of the SVG export.
const SVG_SIZE: (f64, f64) = (1100.0, 420.0);

/// One value under the pointer: series, x, bytes.
#[derive(Debug, Clone, PartialEq)]
struct HoverValue {
    label: String,
    color: &'static str,
    x: f64,
    bytes: u64,
}

/// A plot on a canvas with legend toggles, hover values and export.
#[component]
pub fn PlotView(
    lines: Vec<PlotLine>,
    levels: Vec<RefLine>,
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
        move || Plot {
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
            let Ok(f) = line_chart::draw_on_canvas(&element, Some(HEIGHT), &plot().chart()) else {
                return;
            };
            let _ = element.set_attribute("data-x0", &f.x0.to_string());
            let _ = element.set_attribute("data-x1", &f.x1.to_string());
            let _ = element.set_attribute("data-y-max", &f.y_max.to_string());
            let _ = element.set_attribute(
                "data-plot",
                &format!("{},{},{},{}", f.left, f.top, f.width, f.height),
            );
            frame.set_value(Some(f));
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
            let saved = line_chart::svg(&plot().chart(), w, h).and_then(|svg| {
                export::download_text(&format!("{stem}.svg"), "image/svg+xml", &svg)
            });
            notice.set(saved.err());
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
