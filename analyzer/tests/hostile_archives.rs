//! Archive bombs: a gzip that inflates a thousandfold, gzips nested in gzips,
//! zips of many entries. Expansion stops at the limits with an error naming the
//! archive, and keeps what it read before.

use oomscope_analyzer::archive::{expand, Budget, Limits};
use oomscope_analyzer::{analyze, InputFile};
use std::io::Write;

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

/// A gzip of `mib` MiB of zeros, written without holding them.
fn gzip_of_zeros(mib: usize) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..mib {
        gz.write_all(&zeros).unwrap();
    }
    gz.finish().unwrap()
}

fn small_limits() -> Limits {
    Limits {
        max_total_bytes: 16 << 20,
        max_entries: 100,
        max_depth: 4,
    }
}

fn expand_with(
    name: &str,
    data: Vec<u8>,
    limits: Limits,
) -> (Vec<InputFile>, Vec<(String, String)>) {
    expand(
        InputFile {
            name: name.into(),
            data,
        },
        &mut Budget::new(limits),
        0,
    )
}

#[test]
fn a_gzip_past_the_byte_limit_is_an_archive_bomb_error() {
    let bomb = gzip_of_zeros(64);
    assert!(bomb.len() < 100 << 10, "{}", bomb.len());
    let (files, errors) = expand_with("bomb.log.gz", bomb, small_limits());
    assert!(files.is_empty());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].0, "bomb.log.gz");
    assert!(
        errors[0]
            .1
            .contains("expands to more than 16777216 bytes; stopped (archive bomb?)"),
        "{errors:?}"
    );
}

#[test]
fn gzips_nested_past_the_depth_limit_stop_there() {
    // 64 MiB of zeros gzipped six times over is a few hundred bytes.
    let mut bomb = gzip_of_zeros(64);
    for _ in 0..5 {
        bomb = gzip(&bomb);
    }
    let limits = Limits {
        max_total_bytes: 1 << 30,
        ..small_limits()
    };
    let (files, errors) = expand_with("bomb.gz", bomb, limits);
    assert!(files.is_empty());
    assert!(
        errors
            .iter()
            .any(|(_, m)| m.contains("archives nested more than 4 deep")),
        "{errors:?}"
    );
}

#[test]
fn a_zip_of_many_entries_stops_at_the_entry_limit() {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for i in 0..1000 {
        zip.start_file(format!("f{i}.log"), options).unwrap();
        zip.write_all(b"x").unwrap();
    }
    let data = zip.finish().unwrap().into_inner();
    let (files, errors) = expand_with("many.zip", data, small_limits());
    assert_eq!(files.len(), 100);
    assert!(
        errors
            .iter()
            .any(|(a, m)| a == "many.zip" && m.contains("more than 100 entries")),
        "{errors:?}"
    );
}

#[test]
fn the_pipeline_reports_a_bomb_and_reads_the_other_inputs() {
    // Past the default limits only with nesting: 4 GiB is the default byte
    // budget, so a small bomb is read whole; here the depth limit stops it.
    let mut bomb = gzip_of_zeros(1);
    for _ in 0..5 {
        bomb = gzip(&bomb);
    }
    let log = b"RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total capacity; \
                130.35 MiB already allocated; 6.94 MiB free; 144.00 MiB reserved in total by PyTorch)\n";
    let report = analyze(
        vec![
            InputFile {
                name: "bomb.gz".into(),
                data: bomb,
            },
            InputFile {
                name: "train.log".into(),
                data: log.to_vec(),
            },
        ],
        &mut |_| {},
    );
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.input.starts_with("bomb") && e.message.contains("nested more than 4 deep")),
        "{:?}",
        report.errors
    );
    assert_eq!(report.oom_events.len(), 1);
}
