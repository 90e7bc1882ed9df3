use crate::support::run_in_child;
use std::os::unix::fs::PermissionsExt;
use teamboard_git::{GitError, parse_version, version};

#[test]
fn version_strings_of_every_vendor_parse() {
    let cases = [
        ("git version 2.47.3", (2, 47, 3)),
        ("git version 2.39.2 (Apple Git-143)", (2, 39, 2)),
        ("2.47.3.windows.1", (2, 47, 3)),
        ("git version 2.45.GIT", (2, 45, 0)),
        ("git version 2.25\n", (2, 25, 0)),
        ("git version 2.43.0-rc1", (2, 43, 0)),
    ];
    for (text, (major, minor, patch)) in cases {
        let v = parse_version(text).unwrap_or_else(|| panic!("{text:?} did not parse"));
        assert_eq!(
            (v.major, v.minor, v.patch),
            (major, minor, patch),
            "{text:?}"
        );
        assert_eq!(v.text, text.trim());
    }
    for junk in ["", "git version", "hub version x.y", "git version two"] {
        assert_eq!(parse_version(junk), None, "{junk:?}");
    }
}

#[test]
fn the_installed_git_is_recent_enough() {
    let v = version().expect("git is installed in the test environment");
    assert!((v.major, v.minor) >= (2, 25), "{v:?}");
    assert!(v.text.starts_with("git version"), "{v:?}");
}

#[test]
fn a_missing_git_is_reported_with_what_to_install() {
    let empty = tempfile::tempdir().expect("temp dir");
    run_in_child("version::child_without_git", &[("PATH", empty.path())], &[]);
}

#[test]
#[ignore = "run by a_missing_git_is_reported_with_what_to_install, with an empty PATH"]
fn child_without_git() {
    let err = version().expect_err("no git on PATH");
    assert!(matches!(err, GitError::Missing), "{err:?}");
    assert_eq!(
        err.to_string(),
        "git was not found on PATH; install git 2.25 or newer"
    );
}

#[test]
fn an_old_git_is_refused_with_the_version_needed() {
    let bin = tempfile::tempdir().expect("temp dir");
    let fake = bin.path().join("git");
    std::fs::write(&fake, "#!/bin/sh\necho 'git version 2.20.1'\n").expect("write fake git");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    run_in_child("version::child_with_old_git", &[("PATH", bin.path())], &[]);
}

#[test]
#[ignore = "run by an_old_git_is_refused_with_the_version_needed, with git 2.20 first on PATH"]
fn child_with_old_git() {
    let err = version().expect_err("git 2.20 is too old");
    assert!(
        matches!(&err, GitError::TooOld { found, need: "2.25" } if found == "2.20.1"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "git 2.20.1 is too old; teamboard needs git 2.25 or newer"
    );
}
