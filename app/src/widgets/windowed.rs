//! Long tables render only the rows in view. A windowed table lives in a
//! scroll box of fixed height whose rows all have the same height
//! ([`ROW_HEIGHT`], set by `table.windowed` in the style sheet); spacer
//! rows above and below stand for the rows not rendered, so the scroll bar
//! is that of the whole table.

use std::ops::Range;

/// Height of one row of a windowed table, in CSS pixels.
pub const ROW_HEIGHT: f64 = 30.0;
/// Rows rendered beyond each edge of the box, so that scrolling shows no
/// gap before the next frame.
const OVERSCAN: usize = 10;

/// The rows to render of `total`, for a box `height` pixels high scrolled
/// `scroll_top` pixels down (below a header `header` pixels high).
pub fn visible_rows(scroll_top: f64, height: f64, header: f64, total: usize) -> Range<usize> {
    let top = (scroll_top - header).max(0.0);
    let first = (top / ROW_HEIGHT).floor() as usize;
    let shown = (height / ROW_HEIGHT).ceil() as usize + 1;
    let start = first.saturating_sub(OVERSCAN).min(total);
    let end = (first + shown + OVERSCAN).min(total);
    start..end.max(start)
}

/// The scroll offset that centres row `row` in a box `height` pixels high.
pub fn centring_offset(row: usize, height: f64, header: f64) -> f64 {
    (header + (row as f64 + 0.5) * ROW_HEIGHT - height / 2.0).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_rows_in_view_and_a_margin() {
        // At the top: the rows in a 300 px box, plus the overscan below.
        assert_eq!(visible_rows(0.0, 300.0, 30.0, 10_000), 0..21);
        // Far down: rows around row 1000.
        let r = visible_rows(30.0 + 1000.0 * ROW_HEIGHT, 300.0, 30.0, 10_000);
        assert_eq!(r, 990..1021);
        // Never past the end, never an inverted range.
        assert_eq!(visible_rows(1e9, 300.0, 30.0, 50), 50..50);
        assert_eq!(visible_rows(0.0, 300.0, 30.0, 5), 0..5);
    }

    #[test]
    fn a_centred_row_is_in_the_window() {
        let offset = centring_offset(5000, 420.0, 30.0);
        assert!(visible_rows(offset, 420.0, 30.0, 10_000).contains(&5000));
        assert_eq!(centring_offset(0, 420.0, 30.0), 0.0);
    }
}
