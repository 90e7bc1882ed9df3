//! The soak's driver loop: until every task is completed, kill a random
//! teammate with SIGKILL every few seconds (taking a manifest of its worktree
//! first) and kill boardd itself a few times, then restart what was killed.

use super::lead::Lead;
use super::manifest;
use super::plan::Spec;
use super::procs::Teammate;
use super::rng::{self, Rng};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use teamboard_process::Boardd;
use teamboard_protocol::{LandingStage, Task, TaskStatus};

/// What the loop needs besides the processes.
pub struct Setting {
    pub seed: u64,
    pub kill_every: f64,
    pub boardd_kills: usize,
    pub timeout: Duration,
    pub manifests: PathBuf,
    /// The repository, whose target ref one kind of boardd kill watches.
    pub repo: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkerKill {
    /// Seconds into the run.
    pub at_s: f64,
    pub at_ms: i64,
    pub worker: String,
    pub task: Option<u64>,
    /// The manifest file, when one was taken.
    pub manifest: Option<String>,
    pub files: usize,
    /// Why no manifest was taken.
    pub skipped: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BoarddKill {
    /// What the kill waited for: a queued landing, the target just moved, or
    /// nothing (a random moment).
    pub moment: Moment,
    pub at_s: f64,
    /// Wall-clock milliseconds of the kill, to compare with the history.
    pub at_ms: i64,
    pub completed_before: usize,
    /// Landings seen at the last look before the kill.
    pub checking: usize,
    pub queued: usize,
    /// From the kill to the new boardd answering.
    pub restart_ms: f64,
}

/// When boardd is killed, in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// Once a landing waits in the queue (or after a few seconds without one).
    Queued,
    /// Once a gate runs (committing, updating, checking): the restart must
    /// undo what it left half done.
    Checking,
    /// The moment the target ref moves: between a landing's `update-ref` and
    /// boardd recording it, if the kill is quick enough.
    TargetMoved,
    /// Whenever.
    Random,
}

const MOMENTS: [Moment; 4] = [
    Moment::Queued,
    Moment::TargetMoved,
    Moment::Checking,
    Moment::Random,
];

#[derive(Debug, Default)]
pub struct Driven {
    pub worker_kills: Vec<WorkerKill>,
    pub boardd_kills: Vec<BoarddKill>,
    /// Tasks that failed (attempts used up by kills) and were retried.
    pub retried: Vec<u64>,
    /// boardd exiting when nobody killed it.
    pub boardd_crashes: Vec<String>,
    pub seconds: f64,
    /// Set when the run did not finish in time: what was left, and why.
    pub timed_out: Option<String>,
}

const TICK: Duration = Duration::from_millis(100);

/// Why a kill took no manifest, as the report counts them.
pub const NOTHING_UNCOMMITTED: &str = "nothing was uncommitted";
pub const HELD_NOTHING: &str = "it held no task";
pub const NOT_OPENED: &str = "its worktree was not opened yet";

pub async fn drive(
    s: &Setting,
    boardd: &mut Boardd,
    lead: &mut Lead,
    teammates: &mut [Teammate],
    total: usize,
) -> anyhow::Result<Driven> {
    let start = Instant::now();
    let mut out = Driven::default();
    let mut rng = rng::derive(s.seed, &[0x6b_1115]);
    let mut next_kill = start + jitter(&mut rng, s.kill_every);
    let thresholds: Vec<usize> = (1..=s.boardd_kills)
        .map(|k| (total * k / (s.boardd_kills + 1)).max(1))
        .collect();
    let mut last_print = start;
    let mut manifests = 0;
    loop {
        let tasks = lead.call(|c| Box::pin(c.list_tasks(None))).await?;
        let completed = count(&tasks, |t| t.status == TaskStatus::Completed);
        if completed == total {
            break;
        }
        if start.elapsed() > s.timeout {
            out.timed_out = Some(stuck(&tasks, teammates, boardd));
            break;
        }
        for t in tasks.iter().filter(|t| t.status == TaskStatus::Failed) {
            // Kills can use up a task's attempts; the lead gives it more.
            match lead.call(|c| Box::pin(c.retry_task(t.id))).await {
                Ok(_) => out.retried.push(t.id),
                Err(e) => println!("  could not retry #{}: {e:#}", t.id),
            }
        }
        if let Some(status) = boardd.try_wait()? {
            let crash = format!("boardd exited by itself ({status})");
            out.boardd_crashes.push(crash);
            boardd.restart(super::START_TIMEOUT).await?;
        }
        for t in teammates.iter_mut() {
            t.revive_if_dead()?;
        }
        if s.kill_every > 0.0 && Instant::now() >= next_kill {
            let i = rng.usize(..teammates.len());
            let k = kill_teammate(s, lead, &mut teammates[i], start, &mut manifests).await?;
            out.worker_kills.push(k);
            next_kill = Instant::now() + jitter(&mut rng, s.kill_every);
        }
        if let Some(&at) = thresholds.get(out.boardd_kills.len())
            && completed >= at
        {
            let moment = MOMENTS[out.boardd_kills.len() % MOMENTS.len()];
            let k = kill_boardd(s, boardd, lead, &mut rng, moment, start, completed).await?;
            println!(
                "  kill -9 boardd at {:.1} s ({:?}: {} queued, {} checking); back in {:.0} ms",
                k.at_s, k.moment, k.queued, k.checking, k.restart_ms
            );
            out.boardd_kills.push(k);
        }
        if last_print.elapsed() >= Duration::from_secs(5) {
            last_print = Instant::now();
            let landing = count(&tasks, |t| t.landing.is_some());
            let (s, w, b) = (
                start.elapsed().as_secs_f64(),
                out.worker_kills.len(),
                out.boardd_kills.len(),
            );
            println!(
                "  {s:>5.1} s: {completed}/{total} completed, {landing} landing; killed {w} teammates, boardd {b} times"
            );
        }
        tokio::time::sleep(TICK).await;
    }
    out.seconds = start.elapsed().as_secs_f64();
    Ok(out)
}

fn count(tasks: &[Task], f: impl Fn(&Task) -> bool) -> usize {
    tasks.iter().filter(|t| f(t)).count()
}

/// `every` seconds, give or take half.
fn jitter(rng: &mut Rng, every: f64) -> Duration {
    Duration::from_secs_f64((every * (0.5 + rng.f64())).max(0.05))
}

/// Freezes the teammate, takes a manifest of the uncommitted files in the
/// worktree of the task it holds, and kills it with SIGKILL; a new process
/// takes its name.
async fn kill_teammate(
    s: &Setting,
    lead: &mut Lead,
    t: &mut Teammate,
    start: Instant,
    manifests: &mut usize,
) -> anyhow::Result<WorkerKill> {
    t.freeze().await;
    let name = t.name.clone();
    let held = lead
        .call(|c| Box::pin(c.list_tasks(Some(TaskStatus::InProgress))))
        .await?
        .into_iter()
        .find(|task| task.owner.as_deref() == Some(name.as_str()));
    let (at_s, at_ms) = (start.elapsed().as_secs_f64(), teamboard_protocol::now_ms());
    let task = held.as_ref().map(|t| t.id);
    let (manifest, files, skipped) = match manifest_of(s, held.as_ref(), &name, *manifests) {
        Ok(Some((file, files))) => {
            *manifests += 1;
            (Some(file), files, None)
        }
        Ok(None) => (None, 0, Some(NOTHING_UNCOMMITTED.into())),
        Err(why) => (None, 0, Some(why)),
    };
    t.kill_and_restart().await?;
    Ok(WorkerKill {
        at_s,
        at_ms,
        worker: name,
        task,
        manifest,
        files,
        skipped,
    })
}

/// The manifest of the held task's worktree, saved; `Err` says why there is
/// none, `Ok(None)` that there was nothing uncommitted.
fn manifest_of(
    s: &Setting,
    held: Option<&Task>,
    name: &str,
    seq: usize,
) -> Result<Option<(String, usize)>, String> {
    let task = held.ok_or(HELD_NOTHING)?;
    if let Some(l) = &task.landing {
        // The gate (commit, update) or the queue may be working in the
        // worktree right now; the work was handed to boardd.
        let stage = <&str>::from(l.stage);
        return Err(format!("its task was {stage}: the work was boardd's"));
    }
    let w = task
        .worktree
        .as_ref()
        .filter(|w| w.base.is_some())
        .ok_or(NOT_OPENED)?;
    let spec = Spec::from_description(&task.description).ok_or("the task has no spec")?;
    let m = manifest::take(Path::new(&w.path), task.id, spec.n, name, task.epoch)
        .map_err(|e| format!("cannot take the manifest: {e:#}"))?;
    if m.files.is_empty() {
        return Ok(None);
    }
    let path = manifest::save(&s.manifests, &m, seq).map_err(|e| format!("{e:#}"))?;
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned());
    Ok(Some((file.unwrap_or_default(), m.files.len())))
}

