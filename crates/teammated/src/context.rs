//! The model's context: the system prompt, the conversation, its size, and
//! compaction.
//!
//! Over budget, the teammate compacts: it saves the whole conversation to disk,
//! asks the model to summarise the older part, and keeps the recent part verbatim.
//! The cut is always placed right before an assistant turn: that turn's tool uses are
//! answered by the user turn after it, which is kept too, and the exchange before the
//! cut is summarised whole. So a `tool_use` is never separated from its `tool_result`
//! (both APIs reject a conversation where that happens). The identity block and the
//! summary then open the conversation as its first user turn, so a teammate that has
//! forgotten its history still knows who it is and what it is working on.
//!
//! A task taken between work phases starts a conversation of its own (unless the
//! teammate runs with `--carry-context`): the system prompt, which says who the
//! teammate is, then the task and the previous owner's note. What came before is
//! saved to disk like a compaction's archive; the transcript has it too. The system
//! prompt names no task, so it stays the same from task to task and the provider
//! can serve it from its prompt cache.

use crate::llm::{
    self, Block, ChatMessage, CompletionRequest, LlmError, OnRetry, Provider, Role, estimate_tokens,
};
use crate::prompts::{SUMMARY_HEADING, SUMMARY_PROMPT};
use std::path::Path;
use teamboard_protocol::text::{byte_prefix_with_ellipsis, fit_bytes_with_mark};
use teamboard_protocol::{Task, TokenUsage};

/// The facts that must survive compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub role: String,
    pub team: String,
    /// The task held now: id, subject and description.
    pub task: Option<(u64, String, String)>,
    /// Where the held task works, when it has a worktree of its own.
    pub worktree: Option<String>,
    /// The team's lead (`teammated lead`) rather than a teammate: it holds no
    /// task, and its prompt is the lead's.
    pub lead: bool,
}

/// The longest task description repeated in the identity block.
const IDENTITY_DESCRIPTION_MAX: usize = 4000;

impl Identity {
    /// The block put back after compaction.
    pub fn block(&self) -> String {
        if self.lead {
            return format!(
                "<identity>\nYou are the lead of team '{}': you plan with the person, put \
                 tasks on the board, spawn teammates, review their plans and summarise the \
                 results.\n</identity>",
                self.team
            );
        }
        let mut s = format!(
            "<identity>\nYou are {}, a teammate with the role '{}' in team '{}'.\n",
            self.name, self.role, self.team
        );
        match &self.task {
            Some((id, subject, description)) => {
                s.push_str(&format!("[Current task #{id}] {subject}\n"));
                if !description.is_empty() {
                    s.push_str(&byte_prefix_with_ellipsis(
                        description,
                        IDENTITY_DESCRIPTION_MAX,
                    ));
                    s.push('\n');
                }
                if let Some(line) = &self.worktree {
                    s.push_str(line);
                    s.push('\n');
                }
            }
            None => s.push_str("You hold no task right now.\n"),
        }
        s.push_str("</identity>");
        s
    }
}

/// The system prompt: who the teammate is and how it works.
pub fn system_prompt(identity: &Identity) -> String {
    if identity.lead {
        return crate::prompts::lead::SYSTEM.replace("{team}", &identity.team);
    }
    format!(
        "You are {name}, an autonomous teammate with the role '{role}' in team '{team}' on a \
         shared task board. The lead and other teammates work on the same board.\n\
         When a task is given to you, work on it with your tools in your working directory. \
         When it is done, call complete_task with a short result; if it cannot be done, call \
         fail_task with the reason. You may split work with create_task (with blocked_by \
         dependencies), see who is on the team with list_team, and talk to others with \
         send_message and broadcast. Every message wakes its reader, so do not send one only \
         to acknowledge or thank. Messages that arrive while you work are added to the \
         conversation for you; you never need to poll. \
         When you have nothing left to do, call idle.",
        name = identity.name,
        role = identity.role,
        team = identity.team,
    )
}

/// The user text that opens a task: the claim line with the subject and the
/// description, then, as a block of its own, the note the previous owner left when
/// it gave the task back. `how` says how the task came ("Auto-claimed").
pub fn task_opening(how: &str, task: &Task) -> Vec<String> {
    let mut blocks = vec![if task.description.is_empty() {
        format!("[{how} task #{}] {}", task.id, task.subject)
    } else {
        format!(
            "[{how} task #{}] {}\n{}",
            task.id, task.subject, task.description
        )
    }];
    if let Some(note) = task.handoff.as_deref().map(str::trim)
        && !note.is_empty()
    {
        blocks.push(format!("[Note from the previous owner] {note}"));
    }
    blocks
}

