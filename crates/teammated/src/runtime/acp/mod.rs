//! The `acp` runtime: any agent that speaks the Agent Client Protocol over
//! stdio (`gemini --acp`, ...). See `docs/runtimes.md` for the mapping of board
//! events, and `docs/design/runtime-codex-acp.md` §4 for how Gemini CLI behaves.
//!
//! [`start`] opens the session itself (`initialize`, then `session/load`
//! of the task's session or `session/new`, then `session/set_mode plan` behind
//! the plan gate), so that an agent that cannot start is a start failure with
//! its stderr. Then a [`driver`] task owns the process for the rest of the work.
//!
//! Traps:
//! - A `session/load` answers before its replay of the history has ended, so
//!   replayed `agent_message_chunk`s would count as the answer to the next
//!   prompt. The replay is drained until the agent has been quiet for
//!   [`REPLAY_QUIET`] before anything is prompted.
//! - ACP has no system prompt: the identity heads the first prompt.
//! - Gemini CLI loses a session loaded in the minute it was created in: such
//!   a load waits for the next minute ([`load_time`]).
//! - A failed `session/load` becomes a new session, with the reason in
//!   [`AgentEvent::Session`].

mod driver;
mod load_time;
mod rpc;
// Public for the fuzz targets (`crates/fuzz-entry`) only.
#[doc(hidden)]
pub mod wire;

use crate::runtime::handle::{Intake, Pid};
use crate::runtime::jsonrpc::Incoming;
use crate::runtime::process::AgentProcess;
use crate::runtime::{Agent, AgentError, AgentEvent, AgentSpec, Brief, with_tail};
use driver::Driver;
use rpc::{CallError, Rpc, call, turn_away};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

/// How long the agent has to open its session. A Node agent's start takes
/// seconds (docs/benchmarks.md §11); a loaded machine or a slow MCP server may
/// take far longer, and a load may wait up to 60 s for the next minute
/// ([`load_time`]).
pub const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the agent must be silent before a load's replay counts as over.
pub const REPLAY_QUIET: Duration = Duration::from_millis(400);
/// The longest a load's replay is drained.
const REPLAY_MAX: Duration = Duration::from_secs(15);

/// The session as the handshake left it.
struct Opened {
    id: String,
    resumed: bool,
    why_new: Option<String>,
    plan_mode: bool,
}

/// Starts the agent and opens the task's session (see the module's doc); a
/// [`driver`] task then owns the agent for the rest of the work.
///
/// An input is handed to the driver ([`Intake::Queued`]), which queues it for
/// the turn boundary (ACP has no steering);
/// [`AgentEvent::Delivered`] comes once it was sent as a prompt. Once the
/// agent's exit has been given out, a send is refused. A stop cancels the
/// running prompt (bounded), then ends the process and all it started.
pub async fn start(spec: &AgentSpec, brief: Brief) -> Result<Agent, AgentError> {
    let started = SystemTime::now();
    let launch = spec.launch(&brief, Vec::new(), Vec::new());
    let proc = AgentProcess::spawn(&launch)?;
    let pid = proc.pid();
    let mut rpc = Rpc::new(proc);
    let opened = match tokio::time::timeout(START_TIMEOUT, open(&mut rpc, &brief, started)).await {
        Ok(Ok(opened)) => opened,
        Ok(Err(e)) => return Err(failed_start(rpc, e.to_string()).await),
        Err(_) => {
            let why = format!("it did not open a session within {START_TIMEOUT:?}");
            return Err(failed_start(rpc, why).await);
        }
    };
    tracing::info!(session = %opened.id, resumed = opened.resumed, "acp session open");
    let intake = Intake::Queued {
        refused_after_exit: true,
    };
    let session = Some(opened.id.clone());
    Ok(Agent::spawn(
        intake,
        Pid::new(pid),
        session,
        |commands, events| {
            let _ = events.send(AgentEvent::Session {
                id: opened.id.clone(),
                resumed: opened.resumed,
                why_new: opened.why_new,
            });
            let driver = Driver {
                rpc,
                session: opened.id,
                policy: spec.policy,
                gated: brief.plan_first,
                plan_mode: opened.plan_mode,
                max_prompts: spec.max_turns.max(1),
                events,
                state: Default::default(),
            };
            // ACP has no system prompt: the identity heads the first turn.
            let first = format!("{}\n\n{}", brief.identity, brief.prompt);
            driver.run(first, commands)
        },
    ))
}

