//! Wall-time projection: step times printed by maxtext give the median
//! seconds per step, and a growing series says when it reaches its limit.

use oomscope_steps::{analyze_series, parse_step_log};

fn corpus(name: &str) -> String {
    std::fs::read_to_string(oomscope_testdata::corpus().join("logs").join(name)).unwrap()
}

/// The printed `seconds:` values of `completed step:` lines, read independently.
fn printed_step_seconds(text: &str) -> Vec<f64> {
    text.lines()
        .filter(|l| l.contains("completed step:"))
        .filter_map(|l| l.split("seconds:").nth(1))
        .filter_map(|rest| {
            rest.trim_start()
                .split(|c: char| c == ',' || c.is_whitespace())
                .next()
        })
        .filter_map(|n| n.parse().ok())
        .collect()
}

#[test]
fn maxtext_step_times_give_the_median_seconds_per_step() {
    let text = corpus("59_train_step_memory.txt");
    let mut printed = printed_step_seconds(&text);
    assert!(!printed.is_empty(), "the corpus log prints step times");
    printed.sort_by(f64::total_cmp);
    let median = printed[printed.len() / 2];
    let series = parse_step_log("59", &text);
    assert!(!series.is_empty());
    for s in &series {
        assert_eq!(
            s.seconds_per_step,
            Some(median),
            "{} {}",
            s.device,
            s.metric
        );
    }
}

#[test]
fn a_growing_series_projects_the_wall_time_to_its_limit() {
    // 1 GiB + 10 MiB per step on a 2 GiB device, 2.5 s per step: the limit is
    // reached at step ~102; from step 40 that is ~62 steps, ~155 s.
    let mut log = String::new();
    for step in 1..=40u64 {
        let used_gb = (1024.0 + 10.0 * step as f64) / 1024.0;
        log.push_str(&format!("completed step: {step}, seconds: 2.500, TFLOP/s/device: 1.0, Tokens/s/device: 1.0, total_weights: 1, loss: 1.0\n"));
        log.push_str(&format!(
            "\tUsing (GB) {used_gb:.2} / 2.00 (50.0%) on TPU_0\n"
        ));
    }
    let mut series = parse_step_log("synthetic", &log);
    let s = series
        .iter_mut()
        .find(|s| s.device == "TPU_0")
        .expect("a TPU_0 series");
    analyze_series(s);
    assert_eq!(s.seconds_per_step, Some(2.5));
    let limit_step = s.projected_limit_step.expect("growth is projected");
    let last = s.points.last().unwrap().step;
    let secs = s.projected_limit_seconds.expect("wall time is projected");
    assert!((secs - (limit_step - last) as f64 * 2.5).abs() < 1e-9);
    assert!((95..=110).contains(&limit_step), "{limit_step}");
}
