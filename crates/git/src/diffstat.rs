//! How big a change is, as `git diff --numstat` counts it.

use crate::cmd::git;
use crate::error::GitError;
use crate::{Repo, names};

/// Files changed, and lines added and removed (a binary file counts none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffStat {
    pub files: u32,
    pub added: u64,
    pub removed: u64,
}

impl Repo {
    /// The change `head` makes since it forked from `base` (`base...head`):
    /// what a review of `head` reads, whatever `base` did meanwhile.
    pub fn diff_stat(&self, base: &str, head: &str) -> Result<DiffStat, GitError> {
        names::check(base)?;
        names::check(head)?;
        let text = git(self.root())
            .args(["diff", "--numstat", "--no-renames", "--no-ext-diff"])
            .arg(format!("{base}...{head}"))
            .arg("--")
            .run()?;
        Ok(parse_numstat(&text))
    }
}

/// `added<TAB>removed<TAB>path` per file; a binary file reads `-` for both.
pub fn parse_numstat(text: &str) -> DiffStat {
    let mut stat = DiffStat::default();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let mut fields = line.splitn(3, '\t');
        let added = fields.next().and_then(|n| n.parse::<u64>().ok());
        let removed = fields.next().and_then(|n| n.parse::<u64>().ok());
        stat.files += 1;
        stat.added += added.unwrap_or(0);
        stat.removed += removed.unwrap_or(0);
    }
    stat
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numstat_counts_files_and_lines_and_no_lines_of_a_binary() {
        let text = "3\t1\tsrc/a.rs\n0\t7\tREADME\n-\t-\tlogo.png\n";
        assert_eq!(
            parse_numstat(text),
            DiffStat {
                files: 3,
                added: 3,
                removed: 8
            }
        );
        assert_eq!(parse_numstat(""), DiffStat::default());
    }
}
