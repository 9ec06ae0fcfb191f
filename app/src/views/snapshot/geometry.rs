//! The Active Memory curve's extent: the event range its x axis covers (an
//! OOM past the last allocation widens it) and its highest bytes. Pure
//! functions, tested without a browser.

use oomscope_report::CurvePoint;

/// The x and y extent of one curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// The last event index drawn (the right edge).
    pub last_event: u64,
    /// The highest allocated or reserved bytes.
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
    fn the_extent_is_the_last_event_and_the_highest_reserved() {
        let points = [p(0, 0, 100), p(5, 50, 100), p(10, 20, 200)];
        let scale = Scale::of(&points, None);
        assert_eq!(
            scale,
            Scale {
                last_event: 10,
                top_bytes: 200
            }
        );
        // An OOM past the last allocation widens the x axis.
        assert_eq!(Scale::of(&points, Some(20)).last_event, 20);
    }
}
