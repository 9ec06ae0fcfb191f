//! Memory over time: step-series readers for training logs, allocator profiles, trends, spikes and leaks.
