//! Shared drawing code, not views: the [`painter::Painter`] that draws once
//! for the canvas and the SVG export, the padding bars, the byte-over-x
//! line plot (memory over steps) and the heap line chart. Views draw with
//! these; they never call each other's painters.

pub mod bars;
pub mod line_chart;
pub mod line_plot;
pub mod painter;
