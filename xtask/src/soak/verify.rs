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
        Check {
            name: name.to_string(),
            pass: problems.is_empty(),
            looked_at,
            problems,
        }
    }
}

/// The completed tasks in the order they landed (by their completion event).
pub fn landing_order(details: &[TaskDetail]) -> Vec<&TaskDetail> {
    let mut done: Vec<(u64, &TaskDetail)> = details
        .iter()
        .filter(|d| d.task.status == TaskStatus::Completed)
        .map(|d| {
            let seq = d
                .history
                .iter()
                .filter(|e| e.kind == EventKind::TaskCompleted)
                .map(|e| e.seq)
                .max()
                .unwrap_or(u64::MAX);
            (seq, d)
        })
        .collect();
    done.sort_by_key(|(seq, _)| *seq);
    done.into_iter().map(|(_, d)| d).collect()
}

pub fn all_completed(details: &[TaskDetail]) -> Check {
    let problems = details
        .iter()
        .filter(|d| d.task.status != TaskStatus::Completed)
        .map(|d| format!("#{} is {}", d.task.id, d.task.status))
        .collect();
    Check::new(
        "every task completed",
        format!("{} tasks", details.len()),
        problems,
    )
}

/// Every commit on the target since the initial one is a landed task's: the
/// landings chain (each lands on the previous one's commit), each task's
/// range `landed_on..merged` holds only commits with its subject, and the
/// ranges cover the target exactly.
pub fn target_history(repo: &Path, initial: &str, details: &[TaskDetail]) -> anyhow::Result<Check> {
    let mut problems = Vec::new();
    let head = git::line(repo, &["rev-parse", "refs/heads/main"])?;
    let on_target: HashSet<String> = git::run(repo, &["rev-list", &format!("{initial}..{head}")])?
        .lines()
        .map(str::to_string)
        .collect();
    let mut owner: HashMap<String, u64> = HashMap::new();
    let mut prev = initial.to_string();
    for d in landing_order(details) {
        let t = &d.task;
        let Some(w) = &t.worktree else {
            problems.push(format!("#{} completed without a worktree", t.id));
            continue;
        };
        let (Some(on), Some(merged)) = (&w.landed_on, &w.merged) else {
            problems.push(format!("#{} completed without landed_on and merged", t.id));
            continue;
        };
        if *on != prev {
            problems.push(format!(
                "#{} landed on {} but the landing before it left {TARGET} at {}",
                t.id,
                short(on),
                short(&prev)
            ));
        }
        prev = merged.clone();
        let log = git::run(
            repo,
            &["log", "--format=%H%x09%s", &format!("{on}..{merged}")],
        )?;
        for line in log.lines() {
            let (hash, subject) = line.split_once('\t').unwrap_or((line, ""));
            if subject != t.subject {
                problems.push(format!(
                    "{} in the landing of #{} ({:?}) has the subject {subject:?}",
                    short(hash),
                    t.id,
                    t.subject
                ));
            }
            if !on_target.contains(hash) {
                problems.push(format!(
                    "{} of #{}'s landing is not on {TARGET}",
                    short(hash),
                    t.id
                ));
            }
            if let Some(other) = owner.insert(hash.to_string(), t.id) {
                problems.push(format!(
                    "{} is in the landings of both #{other} and #{}",
                    short(hash),
                    t.id
                ));
            }
        }
    }
    if prev != head {
        problems.push(format!(
            "{TARGET} is at {} but the last landing left it at {}",
            short(&head),
            short(&prev)
        ));
    }
    for hash in &on_target {
        if !owner.contains_key(hash) {
            problems.push(format!(
                "{} is on {TARGET} but in no task's landing",
                short(hash)
            ));
        }
    }
    Ok(Check::new(
        "no commit on a wrong branch: the target holds only landed tasks' commits",
        format!(
            "{} commits on {TARGET} since the initial one",
            on_target.len()
        ),
        problems,
    ))
}

/// Each task branch (before pruning) holds, past where it landed, only
/// commits with its own task's subject.
pub fn task_branches(repo: &Path, details: &[TaskDetail]) -> anyhow::Result<Check> {
    let mut problems = Vec::new();
    let mut looked = 0;
    for d in details {
        let Some(w) = &d.task.worktree else { continue };
        let exists = git::output(
            repo,
            &[
                "rev-parse",
                "--verify",
                "-q",
                &format!("refs/heads/{}", w.branch),
            ],
        )?
        .status
        .success();
        if !exists {
            continue;
        }
        looked += 1;
        let from = w
            .landed_on
            .as_deref()
            .or(w.base.as_deref())
            .unwrap_or(TARGET);
        let log = git::run(
            repo,
            &["log", "--format=%H%x09%s", &format!("{from}..{}", w.branch)],
        )?;
        for line in log.lines() {
            let (hash, subject) = line.split_once('\t').unwrap_or((line, ""));
            if subject != d.task.subject {
                problems.push(format!(
                    "{} has {} with the subject {subject:?}, not its task's",
                    w.branch,
                    short(hash)
                ));
            }
        }
    }
    Ok(Check::new(
        "no task branch holds another task's commits",
        format!("{looked} task branches"),
        problems,
    ))
}

