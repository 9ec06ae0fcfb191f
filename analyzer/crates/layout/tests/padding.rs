//! The padding analysis on real compiler output: suggestions checked against
//! the sizes libtpu gave the very layouts they suggest, module summaries over
//! a real buffer assignment, event summaries over a real OOM log.

use oomscope_layout::{
    dimension_breakdown, event_padding, module_padding, padding_groups, parse_shape, suggest_fix,
    ArrayShape, Change, GroupBy,
};
use oomscope_report::{BufferLifetime, ModuleReport, OomEvent, PeakBuffer, TopAllocation};

fn zoo_dump() -> String {
    let dir = oomscope_testdata::fixtures().join("padding-zoo-v5e");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.to_string_lossy().ends_with("-buffer-assignment.txt"))
        .expect("padding zoo buffer assignment");
    std::fs::read_to_string(file).unwrap()
}

/// (value name, compiler size, shape) of every array value of the dump.
fn zoo_values() -> Vec<(String, u64, String)> {
    zoo_dump()
        .lines()
        .filter_map(|line| {
            let line = line.trim().strip_prefix("value: <")?;
            let name = line.split_whitespace().nth(1)?.to_string();
            let (size, shape) = line.split_once("(size=")?.1.split_once(",offset=")?;
            let shape = shape.split_once("): ")?.1;
            (!shape.starts_with('(')).then(|| (name, size.parse().unwrap(), shape.to_string()))
        })
        .collect()
}

fn compiler_size(shape: &str) -> u64 {
    zoo_values()
        .into_iter()
        .find(|(_, _, s)| s == shape)
        .map(|(_, size, _)| size)
        .unwrap_or_else(|| panic!("{shape}"))
}

fn array(text: &str) -> ArrayShape {
    parse_shape(text).unwrap().as_array().unwrap().clone()
}

#[test]
fn transpose_suggestion_matches_the_compilers_size_of_the_transposed_layout() {
    // The zoo holds both layouts of f32[100000,10]: row-major (10 minor,
    // padded to 128) and column-major (100000 minor).
    let row_major = "f32[100000,10]{1,0:T(8,128)}";
    let column_major = "f32[100000,10]{0,1:T(8,128)}";
    let before = compiler_size("s32[100000,10]{1,0:T(8,128)}"); // same element size, same layout
    let after = compiler_size(column_major);
    let fix = suggest_fix(&array(row_major)).unwrap();
    assert_eq!(fix.new_shape, column_major);
    assert_eq!(
        fix.change,
        Change::Transpose {
            minor_to_major: vec![0, 1],
            minor_dimension: 0
        }
    );
    assert_eq!(fix.saves_bytes, before - after);
    assert_eq!(format!("{:.1}", fix.expansion_before), "12.8");
    assert_eq!(format!("{:.1}", fix.expansion_after), "1.6");
    assert!(
        fix.text
            .starts_with("transpose so that 100000 is minor: 12.8× → 1.6×"),
        "{}",
        fix.text
    );
    assert!(fix.text.ends_with("(estimate)"));
}

#[test]
fn resize_suggestion_rounds_the_offending_dimension_down() {
    let shape = "f32[129,1024]{1,0:T(8,128)}";
    let fix = suggest_fix(&array(shape)).unwrap();
    assert_eq!(
        fix.change,
        Change::Resize {
            dimension: 0,
            from: 129,
            to: 128
        }
    );
    // 128 rows of 1024 f32 need no padding at all.
    assert_eq!(fix.saves_bytes, compiler_size(shape) - 128 * 1024 * 4);
    assert_eq!(
        fix.text,
        "dimension 0: 129 → 128 saves 32.00 KiB (estimate)"
    );
    // The transposed layout the zoo also holds is larger: not suggested.
    assert!(compiler_size("f32[129,1024]{0,1:T(8,128)S(1)}") > compiler_size(shape));
    // No padding, no suggestion.
    assert!(suggest_fix(&array("f32[128,1024]{1,0:T(8,128)}")).is_none());
    assert!(suggest_fix(&array("f32[129,1000]{1,0}")).is_none());
}

