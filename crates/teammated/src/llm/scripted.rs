//! The scripted model: an offline, deterministic stand-in for an LLM.
//!
//! It is not intelligent and does not pretend to be. It exists so that the demo and
//! the tests run without a network or an API key, through exactly the same tool loop,
//! tools and board calls as a real model. Given the task it holds, it:
//!
//! 1. runs every fenced ```` ```sh ```` block of the task description, in order,
//!    through the `bash` tool (```` ```bash ```` and ```` ```shell ```` count too);
//! 2. completes the task with their output as the result;
//! 3. fails the task with the output if a block exits non-zero.
//!
//! A ```` ```complete_task ```` block among them completes the task at that point,
//! with the block's text as the result (their output if it is empty). If boardd
//! refuses that completion (a check failed, a conflict), the script goes on with
//! the blocks after it: a test of the completion gate writes the fix there. With
//! no block left, it ends its turn saying that the completion was refused, in
//! boardd's words. Its
//! commands run wherever the `bash` tool does: in the task's worktree, if it has
//! one.
//!
//! A task that needs a plan (the runtime says so under the task) gets its ```` ```sh ````
//! blocks submitted as the plan first, with `submit_plan`; the blocks run once the lead
//! approves. A rejection gets the plan submitted again, quoting the lead's feedback:
//! a script cannot revise its commands, so the plan says so, and the lead approves
//! it or cancels the task. Failing the task instead would spend one of its attempts
//! on each rejection, on a plan that no attempt could change. Asked to shut down
//! while it holds a task, it approves at once with a note of how far it got.
//!
//! With no task in hand (it was woken by a message) it answers that it has nothing to
//! do, which ends the work phase. Offered the lead's tools, it is the scripted lead
//! instead ([`super::scripted_lead`]). Token use is estimated from the text sizes.
//!
//! Asked for a summary (compaction), it says how far the script of the task in
//! hand has got ([`PROGRESS`]), in one line. After a compaction it reads the task
//! from the identity block the runtime puts back, and that line tells it which
//! steps are behind it: it goes on with the next one, as a real model goes on
//! from its summary. (Trap: the summary is not a source of the task. A summary
//! that quotes the task's claim line would be taken for the task, with the
//! summary's text as its description.) The result then carries the output of
//! the steps run since the last compaction.

use super::chat::{
    Block, ChatMessage, Completion, CompletionRequest, Role, StopReason, estimate_request,
};
use super::error::LlmError;
use crate::prompts::{SUMMARY_HEADING, SUMMARY_PROMPT};
use crate::tools::shell;
use teamboard_protocol::TokenUsage;

/// A tool only the lead has: a request that offers it is the lead's.
const LEAD_ONLY_TOOL: &str = "spawn_teammate";

/// Markers the runtime writes in front of a task it puts into the context.
const TASK_MARKERS: [&str; 3] = ["[Auto-claimed task #", "[Claimed task #", "[Current task #"];

/// The start of the runtime's note under a task that needs a plan
/// (`prompts::PLAN_FIRST`).
const PLAN_MARKER: &str = "[Runtime] This task needs a plan approved by the lead";

/// What the runtime says when the lead asks a working teammate to shut down.
const SHUTDOWN_MARKER: &str = "asks you to shut down (request ";

/// What a scripted summary says of the task in hand:
/// `scripted progress: task #7 had 3 step(s) of its script taken`.
const PROGRESS: &str = "scripted progress: task #";

/// The claim lines among [`TASK_MARKERS`]: a new task, whose script starts over.
const CLAIM_MARKERS: [&str; 2] = ["[Auto-claimed task #", "[Claimed task #"];

#[derive(Debug, Default)]
pub struct Scripted {}

impl Scripted {
    pub async fn complete(&self, req: CompletionRequest<'_>) -> Result<Completion, LlmError> {
        let content = if is_summary_request(req.messages) {
            vec![Block::text(summary(req.messages))]
        } else if req.tools.iter().any(|t| t.name == LEAD_ONLY_TOOL) {
            // Offered the lead's tools: it stands in for the lead.
            super::scripted_lead::next_step(req.messages)
        } else {
            next_step(req.messages)
        };
        let stop = if content.iter().any(|b| matches!(b, Block::ToolUse { .. })) {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        };
        let usage = TokenUsage {
            input: estimate_request(req.system, req.messages),
            output: estimate_request(
                "",
                &[ChatMessage {
                    role: Role::Assistant,
                    content: content.clone(),
                }],
            ),
            ..TokenUsage::default()
        };
        Ok(Completion {
            content,
            stop,
            usage,
            rate: None,
        })
    }
}

