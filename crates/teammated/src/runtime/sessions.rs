//! Which agent session belongs to which task: `agent/sessions.json` in the
//! teammate's state directory.
//!
//! One session per task, kept for the task: a re-delivery, a restart of
//! teammated or a re-claim by the same teammate resumes it. The file is small
//! (one entry per task this teammate worked on with an agent) and written whole,
//! through a temporary file and a rename, so a crash leaves the old or the new
//! version, never half of one. A file that cannot be read is set aside, not
//! trusted: the cost is a new session, never a wrong one.
//!
//! Key [`MESSAGES`] is not a task: it is the conversation a teammate that holds
//! no task has with its agent about messages. It is resumed from one such phase
//! to the next, so that the agent remembers what it was told, but not for the
//! teammate's whole life: every resume sends the whole conversation again, so
//! each phase would pay for all the earlier ones. [`Entry::worn_out`] says when
//! to start it afresh.

use crate::runtime::RuntimeKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use teamboard_protocol::TaskId;

/// The key of the conversation about messages alone (no task held).
pub const MESSAGES: TaskId = 0;
/// Decision: the messages-only conversation is started afresh once it has
/// been started this many times (about ten exchanges with the lead), or is
/// older than [`MESSAGES_MAX_AGE`] (yesterday's messages rarely matter today):
/// the cost of a phase stays bounded, the last exchanges stay remembered, and
/// what was said before is in the transcript. Tasks are never rotated: a
/// task's session is its work.
pub const MESSAGES_MAX_STARTS: u32 = 10;
/// See [`MESSAGES_MAX_STARTS`].
pub const MESSAGES_MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// One task's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    pub runtime: String,
    pub session: String,
    /// Starts of the agent for this task: 1 for the first, +1 for every resume.
    #[serde(default)]
    pub starts: u32,
    /// Of those, how many resumed the session (the rest started a new one).
    #[serde(default)]
    pub resumed: u32,
    /// When `session` was opened new, in ms since the epoch; 0 when not known
    /// (an entry written before this was kept).
    #[serde(default)]
    pub opened_ms: u64,
    /// Starts with `session` itself: 1 when it was opened, +1 for every resume.
    #[serde(default)]
    pub session_starts: u32,
}

impl Entry {
    /// How old `session` is at `now_ms`; `None` when not known.
    pub fn age(&self, now_ms: u64) -> Option<Duration> {
        (self.opened_ms > 0).then(|| Duration::from_millis(now_ms.saturating_sub(self.opened_ms)))
    }