/// `initialize`, then the task's session: loaded, or new. `started`: when
/// this start began.
async fn open(rpc: &mut Rpc, brief: &Brief, started: SystemTime) -> Result<Opened, CallError> {
    let init = call(rpc, "initialize", wire::initialize_params()).await?;
    let version = init["protocolVersion"].as_u64();
    if version != Some(wire::PROTOCOL_VERSION) {
        tracing::warn!(?version, "the agent speaks another ACP version; going on");
    }
    let gemini = wire::agent_name(&init) == Some(load_time::GEMINI);
    let mcp = wire::mcp_servers(brief.mcp.as_ref());
    let cwd = brief.cwd.display().to_string();
    let mut why_new = None;
    let mut opened = None;
    if let Some(id) = &brief.resume {
        if gemini {
            let at = load_time::not_before(id, started);
            if let Ok(wait) = at.duration_since(SystemTime::now()) {
                tracing::info!(session = %id, ?wait, "waiting for the next minute to load the session (Gemini CLI loses it in the minute it was created in)");
                load_time::wait_until(at).await;
            }
        }
        let params = json!({"sessionId": id, "cwd": cwd, "mcpServers": mcp});
        match call(rpc, "session/load", params).await {
            Ok(result) => {
                load_time::opened(id, load_time::minute(started));
                drain_replay(rpc).await;
                opened = Some((id.clone(), result, true));
            }
            Err(CallError::Rpc(e)) => {
                tracing::warn!(session = %id, error = %e, "the agent could not load the task's session");
                why_new = Some(format!("session/load failed: {e}"));
            }
            Err(e) => return Err(e),
        }
    }
    let (id, result, resumed) = match opened {
        Some(o) => o,
        None => {
            let params = json!({"cwd": cwd, "mcpServers": mcp});
            let result = call(rpc, "session/new", params).await?;
            let id = result["sessionId"]
                .as_str()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    CallError::Agent(AgentError::Protocol(format!(
                        "session/new answered without a sessionId: {result}"
                    )))
                })?
                .to_string();
            load_time::opened(&id, load_time::minute(SystemTime::now()));
            (id, result, false)
        }
    };
    let plan_mode = brief.plan_first && enter_plan_mode(rpc, &id, &result).await?;
    Ok(Opened {
        id,
        resumed,
        why_new,
        plan_mode,
    })
}

