//! The heap replay of XProf's Memory Viewer (`xprof==2.24.2`,
//! `hlo_proto_to_memory_visualization_utils.cc`), over a [`HeapProgram`]
//! whose sizes a remedy may have changed: ALLOC adds the buffer, FREE drops
//! a reference and removes the canonical buffer at zero, SHARE_WITH takes a
//! reference on the canonical buffer (and re-adds its memory when it had
//! been freed); the heap is recorded before each event and once at the end;
//! the indefinite allocations are added to every point. With no change it
//! gives `ModuleReport::heap_bytes` and `peak_bytes` exactly
//! (`tests/replay.rs` checks every fixture).

use oomscope_report::program::{HeapEventKind, HeapProgram};

/// Sizes and extra temporaries a remedy sets; the program is left as it is.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Padded size of each buffer (`HeapProgram::buffers`).
    pub buffer_bytes: Vec<u64>,
    /// Bytes each allocation counts at every point when it is indefinite
    /// (0 once a remedy removes it from this memory space).
    pub allocation_bytes: Vec<u64>,
    /// Temporaries a remedy adds: live from before event `from` until
    /// before event `to` (`to` may be `events.len()`: until the end).
    pub extra: Vec<Extra>,
    /// Operand memory given to a buffer the compiler did not let share it
    /// as compiled (a remedy made their shapes equal).
    pub shares: Vec<Share>,
    /// SHARE_WITH events at which the buffer takes memory of its own: a
    /// remedy made it smaller than the operand whose memory the compiler
    /// gave it (a sharded gradient's all-reduce, now a reduce-scatter whose
    /// shard is a new buffer while the whole local gradient dies).
    pub own: Vec<usize>,
}

/// XLA's heap simulator gives a new buffer the memory of an operand that
/// dies at its definition when their shapes are equal
/// (`HeapSimulator::RunComputation`): at event `at` (the buffer's ALLOC)
/// the operand is freed and the buffer shares its memory, as the compiler's
/// trace writes FREE then SHARE_WITH; the operand's own FREE (event `free`)
/// is then skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    pub at: usize,
    pub operand: usize,
    pub free: usize,
}

/// A temporary the compiler needs after a remedy (a collective's buffer, a
/// recomputed block, a copy), live over a span of the replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extra {
    pub from: usize,
    pub to: usize,
    pub bytes: u64,
}

impl Plan {
    /// The program as compiled.
    pub fn identity(program: &HeapProgram) -> Self {
        Plan {
            buffer_bytes: program.buffers.iter().map(|b| b.size_bytes).collect(),
            allocation_bytes: program.allocations.iter().map(|a| a.size_bytes).collect(),
            extra: Vec::new(),
            shares: Vec::new(),
            own: Vec::new(),
        }
    }

    /// What the indefinite allocations add to every point: allocations that
    /// hold at least one buffer, as XProf counts them.
    pub fn indefinite_bytes(&self, program: &HeapProgram) -> u64 {
        program
            .allocations
            .iter()
            .zip(&self.allocation_bytes)
            .filter(|(a, _)| a.indefinite && a.representative.is_some())
            .map(|(_, &b)| b)
            .fold(0u64, u64::saturating_add)
    }
}

/// The replayed heap over the program's positions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Curve {
    /// Heap bytes at each position, indefinite allocations included.
    pub heap_bytes: Vec<u64>,
    pub peak_bytes: u64,
    /// The position of the peak (as `ModuleReport::peak_position`).
    pub peak_position: u64,
    pub indefinite_bytes: u64,
}

#[derive(Clone, Copy, Default)]
struct State {
    refs: i64,
    canonical: Option<usize>,
}

