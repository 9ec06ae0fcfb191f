//! Which peak buffers live in an allocation that is also a program output
//! (`PeakBuffer::maybe_live_out`), on the real donation pair
//! (`fixtures/pair-donate`: the same SGD step with and without
//! `donate_argnums` on its 8 weights). The expected allocations are the
//! compiler's own buffer-assignment dumps beside each HloProto: without
//! donation the weights are `parameter N` and their updates separate
//! `maybe-live-out` allocations; donated, each weight's allocation is
//! `parameter N, maybe-live-out` and the data `x` stays a plain parameter.

use oomscope_report::{BufferCategory, PeakBuffer};

const PROTO: &str = "module_0000.jit_sgd_step.cl_1014260217.after_optimizations.hlo.pb";

fn peak_buffers(variant: &str) -> Vec<PeakBuffer> {
    let path = oomscope_testdata::fixtures()
        .join("pair-donate")
        .join(variant)
        .join(PROTO);
    let bytes = std::fs::read(&path).expect("the fixture's HloProto");
    let modules = oomscope_xla::analyze_hlo_proto(PROTO, &bytes).expect("it analyses");
    let hbm = modules
        .into_iter()
        .find(|m| m.memory_space == oomscope_report::MemoryColor::Device)
        .expect("an HBM module");
    hbm.peak_buffers
}

fn weights(buffers: &[PeakBuffer]) -> Vec<&PeakBuffer> {
    buffers
        .iter()
        .filter(|b| b.name.starts_with("ws_"))
        .collect()
}

#[test]
fn undonated_weights_are_parameters_beside_outputs_of_their_shape() {
    let buffers = peak_buffers("plain");
    let ws = weights(&buffers);
    assert_eq!(ws.len(), 8);
    assert!(ws
        .iter()
        .all(|b| b.category == BufferCategory::Parameter && !b.maybe_live_out));
    let outputs: Vec<&PeakBuffer> = buffers
        .iter()
        .filter(|b| b.category == BufferCategory::Output)
        .collect();
    assert_eq!(outputs.len(), 8);
    assert!(outputs
        .iter()
        .all(|o| o.maybe_live_out && o.shape == ws[0].shape));
}

#[test]
fn donated_weights_are_parameters_that_are_also_outputs() {
    let buffers = peak_buffers("donated");
    let ws = weights(&buffers);
    assert_eq!(ws.len(), 8);
    assert!(ws
        .iter()
        .all(|b| b.category == BufferCategory::Parameter && b.maybe_live_out));
    assert!(buffers
        .iter()
        .filter(|b| b.name == "x.1")
        .all(|b| b.category == BufferCategory::Parameter && !b.maybe_live_out));
    assert!(!buffers.iter().any(|b| b.category == BufferCategory::Output));
}
