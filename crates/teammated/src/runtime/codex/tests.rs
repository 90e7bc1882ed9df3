//! The session's mapping, on lines captured from `codex app-server` 0.171.0
//! (docs/design/runtime-codex-acp.md §3.5, §3.6; trimmed to the fields read),
//! without the CLI.

use super::params::texts;
use super::state::{Core, Out, Setup, usage_of};
use crate::runtime::{AgentEvent, AgentPolicy, FIRST_INPUT, Limit, McpServer, PlanAnswer, Usage};
use serde_json::{Value, json};
use std::path::PathBuf;
use teamboard_protocol::TokenUsage;

const THREAD: &str = "01a232c2-021c-7000-8000-000000000001";
const TURN: &str = "01a232c2-023a-7000-8000-000000000002";

fn setup() -> Setup {
    Setup {
        cwd: PathBuf::from("/work/t7"),
        identity: "You are bob.".into(),
        prompt: "Task #7: write notes.txt".into(),
        resume: None,
        model: None,
        mcp: Some(McpServer {
            command: PathBuf::from("/bin/teamctl"),
            args: vec!["mcp".into()],
            env: vec![],
        }),
        policy: AgentPolicy::Workspace,
        plan_first: false,
        max_rounds: 50,
    }
}

/// A core and everything it wrote and emitted so far.
struct Session {
    core: Core,
    written: Vec<Value>,
    emitted: Vec<AgentEvent>,
}

impl Session {
    fn new(setup: Setup) -> Session {
        let mut s = Session {
            core: Core::new(setup),
            written: Vec::new(),
            emitted: Vec::new(),
        };
        let out = s.core.begin();
        s.take(out);
        s
    }

    fn take(&mut self, out: Vec<Out>) {
        for o in out {
            match o {
                Out::Write(v) => self.written.push(v),
                Out::Emit(e) => self.emitted.push(e),
            }
        }
    }

    fn line(&mut self, v: Value) {
        let out = self.core.on_line(v);
        self.take(out);
    }

    fn send(&mut self, tag: u64, text: &str) {
        let out = self.core.send(tag, text);
        self.take(out);
    }

    fn answer_plan(&mut self, a: PlanAnswer) {
        let out = self.core.answer_plan(a);
        self.take(out);
    }

    /// The last request written with `method`.
    fn asked(&self, method: &str) -> Value {
        self.written
            .iter()
            .rev()
            .find(|w| w["method"] == method && w.get("id").is_some())
            .cloned()
            .unwrap_or_else(|| panic!("no {method} in {:#?}", self.written))
    }

    fn count(&self, method: &str) -> usize {
        self.written
            .iter()
            .filter(|w| w["method"] == method)
            .count()
    }

    /// Answers the last request of `method` with `result`.
    fn answer(&mut self, method: &str, result: Value) {
        let id = self.asked(method)["id"].clone();
        self.line(json!({"id": id, "result": result}));
    }

    fn refuse(&mut self, method: &str, message: &str) {
        let id = self.asked(method)["id"].clone();
        self.line(json!({"id": id, "error": {"code": -32600, "message": message}}));
    }

    fn events(&mut self) -> Vec<AgentEvent> {
        std::mem::take(&mut self.emitted)
    }

    /// Initialised, with the thread open (started) and the first turn
    /// running as `TURN`.
    fn opened(setup: Setup) -> Session {
        let mut s = Session::new(setup);
        s.answer("initialize", json!({"userAgent": "teammated/0.171.0"}));
        s.answer("thread/start", json!({"thread": {"id": THREAD}}));
        s.answer(
            "turn/start",
            json!({"turn": {"id": TURN, "status": "inProgress"}}),
        );
        s.line(turn_started(TURN));
        s.events();
        s
    }
}

fn turn_started(turn: &str) -> Value {
    json!({"method":"turn/started","params":{"threadId":THREAD,"turn":{"id":turn,"status":"inProgress","items":[]}}})
}

fn user_message(client_id: &str, text: &str) -> Value {
    json!({"method":"item/started","params":{"item":{"type":"userMessage","id":"u1","clientId":client_id,
        "content":[{"type":"text","text":text,"text_elements":[]}]},"threadId":THREAD,"turnId":TURN}})
}

