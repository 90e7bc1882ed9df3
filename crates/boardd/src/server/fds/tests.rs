use super::*;

#[test]
fn capacity_keeps_a_reserve_and_at_least_one_connection() {
    assert_eq!(capacity(Some(1024)), 1024 - RESERVED);
    assert_eq!(capacity(Some(64)), 64 - RESERVED);
    assert_eq!(capacity(Some(10)), 1);
    assert_eq!(capacity(None), usize::MAX);
}
