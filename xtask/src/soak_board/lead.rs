//! The lead driver: adds tasks (some blocked by earlier ones, some needing a
//! plan), sends messages, asks driver members to shut down (they refuse),
//! reviews plans, cancels now and then, and reads its own inbox.

use super::acks::What;
use super::client::{Driver, Outcome};
use super::inbox;
use super::tasks;
use teamboard_protocol::request::{ListRequestsArgs, ShutdownArgs};
use teamboard_protocol::{MessageKind, RequestKind, RequestState, TaskId, TaskStatus};

/// Ready tasks beyond which the lead adds no more: the board stays busy
/// without growing through the run. Ready ones, not pending ones: tasks
/// blocked by a failed or cancelled task stay pending for good, and counting
/// them would starve the team.
const MAX_READY: usize = 16;
/// How far back the lead looks for blockers and cancels.
const RECENT: usize = 20;

pub struct Lead {
    pub d: Driver,
    /// Driver members (they refuse shutdowns) and teammates.
    drivers: Vec<String>,
    teammates: Vec<String>,
    added: Vec<TaskId>,
    ready: usize,
    steps: u64,
}

impl Lead {
    pub fn new(d: Driver, drivers: Vec<String>, teammates: Vec<String>) -> Lead {
        Lead {
            d,
            drivers,
            teammates,
            added: Vec::new(),
            ready: 0,
            steps: 0,
        }
    }

    pub async fn run(mut self) -> anyhow::Result<Driver> {
        while !self.d.stopping() {
            if self.steps.is_multiple_of(10) {
                self.count_ready().await?;
            }
            self.steps += 1;
            match self.d.rng.u32(0..100) {
                0..40 => self.add_task().await?,
                40..55 => self.send().await?,
                55..60 => self.request_shutdown().await?,
                60..80 => self.review_plans().await?,
                80..83 => self.cancel().await?,
                _ => inbox::drain(&mut self.d).await?,
            }
            self.d.pause(10, 60).await;
        }
        inbox::drain(&mut self.d).await?;
        Ok(self.d)
    }

    async fn count_ready(&mut self) -> anyhow::Result<()> {
        let c = self.d.conn.client().await?;
        let r = c.list_tasks(Some(TaskStatus::Pending)).await;
        if let Outcome::Acked(t) = self.d.outcome(r) {
            self.ready = t.iter().filter(|t| t.ready).count();
        }
        Ok(())
    }

    fn recent(&self) -> Vec<TaskId> {
        self.added[self.added.len().saturating_sub(RECENT)..].to_vec()
    }

    async fn add_task(&mut self) -> anyhow::Result<()> {
        if self.ready >= MAX_READY {
            return Ok(());
        }
        let for_teammate = !self.teammates.is_empty() && self.d.rng.bool();
        let recent = self.recent();
        let n = self.added.len() + 1;
        let task = tasks::new_task(&mut self.d.rng, n, for_teammate, &recent);
        let c = self.d.conn.client().await?;
        let r = c.add_task(task).await;
        if let Outcome::Acked(t) = self.d.outcome(r) {
            self.d.record(What::AddTask {
                id: t.id,
                blocked_by: t.blocked_by.clone(),
            })?;
            self.added.push(t.id);
            self.ready += 1;
        }
        Ok(())
    }

    fn anyone(&mut self) -> Option<String> {
        let n = self.drivers.len() + self.teammates.len();
        if n == 0 {
            return None;
        }
        let k = self.d.rng.usize(..n);
        Some(match self.drivers.get(k) {
            Some(d) => d.clone(),
            None => self.teammates[k - self.drivers.len()].clone(),
        })
    }

    async fn send(&mut self) -> anyhow::Result<()> {
        let Some(to) = self.anyone() else {
            return Ok(());
        };
        let c = self.d.conn.client().await?;
        let r = c
            .send(&to, MessageKind::Message, "a word from the lead", None)
            .await;
        if let Outcome::Acked(m) = self.d.outcome(r) {
            self.d.record(What::Send { message: m.id, to })?;
        }
        Ok(())
    }

    async fn request_shutdown(&mut self) -> anyhow::Result<()> {
        if self.drivers.is_empty() {
            return Ok(());
        }
        let to = self.drivers[self.d.rng.usize(..self.drivers.len())].clone();
        let args = ShutdownArgs {
            to: to.clone(),
            reason: Some("the soak asks".into()),
            timeout_ms: Some(60_000),
            force: false,
        };
        let c = self.d.conn.client().await?;
        let r = c.request_shutdown(args).await;
        if let Outcome::Acked(req) = self.d.outcome(r) {
            self.d.record(What::RequestShutdown {
                request: req.id,
                to,
            })?;
        }
        Ok(())
    }

    async fn review_plans(&mut self) -> anyhow::Result<()> {
        let args = ListRequestsArgs {
            state: Some(RequestState::Pending),
            kind: Some(RequestKind::Plan),
            task: None,
        };
        let c = self.d.conn.client().await?;
        let r = c.list_requests(args).await;
        let Outcome::Acked(requests) = self.d.outcome(r) else {
            return Ok(());
        };
        for req in requests {
            let approve = self.d.rng.u32(0..100) < 85;
            let feedback = (!approve).then_some("try again");
            let c = self.d.conn.client().await?;
            let r = c.review_plan(req.id, approve, feedback).await;
            if let Outcome::Acked(_) = self.d.outcome(r) {
                self.d.record(What::ReviewPlan {
                    request: req.id,
                    approve,
                })?;
            }
        }
        Ok(())
    }

    async fn cancel(&mut self) -> anyhow::Result<()> {
        let recent = self.recent();
        if recent.is_empty() {
            return Ok(());
        }
        let id = recent[self.d.rng.usize(..recent.len())];
        let c = self.d.conn.client().await?;
        let r = c.cancel_task(id).await;
        if let Outcome::Acked(_) = self.d.outcome(r) {
            self.d.record(What::CancelTask { id })?;
        }
        Ok(())
    }
}
