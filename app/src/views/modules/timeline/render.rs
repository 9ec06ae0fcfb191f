//! Drawing the timeline: the geometry of a frame, the bands rasterised
//! into an RGBA image (one pass over the visible bands, each at least one
//! device pixel, so sub-pixel buffers merge into per-pixel fills and the
//! cost is bounded by the band count plus the plot area), and the overlays
//! (axes, envelopes, limit, peak) through [`Painter`], which the canvas and
//! the SVG export both implement, so both show the same drawing.

use oomscope_report::units::format_bytes;
use oomscope_report::ModuleReport;

use super::index::{Band, TimelineIndex};
use crate::draw::labels::{first_clear, TextBox};
use crate::draw::painter::{Align, Painter};

pub const MARGIN_LEFT: f64 = 78.0;
pub const MARGIN_RIGHT: f64 = 18.0;
pub const MARGIN_TOP: f64 = 22.0;
pub const MARGIN_BOTTOM: f64 = 42.0;

pub const AXIS: &str = "#57606a";
pub const GRID: [u8; 3] = [0xee, 0xf1, 0xf4];
pub const HEAP: &str = "#1f2328";
pub const UNPADDED: &str = "#8250df";
pub const LIMIT: &str = "#cf222e";
pub const PEAK: &str = "#bc4c00";

/// Category colours, in [`super::index::CATEGORIES`] order.
pub const CATEGORY_COLORS: [[u8; 3]; 6] = [
    [0x4c, 0x78, 0xa8], // parameter
    [0xf5, 0x85, 0x18], // output
    [0x54, 0xa2, 0x4b], // temporary
    [0xb2, 0x79, 0xa2], // constant
    [0xe4, 0x57, 0x56], // thread-local
    [0x9d, 0x75, 0x5d], // small
];

/// Colours of the largest ops; the rest share the last one.
pub const OP_COLORS: [[u8; 3]; 12] = [
    [0x4e, 0x79, 0xa7],
    [0xf2, 0x8e, 0x2b],
    [0xe1, 0x57, 0x59],
    [0x76, 0xb7, 0xb2],
    [0x59, 0xa1, 0x4f],
    [0xed, 0xc9, 0x48],
    [0xb0, 0x7a, 0xa1],
    [0xff, 0x9d, 0xa7],
    [0x9c, 0x75, 0x5f],
    [0x3b, 0x8b, 0xc2],
    [0x86, 0xbc, 0x86],
    [0xba, 0xb0, 0xac],
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColourBy {
    Category,
    Op,
}

pub fn band_color(band: &Band, by: ColourBy) -> [u8; 3] {
    match by {
        ColourBy::Category => {
            CATEGORY_COLORS[usize::from(band.category).min(CATEGORY_COLORS.len() - 1)]
        }
        ColourBy::Op => OP_COLORS[usize::from(band.op).min(OP_COLORS.len() - 1)],
    }
}

pub fn hex([r, g, b]: [u8; 3]) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Where things are on a frame: CSS pixels, visible positions `[x0, x1)`
/// and bytes `[0, y_max]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    pub width: f64,
    pub height: f64,
    pub x0: f64,
    pub x1: f64,
    pub y_max: f64,
}

impl Frame {
    pub fn plot_left(&self) -> f64 {
        MARGIN_LEFT
    }
    pub fn plot_top(&self) -> f64 {
        MARGIN_TOP
    }
    pub fn plot_width(&self) -> f64 {
        (self.width - MARGIN_LEFT - MARGIN_RIGHT).max(1.0)
    }
    pub fn plot_height(&self) -> f64 {
        (self.height - MARGIN_TOP - MARGIN_BOTTOM).max(1.0)
    }
    pub fn px(&self, position: f64) -> f64 {
        MARGIN_LEFT + (position - self.x0) / (self.x1 - self.x0) * self.plot_width()
    }
    pub fn py(&self, bytes: f64) -> f64 {
        MARGIN_TOP + self.plot_height() - bytes / self.y_max * self.plot_height()
    }
    pub fn position_at(&self, px: f64) -> f64 {
        self.x0 + (px - MARGIN_LEFT) / self.plot_width() * (self.x1 - self.x0)
    }
    pub fn bytes_at(&self, py: f64) -> f64 {
        (MARGIN_TOP + self.plot_height() - py) / self.plot_height() * self.y_max
    }
    /// Positions per CSS pixel.
    pub fn positions_per_px(&self) -> f64 {
        (self.x1 - self.x0) / self.plot_width()
    }
    pub fn bytes_per_px(&self) -> f64 {
        self.y_max / self.plot_height()
    }
}