/// Kills boardd with SIGKILL after a random pause, at `moment` (or after a
/// few seconds without it), and starts it again on the same state.
async fn kill_boardd(
    s: &Setting,
    boardd: &mut Boardd,
    lead: &mut Lead,
    rng: &mut Rng,
    moment: Moment,
    start: Instant,
    completed: usize,
) -> anyhow::Result<BoarddKill> {
    let wanted = |checking: usize, queued: usize| match moment {
        Moment::Queued => queued > 0,
        Moment::Checking => checking > 0,
        Moment::TargetMoved | Moment::Random => true,
    };
    tokio::time::sleep(Duration::from_millis(rng.u64(0..=1500))).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let (checking, queued) = loop {
        let tasks = lead.call(|c| Box::pin(c.list_tasks(None))).await?;
        let stage = |s: LandingStage| {
            count(&tasks, |t| {
                t.landing.as_ref().is_some_and(|l| l.stage == s)
                    && t.status == TaskStatus::InProgress
            })
        };
        let (checking, queued) = (stage(LandingStage::Checking), stage(LandingStage::Queued));
        if wanted(checking, queued) || Instant::now() > deadline {
            break (checking, queued);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    if moment == Moment::TargetMoved {
        // A tight loop on the loose ref file: the kill must come within the
        // milliseconds between the ref moving and boardd's commit of it.
        let target = s.repo.join(".git/refs/heads").join(super::plan::TARGET);
        let before = std::fs::read(&target).ok();
        while std::fs::read(&target).ok() == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    let (at_s, at_ms) = (start.elapsed().as_secs_f64(), teamboard_protocol::now_ms());
    lead.reset();
    let restart_ms = boardd.restart(super::START_TIMEOUT).await?.as_secs_f64() * 1e3;
    let completed_before = completed;
    Ok(BoarddKill {
        moment,
        at_s,
        at_ms,
        completed_before,
        checking,
        queued,
        restart_ms,
    })
}

/// What was left when the time ran out, for the failure report.
fn stuck(tasks: &[Task], teammates: &[Teammate], boardd: &Boardd) -> String {
    use std::fmt::Write as _;
    let mut text = String::from("tasks not completed:\n");
    for t in tasks.iter().filter(|t| t.status != TaskStatus::Completed) {
        let (landing, error) = (t.landing.as_ref().map(|l| l.stage), &t.last_error);
        let _ = writeln!(
            text,
            "  #{} {:?} owner {:?} epoch {} attempts {} ready {} landing {landing:?} last_error {error:?} handoff {:?}",
            t.id, t.status, t.owner, t.epoch, t.attempts, t.ready, t.handoff
        );
    }
    text.push_str("teammates:\n");
    for t in teammates {
        let _ = writeln!(text, "  {} pid {:?}", t.name, t.pid());
    }
    let log = boardd.log.display();
    let _ = writeln!(
        text,
        "the end of boardd's log ({log}):\n{}",
        boardd.log_tail(30)
    );
    text
}
