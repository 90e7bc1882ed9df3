//! One module per subcommand. Each takes the shared [`Ctx`] and its own arguments.

pub mod broadcast;
pub mod events;
pub mod find_bin;
pub mod inbox;
pub mod lead;
pub mod logs;
pub mod mcp;
pub mod member_ops;
pub mod plans;
pub mod repo;
pub mod requests;
pub mod review;
pub mod send;
pub mod shutdown;
pub mod spawn;
pub mod status;
pub mod task_add;
pub mod task_cancel;
pub mod task_depend;
pub mod task_diff;
pub mod task_retry;
pub mod task_show;
pub mod tasks;
pub mod team;
pub mod watch;
pub mod worktrees;

use crate::cli::{Cli, Command, Global, TaskCommand};
use crate::render;
use anyhow::Context as _;
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use teamboard_protocol::request::{EventsArgs, ListTasksArgs};
use teamboard_protocol::{
    Client, ClientError, ErrorCode, Event, Request, Task, TaskId, TaskStatus,
};

/// The client's name in the hello: the person at teamctl is the team's lead.
pub const CLIENT_KIND: &str = "teamctl";

/// What every command needs: where boardd is, which team, and the output format.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub socket: PathBuf,
    /// Whether the socket was named (`--socket` or `$TEAMBOARD_SOCKET`) rather than
    /// the default: a teammate started for this teamctl must then be told it too.
    pub socket_given: bool,
    pub team: String,
    pub json: bool,
    /// `--timeout` in seconds; 0 waits forever.
    pub timeout: u64,
    /// `--state-dir` or `$TEAMBOARD_STATE_DIR`, when given.
    pub state_dir_given: Option<PathBuf>,
}

impl Ctx {
    pub fn new(global: &Global) -> Ctx {
        let socket = global
            .socket
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(teamboard_protocol::paths::default_socket_path);
        Ctx {
            socket,
            socket_given: global
                .socket
                .as_ref()
                .is_some_and(|p| !p.as_os_str().is_empty()),
            team: global.team.clone(),
            json: global.json,
            timeout: global.timeout,
            state_dir_given: global
                .state_dir
                .clone()
                .filter(|p| !p.as_os_str().is_empty()),
        }
    }

    /// Where teammates' transcripts and process logs live: the one given, or the
    /// same default teammated and boardd work out for themselves.
    pub fn state_dir(&self) -> PathBuf {
        self.state_dir_given
            .clone()
            .unwrap_or_else(teamboard_protocol::paths::default_state_dir)
    }

    /// `--timeout` as a duration; `None` waits forever.
    pub fn timeout(&self) -> Option<std::time::Duration> {
        (self.timeout > 0).then(|| std::time::Duration::from_secs(self.timeout))
    }

    /// Opens a session as `lead` in the team.
    pub async fn connect(&self) -> anyhow::Result<Client> {
        Ok(Client::connect(
            &self.socket,
            CLIENT_KIND,
            teamboard_protocol::LEAD,
            &self.team,
        )
        .await?)
    }
}

/// Runs the parsed command line. A one-shot command that boardd leaves without an
/// answer for `--timeout` seconds fails with a line that says so, instead of
/// hanging a script forever.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let streams = matches!(&cli.command, Command::Watch(_))
        || matches!(&cli.command, Command::Events(a) if a.follow);
    // `logs` reads files and never talks to boardd; `spawn` applies --timeout to
    // each step itself, so that a teammate that does not connect in time is named
    // as the culprit rather than boardd; `shutdown` waits for the teammate's
    // answer until the request's deadline, which may be longer; `lead` becomes
    // the lead, which waits for the person; `task diff` times its boardd part only,
    // then git's pager waits for the person. `mcp` serves for as long as its client
    // runs, and bounds its tool calls itself; a teammate's own operations wait for
    // the teammate, whose completion may wait for the task's checks.
    let own_timing = matches!(
        &cli.command,
        Command::Spawn(_)
            | Command::Logs(_)
            | Command::Shutdown(_)
            | Command::Lead(_)
            | Command::Task(TaskCommand::Diff(_))
            | Command::Mcp(_)
            | Command::Task(
                TaskCommand::Complete(_) | TaskCommand::Fail(_) | TaskCommand::SubmitPlan(_)
            )
    );
    let timeout = cli.global.timeout;
    let command = dispatch(cli);
    if streams || own_timing || timeout == 0 {
        return command.await;
    }
    match tokio::time::timeout(std::time::Duration::from_secs(timeout), command).await {
        Ok(result) => result,
        Err(_) => Err(no_answer(timeout)),
    }
}