#[test]
fn dimension_breakdown_names_the_dimension_that_costs() {
    let shape = "s32[29999,10]{0,1:T(8,128)}";
    let breakdown = dimension_breakdown(&array(shape));
    assert_eq!(breakdown.len(), 2);
    // Most minor: 29999 → 30080 (128), second: 10 → 16 (8).
    let (minor, second) = (&breakdown[0], &breakdown[1]);
    assert_eq!(
        (minor.dimension, minor.size, minor.tile, minor.padded_size),
        (0, 29999, 128, 30080)
    );
    assert_eq!(
        (
            second.dimension,
            second.size,
            second.tile,
            second.padded_size
        ),
        (1, 10, 8, 16)
    );
    assert_eq!(minor.padding_bytes, (30080 - 29999) * 16 * 4);
    assert_eq!(second.padding_bytes, 30080 * 6 * 4);
    // The compiler's size is the padded one the breakdown starts from.
    assert_eq!(compiler_size(shape), 30080 * 16 * 4);
    assert!(dimension_breakdown(&array("f32[3]{0}")).is_empty());
}

fn zoo_module() -> ModuleReport {
    let buffers = zoo_values()
        .into_iter()
        .enumerate()
        .map(|(i, (name, size, shape))| BufferLifetime {
            id: i as i64,
            op_name: name.split('.').next().unwrap_or_default().to_string(),
            name,
            shape,
            size_bytes: size,
            unpadded_bytes: 0, // not given: computed from the shape
            ..Default::default()
        })
        .collect();
    ModuleReport {
        name: "jit_zoo".into(),
        buffers,
        ..Default::default()
    }
}

#[test]
fn module_padding_over_a_real_buffer_assignment() {
    let module = zoo_module();
    let summary = module_padding(&module);
    let expected_total: u64 = zoo_values()
        .iter()
        .map(|(_, size, shape)| size.saturating_sub(array(shape).unpadded_bytes()))
        .sum();
    assert_eq!(summary.total_padding_bytes, expected_total);
    assert!(summary.total_padding_bytes > 0);
    // The worst shapes are the [100000,10] arrays with 10 minor (12.8×).
    let top = &summary.top[0];
    assert!(
        top.shape.contains("[100000,10]{1,0:T(8,128)"),
        "{}",
        top.shape
    );
    assert_eq!(format!("{:.1}", top.expansion), "12.8");
    let count = zoo_values()
        .iter()
        .filter(|(_, _, s)| s == &top.shape)
        .count() as u64;
    assert_eq!(top.count, count);
    assert_eq!(top.padding_bytes, count * (51_200_000 - 4_000_000));
    assert!(
        top.suggestion
            .starts_with("transpose so that 100000 is minor"),
        "{}",
        top.suggestion
    );
    assert!(summary
        .top
        .windows(2)
        .all(|w| w[0].padding_bytes >= w[1].padding_bytes));
    // No peak buffers and no peak numbers: no peak padding.
    assert_eq!(summary.peak_padding_bytes, 0);

    // Per buffer, with the id that finds it in the timeline.
    let per_buffer = oomscope_layout::buffer_padding(&module);
    assert_eq!(per_buffer.len(), module.buffers.len());
    assert!(per_buffer
        .iter()
        .zip(&module.buffers)
        .all(|(p, b)| p.id == Some(b.id) && p.padded_bytes == b.size_bytes));

    // Grouping by op name covers the same bytes.
    let by_op = padding_groups(&module, GroupBy::OpName);
    assert_eq!(
        by_op.iter().map(|g| g.padding_bytes).sum::<u64>(),
        expected_total
    );
}

