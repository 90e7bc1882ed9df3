//! Command-line definitions. Every subcommand's `--help` should teach how to use it.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use teamboard_protocol::{MessageKind, TaskId, TaskStatus};

const ABOUT: &str = "Drive a teamboard: tasks, teammates, messages and a live view";

const LONG_ABOUT: &str = "\
teamctl talks to boardd, the daemon that owns a durable task board for a team of LLM \
agents. You are the team's lead: you break a goal into tasks with dependencies, the \
teammates claim ready tasks on their own, and you follow along, message them and fix \
what goes wrong.

A task is ready when it is pending, has no owner and all its blockers are completed. \
Every command accepts --json for scripts. Times are shown in UTC.";

const EXAMPLES: &str = "\
Examples:
  teamctl status                         is boardd running? what is on the board?
  teamctl spawn alice --role coder       start a teammate (a teammated process)
  a=$(teamctl task add 'Design the API' -d 'REST, JSON')
  b=$(teamctl task add 'Implement it' --blocked-by $a --role coder)
  teamctl tasks                          the board, one line per task
  teamctl task show $b                   one task and its history
  teamctl team                           who is working on what
  teamctl logs alice --follow            what alice's model sees and does, live
  teamctl send alice 'Use axum, please'  message one teammate
  teamctl inbox --ack                    read (and acknowledge) your messages
  teamctl events --follow                stream every change as it happens
  teamctl watch                          a live full-screen view

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

/// Options every command accepts.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The boardd socket [default: $XDG_RUNTIME_DIR/teamboard/boardd.sock]
    #[arg(long, global = true, env = "TEAMBOARD_SOCKET", value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// The team to work in
    #[arg(
        long,
        global = true,
        env = "TEAMBOARD_TEAM",
        default_value = teamboard_protocol::DEFAULT_TEAM,
        value_name = "TEAM",
        value_parser = parse_team
    )]
    pub team: String,

    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,

    /// Give up when boardd has not answered within this many seconds (0: wait
    /// forever). Does not apply to `watch` and `events --follow`, which wait by design,
    /// nor to `logs`; `spawn` waits this long for the new teammate to connect.
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
    /// Show the daemon's version, uptime, socket, sessions and per-team counts
    #[command(after_help = "Examples:\n  teamctl status\n  teamctl status --json | jq .teams")]
    Status,

    /// Create and edit tasks: add, show, depend, cancel, retry
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

    /// Show the team: each member's role, status, pid, task, tokens and last contact
    #[command(after_help = "Examples:\n  teamctl team\n  teamctl team --json | jq '.[].name'")]
    Team,

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
            with boardd.",
        after_help = "Examples:\n  teamctl spawn alice --role coder\n  \
            teamctl spawn bob --role tester --provider openai --model gpt-4.1 --workdir ~/src/app\n  \
            teamctl spawn frank --role docs --provider openai --model llama3.1 \\\n      \
            --base-url http://localhost:11434/v1 --context-budget 30000     ollama\n  \
            teamctl spawn carol --role reviewer --idle-timeout 600 --max-rounds 40\n  \
            teamctl spawn dave --role coder --systemd     run it as teammated@dave\n  \
            teamctl spawn erin --role coder --json | jq .pid\n\n\
            Then: `teamctl team` shows it, `teamctl logs alice --follow` shows what it does."
    )]
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
            teamctl lead --goal \"$(cat plan.md)\" --yes --teammate-idle-timeout 0\n\n\
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
        after_help = "Examples:\n  teamctl send alice 'Please look at #4 first'\n  \
        teamctl send bob 'Time to stop' --kind shutdown_request"
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

    /// A live full-screen view of the board, the team and the latest events
    #[command(
        long_about = "A live full-screen view of the board, the team and the latest \
            events. It redraws when something changes (boardd pushes events; there is \
            no polling). Quit with Ctrl-C.",
        after_help = "Examples:\n  teamctl watch\n  teamctl watch --events 20\n  \
            teamctl watch --once      draw one frame and exit"
    )]
    Watch(WatchArgs),
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a task; prints its id (or, with --json, the task)
    #[command(
        after_help = "Examples:\n  id=$(teamctl task add 'Write the parser')\n  \
        teamctl task add 'Write tests' -d 'cover errors too' --blocked-by $id --priority 5\n  \
        teamctl task add 'Review' --blocked-by 1 --blocked-by 2 --role reviewer"
    )]
    Add(TaskAddArgs),

    /// Show one task with its history
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

    /// Withdraw a task; its owner, if any, loses the claim
    #[command(after_help = "Examples:\n  teamctl task cancel 5")]
    Cancel(TaskIdArg),

    /// Put a failed or cancelled task back to pending, with a fresh attempt count
    #[command(after_help = "Examples:\n  teamctl task retry 5")]
    Retry(TaskIdArg),
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

    /// The kind of message, e.g. message, shutdown_request, plan_approval_response
    #[arg(short, long, value_name = "KIND", default_value = "message", value_parser = parse_kind)]
    pub kind: MessageKind,

    /// Ties a response to its request (shutdown and plan approval)
    #[arg(long, value_name = "ID")]
    pub request_id: Option<String>,
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

/// The LLM providers teammated can talk to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Provider {
    /// Anthropic's Messages API
    Anthropic,
    /// An OpenAI-compatible Chat Completions API (OpenAI, ollama, llama.cpp, vLLM...)
    Openai,
    /// An offline stand-in that runs the task's ```sh blocks (for trying things out)
    Scripted,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::Openai => "openai",
            Provider::Scripted => "scripted",
        }
    }
}

