//! Messages, from the drivers' side of the log. At-least-once allows a
//! message to come again until its recipient's ack has been answered, and
//! to its recipient only. So: a message delivered to a client after that
//! client's ack of it was answered, or to a client it was not sent to, is
//! one delivery too many; and a message sent to a driver (whose last act is
//! to read its inbox) that never reached it was lost.

use super::{Figure, Figures};
use crate::soak_board::acks::{Line, What};
use std::collections::{HashMap, HashSet};

pub fn check(log: &[Line], f: &mut Figures) {
    let to: HashMap<u64, &str> = sends(log);
    let mut acked: HashSet<(&str, u64)> = HashSet::new();
    for l in log {
        let who = l.client.as_str();
        match &l.what {
            What::Ack { messages, .. } => {
                acked.extend(messages.iter().map(|&m| (who, m)));
            }
            What::Delivered { messages } => {
                for &m in messages {
                    if acked.contains(&(who, m)) {
                        f.messages_delivered_too_often.add(format!(
                            "message {m} reached {who} (session {}) after its ack was answered",
                            l.session
                        ));
                    }
                    if let Some(&recipient) = to.get(&m)
                        && recipient != who
                    {
                        f.messages_delivered_too_often
                            .add(format!("message {m} for {recipient} reached {who}"));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Sent message → its recipient.
fn sends(log: &[Line]) -> HashMap<u64, &str> {
    log.iter()
        .filter_map(|l| match &l.what {
            What::Send { message, to } => Some((*message, to.as_str())),
            _ => None,
        })
        .collect()
}

/// Messages sent to a client of the log that never reached it.
pub fn undelivered(log: &[Line], lost: &mut Figure) {
    let clients: HashSet<&str> = log.iter().map(|l| l.client.as_str()).collect();
    let delivered: HashSet<(&str, u64)> = log
        .iter()
        .flat_map(|l| match &l.what {
            What::Delivered { messages } => messages
                .iter()
                .map(|&m| (l.client.as_str(), m))
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect();
    let mut sent: Vec<(u64, &str)> = sends(log).into_iter().collect();
    sent.sort_unstable();
    for (m, to) in sent {
        if clients.contains(to) && !delivered.contains(&(to, m)) {
            lost.add(format!("message {m} to {to} never reached it"));
        }
    }
}