fn agent_message(text: &str) -> Value {
    json!({"method":"item/completed","params":{"item":{"type":"agentMessage","id":"msg_resp_3","text":text,"phase":null},
        "threadId":THREAD,"turnId":TURN}})
}

fn turn_completed(turn: &str, status: &str, text: &str) -> Value {
    json!({"method":"turn/completed","params":{"threadId":THREAD,"turn":{"id":turn,
        "items":[{"type":"agentMessage","id":"msg_resp_3","text":text}],"itemsView":"summary",
        "status":status,"error":null,"durationMs":469}}})
}

fn usage(turn: &str, input: u64, cached: u64, output: u64) -> Value {
    json!({"method":"thread/tokenUsage/updated","params":{"threadId":THREAD,"turnId":turn,"tokenUsage":{
        "total":{"totalTokens":99999,"inputTokens":99999,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":0,"reasoningOutputTokens":0},
        "last":{"totalTokens":input+output,"inputTokens":input,"cachedInputTokens":cached,"cacheWriteInputTokens":0,"outputTokens":output,"reasoningOutputTokens":0},
        "modelContextWindow":258400}}})
}

fn command_approval(id: u64, decisions: Value) -> Value {
    json!({"method":"item/commandExecution/requestApproval","id":id,"params":{"kind":"command","threadId":THREAD,
        "turnId":TURN,"itemId":"call_resp_2","command":"/bin/bash -lc 'echo hello-from-tool > tool.txt'",
        "cwd":"/work/t7","availableDecisions":decisions}})
}

#[test]
fn a_task_opens_a_thread_runs_a_turn_and_answers_with_its_last_message() {
    let mut s = Session::new(setup());
    assert_eq!(
        s.asked("initialize")["params"]["clientInfo"]["name"],
        "teammated"
    );
    s.answer("initialize", json!({"userAgent": "teammated/0.171.0"}));
    assert_eq!(s.count("initialized"), 1);
    let start = s.asked("thread/start");
    assert_eq!(start["params"]["cwd"], "/work/t7");
    assert_eq!(start["params"]["sandbox"], "workspace-write");
    assert_eq!(start["params"]["developerInstructions"], "You are bob.");
    assert!(start["params"]["config"]["mcp_servers"]["teamboard"].is_object());
    s.answer(
        "thread/start",
        json!({"thread": {"id": THREAD, "ephemeral": false}}),
    );
    assert_eq!(
        s.events(),
        [AgentEvent::Session {
            id: THREAD.into(),
            resumed: false,
            why_new: None
        }]
    );
    let turn = s.asked("turn/start");
    assert_eq!(turn["params"]["threadId"], THREAD);
    assert_eq!(
        turn["params"]["input"][0]["text"],
        "Task #7: write notes.txt"
    );
    assert!(turn["params"].get("sandboxPolicy").is_none());
    s.answer(
        "turn/start",
        json!({"turn": {"id": TURN, "status": "inProgress"}}),
    );
    s.line(turn_started(TURN));
    s.line(user_message(
        "teammated-runtime-1",
        "Task #7: write notes.txt",
    ));
    // The task's prompt is in the conversation: what it carries is delivered.
    assert_eq!(s.events(), [AgentEvent::Delivered(FIRST_INPUT)]);
    s.line(json!({"method":"item/started","params":{"item":{"type":"commandExecution","id":"call_resp_2",
        "command":"/bin/bash -lc 'echo hi > notes.txt'","cwd":"/work/t7","status":"inProgress"},"threadId":THREAD,"turnId":TURN}}));
    s.line(command_approval(0, json!(["accept", "cancel"])));
    assert_eq!(
        s.written.last(),
        Some(&json!({"jsonrpc":"2.0","id":0,"result":{"decision":"accept"}}))
    );
    s.line(usage(TURN, 6439, 0, 20));
    s.line(agent_message("Wrote notes.txt."));
    assert!(
        s.events()
            .iter()
            .all(|e| !matches!(e, AgentEvent::Idle { .. }))
    );
    s.line(json!({"method":"thread/status/changed","params":{"threadId":THREAD,"status":{"type":"idle"}}}));
    s.line(turn_completed(TURN, "completed", "Wrote notes.txt."));
    assert_eq!(
        s.events(),
        [AgentEvent::Idle {
            answer: "Wrote notes.txt.".into()
        }]
    );
    assert!(s.core.turn_over());
}

#[test]
fn the_transcript_gets_what_the_agent_said_and_the_tools_it_called() {
    let mut s = Session::opened(setup());
    s.line(
        json!({"method":"item/started","params":{"item":{"type":"commandExecution","id":"c",
        "command":"/bin/bash -lc ls","status":"inProgress"},"threadId":THREAD,"turnId":TURN}}),
    );
    s.line(json!({"method":"item/started","params":{"item":{"type":"mcpToolCall","id":"m",
        "server":"teamboard","tool":"send_message","arguments":{"to":"lead"},"status":"inProgress"},"threadId":THREAD,"turnId":TURN}}));
    s.line(json!({"method":"item/agentMessage/delta","params":{"delta":"Look"}}));
    s.line(agent_message("Looked around."));
    s.line(usage(TURN, 1000, 200, 20));
    assert_eq!(
        s.events(),
        [
            AgentEvent::ToolCall {
                name: "command".into(),
                input: "/bin/bash -lc ls".into()
            },
            AgentEvent::ToolCall {
                name: "teamboard.send_message".into(),
                input: r#"{"to":"lead"}"#.into()
            },
            AgentEvent::Said("Looked around.".into()),
            AgentEvent::Usage(Usage {
                tokens: TokenUsage {
                    input: 800,
                    output: 20,
                    cache_read: 200,
                    cache_write: 0
                },
                ..Usage::default()
            }),
        ]
    );
}

#[test]
fn a_message_is_steered_into_the_active_turn_and_delivered_when_its_item_appears() {
    let mut s = Session::opened(setup());
    s.send(1, "[Message #4 from lead] also add a title");
    let steer = s.asked("turn/steer");
    assert_eq!(steer["params"]["expectedTurnId"], TURN);
    assert_eq!(steer["params"]["clientUserMessageId"], "teammated-1");
    s.answer("turn/steer", json!({"turnId": TURN}));
    assert!(s.events().is_empty(), "accepted is not yet delivered");
    s.line(user_message(
        "teammated-1",
        "[Message #4 from lead] also add a title",
    ));
    assert_eq!(s.events(), [AgentEvent::Delivered(1)]);
    s.line(turn_completed(TURN, "completed", "Done, with a title."));
    assert_eq!(
        s.events(),
        [AgentEvent::Idle {
            answer: "Done, with a title.".into()
        }]
    );
}

#[test]
fn a_message_between_turns_starts_one_and_holds_the_answer_until_it_is_taken() {
    let mut s = Session::opened(setup());
    s.line(turn_completed(TURN, "completed", "first answer"));
    assert_eq!(s.events().len(), 1);
    s.send(2, "the gate refused: tests fail");
    assert_eq!(s.count("turn/steer"), 0);
    let start = s.asked("turn/start");
    assert_eq!(start["params"]["clientUserMessageId"], "teammated-2");
    s.answer("turn/start", json!({"turn": {"id": "turn-2"}}));
    s.line(turn_started("turn-2"));
    s.line(user_message("teammated-2", "the gate refused: tests fail"));
    s.line(turn_completed("turn-2", "completed", "fixed"));
    assert_eq!(
        s.events(),
        [
            AgentEvent::Delivered(2),
            AgentEvent::Idle {
                answer: "fixed".into()
            }
        ]
    );
}

#[test]
fn a_steer_that_loses_the_race_with_the_turn_end_starts_a_turn_instead() {
    let mut s = Session::opened(setup());
    s.send(3, "late news");
    // The turn ends before Codex reads the steer, which it then refuses.
    s.line(turn_completed(TURN, "completed", "done"));
    // Not the final answer while a message is on its way, but the work's
    // answer should the next turn only answer the message.
    assert_eq!(
        s.events(),
        [AgentEvent::TurnEnded {
            answer: "done".into()
        }]
    );
    s.refuse(
        "turn/steer",
        &format!("expected active turn id `{TURN}` but found none"),
    );
    let start = s.asked("turn/start");
    assert_eq!(start["params"]["input"][0]["text"], "late news");
    assert_eq!(start["params"]["clientUserMessageId"], "teammated-3");
    s.answer("turn/start", json!({"turn": {"id": "turn-3"}}));
    s.line(user_message("teammated-3", "late news"));
    s.line(turn_completed("turn-3", "completed", "noted"));
    assert_eq!(
        s.events(),
        [
            AgentEvent::Delivered(3),
            AgentEvent::Idle {
                answer: "noted".into()
            }
        ]
    );
}

#[test]
fn a_message_sent_while_the_first_turn_starts_is_steered_once_it_has_an_id() {
    let mut s = Session::new(setup());
    s.answer("initialize", json!({}));
    s.answer("thread/start", json!({"thread": {"id": THREAD}}));
    s.send(1, "early");
    assert_eq!(s.count("turn/steer"), 0);
    assert_eq!(s.count("turn/start"), 1);
    s.answer("turn/start", json!({"turn": {"id": TURN}}));
    assert_eq!(s.asked("turn/steer")["params"]["expectedTurnId"], TURN);
}

#[test]
fn a_lost_thread_is_replaced_and_the_session_says_why() {
    let mut s = Session::new(Setup {
        resume: Some("01a232f4-0000-7840-b035-f389cb89e9aa".into()),
        ..setup()
    });
    s.answer("initialize", json!({}));
    let resume = s.asked("thread/resume");
    assert_eq!(
        resume["params"]["threadId"],
        "01a232f4-0000-7840-b035-f389cb89e9aa"
    );
    assert_eq!(resume["params"]["excludeTurns"], true);
    s.refuse(
        "thread/resume",
        "no rollout found for thread id 01a232f4-0000-7840-b035-f389cb89e9aa",
    );
    s.answer("thread/start", json!({"thread": {"id": THREAD}}));
    assert_eq!(
        s.events(),
        [AgentEvent::Session {
            id: THREAD.into(),
            resumed: false,
            why_new: Some(
                "no rollout found for thread id 01a232f4-0000-7840-b035-f389cb89e9aa".into()
            )
        }]
    );
    let text = s.asked("turn/start")["params"]["input"][0]["text"].clone();
    assert!(
        text.as_str()
            .unwrap_or_default()
            .starts_with(texts::NEW_SESSION),
        "{text}"
    );
}

#[test]
fn a_resumed_thread_does_not_count_the_usage_of_its_old_turns_again() {
    let mut s = Session::new(Setup {
        resume: Some(THREAD.into()),
        ..setup()
    });
    s.answer("initialize", json!({}));
    s.answer(
        "thread/resume",
        json!({"thread": {"id": THREAD, "historyMode": "paginated"}}),
    );
    assert_eq!(
        s.events(),
        [AgentEvent::Session {
            id: THREAD.into(),
            resumed: true,
            why_new: None
        }]
    );
    // Codex reports the thread's usage so far, under an old turn's id.
    s.line(usage("old-turn", 6565, 0, 20));
    s.answer("turn/start", json!({"turn": {"id": TURN}}));
    s.line(usage(TURN, 100, 0, 5));
    assert_eq!(
        s.events(),
        [AgentEvent::Usage(Usage {
            tokens: TokenUsage {
                input: 100,
                output: 5,
                cache_read: 0,
                cache_write: 0
            },
            ..Usage::default()
        })]
    );
}

#[test]
fn the_plan_gate_holds_the_answer_refuses_changes_and_opens_on_approval() {
    let mut s = Session::new(Setup {
        plan_first: true,
        ..setup()
    });
    s.answer("initialize", json!({}));
    assert_eq!(s.asked("thread/start")["params"]["sandbox"], "read-only");
    s.answer("thread/start", json!({"thread": {"id": THREAD}}));
    let first = s.asked("turn/start")["params"]["input"][0]["text"].clone();
    assert!(
        first
            .as_str()
            .unwrap_or_default()
            .ends_with(texts::PLAN_GATE)
    );
    s.answer("turn/start", json!({"turn": {"id": TURN}}));
    // A change is refused; Codex offered no `decline`, so it is `cancel`...
    s.line(command_approval(0, json!(["accept", "cancel"])));
    assert_eq!(
        s.written.last().map(|w| w["result"]["decision"].clone()),
        Some(json!("cancel"))
    );
    // ...which ends the turn: the agent is told, and plans on.
    s.line(turn_completed(TURN, "interrupted", ""));
    let again = s.asked("turn/start");
    assert_eq!(again["params"]["input"][0]["text"], texts::REFUSED);
    s.answer("turn/start", json!({"turn": {"id": "turn-2"}}));
    // The board's own tools stay allowed.
    s.line(json!({"method":"mcpServer/elicitation/request","id":1,"params":{"serverName":"teamboard",
        "threadId":THREAD,"turnId":"turn-2","message":"Allow the teamboard MCP server to run tool \"get_task\"?"}}));
    assert_eq!(
        s.written.last().map(|w| w["result"].clone()),
        Some(json!({"action":"accept","content":{}}))
    );
    s.events();
    s.line(turn_completed(
        "turn-2",
        "completed",
        "Plan: 1. add notes.txt 2. test it",
    ));
    assert_eq!(
        s.events(),
        [AgentEvent::PlanProposed(
            "Plan: 1. add notes.txt 2. test it".into()
        )]
    );
    // A message meanwhile gets a turn, which ends without an answer.
    s.send(1, "how is it going?");
    s.answer("turn/start", json!({"turn": {"id": "turn-3"}}));
    s.line(user_message("teammated-1", "how is it going?"));
    s.line(turn_completed(
        "turn-3",
        "completed",
        "waiting for the lead",
    ));
    assert_eq!(s.events(), [AgentEvent::Delivered(1)]);
    s.answer_plan(PlanAnswer::Approved {
        feedback: "keep it short".into(),
    });
    let go = s.asked("turn/start");
    assert_eq!(
        go["params"]["sandboxPolicy"],
        json!({"type": "workspaceWrite"})
    );
    let text = go["params"]["input"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        text.contains("approved") && text.contains("keep it short"),
        "{text}"
    );
    s.answer("turn/start", json!({"turn": {"id": "turn-4"}}));
    s.line(command_approval(2, json!(["accept", "cancel"])));
    assert_eq!(
        s.written.last().map(|w| w["result"]["decision"].clone()),
        Some(json!("accept"))
    );
    s.line(turn_completed("turn-4", "completed", "notes.txt added"));
    assert_eq!(
        s.events(),
        [AgentEvent::Idle {
            answer: "notes.txt added".into()
        }]
    );
}

#[test]
fn a_plan_submitted_through_the_board_is_not_proposed_twice() {
    let mut s = Session::opened(Setup {
        plan_first: true,
        ..setup()
    });
    s.line(json!({"method":"item/completed","params":{"item":{"type":"mcpToolCall","id":"m","server":"teamboard",
        "tool":"submit_plan","arguments":{"plan":"p"},"status":"completed","error":null},"threadId":THREAD,"turnId":TURN}}));
    s.line(turn_completed(TURN, "completed", "I submitted my plan."));
    assert!(s.events().is_empty());
    s.answer_plan(PlanAnswer::Rejected {
        feedback: "too big".into(),
    });
    let again = s.asked("turn/start");
    assert_eq!(
        again["params"]["sandboxPolicy"],
        json!({"type": "readOnly"})
    );
    assert!(
        again["params"]["input"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("too big")
    );
    s.answer("turn/start", json!({"turn": {"id": "turn-2"}}));
    s.line(turn_completed("turn-2", "completed", "Smaller plan: ..."));
    assert_eq!(
        s.events(),
        [AgentEvent::PlanProposed("Smaller plan: ...".into())]
    );
}

#[test]
fn a_decision_during_a_turn_waits_for_its_end() {
    let mut s = Session::opened(Setup {
        plan_first: true,
        ..setup()
    });
    let before = s.count("turn/start");
    s.answer_plan(PlanAnswer::Approved {
        feedback: String::new(),
    });
    assert_eq!(
        s.count("turn/start"),
        before,
        "no second turn while one runs"
    );
    s.line(turn_completed(TURN, "completed", "my plan"));
    assert!(
        s.events().is_empty(),
        "approved already: no plan, no answer"
    );
    assert_eq!(s.count("turn/start"), before + 1);
    assert!(s.asked("turn/start")["params"]["sandboxPolicy"].is_object());
}

#[test]
fn a_read_only_teammate_refuses_even_after_approval() {
    let mut s = Session::opened(Setup {
        policy: AgentPolicy::ReadOnly,
        ..setup()
    });
    s.line(command_approval(0, json!(["accept", "decline", "cancel"])));
    assert_eq!(
        s.written.last().map(|w| w["result"]["decision"].clone()),
        Some(json!("decline"))
    );
}

#[test]
fn a_failed_turn_fails_once_with_codex_error() {
    let mut s = Session::opened(setup());
    s.line(
        json!({"method":"error","params":{"threadId":THREAD,"turnId":TURN,"willRetry":true,
        "error":{"message":"stream disconnected, retrying"}}}),
    );
    assert!(s.events().is_empty());
    s.line(json!({"method":"error","params":{"threadId":THREAD,"turnId":TURN,"willRetry":false,
        "error":{"message":"unexpected status 500 Internal Server Error","additionalDetails":null}}}));
    s.line(
        json!({"method":"turn/completed","params":{"threadId":THREAD,"turn":{"id":TURN,"items":[],
        "status":"failed","error":{"message":"unexpected status 500 Internal Server Error"}}}}),
    );
    assert_eq!(
        s.events(),
        [AgentEvent::Failed(
            "unexpected status 500 Internal Server Error".into()
        )]
    );
}

#[test]
fn a_refused_turn_is_a_failure_and_a_refused_thread_too() {
    let mut s = Session::new(setup());
    s.answer("initialize", json!({}));
    s.answer("thread/start", json!({"thread": {"id": THREAD}}));
    s.events();
    s.refuse("turn/start", "input too large");
    assert_eq!(
        s.events(),
        [AgentEvent::Failed(
            "codex refused a turn: input too large (code -32600)".into()
        )]
    );
    let mut s = Session::new(setup());
    s.answer("initialize", json!({}));
    s.refuse("thread/start", "bad cwd");
    assert!(matches!(&s.events()[..], [AgentEvent::Failed(why)] if why.contains("bad cwd")));
}

#[test]
fn a_stop_interrupts_the_active_turn_and_its_end_is_quiet() {
    let mut s = Session::opened(setup());
    let out = s.core.interrupt();
    s.take(out);
    let interrupt = s.asked("turn/interrupt");
    assert_eq!(
        interrupt["params"],
        json!({"threadId": THREAD, "turnId": TURN})
    );
    assert!(!s.core.turn_over());
    s.answer("turn/interrupt", json!({}));
    s.line(turn_completed(TURN, "interrupted", ""));
    assert!(s.core.turn_over());
    assert!(s.events().is_empty());
}

#[test]
fn an_interrupt_nobody_asked_for_is_a_failure() {
    let mut s = Session::opened(setup());
    s.line(turn_completed(TURN, "interrupted", ""));
    assert_eq!(
        s.events(),
        [AgentEvent::Failed("codex interrupted the turn".into())]
    );
}

#[test]
fn too_many_model_calls_interrupt_the_turn_and_fail() {
    let mut s = Session::opened(Setup {
        max_rounds: 2,
        ..setup()
    });
    for _ in 0..3 {
        s.line(usage(TURN, 10, 0, 1));
    }
    let events = s.events();
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(matches!(&events[3], AgentEvent::Failed(why) if why.contains("--max-rounds")));
    assert_eq!(s.count("turn/interrupt"), 1);
}

#[test]
fn an_unknown_request_is_answered_with_an_error() {
    let mut s = Session::opened(setup());
    s.line(json!({"method":"item/tool/requestUserInput","id":7,"params":{"threadId":THREAD,"questions":[]}}));
    let last = s.written.last().cloned().unwrap_or_default();
    assert_eq!(last["id"], 7);
    assert!(last["error"]["message"].is_string(), "{last}");
}

#[test]
fn usage_counts_fresh_input_apart_from_the_cache() {
    let u = usage_of(&json!({"inputTokens": 1000, "cachedInputTokens": 600,
        "cacheWriteInputTokens": 100, "outputTokens": 20, "reasoningOutputTokens": 5}));
    assert_eq!(
        u,
        TokenUsage {
            input: 300,
            output: 20,
            cache_read: 600,
            cache_write: 100
        }
    );
    assert_eq!(usage_of(&json!({})), TokenUsage::default());
}

#[test]
fn without_a_client_id_a_message_is_known_by_its_text() {
    let mut s = Session::opened(setup());
    s.send(1, "first");
    s.send(2, "second");
    s.line(json!({"method":"item/started","params":{"item":{"type":"userMessage","id":"u","clientId":null,
        "content":[{"type":"text","text":"second"}]},"threadId":THREAD,"turnId":TURN}}));
    assert_eq!(s.events(), [AgentEvent::Delivered(2)]);
}

#[test]
fn a_message_accepted_but_never_taken_is_sent_once_more_then_fails() {
    let mut s = Session::opened(setup());
    s.send(1, "lost in codex");
    s.answer("turn/steer", json!({"turnId": TURN}));
    s.line(turn_completed(TURN, "completed", "done"));
    assert_eq!(
        s.events(),
        [AgentEvent::TurnEnded {
            answer: "done".into()
        }]
    );
    let again = s.asked("turn/start");
    assert_eq!(again["params"]["input"][0]["text"], "lost in codex");
    s.answer("turn/start", json!({"turn": {"id": "turn-2"}}));
    s.line(turn_completed("turn-2", "completed", "done again"));
    assert!(matches!(&s.events()[..], [AgentEvent::Failed(why)] if why.contains("lost in codex")));
}

/// Opened as [`Session::opened`], with `account/read` and `thread/start`
/// answered with these (as 0.171.0 answered them, trimmed).
fn opened_on(account: Value, thread: Value) -> Session {
    let mut s = Session::new(setup());
    s.answer("initialize", json!({"userAgent": "teammated/0.171.0"}));
    s.answer("account/read", account);
    s.answer("thread/start", thread);
    s.answer(
        "turn/start",
        json!({"turn": {"id": TURN, "status": "inProgress"}}),
    );
    s.line(turn_started(TURN));
    s.events();
    s
}

fn mock_thread() -> Value {
    json!({"thread": {"id": THREAD}, "model": "mock-model", "modelProvider": "mock"})
}

fn priced(subscription: Option<&str>) -> AgentEvent {
    AgentEvent::Usage(Usage {
        tokens: TokenUsage {
            input: 10_000,
            output: 500,
            ..TokenUsage::default()
        },
        model: Some("openai/mock-model".into()),
        subscription: subscription.map(str::to_string),
        ends_turn: false,
    })
}

#[test]
fn usage_is_priced_by_the_threads_model_and_a_chatgpt_login_is_a_subscription() {
    // A provider with a key of its own: Codex says no account.
    let mut s = opened_on(
        json!({"account": null, "userId": null, "requiresOpenaiAuth": false}),
        mock_thread(),
    );
    s.line(usage(TURN, 10_000, 0, 500));
    assert_eq!(s.events(), [priced(None)]);
    // An API key login: paid per call.
    let mut s = opened_on(
        json!({"account": {"type": "apiKey"}, "requiresOpenaiAuth": true}),
        mock_thread(),
    );
    s.line(usage(TURN, 10_000, 0, 500));
    assert_eq!(s.events(), [priced(None)]);
    // A ChatGPT login on a provider that uses it: a subscription.
    let chatgpt = json!({"account": {"type": "chatgpt", "email": "a@b.c", "planType": "plus"},
        "requiresOpenaiAuth": true});
    let mut s = opened_on(chatgpt.clone(), mock_thread());
    s.line(usage(TURN, 10_000, 0, 500));
    assert_eq!(s.events(), [priced(Some(super::state::CHATGPT))]);
    // Logged in with ChatGPT, calling a provider with its own key: paid.
    let mut s = opened_on(
        json!({"account": chatgpt["account"], "requiresOpenaiAuth": false}),
        mock_thread(),
    );
    s.line(usage(TURN, 10_000, 0, 500));
    assert_eq!(s.events(), [priced(None)]);
    // A model rerouted mid-thread prices what comes after.
    let mut s = opened_on(json!({"account": null}), mock_thread());
    s.line(
        json!({"method":"model/rerouted","params":{"threadId":THREAD,"turnId":TURN,
        "fromModel":"mock-model","toModel":"gpt-5-mini","reason":"highRiskCyberActivity"}}),
    );
    s.line(usage(TURN, 1, 0, 1));
    let [AgentEvent::Usage(u)] = &s.events()[..] else {
        panic!("one usage")
    };
    assert_eq!(u.model.as_deref(), Some("openai/gpt-5-mini"));
}

#[test]
fn account_read_is_asked_with_the_thread() {
    let mut s = Session::new(setup());
    s.answer("initialize", json!({"userAgent": "teammated/0.171.0"}));
    assert_eq!(s.count("account/read"), 1);
    assert_eq!(s.count("thread/start"), 1);
    // No answer, or an error, leaves the usage paid.
    s.refuse(
        "account/read",
        "selected workspace missing from routing discovery",
    );
    s.answer("thread/start", mock_thread());
    s.answer("turn/start", json!({"turn": {"id": TURN}}));
    s.events();
    s.line(usage(TURN, 10_000, 0, 500));
    assert_eq!(s.events(), [priced(None)]);
}

#[test]
fn a_usage_limit_is_reached_until_the_full_windows_reset_and_is_no_failure() {
    let mut s = opened_on(
        json!({"account": {"type": "chatgpt", "email": null, "planType": "plus"},
               "requiresOpenaiAuth": true}),
        mock_thread(),
    );
    // As 0.171.0 reported a 429 `usage_limit_reached` with the x-codex-primary-*
    // headers: the windows, the error, then the failed turn.
    s.line(
        json!({"method":"account/rateLimits/updated","params":{"rateLimits":{"limitId":"codex",
        "primary":{"usedPercent":100,"windowDurationMins":300,"resetsAt":1_796_545_006_i64},
        "secondary":{"usedPercent":40,"windowDurationMins":10080,"resetsAt":1_797_000_000_i64},
        "credits":null,"planType":null,"rateLimitReachedType":null}}}),
    );
    let message = "You\u{2019}ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), \
        visit https://chatgpt.com/settings/usage to purchase more credits or try again at 8:16 AM.";
    s.line(
        json!({"method":"error","params":{"error":{"message":message,
        "codexErrorInfo":"usageLimitExceeded","additionalDetails":null},"willRetry":false,
        "threadId":THREAD,"turnId":TURN}}),
    );
    s.line(json!({"method":"turn/completed","params":{"threadId":THREAD,"turn":{"id":TURN,
        "items":[],"status":"failed","error":{"message":message,"codexErrorInfo":"usageLimitExceeded"}}}}));
    assert_eq!(
        s.events(),
        [AgentEvent::LimitReached(Limit {
            account: super::state::CHATGPT.into(),
            model: Some("openai/mock-model".into()),
            until_ms: Some(1_796_545_006_000),
            reason: "usage_limit_reached".into(),
        })]
    );
    // Without windows (a provider that sends no x-codex-* headers) the reset
    // is unknown; the account is the provider's.
    let mut s = opened_on(json!({"account": null}), mock_thread());
    s.line(
        json!({"method":"error","params":{"error":{"message":message,
        "codexErrorInfo":"usageLimitExceeded"},"willRetry":false,"threadId":THREAD,"turnId":TURN}}),
    );
    assert_eq!(
        s.events(),
        [AgentEvent::LimitReached(Limit {
            account: "codex-mock".into(),
            model: Some("openai/mock-model".into()),
            until_ms: None,
            reason: "usage_limit_reached".into(),
        })]
    );
}

#[test]
fn the_full_window_that_resets_last_is_the_limit() {
    use super::state::full_until;
    let w = |used: i64, at: i64| json!({"usedPercent": used, "resetsAt": at});
    assert_eq!(
        full_until(&json!({"primary": w(100, 10), "secondary": w(100, 20)})),
        Some(20_000)
    );
    assert_eq!(
        full_until(&json!({"primary": w(100, 10), "secondary": w(99, 20)})),
        Some(10_000)
    );
    assert_eq!(
        full_until(&json!({"primary": w(50, 10), "secondary": null})),
        None
    );
    assert_eq!(full_until(&json!({"primary": {"usedPercent": 100}})), None);
}
