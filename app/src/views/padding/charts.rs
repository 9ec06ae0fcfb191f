//! The two bar charts of the padding view (the most wasteful buffers; the
//! most wasteful groups), on canvases that redraw on resize, and their SVG
//! and PNG exports. The drawing is [`crate::draw::bars`] (plotters), shared
//! by screen and export.

use leptos::html;
use leptos::prelude::*;

use crate::draw::bars::{self, Bar};
use crate::export;
use crate::listen::window_resize_counter;
use crate::model::padding::Grouping;

/// Width of the SVG export.
const SVG_WIDTH: f64 = 1100.0;

/// The charts' data: the buffers' bars (fixed) and the groups' (follow the
/// table's grouping).
#[derive(Clone)]
pub struct ChartData {
    pub buffer_bars: Vec<Bar>,
    pub group_bars: Memo<(Grouping, Vec<Bar>)>,
}

pub fn buffer_title(n: usize) -> String {
    format!("Padding by buffer (largest {n})")
}

pub fn group_title(g: Grouping, n: usize) -> String {
    format!("Padding by {} (largest {n})", g.label())
}

#[component]
pub fn PaddingCharts(data: ChartData, buffer_canvas: NodeRef<html::Canvas>) -> impl IntoView {
    let group_canvas: NodeRef<html::Canvas> = NodeRef::new();
    let ChartData {
        buffer_bars,
        group_bars,
    } = data;
    let resized = window_resize_counter();
    {
        let bars = buffer_bars.clone();
        Effect::new(move |_| {
            resized.track();
            if let Some(c) = buffer_canvas.get() {
                // A canvas without a 2D context draws nothing; the table
                // has every number.
                let _ = bars::draw_on_canvas(&c, &buffer_title(bars.len()), &bars);
            }
        });
    }
    Effect::new(move |_| {
        resized.track();
        let (g, bars) = group_bars.get();
        if let Some(c) = group_canvas.get() {
            let _ = bars::draw_on_canvas(&c, &group_title(g, bars.len()), &bars);
        }
    });
    let n = buffer_bars.len();
    // A shared report may carry no padded buffer: no empty chart then.
    (n > 0).then(|| view! {
        <div class="padding-charts">
            <canvas node_ref=buffer_canvas class="padding-canvas" data-chart="buffers" role="img"
                style:height=format!("{}px", bars::height(n))
                aria-label=format!("{}: padded against unpadded bytes per buffer.", buffer_title(n))></canvas>
            <canvas node_ref=group_canvas class="padding-canvas" data-chart="groups" role="img"
                style:height=move || format!("{}px", bars::height(group_bars.with(|(_, b)| b.len())))
                aria-label=move || { let (g, b) = group_bars.get(); format!("{}: padded against unpadded bytes.", group_title(g, b.len())) }></canvas>
        </div>
    })
}

/// Both charts as one SVG file.
pub fn save_svg(data: &ChartData, stem: &str) -> Result<(), String> {
    let bars = &data.buffer_bars;
    let (g, group) = data.group_bars.get_untracked();
    let svg = bars::svg(
        SVG_WIDTH,
        &[
            (buffer_title(bars.len()), bars.as_slice()),
            (group_title(g, group.len()), group.as_slice()),
        ],
    )?;
    export::download_text(&format!("{stem}.svg"), "image/svg+xml", &svg)
}
