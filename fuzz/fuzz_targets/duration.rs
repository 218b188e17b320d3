#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| redlease_fuzz::duration(data));
