//! Pieces of markup several views use (table headers, windowed rows, the
//! stack view). Not views: they know nothing of the report's sections.

pub mod copy_link;
pub mod runtime_left_out;
pub mod sort_header;
pub mod stacks;
pub mod table_head;
pub mod windowed;
