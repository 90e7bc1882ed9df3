//! The slash commands: answered from boardd by the runtime, without a model call.

use crate::board_view::task_lines;
use teamboard_protocol::request::ListRequestsArgs;
use teamboard_protocol::{
    Client, ClientError, RequestKind, RequestState, TeamRequest, now_ms, request_tag,
};

/// What a line typed by the person is.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Command {
    Tasks,
    Team,
    Inbox,
    Plans,
    Requests,
    Help,
    Quit,
    /// A `/word` that is none of the above.
    Unknown(String),
}

pub(super) const HELP: &str = "\
Talk to the lead in plain words. Lines that start with / are answered here, without the model:
  /tasks     the board          /team      the roster
  /inbox     unread messages    /plans     plan requests
  /requests  open requests      /quit      leave (the teammates keep working)";

/// The command a line is, or `None` for words meant for the lead.
pub(super) fn parse(line: &str) -> Option<Command> {
    let word = line.trim().strip_prefix('/')?;
    let word = word.split_whitespace().next().unwrap_or_default();
    Some(match word {
        "tasks" => Command::Tasks,
        "team" => Command::Team,
        "inbox" => Command::Inbox,
        "plans" => Command::Plans,
        "requests" => Command::Requests,
        "help" | "?" => Command::Help,
        "quit" | "exit" | "q" => Command::Quit,
        other => Command::Unknown(other.to_string()),
    })
}

/// The answer to a command (but `/quit`, which the caller handles).
pub(super) async fn answer(client: &Client, command: &Command) -> String {
    let text = match command {
        Command::Tasks => tasks(client).await,
        Command::Team => team(client).await,
        Command::Inbox => inbox(client).await,
        Command::Plans => requests(client, Some(RequestKind::Plan), None).await,
        Command::Requests => requests(client, None, Some(RequestState::Pending)).await,
        Command::Help | Command::Quit => Ok(HELP.to_string()),
        Command::Unknown(w) => Ok(format!("unknown command /{w}\n{HELP}")),
    };
    text.unwrap_or_else(|e| format!("boardd refused: {e}"))
}

/// One line per item, or `empty` when there is none.
fn listing<T>(items: &[T], empty: &str, line: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return empty.to_string();
    }
    items.iter().map(line).collect::<Vec<_>>().join("\n")
}

async fn tasks(client: &Client) -> Result<String, ClientError> {
    Ok(task_lines(&client.list_tasks(None).await?))
}

async fn team(client: &Client) -> Result<String, ClientError> {
    Ok(listing(&client.team().await?, "no teammates", |m| {
        let task = m.task.map(|t| format!(" #{t}")).unwrap_or_default();
        let conn = if m.connected { "" } else { " (disconnected)" };
        format!(
            "{:<12} {:<10} {}{task}{conn}  {} tokens",
            m.name,
            m.role,
            m.status,
            m.tokens.total()
        )
    }))
}

async fn inbox(client: &Client) -> Result<String, ClientError> {
    let empty = "the inbox is empty (everything is in the lead's context)";
    Ok(listing(&client.inbox().await?, empty, |m| {
        let first = m.content.lines().next().unwrap_or_default();
        format!("{} {} from {}: {first}", m.id, m.kind, m.from)
    }))
}

async fn requests(
    client: &Client,
    kind: Option<RequestKind>,
    state: Option<RequestState>,
) -> Result<String, ClientError> {
    let args = ListRequestsArgs {
        kind,
        state,
        ..ListRequestsArgs::default()
    };
    Ok(listing(
        &client.list_requests(args).await?,
        "none",
        request_line,
    ))
}

fn request_line(r: &TeamRequest) -> String {
    let age = (now_ms() - r.created_at).max(0) / 1000;
    let task = r.task.map(|t| format!(" task #{t}")).unwrap_or_default();
    let mut s = format!(
        "{} {} {} → {}{task} {} ({age}s old)",
        request_tag(r.id),
        r.kind,
        r.from,
        r.to,
        r.state
    );
    if let Some(plan) = &r.plan {
        s.push_str(&format!(
            "\n    {}",
            plan.lines().collect::<Vec<_>>().join("\n    ")
        ));
    }
    if let Some(f) = &r.feedback {
        s.push_str(&format!("\n    feedback: {f}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slash_lines_are_commands_and_other_lines_are_words() {
        assert_eq!(parse("/tasks"), Some(Command::Tasks));
        assert_eq!(parse("  /quit  "), Some(Command::Quit));
        assert_eq!(parse("/plans now"), Some(Command::Plans));
        assert_eq!(parse("/nope"), Some(Command::Unknown("nope".into())));
        assert_eq!(parse("start"), None);
        assert_eq!(parse("use /tmp please"), None);
    }
}
