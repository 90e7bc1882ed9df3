//! One module per subcommand. Each takes the shared [`Ctx`] and its own arguments.

pub mod budget;
pub mod completions;
pub mod events;
pub mod find_bin;
pub mod lead;
pub mod logs;
pub mod mcp;
pub mod member_ops;
pub mod messages;
pub mod overview;
pub mod repo;
pub mod requests;
pub mod review;
pub mod shutdown;
pub mod spawn;
pub mod task;
pub mod task_diff;
pub mod token;
pub mod watch;
pub mod web;

use crate::cli::{Cli, Command, Global, TaskCommand};
use crate::render;
use anyhow::Context as _;
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::time::Duration;
use teamboard_protocol::request::{EventsArgs, ListTasksArgs};
use teamboard_protocol::{
    Client, ClientError, Credential, Endpoint, ErrorCode, Event, Remote, Request, Task, TaskId,
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
    /// `--new-team`: `team` is created if no team has that name.
    pub new_team: bool,
    pub json: bool,
    /// `--timeout` in seconds; 0 waits forever.
    pub timeout: u64,
    /// `--state-dir` or `$TEAMBOARD_STATE_DIR`, when given.
    pub state_dir_given: Option<PathBuf>,
    /// `--connect` with its token (and CA) file: boardd over the network,
    /// in place of `socket`.
    pub remote: Option<Remote>,
}