/// Whether the runtime asks for a summary (compaction) rather than the next step.
fn is_summary_request(messages: &[ChatMessage]) -> bool {
    messages
        .last()
        .is_some_and(|m| m.role == Role::User && m.joined_text().ends_with(SUMMARY_PROMPT))
}

/// The task the conversation is about: where its marker is, its id and description.
struct TaskInContext {
    /// Index of the message that carries the marker.
    at: usize,
    id: u64,
    description: String,
}

fn find_task(messages: &[ChatMessage]) -> Option<TaskInContext> {
    for (at, m) in messages.iter().enumerate().rev() {
        if m.role != Role::User {
            continue;
        }
        for b in m.content.iter().rev() {
            // A task the model claimed itself comes in the claim's tool result.
            let text = match b {
                Block::Text { text } => text,
                Block::ToolResult { content, .. } => content,
                Block::ToolUse { .. } => continue,
            };
            // A compaction's summary speaks of the task; the identity above it
            // holds the task itself.
            let text = text.split(SUMMARY_HEADING).next().unwrap_or_default();
            for marker in TASK_MARKERS {
                if let Some(pos) = text.rfind(marker) {
                    let rest = &text[pos + marker.len()..];
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let id = digits.parse().ok()?;
                    // The description is everything after the marker line.
                    let description = rest.split_once('\n').map(|x| x.1).unwrap_or("");
                    return Some(TaskInContext {
                        at,
                        id,
                        description: description.to_string(),
                    });
                }
            }
        }
    }
    None
}

/// One step of a task's script.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// A ```sh (or bash, shell) block: a command line for the `bash` tool.
    Run(String),
    /// A ```complete_task block: complete here, with this result.
    Complete(String),
}

/// The steps of `text`: its fenced blocks of those languages, in order.
fn steps(text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut current: Option<(bool, Vec<&str>)> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        match current.as_mut() {
            None => {
                if let Some(lang) = trimmed.strip_prefix("```") {
                    match lang.trim() {
                        "sh" | "bash" | "shell" => current = Some((true, Vec::new())),
                        "complete_task" => current = Some((false, Vec::new())),
                        _ => {}
                    }
                }
            }
            Some((run, lines)) => {
                if trimmed == "```" {
                    let body = lines.join("\n");
                    steps.push(if *run {
                        Step::Run(body)
                    } else {
                        Step::Complete(body.trim().to_string())
                    });
                    current = None;
                } else {
                    lines.push(line);
                }
            }
        }
    }
    steps
}

/// The bodies of the ```sh (or bash, shell) fenced blocks of `text`, in order.
pub fn shell_blocks(text: &str) -> Vec<String> {
    steps(text)
        .into_iter()
        .filter_map(|s| match s {
            Step::Run(command) => Some(command),
            Step::Complete(_) => None,
        })
        .collect()
}

