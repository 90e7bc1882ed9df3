//! A member driver: a client that registers like a teammate and, without a
//! model, claims, heartbeats, completes, fails and releases tasks, sends and
//! acknowledges messages, submits plans and refuses shutdowns, at random.
//!
//! Now and then it quotes an epoch it knows to be old (boardd must refuse), or
//! falls silent past its lease and then finishes with the epoch it had (boardd
//! must refuse it if the task has moved on; the checker judges from the
//! events whether it had).

use super::acks::{Seen, What};
use super::client::{Driver, Outcome};
use super::inbox;
use std::time::Duration;
use teamboard_protocol::{Claim, ErrorCode, MessageKind, Task, TaskId, TaskStatus, Work};

/// The claim the driver holds.
struct Held {
    id: TaskId,
    epoch: u64,
    /// The task needs a plan, and none has been submitted for this claim.
    plan_due: bool,
}

pub struct Member {
    pub d: Driver,
    held: Option<Held>,
    /// Beyond the lease: how long a silent spell lasts.
    silence: Duration,
    /// Other members and the lead, to send messages to.
    peers: Vec<String>,
}

/// What a member does with its claim, by weight out of 100.
enum Move {
    Stale,
    Silence,
    Heartbeat,
    Release,
    Fail,
    Complete,
}

fn pick(r: u32) -> Move {
    match r {
        0..4 => Move::Stale,
        4..6 => Move::Silence,
        6..20 => Move::Heartbeat,
        20..30 => Move::Release,
        30..42 => Move::Fail,
        _ => Move::Complete,
    }
}

impl Member {
    pub fn new(d: Driver, lease: Duration, peers: Vec<String>) -> Member {
        Member {
            d,
            held: None,
            silence: lease + Duration::from_millis(500),
            peers,
        }
    }

    pub async fn run(mut self) -> anyhow::Result<Driver> {
        while !self.d.stopping() {
            match self.held.take() {
                Some(h) => self.work(h).await?,
                None => self.wait().await?,
            }
            if self.d.rng.u32(0..100) < 8 {
                self.send().await?;
            }
            self.d.pause(5, 40).await;
        }
        inbox::drain(&mut self.d).await?;
        Ok(self.d)
    }

    async fn wait(&mut self) -> anyhow::Result<()> {
        let c = self.d.conn.client().await?;
        let r = c.wait_for_work(Some(200)).await;
        match self.d.outcome(r) {
            Outcome::Acked(Work::Messages { messages }) => inbox::take(&mut self.d, messages).await,
            Outcome::Acked(Work::Task { claim }) => self.claimed(claim),
            Outcome::Acked(Work::Timeout) | Outcome::Lost => Ok(()),
            // A claim handed out while its answer was lost: the driver holds
            // it without knowing. Find it again.
            Outcome::Refused(ErrorCode::AlreadyHoldsTask) => self.find_own().await,
            Outcome::Refused(_) => Ok(()),
        }
    }

    fn claimed(&mut self, claim: Claim) -> anyhow::Result<()> {
        let (id, epoch) = (claim.task.id, claim.epoch);
        self.d.record(What::Claim { id, epoch })?;
        self.held = Some(Held {
            id,
            epoch,
            plan_due: claim.task.require_plan,
        });
        Ok(())
    }

    async fn find_own(&mut self) -> anyhow::Result<()> {
        let name = self.d.conn.name.clone();
        let c = self.d.conn.client().await?;
        let r = c.list_tasks(Some(TaskStatus::InProgress)).await;
        if let Outcome::Acked(tasks) = self.d.outcome(r) {
            self.held = tasks
                .into_iter()
                .find(|t| t.owner.as_deref() == Some(name.as_str()))
                .map(|t| Held {
                    id: t.id,
                    epoch: t.epoch,
                    plan_due: t.require_plan,
                });
        }
        Ok(())
    }

    async fn work(&mut self, h: Held) -> anyhow::Result<()> {
        if h.plan_due {
            return self.submit_plan(h).await;
        }
        let (id, epoch) = (h.id, h.epoch);
        let m = pick(self.d.rng.u32(0..100));
        let c = self.d.conn.client().await?;
        let r = match m {
            Move::Stale => {
                let r = c.complete_task(id, epoch.saturating_sub(1), "stale").await;
                let acked = match self.d.outcome(r) {
                    Outcome::Acked(_) => true,
                    Outcome::Refused(_) => false,
                    Outcome::Lost => return self.keep(h),
                };
                self.d.record(What::StaleTry {
                    id,
                    epoch: epoch.saturating_sub(1),
                    acked,
                })?;
                return self.keep(h);
            }
            Move::Silence => {
                tokio::time::sleep(self.silence).await;
                return self.keep(h);
            }
            Move::Heartbeat => c.heartbeat(id, epoch).await,
            Move::Release => c.release_task(id, epoch, None).await,
            Move::Fail => c.fail_task(id, epoch, "the soak's driver fails it").await,
            Move::Complete => c.complete_task(id, epoch, "done by the soak").await,
        };
        match self.d.outcome(r) {
            Outcome::Acked(task) => {
                let seen = seen(&task);
                let what = match m {
                    Move::Heartbeat => {
                        self.held = Some(h);
                        What::Heartbeat { id, epoch, seen }
                    }
                    Move::Release => What::Release { id, epoch, seen },
                    Move::Fail => What::Fail { id, epoch, seen },
                    _ => What::Complete { id, epoch, seen },
                };
                self.d.record(what)
            }
            Outcome::Refused(_) => self.still_mine(h).await,
            Outcome::Lost => self.keep(h),
        }
    }

    async fn submit_plan(&mut self, mut h: Held) -> anyhow::Result<()> {
        let c = self.d.conn.client().await?;
        let r = c.submit_plan(h.id, h.epoch, "do it as the soak does").await;
        match self.d.outcome(r) {
            Outcome::Acked(req) => {
                self.d.record(What::SubmitPlan {
                    request: req.id,
                    id: h.id,
                    epoch: h.epoch,
                })?;
                h.plan_due = false;
                self.keep(h)
            }
            Outcome::Refused(_) => self.still_mine(h).await,
            Outcome::Lost => self.keep(h),
        }
    }

    fn keep(&mut self, h: Held) -> anyhow::Result<()> {
        self.held = Some(h);
        Ok(())
    }

    /// After a refusal: keeps the claim if boardd still has it as this
    /// driver's (a plan still pending, say), and lets it go if not.
    async fn still_mine(&mut self, h: Held) -> anyhow::Result<()> {
        let name = self.d.conn.name.clone();
        let c = self.d.conn.client().await?;
        let r = c.get_task(h.id).await;
        if let Outcome::Acked(t) = self.d.outcome(r) {
            let t = t.task;
            if t.status == TaskStatus::InProgress
                && t.owner.as_deref() == Some(name.as_str())
                && t.epoch == h.epoch
            {
                self.held = Some(h);
            }
        } else {
            self.held = Some(h);
        }
        Ok(())
    }

    async fn send(&mut self) -> anyhow::Result<()> {
        if self.peers.is_empty() {
            return Ok(());
        }
        let to = self.peers[self.d.rng.usize(..self.peers.len())].clone();
        let c = self.d.conn.client().await?;
        let r = c
            .send(&to, MessageKind::Message, "hello from the soak", None)
            .await;
        if let Outcome::Acked(m) = self.d.outcome(r) {
            self.d.record(What::Send { message: m.id, to })?;
        }
        Ok(())
    }
}

pub fn seen(t: &Task) -> Seen {
    Seen {
        epoch: t.epoch,
        status: t.status,
    }
}
