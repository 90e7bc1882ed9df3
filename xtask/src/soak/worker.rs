//! `xtask soak-git-worker`: one soak teammate, a real process the driver can
//! SIGKILL at any moment.
//!
//! It behaves like a model-driven teammate without the model: it registers,
//! waits for work, opens the task's worktree, appends lines to the task's own
//! file (and, for some tasks, to a shared file, which forces conflicts),
//! commits now and then or leaves the work uncommitted, and completes. On
//! `merge_conflict` it rebases onto the target and resolves (both sides, or
//! its own), or now and then gives up with `release_task`; on `check_failed`
//! it fixes the file the check reads. It heartbeats while it works. When
//! boardd goes away it reconnects and re-registers, which hands it back the
//! claim it held (boardd's restart grace), and picks the task up again from
//! what boardd says about it.
//!
//! Before it touches a worktree it opened, it checks the manifests the driver
//! took of that worktree before killing an earlier owner (`manifest.rs`).

use super::edits::{Edits, How};
use super::journal::{Journal, Record};
use super::manifest;
use super::plan::{Spec, TARGET, TEAM};
use super::rng::{self, hash_str};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use teamboard_protocol::now_ms;
use teamboard_protocol::{CheckOutcome, Client, ClientError, ErrorCode, Task, TaskStatus, Work};

#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    #[arg(long)]
    pub name: String,
    #[arg(long)]
    pub socket: PathBuf,
    /// The run's directory: `journal/<name>.jsonl` and `manifests/` are in it.
    #[arg(long)]
    pub dir: PathBuf,
    #[arg(long)]
    pub seed: u64,
    /// A quarter of the soak's lease.
    #[arg(long, default_value_t = 2500)]
    pub heartbeat_ms: u64,
    /// The longest pause after an edit step (a model thinking).
    #[arg(long, default_value_t = 2000)]
    pub pause_ms: u64,
    /// The chance of giving a task back after a conflict instead of resolving it.
    #[arg(long, default_value_t = 0.1)]
    pub give_up_rate: f64,
    /// The chance of resolving a conflict with its own side instead of both.
    #[arg(long, default_value_t = 0.25)]
    pub own_rate: f64,
    /// The chance of committing after an edit step.
    #[arg(long, default_value_t = 0.3)]
    pub commit_rate: f64,
}

/// Completions a teammate tries on one claim before it gives the task back.
const MAX_COMPLETIONS: usize = 12;
/// Conflicts on one claim before it gives the task back.
const MAX_CONFLICTS: usize = 4;

pub fn run(args: &WorkerArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let path = args
        .dir
        .join("journal")
        .join(format!("{}.jsonl", args.name));
    let (args, journal) = (args.clone(), Journal::open(&path)?);
    rt.block_on(Worker { args, journal }.run())
}

struct Worker {
    args: WorkerArgs,
    journal: Journal,
}

/// An error from boardd that is not an answer: the connection is gone.
fn gone(e: &ClientError) -> bool {
    e.code().is_none()
}

fn message(e: &ClientError) -> String {
    match e {
        ClientError::Server(body) => body.message.clone(),
        other => other.to_string(),
    }
}

impl Worker {
    fn note(&mut self, r: Record) {
        self.journal.write(r);
    }

    /// Git that failed in a way it had to work around.
    fn trouble(&mut self, task: u64, what: String) {
        self.note(Record::GitTrouble { task, what });
    }

