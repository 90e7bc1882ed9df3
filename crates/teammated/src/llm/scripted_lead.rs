//! The scripted lead: an offline, deterministic stand-in for the lead's model.
//!
//! It is not intelligent. It exists so that `teamctl lead`, the demo and the tests
//! run without a network, through the same tools, events and board calls as a model.
//! It reads the conversation and, in this order:
//!
//! 1. reviews every plan request it has not reviewed yet (`review_plan`): it rejects
//!    a plan whose text contains `rm -rf` and approves any other;
//! 2. carries out a started plan: after the person said `start`, it creates the
//!    tasks of their latest ```` ```plan ```` block (see [`super::lead_plan`]), a round
//!    at a time so that `blocked_by` can name the ids earlier rounds got, then spawns
//!    the plan's teammates;
//! 3. after a round of tools, says what they did;
//! 4. otherwise answers what started the turn: the board being done (a summary from
//!    the results the runtime listed), a plan block (the proposal, and a request to
//!    say `start`), a teammate's error (noted), or anything else (how to use it).
//!
//! The person's words are the text blocks that do not start with `[`: everything the
//! runtime adds starts with a bracketed marker. Token use is estimated from sizes.

use super::chat::{Block, ChatMessage, Role};
use super::lead_plan::{PlanSpec, find_plan};
use crate::prompts::lead as marks;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// What the scripted lead refuses in a plan.
pub const FORBIDDEN_IN_PLANS: &str = "rm -rf";

/// The scripted lead's next turn.
pub fn next_step(messages: &[ChatMessage]) -> Vec<Block> {
    let mut calls = Calls::new(messages);
    if let Some(blocks) = review_plans(messages, &mut calls) {
        return blocks;
    }
    if let Some(blocks) = carry_out(messages, &mut calls) {
        return blocks;
    }
    if let Some(last) = messages.last()
        && last.role == Role::User
        && last.has_tool_results()
        && last.texts().is_empty()
    {
        return vec![Block::text(after_tools(messages))];
    }
    vec![Block::text(answer(messages))]
}

/// Numbers the tool uses of this turn after those already in the conversation.
struct Calls {
    next: usize,
}

impl Calls {
    fn new(messages: &[ChatMessage]) -> Calls {
        let used = messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| matches!(b, Block::ToolUse { .. }))
            .count();
        Calls { next: used + 1 }
    }

    fn call(&mut self, name: &str, input: Value) -> Block {
        let id = format!("lead-{}", self.next);
        self.next += 1;
        Block::ToolUse {
            id,
            name: name.to_string(),
            input,
        }
    }
}

/// The person's words in a message: its text blocks that are no runtime marker.
fn person_texts(m: &ChatMessage) -> impl Iterator<Item = &str> {
    let texts = m.content.iter().filter_map(Block::as_text);
    texts.filter(move |text| m.role == Role::User && !text.trim_start().starts_with('['))
}

/// Every tool use of the conversation with its result: (name, input, result, error).
fn tool_history(messages: &[ChatMessage]) -> Vec<(String, Value, String, bool)> {
    let mut results = BTreeMap::new();
    for b in messages.iter().flat_map(|m| &m.content) {
        if let Block::ToolResult {
            tool_use_id,
            content,
            is_error,
        } = b
        {
            results.insert(tool_use_id.clone(), (content.clone(), *is_error));
        }
    }
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => {
                let (content, err) = results.get(id).cloned().unwrap_or_default();
                Some((name.clone(), input.clone(), content, err))
            }
            _ => None,
        })
        .collect()
}

