//! The data behind views that more than one view needs, computed from the
//! report with no markup (views meet here and in `AppState`, never in each
//! other).

pub mod padding;
