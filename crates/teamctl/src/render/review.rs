//! Text for review before merge: what waits, and what `merge` and `send-back`
//! did.

use super::{duration, one_line, plural, short_oid};
use teamboard_protocol::text::fit_chars_with_ellipsis;
use teamboard_protocol::{DiffStat, Task};

/// How much of a subject the review table keeps.
const SUBJECT_WIDTH: usize = 40;

/// `3 files, +40 -2`.
pub fn diff_size(d: &DiffStat) -> String {
    format!(
        "{}, +{} -{}",
        plural(u64::from(d.files), "file"),
        d.added,
        d.removed
    )
}

/// `teamctl review`: one line per task that waits, oldest wait first, under a
/// header.
pub fn review_table(tasks: &[Task], now: i64) -> Vec<String> {
    let mut rows: Vec<(i64, [String; 6])> = tasks
        .iter()
        .filter_map(|t| {
            let l = t.landing.as_ref()?;
            let since = l.review_at.unwrap_or(l.since);
            let waited = duration(u64::try_from(now.saturating_sub(since)).unwrap_or(0));
            let size = l.diff.as_ref().map_or("?".to_string(), diff_size);
            let head = l.head.as_deref().map_or("?", short_oid).to_string();
            let owner = t.owner.clone().unwrap_or_else(|| "-".into());
            let subject = fit_chars_with_ellipsis(&one_line(&t.subject), SUBJECT_WIDTH);
            Some((
                since,
                [format!("#{}", t.id), owner, size, waited, head, subject],
            ))
        })
        .collect();
    rows.sort_by_key(|(since, r)| (*since, r[0].clone()));
    let header = ["TASK", "OWNER", "SIZE", "WAITED", "HEAD", "SUBJECT"].map(String::from);
    let all: Vec<&[String; 6]> = std::iter::once(&header)
        .chain(rows.iter().map(|(_, r)| r))
        .collect();
    let widths: Vec<usize> = (0..6)
        .map(|i| all.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    all.iter()
        .map(|r| {
            let cells: Vec<String> = (0..5)
                .map(|i| format!("{:<w$}", r[i], w = widths[i]))
                .chain(std::iter::once(r[5].clone()))
                .collect();
            cells.join("  ")
        })
        .collect()
}

/// What `teamctl merge` prints once the task landed.
pub fn merged_line(t: &Task) -> String {
    match t.worktree.as_ref().and_then(|w| w.merged.as_deref()) {
        Some(merged) => format!("merged #{}: landed as {}", t.id, short_oid(merged)),
        None => match &t.landing {
            Some(l) if l.stage == teamboard_protocol::LandingStage::Blocked => format!(
                "merged #{}: it waits to land: {} has changes in the way ({}); it lands once they are committed or undone, or on `teamctl task retry {}`",
                t.id,
                l.checkout.as_deref().unwrap_or("your checkout"),
                l.paths.join(", "),
                t.id
            ),
            _ => format!("merged #{}: it is {} now", t.id, t.status),
        },
    }
}

/// What `teamctl send-back` prints.
pub fn sent_back_line(t: &Task) -> String {
    match (&t.owner, t.status) {
        (Some(owner), teamboard_protocol::TaskStatus::InProgress) => format!(
            "sent #{} back to {owner}: it keeps the task and works on it again with your feedback",
            t.id
        ),
        _ => format!(
            "sent #{} back: its owner is gone, so it is {} again, with your feedback for its next owner",
            t.id, t.status
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use teamboard_protocol::{Landing, LandingStage};

    fn waiting(id: u64, review_at: i64, diff: DiffStat) -> Task {
        let mut t: Task = serde_json::from_value(serde_json::json!({
            "id": id, "subject": format!("task {id}"), "status": "in_progress",
            "owner": "alice", "created_at": 0, "updated_at": 0
        }))
        .unwrap();
        t.landing = Some(Landing {
            stage: LandingStage::Review,
            result: "done".into(),
            head: Some("abcdef0123456789".into()),
            since: review_at - 1000,
            queued_at: None,
            review_at: Some(review_at),
            diff: Some(diff),
            paths: Vec::new(),
            checkout: None,
            onto: None,
        });
        t
    }

    #[test]
    fn the_review_table_shows_size_and_wait_oldest_first() {
        let one = DiffStat {
            files: 1,
            added: 3,
            removed: 0,
        };
        let two = DiffStat {
            files: 2,
            added: 40,
            removed: 12,
        };
        let tasks = vec![waiting(4, 50_000, one), waiting(3, 10_000, two)];
        assert_eq!(
            review_table(&tasks, 70_000),
            vec![
                "TASK  OWNER  SIZE              WAITED  HEAD     SUBJECT",
                "#3    alice  2 files, +40 -12  1m 0s   abcdef0  task 3",
                "#4    alice  1 file, +3 -0     20s     abcdef0  task 4",
            ]
        );
    }
}
