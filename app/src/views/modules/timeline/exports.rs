//! The timeline saved as files: the chart as SVG (the same drawing as the
//! screen, every band a rectangle) and PNG (the canvas), the buffers live
//! at the peak as CSV.

use leptos::prelude::*;
use oomscope_report::ModuleReport;

use super::index::{category_name, TimelineIndex};
use super::render::{self, Emphasis};
use super::{TimelineCtx, MIN_WIDTH};
use crate::draw::painter::{Align, Painter, SvgWriter};
use crate::export;

const CSV_HEADER: [&str; 13] = [
    "name",
    "shape",
    "size_bytes",
    "unpadded_bytes",
    "padding_bytes",
    "category",
    "start",
    "end",
    "offset_bytes",
    "op_name",
    "opcode",
    "source",
    "flag",
];

/// Space above the chart in the SVG for its title.
const TITLE_HEIGHT: f64 = 28.0;

/// Saves the chart as it is on screen (range, colouring, emphasis) as SVG,
/// with a title naming the module.
pub fn save_svg(ctx: &TimelineCtx) -> Result<(), String> {
    let s = ctx.signals;
    let frame = ctx.frame(s.width.get_untracked().max(MIN_WIDTH));
    let search = s.search.get_untracked();
    let (mask, _) = ctx.emphasis(&search);
    let mut body = SvgWriter::new(frame.width, frame.height);
    render::paint_bands(
        &ctx.index,
        &frame,
        s.colour_by.get_untracked(),
        &Emphasis { mask },
        &mut body,
    );
    render::paint_whole_program_labels(&ctx.module, &ctx.index, &frame, &mut body);
    render::paint_overlays(&ctx.module, &frame, ctx.limit, &mut body);
    let legend = super::legend_entries(&ctx.index, s.colour_by.get_untracked());
    let legend_rows = legend_layout(&legend, frame.width);
    let legend_height = legend_rows
        .last()
        .map_or(0.0, |(_, y, _, _)| y + LEGEND_ROW);
    let mut svg = SvgWriter::new(frame.width, TITLE_HEIGHT + frame.height + legend_height);
    svg.text(
        12.0,
        TITLE_HEIGHT / 2.0,
        &format!("Buffer lifetimes of {}", ctx.module.display_name()),
        render::AXIS,
        Align::Left,
        true,
    );
    svg.group(0.0, TITLE_HEIGHT, body);
    let top = TITLE_HEIGHT + frame.height;
    for (x, y, colour, label) in legend_rows {
        svg.rect(x, top + y + 4.0, 10.0, 10.0, &colour, None);
        svg.text(
            x + 14.0,
            top + y + 9.0,
            &label,
            render::AXIS,
            Align::Left,
            false,
        );
    }
    export::download_text(
        &format!("{}.timeline.svg", ctx.stem()),
        "image/svg+xml",
        &svg.finish(),
    )
}

/// Height of a legend row in the SVG.
const LEGEND_ROW: f64 = 18.0;

/// Places legend entries left to right, wrapping at `width`: (x, y,
/// colour, label) with y from the legend's top.
fn legend_layout(entries: &[(String, String)], width: f64) -> Vec<(f64, f64, String, String)> {
    let mut placed = Vec::with_capacity(entries.len() + 3);
    let (mut x, mut y) = (render::MARGIN_LEFT, 0.0);
    let lines = [
        (render::HEAP.to_string(), "heap".to_string()),
        (
            render::UNPADDED.to_string(),
            "heap, unpadded (dashed)".to_string(),
        ),
        (render::LIMIT.to_string(), "limit".to_string()),
    ];
    for (colour, label) in entries.iter().cloned().chain(lines) {
        // About 7 px per character at 12 px.
        let w = 24.0 + 7.0 * label.chars().count() as f64;
        if x + w > width && x > render::MARGIN_LEFT {
            x = render::MARGIN_LEFT;
            y += LEGEND_ROW;
        }
        placed.push((x, y, colour, label));
        x += w;
    }
    placed
}

pub fn save_png(ctx: &TimelineCtx) -> Result<(), String> {
    let element = ctx
        .canvas
        .get_untracked()
        .ok_or("the chart is not on the page")?;
    export::download_canvas_png(&format!("{}.timeline.png", ctx.stem()), &element)
}

pub fn save_csv(ctx: &TimelineCtx) -> Result<(), String> {
    let rows = ctx
        .index
        .peak_live
        .iter()
        .map(|&i| csv_row(&ctx.module, &ctx.index, i));
    let text = export::csv(&CSV_HEADER, rows);
    export::download_text(
        &format!("{}.peak-buffers.csv", ctx.stem()),
        "text/csv",
        &text,
    )
}

fn csv_row(module: &ModuleReport, index: &TimelineIndex, buffer: u32) -> Vec<String> {
    let b = &module.buffers[buffer as usize];
    vec![
        b.name.clone(),
        b.shape.clone(),
        b.size_bytes.to_string(),
        b.unpadded_bytes.to_string(),
        b.size_bytes.saturating_sub(b.unpadded_bytes).to_string(),
        category_name(b.category).to_string(),
        b.start.to_string(),
        b.end.to_string(),
        index.band_of[buffer as usize]
            .map(|i| index.bands[i as usize].y0)
            .unwrap_or(0)
            .to_string(),
        b.op_name.clone(),
        b.opcode.clone(),
        b.source.clone(),
        index.flags[buffer as usize]
            .map(|f| f.label().to_string())
            .unwrap_or_default(),
    ]
}