impl Ctx {
    pub fn new(global: &Global) -> Ctx {
        let given = |p: &Option<PathBuf>| p.clone().filter(|p| !p.as_os_str().is_empty());
        let socket = given(&global.socket);
        Ctx {
            socket_given: socket.is_some(),
            socket: socket.unwrap_or_else(teamboard_protocol::paths::default_socket_path),
            team: global
                .new_team
                .clone()
                .unwrap_or_else(|| global.team.clone()),
            new_team: global.new_team.is_some(),
            json: global.json,
            timeout: global.timeout,
            state_dir_given: given(&global.state_dir),
            remote: global.connect.clone().map(|endpoint| Remote {
                endpoint: endpoint.with_ca_file(global.ca_file.clone()),
                token_file: global.token_file.clone().unwrap_or_default(),
            }),
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
    pub fn timeout(&self) -> Option<Duration> {
        (self.timeout > 0).then(|| Duration::from_secs(self.timeout))
    }

    /// The lead's credential: `$TEAMBOARD_LEAD_KEY`, or `lead.key` in the
    /// state directory.
    pub fn lead_key(&self) -> anyhow::Result<Credential> {
        let dir = self.state_dir();
        Ok(teamboard_protocol::lead_key::lead_key(Some(&dir))?)
    }

    /// Where boardd is, and what vouches for this host there: `--connect` and
    /// its token, or the socket and the lead's key. The credential's error is
    /// kept, to be said when boardd refuses the session.
    pub fn endpoint_and_credential(&self) -> (Endpoint, Result<Credential, String>) {
        match &self.remote {
            Some(remote) => (
                remote.endpoint.clone(),
                remote.token().map_err(|e| e.to_string()),
            ),
            None => (
                Endpoint::Unix(self.socket.clone()),
                self.lead_key().map_err(|e| e.to_string()),
            ),
        }
    }

    /// Opens a session as `lead` in the team, which must exist unless
    /// `--new-team` named it.
    ///
    /// A key it cannot read is said after the connection: without the key
    /// boardd would refuse every request, but a boardd that is not running at
    /// all is the first thing to put right.
    pub async fn connect(&self) -> anyhow::Result<Client> {
        self.connect_as(teamboard_protocol::LEAD).await
    }

    /// [`Ctx::connect`], except that over the network (`--connect`) the
    /// session is `name`, the one the token vouches for: `spawn` watches for
    /// its teammate with the token it hands the teammate. Over the socket the
    /// lead's key vouches for any name, and the session stays the lead's.
    pub async fn connect_as(&self, name: &str) -> anyhow::Result<Client> {
        if let Some(remote) = &self.remote {
            // Over the network the token is the only credential: a lead.key
            // on this host belongs to another boardd.
            let token = remote.token()?;
            let new_team = Some(self.new_team);
            let client = Client::open(
                &remote.endpoint,
                CLIENT_KIND,
                name,
                &self.team,
                new_team,
                Some(&token),
            );
            return Ok(client.await?);
        }
        let key = self.lead_key();
        let client = Client::join(
            &self.socket,
            CLIENT_KIND,
            teamboard_protocol::LEAD,
            &self.team,
            self.new_team,
            key.as_ref().ok(),
        )
        .await?;
        key?;
        Ok(client)
    }

    /// Sends `request` on `client`. With `--json` prints boardd's answer as it
    /// came and gives `None`; otherwise gives the answer decoded.
    pub async fn call<T: DeserializeOwned>(
        &self,
        client: &Client,
        request: Request,
    ) -> anyhow::Result<Option<T>> {
        let op = request.op();
        let raw = client.call_value(request).await?;
        if self.json {
            render::json(&raw)?;
            return Ok(None);
        }
        decode(&raw, op).map(Some)
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
            | Command::Mcp(_)
            | Command::Web(_)
            | Command::Task(
                TaskCommand::Diff(_)
                    | TaskCommand::Complete(_)
                    | TaskCommand::Fail(_)
                    | TaskCommand::SubmitPlan(_)
            )
    );
    let ctx = Ctx::new(&cli.global);
    let limit = ctx.timeout().filter(|_| !streams && !own_timing);
    within(limit, dispatch(&ctx, cli.command)).await
}

/// Runs `step` under `limit`; one that takes longer fails with [`no_answer`].
pub async fn within<T, E: Into<anyhow::Error>>(
    limit: Option<Duration>,
    step: impl Future<Output = Result<T, E>>,
) -> anyhow::Result<T> {
    match limit {
        Some(limit) => match tokio::time::timeout(limit, step).await {
            Ok(done) => done.map_err(Into::into),
            Err(_) => Err(no_answer(limit.as_secs())),
        },
        None => step.await.map_err(Into::into),
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

async fn dispatch(ctx: &Ctx, command: Command) -> anyhow::Result<()> {
    match command {
        Command::Status => overview::status(ctx).await,
        Command::Token(command) => token::run(ctx, command).await,
        Command::Task(TaskCommand::Add(args)) => task::add(ctx, args).await,
        Command::Task(TaskCommand::Show(args)) => task::show(ctx, args).await,
        Command::Task(TaskCommand::Depend(args)) => task::depend(ctx, args).await,
        Command::Task(TaskCommand::Edit(args)) => task::edit(ctx, args).await,
        Command::Task(TaskCommand::Delete(args)) => task::delete(ctx, args).await,
        Command::Task(TaskCommand::Cancel(args)) => task::cancel(ctx, args).await,
        Command::Task(TaskCommand::Retry(args)) => task::retry(ctx, args).await,
        Command::Task(TaskCommand::AcceptChecks(args)) => task::accept_checks(ctx, args).await,
        Command::Task(TaskCommand::Diff(args)) => task_diff::run(ctx, args).await,
        Command::Task(TaskCommand::Complete(args)) => member_ops::complete(ctx, args).await,
        Command::Task(TaskCommand::Fail(args)) => member_ops::fail(ctx, args).await,
        Command::Task(TaskCommand::SubmitPlan(args)) => member_ops::submit_plan(ctx, args).await,
        Command::Tasks(args) => task::list(ctx, args).await,
        Command::Team => overview::team(ctx).await,
        Command::Budget(args) => budget::run(ctx, args).await,
        Command::Spawn(args) => spawn::run(ctx, args).await,
        Command::Lead(args) => lead::run(ctx, args),
        Command::Logs(args) => logs::run(ctx, args).await,
        Command::Send(args) => messages::send(ctx, args).await,
        Command::Broadcast(args) => messages::broadcast(ctx, args).await,
        Command::Inbox(args) => messages::inbox(ctx, args).await,
        Command::Events(args) => events::run(ctx, args).await,
        Command::Watch(args) => watch::run(ctx, args).await,
        Command::Shutdown(args) => shutdown::run(ctx, args).await,
        Command::Requests(args) => requests::list(ctx, args).await,
        Command::Plans(args) => requests::plans(ctx, args).await,
        Command::Approve(args) => requests::decide(ctx, args.request, true, args.feedback).await,
        Command::Reject(args) => requests::reject(ctx, args).await,
        Command::Repo(args) => repo::repo(ctx, args).await,
        Command::Worktrees(args) => repo::worktrees(ctx, args).await,
        Command::Review => review::list(ctx).await,
        Command::Merge(args) => review::merge(ctx, args.id).await,
        Command::SendBack(args) => review::send_back(ctx, args).await,
        Command::Mcp(args) => mcp::run(ctx, args).await,
        Command::Completions(args) => completions::run(ctx, &args),
        Command::Web(args) => web::run(ctx, args).await,
    }
}

/// Decodes a raw answer, with an error that says what boardd sent was unexpected.
pub fn decode<T: DeserializeOwned>(value: &serde_json::Value, what: &str) -> anyhow::Result<T> {
    T::deserialize(value).with_context(|| format!("unexpected answer from boardd for {what}"))
}

/// The whole board, decoded.
pub async fn fetch_tasks(client: &Client) -> anyhow::Result<Vec<Task>> {
    let raw = client
        .call_value(Request::ListTasks(ListTasksArgs::default()))
        .await?;
    decode(&raw, "list_tasks")
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
    ///
    /// boardd closes the connection of a subscriber that falls too far behind
    /// (`busy`); the cure is to reconnect, subscribe and catch up with `events`
    /// since the last `seq` seen. If nothing listens on the socket, the daemon has
    /// stopped.
    pub async fn again(&mut self, ctx: &Ctx) -> anyhow::Result<Client> {
        self.in_a_row += 1;
        if self.in_a_row > MAX_RECONNECTS {
            anyhow::bail!("boardd keeps closing the event stream; giving up");
        }
        let gone = || {
            anyhow::anyhow!(
                "boardd went away (the connection closed). Start it again with \
                 `systemctl --user start boardd`, or run `boardd` in another terminal"
            )
        };
        let client = match ctx.connect().await {
            Ok(c) => c,
            Err(e) => match e.downcast_ref::<ClientError>() {
                Some(ClientError::NotRunning { .. } | ClientError::Closed(_)) => return Err(gone()),
                _ => return Err(e),
            },
        };
        match client.subscribe().await {
            Ok(()) => Ok(client),
            Err(ClientError::Closed(_)) => Err(gone()),
            Err(ClientError::Server(body)) if body.code == ErrorCode::ShuttingDown => Err(gone()),
            Err(e) => Err(e.into()),
        }
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
    let (mut all, mut since) = (Vec::new(), since);
    loop {
        let (task, limit) = (task, Some(PAGE));
        let page = client
            .events(EventsArgs {
                since: Some(since),
                task,
                limit,
            })
            .await?;
        // A full page may have more behind it; one that does not move on has not.
        let more = page.len() as u64 >= PAGE && page.last().is_some_and(|e| e.seq > since);
        since = page.last().map_or(since, |e| e.seq.max(since));
        all.extend(page);
        if !more {
            return Ok(all);
        }
    }
}
