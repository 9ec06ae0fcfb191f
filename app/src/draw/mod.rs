//! Shared drawing code, not views: the [`painter::Painter`] the timeline
//! draws with once for the canvas and the SVG export, and the plotters
//! charts (the padding bars, and the line chart of the heap curve and of
//! memory over steps, snapshots and run-time timelines), and where a label
//! goes so that it hides no line ([`labels`]). Views draw with these; they
//! never call each other's painters.

pub mod bars;
pub mod labels;
pub mod line_chart;
pub mod painter;
