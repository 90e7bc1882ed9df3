//! Every stored fuzz input, run through its target's entry: the corpora that
//! `cargo xtask fuzz` grew (`fuzz/corpus/<target>/`) and the inputs that once
//! crashed a target (`fuzz/regressions/<target>/`). An input that panics fails
//! the test, named, with the command that replays it under libFuzzer.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test"
)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use teamboard_fuzz_entry::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `dir`, sorted; none when it does not exist.
fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_stored_input_runs_without_a_panic() {
    let root = fuzz_dir();
    let mut failed = Vec::new();
    for (name, entry) in TARGETS {
        let corpus = files(&root.join("corpus").join(name));
        assert!(
            !corpus.is_empty(),
            "fuzz/corpus/{name}/ has no seeds: every target keeps its corpus"
        );
        let regressions = files(&root.join("regressions").join(name));
        for file in corpus.iter().chain(&regressions) {
            let data = std::fs::read(file).expect("a corpus file");
            if catch_unwind(AssertUnwindSafe(|| entry(&data))).is_err() {
                failed.push(format!(
                    "{}: replay with `cd fuzz && cargo +nightly fuzz run -s none {name} {}`",
                    file.display(),
                    file.display()
                ));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "inputs that panic:\n{}",
        failed.join("\n")
    );
}

#[test]
fn every_target_has_a_fuzz_target_and_a_corpus_directory() {
    let root = fuzz_dir();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("fuzz/Cargo.toml");
    for (name, _) in TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] {name}"
        );
        let target = std::fs::read_to_string(root.join("fuzz_targets").join(format!("{name}.rs")))
            .expect("the fuzz target's source");
        assert!(
            target.contains(&format!("teamboard_fuzz_entry::{name}(")),
            "fuzz_targets/{name}.rs does not call its entry"
        );
    }
}
