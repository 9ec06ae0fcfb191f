//! Pieces of markup several views use (table headers, windowed rows). Not
//! views: they know nothing of the report.

pub mod sort_header;
pub mod table_head;
pub mod windowed;
