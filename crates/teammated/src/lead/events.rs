//! Team events as context text.
//!
//! Everything the team tells the lead arrives in its inbox: `result` and `error`
//! from teammates, `plan_approval_request` and `shutdown_response` from boardd's
//! requests, `idle_notification`s, and plain messages. [`Pending`] holds what was
//! read from the inbox and is not in the context yet. [`Pending::take`] turns it into
//! one block of text, with the idle notifications folded into a single digest line,
//! and hands back the ids to acknowledge once that text is in the context: delivery
//! stays at least once, and acknowledging never sends a teammate anything.

use crate::prompts::lead as marks;
use std::collections::BTreeSet;
use teamboard_protocol::text::byte_prefix_with_ellipsis;
use teamboard_protocol::{Message, MessageKind, TeamRequest};

/// The longest message text put into the lead's context; the rest is one
/// `get_task` away.
const MESSAGE_MAX: usize = 4000;

/// Inbox messages read but not yet in the context.
#[derive(Debug, Default)]
pub(super) struct Pending {
    /// Every message id ever queued: the inbox is read again and again, and a
    /// message stays there until acknowledged.
    seen: BTreeSet<u64>,
    queued: Vec<Message>,
    /// The plan request of each queued plan message, when boardd could say.
    plans: Vec<(u64, TeamRequest)>,
    /// Plans are the person's to decide (`--review-plans person`): they reach the
    /// context as news, under a mark of their own, and need no decision.
    person_reviews: bool,
}

/// The text for the context, and the message ids to acknowledge after it is in.
pub(super) struct Delivery {
    pub text: String,
    pub ids: Vec<u64>,
    /// One line per event for the person's terminal.
    pub notices: Vec<String>,
}

impl Pending {
    /// `person_reviews`: plans are the person's to decide.
    pub fn new(person_reviews: bool) -> Pending {
        Pending {
            person_reviews,
            ..Pending::default()
        }
    }

    /// Queues the inbox's messages not seen before; returns how many were new.
    pub fn offer(&mut self, inbox: Vec<Message>) -> usize {
        let before = self.queued.len();
        for m in inbox {
            if self.seen.insert(m.id) {
                self.queued.push(m);
            }
        }
        self.queued.len() - before
    }

    /// Plan requests among the queued messages whose request was not looked up yet.
    pub fn plan_ids_to_look_up(&self) -> Vec<(u64, u64)> {
        self.queued
            .iter()
            .filter(|m| m.kind == MessageKind::PlanApprovalRequest)
            .filter(|m| !self.plans.iter().any(|(id, _)| *id == m.id))
            .filter_map(|m| Some((m.id, m.request_id.as_deref()?.parse().ok()?)))
            .collect()
    }

    pub fn set_plan(&mut self, message: u64, request: TeamRequest) {
        self.plans.push((message, request));
    }

    /// Whether something queued needs the lead to decide: a plan (unless the
    /// person reviews them), an error.
    pub fn needs_decision(&self) -> bool {
        self.queued.iter().any(|m| match m.kind {
            MessageKind::PlanApprovalRequest => !self.person_reviews,
            MessageKind::Error => true,
            _ => false,
        })
    }

    /// Whether something queued is more than an idle notification.
    pub fn has_news(&self) -> bool {
        self.queued
            .iter()
            .any(|m| m.kind != MessageKind::IdleNotification)
    }

    /// Everything queued, as one text for the context. `None` when nothing is.
    pub fn take(&mut self) -> Option<Delivery> {
        if self.queued.is_empty() {
            return None;
        }
        let queued = std::mem::take(&mut self.queued);
        let plans = std::mem::take(&mut self.plans);
        let mut parts = Vec::new();
        let mut notices = Vec::new();
        let mut idle: Vec<&str> = Vec::new();
        for m in &queued {
            let content = byte_prefix_with_ellipsis(m.content.trim(), MESSAGE_MAX);
            let from = m.from.as_str();
            let part = match m.kind {
                MessageKind::IdleNotification => {
                    if !idle.contains(&from) {
                        idle.push(from);
                    }
                    continue;
                }
                MessageKind::Result => format!("{}{from}] {content}", marks::RESULT),
                MessageKind::Error => format!("{}{from}] {content}", marks::ERROR),
                MessageKind::PlanApprovalRequest => {
                    let request = plans.iter().find(|(id, _)| *id == m.id).map(|(_, r)| r);
                    plan_text(m, request, &content, self.person_reviews)
                }
                MessageKind::ShutdownResponse => {
                    format!("[Shutdown answer from {from}] {content}")
                }
                MessageKind::Broadcast => format!("[Broadcast from {from}] {content}"),
                other => format!("[{} from {from}] {content}", capitalised(other.into())),
            };
            notices.push(
                part.lines()
                    .next()
                    .map(|l| byte_prefix_with_ellipsis(l, 160))
                    .unwrap_or_default(),
            );
            parts.push(part);
        }
        if !idle.is_empty() {
            let line = format!("{} {}", marks::IDLE, idle.join(", "));
            notices.push(line.clone());
            parts.push(line);
        }
        Some(Delivery {
            text: parts.join("\n"),
            ids: queued.iter().map(|m| m.id).collect(),
            notices,
        })
    }
}

