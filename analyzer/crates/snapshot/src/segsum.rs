//! The allocator's state at snapshot time, per device, as `_memory_viz.py`
//! `segsum` and its block statistics compute it from `segments`.

use crate::model::{BlockState, Snapshot};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SegmentState {
    pub segments: u64,
    pub expandable_segments: u64,
    /// Sum of segment sizes (`total_reserved`).
    pub reserved_bytes: u64,
    /// Block bytes (after rounding) of `active_allocated` blocks.
    pub active_allocated_bytes: u64,
    pub active_allocated_count: u64,
    /// Requested bytes of `active_allocated` blocks (segsum's `total_allocated`).
    pub allocated_requested_bytes: u64,
    pub active_pending_free_bytes: u64,
    pub active_pending_free_count: u64,
    pub inactive_bytes: u64,
    pub inactive_count: u64,
    /// Free because the allocator rounded a request up (segsum's "internal").
    pub free_internal_bytes: u64,
    /// Free between blocks: every block that is not `active_allocated`
    /// (segsum's "external"; includes pending frees).
    pub free_external_bytes: u64,
    /// Segments of private pools (CUDA graphs): `segment_pool_id != (0, 0)`.
    pub private_pool_bytes: u64,
    /// Inactive bytes inside segments that also hold live blocks: what
    /// `empty_cache()` cannot return and `expandable_segments:True` would
    /// avoid (an estimate: the fragmentation between live blocks).
    pub stranded_inactive_bytes: u64,
}

pub fn segment_state(snap: &Snapshot, device: u32) -> SegmentState {
    let mut s = SegmentState::default();
    for seg in snap.segments.iter().filter(|s| s.device == device) {
        s.segments += 1;
        s.expandable_segments += seg.is_expandable as u64;
        s.reserved_bytes = s.reserved_bytes.saturating_add(seg.total_size);
        if seg.pool != (0, 0) {
            s.private_pool_bytes = s.private_pool_bytes.saturating_add(seg.total_size);
        }
        let mut seg_inactive = 0u64;
        let mut seg_live = false;
        for b in snap.segment_blocks(seg) {
            match b.state {
                BlockState::ActiveAllocated => {
                    s.active_allocated_bytes = s.active_allocated_bytes.saturating_add(b.size);
                    s.active_allocated_count += 1;
                    s.allocated_requested_bytes =
                        s.allocated_requested_bytes.saturating_add(b.requested_size);
                    s.free_internal_bytes = s
                        .free_internal_bytes
                        .saturating_add(b.size.saturating_sub(b.requested_size));
                    seg_live = true;
                }
                BlockState::ActivePendingFree => {
                    s.active_pending_free_bytes =
                        s.active_pending_free_bytes.saturating_add(b.size);
                    s.active_pending_free_count += 1;
                    seg_live = true;
                }
                BlockState::Inactive => {
                    s.inactive_bytes = s.inactive_bytes.saturating_add(b.size);
                    s.inactive_count += 1;
                    seg_inactive = seg_inactive.saturating_add(b.size);
                }
                BlockState::Other => {}
            }
            if b.state != BlockState::ActiveAllocated {
                s.free_external_bytes = s.free_external_bytes.saturating_add(b.size);
            }
        }
        if seg_live && !seg.is_expandable {
            s.stranded_inactive_bytes = s.stranded_inactive_bytes.saturating_add(seg_inactive);
        }
    }
    s
}
