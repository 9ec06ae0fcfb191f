//! Decodes and analyses one snapshot file, then prints the throughput, the
//! size of the decoded columns and the process's peak resident memory
//! (Linux `VmHWM`), for the benchmark figures of issue 16:
//!
//! `cargo run --release -p oomscope-snapshot --example snapshot_memory -- FILE`
//!
//! With `PROBE=1`, device 0's Active Memory Timeline is first built alone
//! and its live and peak heap bytes printed (the analysis's largest part).

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs::File;
use std::io::BufReader;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Counts live heap bytes and their peak. Natively, memory freed goes back
/// to the system and pages never touched are not resident, so the peak RSS
/// can be far below what the browser's worker holds: wasm's linear memory
/// never shrinks and must hold the peak of live bytes (plus whatever
/// fragmentation keeps). The live peak is that floor.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // As in wasm, a move holds the old and the new buffer at once.
        grew(new_size);
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

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
    let decode_live_peak = PEAK.load(Ordering::Relaxed);
    let decode_peak = peak_rss_bytes().unwrap_or(0).saturating_sub(before);
    if std::env::var_os("PROBE").is_some() {
        use oomscope_snapshot::timeline::{timeline, TimelineKind};
        let b = LIVE.load(Ordering::Relaxed);
        PEAK.store(b, Ordering::Relaxed);
        let tl = timeline(&snap, 0, TimelineKind::ActiveMemory);
        eprintln!(
            "probe: timeline live +{:.1} peak +{:.1} elements {} ({} B each)",
            mib(LIVE.load(Ordering::Relaxed) - b),
            mib(PEAK.load(Ordering::Relaxed) - b),
            tl.elements.len(),
            std::mem::size_of_val(&tl.elements[0])
        );
        drop(tl);
        PEAK.store(b, Ordering::Relaxed);
    }
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
    println!(
        "live heap peak {:.1} MiB ({:.1} MiB by the end of decoding, {:.1} MiB live after it): the least the browser's wasm memory holds",
        mib(PEAK.load(Ordering::Relaxed)),
        mib(decode_live_peak),
        mib(snap.heap_bytes())
    );
    for r in &reports {
        println!(
            "device {}: peak {} B at event {:?}, final {} B",
            r.device, r.peak_allocated_bytes, r.peak_event_index, r.final_allocated_bytes
        );
    }
}