/// The y-axis maximum: a tidy value above the data (and the limit).
pub fn y_axis_max(top: u64) -> f64 {
    let (step, count) = byte_ticks(top as f64 * 1.04);
    step * count as f64
}

/// A tidy tick step in bytes (1, 2, 5 × a power of ten × a power of 1024)
/// and how many steps reach `value`.
pub fn byte_ticks(value: f64) -> (f64, u32) {
    let value = value.max(1.0);
    let mut unit = 1.0;
    while value / unit >= 1024.0 {
        unit *= 1024.0;
    }
    let rough = value / unit / 5.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude);
    let step = (step * unit).max(1.0);
    (step, (value / step).ceil().max(1.0) as u32)
}

/// A tidy tick step for positions showing about `target` ticks over `span`.
pub fn position_step(span: f64, target: f64) -> f64 {
    let rough = (span / target).max(1.0);
    let magnitude = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude)
}

/// What to fade: `Some(mask)` keeps buffers whose mask entry is true in
/// full colour and fades the others.
pub struct Emphasis<'a> {
    pub mask: Option<&'a [bool]>,
}

/// A raster of the bands: positions `[x0, x1)` across `width` pixels,
/// bytes `[0, y_max]` up `height` pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RasterArea {
    pub x0: f64,
    pub x1: f64,
    pub y_max: f64,
    pub width: usize,
    pub height: usize,
}

/// Rasterises the bands into `pixels` (RGBA, `width × height`). Returns how
/// many bands were drawn.
pub fn rasterize(
    index: &TimelineIndex,
    area: &RasterArea,
    by: ColourBy,
    emphasis: &Emphasis<'_>,
    pixels: &mut Vec<u8>,
) -> usize {
    let (w, h) = (area.width.max(1), area.height.max(1));
    pixels.clear();
    pixels.resize(w * h * 4, 255);
    let sx = w as f64 / (area.x1 - area.x0);
    let sy = h as f64 / area.y_max;
    let col = |position: f64| ((position - area.x0) * sx).floor().clamp(0.0, w as f64) as usize;
    let row = |bytes: f64| (h as f64 - bytes * sy).floor().clamp(0.0, h as f64) as usize;

    let (step, count) = byte_ticks(area.y_max / 1.0001);
    for i in 1..=count {
        let r = row(step * f64::from(i));
        if r < h {
            fill(pixels, w, 0, w, r, r + 1, GRID);
        }
    }

    let mut drawn = 0usize;
    index.for_each_visible(area.x0, area.x1, |band| {
        let c0 = col(band.start as f64);
        let c1 = col(band.end as f64).max(c0 + 1).min(w);
        let r0 = row(band.y1 as f64);
        let r1 = row(band.y0 as f64).max(r0 + 1).min(h);
        if c0 >= w || r0 >= h {
            return;
        }
        let mut color = band_color(band, by);
        let faded = emphasis
            .mask
            .is_some_and(|m| !m.get(band.buffer as usize).copied().unwrap_or(false));
        if faded {
            color = fade(color);
        }
        fill(pixels, w, c0, c1, r0, r1, color);
        if c1 - c0 >= 4 && r1 - r0 >= 4 {
            let edge = color.map(|c| (u16::from(c) * 3 / 4) as u8);
            fill(pixels, w, c0, c1, r0, r0 + 1, edge);
            fill(pixels, w, c0, c0 + 1, r0, r1, edge);
        }
        drawn += 1;
    });
    drawn
}

