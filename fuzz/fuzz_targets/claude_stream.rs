#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| teamboard_fuzz_entry::claude_stream(data));
