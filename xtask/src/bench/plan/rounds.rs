//! The two kinds of sample: a plan approved by `teamctl approve`, and the idle
//! teammate woken by `teamctl send`.

use super::{Lead, NAME, PENDING_POLL, STEP_TIMEOUT, TEAM};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};
use teamboard_mock_llm::{MockLlm, MockReply, RecordedRequest};
use teamboard_protocol::request::{ListRequestsArgs, NewTask};
use teamboard_protocol::{RequestKind, RequestState, TaskStatus, TeamRequest};

/// What one sample measured.
#[derive(Default)]
pub(super) struct Sample {
    /// teamctl spawned → the model request read by the mock.
    pub(super) to_call: Duration,
    /// Plans only: teamctl spawned → the request after the `bash` call the
    /// model answered with read, so the tool call has run (the mock answers at
    /// once).
    pub(super) to_tool_done: Duration,
    /// teamctl spawned → teamctl exited.
    pub(super) process: Duration,
    /// Plans only: the submit_plan call read → the plan seen pending.
    pub(super) submit_to_pending: Duration,
    /// Plans only: the submit_plan call read → teamctl spawned.
    pub(super) submit_to_approve: Duration,
}

pub(super) struct Bench {
    pub(super) mock: MockLlm,
    pub(super) watch: Lead,
    pub(super) teamctl: PathBuf,
    pub(super) socket: PathBuf,
    pub(super) hold: Duration,
}

impl Bench {
    /// The idle teammate, woken by `teamctl send`.
    pub(super) async fn baseline(&mut self, round: usize) -> anyhow::Result<Sample> {
        let calls = self.mock.calls();
        tokio::time::sleep(self.hold).await;
        self.expect_calls(calls, "while idle")?;
        self.mock.push(MockReply::anthropic_text("Noted."));
        let text = format!("ping {round}");
        let send = ["send", NAME, &text];
        let (process, request, start) = self.teamctl_until_call(&send, calls + 1).await?;
        self.back_to_idle().await?;
        self.expect_calls(calls + 1, "for one message")?;
        let to_call = request.received_at.saturating_duration_since(start);
        Ok(Sample {
            to_call,
            process,
            ..Sample::default()
        })
    }

    /// A task that needs a plan: submitted, held pending, approved by `teamctl
    /// approve`, carried out.
    pub(super) async fn plan(&mut self, round: usize) -> anyhow::Result<Sample> {
        let calls = self.mock.calls();
        let plan_call = format!("toolu_plan{round}");
        let bash_call = format!("toolu_bash{round}");
        self.mock.push(MockReply::anthropic_tool_use(
            &plan_call,
            "submit_plan",
            json!({"plan": format!("Run `true` once in the shell (round {round}).")}),
        ));
        let task = self
            .watch
            .client
            .add_task(NewTask {
                subject: format!("planned {round}"),
                description: "Run `true` once in the shell, after your plan is approved.".into(),
                require_plan: true,
                ..NewTask::default()
            })
            .await?;
        tokio::time::timeout(STEP_TIMEOUT, self.mock.wait_for_calls(calls + 1))
            .await
            .with_context(|| format!("the teammate made no model call for task #{}", task.id))?;
        let submitted = self.request(calls)?.received_at;
        let request = tokio::time::timeout(STEP_TIMEOUT, self.pending_plan(task.id))
            .await
            .with_context(|| format!("no plan for task #{} became pending", task.id))??;
        let submit_to_pending = submitted.elapsed();
        tokio::time::sleep(self.hold).await;
        self.expect_calls(calls + 1, "while its plan was pending")?;

        let bash = MockReply::anthropic_tool_use(&bash_call, "bash", json!({"command": "true"}));
        self.mock.push(bash);
        self.mock
            .push(MockReply::anthropic_text("Done: `true` ran."));
        let id = request.id.to_string();
        let (process, next, start) = self
            .teamctl_until_call(&["approve", &id], calls + 2)
            .await?;
        let submit_to_approve = start.saturating_duration_since(submitted);
        let (is_error, text) = tool_result(&next, &plan_call)
            .context("the model request after the approval carries no submit_plan result")?;
        if is_error || !text.contains("approved") {
            bail!("submit_plan answered {text:?} after the approval");
        }

        self.back_to_idle().await?;
        self.expect_calls(calls + 3, "for one planned task")?;
        let after_bash = self.request(calls + 2)?;
        let (is_error, text) = tool_result(&after_bash, &bash_call)
            .context("the model request after bash carries no bash result")?;
        if is_error {
            bail!("bash was refused after the approval: {text}");
        }
        let done = self.watch.client.get_task(task.id).await?.task;
        if done.status != TaskStatus::Completed {
            bail!("task #{} ended {}", done.id, done.status);
        }
        Ok(Sample {
            to_call: next.received_at.saturating_duration_since(start),
            to_tool_done: after_bash.received_at.saturating_duration_since(start),
            process,
            submit_to_pending,
            submit_to_approve,
        })
    }

