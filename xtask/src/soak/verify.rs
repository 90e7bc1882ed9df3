//! The soak's verdict on the repository and the board once every task is
//! completed. Each check answers what it looked at and every problem found.

use super::driver::WorkerKill;
use super::git;
use super::journal::{Record, Records};
use super::manifest;
use super::plan::{Spec, TARGET};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use teamboard_protocol::{EventKind, Pruned, TaskDetail, TaskStatus};

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub pass: bool,
    /// What was looked at, for the summary.
    pub looked_at: String,
    pub problems: Vec<String>,
}

impl Check {
    fn new(name: &str, looked_at: String, problems: Vec<String>) -> Check {
        let (name, pass) = (name.to_string(), problems.is_empty());
        Check {
            name,
            pass,
            looked_at,
            problems,
        }
    }
}

/// The completed tasks in the order they landed (by their completion event).
pub fn landing_order(details: &[TaskDetail]) -> Vec<&TaskDetail> {
    let done = details
        .iter()
        .filter(|d| d.task.status == TaskStatus::Completed);
    let mut done: Vec<(u64, &TaskDetail)> = done
        .map(|d| {
            let completed = d
                .history
                .iter()
                .filter(|e| e.kind == EventKind::TaskCompleted);
            (completed.map(|e| e.seq).max().unwrap_or(u64::MAX), d)
        })
        .collect();
    done.sort_by_key(|(seq, _)| *seq);
    done.into_iter().map(|(_, d)| d).collect()
}

pub fn all_completed(details: &[TaskDetail]) -> Check {
    let open = details
        .iter()
        .filter(|d| d.task.status != TaskStatus::Completed);
    let problems = open
        .map(|d| format!("#{} is {}", d.task.id, d.task.status))
        .collect();
    let looked = format!("{} tasks", details.len());
    Check::new("every task completed", looked, problems)
}

/// `git log --format=%H%x09%s RANGE`: each commit's hash and subject.
fn log(repo: &Path, range: &str) -> anyhow::Result<Vec<(String, String)>> {
    let text = git::run(repo, &["log", "--format=%H%x09%s", range])?;
    let split = |l: &str| {
        l.split_once('\t')
            .map_or((l.into(), String::new()), |(h, s)| (h.into(), s.into()))
    };
    Ok(text.lines().map(split).collect())
}

/// Every commit on the target since the initial one is a landed task's: the
/// landings chain (each lands on the previous one's commit), each task's
/// range `landed_on..merged` holds only commits with its subject, and the
/// ranges cover the target exactly.
pub fn target_history(repo: &Path, initial: &str, details: &[TaskDetail]) -> anyhow::Result<Check> {
    let mut problems = Vec::new();
    let head = git::line(repo, &["rev-parse", "refs/heads/main"])?;
    let on_target = git::run(repo, &["rev-list", &format!("{initial}..{head}")])?;
    let on_target: HashSet<&str> = on_target.lines().collect();
    let mut owner: HashMap<String, u64> = HashMap::new();
    let mut prev = initial.to_string();
    for d in landing_order(details) {
        let (id, w) = (d.task.id, d.task.worktree.as_ref());
        let Some(w) = w else {
            problems.push(format!("#{id} completed without a worktree"));
            continue;
        };
        let (Some(on), Some(merged)) = (&w.landed_on, &w.merged) else {
            problems.push(format!("#{id} completed without landed_on and merged"));
            continue;
        };
        if *on != prev {
            let (on, prev) = (short(on), short(&prev));
            problems.push(format!(
                "#{id} landed on {on} but the landing before it left {TARGET} at {prev}"
            ));
        }
        prev = merged.clone();
        for (hash, subject) in log(repo, &format!("{on}..{merged}"))? {
            let (short, wanted) = (short(&hash), &d.task.subject);
            if subject != *wanted {
                problems.push(format!(
                    "{short} in the landing of #{id} ({wanted:?}) has the subject {subject:?}"
                ));
            }
            if !on_target.contains(hash.as_str()) {
                problems.push(format!("{short} of #{id}'s landing is not on {TARGET}"));
            }
            if let Some(other) = owner.insert(hash.clone(), id) {
                problems.push(format!(
                    "{short} is in the landings of both #{other} and #{id}"
                ));
            }
        }
    }
    if prev != head {
        let (head, prev) = (short(&head), short(&prev));
        problems.push(format!(
            "{TARGET} is at {head} but the last landing left it at {prev}"
        ));
    }
    for hash in on_target.iter().filter(|h| !owner.contains_key(**h)) {
        problems.push(format!(
            "{} is on {TARGET} but in no task's landing",
            short(hash)
        ));
    }
    let looked = format!(
        "{} commits on {TARGET} since the initial one",
        on_target.len()
    );
    let name = "no commit on a wrong branch: the target holds only landed tasks' commits";
    Ok(Check::new(name, looked, problems))
}

