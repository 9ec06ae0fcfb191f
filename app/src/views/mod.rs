//! The page's views: one folder or file per section of the page. A view
//! reads the shared [`AppState`](crate::state::AppState) or takes the part
//! of the `Report` it draws as a prop; none of them parses anything, and
//! none imports another (a file under `views/X` never names
//! `crate::views::Y`): they meet in `AppState`, in `crate::model` and in
//! the shared drawing code of `crate::draw`. `crate::page` places them.

pub mod compare;
pub mod device;
pub mod diagnosis;
pub mod drop_zone;
pub mod inputs;
pub mod modules;
pub mod notice;
pub mod padding;
pub mod progress;
pub mod ranks;
pub mod runtime;
pub mod share;
pub mod snapshot;
pub mod steps;
pub mod verdict;
