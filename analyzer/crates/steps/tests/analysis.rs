//! Trend analysis over logs of real training loops (`fixtures/steps/`, made by
//! `tools/fixtures/leak_loop.py`: JAX on CPU, process RSS per step, torchtitan
//! format) and over series built to show one behaviour each.

use oomscope_steps::{analyze_series, classify, parse_step_log, StepPoint, StepSeries, Trend};

fn fixture(name: &str) -> String {
    let path = oomscope_testdata::fixtures().join("steps").join(name);
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A `# key: value` header line of a fixture, as the generator wrote it.
fn header(text: &str, key: &str) -> u64 {
    let prefix = format!("# {key}: ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} header"))
}

fn one_series(name: &str) -> (String, StepSeries) {
    let text = fixture(name);
    let mut series = parse_step_log(name, &text);
    assert_eq!(series.len(), 1, "{name}");
    let mut s = series.remove(0);
    assert_eq!(s.points.len(), 400, "{name}: one point per step");
    assert_eq!(s.source, "torchtitan");
    assert_eq!(s.device, "rank 0");
    analyze_series(&mut s);
    (text, s)
}

#[test]
fn real_leak_is_steady_growth_with_the_true_slope() {
    let (text, s) = one_series("jax_cpu_leak.log");
    let truth = header(&text, "true_growth_bytes_per_step") as f64;
    assert_eq!(truth, 2_097_152.0);
    let slope = s.slope_bytes_per_step.expect("slope");
    eprintln!(
        "leak: slope {slope:.0} B/step vs true {truth}; limit {:?}; projected {:?}",
        s.limit_bytes, s.projected_limit_step
    );
    assert!(
        (slope - truth).abs() <= 0.10 * truth,
        "slope {slope} vs true {truth}"
    );
    match classify(&s) {
        Trend::SteadyGrowth {
            slope_bytes_per_step,
            projected_limit_step,
            ..
        } => {
            assert!((slope_bytes_per_step - truth).abs() <= 0.10 * truth);
            // The limit is the machine's RAM (from the percentages); at 2 MiB per
            // step it is reached thousands of steps after the last one.
            let limit_step = projected_limit_step.expect("limit known from the percentages");
            assert!(limit_step > 400, "{limit_step}");
            assert_eq!(s.projected_limit_step, Some(limit_step));
        }
        other => panic!("leak classified as {other:?}"),
    }
    assert!(s.spikes.is_empty(), "{:?}", s.spikes);
}

#[test]
fn real_steady_loop_is_flat() {
    let (_, s) = one_series("jax_cpu_steady.log");
    assert_eq!(classify(&s), Trend::Flat);
    assert_eq!(s.projected_limit_step, None);
    assert!(s.slope_bytes_per_step.expect("slope").abs() < 0.01 * 2_097_152.0);
}

#[test]
fn real_sawtooth_has_the_log_interval_as_period() {
    let (text, s) = one_series("jax_cpu_sawtooth.log");
    let period = header(&text, "sawtooth_period_steps");
    assert_eq!(s.sawtooth_period_steps, Some(period));
    match classify(&s) {
        Trend::Sawtooth { period_steps, .. } => assert_eq!(period_steps, period),
        other => panic!("sawtooth classified as {other:?}"),
    }
    assert_eq!(s.projected_limit_step, None);
}

fn series(points: impl IntoIterator<Item = (u64, u64)>, limit: Option<u64>) -> StepSeries {
    StepSeries {
        source: "test".into(),
        points: points
            .into_iter()
            .map(|(step, bytes)| StepPoint { step, bytes })
            .collect(),
        limit_bytes: limit,
        ..Default::default()
    }
}

const GIB: u64 = 1 << 30;

#[test]
fn one_big_allocation_is_a_spike_not_a_leak() {
    // 10 GiB with small noise, then +4 GiB at step 500 that stays.
    let pts = (0..1000u64).map(|i| {
        (
            i,
            10 * GIB + (i * 7919 % 13) * (1 << 20) + if i >= 500 { 4 * GIB } else { 0 },
        )
    });
    let mut s = series(pts, Some(16 * GIB));
    analyze_series(&mut s);
    assert_eq!(s.spikes, [500]);
    match classify(&s) {
        Trend::Spike {
            steps,
            largest_jump_bytes,
        } => {
            assert_eq!(steps, [500]);
            assert!(largest_jump_bytes > 3 * GIB);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.projected_limit_step, None);
}

#[test]
fn projection_reaches_the_limit_where_the_line_does() {
    // 1 GiB + 1 MiB per step, logged every 10 steps; limit 2 GiB → step 1024.
    let pts = (0..=50u64).map(|k| (k * 10, GIB + k * 10 * (1 << 20)));
    let mut s = series(pts, Some(2 * GIB));
    analyze_series(&mut s);
    assert_eq!(s.slope_bytes_per_step, Some((1 << 20) as f64));
    assert_eq!(s.projected_limit_step, Some(1024));
}

#[test]
fn long_series_are_downsampled_keeping_ends_and_peak() {
    let n = 1_000_000u64;
    let pts = (0..n).map(|i| (i, 5 * GIB + i * 1000 + if i == 777_777 { GIB } else { 0 }));
    let mut s = series(pts, None);
    analyze_series(&mut s);
    assert!(s.points.len() <= 2000, "{}", s.points.len());
    assert_eq!(s.points.first().map(|p| p.step), Some(0));
    assert_eq!(s.points.last().map(|p| p.step), Some(n - 1));
    assert!(s
        .points
        .iter()
        .any(|p| p.step == 777_777 && p.bytes == 6 * GIB + 777_777_000));
    let slope = s.slope_bytes_per_step.expect("slope");
    assert!((slope - 1000.0).abs() < 1.0, "{slope}");
    assert_eq!(s.spikes, [777_777]);
}

#[test]
fn too_few_points_say_nothing() {
    let mut s = series([(1, 100), (2, 200)], Some(1000));
    analyze_series(&mut s);
    assert_eq!(s.slope_bytes_per_step, None);
    assert_eq!(classify(&s), Trend::Flat);
}

#[test]
fn growth_with_a_sawtooth_reports_both() {
    // Seed 003: slow growth plus a sawtooth whose period is the log interval.
    let mib = 1u64 << 20;
    let pts = (0..2000u64).map(|i| (i, 10 * GIB + i * mib + (i % 50) * 8 * mib));
    let mut s = series(pts, Some(16 * GIB));
    analyze_series(&mut s);
    match classify(&s) {
        Trend::SteadyGrowth {
            slope_bytes_per_step,
            sawtooth_period_steps,
            projected_limit_step,
        } => {
            assert!(
                (slope_bytes_per_step - mib as f64).abs() < 0.1 * mib as f64,
                "{slope_bytes_per_step}"
            );
            assert_eq!(sawtooth_period_steps, Some(50));
            assert!(projected_limit_step.is_some());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.sawtooth_period_steps, Some(50));
    assert!(
        s.spikes.is_empty(),
        "drops are releases, not spikes: {:?}",
        s.spikes
    );
}