    async fn run(&mut self) -> anyhow::Result<()> {
        self.note(Record::Started {
            pid: std::process::id(),
        });
        loop {
            let (client, adopted) = match self.connect().await {
                Ok(c) => c,
                Err(_) => {
                    // boardd is restarting, or has not noticed yet that the
                    // previous process of this name is gone.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if let Err(e) = self.serve(&client, adopted).await {
                self.note(Record::Reconnect {
                    why: format!("{e:#}"),
                });
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    async fn connect(&mut self) -> anyhow::Result<(Arc<Client>, Option<u64>)> {
        // A process of its own: the key's file comes in `TEAMBOARD_LEAD_KEY`.
        let key = teamboard_process::lead_key(&self.args.socket)?;
        let socket = &self.args.socket;
        let client =
            Client::connect(socket, "xtask-soak", &self.args.name, TEAM, Some(&key)).await?;
        let member = client.register("soak", Some(std::process::id())).await?;
        self.note(Record::Registered {
            adopted: member.task,
        });
        Ok((Arc::new(client), member.task))
    }

    async fn serve(&mut self, c: &Arc<Client>, adopted: Option<u64>) -> anyhow::Result<()> {
        if let Some(id) = adopted {
            self.resume(c, id).await?;
        }
        loop {
            match c.wait_for_work(Some(10_000)).await? {
                Work::Task { claim } => {
                    self.note(Record::Claimed {
                        task: claim.task.id,
                        epoch: claim.epoch,
                    });
                    self.work(c, &claim.task, claim.epoch).await?;
                }
                Work::Messages { messages } => {
                    c.ack(messages.iter().map(|m| m.id).collect()).await?;
                }
                Work::Timeout => {}
            }
        }
    }

    /// A claim this teammate held before its connection ended: wait for a
    /// landing to end, then go on with the task if it is still ours.
    async fn resume(&mut self, c: &Arc<Client>, id: u64) -> anyhow::Result<()> {
        let mut task = match c.get_task(id).await {
            Ok(d) => d.task,
            Err(e) if gone(&e) => return Err(e.into()),
            Err(_) => return Ok(()),
        };
        while task.landing.is_some() && self.holds(&task) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            task = c.get_task(id).await?.task;
        }
        if task.status == TaskStatus::Completed && task.owner.as_deref() == Some(&self.args.name) {
            self.note(Record::LandedAway { task: id });
            return Ok(());
        }
        if !self.holds(&task) {
            return Ok(());
        }
        self.note(Record::Claimed {
            task: id,
            epoch: task.epoch,
        });
        self.work(c, &task, task.epoch).await
    }

    fn holds(&self, task: &Task) -> bool {
        task.status == TaskStatus::InProgress && task.owner.as_deref() == Some(&self.args.name)
    }

    /// One claim, from opening the worktree to the answer of the last
    /// `complete_task` (or giving the task back).
    async fn work(&mut self, c: &Arc<Client>, task: &Task, epoch: u64) -> anyhow::Result<()> {
        let id = task.id;
        let Some(spec) = Spec::from_description(&task.description) else {
            return self
                .give_back(c, id, epoch, "the description has no soak-spec line")
                .await;
        };
        let opened = match c.open_worktree(id, epoch).await {
            Ok(o) => o,
            Err(e) if gone(&e) => return Err(e.into()),
            Err(e) if e.code() == Some(ErrorCode::StaleEpoch) => {
                return self.lost(id, epoch, &e);
            }
            Err(e) => {
                self.trouble(id, format!("open_worktree: {}", message(&e)));
                tokio::time::sleep(Duration::from_millis(300)).await;
                self.give_back(c, id, epoch, "could not open the worktree")
                    .await?;
                return Ok(());
            }
        };
        self.note(Record::Opened {
            task: id,
            epoch,
            fresh: opened.fresh,
            commits: opened.found.commits,
            changed: opened.found.changed.clone(),
            in_progress: opened.found.in_progress.clone(),
        });
        let wt = PathBuf::from(&opened.worktree.path);
        self.check_manifests(id, &wt);
        for file in &spec.needs {
            if !wt.join(file).is_file() {
                self.note(Record::DependencyMissing {
                    task: id,
                    file: file.clone(),
                });
            }
        }
        let beat = heartbeat(c.clone(), id, epoch, self.args.heartbeat_ms);
        let in_progress = opened.found.in_progress.as_deref();
        let r = self.work_in(c, task, epoch, &spec, &wt, in_progress).await;
        beat.abort();
        r
    }

    /// Checks, before anything is touched, every manifest the driver took of
    /// this worktree that no opener checked yet.
    fn check_manifests(&mut self, id: u64, wt: &Path) {
        let dir = self.args.dir.join("manifests");
        for path in manifest::unchecked(&dir, id) {
            let problems = match manifest::load(&path) {
                Ok(m) => manifest::problems(&m, |p| std::fs::read_to_string(wt.join(p)).ok()),
                Err(e) => vec![format!("{e:#}")],
            };
            let manifest = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let manifest = manifest.unwrap_or_default();
            self.note(Record::ManifestChecked {
                task: id,
                manifest,
                problems,
            });
            let _ = std::fs::write(manifest::checked_marker(&path), &self.args.name);
        }
    }

    async fn work_in(
        &mut self,
        c: &Arc<Client>,
        task: &Task,
        epoch: u64,
        spec: &Spec,
        wt: &Path,
        in_progress: Option<&str>,
    ) -> anyhow::Result<()> {
        let id = task.id;
        let name = self.args.name.clone();
        let mut rng = rng::derive(self.args.seed, &[spec.n as u64, epoch, hash_str(&name)]);
        let ed = Edits::new(wt, &name);
        if let Some(what) = in_progress {
            // An earlier owner stopped in the middle of resolving: finish it.
            let finished = match what {
                "rebase" => ed.finish_rebase(How::Both),
                _ => super::git::run(wt, &["merge", "--abort"]).map(|_| Vec::new()),
            };
            match finished {
                Ok(paths) => self.note(Record::Resolved {
                    task: id,
                    how: format!("found a {what}; both"),
                    paths,
                }),
                Err(e) => {
                    self.trouble(id, format!("finishing the {what} it found: {e:#}"));
                    ed.abort_rebase()?;
                }
            }
        }
        let own = spec.own_file();
        for step in 0..spec.steps {
            let k = ed.lines(&own).len() + 1;
            let line = format!("{}{name} e{epoch} #{k}", spec.tag());
            ed.append(&own, &line)?;
            if let Some(shared) = &spec.shared
                && (step == 0 || rng.f64() < 0.5)
            {
                ed.append(shared, &format!("{line} shared"))?;
            }
            let pause = rng.u64(self.args.pause_ms / 10..=self.args.pause_ms);
            tokio::time::sleep(Duration::from_millis(pause)).await;
            if rng.f64() < self.args.commit_rate {
                ed.commit(&task.subject)?;
            }
        }
        let failed_before = task
            .check_runs
            .iter()
            .any(|r| r.outcome != CheckOutcome::Passed);
        if !spec.forget_done || failed_before {
            self.write_done(&ed, spec)?;
        }
        let result = format!("t{} by {name}", spec.n);
        let mut conflicts = 0;
        for _ in 0..MAX_COMPLETIONS {
            let sent_at = now_ms();
            let answer = c.complete_task(id, epoch, &result).await;
            let e = match answer {
                Ok(done) => {
                    self.note(Record::Answered {
                        task: id,
                        epoch,
                        sent_at,
                        code: None,
                        message: String::new(),
                        merged: done.worktree.and_then(|w| w.merged),
                    });
                    return Ok(());
                }
                Err(e) if gone(&e) => return Err(e.into()),
                Err(e) => e,
            };
            let code = e.code();
            self.note(Record::Answered {
                task: id,
                epoch,
                sent_at,
                code: code.map(|c| c.to_string()),
                message: message(&e),
                merged: None,
            });
            match code {
                Some(ErrorCode::MergeConflict) => {
                    conflicts += 1;
                    if conflicts > MAX_CONFLICTS || rng.f64() < self.args.give_up_rate {
                        let why = format!("gave up after {conflicts} conflict(s): {}", message(&e));
                        return self.give_back(c, id, epoch, &why).await;
                    }
                    let how = if rng.f64() < self.args.own_rate {
                        How::Own
                    } else {
                        How::Both
                    };
                    match ed.rebase_onto(TARGET, how) {
                        Ok(paths) => self.note(Record::Resolved {
                            task: id,
                            how: how.to_string(),
                            paths,
                        }),
                        Err(err) => {
                            self.trouble(id, format!("resolving: {err:#}"));
                            ed.abort_rebase()?;
                        }
                    }
                }
                Some(ErrorCode::CheckFailed) => self.write_done(&ed, spec)?,
                Some(ErrorCode::Git) => {
                    // A landing refused for files changed after the checks, a
                    // lock, a rebase left in progress: look, tidy, try again.
                    self.trouble(id, message(&e));
                    if super::git::rebasing(wt)? {
                        ed.finish_rebase(How::Both)
                            .or_else(|_| ed.abort_rebase().map(|()| Vec::new()))?;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                _ => return self.lost(id, epoch, &e),
            }
        }
        self.give_back(c, id, epoch, "too many completions refused")
            .await
    }

    fn write_done(&self, ed: &Edits, spec: &Spec) -> anyhow::Result<()> {
        let own = spec.own_file();
        if !ed.lines(&own).iter().any(|l| *l == spec.done_line()) {
            ed.append(&own, &spec.done_line())?;
        }
        Ok(())
    }

    async fn give_back(
        &mut self,
        c: &Arc<Client>,
        id: u64,
        epoch: u64,
        why: &str,
    ) -> anyhow::Result<()> {
        match c.release_task_with_note(id, epoch, why).await {
            Ok(_) => {
                self.note(Record::Released {
                    task: id,
                    epoch,
                    why: why.to_string(),
                });
                Ok(())
            }
            Err(e) if gone(&e) => Err(e.into()),
            Err(e) => self.lost(id, epoch, &e),
        }
    }

    fn lost(&mut self, id: u64, epoch: u64, e: &ClientError) -> anyhow::Result<()> {
        self.note(Record::Lost {
            task: id,
            epoch,
            why: e.to_string(),
        });
        Ok(())
    }
}

/// Renews the claim's lease until aborted or refused.
fn heartbeat(c: Arc<Client>, id: u64, epoch: u64, every_ms: u64) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(every_ms)).await;
            if c.heartbeat(id, epoch).await.is_err() {
                return;
            }
        }
    })
}
