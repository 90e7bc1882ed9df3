//! The `acp` runtime. See `docs/runtimes.md` for the mapping of board events.

use crate::runtime::{AgentError, AgentEvent, AgentSpec, Brief, PlanAnswer};

/// A running acp agent for one task.
pub struct Acp {
    session: Option<String>,
}

impl Acp {
    pub async fn start(_spec: &AgentSpec, _brief: Brief) -> Result<Acp, AgentError> {
        Err(AgentError::Start("the acp runtime is not built yet".into()))
    }

    pub async fn send(&mut self, _text: &str) -> Result<u64, AgentError> {
        Err(AgentError::Gone)
    }

    pub async fn answer_plan(&mut self, _answer: PlanAnswer) -> Result<(), AgentError> {
        Err(AgentError::Gone)
    }

    pub async fn next_event(&mut self) -> AgentEvent {
        std::future::pending().await
    }

    pub async fn stop(self) {}

    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    pub fn pid(&self) -> Option<u32> {
        None
    }
}
