//! Command-line definitions. Every subcommand's `--help` should teach how to use it.

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::path::PathBuf;
use strum::{VariantArray, VariantNames};
use teamboard_protocol::launch::{check_context_budget, parse_base_url};
use teamboard_protocol::lead_args::{LeadGoalArgs, LeadSpawnArgs};
use teamboard_protocol::{
    MaxTokensField, MessageKind, ProviderKind, RequestId, RequestKind, SandboxMode, TaskId,
    TaskStatus,
};

mod budget;
mod member;
mod repo;
pub use budget::*;
pub use member::*;
pub use repo::*;
mod runtime;
pub use runtime::*;
mod web;
pub use web::*;

const ABOUT: &str = "Drive a teamboard: tasks, teammates, messages and a live view";

const LONG_ABOUT: &str = "\
teamctl talks to boardd, the daemon that owns a durable task board for a team of LLM \
agents. You are the team's lead: you break a goal into tasks with dependencies, the \
teammates claim ready tasks on their own, and you follow along, message them and fix \
what goes wrong.

A task is ready when it is pending, has no owner and all its blockers are completed. \
Commands that report accept --json for scripts; those with no JSON form (watch, lead, \
mcp, task diff, completions) say so. Times are shown in UTC.";

const EXAMPLES: &str = "\
Examples:
  teamctl status                         is boardd running? what is on the board?
  teamctl spawn alice --role coder       start a teammate (a teammated process)
  a=$(teamctl task add 'Design the API' -d 'REST, JSON')
  b=$(teamctl task add 'Implement it' --blocked-by $a --role coder)
  teamctl tasks                          the board, one line per task
  teamctl task show $b                   one task and its history
  teamctl repo set ~/src/app             each task in a git worktree of its own
  teamctl task diff $b                   what a task changed
  teamctl worktrees                      the task worktrees, their state and size
  teamctl team                           who is working on what
  teamctl budget set --usd 5 --per 1d    at most $5 a day; `teamctl budget` shows it
  teamctl logs alice --follow            what alice's model sees and does, live
  teamctl send alice 'Use axum, please'  message one teammate
  teamctl plans                          plans waiting for your decision
  teamctl approve 7                      approve one (or: teamctl reject 7 --feedback ...)
  teamctl shutdown alice                 ask a teammate to leave, and wait for the answer
  teamctl inbox --ack                    read (and acknowledge) your messages
  teamctl events --follow                stream every change as it happens
  teamctl watch                          a live full-screen view
  claude mcp add teamboard -- teamctl mcp --name me   your own Claude Code on the board

boardd is found through --socket, $TEAMBOARD_SOCKET, or the default path
($XDG_RUNTIME_DIR/teamboard/boardd.sock). Start it with `systemctl --user start boardd`
or by running `boardd` in another terminal.";

#[derive(Debug, Parser)]
#[command(
    name = "teamctl",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = EXAMPLES,
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,

    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the command line, exiting with clap's message on a mistake, like
    /// `Parser::parse`, and notes what only the value sources tell.
    pub fn parse_args() -> Cli {
        Cli::try_parse_args(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// [`Cli::parse_args`] for a given command line.
    pub fn try_parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        if let Command::Shutdown(args) = &mut cli.command {
            // Given before or after `shutdown`, clap reports it on the subcommand.
            args.deadline_given = matches
                .subcommand_matches("shutdown")
                .and_then(|m| m.value_source("timeout"))
                == Some(ValueSource::CommandLine);
        }
        Ok(cli)
    }
}