/// A plan request for the context. `person`: the person decides it, so the text
/// says so under its own mark, which the scripted lead does not review.
fn plan_text(m: &Message, request: Option<&TeamRequest>, content: &str, person: bool) -> String {
    let id = m.request_id.as_deref().unwrap_or("?");
    let task = request
        .and_then(|r| r.task)
        .map(|t| format!(" for task #{t}"))
        .unwrap_or_default();
    let state = match request {
        Some(r) if !r.is_pending() => format!(" (already {})", r.state),
        _ => String::new(),
    };
    if person {
        return format!(
            "{}{id} from {}{task}]{state} The person decides it (`teamctl approve r{id}` or \
             `teamctl reject r{id}`); do not review it.\n{content}",
            marks::PLAN_FOR_PERSON,
            m.from
        );
    }
    format!(
        "{}{id} from {}{task}]{state} Decide it with review_plan.\n{content}",
        marks::PLAN_REQUEST,
        m.from
    )
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f
            .to_uppercase()
            .chain(c)
            .collect::<String>()
            .replace('_', " "),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: u64, from: &str, kind: MessageKind, content: &str) -> Message {
        Message {
            id,
            from: from.into(),
            to: "lead".into(),
            kind,
            content: content.into(),
            request_id: (kind == MessageKind::PlanApprovalRequest).then(|| "7".into()),
            at: 0,
        }
    }

    #[test]
    fn idle_notifications_fold_into_one_digest_and_all_are_acknowledged() {
        let mut p = Pending::default();
        let inbox = vec![
            msg(1, "ada", MessageKind::IdleNotification, "ada is idle"),
            msg(
                2,
                "ada",
                MessageKind::Result,
                "#1 config: completed by ada\nok",
            ),
            msg(3, "brook", MessageKind::IdleNotification, "brook is idle"),
            msg(4, "ada", MessageKind::IdleNotification, "ada is idle"),
        ];
        assert_eq!(p.offer(inbox.clone()), 4);
        assert_eq!(p.offer(inbox), 0, "an inbox read again adds nothing");
        assert!(!p.needs_decision());
        let d = p.take().expect("something to deliver");
        assert_eq!(
            d.text,
            "[Result from ada] #1 config: completed by ada\nok\n[Idle] ada, brook"
        );
        assert_eq!(d.ids, vec![1, 2, 3, 4]);
        assert!(p.take().is_none());
    }

    #[test]
    fn plans_and_errors_need_a_decision() {
        let mut p = Pending::default();
        p.offer(vec![msg(
            5,
            "cy",
            MessageKind::PlanApprovalRequest,
            "echo plan",
        )]);
        assert!(p.needs_decision());
        assert_eq!(p.plan_ids_to_look_up(), vec![(5, 7)]);
        let d = p.take().unwrap();
        assert!(
            d.text
                .starts_with("[Plan request r7 from cy] Decide it with review_plan.\necho plan"),
            "{}",
            d.text
        );
        p.offer(vec![msg(6, "cy", MessageKind::Error, "LLM error")]);
        assert!(p.needs_decision());
    }

    #[test]
    fn plans_the_person_reviews_are_news_not_decisions() {
        let mut p = Pending::new(true);
        p.offer(vec![msg(
            5,
            "cy",
            MessageKind::PlanApprovalRequest,
            "echo plan",
        )]);
        assert!(!p.needs_decision());
        assert!(p.has_news());
        let d = p.take().unwrap();
        assert!(
            d.text.starts_with(
                "[Plan for the person r7 from cy] The person decides it (`teamctl approve r7` \
                 or `teamctl reject r7`); do not review it.\necho plan"
            ),
            "{}",
            d.text
        );
        assert!(!d.text.contains(marks::PLAN_REQUEST), "{}", d.text);
        p.offer(vec![msg(6, "cy", MessageKind::Error, "LLM error")]);
        assert!(p.needs_decision(), "an error still does");
    }
}
