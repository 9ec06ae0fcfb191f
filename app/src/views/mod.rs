//! The page's views: one component per file. A view reads the shared
//! [`AppState`](crate::state::AppState) or takes the part of the `Report` it
//! draws as a prop; none of them parses anything. New views go in their own
//! file here and are placed in `report.rs`.

pub mod chart;
pub mod diagnosis;
pub mod drop_zone;
pub mod header;
pub mod inputs;
pub mod modules;
pub mod notice;
pub mod padding;
pub mod progress;
pub mod report;
pub mod runtime;
pub mod share;
pub mod snapshot;
pub mod stacks;
pub mod steps;
pub mod table;
pub mod timeline;
pub mod verdict;