/// Options every command accepts.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The boardd socket [default: $XDG_RUNTIME_DIR/teamboard/boardd.sock]
    #[arg(long, global = true, env = "TEAMBOARD_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Reach boardd over the network instead of the socket: tls://HOST:PORT
    /// (`boardd --listen-tcp`), or several boardd of one board separated by
    /// commas, tried in turn; presenting the token in --token-file
    #[arg(
        long,
        global = true,
        env = "TEAMBOARD_CONNECT",
        value_name = "URL",
        value_parser = parse_endpoint,
        requires = "token_file"
    )]
    pub connect: Option<teamboard_protocol::Endpoint>,

    /// With --connect: the file holding the token `teamctl token create` printed
    #[arg(long, global = true, env = "TEAMBOARD_TOKEN_FILE", value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// With --connect: the CA (PEM) boardd's certificate must be signed by; a
    /// self-signed certificate is its own CA [default: the system's roots]
    #[arg(long, global = true, env = "TEAMBOARD_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,

    /// The team to work in; one that does not exist is refused, naming the
    /// teams there are (`default` always exists)
    #[arg(
        long,
        global = true,
        env = "TEAMBOARD_TEAM",
        default_value = teamboard_protocol::DEFAULT_TEAM,
        value_name = "TEAM",
        value_parser = parse_team
    )]
    pub team: String,

    /// Work in team TEAM, creating it if no team has that name (in place of
    /// --team; e.g. `teamctl --new-team web task add ...`, `teamctl lead
    /// --new-team web`)
    #[arg(long, global = true, value_name = "TEAM", value_parser = parse_team)]
    pub new_team: Option<String>,

    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,

    /// Give up when boardd has not answered within this many seconds (0: wait
    /// forever). Does not apply to `watch` and `events --follow`, which wait by design,
    /// nor to `logs`, nor to the git that `task diff` runs; `spawn` waits this long
    /// for the new teammate to connect; for `shutdown` it is how long the teammate
    /// has to answer; `mcp` bounds each tool call with it that does not act on the
    /// held task (see their --help).
    #[arg(
        long,
        global = true,
        env = "TEAMBOARD_TIMEOUT",
        default_value_t = 30,
        value_name = "SECS"
    )]
    pub timeout: u64,

    /// Where teammates keep their transcripts and process logs (used by `spawn`
    /// and `logs`) [default: ~/.local/state/teamboard]
    #[arg(long, global = true, env = "TEAMBOARD_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Issue, revoke and list the tokens that let clients on other hosts in
    #[command(subcommand, after_help = TOKEN_EXAMPLES)]
    Token(TokenCommand),

    /// Show the daemon's version, uptime, socket, sessions and per-team counts
    #[command(after_help = "Examples:\n  teamctl status\n  teamctl status --json | jq .teams")]
    Status,

    /// Create and edit tasks: add, show, depend, cancel, retry, diff
    #[command(subcommand)]
    Task(TaskCommand),

    /// List the board, one line per task
    #[command(
        visible_alias = "ls",
        long_about = "List the board, one line per task.\n\n\
            Markers: [ ] pending, [>] in progress, [x] completed, [!] failed, \
            [-] cancelled. A pending task shows the blockers that are not completed \
            yet (\"blocked by #1, #2\"); one without open blockers and without an \
            owner is ready to be claimed.",
        after_help = "Examples:\n  teamctl tasks\n  teamctl tasks --status pending\n  \
            teamctl tasks --json | jq '.[] | select(.status == \"failed\") | .id'"
    )]
    Tasks(TasksArgs),

    /// Show the team: each member's role, status, pid, task, tokens and their cost
    /// and last contact, and its runtime when an agent does its work (`runtime claude`)
    #[command(
        long_about = "Show the team: each member's role, what runs it, its state, pid, \
            task, tokens and what they cost, and when boardd last heard from it.\n\n\
            A cost reads `$0.0123`, or `unpriced` for tokens of models without a price \
            (add one to ~/.config/teamboard/prices.toml; see `teamctl budget set \
            --help`). A member that waits for a provider's rate limit or for a budget \
            shows `waiting: rate limit (resets in 12m)` or `waiting: budget` in place \
            of `working`, and why at the end of its line.",
        after_help = "Examples:\n  teamctl team\n  teamctl team --json | jq '.[].name'\n  \
            teamctl team --json | jq '.[] | {name, runtime}'     absent runtime: native\n  \
            teamctl team --json | jq '.[] | {name, cost, waiting}'"
    )]
    Team,

    #[command(about = BUDGET_ABOUT, long_about = BUDGET_LONG, after_help = BUDGET_EXAMPLES)]
    Budget(BudgetArgs),

    /// Start a teammate: a teammated process that registers and claims tasks
    #[command(
        long_about = "Start a teammate: a teammated process that registers with boardd \
            under NAME and ROLE, then claims ready tasks on its own (inbox first).\n\n\
            By default teammated runs detached from this terminal (its own process \
            group, output appended to a log file in the state dir) and survives \
            teamctl; spawn returns once the teammate shows as connected in `teamctl \
            team`, or fails with teammated's exit status and the end of its log (a \
            teammate stops before it connects when the model's API says its base URL \
            or key is wrong). \
            teammated is looked for in $TEAMMATED_BIN, next to teamctl, then on $PATH.\n\n\
            With --systemd the settings go to \
            $XDG_CONFIG_HOME/teamboard/teammates/NAME.env and the teammate runs as \
            the user unit teammated@NAME, which restarts it on failure and stops it \
            with boardd.\n\n\
            With --runtime claude, codex or acp the work is done by that agent (Claude \
            Code, Codex, any Agent Client Protocol agent), driven through its structured \
            interface with one session per task, while teammated keeps the board side: \
            claims, inbox, plans and results. teamctl checks that the agent's program \
            exists before anything starts. The agent uses its own login and settings. \
            See docs/runtimes.md.",
        after_help = format!("Examples:\n  teamctl spawn alice --role coder\n  \
            teamctl spawn bob --role tester --provider openai --model gpt-4.1 --workdir ~/src/app\n  \
            teamctl spawn frank --role docs --provider openai --model llama3.1 \\\n      \
            --base-url http://localhost:11434/v1 --context-budget 30000     ollama\n  \
            teamctl spawn carol --role reviewer --idle-timeout 600 --max-rounds 40\n  \
            teamctl spawn gina --role coder --require-plan     plans need your approval\n  \
            teamctl spawn dave --role coder --systemd     run it as teammated@dave\n  \
            teamctl spawn erin --role coder --json | jq .pid\n\n\
            Then: `teamctl team` shows it, `teamctl logs alice --follow` shows what it does.\n\n{}",
        SPAWN_RUNTIME_EXAMPLES
    ))]
    Spawn(SpawnArgs),

    /// Talk to the team's LLM lead: plan a goal with it, then let it run the team
    #[command(
        long_about = "Start the team's LLM lead in this terminal. Tell it what you want in \
            plain words; it proposes a team plan (tasks, dependencies, roles, teammates). \
            Say \"start\" and it puts the tasks on the board and spawns the teammates \
            (as `teamctl spawn` does), who claim ready tasks in parallel. Team events reach \
            the lead on their own: it reviews plans, hears results and errors, and sums up \
            when every task has ended.\n\n\
            Lines that start with / are answered without the model: /tasks, /team, \
            /inbox, /plans, /requests, /help and /quit. With --goal the lead runs \
            without a conversation: it plans, asks for \"start\" on stdin (or not, with \
            --yes), waits until the board is done, prints the summary and exits 0 only if \
            every task completed.\n\n\
            --provider scripted (the default) is an offline stand-in, not a model: it \
            reads a ````plan block (see the README) and approves plans that do not \
            contain `rm -rf`. The lead runs as `teammated lead`; teammated is looked for \
            in $TEAMMATED_BIN, next to teamctl, then on $PATH.",
        after_help = "Examples:\n  teamctl lead\n  \
            teamctl lead --provider anthropic\n  \
            teamctl lead --provider openai --model gpt-4.1 --teammate-provider scripted\n  \
            teamctl lead --goal \"$(cat plan.md)\" --yes --teammate-idle-timeout 0\n  \
            teamctl lead --teammate-sandbox read-only --teammate-no-network\n\n\
            The lead's transcript: `teamctl logs lead`."
    )]
    Lead(LeadArgs),

    /// Print a teammate's transcript (or process log); with --follow, keep printing
    #[command(
        long_about = "Print a teammate's transcript: everything its model was given \
            (user), wrote (assistant), asked tools to do (tool_use) and got back \
            (tool_result), plus lifecycle changes, with time (UTC) and task. Tool \
            results longer than 40 lines are shortened unless --raw is given.\n\n\
            The transcript is read from \
            <state dir>/teammates/<team>/<name>/transcript.jsonl. --process-log shows \
            teammated's own output instead (written for teammates started with \
            `teamctl spawn`; under systemd see `journalctl --user -u teammated@NAME`).",
        after_help = "Examples:\n  teamctl logs alice\n  teamctl logs alice --follow\n  \
            teamctl logs alice --lines 20 --follow\n  \
            teamctl logs alice --raw | less\n  teamctl logs alice --process-log\n  \
            teamctl logs alice --json | jq -c 'select(.kind == \"tool_use\")'"
    )]
    Logs(LogsArgs),

    /// Send a message to one teammate
    #[command(
        long_about = "Send a message to one teammate; it lands in the teammate's \
            inbox and wakes it if it waits for work.\n\n\
            Shutdowns and plan decisions are not messages but tracked requests: use \
            `teamctl shutdown NAME`, `teamctl approve REQ` and `teamctl reject REQ`.",
        after_help = "Examples:\n  teamctl send alice 'Please look at #4 first'\n  \
        teamctl send bob 'Tests are green on main' --json"
    )]
    Send(SendArgs),

    /// Send a message to every teammate
    #[command(after_help = "Examples:\n  teamctl broadcast 'Freeze: no new tasks until 14:00'")]
    Broadcast(BroadcastArgs),

    /// List the messages sent to you (the lead) that are not acknowledged yet
    #[command(
        long_about = "List the messages sent to you (the lead) that are not \
            acknowledged yet, oldest first. Messages stay in the inbox until they are \
            acknowledged: pass --ack to acknowledge the ones shown.",
        after_help = "Examples:\n  teamctl inbox\n  teamctl inbox --ack\n  teamctl inbox --json"
    )]
    Inbox(InboxArgs),

    /// Print the history of changes; with --follow, keep streaming new ones
    #[command(
        after_help = "Examples:\n  teamctl events --limit 20\n  teamctl events --task 3\n  \
        teamctl events --follow\n  teamctl events --follow --json | jq -c 'select(.kind == \"task_completed\")'"
    )]
    Events(EventsArgs),

    /// Ask a teammate to shut down, and wait for its answer
    #[command(
        long_about = "Ask a teammate to shut down, and wait for its answer.\n\n\
            boardd opens a shutdown request (see `teamctl requests`) and puts it in the \
            teammate's inbox. A teammate that holds no task approves and exits; one \
            that is working answers at its next tool round: it may refuse with a \
            reason, or give its task back with a note on what it got done and then \
            approve. If it has not answered when --timeout runs out, boardd stops its \
            processes (SIGTERM to its process group, SIGKILL 5 s later) and its task \
            goes back to pending. --force does that at once, without asking.\n\n\
            teamctl prints the outcome: approved, rejected (with the reason), expired \
            and stopped, or cancelled. It exits 0 when the teammate is leaving or was \
            stopped, 1 when it refused or the request was withdrawn. With --no-wait it \
            prints the request and returns at once.",
        after_help = "Examples:\n  teamctl shutdown alice\n  \
            teamctl shutdown alice --reason 'the release is cut' --timeout 300\n  \
            teamctl shutdown bob --force                 stop it now\n  \
            teamctl shutdown carol --no-wait --json | jq .id\n\n\
            Then: `teamctl requests` shows it while it is open, `teamctl team` shows \
            the teammate's state."
    )]
    Shutdown(ShutdownArgs),

    /// List the open shutdown and plan requests, with their age
    #[command(
        long_about = "List the team's requests: shutdowns the lead asked for and plans \
            teammates submitted for approval. By default only the open (pending) ones, \
            oldest first, with their age; --all shows every state (pending, approved, \
            rejected, expired, cancelled).\n\n\
            A request is shown as rN (e.g. r7); commands that take a request accept \
            7, r7 or R7. --json prints an array of request objects with id, kind, \
            from, to, task, state and, for plans, plan.",
        after_help = "Examples:\n  teamctl requests\n  teamctl requests --all --kind shutdown\n  \
            teamctl requests --json | jq '.[] | select(.kind == \"plan\") | .id'"
    )]
    Requests(RequestsArgs),

    /// List the plans waiting for your decision, with their text
    #[command(
        long_about = "List the plans teammates submitted and that wait for your \
            decision, with their text. A teammate whose task (or who itself) requires \
            a plan may not run commands or change files until you approve one, and its \
            task cannot complete without it. --all also lists decided and withdrawn \
            plans, with the decision and its feedback.",
        after_help = "Examples:\n  teamctl plans\n  teamctl plans --all\n  \
            teamctl plans --json | jq '.[].plan'\n\n\
            Then: `teamctl approve r7` or `teamctl reject r7 --feedback 'keep the old API'`."
    )]
    Plans(PlansArgs),

    /// Approve a teammate's plan; it may start changing things
    #[command(
        long_about = "Approve a pending plan. The decision, with the feedback if you \
            give one, reaches the teammate at once: a waiting teammate wakes for it, a \
            working one reads it before its next step. The approval holds for this \
            claim of this task only.",
        after_help = "Examples:\n  teamctl approve 7\n  \
            teamctl approve r7 --feedback 'fine, but keep the old flag working'"
    )]
    Approve(ApproveArgs),

    /// Reject a teammate's plan, saying what to change
    #[command(
        long_about = "Reject a pending plan. The feedback is required: it is what the \
            teammate reads to write a better plan, which it must submit before it may \
            change anything.",
        after_help = "Examples:\n  teamctl reject 7 --feedback 'do not touch the schema; add a column instead'"
    )]
    Reject(RejectArgs),

    /// A live full-screen view of the board, the team and the latest events
    #[command(
        long_about = "A live full-screen view of the board, the team and the latest \
            events. It redraws when something changes (boardd pushes events; there is \
            no polling). Quit with Ctrl-C.",
        after_help = "Examples:\n  teamctl watch\n  teamctl watch --events 20\n  \
            teamctl watch --once      draw one frame and exit"
    )]
    Watch(WatchArgs),

    #[command(about = REPO_ABOUT, long_about = REPO_LONG, after_help = REPO_EXAMPLES)]
    Repo(RepoArgs),

    #[command(about = REVIEW_ABOUT, long_about = REVIEW_LONG, after_help = REVIEW_EXAMPLES)]
    Review,

    #[command(about = MERGE_ABOUT, long_about = MERGE_LONG, after_help = MERGE_EXAMPLES)]
    Merge(TaskIdArg),

    #[command(
        about = SEND_BACK_ABOUT,
        long_about = SEND_BACK_LONG,
        after_help = SEND_BACK_EXAMPLES
    )]
    SendBack(SendBackArgs),

    #[command(about = WORKTREES_ABOUT, long_about = WORKTREES_LONG, after_help = WORKTREES_EXAMPLES)]
    Worktrees(WorktreesArgs),

    #[command(about = MCP_ABOUT, long_about = MCP_LONG, after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),

    /// Print the shell completion script for bash, zsh, fish, elvish or powershell
    #[command(
        long_about = "Print the completion script for SHELL on stdout: subcommands, \
            flags and their values complete with Tab. `cargo xtask install` installs the \
            bash, zsh and fish scripts under its prefix (see docs/teamctl.md); to load \
            one yourself, use the lines below.",
        after_help = "Examples:\n  \
            source <(teamctl completions bash)                      this bash session\n  \
            teamctl completions bash > ~/.local/share/bash-completion/completions/teamctl\n  \
            teamctl completions zsh > ~/.zfunc/_teamctl       with fpath+=(~/.zfunc) in ~/.zshrc\n  \
            teamctl completions fish > ~/.config/fish/completions/teamctl.fish"
    )]
    Completions(CompletionsArgs),

    #[command(about = WEB_ABOUT, long_about = WEB_LONG, after_help = WEB_EXAMPLES)]
    Web(WebArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task; prints its id (or, with --json, the task)
    #[command(
        after_help = "Examples:\n  id=$(teamctl task add 'Write the parser')\n  \
        teamctl task add 'Write tests' -d 'cover errors too' --blocked-by $id --priority 5\n  \
        teamctl task add 'Review' --blocked-by 1 --blocked-by 2 --role reviewer\n  \
        teamctl task add 'Migrate the schema' --require-plan       approve a plan first\n  \
        teamctl task add 'Parser' --check 'cargo test -p parser'   must pass to complete\n  \
        teamctl task add 'Sum up the release' --no-worktree        reads only: no worktree\n  \
        teamctl task add 'Change the API' --review                 you read it before it lands"
    )]
    Add(TaskAddArgs),

    /// Show one task with its plans, handoff note and history
    #[command(
        after_help = "Examples:\n  teamctl task show 3\n  teamctl task show 3 --json | jq .history"
    )]
    Show(TaskIdArg),

    /// Make a task wait for other tasks (cycles are refused)
    // clap would write the usage as `--on <ID>... <ID>`, but `--on` takes every
    // number after it, so that order leaves the task itself missing.
    #[command(
        override_usage = "teamctl task depend <ID> --on <ID>...",
        after_help = "Examples:\n  teamctl task depend 5 --on 3\n  teamctl task depend 5 --on 3 4\n  teamctl task depend 5 --on 3,4"
    )]
    Depend(TaskDependArgs),

    /// Change a pending task no one holds: its subject, description, priority or role
    #[command(
        after_help = "Examples:\n  teamctl task edit 3 --subject 'Write the lexer'\n  \
        teamctl task edit 3 --priority 5 --role reviewer\n  \
        teamctl task edit 3 --role ''          anyone may claim it\n\n\
        A claimed task, or one that ended, is refused: cancel it, or retry it first."
    )]
    Edit(TaskEditArgs),

    /// Remove a pending task that no one has worked on and nothing waits for
    #[command(after_help = "Examples:\n  teamctl task delete 3\n\n\
        A task others wait for is refused, naming them; a task that was worked on \
        is refused too (cancel it, which keeps its history). The id is not reused.")]
    Delete(TaskIdArg),

    /// Withdraw a task; its owner, if any, loses the claim
    #[command(long_about = CANCEL_LONG, after_help = CANCEL_EXAMPLES)]
    Cancel(TaskCancelArgs),

    /// Put a failed or cancelled task back to pending, with a fresh attempt count;
    /// or try a blocked or conflicting landing again
    #[command(long_about = RETRY_LONG, after_help = "Examples:\n  teamctl task retry 5")]
    Retry(TaskIdArg),

    /// Take the checks a teammate proposed for a task into its checks, or drop them
    #[command(
        long_about = "Take the checks a teammate proposed for a task into its checks, \
        or drop them.\n\nboardd runs a task's checks as shell commands before its work \
        lands, so only the lead sets them: a teammate's checks are proposed, shown by \
        `teamctl task show` and `teamctl requests`, and never run until accepted here.",
        after_help = "Examples:\n  teamctl task accept-checks 3\n  \
        teamctl task accept-checks 3 --reject    drop them"
    )]
    AcceptChecks(TaskAcceptChecksArgs),

    /// Show what a task changed in its worktree, with git
    #[command(long_about = DIFF_LONG, after_help = DIFF_EXAMPLES)]
    Diff(TaskDiffArgs),

    /// End the held task with its result (a teammate's agent only)
    #[command(long_about = COMPLETE_LONG, after_help = COMPLETE_EXAMPLES)]
    Complete(TaskCompleteArgs),

    /// Give up the held task, saying why (a teammate's agent only)
    #[command(long_about = FAIL_LONG, after_help = FAIL_EXAMPLES)]
    Fail(TaskFailArgs),

    /// Ask the lead to approve a plan for the held task (a teammate's agent only)
    #[command(long_about = SUBMIT_PLAN_LONG, after_help = SUBMIT_PLAN_EXAMPLES)]
    SubmitPlan(SubmitPlanArgs),
}

