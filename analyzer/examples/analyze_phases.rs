//! Where the time of `oomscope analyze --json FILE.hlo.pb` goes, in process:
//! `cargo run --release -p oomscope-analyzer --example analyze_phases -- FILE [RUNS]`
//! prints the median of RUNS (after a warm-up) of the HloProto's decoding,
//! its Memory Viewer analysis, its what-if programs, the whole analysis
//! (readers, padding, diagnosis, what-if replays) and, of the whole, the
//! padding, the diagnosis and the what-if replays alone; then the JSON.

use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect(),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: analyze_phases FILE.hlo.pb [RUNS]");
    let runs: usize = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10)
        .max(1);
    let bytes = std::fs::read(&path).expect("readable");
    let decode = time(runs, || {
        std::hint::black_box(oomscope_xla::decode_hlo_proto(&path, &bytes).ok());
    });
    let hlo = oomscope_xla::decode_hlo_proto(&path, &bytes).expect("an HloProto");
    let viewer = time(runs, || {
        std::hint::black_box(oomscope_xla::analyze_hlo(&path, &hlo, None).ok());
    });
    let programs = time(runs, || {
        std::hint::black_box(oomscope_xla::heap_programs(&path, &hlo, None).ok());
    });
    let name = std::path::Path::new(&path)
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let analyze = || {
        oomscope_analyzer::analyze(
            vec![oomscope_analyzer::InputFile {
                name: name.clone(),
                data: bytes.clone(),
            }],
            &mut |_| {},
        )
    };
    let whole = time(runs, || {
        std::hint::black_box(analyze());
    });
    let (report, programs_list) = oomscope_analyzer::analyze_keeping_programs(
        vec![oomscope_analyzer::InputFile {
            name: name.clone(),
            data: bytes.clone(),
        }],
        Vec::new(),
        &mut |_| {},
    );
    let padding = time(runs, || {
        for module in &report.modules {
            std::hint::black_box(oomscope_layout::module_padding(module));
        }
    });
    let diagnosis = time(runs, || {
        std::hint::black_box(oomscope_diagnosis::diagnose(&report));
    });
    let mut replayed = report.clone();
    let what_if = time(runs, || {
        oomscope_analyzer::what_if::attach(&mut replayed, &programs_list, None);
    });
    let json = time(runs, || {
        std::hint::black_box(serde_json::to_string_pretty(&report).ok());
    });
    println!(
        "{name} ({} B): decode {decode:.2} ms, memory viewer {viewer:.2} ms, programs {programs:.2} ms; whole analysis {whole:.2} ms (of which padding {padding:.2} ms, diagnosis {diagnosis:.2} ms, what-if replays {what_if:.2} ms), JSON {json:.2} ms (medians of {runs})",
        bytes.len()
    );
}
