//! Which program positions the timeline shows, and how the user moves
//! them: zoom around a point, pan by a share of the view, drag, fit, and
//! bring a buffer into view. Pure arithmetic on positions (no browser),
//! unit-tested natively.

/// Fewest positions the view may show.
pub const MIN_SPAN: f64 = 4.0;

/// The visible positions `[x0, x1)` of a program of `total` positions.
/// Always within the program and at least [`MIN_SPAN`] wide (or the whole
/// program when it is shorter).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    pub x0: f64,
    pub x1: f64,
    pub total: f64,
}

impl Viewport {
    /// The whole program.
    pub fn full(total: f64) -> Viewport {
        Viewport {
            x0: 0.0,
            x1: total,
            total,
        }
    }

    pub fn span(&self) -> f64 {
        self.x1 - self.x0
    }

    pub fn centre(&self) -> f64 {
        (self.x0 + self.x1) / 2.0
    }

    /// `[x0, x1)` made valid: the span clamped to `[MIN_SPAN, total]`, then
    /// moved inside the program.
    pub fn showing(&self, x0: f64, x1: f64) -> Viewport {
        let span = (x1 - x0).clamp(MIN_SPAN.min(self.total), self.total);
        let x0 = x0.clamp(0.0, self.total - span);
        Viewport {
            x0,
            x1: x0 + span,
            total: self.total,
        }
    }

    /// Zoomed by `factor` (< 1 zooms in) keeping `anchor` where it is.
    pub fn zoomed(&self, factor: f64, anchor: f64) -> Viewport {
        self.showing(
            anchor - (anchor - self.x0) * factor,
            anchor + (self.x1 - anchor) * factor,
        )
    }

    /// Moved by `fraction` of the visible span (negative: left).
    pub fn panned(&self, fraction: f64) -> Viewport {
        let d = self.span() * fraction;
        self.showing(self.x0 + d, self.x1 + d)
    }

    /// The view a drag that started on `self` reaches after the pointer
    /// moved `dx_px` CSS pixels over a plot `plot_width` pixels wide: the
    /// content follows the pointer.
    pub fn dragged(&self, dx_px: f64, plot_width: f64) -> Viewport {
        let shift = -dx_px * self.span() / plot_width.max(1.0);
        self.showing(self.x0 + shift, self.x1 + shift)
    }

    /// The view that shows positions `[start, end]`: unchanged when they
    /// are already visible, else centred on them with a margin of a
    /// quarter of their length (at least [`MIN_SPAN`]) on each side.
    pub fn revealing(&self, start: f64, end: f64) -> Viewport {
        if start >= self.x0 && end <= self.x1 {
            return *self;
        }
        let margin = ((end - start) * 0.25).max(MIN_SPAN);
        self.showing(start - margin, end + margin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zoom_keeps_the_anchor_in_place() {
        let full = Viewport::full(1000.0);
        let z = full.zoomed(0.5, 100.0);
        assert_eq!((z.x0, z.x1), (50.0, 550.0));
        // The anchor's share of the view is unchanged.
        assert!(((100.0 - z.x0) / z.span() - 0.1).abs() < 1e-12);
        // Zooming out past the program fits it.
        assert_eq!(z.zoomed(10.0, 300.0), full);
    }

    #[test]
    fn zoom_stops_at_the_smallest_span() {
        let v = Viewport::full(1000.0).zoomed(1e-9, 500.0);
        assert_eq!(v.span(), MIN_SPAN);
        assert!(v.x0 <= 500.0 && v.x1 >= 500.0);
        // A program shorter than the smallest span is shown whole.
        assert_eq!(Viewport::full(2.0).zoomed(0.1, 1.0), Viewport::full(2.0));
    }

    #[test]
    fn pan_and_drag_stay_inside_the_program() {
        let v = Viewport::full(1000.0).showing(100.0, 200.0);
        assert_eq!(v.panned(0.5), v.showing(150.0, 250.0));
        assert_eq!(v.panned(-5.0), v.showing(0.0, 100.0));
        assert_eq!(v.panned(50.0), v.showing(900.0, 1000.0));
        // Dragging the content 100 px right over a 1000 px plot shows 10
        // positions earlier.
        assert_eq!(v.dragged(100.0, 1000.0), v.showing(90.0, 190.0));
        assert_eq!(v.panned(0.3).span(), v.span());
    }

    #[test]
    fn revealing_moves_only_when_needed() {
        let v = Viewport::full(1000.0).showing(100.0, 200.0);
        assert_eq!(v.revealing(120.0, 180.0), v);
        let r = v.revealing(400.0, 480.0);
        assert_eq!((r.x0, r.x1), (380.0, 500.0));
        // A one-position buffer gets the smallest margin.
        let one = v.revealing(700.0, 701.0);
        assert_eq!((one.x0, one.x1), (696.0, 705.0));
    }
}
