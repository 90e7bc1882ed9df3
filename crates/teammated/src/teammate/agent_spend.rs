//! What an agent spends, onto boardd's ledger: the board side of
//! `work::agent::spend`.

use super::Teammate;
use teamboard_protocol::request::UsageArgs;
use teamboard_protocol::spend::Settled;

impl Teammate {
    /// Settles usage an agent reported, against the held task, and says
    /// whether a budget that covers it has run out. With no tokens it only
    /// asks where the budgets stand: boardd records nothing then. `None`,
    /// logged, when boardd could not be asked: the agent goes on rather than
    /// stop for a lost answer.
    pub(crate) async fn settle_agent_usage(&self, mut args: UsageArgs) -> Option<Settled> {
        args.task = self.task_id();
        let args = &args;
        match self
            .session
            .call(|c| async move { c.settle_usage(args.clone()).await })
            .await
        {
            Ok(settled) => Some(settled),
            Err(e) => {
                tracing::warn!(error = %e, "cannot settle the agent's usage");
                None
            }
        }
    }
}
