//! The board's tasks: `teamctl tasks` (one line per task) and `teamctl task
//! add | show | edit | delete | depend | cancel | retry | accept-checks`.

use super::{Ctx, fetch_tasks};
use crate::cli::{
    TaskAcceptChecksArgs, TaskAddArgs, TaskCancelArgs, TaskDependArgs, TaskEditArgs, TaskIdArg,
    TasksArgs,
};
use crate::render;
use teamboard_protocol::request::{
    AcceptChecksArgs, AddDependencyArgs, CancelArgs, EditTaskArgs, ListTasksArgs, NewTask, TaskRef,
};
use teamboard_protocol::{Request, Task, TaskDetail, TeamRequest};

/// `teamctl tasks`.
pub async fn list(ctx: &Ctx, args: TasksArgs) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    if ctx.json {
        // Exactly what boardd returned, filtered by boardd.
        let request = Request::ListTasks(ListTasksArgs {
            status: args.status,
            landing: None,
        });
        return ctx.call::<Vec<Task>>(&client, request).await.map(drop);
    }
    // Open blockers need every task's status, so fetch the whole board and filter here.
    let all = fetch_tasks(&client).await?;
    let board = render::Board::new(&all);
    let shown: Vec<_> = all
        .iter()
        .filter(|t| args.status.is_none_or(|s| t.status == s))
        .cloned()
        .collect();
    if shown.is_empty() {
        match args.status {
            Some(s) => render::note(format_args!(
                "no {} tasks in team '{}'",
                render::status_word(s),
                ctx.team
            )),
            None => render::note(format_args!(
                "no tasks in team '{}' yet (add one with `teamctl task add SUBJECT`)",
                ctx.team
            )),
        }
        return Ok(());
    }
    render::lines(&render::task_lines(&shown, &board))?;
    Ok(())
}

/// `teamctl task add`: creates a task and prints its id.
pub async fn add(ctx: &Ctx, args: TaskAddArgs) -> anyhow::Result<()> {
    if args.subject.trim().is_empty() {
        anyhow::bail!("a task needs a subject: teamctl task add 'What to do'");
    }
    let client = ctx.connect().await?;
    let request = Request::AddTask(NewTask {
        subject: args.subject,
        description: args.description,
        blocked_by: args.blocked_by,
        priority: args.priority,
        role: args.role.filter(|r| !r.is_empty()),
        require_plan: args.require_plan,
        checks: args.checks,
        no_worktree: args.no_worktree,
        review: args.review,
    });
    if let Some(task) = ctx.call::<Task>(&client, request).await? {
        // Just the id, so that scripts can write `id=$(teamctl task add ...)`.
        render::line(&task.id.to_string())?;
    }
    Ok(())
}

/// `teamctl task depend ID --on ID...`.
pub async fn depend(ctx: &Ctx, args: TaskDependArgs) -> anyhow::Result<()> {
    if args.on.contains(&args.id) {
        anyhow::bail!("#{} cannot wait for itself", args.id);
    }
    let (id, on) = (args.id, args.on);
    change(ctx, Request::AddDependency(AddDependencyArgs { id, on })).await
}

/// `teamctl task edit ID [--subject] [--description] [--priority] [--role]`.
pub async fn edit(ctx: &Ctx, args: TaskEditArgs) -> anyhow::Result<()> {
    let TaskEditArgs {
        id,
        subject,
        description,
        priority,
        role,
    } = args;
    if subject.is_none() && description.is_none() && priority.is_none() && role.is_none() {
        anyhow::bail!(
            "name something to change: teamctl task edit {id} --subject TEXT | --description TEXT | --priority N | --role ROLE"
        );
    }
    let edit = EditTaskArgs {
        id,
        subject,
        description,
        priority,
        role,
    };
    change(ctx, Request::EditTask(edit)).await
}

/// `teamctl task delete ID`: prints the task as it was, marked deleted.
pub async fn delete(ctx: &Ctx, args: TaskIdArg) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let request = Request::DeleteTask(TaskRef { id: args.id });
    if let Some(task) = ctx.call::<Task>(&client, request).await? {
        render::line(&format!("deleted #{} {}", task.id, task.subject))?;
    }
    Ok(())
}

/// `teamctl task cancel ID [--discard]`.
pub async fn cancel(ctx: &Ctx, args: TaskCancelArgs) -> anyhow::Result<()> {
    let (id, discard) = (args.id, args.discard);
    change(ctx, Request::CancelTask(CancelArgs { id, discard })).await
}

/// `teamctl task retry ID`.
pub async fn retry(ctx: &Ctx, args: TaskIdArg) -> anyhow::Result<()> {
    change(ctx, Request::RetryTask(TaskRef { id: args.id })).await
}

/// `teamctl task accept-checks ID [--reject]`.
pub async fn accept_checks(ctx: &Ctx, args: TaskAcceptChecksArgs) -> anyhow::Result<()> {
    let (id, reject) = (args.id, args.reject);
    change(ctx, Request::AcceptChecks(AcceptChecksArgs { id, reject })).await
}

/// Sends a request that changes a task, and prints the task: its line (with open
/// blockers worked out from the whole board) or, with `--json`, the task object
/// as boardd returned it.
async fn change(ctx: &Ctx, request: Request) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    let Some(task) = ctx.call::<Task>(&client, request).await? else {
        return Ok(());
    };
    let all = fetch_tasks(&client).await?;
    render::line(&render::task_line(&task, &render::Board::new(&all), 0))?;
    Ok(())
}

/// `teamctl task show`: one task with its plans and history.
pub async fn show(ctx: &Ctx, args: TaskIdArg) -> anyhow::Result<()> {
    let client = ctx.connect().await?;
    // With --json, boardd's answer is already the task object with `history` and
    // `plans`.
    let request = Request::GetTask(TaskRef { id: args.id });
    let Some(detail) = ctx.call::<TaskDetail>(&client, request).await? else {
        return Ok(());
    };
    let all = fetch_tasks(&client).await?;
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
    if t.tokens.total() > 0 || !t.cost.is_zero() {
        out.push(format!("tokens:     {}", render::tokens(&t.tokens)));
        out.push(format!("cost:       {}", render::cost(&t.cost)));
    }
    for (label, at) in [("created", t.created_at), ("updated", t.updated_at)] {
        out.push(format!(
            "{label}:    {} ({})",
            render::datetime(at),
            render::ago(at, now)
        ));
    }
    out.extend(render::task_worktree_lines(t, now));
    let blocks = [
        ("result", t.result.as_deref()),
        ("last error", t.last_error.as_deref()),
        (
            "description",
            Some(t.description.as_str()).filter(|d| !d.is_empty()),
        ),
        ("handoff", t.handoff.as_deref()),
    ];
    for (label, text) in blocks {
        if let Some(text) = text {
            push_block(&mut out, label, text);
        }
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