/// Each task branch (before pruning) holds, past where it landed, only
/// commits with its own task's subject.
pub fn task_branches(repo: &Path, details: &[TaskDetail]) -> anyhow::Result<Check> {
    let (mut problems, mut looked) = (Vec::new(), 0);
    for d in details {
        let Some(w) = &d.task.worktree else { continue };
        let branch = &w.branch;
        let found = git::output(
            repo,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{branch}"),
            ],
        )?;
        if !found.status.success() {
            continue;
        }
        looked += 1;
        let from = w
            .landed_on
            .as_deref()
            .or(w.base.as_deref())
            .unwrap_or(TARGET);
        for (hash, subject) in log(repo, &format!("{from}..{branch}"))? {
            if subject != d.task.subject {
                let hash = short(&hash);
                problems.push(format!(
                    "{branch} has {hash} with the subject {subject:?}, not its task's"
                ));
            }
        }
    }
    let looked = format!("{looked} task branches");
    Ok(Check::new(
        "no task branch holds another task's commits",
        looked,
        problems,
    ))
}

/// Each task's own file on the target is what the task landed, holds only
/// its lines, and ends in `done` when the task had a check.
pub fn own_files(repo: &Path, details: &[TaskDetail]) -> anyhow::Result<Check> {
    let mut problems = Vec::new();
    for d in details {
        let id = d.task.id;
        let Some(spec) = Spec::from_description(&d.task.description) else {
            problems.push(format!("#{id} has no spec"));
            continue;
        };
        let (own, done) = (spec.own_file(), spec.done_line());
        let now = git::show(repo, TARGET, &own)?;
        let landed = match d.task.worktree.as_ref().and_then(|w| w.merged.as_deref()) {
            Some(m) => git::show(repo, m, &own)?,
            None => None,
        };
        let Some(now) = now else {
            problems.push(format!("{own} of #{id} is not on {TARGET}"));
            continue;
        };
        if landed.as_deref() != Some(now.as_str()) {
            problems.push(format!("{own} on {TARGET} differs from what #{id} landed"));
        }
        let tag = spec.tag();
        if let Some(l) = now.lines().find(|l| !l.starts_with(&tag) && *l != done) {
            problems.push(format!("{own} has a line of someone else: {l:?}"));
        }
        if spec.checked && !now.lines().any(|l| l == done) {
            problems.push(format!("{own} lacks {done:?} though its check passed"));
        }
    }
    let looked = format!("{} files", details.len());
    Ok(Check::new(
        "each task's own file on the target is what it landed",
        looked,
        problems,
    ))
}

