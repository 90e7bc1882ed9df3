//! The uncommitted files of a teammate's worktree, taken just before the
//! teammate is killed, and the check that nothing of them was lost.
//!
//! The soak's teammates only create files and append lines, never delete or
//! rewrite, so "nothing lost" is exact: later, each file of the manifest must
//! be there with the same content, or with more. For the task's own file
//! (`tasks/t<n>.txt`, which no other task writes) that means the old content
//! is a prefix of the new. A shared file is rewritten by conflict resolution
//! (the other tasks' lines come first after a rebase, and a resolution that
//! keeps its own side drops theirs), so there the task's own lines (those
//! starting with `t<n> `) must all still be there, in the same order.

use super::git;
use super::plan;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub task: u64,
    /// The task's plan number, which names its own file and tags its lines.
    pub n: usize,
    pub worker: String,
    pub epoch: u64,
    pub taken_at: i64,
    pub worktree: String,
    /// A rebase was stopped in the worktree (conflict markers may be in it).
    pub rebasing: bool,
    pub files: Vec<File>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct File {
    pub path: String,
    /// `git hash-object` of the content.
    pub hash: String,
    pub content: String,
}

/// Reads the uncommitted files of `wt`. Deleted paths are left out: the soak
/// deletes nothing, so a deletion would show in the later check as a missing
/// file of an earlier manifest, or not at all.
pub fn take(wt: &Path, task: u64, n: usize, worker: &str, epoch: u64) -> anyhow::Result<Manifest> {
    let rebasing = git::rebasing(wt)?;
    let mut paths: Vec<String> = git::status(wt)?.into_iter().map(|c| c.path).collect();
    paths.sort();
    paths.dedup();
    let mut files = Vec::new();
    for path in paths {
        let full = wt.join(&path);
        let Ok(bytes) = std::fs::read(&full) else {
            continue;
        };
        let hash = git::line(wt, &["hash-object", "--no-filters", "--", &path])?;
        files.push(File {
            path,
            hash,
            content: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    Ok(Manifest {
        task,
        n,
        worker: worker.to_string(),
        epoch,
        taken_at: teamboard_protocol::now_ms(),
        worktree: wt.display().to_string(),
        rebasing,
        files,
    })
}

/// Writes the manifest into `dir` as `task-<id>-<k>.json`, whole or not at all.
pub fn save(dir: &Path, m: &Manifest, k: usize) -> anyhow::Result<PathBuf> {
    let path = dir.join(format!("task-{}-{k}.json", m.task));
    let tmp = dir.join(format!(".task-{}-{k}.json.tmp", m.task));
    std::fs::write(&tmp, serde_json::to_vec_pretty(m)?)
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

pub fn load(path: &Path) -> anyhow::Result<Manifest> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("cannot parse {}", path.display()))
}

/// The manifests of `task` in `dir` that no opener has checked yet.
pub fn unchecked(dir: &Path, task: u64) -> Vec<PathBuf> {
    let prefix = format!("task-{task}-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".json"))
        })
        .filter(|p| !checked_marker(p).exists())
        .collect();
    found.sort();
    found
}

/// The file whose existence says an opener checked the manifest.
pub fn checked_marker(manifest: &Path) -> PathBuf {
    manifest.with_extension("checked")
}

/// What of the manifest is missing from `later` (a path's content now, or
/// `None` if there is no such file). Empty: nothing was lost.
pub fn problems(m: &Manifest, later: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let own = plan::own_file(m.n);
    let tag = plan::tag(m.n);
    let mut out = Vec::new();
    for f in &m.files {
        let Some(now) = later(&f.path) else {
            out.push(format!("{} ({}) is gone", f.path, short(&f.hash)));
            continue;
        };
        if now == f.content {
            continue;
        }
        if f.path == own {
            if !now.starts_with(&f.content) {
                out.push(format!(
                    "{} ({}, {} bytes) is no longer a prefix of what is there now ({} bytes)",
                    f.path,
                    short(&f.hash),
                    f.content.len(),
                    now.len()
                ));
            }
            continue;
        }
        let mine: Vec<&str> = f.content.lines().filter(|l| l.starts_with(&tag)).collect();
        if let Some(missing) = first_missing(&mine, now.lines()) {
            out.push(format!(
                "{} ({}): the line {missing:?} of t{} is gone or out of order",
                f.path,
                short(&f.hash),
                m.n
            ));
        }
    }
    out
}

/// The first of `wanted` that is not found, in order, in `lines`.
fn first_missing<'a, 'b>(
    wanted: &[&'a str],
    mut lines: impl Iterator<Item = &'b str>,
) -> Option<&'a str> {
    wanted.iter().find(|w| !lines.any(|l| l == **w)).copied()
}

fn short(hash: &str) -> &str {
    hash.get(..10).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(files: &[(&str, &str)]) -> Manifest {
        Manifest {
            task: 9,
            n: 3,
            worker: "w1".into(),
            epoch: 2,
            taken_at: 0,
            worktree: "/wt".into(),
            rebasing: false,
            files: files
                .iter()
                .map(|(p, c)| File {
                    path: p.to_string(),
                    hash: "abc".into(),
                    content: c.to_string(),
                })
                .collect(),
        }
    }

    #[test]
    fn own_files_must_grow_and_shared_files_keep_the_tasks_lines_in_order() {
        let m = manifest(&[
            ("tasks/t3.txt", "t3 a\nt3 b\n"),
            (
                "shared/s1.txt",
                "head\n<<<<<<< HEAD\nt1 x\n=======\nt3 c\n>>>>>>> t3\nt3 d\n",
            ),
        ]);
        let ok = |p: &str| {
            Some(match p {
                "tasks/t3.txt" => "t3 a\nt3 b\nt3 e\ndone t3\n".to_string(),
                _ => "head\nt2 y\nt3 c\nt1 x\nt3 d\n".to_string(),
            })
        };
        assert!(problems(&m, ok).is_empty());
        let rewritten = |p: &str| {
            Some(match p {
                "tasks/t3.txt" => "t3 b\n".to_string(),
                _ => "head\nt3 d\nt3 c\n".to_string(),
            })
        };
        let found = problems(&m, rewritten);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("prefix"), "{found:?}");
        assert!(found[1].contains("t3 d"), "{found:?}");
        assert_eq!(problems(&m, |_| None).len(), 2);
    }
}
