//! Hostile logs: 10^5 repeats of one OOM message, 10^5 different ones, and
//! one enormous line of keywords. The result stays bounded: repeats merge,
//! distinct events stop at a cap, and a line cannot trigger unbounded rescans.
//! Parsing is linear, so 10^6 lines take ten times as long (a minute in a
//! debug build, too slow for every test run).

use oomscope_logs::parse_oom_log;

fn torch_oom(mib: u64) -> String {
    format!(
        "RuntimeError: CUDA out of memory. Tried to allocate {mib}.00 MiB (GPU 0; 7.93 GiB total capacity; \
         130.35 MiB already allocated; 6.94 MiB free; 144.00 MiB reserved in total by PyTorch)\n"
    )
}

#[test]
fn a_hundred_thousand_repeats_of_one_oom_are_one_event() {
    let line = torch_oom(36);
    let text = line.repeat(100_000);
    let events = parse_oom_log("repeats.log", &text);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].repeats, 100_000);
    assert_eq!(events[0].requested_bytes, Some(36 << 20));
}

#[test]
fn a_hundred_thousand_different_ooms_stop_at_the_event_cap() {
    // Ten times the cap; a million take ten times as long (a minute in a debug build).
    let text: String = (1..=100_000u64).map(torch_oom).collect();
    let events = parse_oom_log("distinct.log", &text);
    assert!(
        !events.is_empty() && events.len() <= 10_000,
        "{}",
        events.len()
    );
    assert_eq!(events[0].requested_bytes, Some(1 << 20));
}

#[test]
fn one_line_of_a_million_keywords_is_read_once() {
    let text = "Ran out of memory Requires CUDA out of memory ".repeat(1_000_000);
    let events = parse_oom_log("keywords.log", &text);
    assert!(events.len() <= 10_000, "{}", events.len());
}

#[test]
fn a_huge_line_before_many_cut_looking_lines_is_read_once() {
    // Each keyword line looks like the rest of a cut line: the look back to
    // the line before must stay bounded (a terminal's line is short).
    let mut text = "x".repeat(20 << 20);
    text.push('\n');
    for _ in 0..1_000 {
        text.push_str(&"c) ran out of memory trying to allocate ".repeat(60));
        text.push('\n');
    }
    let t = std::time::Instant::now();
    let events = parse_oom_log("lookback.log", &text);
    assert!(events.is_empty(), "{events:?}");
    // Generous for a loaded debug build; unbounded look-backs take minutes.
    assert!(t.elapsed().as_secs() < 60, "{:?}", t.elapsed());
}
