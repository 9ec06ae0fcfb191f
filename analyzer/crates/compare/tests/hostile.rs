//! Reports built from hostile inputs hold anything the schema allows:
//! extreme sizes, unparseable shapes, zero dimensions, thousands of
//! look-alike buffers. Comparing them never panics, and the changes still
//! sum to the difference whenever that difference is representable.

use oomscope_compare::compare;
use oomscope_report::{BufferCategory, ModuleReport, PeakBuffer, Report};

fn buffer(name: &str, shape: &str, size: u64, category: BufferCategory) -> PeakBuffer {
    PeakBuffer {
        name: name.into(),
        shape: shape.into(),
        size_bytes: size,
        unpadded_bytes: size / 2,
        category,
        ..PeakBuffer::default()
    }
}

fn module(peak: u64, buffers: Vec<PeakBuffer>) -> ModuleReport {
    ModuleReport {
        name: "jit_f".into(),
        peak_bytes: peak,
        peak_unpadded_bytes: u64::MAX,
        peak_buffers: buffers,
        ..ModuleReport::default()
    }
}

fn report(m: ModuleReport) -> Report {
    let mut r = Report::new();
    r.modules.push(m);
    r
}

#[test]
fn extreme_sizes_and_broken_shapes_do_not_panic() {
    use BufferCategory::*;
    let weird_shapes = [
        "",
        "f32[",
        "f32[0,0]",
        "f32[-5,3]",
        "f32[9223372036854775807,2]",
        "(f32[2], s8[3])",
        "token[]",
        "f32[2]{0:T(0)}",
        "bf16[1,1]",
    ];
    let mut a_buffers = Vec::new();
    let mut b_buffers = Vec::new();
    for (i, shape) in weird_shapes.iter().enumerate() {
        a_buffers.push(buffer(
            &format!("fusion.{i}"),
            shape,
            u64::MAX - i as u64,
            Temporary,
        ));
        b_buffers.push(buffer(&format!("fusion.{i}"), shape, i as u64, Output));
        a_buffers.push(buffer(&format!("p.{i}"), shape, u64::MAX, Parameter));
        b_buffers.push(buffer(
            &format!("q.{i}"),
            "f32[9223372036854775807,1]",
            u64::MAX / 3,
            Parameter,
        ));
    }
    let a = report(module(u64::MAX, a_buffers));
    let b = report(module(0, b_buffers));
    for (x, y) in [(&a, &b), (&b, &a), (&a, &a)] {
        let c = compare(x, y, "A", "B");
        for m in &c.modules {
            assert!(!m.summary.is_empty());
        }
    }
}

#[test]
fn thousands_of_look_alike_buffers_still_sum_to_the_difference() {
    use BufferCategory::*;
    let a: Vec<PeakBuffer> = (0..5000)
        .map(|i| buffer(&format!("fusion.{i}"), "f32[128,128]", 65536, Temporary))
        .collect();
    let b: Vec<PeakBuffer> = (0..7000)
        .map(|i| {
            buffer(
                &format!("fusion.{}", i * 7),
                "bf16[128,128]",
                32768,
                Temporary,
            )
        })
        .collect();
    let (pa, pb) = (5000 * 65536u64, 7000 * 32768u64);
    let c = compare(&report(module(pa, a)), &report(module(pb, b)), "A", "B");
    let m = &c.modules[0];
    assert_eq!(m.difference_bytes, pb as i64 - pa as i64);
    assert_eq!(
        m.changes.iter().map(|ch| ch.bytes).sum::<i64>(),
        m.difference_bytes
    );
    assert!(m.buffers.len() <= 50, "only the largest changes are listed");
}