#[derive(Debug, Args)]
pub struct TaskAcceptChecksArgs {
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// Drop the proposed checks instead
    #[arg(long)]
    pub reject: bool,
}

#[derive(Debug, Args)]
pub struct TaskEditArgs {
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// A new title
    #[arg(short, long, value_name = "TEXT")]
    pub subject: Option<String>,

    /// A new description, in place of the old one
    #[arg(short, long, value_name = "TEXT")]
    pub description: Option<String>,

    /// A new priority: higher runs first
    #[arg(short, long, value_name = "N", allow_negative_numbers = true)]
    pub priority: Option<i64>,

    /// The role a claimant needs; '' lets anyone claim it
    #[arg(short, long, value_name = "ROLE")]
    pub role: Option<String>,
}

#[derive(Debug, Args)]
pub struct TaskAddArgs {
    /// A short title for the task
    pub subject: String,

    /// What to do, in as much detail as a teammate needs
    #[arg(
        short,
        long,
        value_name = "TEXT",
        default_value = "",
        hide_default_value = true
    )]
    pub description: String,

    /// A task that must be completed first (repeat, or separate with commas)
    #[arg(long, value_name = "ID", value_parser = parse_task_id, value_delimiter = ',')]
    pub blocked_by: Vec<TaskId>,

    /// Higher runs first; ties go to the lower id
    #[arg(
        short,
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub priority: i64,

    /// Only a teammate with this role may claim the task
    #[arg(short, long, value_name = "ROLE")]
    pub role: Option<String>,

    /// Whoever claims the task must have a plan approved (`teamctl plans`,
    /// `teamctl approve`) before it runs commands or changes files
    #[arg(long)]
    pub require_plan: bool,

    /// A shell command that must pass in the task's worktree before it may
    /// complete, after the team's checks (repeat for more; see `teamctl repo`)
    #[arg(long = "check", value_name = "CMD", value_parser = parse_check)]
    pub checks: Vec<String>,

    /// Work in the team's directory rather than a worktree of its own, e.g. for a
    /// task that only reads; it completes at once, without checks or merging
    #[arg(long, conflicts_with = "checks")]
    pub no_worktree: bool,

    /// Once its checks pass, wait for your review (`teamctl review`, `teamctl
    /// merge`, `teamctl send-back`) instead of landing at once
    #[arg(long, conflicts_with = "no_worktree")]
    pub review: bool,
}

