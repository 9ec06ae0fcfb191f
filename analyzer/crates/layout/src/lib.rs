//! XLA shapes and layouts: parse shape strings as XLA prints them, print them
//! back, and compute padded and unpadded sizes exactly as the TPU compiler does.
//!
//! - [`element_type`]: primitive types (names, `xla_data.proto` numbers, bit widths);
//! - [`shape`]: the shape/layout model, parser, printer and size rules;
//! - [`tpu`]: what XLA:TPU allocates for arrays whose layout has no tile;
//! - [`padding`]: padding waste per dimension, per module and per OOM event, with fix suggestions;
//! - [`dataflow`]: whether an HLO value reaches a contraction (the what-if programs' walk).

pub mod dataflow;
pub mod element_type;
pub mod padding;
pub mod shape;
pub mod tpu;

pub use element_type::ElementType;
pub use padding::{
    buffer_padding, dimension_breakdown, event_buffer_padding, event_padding, group_buffers,
    module_padding, padding_groups, size_of, suggest_fix, BufferPadding, Change, DimPadding,
    GroupBy, PaddingGroup, SizeInfo, Suggestion,
};
pub use shape::{
    parse_counted_shape, parse_counted_shape_list, parse_shape, parse_shape_prefix, ArrayShape,
    Layout, Shape, ShapeError, SplitConfig, Tile,
};
pub use tpu::{tpu_tuple_table_bytes, TUPLE_ENTRY_BYTES, UNTILED_ELEMENT_GRANULE};