fn next_step(messages: &[ChatMessage]) -> Vec<Block> {
    let uses = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| matches!(b, Block::ToolUse { .. }))
        .count();
    let call = |name: &str, input: serde_json::Value| Block::ToolUse {
        id: format!("scripted-{}", uses + 1),
        name: name.to_string(),
        input,
    };
    let Some(task) = find_task(messages) else {
        return vec![Block::text(
            "I hold no task, so there is nothing for me to do right now.",
        )];
    };
    let after = &messages[task.at..];
    // The steps taken before the last compaction, which its summary counted.
    let earlier = after
        .iter()
        .flat_map(|m| m.content.iter())
        .rev()
        .find_map(|b| progress_of(b.as_text()?, task.id))
        .unwrap_or(0);
    let mut finished = false;
    let mut bash_ids = Vec::new();
    let mut plan_ids = Vec::new();
    // The bash and complete_task calls since: the steps taken, in order.
    let mut taken: Vec<(&str, &str)> = Vec::new();
    for b in after.iter().flat_map(|m| &m.content) {
        if let Block::ToolUse { id, name, .. } = b {
            match name.as_str() {
                "bash" => {
                    bash_ids.push(id.clone());
                    taken.push((name, id));
                }
                "complete_task" => taken.push((name, id)),
                "submit_plan" => plan_ids.push(id.clone()),
                "fail_task" | "respond_shutdown" => finished = true,
                _ => {}
            }
        }
    }
    let script = steps(&task.description);
    let step = earlier + taken.len();
    // The commands among the steps the summary counted.
    let ran_before = script[..earlier.min(script.len())]
        .iter()
        .filter(|s| matches!(s, Step::Run(_)))
        .count();
    // A completion ends the script, unless boardd refused it and steps are left.
    // A refusal with no step left to fix it is said as it is: boardd's words,
    // never as if the task were done.
    let mut refusal = None;
    if let Some(("complete_task", id)) = taken.last() {
        refusal = result_of(after, id).filter(|(_, is_error)| *is_error);
        finished |= refusal.is_none() || step >= script.len();
    }
    if finished {
        let said = match refusal {
            Some((text, _)) => format!(
                "Task #{} is not done: boardd refused to complete it, and my script has no step left to fix it.\n{text}",
                task.id
            ),
            None => format!("Task #{} is reported.", task.id),
        };
        return vec![Block::text(said)];
    }
    let blocks = shell_blocks(&task.description);
    if asked_to_leave(after) {
        let note = format!(
            "scripted: ran {} of {} commands of #{} before the shutdown",
            ran_before + bash_ids.len(),
            blocks.len(),
            task.id
        );
        return vec![call(
            "respond_shutdown",
            serde_json::json!({ "approve": true, "note": note }),
        )];
    }
    if task.description.contains(PLAN_MARKER) {
        let plan = if blocks.is_empty() {
            "Nothing to run: the task has no ```sh blocks.".to_string()
        } else {
            format!("I will run:\n```sh\n{}\n```", blocks.join("\n"))
        };
        let decision = plan_ids.last().and_then(|id| result_of(after, id));
        match decision {
            None => {
                return vec![
                    Block::text(format!("Task #{} needs a plan; submitting it.", task.id)),
                    call("submit_plan", serde_json::json!({ "plan": plan })),
                ];
            }
            Some((answer, true)) => {
                let Some(feedback) = rejection_feedback(&answer) else {
                    return vec![call(
                        "fail_task",
                        serde_json::json!({ "reason": format!("the plan was not approved: {answer}") }),
                    )];
                };
                let plan = format!(
                    "The lead rejected my plan: {feedback}\nI am the offline scripted model \
                     and run the task's ```sh blocks as they are written, so the plan is the \
                     same: approve it, or cancel the task to change what runs.\n{plan}"
                );
                return vec![
                    Block::text(format!("Submitting the plan for #{} again.", task.id)),
                    call("submit_plan", serde_json::json!({ "plan": plan })),
                ];
            }
            Some((_, false)) => {}
        }
    }
    let outputs: Vec<(String, bool)> = bash_ids
        .iter()
        .filter_map(|id| result_of(after, id))
        .collect();
    if let Some((output, true)) = outputs.last() {
        let n = ran_before + outputs.len();
        let code = shell::exit_code_of(output)
            .map(|c| format!("exited with code {c}"))
            .unwrap_or_else(|| "failed".to_string());
        return vec![call(
            "fail_task",
            serde_json::json!({
                "reason": format!("command {n} of {} {code}:\n{}", blocks.len(), shell::strip_trailer(output).trim_end())
            }),
        )];
    }
    let result = match script.get(step) {
        Some(Step::Run(command)) => {
            return vec![
                Block::text(format!(
                    "Running command {} of {} for task #{}.",
                    ran_before + outputs.len() + 1,
                    blocks.len(),
                    task.id
                )),
                call("bash", serde_json::json!({ "command": command })),
            ];
        }
        Some(Step::Complete(result)) if !result.is_empty() => result.clone(),
        _ => output_result(&outputs, ran_before, !blocks.is_empty()),
    };
    vec![call(
        "complete_task",
        serde_json::json!({ "result": result }),
    )]
}