/// Puts the session in plan mode where the agent has one. Without it, the
/// gate still refuses every change until the plan (sent with the board's
/// `submit_plan`) is approved.
async fn enter_plan_mode(rpc: &mut Rpc, id: &str, opened: &Value) -> Result<bool, CallError> {
    if !wire::modes(opened).iter().any(|m| m == "plan") {
        tracing::info!(
            "the agent has no plan mode; changes are refused until the plan is approved"
        );
        return Ok(false);
    }
    let params = json!({"sessionId": id, "modeId": "plan"});
    match call(rpc, "session/set_mode", params).await {
        Ok(_) => Ok(true),
        Err(CallError::Rpc(e)) => {
            tracing::warn!(error = %e, "the agent refused plan mode; changes are refused until the plan is approved");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Reads (and drops) the replay of a loaded session until the agent has been
/// quiet for [`REPLAY_QUIET`], turning away whatever it asks meanwhile.
async fn drain_replay(rpc: &mut Rpc) {
    let drained = async {
        while let Ok(Some(msg)) = tokio::time::timeout(REPLAY_QUIET, rpc.next()).await {
            if let Incoming::Request { id, method, .. } = msg
                && turn_away(rpc, &id, &method).await.is_err()
            {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(REPLAY_MAX, drained).await;
}

/// The error for an agent that did not open its session, after stopping it:
/// with how it ended and its last stderr lines.
async fn failed_start(mut rpc: Rpc, why: String) -> AgentError {
    let how = rpc.proc.stop().await;
    let tail = rpc.proc.stderr_tail_at_end().await;
    AgentError::Start(with_tail(format!("{why} ({how})"), &tail))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{AgentPolicy, RuntimeKind};

    /// A fake ACP agent in `sh`: it answers by our request ids (1 initialize,
    /// 2 session/new, 3 and 4 the prompts) and waits for `go` before it ends
    /// the first prompt, so that the test's message comes while it is busy.
    fn fake(go: &std::path::Path) -> String {
        let chunk = |text: &str| {
            format!(
                r#"echo '{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"S1","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}}}'"#
            )
        };
        format!(
            r#"read l; echo '{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":1}}}}'
read l; echo '{{"jsonrpc":"2.0","id":2,"result":{{"sessionId":"S1"}}}}'
read l
echo '{{"jsonrpc":"2.0","id":90,"method":"fs/read_text_file","params":{{"path":"/etc/passwd"}}}}'
read l; case "$l" in *'"error"'*) ;; *) {bad} ;; esac
{first}
while [ ! -e {go} ]; do sleep 0.02; done
echo '{{"jsonrpc":"2.0","id":3,"result":{{"stopReason":"end_turn"}}}}'
read l; case "$l" in *HELLO-MSG*) {second} ;; *) {lost} ;; esac
echo '{{"jsonrpc":"2.0","id":4,"result":{{"stopReason":"end_turn","_meta":{{"quota":{{"token_count":{{"input_tokens":7,"output_tokens":3}}}}}}}}}}'
sleep 30"#,
            bad = chunk("NO-ERROR-ANSWER"),
            first = chunk("busy"),
            second = chunk("took the message"),
            lost = chunk("MESSAGE-LOST"),
            go = go.display(),
        )
    }

    /// An agent that is the `sh` script `script`.
    fn sh(script: String) -> AgentSpec {
        AgentSpec {
            kind: RuntimeKind::Acp,
            program: "sh".into(),
            extra_args: vec!["-c".into(), script],
            max_turns: 10,
            model: None,
            policy: AgentPolicy::Workspace,
            env: vec![],
            guard: None,
            jail: None,
        }
    }

    /// A new task's brief, to work in `dir`.
    fn brief(dir: &std::path::Path) -> Brief {
        Brief {
            task: 1,
            cwd: dir.to_path_buf(),
            resume: None,
            identity: "You are a test.".into(),
            prompt: "Do it.".into(),
            plan_first: false,
            mcp: None,
            usd_cap: None,
        }
    }

    async fn next(acp: &mut Agent) -> AgentEvent {
        tokio::time::timeout(Duration::from_secs(10), acp.next_event())
            .await
            .expect("an event")
    }

    #[tokio::test]
    async fn input_for_a_busy_agent_waits_for_the_turn_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let go = dir.path().join("go");
        let mut acp = start(&sh(fake(&go)), brief(dir.path())).await.unwrap();
        assert_eq!(acp.session(), Some("S1"));
        assert!(matches!(
            next(&mut acp).await,
            AgentEvent::Session { resumed: false, .. }
        ));
        // The first prompt is sent: what it carries is delivered.
        assert_eq!(
            next(&mut acp).await,
            AgentEvent::Delivered(crate::runtime::FIRST_INPUT)
        );
        let tag = acp.send("HELLO-MSG").await.unwrap();
        // Busy: the message is not delivered while the first prompt runs.
        let quiet = tokio::time::timeout(Duration::from_millis(300), acp.next_event()).await;
        assert!(quiet.is_err(), "an event while busy: {quiet:?}");
        std::fs::write(&go, "").unwrap();
        let mut events = Vec::new();
        loop {
            let ev = next(&mut acp).await;
            let idle = matches!(ev, AgentEvent::Idle { .. });
            events.push(ev);
            if idle {
                break;
            }
        }
        assert_eq!(
            events,
            vec![
                AgentEvent::Said("busy".into()),
                AgentEvent::TurnEnded {
                    answer: "busy".into()
                },
                AgentEvent::Delivered(tag),
                AgentEvent::Said("took the message".into()),
                AgentEvent::Usage(crate::runtime::Usage {
                    tokens: teamboard_protocol::TokenUsage {
                        input: 7,
                        output: 3,
                        ..Default::default()
                    },
                    ends_turn: true,
                    ..Default::default()
                }),
                AgentEvent::Idle {
                    answer: "took the message".into()
                },
            ]
        );
        acp.stop().await;
    }

    #[tokio::test]
    async fn a_start_failure_reports_the_agents_last_stderr_lines() {
        // The agent dies in `initialize`. Its last line comes after its exit is
        // seen, from a process it left: the report waits for stderr's end.
        let script = "read l; echo 'fatal: no credentials' >&2; \
            (sleep 0.3; echo 'fatal: the late line' >&2) >/dev/null & exit 4";
        let dir = tempfile::tempdir().unwrap();
        let why = match start(&sh(script.into()), brief(dir.path())).await {
            Err(AgentError::Start(why)) => why,
            Err(e) => panic!("not a start failure: {e}"),
            Ok(_) => panic!("an agent that died in initialize started"),
        };
        assert!(why.contains("exit code 4"), "{why}");
        assert!(
            why.ends_with("its last stderr lines:\nfatal: no credentials\nfatal: the late line"),
            "{why}"
        );
    }

    /// A fake Gemini CLI that writes the request after `initialize` to `seen`
    /// and loads whatever it is asked to.
    fn fake_gemini(seen: &std::path::Path) -> String {
        format!(
            r#"read l; echo '{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":1,"agentInfo":{{"name":"gemini-cli"}},"agentCapabilities":{{"loadSession":true}}}}}}'
read l; printf '%s\n' "$l" > {seen}
echo '{{"jsonrpc":"2.0","id":2,"result":{{"modes":{{"availableModes":[{{"id":"default"}}],"currentModeId":"default"}}}}}}'
sleep 30"#,
            seen = seen.display(),
        )
    }

    #[tokio::test]
    async fn a_resume_loads_the_session_with_the_cwd_and_servers_of_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let seen = dir.path().join("seen");
        // Opened by this process in a minute long past: no wait.
        load_time::opened("S-old", 0);
        let spec = sh(fake_gemini(&seen));
        let mcp = crate::runtime::McpServer {
            command: "/bin/teamctl".into(),
            args: vec!["mcp".into(), "--name".into(), "alice".into()],
            env: vec![("TEAMBOARD_TEAM".into(), "t".into())],
        };
        let brief = Brief {
            resume: Some("S-old".into()),
            prompt: "Go on.".into(),
            mcp: Some(mcp.clone()),
            ..brief(dir.path())
        };
        let asked = std::time::Instant::now();
        let mut acp = tokio::time::timeout(Duration::from_secs(20), start(&spec, brief))
            .await
            .expect("no wait for a session opened minutes ago")
            .unwrap();
        assert!(asked.elapsed() < Duration::from_secs(10));
        assert_eq!(acp.session(), Some("S-old"));
        assert_eq!(
            next(&mut acp).await,
            AgentEvent::Session {
                id: "S-old".into(),
                resumed: true,
                why_new: None
            }
        );
        let line: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
        assert_eq!(line["method"], "session/load");
        assert_eq!(
            line["params"],
            json!({
                "sessionId": "S-old",
                "cwd": dir.path().display().to_string(),
                "mcpServers": wire::mcp_servers(Some(&mcp)),
            })
        );
        acp.stop().await;
    }
}
