//! `Drive`: a member's work, one step along its usual path.

use super::*;

impl Run {
    /// The op a `Drive` stands for: the next step of the work of the first
    /// member from `who` on that holds a task, or a claim.
    pub(super) fn drive(&self, who: u8, choice: u8) -> Op {
        let m = self.rotate(who, |m| self.model.held(m).is_some());
        let who = m as u8;
        let Some(id) = self.model.held(m) else {
            return Op::ClaimNext { who };
        };
        let t = &self.model.tasks[&id];
        let fenced = |op| Op::Fenced {
            op,
            who,
            target: Target::Held,
            skew: 0,
            old_session: false,
        };
        // The position of `id` among the tasks an op picks from.
        let at = |f: &dyn Fn(&MTask) -> bool| {
            let ids = self.ids(f);
            ids.iter().position(|x| *x == id).unwrap_or(0) as u8
        };
        let pending_plan = self.requests(Some(true)).iter().position(|r| {
            matches!(self.model.requests[r].kind, reference::Kind::Plan { task, .. } if task == id)
        });
        if self.model.returned.contains(&id) {
            return Op::Wait { who };
        }
        match t.landing.map(|l| l.0) {
            _ if t.worktree == Some(false) => fenced(Fenced::OpenWorktree),
            None if self.model.needs_plan(id) => match pending_plan {
                Some(req) => Op::ReviewPlan {
                    req: req as u8,
                    approve: !choice.is_multiple_of(4),
                    by: None,
                },
                None if choice.is_multiple_of(2) => fenced(Fenced::SubmitPlan),
                None => fenced(Fenced::Complete),
            },
            None | Some(LandingStage::Conflict) => fenced(Fenced::Complete),
            Some(LandingStage::Checking) => Op::GatePass {
                task: at(&|t| stage(t) == Some(LandingStage::Checking)),
                stale: false,
            },
            Some(LandingStage::Review) => {
                let task = at(&|t| stage(t) == Some(LandingStage::Review));
                if choice.is_multiple_of(2) {
                    Op::Merge { task, by: None }
                } else {
                    Op::SendBack { task, by: None }
                }
            }
            Some(LandingStage::Queued | LandingStage::Blocked) => {
                let job = self.model.jobs.keys().position(|j| *j == id).unwrap_or(0) as u8;
                match choice % 4 {
                    0 => Op::LandBlocked { job },
                    1 => Op::LandRefused {
                        job,
                        conflict: choice % 8 == 1,
                        owner_waits: true,
                    },
                    _ => Op::Landed { job },
                }
            }
        }
    }
}
