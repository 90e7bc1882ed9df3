//! What the agent starts a phase with: the task's session to resume (or the
//! messages-only conversation's, unless it has worn out), and the first input.

use super::AgentRun;
use crate::member::MemberServer;
use crate::runtime::Brief;
use crate::runtime::sessions::MESSAGES;
use crate::teammate::Teammate;
use teamboard_protocol::member::MEMBER_SOCKET_ENV;

/// Now, in ms since the epoch, for `agent/sessions.json`.
pub(super) fn now_ms() -> u64 {
    u64::try_from(teamboard_protocol::now_ms()).unwrap_or(0)
}

impl AgentRun {
    /// What the agent starts with: the held task's opening (or the note that
    /// there is none), then the messages read for it.
    pub(super) fn brief(&mut self, t: &mut Teammate, member: &MemberServer) -> Brief {
        let kind = self.spec.kind;
        let key = t.task_id().unwrap_or(MESSAGES);
        let entry = self.sessions.get(key, kind);
        let worn_out = match &entry {
            Some(e) if key == MESSAGES => e.worn_out(now_ms()).map(|why| (e.session.clone(), why)),
            _ => None,
        };
        let resume = entry.filter(|_| worn_out.is_none()).map(|e| e.session);
        let mut parts = Vec::new();
        match t.held() {
            Some(_) => {
                if resume.is_some() {
                    parts.push(crate::prompts::agent::RESUMED.to_string());
                }
                parts.push(self.opening.clone());
            }
            None => parts.push(crate::prompts::agent::MESSAGES_ONLY.to_string()),
        }
        parts.append(&mut self.inbox);
        let mut mcp = self.mcp.clone();
        mcp.env.push((
            MEMBER_SOCKET_ENV.to_string(),
            member.path().display().to_string(),
        ));
        if let Some((old, why)) = worn_out {
            t.lifecycle(&format!(
                "agent: a new conversation about messages, not {old} ({why})"
            ));
        }
        let cfg = t.cfg();
        Brief {
            task: key,
            cwd: t.env().workdir,
            resume,
            identity: crate::prompts::agent::identity(
                &cfg.name,
                &cfg.role,
                &cfg.team,
                t.worktree_line().as_deref(),
            ),
            prompt: parts.join("\n\n"),
            plan_first: t.held().is_some_and(|h| h.plan_pending()),
            mcp: Some(mcp),
            // Set by the phase, once boardd said what is left.
            usd_cap: None,
        }
    }
}
