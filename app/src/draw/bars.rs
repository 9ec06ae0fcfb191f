//! Horizontal padded-vs-unpadded bars, drawn through [`Painter`] so that the
//! screen (canvas) and the SVG export share one drawing: each bar is the
//! buffer's (or group's) unpadded bytes followed by the bytes padding adds,
//! so the whole bar is the padded size; the label on the right gives the
//! padding and the expansion factor.

use oomscope_report::units::format_bytes;

use crate::draw::painter::{Align, Painter};

pub const UNPADDED: &str = "#0969da";
pub const PADDING: &str = "#e16f24";
const AXIS: &str = "#57606a";
const GRID: &str = "#e4e7eb";
const TEXT: &str = "#1f2328";
const ROW: f64 = 24.0;
const TITLE: f64 = 34.0;
const FOOT: f64 = 44.0;
const LABEL_WIDTH: f64 = 250.0;
const VALUE_WIDTH: f64 = 200.0;
/// Characters of a label drawn (the rest is elided; the table has it all).
const LABEL_CHARS: usize = 38;

#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub label: String,
    pub padded: u64,
    pub unpadded: u64,
}

/// Height of a chart of `bars` bars.
pub fn height(bars: usize) -> f64 {
    TITLE + ROW * bars.max(1) as f64 + FOOT
}

fn elide(text: &str) -> String {
    if text.chars().count() <= LABEL_CHARS {
        text.to_string()
    } else {
        let head: String = text.chars().take(LABEL_CHARS - 1).collect();
        format!("{head}…")
    }
}

/// Draws the chart with its top edge at `top`; returns its height.
pub fn draw(p: &mut dyn Painter, top: f64, width: f64, title: &str, bars: &[Bar]) -> f64 {
    let h = height(bars.len());
    p.rect(0.0, top, width, h, "#ffffff", None);
    p.text(12.0, top + 16.0, title, TEXT, Align::Left, true);
    let left = LABEL_WIDTH;
    let plot_w = (width - LABEL_WIDTH - VALUE_WIDTH).max(40.0);
    let max = bars
        .iter()
        .map(|b| b.padded.max(b.unpadded))
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let scale = |bytes: u64| bytes as f64 / max * plot_w;
    let bottom = top + TITLE + ROW * bars.len().max(1) as f64;
    for i in 0..=4 {
        let x = (left + plot_w * f64::from(i) / 4.0).round() + 0.5;
        p.line(&[(x, top + TITLE - 4.0), (x, bottom)], GRID, 1.0, &[]);
        p.text(
            x,
            bottom + 10.0,
            &format_bytes((max * f64::from(i) / 4.0) as u64),
            AXIS,
            Align::Center,
            false,
        );
    }
    if bars.is_empty() {
        p.text(
            left,
            top + TITLE + ROW / 2.0,
            "no padding",
            AXIS,
            Align::Left,
            false,
        );
    }
    for (i, bar) in bars.iter().enumerate() {
        let y = top + TITLE + ROW * i as f64;
        let mid = y + ROW / 2.0;
        p.text(
            left - 8.0,
            mid,
            &elide(&bar.label),
            TEXT,
            Align::Right,
            false,
        );
        let unpadded = scale(bar.unpadded.min(bar.padded));
        let padded = scale(bar.padded);
        p.rect(left, y + 5.0, unpadded.max(1.0), ROW - 10.0, UNPADDED, None);
        if padded > unpadded {
            p.rect(
                left + unpadded,
                y + 5.0,
                (padded - unpadded).max(1.0),
                ROW - 10.0,
                PADDING,
                None,
            );
        }
        let waste = bar.padded.saturating_sub(bar.unpadded);
        let expansion = if bar.unpadded > 0 {
            bar.padded as f64 / bar.unpadded as f64
        } else {
            1.0
        };
        p.text(
            left + padded + 6.0,
            mid,
            &format!("+{} · {expansion:.2}×", format_bytes(waste)),
            TEXT,
            Align::Left,
            false,
        );
    }
    // Legend.
    let ly = bottom + 30.0;
    p.rect(left, ly - 5.0, 10.0, 10.0, UNPADDED, None);
    p.text(
        left + 14.0,
        ly,
        "unpadded (the data)",
        AXIS,
        Align::Left,
        false,
    );
    p.rect(left + 160.0, ly - 5.0, 10.0, 10.0, PADDING, None);
    p.text(
        left + 174.0,
        ly,
        "padding (layout rounding)",
        AXIS,
        Align::Left,
        false,
    );
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::draw::painter::SvgWriter;

    #[test]
    fn bars_show_padding_on_top_of_the_data() {
        let bars = vec![Bar {
            label: "s32[100000,10]".into(),
            padded: 51_200_000,
            unpadded: 4_000_000,
        }];
        let mut svg = SvgWriter::new(900.0, height(1));
        let h = draw(&mut svg, 0.0, 900.0, "t", &bars);
        assert_eq!(h, height(1));
        let doc = svg.finish();
        assert!(doc.contains(PADDING) && doc.contains(UNPADDED));
        assert!(doc.contains("12.80×"), "{doc}");
        assert_eq!(elide(&"x".repeat(100)).chars().count(), LABEL_CHARS);
    }
}
