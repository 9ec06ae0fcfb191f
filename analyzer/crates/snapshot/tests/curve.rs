//! The downsampled Active Memory curve on every real snapshot of the corpus:
//! at most `CURVE_MAX_POINTS` points, in trace order, the peak kept exactly
//! (at the peak's own event), and the ends equal to the initial and final bytes.

use std::fs::File;
use std::path::PathBuf;

use oomscope_report::CURVE_MAX_POINTS;

fn corpus() -> PathBuf {
    oomscope_testdata::corpus().join("snapshots")
}

#[test]
fn every_corpus_curve_keeps_the_peak_and_the_ends() {
    let mut checked = 0;
    let mut downsampled = 0;
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !name.contains(".pickle") {
            continue;
        }
        let len = std::fs::metadata(&path).unwrap().len();
        let reports = oomscope_snapshot::analyze(
            &name,
            std::io::BufReader::new(File::open(&path).unwrap()),
            len,
        )
        .unwrap();
        for r in reports {
            let curve = &r.active_memory_curve;
            assert!(
                !curve.is_empty() && curve.len() <= CURVE_MAX_POINTS,
                "{name}: {} points",
                curve.len()
            );
            assert!(
                curve
                    .windows(2)
                    .all(|w| w[0].event_index <= w[1].event_index),
                "{name}: out of order"
            );
            let highest = curve.iter().map(|p| p.allocated_bytes).max().unwrap();
            assert_eq!(
                highest, r.peak_allocated_bytes,
                "{name} device {}: curve peak",
                r.device
            );
            assert_eq!(
                curve[0].allocated_bytes, r.initial_allocated_bytes,
                "{name}: first point"
            );
            assert_eq!(
                curve.last().unwrap().allocated_bytes,
                r.final_allocated_bytes,
                "{name}: last point"
            );
            if let Some(peak_event) = r
                .peak_event_index
                .filter(|_| r.peak_allocated_bytes != r.initial_allocated_bytes)
            {
                assert!(
                    curve.iter().any(|p| p.event_index == peak_event
                        && p.allocated_bytes == r.peak_allocated_bytes),
                    "{name}: no point at the peak event {peak_event}"
                );
            }
            // Reserved never counts below what was allocated at the end.
            assert!(
                curve.last().unwrap().reserved_bytes >= r.final_allocated_bytes,
                "{name}: reserved below allocated at the end"
            );
            if r.trace_events as usize > CURVE_MAX_POINTS {
                downsampled += 1;
            }
            checked += 1;
        }
    }
    println!("{checked} device curves checked, {downsampled} downsampled from longer traces");
    assert!(
        checked >= 65 && downsampled > 0,
        "{checked} curves, {downsampled} downsampled"
    );
}