/// A colour three quarters of the way to white.
fn fade(color: [u8; 3]) -> [u8; 3] {
    color.map(|c| c / 4 + 191)
}

fn fill(
    pixels: &mut [u8],
    w: usize,
    c0: usize,
    c1: usize,
    r0: usize,
    r1: usize,
    [r, g, b]: [u8; 3],
) {
    for y in r0..r1 {
        let line = &mut pixels[(y * w + c0) * 4..(y * w + c1) * 4];
        for px in line.chunks_exact_mut(4) {
            px[0] = r;
            px[1] = g;
            px[2] = b;
            px[3] = 255;
        }
    }
}

/// The bands as vector rectangles (the SVG export): bands at least a pixel
/// wide and tall one by one, the thinner ones merged per pixel column into
/// runs of covered pixels.
pub fn paint_bands(
    index: &TimelineIndex,
    frame: &Frame,
    by: ColourBy,
    emphasis: &Emphasis<'_>,
    painter: &mut dyn Painter,
) {
    let (left, top, pw, ph) = (
        frame.plot_left(),
        frame.plot_top(),
        frame.plot_width(),
        frame.plot_height(),
    );
    let w = pw.ceil() as usize;
    let h = ph.ceil() as usize;
    let mut thin = vec![false; w * h];
    index.for_each_visible(frame.x0, frame.x1, |band| {
        let x0 = frame.px(band.start as f64).max(left);
        let x1 = frame.px(band.end as f64).min(left + pw);
        let y0 = frame.py(band.y1 as f64).max(top);
        let y1 = frame.py(band.y0 as f64).min(top + ph);
        if x1 - x0 >= 1.0 && y1 - y0 >= 1.0 {
            let faded = emphasis
                .mask
                .is_some_and(|m| !m.get(band.buffer as usize).copied().unwrap_or(false));
            let color = band_color(band, by);
            let color = if faded { fade(color) } else { color };
            let stroke = (x1 - x0 >= 4.0 && y1 - y0 >= 4.0)
                .then(|| hex(color.map(|c| (u16::from(c) * 3 / 4) as u8)));
            painter.rect(x0, y0, x1 - x0, y1 - y0, &hex(color), stroke.as_deref());
        } else {
            let c = ((x0 - left).floor().max(0.0) as usize).min(w - 1);
            let r0 = ((y0 - top).floor().max(0.0) as usize).min(h - 1);
            let r1 = ((y1 - top).ceil() as usize).clamp(r0 + 1, h);
            for r in r0..r1 {
                thin[r * w + c] = true;
            }
        }
    });
    for c in 0..w {
        let mut r = 0;
        while r < h {
            if thin[r * w + c] {
                let start = r;
                while r < h && thin[r * w + c] {
                    r += 1;
                }
                painter.rect(
                    left + c as f64,
                    top + start as f64,
                    1.0,
                    (r - start) as f64,
                    "#8c959f",
                    None,
                );
            } else {
                r += 1;
            }
        }
    }
}

/// Width of 12px text, estimated (bold is a little wider).
fn text_width(text: &str, bold: bool) -> f64 {
    text.chars().count() as f64 * if bold { 7.2 } else { 6.6 }
}