/// Replays `program` with the sizes of `plan`. An inconsistent trace (a
/// buffer freed more often than allocated, a negative heap, a share with
/// itself) is an error naming the event: the module cannot be replayed.
pub fn replay(program: &HeapProgram, plan: &Plan) -> Result<Curve, String> {
    let n = program.events.len();
    let mut state = vec![State::default(); program.buffers.len()];
    // Extra temporaries as deltas applied before an event.
    let mut starts: Vec<Vec<u64>> = vec![Vec::new(); n + 1];
    let mut ends: Vec<Vec<u64>> = vec![Vec::new(); n + 1];
    for e in &plan.extra {
        if e.bytes == 0 || e.from >= e.to {
            continue;
        }
        if let Some(s) = starts.get_mut(e.from.min(n)) {
            s.push(e.bytes);
        }
        if let Some(s) = ends.get_mut(e.to.min(n)) {
            s.push(e.bytes);
        }
    }
    // Shares a remedy adds: the operand each ALLOC takes, and the FREEs skipped.
    let mut takes: Vec<Option<usize>> = vec![None; n];
    let mut skipped = vec![false; n];
    for s in &plan.shares {
        if let (Some(t), Some(k)) = (takes.get_mut(s.at), skipped.get_mut(s.free)) {
            *t = Some(s.operand);
            *k = true;
        }
    }
    let mut owns = vec![false; n];
    for &at in &plan.own {
        if let Some(o) = owns.get_mut(at) {
            *o = true;
        }
    }
    let size = |b: usize| plan.buffer_bytes.get(b).copied().unwrap_or(0);
    let root = |state: &[State], mut b: usize| {
        for _ in 0..=state.len() {
            match state.get(b).and_then(|s| s.canonical) {
                Some(c) => b = c,
                None => break,
            }
        }
        b
    };
    let mut heap = Vec::with_capacity(n + 1);
    let (mut now, mut peak, mut peak_position) = (0u64, 0u64, 0u64);
    let raise = |now: u64, position: usize, peak: &mut u64, peak_position: &mut u64| {
        if now > *peak {
            *peak = now;
            *peak_position = position as u64;
        }
    };
    for (i, event) in program.events.iter().enumerate() {
        for &b in ends.get(i).map_or(&[][..], Vec::as_slice) {
            now = now.saturating_sub(b);
        }
        for &b in starts.get(i).map_or(&[][..], Vec::as_slice) {
            now = now.saturating_add(b);
            raise(now, i, &mut peak, &mut peak_position);
        }
        heap.push(now);
        let Some(b) = event.buffer else { continue };
        if skipped.get(i).copied().unwrap_or(false) {
            continue;
        }
        // A share a remedy adds: the operand is freed, then the buffer
        // shares its memory (the compiler's trace writes FREE, SHARE_WITH).
        let steps = match takes.get(i).copied().flatten() {
            Some(operand) if event.kind == HeapEventKind::Alloc => vec![
                (HeapEventKind::Free, operand),
                (HeapEventKind::ShareWith(operand), b),
            ],
            _ if owns[i] && matches!(event.kind, HeapEventKind::ShareWith(_)) => {
                vec![(HeapEventKind::Alloc, b)]
            }
            _ => vec![(event.kind, b)],
        };
        for (kind, b) in steps {
            match kind {
                HeapEventKind::Alloc => {
                    let r = root(&state, b);
                    if let Some(s) = state.get_mut(r) {
                        s.refs += 1;
                    }
                    now = now.saturating_add(size(b));
                    raise(now, i, &mut peak, &mut peak_position);
                }
                HeapEventKind::Free => {
                    let r = root(&state, b);
                    let refs = match state.get_mut(r) {
                        Some(s) => {
                            s.refs -= 1;
                            s.refs
                        }
                        None => 0,
                    };
                    if refs < 0 {
                        return Err(format!(
                            "event {i}: buffer {} is freed more times than it is allocated",
                            program.buffers.get(b).map_or(0, |b| b.id)
                        ));
                    }
                    if refs == 0 {
                        now = now
                            .checked_sub(size(r))
                            .ok_or_else(|| format!("event {i}: the heap size goes negative"))?;
                    }
                }
                HeapEventKind::ShareWith(c) => {
                    if root(&state, c) == b {
                        return Err(format!("event {i}: a buffer shares with itself"));
                    }
                    if let Some(s) = state.get_mut(b) {
                        s.canonical = Some(c);
                    }
                    let r = root(&state, c);
                    let refs = match state.get_mut(r) {
                        Some(s) => {
                            s.refs += 1;
                            s.refs
                        }
                        None => 0,
                    };
                    if refs == 1 {
                        now = now.saturating_add(size(r));
                        raise(now, i, &mut peak, &mut peak_position);
                    }
                }
            }
        }
    }
    heap.push(now);
    let indefinite = plan.indefinite_bytes(program);
    Ok(Curve {
        heap_bytes: heap.iter().map(|h| h.saturating_add(indefinite)).collect(),
        peak_bytes: peak.saturating_add(indefinite),
        peak_position,
        indefinite_bytes: indefinite,
    })
}
