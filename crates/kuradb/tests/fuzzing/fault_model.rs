//! Random operations against a model over the fault-injecting file.

/// Runs the operations `data` encodes.
pub fn run(_data: &[u8]) {}
