//! The size XLA:TPU allocates for an array, where the shape text alone
//! (upstream `ShapeUtil::ByteSizeOf`) does not give it.
//!
//! A tiled layout says everything: [`ArrayShape::padded_bytes`] reproduces
//! the compiler. An array whose layout has no tile is one XLA:TPU never laid
//! out itself: the scalars of sub-computations that passes create after
//! layout assignment (a scatter's sort comparator, the f32 reducer of a bf16
//! reduction, `pred[]{:S(6)}` compares inside them), offsets of collectives
//! (`s32[2]{0:S(4)}`). The TPU still stores it in whole vector registers:
//! its element count is rounded up to a multiple of 8 × 128 = 1024 elements,
//! then the element size applies. So `pred[]` takes 1024 bytes, `bf16[]`
//! 2048, `s32[]` and `u32[]{:S(6)}` 4096, and `s32[8192]{0:S(1)}` 32768
//! (already a multiple), on v4, v5e, v5p and v6e, with libtpu 0.0.8, 0.0.23
//! and 0.0.52 (`fixtures/scalar-zoo-*`, checked buffer by buffer in
//! `tests/real_sizes.rs` and `tests/hlo_proto_sizes.rs`).
//!
//! The exceptions are the sync-flag memory space `S(2)` (its flags are
//! single 32-bit words: `u32[]{:S(2)}` takes 4 bytes) and the spaces `S(8)`
//! and `S(10)` of v6e's gather offload (`u32[]{:S(8)}` 4 bytes,
//! `s32[12]{0:S(8)}` 48, `s32[5]{0:S(10)}` 20: `fixtures/pair-transformer-donate-v6e`,
//! libtpu 0.0.52), all sized dense.
//!
//! A tuple's own buffer (its index table) is sized by
//! [`tpu_tuple_table_bytes`]: 4 bytes per element, rounded up to the chip's
//! allocation granule.

use crate::shape::ArrayShape;

/// Elements of one TPU vector register (8 sublanes × 128 lanes): an untiled
/// array's element count is rounded up to a multiple of this.
pub const UNTILED_ELEMENT_GRANULE: u64 = 8 * 128;

/// The TPU memory space of synchronization flags (`S(2)`), sized dense.
pub const SYNC_FLAG_MEMORY_SPACE: i64 = 2;

/// Memory spaces whose untiled arrays are sized dense, not in whole vector
/// registers: sync flags, and v6e's gather-offload spaces 8 and 10.
pub const DENSE_MEMORY_SPACES: [i64; 3] = [SYNC_FLAG_MEMORY_SPACE, 8, 10];

impl ArrayShape {
    /// Bytes XLA:TPU allocates for this array: the layout's padded size when
    /// it is tiled or a sync flag, else the element count rounded up to
    /// [`UNTILED_ELEMENT_GRANULE`] (see the module docs).
    pub fn tpu_padded_bytes(&self) -> u64 {
        if self.is_tiled() || DENSE_MEMORY_SPACES.contains(&self.memory_space()) {
            return self.padded_bytes();
        }
        let elements = self
            .element_count()
            .div_ceil(UNTILED_ELEMENT_GRANULE)
            .saturating_mul(UNTILED_ELEMENT_GRANULE);
        self.bytes_of_elements(elements)
            .saturating_add(self.metadata_prefix_bytes())
    }

    /// Whether the layout has at least one tile.
    pub fn is_tiled(&self) -> bool {
        self.layout.as_ref().is_some_and(|l| !l.tiles.is_empty())
    }
}

/// Bytes of one entry of a tuple's index table on TPU: the compiler's tuple
/// buffers hold 4 bytes per element (not upstream's 8-byte pointers).
pub const TUPLE_ENTRY_BYTES: u64 = 4;

/// Bytes XLA:TPU allocates for a tuple's own buffer (its index table) of
/// `elements` entries: [`TUPLE_ENTRY_BYTES`] each, rounded up to the chip's
/// allocation granule (512 bytes on v4 and v5e, 32 on v5p and v6e). On v5p a
/// 9-element tuple takes 64 bytes and a 68-element one 288; on v5e a
/// 116-element one 512 (`fixtures/scalar-zoo-*`, `fixtures/padding-zoo-*`).
pub fn tpu_tuple_table_bytes(elements: usize, granule: u64) -> u64 {
    // An empty tuple `()` has no table (v6e's gather offload: 0 bytes).
    if elements == 0 {
        return 0;
    }
    let entries = TUPLE_ENTRY_BYTES.saturating_mul(elements as u64);
    entries
        .max(1)
        .div_ceil(granule.max(1))
        .saturating_mul(granule.max(1))
}