    /// Runs `teamctl ARGS` and waits for it to exit and for the mock to have
    /// read `calls` model calls in all. Returns the process's run, the last call
    /// and the instant just before the spawn.
    async fn teamctl_until_call(
        &self,
        args: &[&str],
        calls: usize,
    ) -> anyhow::Result<(Duration, RecordedRequest, Instant)> {
        let (key_var, key) = teamboard_process::lead_key_env(&self.socket);
        let mut cmd = tokio::process::Command::new(&self.teamctl);
        cmd.arg("--socket")
            .arg(&self.socket)
            .args(["--team", TEAM])
            .args(args)
            .env_remove("TEAMBOARD_TIMEOUT")
            .env(key_var, key)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        teamboard_process::die_with_parent(cmd.as_std_mut(), libc::SIGKILL);
        let what = format!("teamctl {}", args.join(" "));
        let start = Instant::now();
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {}", self.teamctl.display()))?;
        let exited = async {
            let out = child.wait_with_output().await;
            (out, Instant::now())
        };
        let called = self.mock.wait_for_calls(calls);
        let ((out, exit), ()) =
            tokio::time::timeout(STEP_TIMEOUT, async { tokio::join!(exited, called) })
                .await
                .with_context(|| {
                    format!("`{what}` did not lead to a model call within {STEP_TIMEOUT:?}")
                })?;
        let out = out.with_context(|| format!("`{what}` failed to run"))?;
        if !out.status.success() {
            bail!(
                "`{what}` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok((exit - start, self.request(calls - 1)?, start))
    }

    /// The pending plan of `task`, once boardd has it.
    async fn pending_plan(&self, task: u64) -> anyhow::Result<TeamRequest> {
        loop {
            let pending = self
                .watch
                .client
                .list_requests(ListRequestsArgs {
                    state: Some(RequestState::Pending),
                    kind: Some(RequestKind::Plan),
                    task: Some(task),
                })
                .await?;
            if let Some(r) = pending.into_iter().next() {
                return Ok(r);
            }
            tokio::time::sleep(PENDING_POLL).await;
        }
    }

    /// Waits until the teammate has worked and is idle again.
    async fn back_to_idle(&mut self) -> anyhow::Result<()> {
        self.watch.status(NAME, "working", STEP_TIMEOUT).await?;
        self.watch.status(NAME, "idle", STEP_TIMEOUT).await?;
        Ok(())
    }

    /// Fails unless the mock has had exactly `calls` model calls, none of them
    /// answered by the fallback.
    fn expect_calls(&self, calls: usize, when: &str) -> anyhow::Result<()> {
        let (now, fallback) = (self.mock.calls(), self.mock.fallback_calls());
        if now != calls || fallback > 0 {
            bail!(
                "expected {calls} model calls in all {when}, the mock had {now} \
                 ({fallback} of them beyond the script)"
            );
        }
        Ok(())
    }

    /// Model call `n` (from 0).
    fn request(&self, n: usize) -> anyhow::Result<RecordedRequest> {
        self.mock
            .request(n)
            .with_context(|| format!("the mock has no model call #{n}"))
    }
}

/// The result of tool call `id` in a model request: whether it is an error, and
/// its text.
fn tool_result(request: &RecordedRequest, id: &str) -> Option<(bool, String)> {
    let messages = request.body["messages"].as_array()?;
    messages.iter().rev().find_map(|m| {
        m["content"].as_array()?.iter().find_map(|b| {
            (b["type"] == "tool_result" && b["tool_use_id"] == id).then(|| {
                let text = match &b["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (b["is_error"].as_bool().unwrap_or(false), text)
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".into(),
            path: "/v1/messages".into(),
            headers: Vec::new(),
            body,
            answered_usage: Value::Null,
            received_at: Instant::now(),
            throttled: None,
        }
    }

    #[test]
    fn tool_result_finds_the_latest_result_of_the_call() {
        let r = request(json!({"messages": [
            {"role": "user", "content": "do it"},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "closed", "is_error": true}
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "[Runtime] note"},
                {"type": "tool_result", "tool_use_id": "t1", "content": "approved", "is_error": false}
            ]},
        ]}));
        assert_eq!(tool_result(&r, "t1"), Some((false, "approved".into())));
        assert_eq!(tool_result(&r, "t2"), None);
        assert_eq!(tool_result(&request(Value::Null), "t1"), None);
    }
}