#[derive(Debug, Args)]
pub struct TaskIdArg {
    /// The task's id (`3` or `#3`)
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,
}

#[derive(Debug, Args)]
pub struct TaskDependArgs {
    /// The task that should wait
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// The tasks it waits for
    #[arg(
        long,
        value_name = "ID",
        required = true,
        num_args = 1..,
        value_parser = parse_task_id,
        value_delimiter = ','
    )]
    pub on: Vec<TaskId>,
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    /// Only tasks of this status: pending, in_progress, completed, failed, cancelled
    #[arg(short, long, value_name = "STATUS", value_parser = parse_status)]
    pub status: Option<TaskStatus>,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The teammate's name (`lead` is you)
    pub to: String,

    /// The message
    pub text: String,

    /// The kind of message: message, broadcast, idle_notification, result or error
    #[arg(short, long, value_name = "KIND", default_value = "message", value_parser = parse_kind)]
    pub kind: MessageKind,

    /// An id the message refers to, for the teammate to match it up
    #[arg(long, value_name = "ID")]
    pub request_id: Option<String>,
}

#[derive(Debug, Args)]
pub struct ShutdownArgs {
    /// The teammate's name (see `teamctl team`)
    pub name: String,

    /// Why, for the teammate to weigh (a working teammate may refuse)
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,

