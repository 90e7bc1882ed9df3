//! The lead's credential of each boardd this process started or knows,
//! found by its socket.
//!
//! boardd keeps the lead's credential in its state directory (`lead.key`), and
//! a client knows a boardd by its socket. Whatever starts a boardd here notes
//! which state directory serves which socket: [`Boardd`](crate::Boardd) does
//! it for the processes it starts, the test kit for its in-process daemons.
//! Then a bench, the soak or a test names only the socket. A socket nobody
//! noted (a client in a child process) falls back to `$TEAMBOARD_LEAD_KEY` or
//! the default state directory, as teamctl does.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use teamboard_protocol::Credential;
use teamboard_protocol::lead_key::{
    LEAD_KEY_ENV, LEAD_KEY_FILE, LeadKeyError, lead_key_path as default_path, read_lead_key,
};

/// Socket → state directory of the daemon that serves it.
static DAEMONS: Mutex<Option<HashMap<PathBuf, PathBuf>>> = Mutex::new(None);

/// Notes that the daemon on `socket` keeps its state in `state_dir`. `replace`:
/// over what was noted before (a daemon that answered on the socket owns it;
/// one merely started there may be refused it).
pub fn note_daemon(socket: &Path, state_dir: &Path, replace: bool) {
    let mut daemons = DAEMONS.lock().unwrap_or_else(PoisonError::into_inner);
    let daemons = daemons.get_or_insert_with(HashMap::new);
    if replace || !daemons.contains_key(socket) {
        daemons.insert(socket.to_path_buf(), state_dir.to_path_buf());
    }
}

/// The lead's credential file of the daemon on `socket`.
pub fn lead_key_path(socket: &Path) -> PathBuf {
    let daemons = DAEMONS.lock().unwrap_or_else(PoisonError::into_inner);
    match daemons.as_ref().and_then(|d| d.get(socket)) {
        Some(state_dir) => state_dir.join(LEAD_KEY_FILE),
        None => default_path(None),
    }
}

/// The lead's credential of the daemon on `socket`.
pub fn lead_key(socket: &Path) -> Result<Credential, LeadKeyError> {
    read_lead_key(&lead_key_path(socket))
}

/// The environment that points a child process at the daemon's credential.
pub fn lead_key_env(socket: &Path) -> (&'static str, PathBuf) {
    (LEAD_KEY_ENV, lead_key_path(socket))
}
