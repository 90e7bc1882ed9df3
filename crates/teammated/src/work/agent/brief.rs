//! What the agent starts a phase with: the task's session to resume (or the
//! messages-only conversation's, unless it has worn out), and the first input.

use super::*;
use crate::runtime::sessions::MESSAGES;

/// Now, in ms since the epoch, for `agent/sessions.json`.
pub(super) fn now_ms() -> u64 {
    u64::try_from(teamboard_protocol::now_ms()).unwrap_or(0)
}

impl Teammate {
    /// What the agent starts with. `None` when there is nothing to do.
    pub(super) fn brief(&mut self, member: &MemberServer) -> Option<Brief> {
        let setup = self.agent.as_ref()?;
        let kind = setup.spec.kind;
        let key = self.task_id().unwrap_or(MESSAGES);
        let entry = setup.sessions.get(key, kind);
        let worn_out = match &entry {
            Some(e) if key == MESSAGES => e.worn_out(now_ms()).map(|why| (e.session.clone(), why)),
            _ => None,
        };
        let resume = entry.filter(|_| worn_out.is_none()).map(|e| e.session);
        let mut parts = Vec::new();
        if let Some(held) = &self.held {
            if resume.is_some() {
                parts.push(crate::prompts::agent::RESUMED.to_string());
            }
            parts.push(held.opening.clone());
        }
        let inbox = std::mem::take(&mut self.agent_inbox);
        if self.held.is_none() {
            parts.push(crate::prompts::agent::MESSAGES_ONLY.to_string());
        }
        parts.extend(inbox);
        let cwd = self.local.workdir.clone();
        let mut mcp = setup.mcp.clone();
        mcp.env.push((
            MEMBER_SOCKET_ENV.to_string(),
            member.path().display().to_string(),
        ));
        let plan_first = self
            .held
            .as_ref()
            .is_some_and(|h| h.needs_plan && !matches!(h.plan, PlanState::Approved { .. }));
        if let Some((old, why)) = worn_out {
            self.log(
                EntryKind::Lifecycle,
                None,
                false,
                &format!("agent: a new conversation about messages, not {old} ({why})"),
            );
        }
        Some(Brief {
            task: key,
            cwd,
            resume,
            identity: crate::prompts::agent::identity(
                &self.cfg.name,
                &self.cfg.role,
                &self.cfg.team,
                self.ctx.identity.worktree.as_deref(),
            ),
            prompt: parts.join("\n\n"),
            plan_first,
            mcp: Some(mcp),
        })
    }
}
