//! The root package only exists so that the workspace-level `tests/` folder compiles.
//! Those tests drive the real `boardd` and `teamctl` binaries through the test kit,
//! `crates/testkit`.
