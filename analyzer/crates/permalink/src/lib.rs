//! Encode a report into a self-contained URL fragment and decode it back, safely.
