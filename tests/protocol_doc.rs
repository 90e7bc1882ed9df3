//! `docs/protocol.md` is what a client in another language is written from, so
//! every op the daemon serves has its own section there, and every request kind
//! and state is described.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "test code: a panic fails the test, and the harness captures what it prints"
)]

use strum::VariantArray;
use teamboard_protocol::{Request, RequestKind, RequestState};

fn doc() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_op_has_a_section_and_a_row_in_the_summary() {
    let doc = doc();
    let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with("### 8.")).collect();
    for op in Request::OPS {
        let tag = format!("`{op}`");
        assert!(
            headings
                .iter()
                .any(|h| h.split_whitespace().nth(2) == Some(tag.as_str())),
            "no `### 8.N {tag}` section in docs/protocol.md"
        );
        assert!(
            doc.lines().any(|l| l.starts_with(&format!("| {tag} |"))),
            "{tag} is missing from the summary table of §8"
        );
    }
}

#[test]
fn request_kinds_and_states_are_described() {
    let doc = doc();
    for kind in RequestKind::VARIANTS {
        assert!(doc.contains(&format!("`{kind}`")), "{kind:?}");
    }
    for state in RequestState::VARIANTS {
        assert!(
            doc.contains(&format!("| `{state}` |")),
            "no row for the request state {state:?}"
        );
    }
    assert!(
        doc.contains("| `plan_required` |"),
        "the plan_required error code"
    );
}