/// Where the limit's label goes: the first of right above, right below,
/// left above, left below the limit line at `y` whose text touches none of
/// `lines` (the heap envelopes), else right above. Returns the text's
/// anchor and alignment.
pub fn limit_label_place(
    frame: &Frame,
    y: f64,
    label: &str,
    lines: &[&[(f64, f64)]],
) -> (f64, f64, Align) {
    let chars = label.chars().count();
    let (left, right) = (frame.plot_left(), frame.plot_left() + frame.plot_width());
    let bottom = frame.plot_top() + frame.plot_height();
    let places: Vec<(f64, f64, Align)> = [
        (right - 4.0, y - 9.0, Align::Right),
        (right - 4.0, y + 10.0, Align::Right),
        (left + 4.0, y - 9.0, Align::Left),
        (left + 4.0, y + 10.0, Align::Left),
    ]
    .into_iter()
    .filter(|&(_, ty, _)| ty - 7.0 >= 0.0 && ty + 7.0 <= bottom)
    .collect();
    let boxes: Vec<TextBox> = places
        .iter()
        .map(|&(x, ty, align)| TextBox::of(chars, x, ty, align == Align::Right, true))
        .collect();
    places
        .get(first_clear(&boxes, lines))
        .copied()
        .unwrap_or((right - 4.0, y - 9.0, Align::Right))
}

/// Text on the whole-program bands: each band tall enough for a line says
/// what it is (name, shape, size, its pair or its donation); each group
/// (parameters, outputs, constants) tall enough says its total at the
/// right.
pub fn paint_whole_program_labels(
    module: &ModuleReport,
    index: &TimelineIndex,
    frame: &Frame,
    painter: &mut dyn Painter,
) {
    const LINE: f64 = 14.0;
    let (left, pw) = (frame.plot_left(), frame.plot_width());
    let top = frame.plot_top();
    let bottom = top + frame.plot_height();
    let visible = |y0: f64, y1: f64| y0 >= top - 0.5 && y1 <= bottom + 0.5;
    let mut groups: Vec<(oomscope_report::BufferCategory, u64, u64, u64, usize)> = Vec::new(); // category, lo, hi, bytes, count
    let first = index.whole.first;
    for (i, b) in module.buffers.iter().enumerate().skip(first) {
        let Some(band) = index.band_of.get(i).copied().flatten() else {
            continue;
        };
        let band = index.bands[band as usize];
        match groups.last_mut() {
            Some(g) if g.0 == b.category => {
                g.2 = band.y1;
                g.3 = g.3.saturating_add(b.size_bytes);
                g.4 += 1;
            }
            _ => groups.push((b.category, band.y0, band.y1, b.size_bytes, 1)),
        }
        let (y0, y1) = (frame.py(band.y1 as f64), frame.py(band.y0 as f64));
        if y1 - y0 < LINE || !visible(y0, y1) {
            continue;
        }
        let mut text = format!("{} · {}", b.name, format_bytes(b.size_bytes));
        if !b.shape.is_empty() {
            text = format!("{} · {} · {}", b.name, b.shape, format_bytes(b.size_bytes));
        }
        if let (Some(n), Some(p)) = (
            index.pair_number.get(i).copied().flatten(),
            index.partner.get(i).copied().flatten(),
        ) {
            let other = &module.buffers[p as usize];
            text.push_str(&format!(
                " · pair {n} with {} {}",
                super::index::category_name(other.category),
                other.name
            ));
        } else if index.donated(i as u32) {
            text.push_str(" · donated: the output reuses it");
        }
        let room = ((pw * 0.62 - 8.0) / 6.6).max(4.0) as usize;
        if text.chars().count() > room {
            text = text
                .chars()
                .take(room.saturating_sub(1))
                .collect::<String>()
                + "…";
        }
        let color = match b.category {
            oomscope_report::BufferCategory::Output | oomscope_report::BufferCategory::Small => {
                HEAP
            }
            _ => "#ffffff",
        };
        painter.text(
            left + 6.0,
            (y0 + y1) / 2.0,
            &text,
            color,
            Align::Left,
            false,
        );
    }
    for (category, lo, hi, bytes, count) in groups {
        let (y0, y1) = (frame.py(hi as f64), frame.py(lo as f64));
        if y1 - y0 < LINE || !visible(y0, y1) {
            continue;
        }
        let noun = match category {
            oomscope_report::BufferCategory::Parameter => "parameters",
            oomscope_report::BufferCategory::Output => "outputs",
            oomscope_report::BufferCategory::Constant => "constants",
            _ => "other",
        };
        let text = format!("{noun}: {count}, {}", format_bytes(bytes));
        let x = left + pw - 6.0;
        painter.rect(
            x - text_width(&text, true) - 4.0,
            (y0 + y1) / 2.0 - 8.0,
            text_width(&text, true) + 8.0,
            16.0,
            "#ffffff",
            Some(AXIS),
        );
        painter.text(x, (y0 + y1) / 2.0, &text, HEAP, Align::Right, true);
    }
}