/// Worktrees opened for dependents held their blockers' files.
pub fn dependencies(journals: &Records, details: &[TaskDetail]) -> Check {
    let missing = |(who, _, r): &(String, i64, Record)| match r {
        Record::DependencyMissing { task, file } => Some(format!(
            "{who} opened #{task}'s worktree without its blocker's {file}"
        )),
        _ => None,
    };
    let problems = journals.iter().filter_map(missing).collect();
    let dependents = details
        .iter()
        .filter(|d| !d.task.blocked_by.is_empty())
        .count();
    let looked = format!("{dependents} dependent tasks");
    Check::new(
        "dependents start from their blockers' landed work",
        looked,
        problems,
    )
}

/// No uncommitted file of a killed teammate was lost: each manifest was
/// checked by the next owner when it opened the worktree, and holds against
/// the commit the task landed.
pub fn manifests(
    repo: &Path,
    dir: &Path,
    kills: &[WorkerKill],
    journals: &Records,
    details: &[TaskDetail],
) -> anyhow::Result<(Check, ManifestCounts)> {
    let (mut problems, mut counts) = (Vec::new(), ManifestCounts::default());
    let merged: HashMap<u64, &str> = details
        .iter()
        .filter_map(|d| Some((d.task.id, d.task.worktree.as_ref()?.merged.as_deref()?)))
        .collect();
    for file in kills.iter().filter_map(|k| k.manifest.as_ref()) {
        let m = manifest::load(&dir.join(file))?;
        let task = m.task;
        counts.taken += 1;
        counts.files += m.files.len();
        let opened: Vec<&Vec<String>> = journals
            .iter()
            .filter_map(|(_, _, r)| match r {
                Record::ManifestChecked {
                    manifest, problems, ..
                } if manifest == file => Some(problems),
                _ => None,
            })
            .collect();
        match opened.is_empty() {
            true => problems.push(format!("{file} (#{task}) was never checked by an opener")),
            false => counts.checked_at_open += 1,
        }
        for p in opened.into_iter().flatten() {
            problems.push(format!("{file}, when #{task} was opened again: {p}"));
        }
        let Some(commit) = merged.get(&task) else {
            problems.push(format!("{file}: #{task} never landed"));
            continue;
        };
        counts.checked_at_landing += 1;
        for p in manifest::problems(&m, |p| git::show(repo, commit, p).ok().flatten()) {
            problems.push(format!("{file}, in the commit #{task} landed: {p}"));
        }
    }
    let c = counts;
    let looked = format!(
        "{} manifests of {} files, {} checked at the next open, {} against the landed commit",
        c.taken, c.files, c.checked_at_open, c.checked_at_landing
    );
    let name = "no uncommitted file lost to a kill (manifests)";
    Ok((Check::new(name, looked, problems), counts))
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ManifestCounts {
    pub taken: usize,
    pub files: usize,
    pub checked_at_open: usize,
    pub checked_at_landing: usize,
}

/// The paths a conflict refusal names: "… conflicts with main in a, b; …".
pub fn conflict_paths(message: &str) -> Vec<String> {
    let Some((_, rest)) = message.split_once(&format!("conflicts with {TARGET} in ")) else {
        return Vec::new();
    };
    let list = rest.split_once(';').map_or(rest, |(l, _)| l);
    list.split(", ")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// Every conflict the teammates were told of, and every one in the
/// history, names at least one path, and each path exists in the repository.
pub fn conflicts(
    repo: &Path,
    journals: &Records,
    details: &[TaskDetail],
) -> anyhow::Result<(Check, usize, usize)> {
    let mut problems = Vec::new();
    let mut messages: Vec<(String, String)> = Vec::new();
    for (who, _, r) in journals {
        if let Record::Answered {
            task,
            code: Some(code),
            message,
            ..
        } = r
            && code == "merge_conflict"
        {
            messages.push((format!("{who}'s answer for #{task}"), message.clone()));
        }
    }
    let answered = messages.len();
    for d in details {
        let conflicts = d
            .history
            .iter()
            .filter(|e| e.kind == EventKind::MergeConflict);
        messages.extend(conflicts.map(|e| (format!("#{}'s history", d.task.id), e.detail.clone())));
    }
    let in_history = messages.len() - answered;
    let mut exists: BTreeMap<String, bool> = BTreeMap::new();
    for (whose, message) in &messages {
        let paths = conflict_paths(message);
        if paths.is_empty() {
            problems.push(format!("{whose} names no path: {message:?}"));
        }
        for p in paths {
            if !exists.contains_key(&p) {
                let out = git::output(repo, &["cat-file", "-e", &format!("{TARGET}:{p}")])?;
                exists.insert(p.clone(), out.status.success());
            }
            if !exists[&p] {
                problems.push(format!("{whose} names {p:?}, which is not in {TARGET}"));
            }
        }
    }
    let looked = format!("{answered} refusals to teammates, {in_history} in task histories");
    let check = Check::new(
        "every conflict returned names a path that exists",
        looked,
        problems,
    );
    Ok((check, answered, in_history))
}

/// After `prune_worktrees`, with every task completed and landed, nothing is
/// left: no worktree but the repository's own, no task branch, no directory.
pub fn pruned(repo: &Path, worktrees_dir: &Path, pruned: &Pruned) -> anyhow::Result<Check> {
    let kept = |e: &teamboard_protocol::WorktreeEntry| {
        let (task, state, dirty, unmerged) = (e.task, &e.state, e.uncommitted, e.unmerged_commits);
        format!("#{task} kept: {state} ({dirty} uncommitted, {unmerged} unmerged commits)")
    };
    let mut problems: Vec<String> = pruned.kept.iter().map(kept).collect();
    let list = git::run(repo, &["worktree", "list", "--porcelain"])?;
    let repo_real = std::fs::canonicalize(repo)?;
    for path in list.lines().filter_map(|l| l.strip_prefix("worktree ")) {
        if !std::fs::canonicalize(path).is_ok_and(|p| p == repo_real) {
            problems.push(format!("git still lists the worktree {path}"));
        }
    }
    let branches = [
        "for-each-ref",
        "--format=%(refname:short)",
        "refs/heads/teamboard/",
    ];
    for b in git::run(repo, &branches)?.lines() {
        problems.push(format!("the branch {b} is still there"));
    }
    for e in std::fs::read_dir(worktrees_dir)
        .into_iter()
        .flatten()
        .flatten()
    {
        problems.push(format!("{} is still on disk", e.path().display()));
    }
    let looked = format!(
        "{} removed, {} kept",
        pruned.removed.len(),
        pruned.kept.len()
    );
    Ok(Check::new(
        "no orphan worktree or branch after prune",
        looked,
        problems,
    ))
}

pub fn fsck(repo: &Path) -> anyhow::Result<Check> {
    let out = git::output(repo, &["fsck", "--full", "--strict", "--no-dangling"])?;
    let problems = if out.status.success() {
        let said = [&out.stdout, &out.stderr].map(|b| String::from_utf8_lossy(b).into_owned());
        let said = said.concat();
        said.lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    } else {
        vec![git::failure(&["fsck"], &out)]
    };
    Ok(Check::new(
        "git fsck clean",
        "git fsck --full --strict".into(),
        problems,
    ))
}

/// Processes that died when nobody killed them.
pub fn crashes(mut worker: Vec<String>, boardd: &[String]) -> Check {
    worker.extend(boardd.iter().cloned());
    Check::new(
        "no process died unless killed",
        "the teammates and boardd".into(),
        worker,
    )
}

fn short(hash: &str) -> &str {
    hash.get(..10).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::conflict_paths;

    #[test]
    fn conflict_paths_are_read_from_the_refusal() {
        let m = "the branch conflicts with main in shared/s1.txt, shared/s2.txt; run `git rebase main` in the worktree, resolve";
        assert_eq!(conflict_paths(m), ["shared/s1.txt", "shared/s2.txt"]);
        assert!(conflict_paths("something else").is_empty());
    }
}
