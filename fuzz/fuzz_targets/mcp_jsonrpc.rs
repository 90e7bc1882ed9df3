#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| teamboard_fuzz_entry::mcp_jsonrpc(data));
