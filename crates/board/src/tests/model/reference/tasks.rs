//! The lead's task ops: add, depend, edit, delete, cancel, retry.

use super::*;

impl Model {
    pub fn add(&mut self, new: MTask) -> Res<TaskId> {
        if new.review && new.no_worktree {
            return Err(ErrorCode::InvalidArgs);
        }
        if new.blocked_by.iter().any(|b| !self.tasks.contains_key(b)) {
            return Err(ErrorCode::NotFound);
        }
        let id = self.next_id;
        self.next_id += 1;
        let mut new = new;
        new.blocked_by.sort_unstable();
        new.blocked_by.dedup();
        self.tasks.insert(id, new);
        Ok(id)
    }

    /// Whether `from` waits for `target`, directly or not.
    pub(super) fn waits_for(&self, from: TaskId, target: TaskId) -> bool {
        let (mut stack, mut seen) = (vec![from], BTreeSet::new());
        while let Some(id) = stack.pop() {
            if id == target {
                return true;
            }
            if seen.insert(id) {
                stack.extend(&self.tasks[&id].blocked_by);
            }
        }
        false
    }

    pub fn depend(&mut self, id: TaskId, on: &[TaskId]) -> Res {
        let t = self.task(id)?;
        if t.status != TaskStatus::Pending {
            return Err(ErrorCode::InvalidState);
        }
        for b in on {
            if !self.tasks.contains_key(b) {
                return Err(ErrorCode::NotFound);
            }
            if self.waits_for(*b, id) {
                return Err(ErrorCode::Cycle);
            }
        }
        let t = self.task_mut(id);
        t.blocked_by.extend(on);
        t.blocked_by.sort_unstable();
        t.blocked_by.dedup();
        Ok(())
    }

    /// The lead changes a pending task no one holds: its priority, or its
    /// role (`Some(None)`: anyone).
    pub fn edit(
        &mut self,
        lead: bool,
        id: TaskId,
        priority: Option<i64>,
        role: Option<Option<usize>>,
    ) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        if t.status != TaskStatus::Pending || t.owner.is_some() {
            return Err(ErrorCode::InvalidState);
        }
        if priority.is_none() && role.is_none() {
            return Err(ErrorCode::InvalidArgs);
        }
        let t = self.task_mut(id);
        t.priority = priority.unwrap_or(t.priority);
        t.role = role.unwrap_or(t.role);
        Ok(())
    }

    /// The lead removes a pending task that no one ever claimed and nothing
    /// waits for.
    pub fn delete(&mut self, lead: bool, id: TaskId) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        let free = t.status == TaskStatus::Pending && t.owner.is_none();
        let worked = t.attempts > 0 || t.worktree.is_some();
        let waited_for = self.tasks.values().any(|d| d.blocked_by.contains(&id));
        if !free || worked || waited_for {
            return Err(ErrorCode::InvalidState);
        }
        self.tasks.remove(&id);
        Ok(())
    }

    pub fn cancel(&mut self, lead: bool, id: TaskId) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        if matches!(t.status, TaskStatus::Completed | TaskStatus::Cancelled) {
            return Err(ErrorCode::InvalidState);
        }
        self.task_mut(id).owner = None;
        self.set_status(id, TaskStatus::Cancelled);
        Ok(())
    }

    pub fn retry(&mut self, lead: bool, id: TaskId) -> Res {
        if !lead {
            return Err(ErrorCode::PermissionDenied);
        }
        let t = self.task(id)?;
        let stage = t.landing.map(|l| l.0);
        match (t.status, stage) {
            (TaskStatus::Pending, Some(LandingStage::Conflict)) => {
                self.task_mut(id).landing = None;
                Ok(())
            }
            // Looked at again: the job the queue holds is run again.
            (TaskStatus::InProgress, Some(LandingStage::Blocked)) => Ok(()),
            // Checked and landed again for the owner that still holds it.
            (TaskStatus::InProgress, Some(LandingStage::Conflict)) => {
                self.gate(id);
                Ok(())
            }
            (TaskStatus::Failed | TaskStatus::Cancelled, _) => {
                let t = self.task_mut(id);
                t.owner = None;
                t.attempts = 0;
                self.set_status(id, TaskStatus::Pending);
                Ok(())
            }
            _ => Err(ErrorCode::InvalidState),
        }
    }
}
