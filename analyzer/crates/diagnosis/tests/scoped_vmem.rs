//! OpenXLA E1001 (one instruction's scoped VMEM) on the whole pipeline:
//! every posted copy selects the `scoped_vmem` node, never the E1000
//! sections, and its advice carries the message's own numbers (the
//! `vmem_limit_bytes` that would hold the instruction's need).

mod common;

use common::{analyze_file, node, samples};
use oomscope_diagnosis::ids::*;
use oomscope_report::{OomKind, TreeKind};

fn scoped_samples() -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(samples())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("tpu_scoped_vmem") || n == "tpu_vmem_would_exceed.txt"
        })
        .collect();
    out.sort();
    out
}

#[test]
fn every_scoped_vmem_message_selects_its_own_node() {
    let paths = scoped_samples();
    assert_eq!(paths.len(), 7, "{paths:?}");
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let r = analyze_file(&path);
        let e = r
            .oom_events
            .iter()
            .find(|e| e.kind == OomKind::TpuScopedVmem)
            .unwrap_or_else(|| panic!("{name}: {:?}", r.oom_events));
        let d = &r.diagnosis;
        assert_eq!(d.tree, TreeKind::CompileHbmOom, "{name}");
        assert_eq!(d.path, vec![SCOPED_VMEM.to_string()], "{name}");
        let h = d.headline.as_ref().unwrap();
        assert_eq!(h.node, SCOPED_VMEM, "{name}");
        for id in [LARGE_ALLOCATIONS, AGGREGATE, TC_SC_BALANCE] {
            assert!(!node(d, id).selected, "{name}: {id}");
        }
        let n = node(d, SCOPED_VMEM);
        assert!(n.selected);
        if let Some(need) = e.requested_bytes {
            // The limit that holds the need: rounded up to a whole MiB.
            let mib = 1u64 << 20;
            let limit = need.div_ceil(mib) * mib;
            assert!(limit >= need && limit - need < mib);
            let flag = format!("vmem_limit_bytes={limit}");
            let kernel_advice = n.actions.iter().any(|a| a.text.contains(&flag));
            let compiler_own = n.actions.iter().all(|a| !a.text.contains("block sizes"));
            assert!(kernel_advice || compiler_own, "{name}: {:?}", n.actions);
            assert_eq!(n.facts["scoped_bytes"], need, "{name}");
        }
    }
}

/// A Pallas kernel (a `tpu_custom_call` custom call) is retuned, never
/// reported as a compiler bug; its op name says where it comes from.
#[test]
fn a_custom_kernel_is_retuned() {
    let r = analyze_file(&samples().join("tpu_scoped_vmem_pallas_one_line.txt"));
    let h = r.diagnosis.headline.as_ref().unwrap();
    assert!(h.text.contains("%_fwd.1"), "{}", h.text);
    assert!(h.text.contains("pallas_call"), "{}", h.text);
    assert!(h.text.contains("36.25 MiB"), "{}", h.text);
    assert!(h.text.contains("vmem_limit_bytes=38797312"), "{}", h.text);
    let n = node(&r.diagnosis, SCOPED_VMEM);
    assert!(n.actions.iter().all(|a| !a.text.contains("report it to XLA")));
    assert!(n
        .actions
        .iter()
        .any(|a| a.text.contains("--xla_tpu_scoped_vmem_limit_kib=37888")));
}