    /// Stop the teammate's processes now, without asking; its task goes back to
    /// pending
    #[arg(long)]
    pub force: bool,

    /// Print the request and return without waiting for the answer
    #[arg(long)]
    pub no_wait: bool,

    /// How long the teammate has to answer before boardd stops its processes:
    /// 1 to 86400 [default: boardd's, 120]
    //
    // Trap: the global `--timeout` has the same id, so clap keeps this one for
    // `shutdown` and copies the global's value (its default, or
    // $TEAMBOARD_TIMEOUT) into it when it is not given. Whether the person gave it
    // is told by its value source (see `main`), not by this field.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,

    /// Set by `main` from the value source: `--timeout` was given on the command
    /// line for this shutdown.
    #[arg(skip)]
    pub deadline_given: bool,
}

#[derive(Debug, Args)]
pub struct RequestsArgs {
    /// Requests in every state, not only the pending ones
    #[arg(short, long)]
    pub all: bool,

    /// Only requests of this kind: shutdown or plan
    #[arg(long, value_name = "KIND", value_parser = parse_request_kind)]
    pub kind: Option<RequestKind>,
}

#[derive(Debug, Args)]
pub struct PlansArgs {
    /// Decided and withdrawn plans too, not only the pending ones
    #[arg(short, long)]
    pub all: bool,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The plan's request (`7`, `r7` or `R7`; see `teamctl plans`)
    #[arg(value_name = "REQ", value_parser = parse_request_id)]
    pub request: RequestId,