/// The conversation and its budget.
pub struct Context {
    /// The system prompt: who the model is, never what it is working on.
    system: String,
    pub messages: Vec<ChatMessage>,
    /// Estimated tokens above which [`Context::compact`] runs.
    pub budget: u64,
}

impl Context {
    pub fn new(identity: &Identity, budget: u64) -> Context {
        Context {
            system: system_prompt(identity),
            messages: Vec::new(),
            budget,
        }
    }

    pub fn system(&self) -> &str {
        &self.system
    }

    /// Adds text from the runtime (a task, a message). Consecutive user content is
    /// merged into one turn, because both APIs expect user and assistant to alternate.
    pub fn push_user_text(&mut self, text: impl Into<String>) {
        match self.messages.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(Block::text(text)),
            _ => self.messages.push(ChatMessage::user_text(text)),
        }
    }

    /// Adds `opening`, the text of a task just taken (see [`task_opening`]), to
    /// the conversation. `afresh` drops the conversation first, so the model
    /// starts from the system prompt and the task alone; what was dropped is
    /// returned, for the caller to archive.
    pub fn open_task(&mut self, opening: &[String], afresh: bool) -> Vec<ChatMessage> {
        let before = if afresh {
            std::mem::take(&mut self.messages)
        } else {
            Vec::new()
        };
        for block in opening {
            self.push_user_text(block.clone());
        }
        before
    }

    pub fn push_assistant(&mut self, content: Vec<Block>) {
        // An empty assistant turn is refused by the APIs; record that it said nothing.
        let content = if content.is_empty() {
            vec![Block::text("(no answer)")]
        } else {
            content
        };
        self.messages.push(ChatMessage {
            role: Role::Assistant,
            content,
        });
    }

    /// Adds tool results as the user turn that answers the last assistant turn.
    pub fn push_tool_results(&mut self, results: Vec<Block>) {
        self.messages.push(ChatMessage {
            role: Role::User,
            content: results,
        });
    }

    pub fn estimate(&self) -> u64 {
        llm::estimate_request(&self.system, &self.messages)
    }

    pub fn over_budget(&self) -> bool {
        self.estimate() > self.budget
    }

    /// Where the recent part starts: the earliest assistant turn such that everything
    /// from it on fits in half the budget (or the last assistant turn, if even that
    /// does not fit). `None` when there is no assistant turn after the first message,
    /// so nothing could be summarised.
    pub fn split_point(&self) -> Option<usize> {
        let keep_budget = self.budget / 2;
        let mut best = None;
        let mut size = 0u64;
        for i in (1..self.messages.len()).rev() {
            size += llm::estimate_request("", &self.messages[i..=i]);
            if size > keep_budget && best.is_some() {
                break;
            }
            if self.messages[i].role == Role::Assistant {
                best = Some(i);
            }
        }
        best
    }

    /// Shrinks the conversation: saves it to `archive`, summarises the older part with
    /// `provider`, and starts the new conversation with `identity`'s block and the
    /// summary. `on_retry` hears of the summary call's retries.
    ///
    /// Invariant: the conversation never grows. The summary gets the room that
    /// the identity and the part kept leave under the size before, and is cut to
    /// it. With no room left (the identity alone is as big as the older part)
    /// nothing is summarised, nor asked for: the biggest blocks are shortened
    /// instead, and if that gains nothing either, the conversation stays as it
    /// was ([`CompactError::NoGain`]).
    pub async fn compact(
        &mut self,
        provider: &Provider,
        archive: &Path,
        identity: &Identity,
        on_retry: Option<OnRetry<'_>>,
    ) -> Result<Compacted, CompactError> {
        save_archive(archive, &self.system, &self.messages)?;
        let put_back = identity.block();
        let heading = format!(
            "{put_back}\n\n{SUMMARY_HEADING} (saved in full at {}):\n",
            archive.display()
        );
        let frame = size(&[ChatMessage::user_text(heading.as_str())]);
        let before = size(&self.messages);
        // The part kept verbatim, with any block too big for the budget on its
        // own shortened; and the room that leaves the summary under `before`.
        let kept = |cut: usize| {
            let mut recent = self.messages[cut..].to_vec();
            if estimate_tokens(&self.system) + frame + size(&recent) > self.budget {
                shorten_large_blocks(&mut recent, self.budget);
            }
            let room = before.saturating_sub(frame + size(&recent) + 1);
            (cut, recent, room)
        };
        let Some((cut, recent, room)) = self
            .split_point()
            .map(kept)
            .filter(|(_, _, room)| *room > 0)
        else {
            // One huge turn (a giant tool result), or an older part smaller than
            // the identity: nothing can be summarised into less, so shorten the
            // biggest blocks instead.
            let mut messages = self.messages.clone();
            shorten_large_blocks(&mut messages, self.budget);
            put_identity_first(&mut messages, &put_back);
            if size(&messages) >= before {
                return Err(CompactError::NoGain);
            }
            self.messages = messages;
            return Ok(Compacted {
                summarised: 0,
                usage: TokenUsage::default(),
                put_back,
            });
        };
        let (summary, usage) = summarise(provider, &self.messages[..cut], on_retry).await?;
        // A token is estimated as four bytes: this many bytes take at most `room`.
        let summary =
            fit_bytes_with_mark(&summary, usize::try_from(room * 4).unwrap_or(usize::MAX));
        let head = heading + &summary;
        // `cut` points at an assistant turn, so the head is the user turn before it.
        self.messages = std::iter::once(ChatMessage::user_text(head.clone()))
            .chain(recent)
            .collect();
        let summarised = cut;
        Ok(Compacted {
            summarised,
            usage,
            put_back: head,
        })
    }
}