/// The result of a task whose commands gave `outputs` since the last compaction
/// (after `ran_before` others): their output, or what ran.
fn output_result(outputs: &[(String, bool)], ran_before: usize, has_commands: bool) -> String {
    let result: Vec<&str> = outputs
        .iter()
        .map(|(o, _)| shell::strip_trailer(o).trim_end())
        .filter(|o| !o.is_empty())
        .collect();
    if !has_commands {
        "The task has no ```sh blocks, so there was nothing to run.".to_string()
    } else if result.is_empty() {
        format!("Ran {} command(s); no output.", ran_before + outputs.len())
    } else {
        result.join("\n")
    }
}

/// The result of tool use `id`: its content and whether it is an error.
fn result_of(messages: &[ChatMessage], id: &str) -> Option<(String, bool)> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|b| match b {
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } if tool_use_id == id => Some((content.clone(), *is_error)),
            _ => None,
        })
}

/// The lead's feedback in `submit_plan`'s answer, when the answer is a rejection
/// (the runtime's "[Runtime] lead rejected your plan for #4 (request 9): ..."),
/// not another failure of the call.
fn rejection_feedback(answer: &str) -> Option<&str> {
    let (_, rest) = answer.split_once(" rejected your plan for #")?;
    let (_, feedback) = rest.split_once("): ")?;
    match feedback.lines().next().unwrap_or_default().trim() {
        "" => Some("(no reason given)"),
        feedback => Some(feedback),
    }
}

/// Whether the runtime asked for a shutdown answer after the last answer given.
fn asked_to_leave(messages: &[ChatMessage]) -> bool {
    messages.iter().flat_map(|m| &m.content).any(|b| match b {
        Block::Text { text } => text.contains(SHUTDOWN_MARKER),
        Block::ToolResult { content, .. } => content.contains(SHUTDOWN_MARKER),
        _ => false,
    })
}

/// The task and the steps it had taken, as the last scripted summary in `text`
/// says.
fn progress(text: &str) -> Option<(u64, usize)> {
    let (_, rest) = text.rsplit_once(PROGRESS)?;
    let (id, rest) = rest.split_once(" had ")?;
    Some((id.parse().ok()?, rest.split(' ').next()?.parse().ok()?))
}

/// The steps task `id` had taken, if `text` holds a scripted summary of it.
fn progress_of(text: &str, id: u64) -> Option<usize> {
    progress(text).and_then(|(of, steps)| (of == id).then_some(steps))
}

