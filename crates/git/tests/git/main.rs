//! The crate against real git in temporary repositories. One test binary, one
//! module per part of the API.

mod support;

mod commit;
mod land;
mod repo;
mod state;
mod update;
mod version;
mod worktree;
