//! Messages for a person's session. It has no inbox tool (seven tools are the
//! budget), so what arrived for the member comes with the next tool result, as
//! a teammate's model gets its messages before its next round. They are
//! acknowledged once they are in a result, which the model reads.

use teamboard_protocol::{Client, Message, MessageKind};

/// The unread messages, as one note, acknowledged. `None` when there are none,
/// or the inbox cannot be read now (the messages stay for the next call).
pub(super) async fn take(client: &Client, name: &str) -> Option<String> {
    let messages = match client.inbox().await {
        Ok(m) if m.is_empty() => return None,
        Ok(m) => m,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the inbox");
            return None;
        }
    };
    let ids: Vec<u64> = messages.iter().map(|m| m.id).collect();
    if let Err(e) = client.ack(ids).await {
        // Shown anyway: shown twice is better than never.
        tracing::warn!(error = %e, "cannot acknowledge messages");
    }
    Some(note(name, &messages))
}

fn note(name: &str, messages: &[Message]) -> String {
    let mut text = format!("Messages for {name}:");
    for m in messages {
        let kind = match m.kind {
            MessageKind::Message => String::new(),
            other => format!(" ({other})"),
        };
        text.push_str(&format!("\n- from {}{kind}: {}", m.from, m.content));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_message_with_its_kind_when_it_is_not_plain() {
        let m = |id, from: &str, kind, content: &str| Message {
            id,
            from: from.into(),
            to: "me".into(),
            kind,
            content: content.into(),
            request_id: None,
            at: 0,
        };
        let text = note(
            "me",
            &[
                m(1, "lead", MessageKind::Message, "look at #4"),
                m(2, "lead", MessageKind::PlanApprovalResponse, "approved"),
            ],
        );
        assert_eq!(
            text,
            "Messages for me:\n- from lead: look at #4\n- from lead (plan_approval_response): approved"
        );
    }
}