/// A summary of the work log in the request: how far the script of the task in
/// hand has got. The log is `context`'s: one line per entry, a tool call as
/// `[assistant calls NAME] INPUT`; an earlier compaction's summary is in it too.
fn summary(messages: &[ChatMessage]) -> String {
    let log = messages
        .last()
        .map(ChatMessage::joined_text)
        .unwrap_or_default();
    let mut task: Option<(u64, usize)> = None;
    for line in log.lines() {
        let claimed = CLAIM_MARKERS.iter().find_map(|m| {
            let rest = &line[line.find(m)? + m.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        });
        if let Some(id) = claimed {
            task = Some((id, 0));
        } else if let Some(said) = progress(line) {
            task = Some(said);
        } else if (line.starts_with("[assistant calls bash]")
            || line.starts_with("[assistant calls complete_task]"))
            && let Some((_, steps)) = task.as_mut()
        {
            *steps += 1;
        }
    }
    match task {
        Some((id, steps)) => format!(
            "Earlier work (scripted summary): {PROGRESS}{id} had {steps} step(s) of its script taken."
        ),
        None => "Earlier work (scripted summary): no task in hand.".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ToolSpec;

    fn req<'a>(messages: &'a [ChatMessage], tools: &'a [ToolSpec]) -> CompletionRequest<'a> {
        CompletionRequest {
            system: "s",
            messages,
            tools,
            max_tokens: 100,
            on_retry: None,
            retry_rate_limits: true,
        }
    }

    fn tools() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "bash".into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
        }]
    }

    fn result(id: &str, content: &str, is_error: bool) -> ChatMessage {
        ChatMessage {
            role: Role::User,
            content: vec![Block::ToolResult {
                tool_use_id: id.into(),
                content: content.into(),
                is_error,
            }],
        }
    }

    #[test]
    fn fenced_blocks_are_found_in_order() {
        let text =
            "intro\n```sh\necho a\necho b\n```\n```python\nprint(1)\n```\n  ```bash\nls\n  ```\n";
        assert_eq!(shell_blocks(text), vec!["echo a\necho b", "ls"]);
    }

    #[tokio::test]
    async fn runs_each_block_then_completes_with_the_output() {
        let tools = tools();
        let mut msgs = vec![ChatMessage::user_text(
            "[Auto-claimed task #7] demo\n```sh\necho one\n```\n```sh\necho two\n```",
        )];
        let s = Scripted::default();
        for expected in ["echo one", "echo two"] {
            let c = s.complete(req(&msgs, &tools)).await.unwrap();
            assert_eq!(c.stop, StopReason::ToolUse);
            let Some(Block::ToolUse { id, name, input }) = c.content.last().cloned() else {
                panic!("{c:?}")
            };
            assert_eq!(name, "bash");
            assert_eq!(input["command"], expected);
            msgs.push(ChatMessage {
                role: Role::Assistant,
                content: c.content,
            });
            let out = format!("{}\n[exit code: 0]", expected.trim_start_matches("echo "));
            msgs.push(result(&id, &out, false));
        }
        let c = s.complete(req(&msgs, &tools)).await.unwrap();
        let Some(Block::ToolUse { name, input, .. }) = c.content.last().cloned() else {
            panic!("{c:?}")
        };
        assert_eq!(name, "complete_task");
        assert_eq!(input["result"], "one\ntwo");
        assert!(c.usage.input > 0 && c.usage.output > 0);
    }

    #[tokio::test]
    async fn a_failing_block_fails_the_task_with_its_output() {
        let tools = tools();
        let msgs = vec![
            ChatMessage::user_text(
                "[Auto-claimed task #3] x\n```sh\nfalse\n```\n```sh\necho never\n```",
            ),
            ChatMessage {
                role: Role::Assistant,
                content: vec![Block::ToolUse {
                    id: "scripted-1".into(),
                    name: "bash".into(),
                    input: serde_json::json!({"command": "false"}),
                }],
            },
            result("scripted-1", "boom\n[exit code: 1]", true),
        ];
        let c = Scripted::default()
            .complete(req(&msgs, &tools))
            .await
            .unwrap();
        let Some(Block::ToolUse { name, input, .. }) = c.content.last().cloned() else {
            panic!("{c:?}")
        };
        assert_eq!(name, "fail_task");
        let reason = input["reason"].as_str().unwrap();
        assert!(
            reason.contains("exited with code 1") && reason.contains("boom"),
            "{reason}"
        );
    }

    /// The last tool use of `c`: its id, name and input.
    fn last_use(c: &Completion) -> (String, String, serde_json::Value) {
        match c.content.last().cloned() {
            Some(Block::ToolUse { id, name, input }) => (id, name, input),
            _ => panic!("no tool use: {c:?}"),
        }
    }

    /// Asks `s` for its next step, answers it with `content` and returns the
    /// tool it called.
    async fn step(
        msgs: &mut Vec<ChatMessage>,
        content: &str,
        is_error: bool,
    ) -> (String, serde_json::Value) {
        let c = Scripted::default()
            .complete(req(msgs, &tools()))
            .await
            .unwrap();
        let (id, name, input) = last_use(&c);
        msgs.push(ChatMessage {
            role: Role::Assistant,
            content: c.content,
        });
        msgs.push(result(&id, content, is_error));
        (name, input)
    }

    #[tokio::test]
    async fn a_refused_completion_goes_on_with_the_steps_after_it() {
        let mut msgs = vec![ChatMessage::user_text(
            "[Auto-claimed task #4] gate\n```sh\necho one\n```\n```complete_task\nfirst try\n```\n\
             ```sh\ntouch fixed\n```\n\n[Worktree] You work on task #4 in the git worktree /w",
        )];
        let (name, input) = step(&mut msgs, "one\n[exit code: 0]", false).await;
        assert_eq!(
            (name.as_str(), &input["command"]),
            ("bash", &serde_json::json!("echo one"))
        );
        let (name, input) = step(
            &mut msgs,
            "complete_task was refused: check `x` failed",
            true,
        )
        .await;
        assert_eq!(
            (name.as_str(), &input["result"]),
            ("complete_task", &serde_json::json!("first try"))
        );
        let (name, input) = step(&mut msgs, "[exit code: 0]", false).await;
        assert_eq!(
            (name.as_str(), &input["command"]),
            ("bash", &serde_json::json!("touch fixed"))
        );
        let (name, input) = step(&mut msgs, "task #4 completed", false).await;
        assert_eq!(
            (name.as_str(), &input["result"]),
            ("complete_task", &serde_json::json!("one"))
        );
        let c = Scripted::default()
            .complete(req(&msgs, &tools()))
            .await
            .unwrap();
        assert_eq!(c.stop, StopReason::EndTurn, "{c:?}");
    }

    #[tokio::test]
    async fn a_refusal_with_no_step_left_is_said_as_a_refusal() {
        let mut msgs = vec![ChatMessage::user_text(
            "[Auto-claimed task #5] gate\n```sh\necho one\n```\n\n[Worktree] You work on task #5",
        )];
        step(&mut msgs, "one\n[exit code: 0]", false).await;
        let refused = "complete_task was refused: the branch conflicts with main in same.txt";
        let (name, _) = step(&mut msgs, refused, true).await;
        assert_eq!(name, "complete_task");
        let c = Scripted::default()
            .complete(req(&msgs, &tools()))
            .await
            .unwrap();
        assert_eq!(c.stop, StopReason::EndTurn, "{c:?}");
        let text = c.content[0].as_text().unwrap_or_default().to_string();
        assert!(!text.contains("is reported"), "{text}");
        assert!(
            text.starts_with("Task #5 is not done: boardd refused to complete it")
                && text.ends_with(refused),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_rejected_plan_is_submitted_again_with_the_feedback() {
        let mut msgs = vec![ChatMessage::user_text(format!(
            "[Auto-claimed task #6] p\n```sh\necho hi\n```\n\n{PLAN_MARKER} before you change anything."
        ))];
        let rejected = "[Runtime] lead rejected your plan for #6 (request 2): say why\n\
                        Revise it and call submit_plan again.";
        let (name, first) = step(&mut msgs, rejected, true).await;
        assert_eq!(name, "submit_plan");
        let (name, again) = step(&mut msgs, "boardd refused the plan: too big", true).await;
        assert_eq!(name, "submit_plan", "{again}");
        let plan = again["plan"].as_str().unwrap();
        assert!(
            plan.starts_with("The lead rejected my plan: say why\n")
                && plan.ends_with(first["plan"].as_str().unwrap()),
            "{plan}"
        );
        // Any other failure of the call still fails the task.
        let c = Scripted::default()
            .complete(req(&msgs, &tools()))
            .await
            .unwrap();
        let (_, name, input) = last_use(&c);
        assert_eq!(name, "fail_task");
        assert!(
            input["reason"].as_str().unwrap().contains("too big"),
            "{input}"
        );
    }

    #[tokio::test]
    async fn an_accepted_completion_ends_the_script() {
        let tools = tools();
        let msgs = vec![
            ChatMessage::user_text(
                "[Auto-claimed task #5] x\n```complete_task\ndone early\n```\n```sh\necho never\n```",
            ),
            ChatMessage {
                role: Role::Assistant,
                content: vec![Block::ToolUse {
                    id: "scripted-1".into(),
                    name: "complete_task".into(),
                    input: serde_json::json!({"result": "done early"}),
                }],
            },
            result("scripted-1", "task #5 completed", false),
        ];
        let c = Scripted::default()
            .complete(req(&msgs, &tools))
            .await
            .unwrap();
        assert_eq!(c.stop, StopReason::EndTurn, "{c:?}");
    }

    #[tokio::test]
    async fn without_a_task_it_ends_the_turn() {
        let tools = tools();
        let msgs = vec![ChatMessage::user_text("[Message from lead] hello")];
        let c = Scripted::default()
            .complete(req(&msgs, &tools))
            .await
            .unwrap();
        assert_eq!(c.stop, StopReason::EndTurn);
    }
}