/// The flags among `flags` that were given (`true`), for an error that names
/// them.
pub fn given<const N: usize>(flags: [(bool, &'static str); N]) -> Vec<&'static str> {
    flags
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
}

/// `--a is` or `--a and --b are`: how an error about `flags` starts.
pub fn flags_are(flags: &[&str]) -> String {
    let verb = if flags.len() == 1 { "is" } else { "are" };
    format!("{} {verb}", flags.join(" and "))
}

/// The error for a boardd that left a request unanswered for `--timeout` seconds.
pub fn no_answer(timeout: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "boardd did not answer within {timeout} s; it may be stuck (see `journalctl --user -u boardd`), or raise --timeout"
    )
}

async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    let ctx = Ctx::new(&cli.global);
    match cli.command {
        Command::Status => status::run(&ctx).await,
        Command::Task(TaskCommand::Add(args)) => task_add::run(&ctx, args).await,
        Command::Task(TaskCommand::Show(args)) => task_show::run(&ctx, args).await,
        Command::Task(TaskCommand::Depend(args)) => task_depend::run(&ctx, args).await,
        Command::Task(TaskCommand::Cancel(args)) => task_cancel::run(&ctx, args).await,
        Command::Task(TaskCommand::Retry(args)) => task_retry::run(&ctx, args).await,
        Command::Task(TaskCommand::Diff(args)) => task_diff::run(&ctx, args).await,
        Command::Tasks(args) => tasks::run(&ctx, args).await,
        Command::Team => team::run(&ctx).await,
        Command::Spawn(args) => spawn::run(&ctx, args).await,
        Command::Lead(args) => lead::run(&ctx, args),
        Command::Logs(args) => logs::run(&ctx, args).await,
        Command::Send(args) => send::run(&ctx, args).await,
        Command::Broadcast(args) => broadcast::run(&ctx, args).await,
        Command::Inbox(args) => inbox::run(&ctx, args).await,
        Command::Events(args) => events::run(&ctx, args).await,
        Command::Watch(args) => watch::run(&ctx, args).await,
        Command::Shutdown(args) => shutdown::run(&ctx, args).await,
        Command::Requests(args) => requests::run(&ctx, args).await,
        Command::Plans(args) => plans::run(&ctx, args).await,
        Command::Approve(args) => review::approve(&ctx, args).await,
        Command::Reject(args) => review::reject(&ctx, args).await,
        Command::Repo(args) => repo::run(&ctx, args).await,
        Command::Worktrees(args) => worktrees::run(&ctx, args).await,
        Command::Mcp(args) => mcp::run(&ctx, args).await,
        Command::Task(TaskCommand::Complete(args)) => member_ops::complete(&ctx, args).await,
        Command::Task(TaskCommand::Fail(args)) => member_ops::fail(&ctx, args).await,
        Command::Task(TaskCommand::SubmitPlan(args)) => member_ops::submit_plan(&ctx, args).await,
    }
}

/// Decodes a raw answer, with an error that says what boardd sent was unexpected.
pub fn decode<T: DeserializeOwned>(value: &serde_json::Value, what: &str) -> anyhow::Result<T> {
    T::deserialize(value).with_context(|| format!("unexpected answer from boardd for {what}"))
}

/// The board's tasks, raw (as boardd sent them) and decoded.
pub async fn fetch_tasks(
    client: &Client,
    status: Option<TaskStatus>,
) -> anyhow::Result<(serde_json::Value, Vec<Task>)> {
    let raw = client
        .call_value(Request::ListTasks(ListTasksArgs { status }))
        .await?;
    let tasks = decode(&raw, "list_tasks")?;
    Ok((raw, tasks))
}

/// Prints a task the lead just changed: its line (with open blockers worked out from
/// the whole board) or, with `--json`, the task object as boardd returned it.
pub async fn print_changed_task(
    ctx: &Ctx,
    client: &Client,
    raw: serde_json::Value,
    what: &str,
) -> anyhow::Result<()> {
    if ctx.json {
        return render::json(&raw);
    }
    let task: Task = decode(&raw, what)?;
    let (_, all) = fetch_tasks(client, None).await?;
    let board = render::Board::new(&all);
    render::line(&render::task_line(&task, &board, 0))?;
    Ok(())
}

/// The error for a live view whose daemon went away.
fn daemon_gone() -> anyhow::Error {
    anyhow::anyhow!(
        "boardd went away (the connection closed). Start it again with \
         `systemctl --user start boardd`, or run `boardd` in another terminal"
    )
}

/// How often a live view reconnects in a row, without an event in between, before
/// it gives up.
const MAX_RECONNECTS: u32 = 3;

/// Reconnection for the live views (`events --follow`, `watch`).
#[derive(Debug, Default)]
pub struct Reconnects {
    in_a_row: u32,
}

impl Reconnects {
    /// An event arrived: the stream works again.
    pub fn reset(&mut self) {
        self.in_a_row = 0;
    }

    /// The subscribed connection ended: a fresh, subscribed client, or an error that
    /// says boardd went away or keeps closing the stream.
    pub async fn again(&mut self, ctx: &Ctx) -> anyhow::Result<Client> {
        self.in_a_row += 1;
        if self.in_a_row > MAX_RECONNECTS {
            anyhow::bail!("boardd keeps closing the event stream; giving up");
        }
        resubscribe(ctx).await?.ok_or_else(daemon_gone)
    }
}

/// After a subscribed connection ended: reconnects and subscribes again, or `None`
/// when boardd is not there any more.
///
/// boardd closes the connection of a subscriber that falls too far behind (`busy`);
/// the cure is to reconnect, subscribe and catch up with `events` since the last
/// `seq` seen. If nothing listens on the socket, the daemon has stopped.
async fn resubscribe(ctx: &Ctx) -> anyhow::Result<Option<Client>> {
    let client = match ctx.connect().await {
        Ok(c) => c,
        Err(e) => match e.downcast_ref::<ClientError>() {
            Some(ClientError::NotRunning { .. } | ClientError::Closed(_)) => return Ok(None),
            _ => return Err(e),
        },
    };
    match client.subscribe().await {
        Ok(()) => Ok(Some(client)),
        Err(ClientError::Closed(_)) => Ok(None),
        Err(ClientError::Server(body)) if body.code == ErrorCode::ShuttingDown => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Every event after `since` (optionally of one task), oldest first, paging forward
/// so that nothing is skipped however many there are.
pub async fn events_after(
    client: &Client,
    since: u64,
    task: Option<TaskId>,
) -> anyhow::Result<Vec<Event>> {
    const PAGE: u64 = 1000;
    let mut all = Vec::new();
    let mut since = since;
    loop {
        let page = client
            .events(EventsArgs {
                since: Some(since),
                task,
                limit: Some(PAGE),
            })
            .await?;
        let full = page.len() as u64 >= PAGE;
        match page.last() {
            Some(last) if last.seq > since => since = last.seq,
            _ => {
                all.extend(page);
                return Ok(all);
            }
        }
        all.extend(page);
        if !full {
            return Ok(all);
        }
    }
}
