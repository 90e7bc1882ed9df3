//! The lead's key file and what each credential proves.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

#[test]
fn the_lead_key_is_made_once_0600_and_read_back_the_same() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = Keys::load(dir.path(), vec![], None).expect("first start");
    let path = dir.path().join(LEAD_KEY_FILE);
    assert_eq!(mode(&path), 0o600);
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(text.trim().len(), 64, "{text}");
    let lead = Credential::new(text.trim());
    assert_eq!(first.authority("t", "lead", Some(&lead)), Authority::Lead);
    // Loosened by hand: tightened again, and the same key.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let again = Keys::load(dir.path(), vec![], None).expect("second start");
    assert_eq!(mode(&path), 0o600);
    assert_eq!(again.authority("t", "bob", Some(&lead)), Authority::Lead);
}

#[test]
fn a_member_credential_vouches_for_its_name_in_its_team_until_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut keys = Keys::load(dir.path(), vec![], None).expect("load");
    let (alice, row) = keys.issue("t", "alice").expect("issue");
    assert_eq!((row.team.as_str(), row.name.as_str()), ("t", "alice"));
    let a = keys.authority("t", "alice", Some(&alice));
    assert!(matches!(a, Authority::Member(_)));
    assert!(keys.check(&a, "t", "alice").is_ok());
    for (team, name) in [("t", "lead"), ("t", "bob"), ("u", "alice")] {
        let other = keys.authority(team, name, Some(&alice));
        assert_eq!(
            other,
            Authority::Nobody { presented: true },
            "{team}/{name}"
        );
        let err = keys.check(&other, team, name).expect_err("refused");
        assert_eq!(err.code, ErrorCode::PermissionDenied);
        assert!(err.message.contains(LEAD_KEY_FILE), "{}", err.message);
    }
    // A new registration revokes the old credential, on a session opened with it too.
    let (again, row) = keys.issue("t", "alice").expect("issue");
    assert_ne!(again, alice);
    assert!(keys.check(&a, "t", "alice").is_err());
    assert_eq!(
        keys.authority("t", "alice", Some(&alice)),
        Authority::Nobody { presented: true }
    );
    // What the store kept comes back after a restart.
    let restored = Keys::load(dir.path(), vec![row], None).expect("load");
    assert!(matches!(
        restored.authority("t", "alice", Some(&again)),
        Authority::Member(_)
    ));
    assert_eq!(
        restored.authority("t", "alice", Some(&alice)),
        Authority::Nobody { presented: true }
    );
}

#[test]
fn no_credential_is_refused_with_where_the_lead_key_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let keys = Keys::load(dir.path(), vec![], None).expect("load");
    let none = keys.authority("t", "lead", None);
    let err = keys.check(&none, "t", "lead").expect_err("refused");
    let path = dir.path().join(LEAD_KEY_FILE).display().to_string();
    assert!(err.message.contains("did not present"), "{}", err.message);
    assert!(err.message.contains(&path), "{}", err.message);
}

#[test]
fn a_token_vouches_for_its_name_in_its_team_until_revoked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut keys = Keys::load(dir.path(), vec![], None).expect("load");
    let (issued, change) = keys.tokens.create("t", "alice", 1234).expect("create");
    assert_eq!(issued.token.as_str().len(), 64);
    let a = keys.authority("t", "alice", Some(&issued.token));
    assert!(matches!(a, Authority::Token(_)), "{a:?}");
    assert!(keys.check(&a, "t", "alice").is_ok());
    for (team, name) in [("t", "lead"), ("t", "bob"), ("u", "alice")] {
        let other = keys.authority(team, name, Some(&issued.token));
        assert_eq!(
            other,
            Authority::Nobody { presented: true },
            "{team}/{name}"
        );
    }
    // A registration with the lead's key issues alice a credential of her
    // own, and leaves her token alone.
    keys.issue("t", "alice").expect("issue");
    assert!(keys.check(&a, "t", "alice").is_ok());
    // What the store kept comes back after a restart.
    let crate::store::TokenChange::Put(row) = change else {
        panic!("a create puts a row")
    };
    let restored = Keys::load(dir.path(), vec![], None)
        .expect("load")
        .with_tokens(vec![row]);
    assert!(matches!(
        restored.authority("t", "alice", Some(&issued.token)),
        Authority::Token(_)
    ));
    // Revoked: refused on the session opened with it, and for new ones.
    let (entry, _) = keys.tokens.revoke("t", "alice").expect("revoke");
    assert_eq!((entry.name.as_str(), entry.created_ms), ("alice", 1234));
    let err = keys.check(&a, "t", "alice").expect_err("revoked");
    assert_eq!(err.code, ErrorCode::PermissionDenied);
    assert!(err.message.contains("revoked"), "{}", err.message);
    assert_eq!(
        keys.authority("t", "alice", Some(&issued.token)),
        Authority::Nobody { presented: true }
    );
    assert!(keys.tokens.revoke("t", "alice").is_none());
    assert!(keys.tokens.list("t").is_empty());
}