    /// What the teammate should know as it carries the plan out
    #[arg(short, long, value_name = "TEXT")]
    pub feedback: Option<String>,
}

#[derive(Debug, Args)]
pub struct RejectArgs {
    /// The plan's request (`7`, `r7` or `R7`; see `teamctl plans`)
    #[arg(value_name = "REQ", value_parser = parse_request_id)]
    pub request: RequestId,

    /// What to change: the teammate reads it to write its next plan
    #[arg(short, long, value_name = "TEXT", required = true)]
    pub feedback: String,
}

#[derive(Debug, Args)]
pub struct SendBackArgs {
    /// The task's id (`3` or `#3`; see `teamctl review`)
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// What to change: the owner reads it before it works on the task again
    #[arg(short, long, value_name = "TEXT", required = true)]
    pub feedback: String,
}

#[derive(Debug, Args)]
pub struct BroadcastArgs {
    /// The message
    pub text: String,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Acknowledge the messages shown, removing them from the inbox
    #[arg(long)]
    pub ack: bool,
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Keep running and print new events as they happen (Ctrl-C to stop)
    #[arg(short, long)]
    pub follow: bool,

    /// Only events after this sequence number
    #[arg(long, value_name = "SEQ")]
    pub since: Option<u64>,

    /// Only events of this task
    #[arg(long, value_name = "ID", value_parser = parse_task_id)]
    pub task: Option<TaskId>,

    /// At most this many past events, the newest ones (boardd's default is 1000)
    #[arg(short = 'n', long, value_name = "N")]
    pub limit: Option<u64>,
}

#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// The teammate's name: letters, digits, '_' and '-' (`lead` is you)
    pub name: String,

    /// What the teammate does; a task with a role goes only to teammates of that role
    #[arg(short, long, value_name = "ROLE")]
    pub role: String,

    /// The LLM provider [default: teammated's]
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub provider: Option<ProviderKind>,

    /// The native loop's model [default: the provider's]; an agent runtime's
    /// model is --agent-model
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,

    /// Where the model's API is, for a local or other compatible server; checked by
    /// the teammate at start (e.g. http://localhost:11434/v1 for ollama's
    /// OpenAI-compatible API) [default: the provider's own API]
    #[arg(long, value_name = "URL", value_parser = parse_base_url)]
    pub base_url: Option<String>,

    /// Estimated tokens of context the teammate keeps before it summarises the
    /// older part; at least 1000, e.g. 30000 for a model with a small context
    /// window [default: teammated's, 100000]
    #[arg(long, value_name = "TOKENS", value_parser = parse_context_budget)]
    pub context_budget: Option<u64>,

    /// Let the conversation run on from task to task. By default each task starts
    /// afresh (who the teammate is, the task, the previous owner's note), which
    /// keeps every call small; earlier conversations stay in `teamctl logs`
    #[arg(long)]
    pub carry_context: bool,

    /// The directory the teammate works in [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// Stop the teammate after this many seconds with nothing to do; 0 never stops
    /// it [default: teammated's]
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,

    /// At most this many tool rounds per task [default: teammated's]
    #[arg(long, value_name = "N")]
    pub max_rounds: Option<u32>,

    /// With --provider openai: the request field that carries the output limit
    /// [default: max_completion_tokens on api.openai.com, max_tokens elsewhere]
    #[arg(long, value_enum, value_name = "FIELD")]
    pub max_tokens_field: Option<MaxTokensField>,

    /// Every task the teammate claims needs a plan you approve (`teamctl plans`,
    /// `teamctl approve`) before it runs commands or changes files
    #[arg(long)]
    pub require_plan: bool,

    /// What its commands, its agent and its tasks' checks may touch, under
    /// bubblewrap: `workspace-write` writes the task's worktree and a private
    /// /tmp and never sees boardd's state, its socket or your key files;
    /// `read-only` writes only /tmp; `off` runs them with your full rights
    /// [default: workspace-write]
    #[arg(long, value_enum, value_name = "POLICY")]
    pub sandbox: Option<SandboxMode>,

    /// Cut its commands off the network (builds that fetch packages fail)
    #[arg(long)]
    pub no_network: bool,

    /// Run it as the systemd user unit teammated@NAME instead of a detached process
    #[arg(long)]
    pub systemd: bool,

    #[command(flatten)]
    pub runtime: RuntimeArgs,
}

