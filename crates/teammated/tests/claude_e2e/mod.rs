//! What the Claude Code end-to-end tests share: a board with the mock Messages
//! API, teammates started with `--runtime claude` against it, a reading of the
//! requests Claude Code sends, and what its transcript and sessions say.
//!
//! The mock answers from the request (`MockLlm::set_responder`), never from a
//! queue: how many calls the CLI makes, and in which order, is its own
//! business. A request is read with `mock_llm::messages` (re-exported here).

#![allow(
    dead_code,
    reason = "each test crate that includes this module uses part of it"
)]

use serde_json::{Value, json};
use std::path::PathBuf;
use teamboard_protocol::{Task, TaskId};
use teamboard_testkit::agents::{Cli, OfflineAgent, agent_cli};
pub use teamboard_testkit::mock_llm::messages::{last_user, result_of, text_of, tool_results};
use teamboard_testkit::mock_llm::{
    MockLlm, MockReply, RecordedRequest, TEXT_USAGE, TOOL_USAGE, anthropic_message,
};
use teamboard_testkit::{Board, Teammate, Teammated};

/// The binary under test.
pub const TEAMMATED: &str = env!("CARGO_BIN_EXE_teammated");

/// A board, a mock Messages API, and the home the agents share across restarts.
pub struct ClaudeBoard {
    pub board: Board,
    pub mock: MockLlm,
    pub claude: PathBuf,
    /// `HOME` and `CLAUDE_CONFIG_DIR` (under it) of every agent of the test:
    /// the same across restarts, or sessions could not be resumed.
    pub home: PathBuf,
}

impl ClaudeBoard {
    /// The board and the mock, for Claude Code as installed; `None`, after
    /// saying why the test is skipped, where it is not.
    pub async fn start() -> Option<ClaudeBoard> {
        let claude = agent_cli(Cli::Claude)?;
        let board = Board::start(TEAMMATED).await;
        let home = board.dir().join("claude-home");
        std::fs::create_dir_all(home.join(".claude")).expect("the agents' home");
        let mock = MockLlm::start(Vec::new());
        Some(ClaudeBoard {
            board,
            mock,
            claude,
            home,
        })
    }

    /// Starts teammate `name` (role `dev`, its log `<dir>/<name>.log`) and
    /// waits until it is idle, waiting for work.
    pub async fn join(&mut self, name: &str) -> Teammate {
        let mate = self.spawn(name, name);
        self.board.wait_idle(name).await;
        mate
    }

    /// [`ClaudeBoard::join`], then a task for `name`, once it has claimed it.
    pub async fn start_on(
        &mut self,
        name: &str,
        subject: &str,
        description: &str,
    ) -> (Teammate, Task) {
        let mate = self.join(name).await;
        let task = self.board.add_claimed_by(name, subject, description).await;
        (mate, task)
    }

    /// Starts teammate `name` (role `dev`) with the claude runtime; its log is
    /// `<dir>/<log>.log`, so that a restart keeps the first one.
    pub fn spawn(&self, name: &str, log: &str) -> Teammate {
        self.spawn_with(name, "dev", log, &[])
    }

    /// [`ClaudeBoard::spawn`] with role `role` and `extra` flags.
    pub fn spawn_with(&self, name: &str, role: &str, log: &str, extra: &[&str]) -> Teammate {
        self.spawn_with_env(name, role, log, extra, &[])
    }

    /// [`ClaudeBoard::spawn_with`] with `more_env` in teammated's environment.
    pub fn spawn_with_env(
        &self,
        name: &str,
        role: &str,
        log: &str,
        extra: &[&str],
        more_env: &[(&str, &str)],
    ) -> Teammate {
        self.spawn_agent(name, role, log, extra, more_env, &self.agent())
    }

    /// Teammate `name` on a claude.ai login rather than an API key: the
    /// CLI's `CLAUDE_CODE_OAUTH_TOKEN` (what `claude setup-token` makes),
    /// which it sends to the mock as a bearer token.
    pub fn spawn_on_login(&self, name: &str) -> Teammate {
        let mut agent = self.agent();
        agent.env.retain(|(k, _)| k != "ANTHROPIC_API_KEY");
        let token = [("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-mock")];
        self.spawn_agent(name, "dev", name, &[], &token, &agent)
    }

