//! The OOM troubleshooting decision tree as data, evaluated on a report's facts.