#[derive(Debug, Args)]
pub struct LeadArgs {
    #[command(flatten)]
    pub goal: LeadGoalArgs,

    /// The lead's LLM provider [default: scripted, an offline stand-in]
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub provider: Option<ProviderKind>,

    /// The lead's model [default: the provider's]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,

    /// Where the lead's model API is [default: the provider's own API]
    #[arg(long, value_name = "URL", value_parser = parse_base_url)]
    pub base_url: Option<String>,

    /// With --provider openai: the request field that carries the output limit
    #[arg(long, value_enum, value_name = "FIELD")]
    pub max_tokens_field: Option<MaxTokensField>,

    #[command(flatten)]
    pub spawn: LeadSpawnArgs,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The teammate's name (see `teamctl team`)
    pub name: String,

    /// Keep running and print new entries as they are written (Ctrl-C to stop)
    #[arg(short, long)]
    pub follow: bool,

    /// Only the last N entries (with --follow: to start with) [default: all]
    #[arg(short = 'n', long, value_name = "N")]
    pub lines: Option<usize>,

    /// Print long tool results in full instead of shortening them
    #[arg(long)]
    pub raw: bool,

    /// Show teammated's process log (its stdout and stderr) instead of the transcript
    #[arg(long)]
    pub process_log: bool,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Draw one frame and exit
    #[arg(long)]
    pub once: bool,

    /// How many of the latest events to show
    #[arg(long, value_name = "N", default_value_t = 8)]
    pub events: usize,
}

/// A team name boardd will accept, checked here so that a typo gets the rule
/// rather than boardd's refusal of the connection.
/// `tls://HOST:PORT`, `tcp://127.0.0.1:PORT` (tests), a list of those, or a
/// socket path.
pub fn parse_endpoint(s: &str) -> Result<teamboard_protocol::Endpoint, String> {
    teamboard_protocol::Endpoint::parse(s).map_err(|e| e.to_string())
}

pub fn parse_team(s: &str) -> Result<String, String> {
    teamboard_protocol::names::validate_name(s)
        .map(|()| s.to_string())
        .map_err(|e| format!("{e} (team names follow the same rule as teammates')"))
}

/// A number of tokens, at least `MIN_CONTEXT_BUDGET`, refused in teammated's words.
pub fn parse_context_budget(s: &str) -> Result<u64, String> {
    let tokens: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of tokens (e.g. 30000)"))?;
    check_context_budget(tokens)
}

/// Accepts `3` and `#3`.
pub fn parse_task_id(s: &str) -> Result<TaskId, String> {
    parse_id(s, &['#'], "task", "3 or #3")
}

/// Accepts `7`, `r7` and `R7`.
pub fn parse_request_id(s: &str) -> Result<RequestId, String> {
    parse_id(s, &['r', 'R'], "request", "7 or r7; see `teamctl requests`")
}

/// An id from 1, after one of the characters of `prefix` if it has one.
fn parse_id(s: &str, prefix: &[char], noun: &str, like: &str) -> Result<u64, String> {
    let t = s.trim();
    match t.strip_prefix(prefix).unwrap_or(t).parse() {
        Ok(0) => Err(format!("{noun} ids start at 1")),
        Ok(id) => Ok(id),
        Err(_) => Err(format!(
            "'{s}' is not a {noun} id (expected a number like {like})"
        )),
    }
}

/// Accepts the wire names and their dashed forms (`in-progress`).
pub fn parse_status(s: &str) -> Result<TaskStatus, String> {
    s.trim().to_ascii_lowercase().parse().map_err(|_| {
        format!(
            "unknown status '{s}'; use one of: {}",
            TaskStatus::VARIANTS.join(", ")
        )
    })
}

/// The message kinds `send` offers: every kind but the four that belong to a
/// tracked request, which boardd refuses from `send`.
pub fn sendable_kinds() -> impl Iterator<Item = MessageKind> {
    MessageKind::VARIANTS
        .iter()
        .copied()
        .filter(|k| request_command(*k).is_none())
}

/// For a kind that belongs to a tracked request: what to do instead of sending it.
fn request_command(kind: MessageKind) -> Option<&'static str> {
    match kind {
        MessageKind::ShutdownRequest => Some("ask with `teamctl shutdown NAME`"),
        MessageKind::ShutdownResponse => {
            Some("only the teammate answers a shutdown request; ask with `teamctl shutdown NAME`")
        }
        MessageKind::PlanApprovalRequest => {
            Some("teammates submit plans; see them with `teamctl plans`")
        }
        MessageKind::PlanApprovalResponse => {
            Some("decide with `teamctl approve REQ` or `teamctl reject REQ --feedback TEXT`")
        }
        _ => None,
    }
}

