#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kuradb_fuzz::fuzzing::reference::reference_file(data));