/// The output limit of a compaction's summary.
pub const SUMMARY_MAX_TOKENS: u32 = 1024;

/// The estimated tokens of `messages` without a system prompt.
fn size(messages: &[ChatMessage]) -> u64 {
    llm::estimate_request("", messages)
}

/// Puts the identity block at the start of the conversation.
fn put_identity_first(messages: &mut Vec<ChatMessage>, block: &str) {
    let block = Block::text(block);
    match messages.first_mut() {
        Some(first) if first.role == Role::User => {
            // Tool results must lead their turn; the identity goes after them.
            let at = first
                .content
                .iter()
                .take_while(|b| matches!(b, Block::ToolResult { .. }))
                .count();
            first.content.insert(at, block);
        }
        _ => messages.insert(
            0,
            ChatMessage {
                role: Role::User,
                content: vec![block],
            },
        ),
    }
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compacted {
    /// How many messages the summary replaced.
    pub summarised: usize,
    /// The tokens the summary cost.
    pub usage: TokenUsage,
    /// What the runtime put at the start of the conversation: the identity block,
    /// and the summary if there is one. The transcript gets it too, so a person
    /// sees what the model starts from.
    pub put_back: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("cannot save the transcript before compacting to {path}: {source}")]
    Archive {
        path: String,
        source: std::io::Error,
    },
    #[error("the model could not summarise the conversation: {0}")]
    Summary(#[from] LlmError),
    #[error("nothing to gain: the identity alone takes as much room as what it would replace")]
    NoGain,
}

/// Saves a conversation as compaction does: the system prompt and every message,
/// as pretty JSON at `path`.
pub fn save_archive(
    path: &Path,
    system: &str,
    messages: &[ChatMessage],
) -> Result<(), CompactError> {
    let err = |source| CompactError::Archive {
        path: path.display().to_string(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(err)?;
    }
    let doc = serde_json::json!({ "system": system, "messages": messages });
    let bytes = serde_json::to_vec_pretty(&doc).map_err(|e| err(std::io::Error::other(e)))?;
    std::fs::write(path, bytes).map_err(err)
}

async fn summarise(
    provider: &Provider,
    older: &[ChatMessage],
    on_retry: Option<OnRetry<'_>>,
) -> Result<(String, TokenUsage), LlmError> {
    let mut log = String::new();
    for m in older {
        let who = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for b in &m.content {
            let line = match b {
                Block::Text { text } => format!("[{who}] {text}"),
                Block::ToolUse { name, input, .. } => format!("[{who} calls {name}] {input}"),
                Block::ToolResult {
                    content, is_error, ..
                } => format!(
                    "[tool {}] {}",
                    if *is_error { "error" } else { "result" },
                    byte_prefix_with_ellipsis(content, 2000)
                ),
            };
            log.push_str(&line);
            log.push('\n');
        }
    }
    let messages = [ChatMessage::user_text(format!("{log}\n{SUMMARY_PROMPT}"))];
    let completion = provider
        .complete(CompletionRequest {
            system: "You write short, factual summaries of a software teammate's work log.",
            messages: &messages,
            tools: &[],
            max_tokens: SUMMARY_MAX_TOKENS,
            on_retry,
            retry_rate_limits: true,
        })
        .await?;
    let text: Vec<&str> = completion
        .content
        .iter()
        .filter_map(Block::as_text)
        .collect();
    Ok((text.join("\n"), completion.usage))
}

fn shorten_large_blocks(messages: &mut [ChatMessage], budget: u64) {
    let limit = ((budget / 8).max(256) * 4) as usize;
    for m in messages {
        for b in &mut m.content {
            let text = match b {
                Block::Text { text } => text,
                Block::ToolResult { content, .. } => content,
                Block::ToolUse { .. } => continue,
            };
            if text.len() > limit {
                *text = format!(
                    "{}\n[... shortened during compaction; the full text is in the saved transcript ...]",
                    byte_prefix_with_ellipsis(text, limit)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::scripted::Scripted;

    fn identity() -> Identity {
        Identity {
            name: "alice".into(),
            role: "dev".into(),
            team: "core".into(),
            task: Some((7, "refactor auth".into(), "move auth behind a trait".into())),
            worktree: None,
            lead: false,
        }
    }

    fn tool_round(ctx: &mut Context, n: usize, size: usize) {
        ctx.push_assistant(vec![Block::ToolUse {
            id: format!("t{n}"),
            name: "bash".into(),
            input: serde_json::json!({"command": format!("step {n}")}),
        }]);
        ctx.push_tool_results(vec![Block::ToolResult {
            tool_use_id: format!("t{n}"),
            content: "x".repeat(size),
            is_error: false,
        }]);
    }

    /// Every tool use is answered in the very next message, and every tool result
    /// answers a tool use in the message right before it.
    fn assert_pairs_intact(messages: &[ChatMessage]) {
        for (i, m) in messages.iter().enumerate() {
            for b in &m.content {
                if let Block::ToolResult { tool_use_id, .. } = b {
                    let prev = i.checked_sub(1).map(|p| &messages[p]);
                    let ok = prev.is_some_and(|p| {
                        p.content
                            .iter()
                            .any(|u| matches!(u, Block::ToolUse { id, .. } if id == tool_use_id))
                    });
                    assert!(ok, "orphan tool result {tool_use_id} at {i}");
                }
                if let Block::ToolUse { id, .. } = b {
                    let next = messages.get(i + 1);
                    let ok = next.is_some_and(|n| {
                        n.content.iter().any(|r| {
                            matches!(r, Block::ToolResult { tool_use_id, .. } if tool_use_id == id)
                        })
                    });
                    assert!(
                        ok || i + 1 == messages.len(),
                        "tool use {id} at {i} lost its result"
                    );
                }
            }
        }
    }

    #[test]
    fn the_cut_never_separates_a_tool_use_from_its_result() {
        let mut ctx = Context::new(&identity(), 2_000);
        ctx.push_user_text("[Auto-claimed task #7] refactor auth");
        for n in 0..10 {
            tool_round(&mut ctx, n, 400);
        }
        ctx.push_user_text("[Message #3 from lead (message)] how is it going?");
        for n in 10..20 {
            tool_round(&mut ctx, n, 400);
        }
        let cut = ctx.split_point().expect("a cut exists");
        assert!(cut > 1, "something is summarised");
        assert_eq!(
            ctx.messages[cut].role,
            Role::Assistant,
            "the cut is before an assistant turn"
        );
        let kept = llm::estimate_request("", &ctx.messages[cut..]);
        assert!(kept <= ctx.budget / 2, "{kept}");
    }

    #[tokio::test]
    async fn compaction_saves_everything_summarises_and_puts_identity_back() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("a/context.json");
        let mut ctx = Context::new(&identity(), 3_000);
        ctx.push_user_text("[Auto-claimed task #7] refactor auth\nmove auth behind a trait");
        for n in 0..8 {
            tool_round(&mut ctx, n, 2_000);
        }
        ctx.push_user_text("[Message #3 from lead (message)] please hurry");
        for n in 8..10 {
            tool_round(&mut ctx, n, 500);
        }
        assert!(ctx.over_budget());
        let before = ctx.messages.clone();
        let provider = Provider::Scripted(Scripted::default());
        let done = ctx
            .compact(&provider, &archive, &identity(), None)
            .await
            .unwrap();
        assert!(done.summarised > 0);
        assert!(done.usage.total() > 0, "the summary's tokens are counted");
        assert!(!ctx.over_budget(), "{} > {}", ctx.estimate(), ctx.budget);
        // The whole conversation was saved first.
        let saved: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&archive).unwrap()).unwrap();
        let saved: Vec<ChatMessage> = serde_json::from_value(saved["messages"].clone()).unwrap();
        assert_eq!(saved, before);
        // The identity and the summary lead the new conversation.
        let first = ctx.messages[0].joined_text();
        assert_eq!(first, done.put_back, "what was put back is said");
        assert!(first.starts_with("<identity>"), "{first}");
        assert!(
            first.contains("You are alice") && first.contains("'dev'"),
            "{first}"
        );
        assert!(first.contains("team 'core'") && first.contains("[Current task #7] refactor auth"));
        assert!(first.contains("Summary of the earlier part"), "{first}");
        let all: String = ctx.messages.iter().map(|m| m.joined_text()).collect();
        assert!(
            all.contains("please hurry"),
            "the recent part is kept verbatim"
        );
        assert_pairs_intact(&ctx.messages);
        assert_eq!(ctx.messages[0].role, Role::User);
    }

    #[tokio::test]
    async fn one_giant_turn_is_shortened_rather_than_split() {
        let dir = tempfile::tempdir().unwrap();
        let mut ctx = Context::new(&identity(), 2_000);
        ctx.push_user_text("[Auto-claimed task #7] refactor auth");
        tool_round(&mut ctx, 0, 100_000);
        let provider = Provider::Scripted(Scripted::default());
        let done = ctx
            .compact(&provider, &dir.path().join("c.json"), &identity(), None)
            .await
            .unwrap();
        assert!(ctx.estimate() < 10_000, "{}", ctx.estimate());
        assert_pairs_intact(&ctx.messages);
        assert!(ctx.messages[0].joined_text().contains("<identity>"));
        assert!(done.put_back.starts_with(&identity().block()));
    }

    /// A model that answers every summary request with `summary`.
    fn summariser(summary: &str) -> (Provider, teamboard_testkit::mock_llm::MockLlm) {
        use teamboard_testkit::mock_llm::{MockLlm, MockReply};
        let mock = MockLlm::start_with_fallback(vec![], MockReply::anthropic_text(summary));
        let dir = Path::new("/nonexistent");
        let mut cfg = crate::config::Config::for_tests_in(dir).provider;
        cfg.kind = crate::config::ProviderKind::Anthropic;
        cfg.base_url = Some(mock.url());
        cfg.api_key = Some("k".into());
        (llm::build(&cfg).expect("a provider"), mock)
    }

    #[tokio::test]
    async fn a_summary_longer_than_what_it_replaces_is_cut_to_fit() {
        let dir = tempfile::tempdir().unwrap();
        let (provider, _mock) = summariser(&"the work went on at length. ".repeat(200));
        let mut ctx = Context::new(&identity(), 1_000);
        ctx.push_user_text("[Auto-claimed task #7] refactor auth");
        for n in 0..12 {
            tool_round(&mut ctx, n, 300);
        }
        assert!(ctx.over_budget());
        let before = ctx.estimate();
        let done = ctx
            .compact(&provider, &dir.path().join("c.json"), &identity(), None)
            .await
            .unwrap();
        assert!(done.summarised > 0);
        assert!(ctx.estimate() < before, "{before} -> {}", ctx.estimate());
        assert!(ctx.messages[0].joined_text().contains("the work went on"));
        assert_pairs_intact(&ctx.messages);
    }

    #[tokio::test]
    async fn a_compaction_with_nothing_to_gain_leaves_the_conversation_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let (provider, mock) = summariser("short");
        // The identity repeats a long description; the part before the cut is
        // smaller than the identity alone.
        let mut id = identity();
        id.task = Some((7, "refactor auth".into(), "x".repeat(3_000)));
        let mut ctx = Context::new(&id, 1_000);
        ctx.push_user_text("[Auto-claimed task #7] refactor auth");
        for n in 0..3 {
            tool_round(&mut ctx, n, 400);
        }
        let before = ctx.messages.clone();
        let compacted = ctx
            .compact(&provider, &dir.path().join("c.json"), &id, None)
            .await;
        assert!(compacted.is_err(), "{compacted:?}");
        assert_eq!(ctx.messages, before);
        assert_eq!(
            mock.calls(),
            0,
            "no summary is asked for that could not be used"
        );
    }

    fn task(id: u64, handoff: Option<&str>) -> Task {
        Task {
            id,
            subject: "add the parser".into(),
            description: "in src/parse.rs".into(),
            status: teamboard_protocol::TaskStatus::InProgress,
            owner: Some("alice".into()),
            blocked_by: vec![],
            priority: 0,
            role: None,
            attempts: 2,
            result: None,
            last_error: None,
            epoch: 2,
            tokens: TokenUsage::default(),
            cost: Default::default(),
            created_at: 0,
            updated_at: 0,
            ready: false,
            require_plan: false,
            handoff: handoff.map(str::to_string),
            no_worktree: false,
            worktree: None,
            checks: vec![],
            proposed_checks: vec![],
            check_runs: vec![],
            landing: None,
            review: false,
        }
    }

    #[test]
    fn a_task_opens_with_its_text_and_the_previous_owners_note() {
        assert_eq!(
            task_opening("Auto-claimed", &task(8, None)),
            vec!["[Auto-claimed task #8] add the parser\nin src/parse.rs".to_string()]
        );
        let opening = task_opening(
            "Claimed",
            &task(8, Some("  lexer done; tests fail on ws\n")),
        );
        assert_eq!(
            opening,
            vec![
                "[Claimed task #8] add the parser\nin src/parse.rs".to_string(),
                "[Note from the previous owner] lexer done; tests fail on ws".to_string(),
            ]
        );
        // A blank note says nothing, so it is left out.
        assert_eq!(task_opening("Claimed", &task(8, Some(" "))).len(), 1);
        let mut bare = task(9, None);
        bare.description.clear();
        assert_eq!(
            task_opening("Claimed", &bare),
            vec!["[Claimed task #9] add the parser"]
        );
    }

    #[test]
    fn a_new_task_starts_afresh_with_identity_task_and_note_only() {
        let mut ctx = Context::new(&identity(), 100_000);
        ctx.push_user_text("[Auto-claimed task #7] refactor auth");
        tool_round(&mut ctx, 0, 100);
        ctx.push_assistant(vec![Block::text("done")]);
        let before = ctx.messages.clone();
        let next = task(8, Some("lexer done"));
        let opening = task_opening("Auto-claimed", &next);
        let dropped = ctx.open_task(&opening, true);
        assert_eq!(
            dropped, before,
            "what was dropped is handed back to be saved"
        );
        assert_eq!(ctx.messages.len(), 1, "{:?}", ctx.messages);
        assert_eq!(ctx.messages[0].role, Role::User);
        assert_eq!(
            ctx.messages[0].content,
            vec![Block::text(&opening[0]), Block::text(&opening[1])]
        );
        assert!(!ctx.messages[0].joined_text().contains("refactor auth"));
        // The system prompt says who the teammate is and names no task, so it is
        // the same for every task.
        let system = ctx.system();
        assert!(system.contains("You are alice") && !system.contains("parser"));
        assert_eq!(system, system_prompt(&identity()));
    }

    #[test]
    fn carrying_the_context_keeps_the_conversation_and_adds_the_task() {
        let mut ctx = Context::new(&identity(), 100_000);
        ctx.push_user_text("[Auto-claimed task #7] refactor auth");
        ctx.push_assistant(vec![Block::text("done")]);
        let before = ctx.messages.clone();
        let next = task(8, Some("lexer done"));
        let dropped = ctx.open_task(&task_opening("Auto-claimed", &next), false);
        assert!(dropped.is_empty());
        assert_eq!(&ctx.messages[..2], &before[..]);
        assert_eq!(ctx.messages.len(), 3);
        assert!(
            ctx.messages[2]
                .joined_text()
                .contains("[Note from the previous owner] lexer done")
        );
    }

    #[test]
    fn the_identity_names_the_task_or_says_there_is_none() {
        let mut id = identity();
        assert!(id.block().contains("[Current task #7] refactor auth"));
        assert!(!id.block().contains("worktree"));
        id.worktree =
            Some("You work in the git worktree /w/task-7 (branch b); stay inside it.".into());
        assert!(
            id.block()
                .ends_with("move auth behind a trait\nYou work in the git worktree /w/task-7 (branch b); stay inside it.\n</identity>"),
            "{}",
            id.block()
        );
        id.task = None;
        assert!(id.block().contains("You hold no task"));
    }
}