#[test]
fn peak_padding_uses_the_compilers_unpadded_sizes_when_given() {
    let module = ModuleReport {
        peak_buffers: vec![
            PeakBuffer {
                name: "a".into(),
                shape: "f32[129,1024]{1,0:T(8,128)}".into(),
                size_bytes: 557056,
                unpadded_bytes: 528384,
                ..Default::default()
            },
            // XProf's merged small buffers: no shape, sizes given.
            PeakBuffer {
                name: "small".into(),
                size_bytes: 9728,
                unpadded_bytes: 9000,
                ..Default::default()
            },
            // No shape and no unpadded size: nothing known, no padding counted.
            PeakBuffer {
                name: "unknown".into(),
                size_bytes: 4096,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let summary = module_padding(&module);
    assert_eq!(
        summary.peak_padding_bytes,
        (557056 - 528384) + (9728 - 9000)
    );
    assert_eq!(summary.total_padding_bytes, summary.peak_padding_bytes);
    let just_numbers = ModuleReport {
        peak_bytes: 1000,
        peak_unpadded_bytes: 900,
        ..Default::default()
    };
    assert_eq!(module_padding(&just_numbers).peak_padding_bytes, 100);
}

#[test]
fn event_padding_from_a_real_oom_log() {
    // Corpus log 01: "Shape: f32[4,128,128,9,18]{4,3,0,2,1:T(8,128)} ... Unpadded size:
    // 40.50M, Extra memory due to padding: 471.50M (12.6x expansion)", and a bf16 entry
    // "Unpadded size: 128.00M, Extra memory due to padding: 128.00M (2.0x expansion)".
    let log =
        std::fs::read_to_string(oomscope_testdata::corpus().join("logs/01_tpu_compile_hbm.txt"))
            .unwrap();
    assert!(log.contains("Extra memory due to padding: 471.50M (12.6x expansion)"));
    assert!(log.contains("Extra memory due to padding: 128.00M (2.0x expansion)"));
    let mib = 1u64 << 20;
    let event = OomEvent {
        top_allocations: vec![
            TopAllocation {
                rank: 1,
                size_bytes: 512 * mib,
                shape: "f32[4,128,128,9,18]{4,3,0,2,1:T(8,128)}".into(),
                unpadded_bytes: Some(40 * mib + mib / 2),
                op_name: Some("one_hot".into()),
                ..Default::default()
            },
            TopAllocation {
                rank: 2,
                size_bytes: 256 * mib,
                shape: "bf16[4,512,512,64]{3,0,2,1:T(4,128)(2,1)}".into(),
                unpadded_bytes: Some(128 * mib),
                ..Default::default()
            },
            TopAllocation {
                rank: 3,
                size_bytes: 256 * mib,
                shape: "f32[4,256,256,256]{3,0,2,1:T(4,128)}".into(),
                unpadded_bytes: Some(256 * mib),
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let summary = event_padding(&event).unwrap();
    assert_eq!(
        summary.total_padding_bytes,
        (471 * mib + mib / 2) + 128 * mib
    );
    assert_eq!(summary.peak_padding_bytes, summary.total_padding_bytes);
    assert_eq!(
        summary.top.len(),
        2,
        "the unpadded f32 entry wastes nothing"
    );
    assert_eq!(summary.top[0].padding_bytes, 471 * mib + mib / 2);
    assert_eq!(format!("{:.1}", summary.top[0].expansion), "12.6");
    assert_eq!(format!("{:.1}", summary.top[1].expansion), "2.0");
    assert!(!summary.top[0].suggestion.is_empty());
    assert!(event_padding(&OomEvent::default()).is_none());
}

#[test]
fn transpose_of_the_second_minor_dimension_is_named_as_such() {
    // 3 rows pad to 8 in f32[5000,3,256]{2,1,0}: putting 5000 second-most
    // minor instead (and 3 major) removes that, with 256 still minor.
    let fix = suggest_fix(&array("f32[5000,3,256]{2,1,0:T(8,128)}")).unwrap();
    assert_eq!(fix.new_shape, "f32[5000,3,256]{2,0,1:T(8,128)}");
    assert!(
        fix.text
            .starts_with("transpose so that 5000 is second-most minor: 2.7× → 1.0×"),
        "{}",
        fix.text
    );
    assert_eq!(fix.saves_bytes, 5000 * 8 * 256 * 4 - 5000 * 3 * 256 * 4);
}
