//! A TPU run-time failure told by its message alone selects OpenXLA's page
//! for it: loading a program (E0101, `Attempting to reserve … at the bottom
//! of memory`) or allocating a buffer (E0100, `Attempting to allocate`),
//! with the shortfall computed from the message's own numbers.

mod common;

use common::{analyze_file, node, samples};
use oomscope_diagnosis::ids::*;
use oomscope_report::TreeKind;

fn mib(v: f64) -> u64 {
    (v * (1u64 << 20) as f64).round() as u64
}
fn gib(v: f64) -> u64 {
    (v * (1u64 << 30) as f64).round() as u64
}

#[test]
fn each_runtime_message_selects_its_page() {
    // (sample, page, shortfall the first action estimates)
    let cases = [
        // 29.49G reserved, 147.64M reservable.
        ("tpu_runtime_reserve.txt", TPU_PROGRAM_LOAD, Some(gib(29.49) - mib(147.64))),
        // Cut after "That was not possible.": no shortfall to compute.
        ("tpu_runtime_cut_short_tpurecipes151.txt", TPU_PROGRAM_LOAD, None),
        // 8.00M asked, 6.43M free.
        ("tpu_runtime_allocate.txt", TPU_BUFFER_ALLOCATION, Some(mib(8.00) - mib(6.43))),
        // PyTorch/XLA prints the runtime's own message: 196M asked, 134.44M free.
        ("torch_xla_runtime_allocate8020.txt", TPU_BUFFER_ALLOCATION, Some(mib(196.0) - mib(134.44))),
    ];
    for (name, page, short) in cases {
        let r = analyze_file(&samples().join(name));
        let d = &r.diagnosis;
        assert_eq!(d.tree, TreeKind::RuntimeOom, "{name}");
        assert_eq!(d.path, vec![page.to_string()], "{name}");
        let h = d.headline.as_ref().unwrap();
        assert_eq!(h.node, page, "{name}");
        assert_eq!(h.estimate_bytes, short, "{name}: {}", h.text);
        // A program that does not load is said to be loading, not asking.
        assert_eq!(
            h.text.starts_with("Out of memory loading a program"),
            page == TPU_PROGRAM_LOAD,
            "{name}: {}",
            h.text
        );
        let other = if page == TPU_PROGRAM_LOAD { TPU_BUFFER_ALLOCATION } else { TPU_PROGRAM_LOAD };
        assert!(!node(d, other).selected, "{name}");
        let n = node(d, page);
        assert!(
            n.actions.iter().any(|a| a.text.contains("tpu_log_allocations_on_oom")),
            "{name}"
        );
    }
}
