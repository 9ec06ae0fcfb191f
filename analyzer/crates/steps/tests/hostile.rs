//! Hostile input: garbage, huge numbers, a million lines. Nothing may panic,
//! and the work stays linear.

use oomscope_steps::{analyze_series, classify, looks_like_step_log, parse_step_log};

#[test]
fn garbage_and_binary_give_nothing() {
    let mut junk = String::new();
    let mut x: u32 = 12345;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        junk.push(char::from_u32(x % 0x3000).unwrap_or('?'));
    }
    for text in [
        junk.as_str(),
        "",
        "\n\n\n",
        "|||||\n│││",
        "step:",
        "step: 99999999999999999999999 memory: 1GiB(1%)",
        "\u{1b}[",
        "[",
        "Using (GB)",
        "Using (GB) 1 /",
        "a,b\n",
    ] {
        for mut s in parse_step_log("junk", text) {
            analyze_series(&mut s);
            let _ = classify(&s);
        }
        let _ = looks_like_step_log(text);
    }
}

#[test]
fn huge_and_odd_numbers_saturate() {
    let text = "step: 1  loss: 1.0  memory: 99999999999999999999999999999999999GiB(1e308%)\n\
        step: 2  loss: 1.0  memory: 1e30GiB(0.00%)\n\
        step: 18446744073709551615  loss: 1.0  memory: 1.00GiB(100.00%)\n\
        step: 3  loss: 1.0  memory: 0.00GiB(0.00%)\n\
        \tUsing (GB) 1e400 / 0 (inf%) on TPU_0(process=0)\n\
        | 0 | 99999999999 GiB / 0.00 GiB | 100% |\n\
        step,bytes\n1,1e999\n";
    let mut series = parse_step_log("huge", text);
    let titan = series
        .iter()
        .find(|s| s.source == "torchtitan")
        .expect("torchtitan series");
    let got: Vec<(u64, u64)> = titan.points.iter().map(|p| (p.step, p.bytes)).collect();
    assert_eq!(
        got,
        [(1, u64::MAX), (2, u64::MAX), (u64::MAX, 1 << 30), (3, 0)],
        "sizes saturate"
    );
    let chip = series
        .iter()
        .find(|s| s.source == "tpu-info")
        .expect("tpu-info series");
    assert_eq!(chip.points[0].bytes, u64::MAX);
    assert!(
        series.iter().all(|s| s.source != "maxtext"),
        "1e400 is not a number"
    );
    for s in &mut series {
        analyze_series(s);
        let _ = classify(s);
    }
}

#[test]
fn a_million_lines_parse_and_analyse() {
    let mut text = String::with_capacity(80 * 1_000_000);
    for step in 1..=1_000_000u64 {
        let gib = 10.0 + step as f64 * 1e-6 + if step % 1000 < 3 { 0.5 } else { 0.0 };
        text.push_str(&format!("[rank0]:[titan] - root - INFO - step: {step}  loss:  1.0000  memory: {gib:5.2}GiB(12.50%)  tps: 1\n"));
    }
    let t = std::time::Instant::now();
    let mut series = parse_step_log("big", &text);
    eprintln!("parse {:?}", t.elapsed());
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].points.len(), 1_000_000);
    let t = std::time::Instant::now();
    analyze_series(&mut series[0]);
    eprintln!("analyze {:?}", t.elapsed());
    assert!(series[0].points.len() <= 2000);
}
