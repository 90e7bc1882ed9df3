//! What the tests of the agent runtimes ask of a [`Board`]: teammates started
//! with an agent CLI, the sessions they record, and a message to an idle one.

use crate::board::Board;
use crate::clients::TEAM;
use crate::eventually::{PATIENCE, eventually};
use crate::teammated::Teammate;
use std::time::Duration;
use teamboard_agent_clis::offline::OfflineAgent;
use teamboard_protocol::MessageKind;

impl Board {
    /// Starts teammate `name` (role `dev`) with `agent`'s runtime, `extra`
    /// flags after the agent's and `more_env` after its variables.
    pub fn spawn_agent(
        &self,
        name: &str,
        agent: &OfflineAgent,
        extra: &[&str],
        more_env: &[(&str, &str)],
    ) -> Teammate {
        let mut args = agent.arg_strs();
        args.extend_from_slice(extra);
        let mut env = agent.env_strs();
        env.extend_from_slice(more_env);
        self.spawn_with_env(name, "dev", &args, &env)
    }

    /// Teammate `name`'s record of its agent's sessions (its
    /// `agent/sessions.json`), `Null` while it has none.
    pub fn agent_sessions(&self, name: &str) -> serde_json::Value {
        let path = teamboard_protocol::transcript::teammate_dir(self.state_dir(), TEAM, name)
            .join("agent")
            .join("sessions.json");
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// Sends `text` to `to`, an idle teammate, and waits until it is
    /// acknowledged and the conversation it opened has ended; then as long
    /// again as a message left unacknowledged would take to open a second one.
    pub async fn message_idle(&mut self, to: &str, text: &str) {
        let sent = self
            .lead
            .send(to, MessageKind::Message, text, None)
            .await
            .expect("send");
        self.wait_acked(sent.id).await;
        eventually("the conversation to end", PATIENCE, || async {
            self.transcript(to).contains("work: ended").then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}
