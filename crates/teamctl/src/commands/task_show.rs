//! `teamctl task show`: one task with its history.

use super::{Ctx, decode, fetch_tasks};
use crate::cli::TaskIdArg;
use crate::render;
use teamboard_protocol::request::TaskRef;
use teamboard_protocol::{Request, TaskDetail, TeamRequest};

pub async fn run(ctx: &Ctx, args: TaskIdArg) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let raw = client
        .call_value(Request::GetTask(TaskRef { id: args.id }))
        .await?;
    if ctx.json {
        // boardd's answer is already the task object with `history` and `plans`.
        return render::json(&raw);
    }
    let detail: TaskDetail = decode(&raw, "get_task")?;
    let (_, all) = fetch_tasks(&client, None).await?;
    let board = render::Board::new(&all);
    let t = &detail.task;
    let now = render::now_ms();

    let mut state = render::status_word(t.status).to_string();
    if t.ready {
        state.push_str(" (ready)");
    }
    let blockers = if t.blocked_by.is_empty() {
        "-".to_string()
    } else {
        t.blocked_by
            .iter()
            .map(|b| match board.status_of(*b) {
                Some(s) => format!("#{b} {}", render::status_word(s)),
                None => format!("#{b}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let dependents: Vec<_> = all
        .iter()
        .filter(|o| o.blocked_by.contains(&t.id))
        .map(|o| o.id)
        .collect();

    let mut out = vec![
        format!("{} #{}  {}", render::marker(t.status), t.id, t.subject),
        format!("status:     {state}"),
        format!("owner:      {}", t.owner.as_deref().unwrap_or("-")),
        format!("blocked by: {blockers}"),
    ];
    if !dependents.is_empty() {
        out.push(format!("blocks:     {}", render::id_list(&dependents)));
    }
    out.push(format!("priority:   {}", t.priority));
    out.push(format!(
        "role:       {}",
        t.role.as_deref().unwrap_or("any")
    ));
    out.push(format!("attempts:   {}", t.attempts));
    if t.require_plan {
        out.push("plan:       required: an approved plan before changing anything".into());
    }
    if t.tokens.total() > 0 {
        out.push(format!("tokens:     {}", render::tokens(&t.tokens)));
    }
    out.push(format!(
        "created:    {} ({})",
        render::datetime(t.created_at),
        render::ago(t.created_at, now)
    ));
    out.push(format!(
        "updated:    {} ({})",
        render::datetime(t.updated_at),
        render::ago(t.updated_at, now)
    ));
    out.extend(render::task_worktree_lines(t, now));
    if let Some(result) = &t.result {
        push_block(&mut out, "result", result);
    }
    if let Some(err) = &t.last_error {
        push_block(&mut out, "last error", err);
    }
    if !t.description.is_empty() {
        push_block(&mut out, "description", &t.description);
    }
    if let Some(note) = &t.handoff {
        push_block(&mut out, "handoff", note);
    }
    if !detail.plans.is_empty() {
        out.push(String::new());
        out.push("plans:".into());
        for p in &detail.plans {
            out.extend(plan_lines(p, now).into_iter().map(|l| format!("  {l}")));
        }
    }
    if !t.check_runs.is_empty() {
        out.push(String::new());
        out.push("check runs (the last of each):".into());
        out.extend(
            render::check_run_lines(&t.check_runs, now)
                .into_iter()
                .map(|l| format!("  {l}")),
        );
    }
    out.push(String::new());
    if detail.history.is_empty() {
        out.push("history: (none)".into());
    } else {
        out.push("history:".into());
        out.extend(
            detail
                .history
                .iter()
                .map(|e| format!("  {}", render::history_line(e))),
        );
    }
    render::lines(&out)?;
    Ok(())
}

/// A plan of the task: who submitted it for which claim, its state and decision,
/// the text, and the feedback.
fn plan_lines(p: &TeamRequest, now: i64) -> Vec<String> {
    let mut head = format!(
        "{}  by {}  claim {}  {}  submitted {}",
        render::request_tag(p.id),
        p.from,
        p.epoch.map_or_else(|| "-".to_string(), |e| e.to_string()),
        p.state,
        render::ago(p.created_at, now)
    );
    if let (Some(by), Some(at)) = (&p.answered_by, p.answered_at) {
        head.push_str(&format!(", {} by {by} at {}", p.state, render::clock(at)));
    }
    let mut out = vec![head];
    let text = p.plan.as_deref().unwrap_or_default();
    out.extend(text.lines().map(|l| format!("    {l}")));
    if let Some(f) = &p.feedback {
        out.push(format!("  feedback: {}", render::one_line(f)));
    }
    out
}

/// `label:` followed by the text; a multi-line text goes on indented lines below.
fn push_block(out: &mut Vec<String>, label: &str, text: &str) {
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        // The other fields align their values at column 12; a label too long for
        // that ("description:") still gets a space.
        (Some(first), None) => out.push(format!("{:<11} {first}", format!("{label}:"))),
        _ => {
            out.push(format!("{label}:"));
            out.extend(text.lines().map(|l| format!("  {l}")));
        }
    }
}