    /// Why the messages-only conversation should not be resumed again at
    /// `now_ms`, or `None` while it may. Traps: the bound counts the starts of
    /// this session (`session_starts`), not the key's (`starts`), or every
    /// phase past it would start afresh; and a session of unknown age (kept
    /// by an older teammated) is started afresh once rather than kept forever.
    pub fn worn_out(&self, now_ms: u64) -> Option<String> {
        match self.age(now_ms) {
            None => Some("its age is not known".into()),
            Some(age) if age > MESSAGES_MAX_AGE => Some(format!(
                "it is older than {} h",
                MESSAGES_MAX_AGE.as_secs() / 3600
            )),
            Some(_) if self.session_starts >= MESSAGES_MAX_STARTS => {
                Some(format!("it has been started {} times", self.session_starts))
            }
            Some(_) => None,
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    tasks: BTreeMap<String, Entry>,
}

/// The store. Reads the file on every lookup: it is tiny, and so is the number
/// of lookups (one per agent start).
#[derive(Debug, Clone)]
pub struct Sessions {
    path: PathBuf,
}

impl Sessions {
    pub fn new(agent_dir: &Path) -> Sessions {
        Sessions {
            path: agent_dir.join("sessions.json"),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The session this task had with `runtime`, if any.
    pub fn get(&self, task: TaskId, runtime: RuntimeKind) -> Option<Entry> {
        self.read()
            .tasks
            .remove(&task.to_string())
            .filter(|e| e.runtime == <&str>::from(runtime))
    }

    /// Records that the agent started for `task` with `session`, resumed or
    /// new, at `now_ms`.
    pub fn started(
        &self,
        task: TaskId,
        runtime: RuntimeKind,
        session: &str,
        resumed: bool,
        now_ms: u64,
    ) -> std::io::Result<Entry> {
        let mut file = self.read();
        let key = task.to_string();
        let mut entry = match file.tasks.remove(&key) {
            Some(e) if e.runtime == <&str>::from(runtime) => e,
            _ => Entry {
                runtime: runtime.to_string(),
                session: session.to_string(),
                starts: 0,
                resumed: 0,
                opened_ms: now_ms,
                session_starts: 0,
            },
        };
        if resumed && entry.session == session {
            entry.session_starts += 1;
        } else {
            entry.opened_ms = now_ms;
            entry.session_starts = 1;
        }
        entry.session = session.to_string();
        entry.starts += 1;
        if resumed {
            entry.resumed += 1;
        }
        file.tasks.insert(key, entry.clone());
        self.write(&file)?;
        Ok(entry)
    }

    fn read(&self) -> File {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(_) => return File::default(),
        };
        match serde_json::from_str(&text) {
            Ok(f) => f,
            Err(e) => {
                let aside = self.path.with_extension("json.bad");
                tracing::warn!(
                    path = %self.path.display(), error = %e,
                    "the agent sessions file does not parse; set aside as {}, tasks start new sessions",
                    aside.display()
                );
                let _ = std::fs::rename(&self.path, aside);
                File::default()
            }
        }
    }

    fn write(&self, file: &File) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(file).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_keeps_its_session_and_counts_resumes() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::new(dir.path());
        assert_eq!(s.get(7, RuntimeKind::Claude), None);
        s.started(7, RuntimeKind::Claude, "abc", false, 1_000)
            .unwrap();
        let e = s
            .started(7, RuntimeKind::Claude, "abc", true, 5_000)
            .unwrap();
        assert_eq!((e.starts, e.resumed), (2, 1));
        assert_eq!((e.session_starts, e.opened_ms), (2, 1_000));
        assert_eq!(e.age(6_000), Some(Duration::from_secs(5)));
        assert_eq!(s.get(7, RuntimeKind::Claude).unwrap().session, "abc");
        // Another runtime's session is not this one's.
        assert_eq!(s.get(7, RuntimeKind::Codex), None);
        // A new session (the old one could not be resumed) is counted anew;
        // the task's counts go on.
        let e = s
            .started(7, RuntimeKind::Claude, "def", false, 9_000)
            .unwrap();
        assert_eq!((e.starts, e.resumed), (3, 1));
        assert_eq!((e.session_starts, e.opened_ms), (1, 9_000));
    }

    #[test]
    fn the_messages_conversation_wears_out_by_starts_or_age() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::new(dir.path());
        let hour = 3_600_000;
        let mut e = s
            .started(MESSAGES, RuntimeKind::Acp, "m1", false, hour)
            .unwrap();
        for _ in 1..MESSAGES_MAX_STARTS {
            assert_eq!(e.worn_out(2 * hour), None, "{e:?}");
            e = s
                .started(MESSAGES, RuntimeKind::Acp, "m1", true, 2 * hour)
                .unwrap();
        }
        let why = e.worn_out(2 * hour).expect("worn out by starts");
        assert!(why.contains("started 10 times"), "{why}");
        // Its successor starts the count again.
        let e = s
            .started(MESSAGES, RuntimeKind::Acp, "m2", false, 3 * hour)
            .unwrap();
        assert_eq!(e.worn_out(3 * hour), None, "{e:?}");
        let day = MESSAGES_MAX_AGE.as_millis() as u64;
        assert_eq!(e.worn_out(3 * hour + day), None);
        let why = e.worn_out(3 * hour + day + 1).expect("worn out by age");
        assert!(why.contains("older than 24 h"), "{why}");
    }

    #[test]
    fn an_entry_from_before_has_no_age() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::new(dir.path());
        std::fs::write(
            s.path(),
            r#"{"tasks":{"0":{"runtime":"acp","session":"old","starts":4,"resumed":3}}}"#,
        )
        .unwrap();
        let e = s.get(MESSAGES, RuntimeKind::Acp).unwrap();
        assert_eq!((e.session_starts, e.age(1_000)), (0, None));
        assert!(e.worn_out(1_000).is_some());
    }

    #[test]
    fn a_broken_file_is_set_aside_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::new(dir.path());
        std::fs::write(s.path(), "{not json").unwrap();
        assert_eq!(s.get(1, RuntimeKind::Claude), None);
        assert!(dir.path().join("sessions.json.bad").exists());
        s.started(1, RuntimeKind::Claude, "x", false, 1).unwrap();
        assert_eq!(s.get(1, RuntimeKind::Claude).unwrap().session, "x");
    }
}
