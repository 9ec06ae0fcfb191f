//! Times the Memory Viewer analysis of one HloProto in process, as XProf's
//! `memory_viewer` is timed in `tools/bench/memory_viewer_vs_xprof.py`:
//! `cargo run --release -p oomscope-xla --example memory_viewer_timing --
//! FILE.hlo.pb [RUNS]` prints the median of RUNS calls (after one warm-up)
//! of decoding the file and analysing every memory space of it.

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: memory_viewer_timing FILE.hlo.pb [RUNS]");
        std::process::exit(2);
    };
    let runs: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20)
        .max(1);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        eprintln!("{path}: {e}");
        std::process::exit(1);
    });
    let analyse = || oomscope_xla::analyze_hlo_proto(&path, &bytes).map(|m| m.len());
    let spaces = match analyse() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let _ = std::hint::black_box(analyse());
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    println!(
        "oomscope memory_viewer {} {} B ({spaces} memory spaces): median {:.3} ms, {:.1} MiB/s (n={runs})",
        std::path::Path::new(&path)
            .file_name()
            .unwrap_or_default()
            .to_string_lossy(),
        bytes.len(),
        median * 1e3,
        bytes.len() as f64 / median / (1u64 << 20) as f64
    );
}