/// Each task's own file on the target is what the task landed, holds only
/// its lines, and ends in `done` when the task had a check.
pub fn own_files(repo: &Path, details: &[TaskDetail]) -> anyhow::Result<Check> {
    let mut problems = Vec::new();
    for d in details {
        let Some(spec) = Spec::from_description(&d.task.description) else {
            problems.push(format!("#{} has no spec", d.task.id));
            continue;
        };
        let own = spec.own_file();
        let now = git::show(repo, TARGET, &own)?;
        let landed = match d.task.worktree.as_ref().and_then(|w| w.merged.as_deref()) {
            Some(m) => git::show(repo, m, &own)?,
            None => None,
        };
        let Some(now) = now else {
            problems.push(format!("{own} of #{} is not on {TARGET}", d.task.id));
            continue;
        };
        if landed.as_deref() != Some(now.as_str()) {
            problems.push(format!(
                "{own} on {TARGET} differs from what #{} landed",
                d.task.id
            ));
        }
        let tag = spec.tag();
        if let Some(l) = now
            .lines()
            .find(|l| !l.starts_with(&tag) && *l != spec.done_line())
        {
            problems.push(format!("{own} has a line of someone else: {l:?}"));
        }
        if spec.checked && !now.lines().any(|l| l == spec.done_line()) {
            problems.push(format!(
                "{own} lacks {:?} though its check passed",
                spec.done_line()
            ));
        }
    }
    Ok(Check::new(
        "each task's own file on the target is what it landed",
        format!("{} files", details.len()),
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
    Check::new(
        "dependents start from their blockers' landed work",
        format!("{dependents} dependent tasks"),
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
    let mut problems = Vec::new();
    let mut counts = ManifestCounts::default();
    let merged: HashMap<u64, &str> = details
        .iter()
        .filter_map(|d| Some((d.task.id, d.task.worktree.as_ref()?.merged.as_deref()?)))
        .collect();
    for k in kills {
        let Some(file) = &k.manifest else { continue };
        counts.taken += 1;
        let m = manifest::load(&dir.join(file))?;
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
        if opened.is_empty() {
            problems.push(format!(
                "{file} (#{}) was never checked by an opener",
                m.task
            ));
        } else {
            counts.checked_at_open += 1;
        }
        for p in opened.into_iter().flatten() {
            problems.push(format!("{file}, when #{} was opened again: {p}", m.task));
        }
        match merged.get(&m.task) {
            Some(commit) => {
                counts.checked_at_landing += 1;
                let found = manifest::problems(&m, |p| git::show(repo, commit, p).ok().flatten());
                for p in found {
                    problems.push(format!("{file}, in the commit #{} landed: {p}", m.task));
                }
            }
            None => problems.push(format!("{file}: #{} never landed", m.task)),
        }
    }
    let check = Check::new(
        "no uncommitted file lost to a kill (manifests)",
        format!(
            "{} manifests of {} files, {} checked at the next open, {} against the landed commit",
            counts.taken, counts.files, counts.checked_at_open, counts.checked_at_landing
        ),
        problems,
    );
    Ok((check, counts))
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
    Ok((
        Check::new(
            "every conflict returned names a path that exists",
            format!("{answered} refusals to teammates, {in_history} in task histories"),
            problems,
        ),
        answered,
        in_history,
    ))
}

/// After `prune_worktrees`, with every task completed and landed, nothing is
/// left: no worktree but the repository's own, no task branch, no directory.
pub fn pruned(repo: &Path, worktrees_dir: &Path, pruned: &Pruned) -> anyhow::Result<Check> {
    let mut problems: Vec<String> = pruned
        .kept
        .iter()
        .map(|e| {
            format!(
                "#{} kept: {} ({} uncommitted, {} unmerged commits)",
                e.task, e.state, e.uncommitted, e.unmerged_commits
            )
        })
        .collect();
    let list = git::run(repo, &["worktree", "list", "--porcelain"])?;
    let repo_real = std::fs::canonicalize(repo)?;
    for path in list.lines().filter_map(|l| l.strip_prefix("worktree ")) {
        let same = std::fs::canonicalize(path).is_ok_and(|p| p == repo_real);
        if !same {
            problems.push(format!("git still lists the worktree {path}"));
        }
    }
    let branches = git::run(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)",
            "refs/heads/teamboard/",
        ],
    )?;
    for b in branches.lines() {
        problems.push(format!("the branch {b} is still there"));
    }
    if let Ok(dir) = std::fs::read_dir(worktrees_dir) {
        for e in dir.flatten() {
            problems.push(format!("{} is still on disk", e.path().display()));
        }
    }
    Ok(Check::new(
        "no orphan worktree or branch after prune",
        format!(
            "{} removed, {} kept",
            pruned.removed.len(),
            pruned.kept.len()
        ),
        problems,
    ))
}

pub fn fsck(repo: &Path) -> anyhow::Result<Check> {
    let out = git::output(repo, &["fsck", "--full", "--strict", "--no-dangling"])?;
    let mut problems = Vec::new();
    if !out.status.success() {
        problems.push(git::failure(&["fsck"], &out));
    } else {
        let said = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        problems.extend(
            said.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string),
        );
    }
    Ok(Check::new(
        "git fsck clean",
        "git fsck --full --strict".into(),
        problems,
    ))
}

/// Processes that died when nobody killed them.
pub fn crashes(worker: Vec<String>, boardd: &[String]) -> Check {
    let mut problems = worker;
    problems.extend(boardd.iter().cloned());
    Check::new(
        "no process died unless killed",
        "the teammates and boardd".into(),
        problems,
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
