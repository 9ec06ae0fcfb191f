//! Parse XLA dump folders: HLO text, buffer assignment, live ranges, memory usage report; module analysis from text alone.
