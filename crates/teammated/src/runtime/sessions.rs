//! Which agent session belongs to which task: `agent/sessions.json` in the
//! teammate's state directory.
//!
//! One session per task, kept for the task: a re-delivery, a restart of
//! teammated or a re-claim by the same teammate resumes it. The file is small
//! (one entry per task this teammate worked on with an agent) and written whole,
//! through a temporary file and a rename, so a crash leaves the old or the new
//! version, never half of one. A file that cannot be read is set aside, not
//! trusted: the cost is a new session, never a wrong one.

use crate::runtime::RuntimeKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use teamboard_protocol::TaskId;

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
            .filter(|e| e.runtime == runtime.as_str())
    }

    /// Records that the agent started for `task` with `session`, resumed or new.
    pub fn started(
        &self,
        task: TaskId,
        runtime: RuntimeKind,
        session: &str,
        resumed: bool,
    ) -> std::io::Result<Entry> {
        let mut file = self.read();
        let key = task.to_string();
        let mut entry = match file.tasks.remove(&key) {
            Some(e) if e.runtime == runtime.as_str() => e,
            _ => Entry {
                runtime: runtime.as_str().to_string(),
                session: session.to_string(),
                starts: 0,
                resumed: 0,
            },
        };
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
        s.started(7, RuntimeKind::Claude, "abc", false).unwrap();
        let e = s.started(7, RuntimeKind::Claude, "abc", true).unwrap();
        assert_eq!((e.starts, e.resumed), (2, 1));
        assert_eq!(s.get(7, RuntimeKind::Claude).unwrap().session, "abc");
        // Another runtime's session is not this one's.
        assert_eq!(s.get(7, RuntimeKind::Codex), None);
    }

    #[test]
    fn a_broken_file_is_set_aside_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let s = Sessions::new(dir.path());
        std::fs::write(s.path(), "{not json").unwrap();
        assert_eq!(s.get(1, RuntimeKind::Claude), None);
        assert!(dir.path().join("sessions.json.bad").exists());
        s.started(1, RuntimeKind::Claude, "x", false).unwrap();
        assert_eq!(s.get(1, RuntimeKind::Claude).unwrap().session, "x");
    }
}
