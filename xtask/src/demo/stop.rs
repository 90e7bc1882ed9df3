//! The end of the demo: the team leaves (a shutdown request to each teammate when
//! all went well, SIGTERM otherwise), boardd stops, and the directory is kept or removed.

use super::procs::Exited;
use super::{Demo, script, shown};
use std::collections::BTreeMap;
use std::time::Duration;
use teamboard_protocol::{Message, MessageKind};

/// How long the teammates get to answer the shutdown request and exit.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);

impl Demo {
    /// Stops the teammates (politely: a shutdown request each; otherwise SIGTERM),
    /// then boardd.
    pub(super) async fn shutdown(&mut self, polite: bool) -> anyhow::Result<()> {
        self.procs.adopt_strays();
        let boardd_up = self.procs.boardd.as_mut().is_some_and(|b| b.running());
        if polite && boardd_up && !self.procs.running().is_empty() {
            println!(
                "\nShutting the team down:\n$ teamctl shutdown NAME --reason 'The demo is over, \
                 thank you.' --no-wait"
            );
            for i in self.procs.running() {
                let name = self.procs.teammates[i].name.clone();
                // All at once: the answers are collected from the lead's inbox below.
                let reason = "The demo is over, thank you.";
                let shutdown = ["shutdown", &name, "--reason", reason, "--no-wait"];
                if let Err(e) = self.teamctl(&shutdown).await {
                    println!("  {name}: {e:#}");
                }
            }
            self.procs.wait_teammates(SHUTDOWN_WAIT).await;
            let answers = self.shutdown_answers().await;
            for t in &self.procs.teammates {
                let answer = match answers.get(&t.name) {
                    Some(a) => format!("answered {a:?}"),
                    None => "no answer".to_string(),
                };
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

    /// The teammates' answers to the shutdown request, from the lead's inbox.
    async fn shutdown_answers(&self) -> BTreeMap<String, String> {
        let Ok(out) = self.teamctl(&["inbox", "--json"]).await else {
            return BTreeMap::new();
        };
        let inbox: Vec<Message> = serde_json::from_slice(&out).unwrap_or_default();
        let answers = inbox
            .into_iter()
            .filter(|m| m.kind == MessageKind::ShutdownResponse);
        answers.map(|m| (m.from, m.content)).collect()
    }

    /// Keeps or removes the demo's directory, and says which.
    pub(super) fn finish(&mut self, keep: bool, failed: bool) {
        let Some(root) = self.root.take() else {
            return;
        };
        if !keep {
            let path = root.path().display().to_string();
            let then = if failed {
                "look at the logs"
            } else {
                "look around afterwards"
            };
            match root.close() {
                Ok(()) => println!("Removed {path}. Run with --keep to {then}."),
                Err(e) => eprintln!("cannot remove {path}: {e}"),
            }
            return;
        }
        let root = root.keep();
        let teamctl = shown(&self.bins.teamctl);
        let boardd = shown(&self.bins.boardd);
        let sock = root.join("boardd.sock");
        let branch = script::BRANCH;
        println!(
            "\nKept {root}:\n  work/   the git repository: {branch} holds the team's work (the \
             checkout itself is detached at the first commit)\n  state/  boardd's database \
             and log, the teammates' transcripts and logs, and worktrees/: each task's \
             worktree\nThe repository, its task branches and worktrees:\n  git -C {work} log \
             --graph --oneline --decorate --all\n  git -C {work} worktree list\n  git -C \
             {work} show {branch}:SUMMARY.md\nWhat ada's model saw and ran:\n  {teamctl} \
             --state-dir {state} logs ada\nThe board, its history, the worktrees and what each \
             task changed (start boardd on the kept state):\n  {boardd} --state-dir {state} \
             --socket {sock} &\n  {teamctl} --socket {sock} tasks\n  {teamctl} --socket {sock} \
             task show 3\n  {teamctl} --socket {sock} worktrees\n  {teamctl} --socket {sock} \
             task diff 3\n  {teamctl} --socket {sock} worktrees prune",
            root = root.display(),
            work = self.work,
            state = self.state,
            sock = sock.display(),
        );
    }
}
