use super::*;

fn dir_with_mode(parent: &Path, name: &str, mode: u32) -> PathBuf {
    let path = parent.join(name);
    std::fs::create_dir(&path).expect("create");
    std::fs::set_permissions(&path, Permissions::from_mode(mode)).expect("chmod");
    path
}

#[test]
fn only_a_socket_directory_of_boardds_own_is_made_private() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let own = dir_with_mode(tmp.path(), OWN_DIR_NAME, 0o755);
    let project = dir_with_mode(tmp.path(), "project", 0o755);
    let sticky_parent = dir_with_mode(tmp.path(), "sticky", 0o755);
    let sticky = dir_with_mode(&sticky_parent, OWN_DIR_NAME, 0o1777);
    for path in [&own, &project, &sticky] {
        socket_dir(path).expect("socket_dir");
    }
    let mode = |p: &Path| stat(p).expect("stat").mode() & 0o7777;
    assert_eq!(mode(&own), 0o700);
    assert_eq!(mode(&project), 0o755);
    assert_eq!(mode(&sticky), 0o1777);
    let missing = tmp.path().join("a").join("b");
    socket_dir(&missing).expect("socket_dir");
    assert_eq!(mode(&missing), 0o700);
}

#[test]
fn files_are_made_private_whether_new_or_not() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let new = tmp.path().join("new");
    file(&new).expect("file");
    let old = tmp.path().join("old");
    std::fs::write(&old, "kept").expect("write");
    std::fs::set_permissions(&old, Permissions::from_mode(0o644)).expect("chmod");
    file(&old).expect("file");
    existing_file(&tmp.path().join("absent")).expect("nothing to do");
    let mode = |p: &Path| stat(p).expect("stat").mode() & 0o777;
    assert_eq!(mode(&new), 0o600);
    assert_eq!(mode(&old), 0o600);
    assert_eq!(std::fs::read_to_string(&old).expect("read"), "kept");
}
