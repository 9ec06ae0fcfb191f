//! Drawing once for two targets: the [`Painter`] trait (rectangles, lines,
//! text) with a canvas implementation for the screen and an SVG writer for
//! exports, so that an export is what the user saw.

use std::fmt::Write;

use wasm_bindgen::JsValue;
use web_sys::CanvasRenderingContext2d;

pub const FONT_FAMILY: &str = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Center,
    Right,
}

impl Align {
    fn canvas(self) -> &'static str {
        match self {
            Align::Left => "left",
            Align::Center => "center",
            Align::Right => "right",
        }
    }
    fn svg(self) -> &'static str {
        match self {
            Align::Left => "start",
            Align::Center => "middle",
            Align::Right => "end",
        }
    }
}

/// A drawing surface in CSS pixels. Text is 12px, vertically centred on `y`.
pub trait Painter {
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<&str>);
    /// A polyline; `dash` empty for a solid line.
    fn line(&mut self, points: &[(f64, f64)], color: &str, width: f64, dash: &[f64]);
    fn text(&mut self, x: f64, y: f64, text: &str, color: &str, align: Align, bold: bool);
}

/// Paints on a 2D canvas context (already scaled to CSS pixels).
pub struct CanvasPainter<'a> {
    pub ctx: &'a CanvasRenderingContext2d,
}

impl Painter for CanvasPainter<'_> {
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<&str>) {
        self.ctx.set_fill_style_str(fill);
        self.ctx.fill_rect(x, y, w, h);
        if let Some(stroke) = stroke {
            self.ctx.set_stroke_style_str(stroke);
            self.ctx.set_line_width(1.0);
            self.ctx
                .stroke_rect(x + 0.5, y + 0.5, (w - 1.0).max(0.0), (h - 1.0).max(0.0));
        }
    }

    fn line(&mut self, points: &[(f64, f64)], color: &str, width: f64, dash: &[f64]) {
        let Some(((x, y), rest)) = points.split_first() else {
            return;
        };
        self.ctx.set_stroke_style_str(color);
        self.ctx.set_line_width(width);
        let pattern: js_sys::Array = dash.iter().map(|v| JsValue::from_f64(*v)).collect();
        let _ = self.ctx.set_line_dash(&pattern);
        self.ctx.begin_path();
        self.ctx.move_to(*x, *y);
        for (x, y) in rest {
            self.ctx.line_to(*x, *y);
        }
        self.ctx.stroke();
        let _ = self.ctx.set_line_dash(&js_sys::Array::new());
    }

    fn text(&mut self, x: f64, y: f64, text: &str, color: &str, align: Align, bold: bool) {
        self.ctx.set_font(&format!(
            "{}12px {FONT_FAMILY}",
            if bold { "600 " } else { "" }
        ));
        self.ctx.set_fill_style_str(color);
        self.ctx.set_text_align(align.canvas());
        self.ctx.set_text_baseline("middle");
        let _ = self.ctx.fill_text(text, x, y);
    }
}

/// Writes an SVG document.
pub struct SvgWriter {
    body: String,
    width: f64,
    height: f64,
}

impl SvgWriter {
    pub fn new(width: f64, height: f64) -> Self {
        SvgWriter {
            body: String::new(),
            width,
            height,
        }
    }

    /// Draws `inner`'s drawing moved by (`dx`, `dy`).
    pub fn group(&mut self, dx: f64, dy: f64, inner: SvgWriter) {
        let _ = writeln!(self.body, "<g transform=\"translate({dx:.1},{dy:.1})\">");
        self.body.push_str(&inner.body);
        self.body.push_str("</g>\n");
    }

    pub fn finish(self) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
             font-family=\"{FONT_FAMILY}\" font-size=\"12\">\n<rect width=\"{w}\" height=\"{h}\" fill=\"#ffffff\"/>\n{}</svg>\n",
            self.body,
            w = self.width,
            h = self.height,
        )
    }
}

impl Painter for SvgWriter {
    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<&str>) {
        let _ = write!(
            self.body,
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\""
        );
        if let Some(stroke) = stroke {
            let _ = write!(self.body, " stroke=\"{stroke}\" stroke-width=\"1\"");
        }
        self.body.push_str("/>\n");
    }

    fn line(&mut self, points: &[(f64, f64)], color: &str, width: f64, dash: &[f64]) {
        if points.is_empty() {
            return;
        }
        self.body.push_str("<polyline fill=\"none\" points=\"");
        for (x, y) in points {
            let _ = write!(self.body, "{x:.1},{y:.1} ");
        }
        let _ = write!(self.body, "\" stroke=\"{color}\" stroke-width=\"{width}\"");
        if !dash.is_empty() {
            let pattern: Vec<String> = dash.iter().map(|d| d.to_string()).collect();
            let _ = write!(self.body, " stroke-dasharray=\"{}\"", pattern.join(" "));
        }
        self.body.push_str("/>\n");
    }

    fn text(&mut self, x: f64, y: f64, text: &str, color: &str, align: Align, bold: bool) {
        let _ = writeln!(
            self.body,
            "<text x=\"{x:.1}\" y=\"{y:.1}\" fill=\"{color}\" text-anchor=\"{}\" dominant-baseline=\"middle\"{}>{}</text>",
            align.svg(),
            if bold { " font-weight=\"600\"" } else { "" },
            xml_escape(text)
        );
    }
}

pub fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn svg_escapes_text_and_closes() {
        let mut svg = SvgWriter::new(10.0, 20.0);
        svg.text(1.0, 2.0, "a<b & \"c\"", "#000", Align::Left, false);
        svg.rect(0.0, 0.0, 1.0, 1.0, "#fff", Some("#000"));
        let mut outer = SvgWriter::new(10.0, 30.0);
        outer.group(0.0, 10.0, svg);
        let doc = outer.finish();
        assert!(doc.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(doc.contains("<g transform=\"translate(0.0,10.0)\">"));
        assert!(doc.starts_with("<svg") && doc.trim_end().ends_with("</svg>"));
    }
}
