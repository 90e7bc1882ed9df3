//! Command-line definitions for the board as a member sees it: `mcp`, the
//! board's MCP server, and the member's own operations on the task it holds
//! (`task complete`, `task fail`, `task submit-plan`), the twins of the MCP
//! tools. docs/runtimes.md ("The board's MCP server") is their contract.

use super::parse_task_id;
use clap::Args;
use teamboard_protocol::TaskId;
use teamboard_protocol::member::MEMBER_SOCKET_ENV;

pub const MCP_ABOUT: &str = "\
Serve the board over MCP on stdio for one member, for Claude Code, Codex and other agents";

pub const MCP_LONG: &str = "\
Serve the board over MCP (the Model Context Protocol) on stdin and stdout, for one \
member named NAME. An MCP client starts it as its child: a person's Claude Code or \
Codex, or the agent a teammate runs.

It offers seven tools. Each answers with the JSON its teamctl twin prints with --json:

  list_tasks      teamctl tasks --json [--status S]
  get_task        teamctl task show ID --json
  create_task     teamctl task add SUBJECT --json ...
  send_message    teamctl send TO TEXT --json
  complete_task   teamctl task complete ID --result TEXT --json
  fail_task       teamctl task fail ID --reason TEXT --json
  submit_plan     teamctl task submit-plan ID --plan TEXT --json

Inside a teammate's agent ($TEAMBOARD_MEMBER_SOCKET is set, as teammated sets it) \
every call goes to the teammate, which carries it out with its own claim: a task the \
agent completes goes through the teammate's completion gate and is reported to the \
lead by it.

Started by a person's own session, it registers NAME on the board itself, with \
--role. get_task with claim: true takes a ready task; the server keeps its lease while \
it runs, and gives the task back (without using up an attempt) if the session ends \
first. complete_task, fail_task and submit_plan act on the task it holds. Messages for \
NAME come with the next tool result.

--timeout bounds the wait for list_tasks, get_task, create_task and send_message (then \
the tool answers with an error that says so; the call may still have been carried out), \
and for joining the board. get_task with claim: true, complete_task, fail_task and \
submit_plan act on the held task and wait for their answer, as their twins do; \
complete_task waits while the task's checks run.

The output is JSON-RPC whatever the flags: --json is refused.";

pub const MCP_EXAMPLES: &str = "\
Examples:
  claude mcp add teamboard -- teamctl mcp --name me
  claude mcp add teamboard -- teamctl mcp --name me --role reviewer --team web
  codex mcp add teamboard --env TEAMBOARD_SOCKET=\"$XDG_RUNTIME_DIR/teamboard/boardd.sock\" \\
      -- teamctl mcp --name me     (Codex passes its MCP servers only a few variables)

Then, in that session: \"list the tasks on the board and take #3\".";

/// `teamctl mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// The member's name on the board: letters, digits, '_' and '-' (not `lead`)
    #[arg(long, value_name = "NAME", value_parser = parse_member_name)]
    pub name: String,

    /// The member's role, matched against a task's role when it claims (outside
    /// a teammate)
    #[arg(long, value_name = "ROLE", default_value = "member", value_parser = parse_role)]
    pub role: String,
}

pub const COMPLETE_LONG: &str = "\
End the task the teammate holds as done, with its result: the twin of the MCP tool \
complete_task, for an agent that works with shell commands. It returns at once: the \
teammate completes the task with its claim when the agent's turn has ended, through \
the completion gate (a task with a worktree is committed, checked and landed then). \
If a check fails or the branch conflicts, the task stays the teammate's and the \
refusal is the agent's next input.

This is a teammate's own operation. Run inside a teammate's agent: the teammate sets \
$TEAMBOARD_MEMBER_SOCKET for it. As the lead, see `teamctl task cancel` and `teamctl \
task retry`.";

