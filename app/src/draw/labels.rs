//! Where a label goes so that it hides no line: the first of a chart's
//! candidate places whose text box touches none of the lines drawn (a heap
//! curve near its limit must stay readable under the limit's label). Pure
//! geometry in CSS pixels, shared by the timeline and the plotters charts.

/// A text's box: `[x0, x1] × [y0, y1]`, y down.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextBox {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
}

impl TextBox {
    /// The box of `chars` characters of 12px text at `(x, y)` (y its
    /// middle), `x` its left edge, or its right edge when `from_right`.
    pub fn of(chars: usize, x: f64, y: f64, from_right: bool, bold: bool) -> Self {
        let width = chars as f64 * if bold { 7.2 } else { 6.6 };
        let (x0, x1) = if from_right {
            (x - width, x)
        } else {
            (x, x + width)
        };
        TextBox {
            x0: x0 - 2.0,
            x1: x1 + 2.0,
            y0: y - 7.0,
            y1: y + 7.0,
        }
    }
}

/// Whether `line` (a polyline) passes through `b`.
pub fn touches(line: &[(f64, f64)], b: TextBox) -> bool {
    let inside = |&(x, y): &(f64, f64)| x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1;
    line.iter().any(inside)
        || line.windows(2).any(|w| {
            let ((ax, ay), (bx, by)) = (w[0], w[1]);
            ax.max(bx) >= b.x0 && ax.min(bx) <= b.x1 && ay.max(by) >= b.y0 && ay.min(by) <= b.y1
        })
}

/// The index of the first candidate that touches none of `lines`, else 0.
pub fn first_clear(candidates: &[TextBox], lines: &[&[(f64, f64)]]) -> usize {
    candidates
        .iter()
        .position(|b| !lines.iter().any(|l| touches(l, *b)))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_moves_off_a_line_that_runs_through_it() {
        // A heap held 6 px above its limit (y = 100) at the right.
        let heap = [(0.0, 180.0), (300.0, 180.0), (300.0, 94.0), (600.0, 94.0)];
        let above = TextBox::of(20, 596.0, 91.0, true, true);
        let below = TextBox::of(20, 596.0, 110.0, true, true);
        assert!(touches(&heap, above));
        assert!(!touches(&heap, below));
        assert_eq!(first_clear(&[above, below], &[&heap[..]]), 1);
        // A vertical step through the box counts too.
        let step = [(500.0, 150.0), (500.0, 50.0)];
        assert!(touches(&step, below));
        assert_eq!(first_clear(&[above, below], &[&heap[..], &step[..]]), 0);
    }
}
