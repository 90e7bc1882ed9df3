//! The page's actions: each is one protocol op, sent as the lead exactly as
//! teamctl sends it, so boardd's refusals reach the page in its own words.
//!
//! This table is the whole list of what the page may ask boardd to do; the
//! page's buttons (`assets/app.js`, `ACTIONS`) name these ops. A new action is
//! one line here and one entry there.
//!
//! Trap: `merge_task` answers only once the work has landed (the merge queue
//! and a rebase may take a while), so this server puts no deadline of its own
//! on an op: the page waits, and shows the answer or the refusal.
//!
//! Trap: reads (`get_task`, `events`, …) are not here on purpose: the page reads
//! through its own routes, and everything here changes the board.

/// The ops the page may send through `POST /api/op`.
pub const PAGE_OPS: &[&str] = &[
    "add_task",
    "add_dependency",
    "edit_task",
    "cancel_task",
    "retry_task",
    "merge_task",
    "send_back",
    "delete_task",
    "review_plan",
    "cancel_request",
    "send",
    "request_shutdown",
];

/// Whether the page may send `op`.
pub fn allowed(op: &str) -> bool {
    PAGE_OPS.contains(&op)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_page_op_is_a_protocol_op() {
        for op in super::PAGE_OPS {
            assert!(teamboard_protocol::Request::is_known_op(op), "{op}");
        }
        assert!(!super::allowed("register"));
    }
}