/// The field of an OpenAI-compatible request that carries the output limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MaxTokensField {
    /// What ollama, llama.cpp, vLLM, LM Studio and other compatible servers know
    #[value(name = "max_tokens", alias = "max-tokens")]
    MaxTokens,
    /// What OpenAI's own API wants (its reasoning models refuse max_tokens)
    #[value(name = "max_completion_tokens", alias = "max-completion-tokens")]
    MaxCompletionTokens,
}

impl MaxTokensField {
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
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
    pub provider: Option<Provider>,

    /// The model name [default: the provider's]
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

    /// Run it as the systemd user unit teammated@NAME instead of a detached process
    #[arg(long)]
    pub systemd: bool,
}

#[derive(Debug, Args)]
pub struct LeadArgs {
    /// Run without a conversation: plan this goal, start, wait until every task has
    /// ended, print the summary; exit 0 only if every task completed
    #[arg(long, value_name = "TEXT")]
    pub goal: Option<String>,

    /// With --goal: start without asking for "start" on stdin
    #[arg(long, requires = "goal")]
    pub yes: bool,

    /// The lead's LLM provider [default: scripted, an offline stand-in]
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub provider: Option<Provider>,

    /// The lead's model [default: the provider's]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,

    /// Where the lead's model API is [default: the provider's own API]
    #[arg(long, value_name = "URL", value_parser = parse_base_url)]
    pub base_url: Option<String>,

    /// With --provider openai: the request field that carries the output limit
    #[arg(long, value_enum, value_name = "FIELD")]
    pub max_tokens_field: Option<MaxTokensField>,

    /// The directory the teammates it spawns work in [default: the current directory]
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,

    /// The teammates' provider [default: the lead's]
    #[arg(long, value_enum, value_name = "PROVIDER")]
    pub teammate_provider: Option<Provider>,

    /// The teammates' model [default: the lead's, for the same provider]
    #[arg(long, value_name = "MODEL")]
    pub teammate_model: Option<String>,

    /// The teammates' API base URL [default: the lead's, for the same provider]
    #[arg(long, value_name = "URL", value_parser = parse_base_url)]
    pub teammate_base_url: Option<String>,

    /// Stop each teammate after this many seconds with nothing to do; 0 never
    /// [default: teammated's]
    #[arg(long, value_name = "SECS")]
    pub teammate_idle_timeout: Option<u64>,
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
pub fn parse_team(s: &str) -> Result<String, String> {
    teamboard_protocol::names::validate_name(s)
        .map(|()| s.to_string())
        .map_err(|e| format!("{e} (team names follow the same rule as teammates')"))
}

/// An http(s) URL with a host and nothing a settings file or a command line would
/// mangle. Whether it leads to the API is for the teammate to find out at start:
/// that needs the provider's answer.
pub fn parse_base_url(s: &str) -> Result<String, String> {
    let url = s.trim();
    let Some(rest) = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
    else {
        return Err(format!(
            "'{url}' is not an http(s) URL; give it with http:// or https:// \
             (e.g. http://localhost:11434/v1)"
        ));
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("'{url}' has spaces or control characters"));
    }
    if rest
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default()
        .is_empty()
    {
        return Err(format!(
            "'{url}' has no host (e.g. http://localhost:11434/v1)"
        ));
    }
    Ok(url.to_string())
}

/// The least `--context-budget` teammated works with: the system prompt, the
/// identity and a summary must fit with room to spare.
pub const MIN_CONTEXT_BUDGET: u64 = 1000;

/// A number of tokens, at least [`MIN_CONTEXT_BUDGET`].
pub fn parse_context_budget(s: &str) -> Result<u64, String> {
    let tokens: u64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a number of tokens (e.g. 30000)"))?;
    if tokens < MIN_CONTEXT_BUDGET {
        return Err(format!(
            "{tokens} is too small: the budget must be at least {MIN_CONTEXT_BUDGET} tokens"
        ));
    }
    Ok(tokens)
}

/// Accepts `3` and `#3`.
pub fn parse_task_id(s: &str) -> Result<TaskId, String> {
    let digits = s.trim().strip_prefix('#').unwrap_or(s.trim());
    match digits.parse::<TaskId>() {
        Ok(0) => Err("task ids start at 1".into()),
        Ok(id) => Ok(id),
        Err(_) => Err(format!(
            "'{s}' is not a task id (expected a number like 3 or #3)"
        )),
    }
}

/// Accepts the wire names and their dashed forms (`in-progress`).
pub fn parse_status(s: &str) -> Result<TaskStatus, String> {
    TaskStatus::parse(&s.trim().to_ascii_lowercase()).ok_or_else(|| {
        let names: Vec<&str> = TaskStatus::ALL.iter().map(|t| t.as_str()).collect();
        format!("unknown status '{s}'; use one of: {}", names.join(", "))
    })
}

/// Accepts the wire names and their dashed forms (`shutdown-request`).
pub fn parse_kind(s: &str) -> Result<MessageKind, String> {
    let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
    MessageKind::ALL
        .into_iter()
        .find(|k| k.as_str() == wanted)
        .ok_or_else(|| {
            let names: Vec<&str> = MessageKind::ALL.iter().map(|k| k.as_str()).collect();
            format!(
                "unknown message kind '{s}'; use one of: {}",
                names.join(", ")
            )
        })
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
            parse_kind("shutdown-request"),
            Ok(MessageKind::ShutdownRequest)
        );
        assert!(parse_kind("nope").is_err());
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