    fn spawn_agent(
        &self,
        name: &str,
        role: &str,
        log: &str,
        extra: &[&str],
        more_env: &[(&str, &str)],
        agent: &OfflineAgent,
    ) -> Teammate {
        let teammated =
            Teammated::new(TEAMMATED, &self.board.daemon.socket, self.board.state_dir());
        let mut args = agent.arg_strs();
        args.extend_from_slice(extra);
        // The board's MCP server the agent starts: this build's teamctl.
        let teamctl = teamboard_testkit::workspace_bin("teamctl")
            .display()
            .to_string();
        let mut env = agent.env_strs();
        env.push(("TEAMBOARD_TEAMCTL", &teamctl));
        env.extend_from_slice(more_env);
        teammated.spawn(
            name,
            role,
            &self.board.workdir(name),
            &self.board.dir().join(format!("{log}.log")),
            &args,
            &env,
        )
    }

    /// teammated's flags and environment for Claude Code against the mock.
    pub fn agent(&self) -> OfflineAgent {
        Cli::Claude
            .offline(&self.claude, &self.home, &self.mock.url())
            .expect("Claude Code's home")
    }

    /// The session recorded for `task` in `name`'s `agent/sessions.json`:
    /// (session id, starts, resumed).
    pub fn recorded_session(&self, name: &str, task: TaskId) -> Option<(String, u64, u64)> {
        let file = self.board.agent_sessions(name);
        let e = &file["tasks"][task.to_string()];
        Some((
            e["session"].as_str()?.to_string(),
            e["starts"].as_u64()?,
            e["resumed"].as_u64()?,
        ))
    }

    /// Claude Code's own record of `session`
    /// (`$CLAUDE_CONFIG_DIR/projects/<cwd>/<session>.jsonl`), empty if none.
    pub fn session_log(&self, session: &str) -> String {
        let projects = self.home.join(".claude").join("projects");
        let Ok(dirs) = std::fs::read_dir(projects) else {
            return String::new();
        };
        dirs.flatten()
            .filter_map(|d| std::fs::read_to_string(d.path().join(format!("{session}.jsonl"))).ok())
            .collect()
    }

    /// Every request went to the mock's Messages API, on 127.0.0.1 (the mock
    /// listens nowhere else), with the session's header.
    pub fn check_requests(&self) -> Vec<RecordedRequest> {
        let requests = self.mock.requests();
        assert!(!requests.is_empty(), "the mock saw no request");
        for r in &requests {
            assert!(
                r.path.starts_with("/v1/messages"),
                "{} {}",
                r.method,
                r.path
            );
            assert!(r.header("x-claude-code-session-id").is_some(), "{r:?}");
        }
        requests
    }
}

/// An answer with `content` (each under a message id of its own: Claude Code
/// merges the assistant messages of one id, see `anthropic_message`).
fn answer(content: Value, stop_reason: &str, usage: (u64, u64)) -> MockReply {
    MockReply::json(200, anthropic_message(content, stop_reason, usage))
}

/// A final text answer.
pub fn say(text: &str) -> MockReply {
    answer(
        json!([{"type": "text", "text": text}]),
        "end_turn",
        TEXT_USAGE,
    )
}

/// An answer calling tool `name` with `input`, as call `id`.
pub fn call(id: &str, name: &str, input: Value) -> MockReply {
    answer(
        json!([{"type": "tool_use", "id": id, "name": name, "input": input}]),
        "tool_use",
        TOOL_USAGE,
    )
}

/// An answer calling `Bash` with `command`.
pub fn bash(id: &str, command: &str) -> MockReply {
    call(
        id,
        "Bash",
        json!({"command": command, "description": "run it"}),
    )
}

/// A `sleep` of `secs` seconds whose command line is unique to this test run:
/// (the command, the marker to find its processes by). The fraction makes it
/// unique and is still a valid duration. Trap: Claude Code refuses a command
/// that starts with a long `sleep` ("Blocked: standalone sleep"), so it comes
/// second.
pub fn marked_sleep(secs: u32, tag: u32) -> (String, String) {
    let marker = format!("{secs}.{}{tag:03}", std::process::id());
    (format!("echo started && sleep {marker}"), marker)
}

/// The pid the transcript gives for the agent's session (the guard's).
pub fn agent_pid(transcript: &str) -> Option<u32> {
    let line = transcript
        .lines()
        .rev()
        .find(|l| l.contains("agent: claude session"))?;
    let (_, rest) = line.split_once(", pid ")?;
    rest.split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The session id the transcript gives for the agent's last session start.
pub fn transcript_sessions(transcript: &str) -> Vec<(String, String)> {
    transcript
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("agent: claude session ")?;
            let mut words = rest.split([' ', ',']);
            let id = words.next()?.to_string();
            let what = words.next()?.to_string();
            Some((id, what))
        })
        .collect()
}
