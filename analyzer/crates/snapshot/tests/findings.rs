//! The findings the diagnosis reads, on real corpus snapshots: each is
//! checked against the timeline it was derived from, not against a number
//! copied from our own output.

use oomscope_report::MemorySnapshot;

fn load(name: &str) -> Vec<MemorySnapshot> {
    let path = oomscope_testdata::corpus().join("snapshots").join(name);
    let data = std::fs::read(&path).unwrap();
    oomscope_snapshot::analyze(name, &data[..], data.len() as u64).unwrap()
}

#[test]
fn oom_carries_the_state_at_that_moment() {
    let devices = load("Constructor-Sun__code_location__memory_snapshot.pickle");
    let d = devices.iter().find(|d| d.oom.is_some()).unwrap();
    let oom = d.oom.as_ref().unwrap();
    // The OOM comes right after the peak it could not exceed: what was
    // allocated then is the peak, and the request did not fit in what CUDA had free.
    assert!(oom.event_index > d.peak_event_index.unwrap());
    assert_eq!(oom.allocated_bytes, d.peak_allocated_bytes);
    assert!(oom.requested_bytes > oom.device_free_bytes);
    assert!(oom.reserved_bytes >= oom.allocated_bytes);
    let largest = &oom.largest_live[0];
    assert!(oom
        .largest_live
        .windows(2)
        .all(|w| w[0].size_bytes >= w[1].size_bytes));
    assert!(largest.alloc_event_index.unwrap() < oom.event_index);
    let event = oomscope_snapshot::oom_event(d).unwrap();
    assert_eq!(event.top_allocations[0].size_bytes, largest.size_bytes);
}

#[test]
fn fragmentation_is_inactive_bytes_between_live_blocks() {
    for d in load("LfieLike__SketchKV2__my_snapshot.pickle") {
        assert!(d.expandable_segments_would_return_bytes > 0);
        assert!(d.expandable_segments_would_return_bytes <= d.inactive_bytes);
        assert_eq!(
            d.free_external_bytes,
            d.inactive_bytes + d.active_pending_free_bytes
        );
    }
    // Expandable segments already: nothing more to return.
    for d in load("Constructor-Sun__code_location__memory_snapshot.pickle") {
        assert_eq!(d.expandable_segments, d.segments);
        assert_eq!(d.expandable_segments_would_return_bytes, 0);
    }
}

#[test]
fn a_spike_is_a_short_lived_allocation_live_at_the_peak() {
    let d = &load("HugePandaCoder__octree-nca-groupeq__my_snapshot.pickle@0cc72993")[0];
    let spike = d.spike.as_ref().expect("a spike");
    let at_peak = d
        .live_at_peak
        .iter()
        .find(|a| a.alloc_event_index == Some(spike.alloc_event_index))
        .expect("live at the peak");
    assert_eq!(at_peak.size_bytes, spike.size_bytes);
    assert!(spike.free_event_index.unwrap() > d.peak_event_index.unwrap());
    assert!(spike.size_bytes * 4 >= d.peak_allocated_bytes - d.final_allocated_bytes);
    assert_eq!(spike.final_allocated_bytes, d.final_allocated_bytes);
}

#[test]
fn accumulation_and_lingering_backward_buffers_of_a_custom_autograd_function() {
    // An in-place custom autograd Function keeping tensors alive (the
    // repository's own experiment, edit_package/custom_autograd).
    let d = &load("a0kuma__ckptTry__edit_package__custom_autograd__abc.pickle")[0];
    let acc = &d.accumulations[0];
    assert!(acc.steps >= 3 && acc.count >= acc.steps);
    assert!(acc.first_event_index < acc.last_event_index);
    assert_eq!(acc.bytes_per_step, acc.bytes / acc.steps);
    let lingering = d
        .lingering_backward
        .as_ref()
        .expect("backward buffers live at the end");
    assert!(lingering.bytes <= d.final_allocated_bytes);
    assert_eq!(
        lingering.lines.iter().map(|l| l.count).sum::<u64>(),
        lingering.count
    );
    assert!(
        lingering.lines.iter().any(|l| l.frame == acc.frame),
        "{:?} / {}",
        lingering.lines,
        acc.frame
    );
}

#[test]
fn stacks_at_peak_add_up_to_the_peak() {
    let d = &load("Charan6924__assignment2-systems__cs336_systems__memory_snapshot.pickle")[0];
    let total: u64 = d.stacks_at_peak.iter().map(|s| s.bytes).sum();
    assert!(total <= d.peak_allocated_bytes);
    // Every stack is innermost-first with Python frames when it has any.
    assert!(d
        .stacks_at_peak
        .iter()
        .all(|s| !s.frames.is_empty() || s.bytes > 0));
    let lines: u64 = d.top_lines_at_peak.iter().map(|l| l.bytes).sum();
    assert!(lines <= d.peak_allocated_bytes && lines > 0);
}

/// The same file gives the same report: stacks tied in bytes (this snapshot
/// has many) are ordered by a total order, not by a hash map's random one,
/// so which of them survive the cut does not change from run to run.
#[test]
fn stacks_at_the_peak_are_the_same_on_every_run() {
    let name = "kkaitlyn111__cs336-a2-systems__memory_2.7b_forward.pickle";
    let first = load(name);
    let ties = first[0]
        .stacks_at_peak
        .windows(2)
        .filter(|w| w[0].bytes == w[1].bytes)
        .count();
    assert!(ties > 0, "the file has stacks tied in bytes");
    for _ in 0..4 {
        let again = load(name);
        assert_eq!(again.len(), first.len());
        for (a, b) in first.iter().zip(&again) {
            assert_eq!(a.stacks_at_peak, b.stacks_at_peak);
        }
    }
}
