//! Geometry of the stacked memory-over-time chart: one closed SVG path per
//! category, stacked in PyTorch's order, in a fixed viewBox. Pure functions,
//! so the shapes are tested without a browser.

use oomscope_report::TimelinePoint;

pub const WIDTH: f64 = 1000.0;
pub const HEIGHT: f64 = 300.0;

/// `(min, max)` of the points' times, widened when they are all equal.
fn time_range(points: &[TimelinePoint]) -> (f64, f64) {
    let lo = points.iter().map(|p| p.time).min().unwrap_or(0) as f64;
    let hi = points.iter().map(|p| p.time).max().unwrap_or(0) as f64;
    if hi > lo {
        (lo, hi)
    } else {
        (lo, lo + 1.0)
    }
}

/// The x of `time` on a chart of `points`.
pub fn x_of(points: &[TimelinePoint], time: i64) -> f64 {
    x_in(time_range(points), time)
}

fn x_in((lo, hi): (f64, f64), time: i64) -> f64 {
    (time as f64 - lo) / (hi - lo) * WIDTH
}

pub fn y_of(bytes: f64, top: u64) -> f64 {
    HEIGHT - bytes / top.max(1) as f64 * HEIGHT
}

/// One path per band: band `i` lies between the sum of bands `0..i` and
/// `0..=i`. Without categories there is one band, the total. Values are
/// held until the next point (memory between events is constant).
pub fn stacked_paths(points: &[TimelinePoint], bands: usize, top: u64) -> Vec<String> {
    let value = |p: &TimelinePoint, band: usize| -> f64 {
        if p.by_category.is_empty() {
            p.bytes as f64
        } else {
            p.by_category.get(band).copied().unwrap_or(0) as f64
        }
    };
    let range = time_range(points);
    let xs: Vec<f64> = points.iter().map(|p| x_in(range, p.time)).collect();
    let mut below = vec![0.0f64; points.len()];
    let mut paths = Vec::with_capacity(bands);
    for band in 0..bands {
        let above: Vec<f64> = points
            .iter()
            .zip(&below)
            .map(|(p, b)| b + value(p, band))
            .collect();
        let mut d = String::new();
        // The top edge, left to right: hold each value until the next time.
        for (i, (x, y)) in xs.iter().zip(&above).enumerate() {
            let y = y_of(*y, top);
            if i == 0 {
                d.push_str(&format!("M{x:.1},{y:.1}"));
            } else {
                d.push_str(&format!("H{x:.1}V{y:.1}"));
            }
        }
        // The bottom edge (the bands below), right to left.
        for (x, y) in xs.iter().zip(&below).rev() {
            d.push_str(&format!("V{:.1}H{x:.1}", y_of(*y, top)));
        }
        d.push('Z');
        paths.push(d);
        below = above;
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(time: i64, cats: &[u64]) -> TimelinePoint {
        TimelinePoint {
            time,
            bytes: cats.iter().sum(),
            by_category: cats.to_vec(),
        }
    }

    #[test]
    fn bands_stack_and_the_peak_reaches_the_top() {
        let points = vec![p(0, &[10, 0]), p(10, &[10, 10])];
        let paths = stacked_paths(&points, 2, 20);
        assert_eq!(paths.len(), 2);
        // Band 0 is 10 of 20 throughout; band 1 rises to the top (y = 0) at the peak.
        assert_eq!(paths[0], "M0.0,150.0H1000.0V150.0V300.0H1000.0V300.0H0.0Z");
        assert_eq!(paths[1], "M0.0,150.0H1000.0V0.0V150.0H1000.0V150.0H0.0Z");
        assert!(paths.iter().all(|d| d.starts_with('M') && d.ends_with('Z')));
    }
}
