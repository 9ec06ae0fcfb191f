//! Decodes and analyses one snapshot file, then prints the throughput, the
//! size of the decoded columns and the process's peak resident memory
//! (Linux `VmHWM`), for the benchmark figures of issue 16:
//!
//! `cargo run --release -p oomscope-snapshot --example snapshot_memory -- FILE`

use std::fs::File;
use std::io::BufReader;
use std::time::Instant;

fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: snapshot_memory FILE");
        std::process::exit(2);
    };
    let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let before = peak_rss_bytes().unwrap_or(0);
    let start = Instant::now();
    let reader = BufReader::new(File::open(&path).expect("open"));
    let snap = match oomscope_snapshot::read_snapshot(&path, reader, len) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let decoded = start.elapsed();
    let decode_peak = peak_rss_bytes().unwrap_or(0).saturating_sub(before);
    let reports = oomscope_snapshot::analyze_snapshot(&path, &snap);
    let total = start.elapsed();
    let mb = len as f64 / (1 << 20) as f64;
    let compact = snap.heap_bytes() as f64 / (1 << 20) as f64;
    let peak = peak_rss_bytes().unwrap_or(0).saturating_sub(before) as f64 / (1 << 20) as f64;
    println!(
        "file {mb:.1} MiB, {} trace entries, {} devices",
        snap.events.len(),
        reports.len()
    );
    println!(
        "decode {:.2} s ({:.0} MiB/s), decode + analysis {:.2} s ({:.0} MiB/s)",
        decoded.as_secs_f64(),
        mb / decoded.as_secs_f64(),
        total.as_secs_f64(),
        mb / total.as_secs_f64()
    );
    println!(
        "compact columns {compact:.1} MiB, peak RSS growth {peak:.1} MiB ({:.2}x compact, {:.2}x the file; {:.1} MiB by the end of decoding)",
        peak / compact.max(1e-9),
        peak / mb.max(1e-9),
        decode_peak as f64 / (1 << 20) as f64
    );
    for r in &reports {
        println!(
            "device {}: peak {} B at event {:?}, final {} B",
            r.device, r.peak_allocated_bytes, r.peak_event_index, r.final_allocated_bytes
        );
    }
}
