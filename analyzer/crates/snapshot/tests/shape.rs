//! The fast path for the snapshot's own shape (`shape.rs`) decodes exactly
//! what the general unpickler decodes: every corpus snapshot and every
//! fixture read both ways gives the same columns, and the fast path really
//! takes the trace entries (a path never taken would pass the first test).

use oomscope_snapshot::build::build;
use oomscope_snapshot::compact::Compactor;
use oomscope_snapshot::memo::Memo;
use oomscope_snapshot::model::Snapshot;
use oomscope_snapshot::unpickle::{unpickle, Shaped, Sink};
use oomscope_snapshot::value::{EventIds, Strings, Value};

/// The compactor with the fast path counted, or turned off.
struct Counted {
    inner: Compactor,
    fast: bool,
    taken: usize,
}

impl Sink for Counted {
    fn strings(&mut self) -> &mut Strings {
        self.inner.strings()
    }
    fn nest(&mut self, value: Value) -> Result<Value, oomscope_snapshot::Problem> {
        self.inner.nest(value)
    }
    fn shaped(&mut self, buf: &[u8], remaining: u64, memo: &mut Memo) -> Option<Shaped> {
        if !self.fast {
            return None;
        }
        let done = self.inner.shaped(buf, remaining, memo);
        self.taken += done.is_some() as usize;
        done
    }
}

fn decode(bytes: &[u8], fast: bool) -> (Result<Snapshot, String>, usize) {
    let mut sink = Counted {
        inner: Compactor::new(),
        fast,
        taken: 0,
    };
    let top = unpickle(bytes, bytes.len() as u64, &mut sink);
    let taken = sink.taken;
    let snap = top
        .map_err(|e| format!("{e:?}"))
        .and_then(|top| build(top, sink.inner).map_err(|p| p.to_string()));
    (snap, taken)
}

/// Everything decoded, as comparable text (strings by content, so ids may
/// differ only if the interning order did, which is itself checked).
fn columns(s: &Snapshot) -> String {
    let strings: Vec<&str> = (0..s.strings.len() as u32)
        .map(|i| s.strings.get(i))
        .collect();
    // Each device's trace through its ids: an entry the fast path leaves to
    // the general one is stored when its list takes it, after the entries
    // the fast path stored as they ended, so the table's order may differ.
    let traces: Vec<Vec<_>> = (0..s.device_traces.len() as u32)
        .map(|d| s.trace(d).collect())
        .collect();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        s.generation,
        s.segments,
        s.blocks,
        s.events.len(),
        traces,
        s.annotations,
        s.allocator_settings,
        strings,
        s.frames,
        s.stacks.frames,
        s.stacks.starts
    )
}

fn same_both_ways(name: &str, bytes: &[u8]) -> usize {
    let (general, none) = decode(bytes, false);
    let (fast, taken) = decode(bytes, true);
    assert_eq!(none, 0);
    match (general, fast) {
        (Ok(g), Ok(f)) => {
            let entries: usize = g.device_traces.iter().map(EventIds::len).sum();
            let (g, f) = (columns(&g), columns(&f));
            for (n, (g, f)) in g.lines().zip(f.lines()).enumerate() {
                if g != f {
                    let at = g.bytes().zip(f.bytes()).take_while(|(a, b)| a == b).count();
                    let from = g[..at].rfind("Some(").unwrap_or(0);
                    panic!(
                        "{name}: column {n} differs at {at}:\n{:.400}\n{:.400}",
                        &g[from..],
                        &f[from..]
                    );
                }
            }
            assert!(taken <= entries, "{name}");
        }
        (Err(g), Err(f)) => assert_eq!(g, f, "{name}"),
        (g, f) => panic!("{name}: general {:?}, fast {:?}", g.err(), f.err()),
    }
    taken
}

#[test]
fn every_corpus_snapshot_decodes_the_same_both_ways() {
    let dir = oomscope_testdata::corpus().join("snapshots");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_none_or(|e| e != "md" && e != "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 60, "{}", files.len());
    let (mut taken, mut entries) = (0, 0);
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        taken += same_both_ways(&name, &bytes);
        if let (Ok(s), _) = decode(&bytes, false) {
            entries += s.device_traces.iter().map(EventIds::len).sum::<usize>();
        }
    }
    // Nearly every trace entry takes the fast path (those cut by the end
    // of the read-ahead, or the first of a device in an APPEND, do not).
    assert!(
        taken as f64 > 0.99 * entries as f64,
        "{taken} of {entries} entries"
    );
}

#[test]
fn every_protocol_and_every_entry_shape_decodes_the_same_both_ways() {
    // tools/fixtures/snapshot_shapes.py: a real snapshot re-pickled with
    // protocols 2 (BINPUT) and 4 (MEMOIZE, FRAME), with stacks of 1,001
    // frames, of one frame, empty, absent, a dict-valued user_metadata, and
    // a device trace of one entry.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/samples/shapes");
    for protocol in [2, 4] {
        let name = format!("shapes-protocol{protocol}.pickle");
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        assert_eq!(bytes[1], protocol);
        let taken = same_both_ways(&name, &bytes);
        let snap = decode(&bytes, true).0.unwrap();
        let entries: usize = snap.device_traces.iter().map(EventIds::len).sum();
        // 5 + 6 + 5 entries on device 0, one on device 1. The fast path
        // takes all but the dict-valued user_metadata and device 1's only
        // entry (an APPEND, not a batch).
        assert_eq!((entries, taken), (17, 15), "{name}");
        let longest = (0..snap.stacks.len() as u32)
            .map(|s| snap.stacks.get(s).len())
            .max();
        assert_eq!(longest, Some(1001), "{name}");
    }
}