fn review_plans(messages: &[ChatMessage], calls: &mut Calls) -> Option<Vec<Block>> {
    let reviewed: BTreeSet<u64> = tool_history(messages)
        .iter()
        .filter(|(name, ..)| name == "review_plan")
        .filter_map(|(_, input, ..)| input.get("request").and_then(Value::as_u64))
        .collect();
    let mut blocks = Vec::new();
    let mut seen = BTreeSet::new();
    for m in messages.iter().filter(|m| m.role == Role::User) {
        for text in m.texts() {
            for (at, _) in text.match_indices(marks::PLAN_REQUEST) {
                let rest = &text[at + marks::PLAN_REQUEST.len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let Ok(id) = digits.parse::<u64>() else {
                    continue;
                };
                if reviewed.contains(&id) || !seen.insert(id) {
                    continue;
                }
                // The plan is everything up to the next runtime marker line.
                let plan = rest.split("\n[").next().unwrap_or(rest);
                let input = if plan.contains(FORBIDDEN_IN_PLANS) {
                    json!({
                        "request": id,
                        "approve": false,
                        "feedback": format!(
                            "Rejected: the plan runs `{FORBIDDEN_IN_PLANS}`. Do the task without deleting recursively, and submit a new plan."
                        ),
                    })
                } else {
                    json!({
                        "request": id,
                        "approve": true,
                        "feedback": "Approved: the plan does what the task asks.",
                    })
                };
                blocks.push(calls.call("review_plan", input));
            }
        }
    }
    if blocks.is_empty() {
        return None;
    }
    blocks.insert(
        0,
        Block::text(format!("Reviewing {} plan request(s).", blocks.len())),
    );
    Some(blocks)
}

/// Where the person said `start`, and the plan it starts.
fn started_plan(messages: &[ChatMessage]) -> Option<(usize, Result<PlanSpec, String>)> {
    let at = messages
        .iter()
        .rposition(|m| person_texts(m).any(marks::says_start))?;
    let plan = messages[..at]
        .iter()
        .rev()
        .flat_map(|m| person_texts(m).collect::<Vec<_>>().into_iter().rev())
        .find_map(find_plan)
        .unwrap_or_else(|| Err("there is no plan to start: send a ````plan block first".into()));
    Some((at, plan))
}

fn carry_out(messages: &[ChatMessage], calls: &mut Calls) -> Option<Vec<Block>> {
    let (at, plan) = started_plan(messages)?;
    let after = &messages[at + 1..];
    // The start was answered once a turn after it ended in text.
    if after
        .iter()
        .any(|m| m.role == Role::Assistant && !m.has_tool_uses())
    {
        return None;
    }
    let plan = match plan {
        Ok(plan) => plan,
        Err(why) => return Some(vec![Block::text(format!("I cannot start: {why}."))]),
    };
    let history = tool_history(after);
    if let Some((name, _, content, _)) = history
        .iter()
        .find(|(name, _, _, err)| *err && (name == "create_task" || name == "spawn_teammate"))
    {
        return Some(vec![Block::text(format!(
            "I stopped starting the plan: {name} failed: {content}"
        ))]);
    }
    // Task subject -> board id, from the results of this start's create_task calls.
    let mut ids: BTreeMap<String, u64> = BTreeMap::new();
    for (name, input, content, _) in &history {
        if name != "create_task" {
            continue;
        }
        let subject = input.get("subject").and_then(Value::as_str);
        let id = content
            .split_once('#')
            .map(|(_, r)| {
                r.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
            .and_then(|d| d.parse().ok());
        if let (Some(subject), Some(id)) = (subject, id) {
            ids.insert(subject.to_string(), id);
        }
    }
    let by_name: BTreeMap<&str, &str> = plan
        .tasks
        .iter()
        .map(|t| (t.name.as_str(), t.subject.as_str()))
        .collect();
    let mut blocks = Vec::new();
    for task in plan.tasks.iter().filter(|t| !ids.contains_key(&t.subject)) {
        let blockers: Option<Vec<u64>> = task
            .after
            .iter()
            .map(|dep| by_name.get(dep.as_str()).and_then(|s| ids.get(*s)).copied())
            .collect();
        let Some(blockers) = blockers else { continue };
        let mut input = json!({
            "subject": task.subject,
            "description": task.description,
            "blocked_by": blockers,
        });
        if let Some(role) = &task.role {
            input["role"] = json!(role);
        }
        if task.priority != 0 {
            input["priority"] = json!(task.priority);
        }
        if task.require_plan {
            input["require_plan"] = json!(true);
        }
        if !task.checks.is_empty() {
            input["checks"] = json!(task.checks);
        }
        if task.no_worktree {
            input["no_worktree"] = json!(true);
        }
        blocks.push(calls.call("create_task", input));
    }
    if blocks.is_empty() {
        let spawned: BTreeSet<&str> = history
            .iter()
            .filter(|(name, ..)| name == "spawn_teammate")
            .filter_map(|(_, input, ..)| input.get("name").and_then(Value::as_str))
            .collect();
        for t in plan
            .teammates
            .iter()
            .filter(|t| !spawned.contains(t.name.as_str()))
        {
            blocks.push(calls.call("spawn_teammate", json!({ "name": t.name, "role": t.role })));
        }
        if blocks.is_empty() {
            return Some(vec![Block::text(format!(
                "Started: {} task(s) on the board and {} teammate(s) spawned. They claim \
                 the ready tasks on their own; plans are reviewed as they come, and I sum up \
                 when the board is done.",
                plan.tasks.len(),
                plan.teammates.len()
            ))]);
        }
        blocks.insert(0, Block::text("Spawning the team."));
    } else {
        blocks.insert(0, Block::text("Putting the tasks on the board."));
    }
    Some(blocks)
}

/// A final word after a round of tools that was not part of a start.
fn after_tools(messages: &[ChatMessage]) -> String {
    let Some(last) = messages.last() else {
        return "Done.".to_string();
    };
    let lines: Vec<String> = last
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolResult {
                content, is_error, ..
            } => Some(format!(
                "- {}{}",
                if *is_error { "error: " } else { "" },
                content.lines().next().unwrap_or_default()
            )),
            _ => None,
        })
        .collect();
    format!("Done:\n{}", lines.join("\n"))
}

/// The answer to what started the turn.
fn answer(messages: &[ChatMessage]) -> String {
    let Some(last) = messages.last().filter(|m| m.role == Role::User) else {
        return "I have nothing to answer.".to_string();
    };
    let texts = last.texts();
    if let Some(done) = texts
        .iter()
        .find_map(|t| t.find(marks::BOARD_DONE).map(|at| &t[at..]))
    {
        return summary(done);
    }
    let person: Vec<&str> = person_texts(last).collect();
    if let Some(plan) = person.iter().rev().find_map(|t| find_plan(t)) {
        return match plan {
            Ok(plan) => proposal(&plan),
            Err(why) => format!("I cannot read the plan: {why}."),
        };
    }
    if !person.is_empty() {
        return "I am the scripted lead, an offline stand-in, not a model: write \
                the team plan as a ````plan block (see the README), then say \"start\"."
            .to_string();
    }
    let errors: Vec<&str> = texts
        .iter()
        .filter(|t| t.starts_with(marks::ERROR))
        .copied()
        .collect();
    if !errors.is_empty() {
        return format!(
            "Noted {} error report(s); boardd retries a failed attempt while attempts are \
             left:\n{}",
            errors.len(),
            errors.join("\n")
        );
    }
    "Noted.".to_string()
}

fn proposal(plan: &PlanSpec) -> String {
    let mut s = format!(
        "Team plan: {} task(s), {} teammate(s).\n",
        plan.tasks.len(),
        plan.teammates.len()
    );
    for (i, t) in plan.tasks.iter().enumerate() {
        s.push_str(&format!("  {}. {}", i + 1, t.subject));
        if t.after.is_empty() {
            s.push_str(" (can start at once)");
        } else {
            s.push_str(&format!(" (after {})", t.after.join(", ")));
        }
        if let Some(role) = &t.role {
            s.push_str(&format!(", role {role}"));
        }
        if t.require_plan {
            s.push_str(", needs an approved plan first");
        }
        if !t.checks.is_empty() {
            let checks: Vec<String> = t.checks.iter().map(|c| format!("`{c}`")).collect();
            let verb = if checks.len() == 1 { "passes" } else { "pass" };
            s.push_str(&format!(
                ", completes only when {} {verb}",
                checks.join(", ")
            ));
        }
        if t.no_worktree {
            s.push_str(", works without a worktree");
        }
        s.push('\n');
    }
    let team: Vec<String> = plan
        .teammates
        .iter()
        .map(|t| format!("{} ({})", t.name, t.role))
        .collect();
    if team.is_empty() {
        s.push_str("No teammates to spawn: the tasks wait for the team you have.\n");
    } else {
        s.push_str(&format!("Teammates: {}.\n", team.join(", ")));
    }
    s.push_str("Say \"start\" to put it on the board.");
    s
}

/// The summary, from the runtime's board-done report.
fn summary(done: &str) -> String {
    let body: Vec<&str> = done
        .trim_start_matches(marks::BOARD_DONE)
        .trim()
        .lines()
        .filter(|l| !l.starts_with("Summarise"))
        .collect();
    format!("Summary of the team's work: {}", body.join("\n"))
}

#[cfg(test)]
mod tests;
