//! The per-dimension breakdown of the selected row's shape: what each
//! dimension's rounding costs, and the layout model's fix.

use leptos::prelude::*;
use oomscope_layout::{dimension_breakdown, parse_shape, suggest_fix, Shape};

use crate::format::{group_digits, Bytes};
use crate::model::padding::Row;

/// Per-dimension costs of the selected row's shape, and its fix.
#[component]
pub fn Breakdown(row: Row, has_timeline: bool) -> impl IntoView {
    let array = match parse_shape(&row.shape) {
        Ok(Shape::Array(array)) => Some(array),
        _ => None,
    };
    let dims = array.as_ref().map(dimension_breakdown).unwrap_or_default();
    let fix = array.as_ref().and_then(suggest_fix);
    let rows = dims
        .iter()
        .map(|d| view! {
            <tr data-dimension=d.dimension.to_string()>
                <td class="num">{d.dimension}</td>
                <td class="num">{if d.minor_position == 0 { "most minor".to_string() } else { d.minor_position.to_string() }}</td>
                <td class="num">{group_digits(d.size)}</td>
                <td class="num">{if d.tile > 1 { group_digits(d.tile) } else { "—".to_string() }}</td>
                <td class="num">{group_digits(d.padded_size)}</td>
                <td class="num"><Bytes value=d.padding_bytes/></td>
            </tr>
        })
        .collect_view();
    let show_in_timeline = move |_| crate::navigate::scroll_to("modules");
    view! {
        <div class="padding-breakdown" aria-live="polite" data-key=row.key.clone()>
            <div class="pinned-head">
                <strong class="mono">{row.key.clone()}</strong>
                {(row.buffer.is_some() && has_timeline).then(|| view! {
                    <button type="button" class="button small secondary" on:click=show_in_timeline>"Show in the timeline"</button>
                })}
            </div>
            <p>
                {(row.shape != row.key && !row.shape.is_empty()).then(|| view! { <span class="mono">{row.shape.clone()}</span> " · " })}
                <Bytes value=row.unpadded/> " of data take " <Bytes value=row.padded/>
                {format!(" ({:.2}×): ", row.expansion)} <Bytes value=row.waste/> " of padding"
                {(row.count > 1).then(|| format!(" over {} buffers", group_digits(row.count)))} "."
            </p>
            {(!dims.is_empty()).then(|| view! {
                <table class="data dims">
                    <caption class="visually-hidden">"What each dimension's rounding costs, per buffer"</caption>
                    <thead>
                        <tr>
                            <th scope="col" class="num">"Dimension"</th>
                            <th scope="col" class="num">"Minor position"</th>
                            <th scope="col" class="num">"Size"</th>
                            <th scope="col" class="num">"Rounded to a multiple of"</th>
                            <th scope="col" class="num">"Padded size"</th>
                            <th scope="col" class="num">"This rounding costs (per buffer)"</th>
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                </table>
            })}
            {(array.is_none() && !row.shape.is_empty()).then(|| view! { <p class="muted">"Not an array shape (a tuple or unreadable): no per-dimension breakdown."</p> })}
            {row.shape.is_empty().then(|| view! { <p class="muted">"Group by buffer or shape for a per-dimension breakdown."</p> })}
            {fix.map(|f| view! {
                <p class="estimate">"Suggestion: " {f.text} " → " <span class="mono">{f.new_shape}</span></p>
            })}
        </div>
    }
}