/// Axes, grid labels, the heap envelopes, the limit and the peak.
pub fn paint_overlays(
    module: &ModuleReport,
    frame: &Frame,
    limit: Option<u64>,
    painter: &mut dyn Painter,
) {
    let (left, top, pw, ph) = (
        frame.plot_left(),
        frame.plot_top(),
        frame.plot_width(),
        frame.plot_height(),
    );
    let bottom = top + ph;

    // Y axis labels.
    let (step, count) = byte_ticks(frame.y_max / 1.0001);
    for i in 0..=count {
        let bytes = step * f64::from(i);
        if bytes > frame.y_max * 1.0001 {
            break;
        }
        let y = frame.py(bytes);
        painter.text(
            left - 8.0,
            y,
            &format_bytes(bytes as u64),
            AXIS,
            Align::Right,
            false,
        );
    }
    // X axis ticks.
    let span = frame.x1 - frame.x0;
    let step = position_step(span, (pw / 90.0).max(2.0));
    let mut tick = (frame.x0 / step).ceil() * step;
    while tick <= frame.x1 {
        let x = frame.px(tick);
        painter.line(&[(x, bottom), (x, bottom + 4.0)], AXIS, 1.0, &[]);
        painter.text(
            x,
            bottom + 14.0,
            &format!("{}", tick as u64),
            AXIS,
            Align::Center,
            false,
        );
        tick += step;
    }
    painter.text(
        left + pw / 2.0,
        bottom + 32.0,
        "program order (position)",
        AXIS,
        Align::Center,
        false,
    );
    painter.line(
        &[(left, top), (left, bottom), (left + pw, bottom)],
        AXIS,
        1.0,
        &[],
    );

    // Envelopes.
    let heap = envelope(&module.heap_bytes, &module.heap_positions, frame);
    let unpadded = envelope(&module.unpadded_heap_bytes, &module.heap_positions, frame);
    if module.unpadded_heap_bytes != module.heap_bytes {
        painter.line(&unpadded, UNPADDED, 1.25, &[4.0, 3.0]);
    }
    painter.line(&heap, HEAP, 1.5, &[]);

    if let Some(limit) = limit {
        let y = frame.py(limit as f64);
        if y >= top - 0.5 {
            painter.line(&[(left, y), (left + pw, y)], LIMIT, 1.5, &[6.0, 4.0]);
            let label = format!("HBM limit {}", format_bytes(limit));
            let (x, ty, align) =
                limit_label_place(frame, y, &label, &[heap.as_slice(), unpadded.as_slice()]);
            // On a white ground: below the limit it may lie over a band.
            let b = TextBox::of(label.chars().count(), x, ty, align == Align::Right, true);
            painter.rect(b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0, "#ffffff", None);
            painter.text(x, ty, &label, LIMIT, align, true);
        }
    }
    let peak = module.peak_position as f64 + 0.5;
    if peak >= frame.x0 && peak <= frame.x1 {
        let x = frame.px(peak);
        painter.line(&[(x, top), (x, bottom)], PEAK, 1.25, &[2.0, 2.0]);
        let label = format!(
            "peak {} at {}",
            format_bytes(module.peak_bytes),
            module.peak_position
        );
        let right_half = x > left + pw / 2.0;
        painter.text(
            if right_half { x - 5.0 } else { x + 5.0 },
            top - 10.0,
            &label,
            PEAK,
            if right_half {
                Align::Right
            } else {
                Align::Left
            },
            true,
        );
    }
}

