//! Messages handed to a driver: logged as delivered, a shutdown request
//! answered (a driver stays: it rejects), then acknowledged.

use super::acks::What;
use super::client::{Driver, Outcome};
use teamboard_protocol::{Message, MessageKind};

/// Handles a delivery. The ack is logged only when boardd answered it: a
/// message whose ack was lost may come again, as at-least-once allows.
pub async fn take(d: &mut Driver, messages: Vec<Message>) -> anyhow::Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let ids: Vec<u64> = messages.iter().map(|m| m.id).collect();
    d.record(What::Delivered {
        messages: ids.clone(),
    })?;
    for m in &messages {
        if m.kind != MessageKind::ShutdownRequest {
            continue;
        }
        let Some(request) = m.request_id.as_deref().and_then(request_number) else {
            continue;
        };
        let c = d.conn.client().await?;
        let r = c
            .respond_shutdown(request, false, Some("the soak's drivers stay"))
            .await;
        if let Outcome::Acked(_) = d.outcome(r) {
            d.record(What::RespondShutdown { request })?;
        }
    }
    let c = d.conn.client().await?;
    let r = c.ack(ids.clone()).await;
    if let Outcome::Acked(a) = d.outcome(r) {
        d.record(What::Ack {
            messages: ids,
            acked: a.acked,
        })?;
    }
    Ok(())
}

/// `r7` → 7.
fn request_number(tag: &str) -> Option<u64> {
    tag.strip_prefix('r').unwrap_or(tag).parse().ok()
}

/// Reads the inbox once more and acknowledges it: a driver's last act, so
/// that every message sent to it has been seen by the end of the run.
pub async fn drain(d: &mut Driver) -> anyhow::Result<()> {
    let c = d.conn.client().await?;
    let r = c.inbox().await;
    if let Outcome::Acked(messages) = d.outcome(r) {
        take(d, messages).await?;
    }
    Ok(())
}
