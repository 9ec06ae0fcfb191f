//! Geometry of the Active Memory curve: the allocated bytes as a stepped
//! area, the reserved bytes as a stepped line above it, on event indices.
//! Pure functions, so the shapes are tested without a browser.

use oomscope_report::CurvePoint;

pub const WIDTH: f64 = 1000.0;
pub const HEIGHT: f64 = 240.0;

/// The x and y scales of one curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// The last event index drawn (the right edge).
    pub last_event: u64,
    /// The bytes at the top edge.
    pub top_bytes: u64,
}

impl Scale {
    pub fn of(points: &[CurvePoint], extra_event: Option<u64>) -> Self {
        let last_event = points
            .iter()
            .map(|p| p.event_index)
            .chain(extra_event)
            .max()
            .unwrap_or(0)
            .max(1);
        let top_bytes = points
            .iter()
            .map(|p| p.allocated_bytes.max(p.reserved_bytes))
            .max()
            .unwrap_or(0)
            .max(1);
        Scale {
            last_event,
            top_bytes,
        }
    }

    pub fn x(&self, event: u64) -> f64 {
        event as f64 / self.last_event as f64 * WIDTH
    }

    pub fn y(&self, bytes: u64) -> f64 {
        HEIGHT - bytes as f64 / self.top_bytes as f64 * HEIGHT
    }

    /// The event index under x (viewBox units).
    pub fn event_at(&self, x: f64) -> u64 {
        (x / WIDTH * self.last_event as f64)
            .round()
            .clamp(0.0, self.last_event as f64) as u64
    }
}

/// A stepped path through `(event, bytes)`: each value holds until the next
/// event. With `close`, the area down to zero.
fn stepped(
    points: &[CurvePoint],
    scale: Scale,
    bytes: impl Fn(&CurvePoint) -> u64,
    close: bool,
) -> String {
    let mut d = String::new();
    for (i, p) in points.iter().enumerate() {
        let (x, y) = (scale.x(p.event_index), scale.y(bytes(p)));
        if i == 0 {
            d.push_str(&format!("M{x:.1},{y:.1}"));
        } else {
            d.push_str(&format!("H{x:.1}V{y:.1}"));
        }
    }
    if let (true, Some(first)) = (close, points.first()) {
        d.push_str(&format!(
            "H{WIDTH:.1}V{HEIGHT:.1}H{:.1}Z",
            scale.x(first.event_index)
        ));
    } else if !points.is_empty() {
        d.push_str(&format!("H{WIDTH:.1}"));
    }
    d
}

pub fn allocated_area(points: &[CurvePoint], scale: Scale) -> String {
    stepped(points, scale, |p| p.allocated_bytes, true)
}

pub fn reserved_line(points: &[CurvePoint], scale: Scale) -> String {
    stepped(points, scale, |p| p.reserved_bytes, false)
}

/// The point in force at `event`: the last one at or before it.
pub fn point_at(points: &[CurvePoint], event: u64) -> Option<&CurvePoint> {
    let after = points.partition_point(|p| p.event_index <= event);
    points.get(after.checked_sub(1)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(event_index: u64, allocated_bytes: u64, reserved_bytes: u64) -> CurvePoint {
        CurvePoint {
            event_index,
            allocated_bytes,
            reserved_bytes,
        }
    }

    #[test]
    fn steps_hold_until_the_next_event_and_the_top_is_the_highest_reserved() {
        let points = [p(0, 0, 100), p(5, 50, 100), p(10, 20, 200)];
        let scale = Scale::of(&points, None);
        assert_eq!(
            scale,
            Scale {
                last_event: 10,
                top_bytes: 200
            }
        );
        assert_eq!(
            allocated_area(&points, scale),
            "M0.0,240.0H500.0V180.0H1000.0V216.0H1000.0V240.0H0.0Z"
        );
        assert_eq!(
            reserved_line(&points, scale),
            "M0.0,120.0H500.0V120.0H1000.0V0.0H1000.0"
        );
        assert_eq!(point_at(&points, 7), Some(&points[1]));
        assert_eq!(point_at(&points, 10), Some(&points[2]));
        assert_eq!(scale.event_at(500.0), 5);
        // An OOM past the last allocation widens the x axis.
        assert_eq!(Scale::of(&points, Some(20)).last_event, 20);
    }
}