/// A step line of per-position values over the visible range; when there
/// are more positions than pixels, each pixel column keeps its maximum.
pub fn envelope(values: &[u64], positions: &[u64], frame: &Frame) -> Vec<(f64, f64)> {
    let at = |i: usize| -> f64 { positions.get(i).map_or(i as f64, |p| *p as f64) };
    let n = values.len();
    if n == 0 {
        return Vec::new();
    }
    let first = if positions.is_empty() {
        (frame.x0.floor().max(0.0) as usize).min(n - 1)
    } else {
        positions
            .partition_point(|p| (*p as f64) <= frame.x0)
            .saturating_sub(1)
    };
    let mut out: Vec<(f64, f64)> = Vec::new();
    let columns = frame.plot_width().ceil().max(1.0);
    let per_px = frame.positions_per_px();
    let mut i = first;
    if per_px <= 0.5 || n < 2 {
        while i < n && at(i) <= frame.x1 {
            let x0 = frame.px(at(i).max(frame.x0));
            let next = if i + 1 < n { at(i + 1) } else { at(i) + 1.0 };
            let x1 = frame.px(next.min(frame.x1));
            let y = frame.py(values[i] as f64);
            out.push((x0, y));
            out.push((x1, y));
            i += 1;
        }
        return out;
    }
    let mut column = -1.0f64;
    let mut column_max = 0u64;
    while i < n && at(i) <= frame.x1 {
        let c = ((frame.px(at(i).max(frame.x0)) - MARGIN_LEFT).floor()).clamp(0.0, columns - 1.0);
        if c != column {
            if column >= 0.0 {
                out.push((MARGIN_LEFT + column + 0.5, frame.py(column_max as f64)));
            }
            column = c;
            column_max = values[i];
        } else {
            column_max = column_max.max(values[i]);
        }
        i += 1;
    }
    if column >= 0.0 {
        out.push((MARGIN_LEFT + column + 0.5, frame.py(column_max as f64)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_ticks_are_tidy_and_cover_the_value() {
        let (step, count) = byte_ticks(6.6 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(step, 2.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(count, 4);
        let (step, count) = byte_ticks(900.0);
        assert_eq!((step, count), (200.0, 5));
        assert!(y_axis_max(17_000_000_000) >= 17_000_000_000.0);
    }

    #[test]
    fn the_limit_label_goes_below_a_heap_held_just_above_the_limit() {
        let frame = Frame {
            width: 700.0,
            height: 460.0,
            x0: 0.0,
            x1: 10.0,
            y_max: 20.0,
        };
        let limit = frame.py(15.75);
        let label = "HBM limit 15.75 GiB";
        // The heap ends at 16.06, a few pixels above the limit, at the right.
        let high = [
            (frame.px(0.0), frame.py(16.06)),
            (frame.px(10.0), frame.py(16.06)),
        ];
        let (_, y, align) = limit_label_place(&frame, limit, label, &[&high[..]]);
        assert!(y > limit && align == Align::Right, "{y} vs {limit}");
        // Far below, the label stays above its line.
        let low = [
            (frame.px(0.0), frame.py(5.0)),
            (frame.px(10.0), frame.py(5.0)),
        ];
        let (_, y, _) = limit_label_place(&frame, limit, label, &[&low[..]]);
        assert!(y < limit);
    }

    #[test]
    fn envelope_keeps_the_column_maximum() {
        let values: Vec<u64> = (0..10_000)
            .map(|i| if i == 5_123 { 99 } else { 1 })
            .collect();
        let frame = Frame {
            width: 100.0 + MARGIN_LEFT + MARGIN_RIGHT,
            height: 200.0,
            x0: 0.0,
            x1: 10_000.0,
            y_max: 100.0,
        };
        let line = envelope(&values, &[], &frame);
        assert!(line.len() <= 101, "{}", line.len());
        let top = frame.py(99.0);
        assert!(line.iter().any(|p| p.1 == top));
    }
}
