#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| teamboard_fuzz_entry::codex_app_server(data));
