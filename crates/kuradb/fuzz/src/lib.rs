//! The fuzz targets' bodies live in `tests/fuzzing/`, which the regression
//! test `tests/fuzz_regressions.rs` shares, so a crash found here replays
//! there on stable with the same checks.

#[path = "../../tests/fuzzing/mod.rs"]
pub mod fuzzing;
