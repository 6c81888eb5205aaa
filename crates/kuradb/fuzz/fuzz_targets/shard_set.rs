#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kuradb_fuzz::fuzzing::files::shard_set(data));
