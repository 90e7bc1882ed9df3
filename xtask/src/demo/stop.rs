//! The end of the demo: the team leaves (the shutdown handshake when all went
//! well, SIGTERM otherwise), boardd stops, and the directory is kept or removed.

use super::procs::Exited;
use super::{Demo, shown};
use anyhow::Context as _;
use std::collections::BTreeMap;
use std::time::Duration;
use teamboard_protocol::request::ShutdownArgs;
use teamboard_protocol::{Client, DEFAULT_TEAM, LEAD, RequestId};

/// How long the teammates get to answer the shutdown request and exit.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

impl Demo {
    /// Stops the teammates (politely: the shutdown handshake; otherwise SIGTERM),
    /// then boardd.
    pub(super) async fn shutdown(&mut self, polite: bool) -> anyhow::Result<()> {
        self.procs.adopt_strays();
        let boardd_up = self
            .procs
            .boardd
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        if polite && boardd_up && !self.procs.running().is_empty() {
            println!("\nShutting the team down (a shutdown request to each, which it answers):");
            let requests = self.request_shutdowns().await;
            self.procs.wait_teammates(SHUTDOWN_WAIT).await;
            let answers = self.shutdown_answers(&requests).await;
            for t in &self.procs.teammates {
                let answer = answers
                    .get(&t.name)
                    .map_or_else(|| "no answer".to_string(), |a| format!("request {a}"));
                let exit = match t.exit {
                    Some(Exited::Status(s)) => format!("exited ({s})"),
                    Some(Exited::Unknown) => "exited".to_string(),
                    None => "still running".to_string(),
                };
                println!("  {:<5}  {answer}, {exit}", t.name);
            }
        }
        let left = self.procs.running().len();
        if left > 0 {
            println!("\nStopping {left} teammate(s) with SIGTERM.");
            self.procs.terminate_teammates().await;
        }
        let stopped = self.procs.stop_boardd().await;
        if boardd_up && stopped.is_ok() {
            println!("boardd stopped.");
        }
        stopped
    }

    /// Asks each running teammate to shut down; returns the request ids by name.
    async fn request_shutdowns(&mut self) -> BTreeMap<String, RequestId> {
        let mut ids = BTreeMap::new();
        let client = match self.lead_client().await {
            Ok(c) => c,
            Err(e) => {
                println!("  {e:#}");
                return ids;
            }
        };
        for i in self.procs.running() {
            let name = self.procs.teammates[i].name.clone();
            let asked = client
                .request_shutdown(ShutdownArgs {
                    to: name.clone(),
                    reason: Some("The demo is over, thank you.".to_string()),
                    timeout_ms: Some(SHUTDOWN_WAIT.as_millis() as u64),
                    force: false,
                })
                .await;
            match asked {
                Ok(r) => {
                    println!("  shutdown request {} to {name}", r.id);
                    ids.insert(name, r.id);
                }
                Err(e) => println!("  {name}: {e}"),
            }
        }
        ids
    }

    /// How each shutdown request ended: its state, and who settled it.
    async fn shutdown_answers(
        &self,
        requests: &BTreeMap<String, RequestId>,
    ) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Ok(client) = self.lead_client().await else {
            return out;
        };
        for (name, id) in requests {
            if let Ok(r) = client.get_request(*id).await {
                let by = r
                    .answered_by
                    .map(|b| format!(" by {b}"))
                    .unwrap_or_default();
                let why = r.feedback.map(|f| format!(" ({f})")).unwrap_or_default();
                out.insert(name.clone(), format!("{}{by}{why}", r.state.as_str()));
            }
        }
        out
    }

    async fn lead_client(&self) -> anyhow::Result<Client> {
        Client::connect(
            std::path::Path::new(&self.socket),
            "xtask-demo",
            LEAD,
            DEFAULT_TEAM,
        )
        .await
        .context("cannot connect to the demo's boardd")
    }

    /// Keeps or removes the demo's directory, and says which.
    pub(super) fn finish(&mut self, keep: bool, failed: bool) {
        let Some(root) = self.root.take() else {
            return;
        };
        if !keep {
            let path = root.path().display().to_string();
            match root.close() {
                Ok(()) => println!(
                    "Removed {path}.{}",
                    if failed {
                        " Run with --keep to look at the logs."
                    } else {
                        " Run with --keep to look around afterwards."
                    }
                ),
                Err(e) => eprintln!("cannot remove {path}: {e}"),
            }
            return;
        }
        let root = root.keep();
        let teamctl = shown(&self.bins.teamctl);
        let boardd = shown(&self.bins.boardd);
        let sock = root.join("boardd.sock");
        println!(
            "\nKept {root}:\n  work/   the backend as the team left it\n  state/  boardd's \
             database and log, the teammates' transcripts and logs\nWhat ada's model saw and \
             ran:\n  {teamctl} --state-dir {state} logs ada\nThe board and its history (start \
             boardd on the kept state):\n  {boardd} --state-dir {state} --socket {sock} &\n  \
             {teamctl} --socket {sock} tasks\n  {teamctl} --socket {sock} task show 3",
            root = root.display(),
            state = self.state,
            sock = sock.display(),
        );
    }
}