/// Accepts the wire names and their dashed forms (`idle-notification`). The kinds
/// of the tracked requests are refused with the command that makes them.
pub fn parse_kind(s: &str) -> Result<MessageKind, String> {
    let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
    if let Ok(kind) = wanted.parse::<MessageKind>() {
        if let Some(instead) = request_command(kind) {
            return Err(format!(
                "'{kind}' messages belong to a tracked request and cannot be sent; {instead}"
            ));
        }
        return Ok(kind);
    }
    let names: Vec<&str> = sendable_kinds().map(<&str>::from).collect();
    Err(format!(
        "unknown message kind '{s}'; use one of: {}",
        names.join(", ")
    ))
}

/// Accepts `shutdown` and `plan`.
pub fn parse_request_kind(s: &str) -> Result<RequestKind, String> {
    s.trim()
        .to_ascii_lowercase()
        .parse()
        .map_err(|_| format!("unknown request kind '{s}'; use shutdown or plan"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_ids_statuses_and_kinds() {
        assert_eq!(parse_task_id("#12"), Ok(12));
        assert_eq!(parse_task_id("7"), Ok(7));
        assert!(parse_task_id("x").is_err());
        assert!(parse_task_id("0").is_err());
        assert_eq!(parse_status("in-progress"), Ok(TaskStatus::InProgress));
        assert_eq!(parse_status("IN_PROGRESS"), Ok(TaskStatus::InProgress));
        assert!(parse_status("done").unwrap_err().contains("pending"));
        assert_eq!(
            parse_kind("idle-notification"),
            Ok(MessageKind::IdleNotification)
        );
        assert!(parse_kind("nope").is_err());
        assert!(!parse_kind("nope").unwrap_err().contains("shutdown"));
        assert_eq!(parse_request_id("7"), Ok(7));
        assert_eq!(parse_request_id("r7"), Ok(7));
        assert_eq!(parse_request_id("R7"), Ok(7));
        assert!(parse_request_id("#7").is_err());
        assert!(parse_request_id("r0").is_err());
        assert_eq!(parse_request_kind("Plan"), Ok(RequestKind::Plan));
        assert!(parse_request_kind("shut").is_err());
    }

    #[test]
    fn the_kinds_of_tracked_requests_cannot_be_sent() {
        for (kind, instead) in [
            ("shutdown_request", "teamctl shutdown NAME"),
            ("shutdown-response", "only the teammate answers"),
            ("plan_approval_request", "teamctl plans"),
            ("plan_approval_response", "teamctl approve REQ"),
        ] {
            let e = parse_kind(kind).expect_err(kind);
            assert!(e.contains("tracked request"), "{e}");
            assert!(e.contains(instead), "{e}");
        }
        let offered: Vec<&str> = sendable_kinds().map(<&str>::from).collect();
        assert_eq!(
            offered,
            [
                "message",
                "broadcast",
                "idle_notification",
                "result",
                "error"
            ]
        );
    }

    #[test]
    fn shutdown_takes_its_timeout_only_from_the_command_line() {
        let given = |args: &[&str]| match Cli::try_parse_args(args).expect("parses").command {
            Command::Shutdown(a) => a.deadline_given.then_some(a.timeout).flatten(),
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(given(&["teamctl", "shutdown", "bob"]), None);
        assert_eq!(
            given(&["teamctl", "shutdown", "bob", "--timeout", "5"]),
            Some(5)
        );
        assert_eq!(
            given(&["teamctl", "--timeout", "7", "shutdown", "bob"]),
            Some(7)
        );
        // Elsewhere --timeout is still the global one.
        let cli = Cli::try_parse_args(["teamctl", "tasks", "--timeout", "9"]).expect("parses");
        assert_eq!(cli.global.timeout, 9);
    }

    #[test]
    fn reject_needs_feedback() {
        let e = Cli::try_parse_from(["teamctl", "reject", "r3"]).expect_err("no feedback");
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        let cli =
            Cli::try_parse_from(["teamctl", "reject", "R3", "--feedback", "no"]).expect("parses");
        match cli.command {
            Command::Reject(a) => assert_eq!((a.request, a.feedback.as_str()), (3, "no")),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn negative_priority_and_repeated_blockers() {
        let cli = Cli::try_parse_from([
            "teamctl",
            "task",
            "add",
            "x",
            "--priority",
            "-3",
            "--blocked-by",
            "1,#2",
            "--blocked-by",
            "3",
        ])
        .expect("parses");
        match cli.command {
            Command::Task(TaskCommand::Add(a)) => {
                assert_eq!(a.priority, -3);
                assert_eq!(a.blocked_by, vec![1, 2, 3]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn global_options_after_the_subcommand() {
        let cli =
            Cli::try_parse_from(["teamctl", "tasks", "--json", "--team", "t1"]).expect("parses");
        assert!(cli.global.json);
        assert_eq!(cli.global.team, "t1");
    }
}

const TOKEN_EXAMPLES: &str = "\
Examples:
  teamctl token create alice > alice.token   a token for teammate alice
  teamctl --team web token create lead       one for the lead of team web
  teamctl token list
  teamctl token revoke alice                 its sessions are refused from now on";

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Print a fresh token that vouches for NAME in the team (`lead` for the
    /// lead), replacing the one it had; it is shown this once
    Create(TokenNameArg),
    /// Revoke NAME's token: sessions open with it are refused from their next
    /// request
    Revoke(TokenNameArg),
    /// The team's tokens and when each was made (never the tokens)
    List,
}

#[derive(Debug, Args)]
pub struct TokenNameArg {
    /// The teammate's name, or `lead`
    pub name: String,
}
