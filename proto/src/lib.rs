//! Trimmed upstream protobuf schemas (XSpace, HloProto) and the permalink schema, with prost-generated types.