pub const COMPLETE_EXAMPLES: &str = "\
Examples:
  teamctl task complete 3 --result 'Added the parser and its tests in src/parse.rs'
  teamctl task complete 3 --result \"$(cat summary.md)\" --json | jq .next";

pub const FAIL_LONG: &str = "\
Give up the task the teammate holds, saying why: the twin of the MCP tool fail_task. \
The teammate stops its agent, and then the task goes back to the board for another \
attempt, or fails for good after its last one.

This is a teammate's own operation. Run inside a teammate's agent: the teammate sets \
$TEAMBOARD_MEMBER_SOCKET for it.";

pub const FAIL_EXAMPLES: &str = "\
Examples:
  teamctl task fail 3 --reason 'The API it names does not exist; see #2 first'";

pub const SUBMIT_PLAN_LONG: &str = "\
Ask the lead to approve a plan for the task the teammate holds: the twin of the MCP \
tool submit_plan. It returns the plan request at once; the lead's decision reaches \
the agent as a message. A task that requires a plan may not change anything or \
complete before its plan is approved.

This is a teammate's own operation. Run inside a teammate's agent: the teammate sets \
$TEAMBOARD_MEMBER_SOCKET for it.";

pub const SUBMIT_PLAN_EXAMPLES: &str = "\
Examples:
  teamctl task submit-plan 3 --plan '1. add a column  2. backfill it  3. switch reads'
  teamctl task submit-plan 3 --plan \"$(cat plan.md)\" --json | jq .id";

/// `teamctl task complete`.
#[derive(Debug, Args)]
pub struct TaskCompleteArgs {
    /// The task the teammate holds (`3` or `#3`)
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// What was done, for the lead: what changed, where, and what is left
    #[arg(long, value_name = "TEXT")]
    pub result: String,
}

/// `teamctl task fail`.
#[derive(Debug, Args)]
pub struct TaskFailArgs {
    /// The task the teammate holds (`3` or `#3`)
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// Why it cannot be done, and what was found
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
}

/// `teamctl task submit-plan`.
#[derive(Debug, Args)]
pub struct SubmitPlanArgs {
    /// The task the teammate holds (`3` or `#3`)
    #[arg(value_name = "ID", value_parser = parse_task_id)]
    pub id: TaskId,

    /// What the teammate will do, step by step
    #[arg(long, value_name = "TEXT")]
    pub plan: String,
}

/// The error of a member's own operation run where no teammate is.
pub fn not_in_a_teammate(command: &str) -> String {
    format!(
        "`teamctl {command}` is a teammate's own operation: run it inside a teammate's agent, \
         where {MEMBER_SOCKET_ENV} is set (the teammate sets it, and carries the call out with \
         its claim). A person's own session takes and ends tasks through `teamctl mcp`"
    )
}

/// A member name: a valid name that is not `lead`.
pub fn parse_member_name(s: &str) -> Result<String, String> {
    teamboard_protocol::names::validate_name(s).map_err(|e| e.to_string())?;
    if s == teamboard_protocol::LEAD {
        return Err(
            "`lead` is the team's lead (you, at teamctl); give the member a name of \
             its own, e.g. --name me"
                .into(),
        );
    }
    Ok(s.to_string())
}

/// A role follows the rule of names.
pub fn parse_role(s: &str) -> Result<String, String> {
    teamboard_protocol::names::validate_name(s)
        .map(|()| s.to_string())
        .map_err(|e| format!("{e} (roles follow the same rule as names)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_named_but_not_lead() {
        assert_eq!(parse_member_name("me"), Ok("me".into()));
        assert!(parse_member_name("lead").unwrap_err().contains("--name me"));
        assert!(parse_member_name("a b").is_err());
        assert!(parse_role("re viewer").unwrap_err().contains("roles"));
        let e = not_in_a_teammate("task complete");
        assert!(
            e.contains("run it inside a teammate's agent, where TEAMBOARD_MEMBER_SOCKET is set"),
            "{e}"
        );
    }
}
