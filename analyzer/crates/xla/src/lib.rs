//! Decode XProf xplane.pb and xla.HloProto; the Memory Viewer analysis identical to XProf's.
