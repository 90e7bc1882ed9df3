//! The mapping, on lines as Claude Code 2.1.332 printed them (trimmed of fields
//! the mapping does not read), in the orders it printed them.

use super::*;
use crate::runtime::{AgentEvent, AgentPolicy, FIRST_INPUT, Limit, PlanAnswer, Usage};
use serde_json::{Value, json};
use teamboard_protocol::TokenUsage;

const SID: &str = "4ce138cf-1111-4111-8111-111111111111";

fn init() -> Value {
    json!({"type":"system","subtype":"init","cwd":"/tmp/ws","session_id":SID,"tools":["Task","Bash"],
           "mcp_servers":[],"model":"claude-opus-5-5","permissionMode":"default",
           "apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.332"})
}

fn echo(text: &str) -> Value {
    json!({"type":"user","message":{"role":"user","content":text},"session_id":SID,
           "parent_tool_use_id":null,"isReplay":true})
}

fn assistant(content: Value) -> Value {
    json!({"type":"assistant","message":{"id":"msg_mock_0002","role":"assistant","content":content,
           "usage":{"input_tokens":100,"output_tokens":1}},"parent_tool_use_id":null,"session_id":SID})
}

fn tool_result() -> Value {
    json!({"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_0001",
           "type":"tool_result","content":"hello-from-bash","is_error":false}]},"session_id":SID,
           "tool_use_result":{"stdout":"hello-from-bash","stderr":"","interrupted":false}})
}

fn success(text: &str) -> Value {
    json!({"type":"result","subtype":"success","is_error":false,"num_turns":2,"result":text,
           "stop_reason":"end_turn","terminal_reason":"completed","session_id":SID,
           "usage":{"input_tokens":200,"output_tokens":40,"cache_creation_input_tokens":5,
                    "cache_read_input_tokens":7},
           "permission_denials":[],"result_index":0,"queued_turn_count":0})
}

fn can_use(id: &str, tool: &str, input: Value) -> Value {
    json!({"type":"control_request","request_id":id,"request":{"subtype":"can_use_tool",
           "tool_name":tool,"display_name":tool,"input":input,"tool_use_id":"toolu_0003"}})
}

/// A turn's `result.usage`, where its calls reported none of it, as priced
/// by the model `system/init` named.
fn usage() -> AgentEvent {
    AgentEvent::Usage(Usage {
        tokens: TokenUsage {
            input: 200,
            output: 40,
            cache_read: 7,
            cache_write: 5,
        },
        model: Some("anthropic/claude-opus-5-5".into()),
        subscription: None,
        ends_turn: true,
    })
}

/// The raw start of a model call (`--include-partial-messages`), as the CLI
/// printed it: the mock's model and its input.
fn message_start(id: &str, input: u64) -> Value {
    json!({"type":"stream_event","event":{"type":"message_start","message":{"id":id,
           "type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],
           "stop_reason":null,"usage":{"input_tokens":input,"output_tokens":1,
           "cache_creation_input_tokens":0,"cache_read_input_tokens":0}}},
           "session_id":SID,"parent_tool_use_id":null})
}

/// The raw end of a model call: its final output count.
fn message_delta(output: u64) -> Value {
    json!({"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use",
           "stop_sequence":null},"usage":{"output_tokens":output}},"session_id":SID,
           "parent_tool_use_id":null})
}

/// One model call's usage, as the call reported it.
fn call_usage(input: u64, output: u64, subscription: Option<&str>) -> AgentEvent {
    AgentEvent::Usage(Usage {
        tokens: TokenUsage {
            input,
            output,
            ..TokenUsage::default()
        },
        model: Some("anthropic/claude-sonnet-4-5".into()),
        subscription: subscription.map(str::to_string),
        ends_turn: false,
    })
}

/// The usage of a call that ended the turn.
fn ending_call(input: u64, output: u64) -> AgentEvent {
    let tokens = TokenUsage {
        input,
        output,
        ..TokenUsage::default()
    };
    AgentEvent::Usage(Usage {
        tokens,
        model: Some("anthropic/claude-sonnet-4-5".into()),
        subscription: None,
        ends_turn: true,
    })
}

fn emitted(actions: Vec<Action>) -> Vec<AgentEvent> {
    actions
        .into_iter()
        .map(|a| match a {
            Action::Emit(e) => e,
            other => panic!("not an event: {other:?}"),
        })
        .collect()
}

/// The single control response among `actions`: (request id, its response).
fn answer(actions: &[Action]) -> (String, Value) {
    let [Action::Write(line)] = actions else {
        panic!("not one line to write: {actions:?}")
    };
    assert_eq!(line["type"], "control_response", "{line}");
    (
        line["response"]["request_id"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        line["response"]["response"].clone(),
    )
}

#[test]
fn a_turn_with_a_tool_call_ends_in_the_final_answer_with_its_usage() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    let first = s.user_line(Some(FIRST_INPUT), "say hello with bash");
    assert_eq!(
        first,
        json!({"type":"user","message":{"role":"user","content":"say hello with bash"}})
    );
    assert!(s.busy());
    let mut events = Vec::new();
    for line in [
        init(),
        echo("say hello with bash"),
        assistant(json!([{"type":"text","text":"I'll run a command."}])),
        assistant(json!([{"type":"tool_use","id":"toolu_0001","name":"Bash",
                          "input":{"command":"echo hello-from-bash"}}])),
        tool_result(),
        assistant(json!([{"type":"text","text":"DONE after tool."}])),
        json!({"type":"system","subtype":"status","permissionMode":"default"}),
        success("DONE after tool."),
    ] {
        events.extend(emitted(s.on_line(&line)));
    }
    assert_eq!(
        events,
        [
            AgentEvent::Session {
                id: SID.into(),
                resumed: false,
                why_new: None
            },
            // The first line is in the conversation: the messages it carries
            // can be acknowledged.
            AgentEvent::Delivered(FIRST_INPUT),
            AgentEvent::Said("I'll run a command.".into()),
            AgentEvent::ToolCall {
                name: "Bash".into(),
                input: r#"{"command":"echo hello-from-bash"}"#.into()
            },
            AgentEvent::Said("DONE after tool.".into()),
            usage(),
            AgentEvent::Idle {
                answer: "DONE after tool.".into()
            },
        ]
    );
    assert!(!s.busy());
    // Every turn starts with an init; the session opens once.
    assert!(s.on_line(&init()).is_empty());
}

#[test]
fn a_message_queued_behind_a_streaming_reply_makes_the_first_result_a_turn_end() {
    // As printed when the second line was written while the model streamed its
    // first reply without tools: the second line is echoed only when its own
    // turn starts, after the first result.
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(Some(FIRST_INPUT), "hello");
    s.user_line(Some(1), "second msg");
    assert!(emitted(s.on_line(&init())).len() == 1);
    assert_eq!(
        emitted(s.on_line(&echo("hello"))),
        [AgentEvent::Delivered(FIRST_INPUT)]
    );
    assert!(
        emitted(s.on_line(&assistant(json!([{"type":"text","text":"slow answer"}])))).len() == 1
    );
    // Not the final answer: "second msg" is still to come.
    assert_eq!(
        emitted(s.on_line(&success("slow answer"))),
        [
            usage(),
            AgentEvent::TurnEnded {
                answer: "slow answer".into()
            }
        ]
    );
    assert!(s.busy());
    assert!(s.on_line(&init()).is_empty());
    assert_eq!(
        emitted(s.on_line(&echo("second msg"))),
        [AgentEvent::Delivered(1)]
    );
    s.on_line(&assistant(
        json!([{"type":"text","text":"answer to: second msg"}]),
    ));
    assert_eq!(
        emitted(s.on_line(&success("answer to: second msg"))),
        [
            usage(),
            AgentEvent::Idle {
                answer: "answer to: second msg".into()
            }
        ]
    );
}

#[test]
fn a_message_steered_into_a_running_tool_turn_is_delivered_before_the_one_answer() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(None, "do SLOWTOOL");
    s.on_line(&init());
    s.on_line(&echo("do SLOWTOOL"));
    s.on_line(&assistant(
        json!([{"type":"tool_use","id":"toolu_1","name":"Bash",
                                  "input":{"command":"sleep 3"}}]),
    ));
    s.user_line(Some(1), "steer msg");
    s.user_line(Some(2), "and another");
    for line in [
        json!({"type":"system","subtype":"task_started","session_id":SID}),
        json!({"type":"system","subtype":"task_notification","status":"completed","session_id":SID}),
        tool_result(),
    ] {
        assert!(s.on_line(&line).is_empty());
    }
    assert_eq!(
        emitted(s.on_line(&echo("steer msg"))),
        [AgentEvent::Delivered(1)]
    );
    assert_eq!(
        emitted(s.on_line(&echo("and another"))),
        [AgentEvent::Delivered(2)]
    );
    s.on_line(&assistant(
        json!([{"type":"text","text":"DONE after tool"}]),
    ));
    let events = emitted(s.on_line(&success("DONE after tool")));
    assert_eq!(
        events.last(),
        Some(&AgentEvent::Idle {
            answer: "DONE after tool".into()
        })
    );
}

#[test]
fn an_api_error_is_a_failure_even_though_its_subtype_says_success() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(None, "x");
    s.on_line(&init());
    let line = json!({"type":"result","subtype":"success","is_error":true,"num_turns":1,
        "result":"API Error: 500 mock boom. This is a server-side issue.","stop_reason":"stop_sequence",
        "terminal_reason":"api_error","api_error_status":500,"session_id":SID,
        "usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}});
    let actions = s.on_line(&line);
    // No usage: the call used none.
    assert_eq!(
        actions,
        [Action::Fail(
            "claude ended the turn with an error (api_error): API Error: 500 mock boom. \
                 This is a server-side issue."
                .into()
        )]
    );
    assert!(!s.busy());
}

#[test]
fn the_turn_limit_is_a_failure_with_its_errors() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(None, "x");
    s.on_line(&init());
    let line = json!({"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":2,
        "terminal_reason":"max_turns","errors":["Reached maximum number of turns (1)"],"session_id":SID,
        "usage":{"input_tokens":10,"output_tokens":2}});
    let actions = s.on_line(&line);
    assert_eq!(
        actions.last(),
        Some(&Action::Fail(
            "claude ended the turn with an error (max_turns): Reached maximum number of turns (1)"
                .into()
        ))
    );
    // An error subtype fails the turn even where `is_error` is missing.
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(None, "x");
    s.on_line(&init());
    let actions = s.on_line(&json!({"type":"result","subtype":"error_during_execution"}));
    assert_eq!(
        actions,
        [Action::Fail(
            "claude ended the turn with an error (error_during_execution)".into()
        )]
    );
}

#[test]
fn a_session_that_cannot_be_resumed_is_replaced_and_the_first_session_says_why() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, true);
    s.user_line(None, "back on it");
    assert!(s.resuming());
    // As printed for `--resume` of an id the CLI does not know: no init.
    let line = json!({"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,
        "errors":["No conversation found with session ID: 99999999-1111-4111-8111-111111111111"],
        "session_id":"99999999-1111-4111-8111-111111111111"});
    let actions = s.on_line(&line);
    let [Action::ResumeFailed(why)] = actions.as_slice() else {
        panic!("not a failed resume")
    };
    assert!(why.contains("No conversation found"), "{why}");
    let pending = s.restart_new(why.clone());
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].tag, None);
    assert_eq!(pending[0].text, "back on it");
    assert!(!s.resuming());
    s.user_line(None, "back on it");
    assert_eq!(
        emitted(s.on_line(&init())),
        [AgentEvent::Session {
            id: SID.into(),
            resumed: false,
            why_new: Some(why.clone())
        }]
    );
}

#[test]
fn a_resumed_session_says_so() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, true);
    s.user_line(None, "back on it");
    assert_eq!(
        emitted(s.on_line(&init())),
        [AgentEvent::Session {
            id: SID.into(),
            resumed: true,
            why_new: None
        }]
    );
    assert!(!s.resuming());
    // An error after the session opened is the turn's, not the resume's.
    let line = json!({"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","result":"API Error"});
    assert!(matches!(s.on_line(&line).as_slice(), [Action::Fail(_)]));
}

#[test]
fn the_workspace_policy_allows_every_tool_with_its_input() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    let input = json!({"command":"touch made.txt","description":"touch"});
    let (id, response) = answer(&s.on_line(&can_use("a37a8e2b", "Bash", input.clone())));
    assert_eq!(id, "a37a8e2b");
    assert_eq!(response, json!({"behavior":"allow","updatedInput":input}));
}

#[test]
fn the_read_only_policy_allows_reads_and_board_tools_only() {
    let mut s = Stream::new(AgentPolicy::ReadOnly, false, false);
    for tool in ["Bash", "Write", "Edit", "WebFetch"] {
        let (_, response) = answer(&s.on_line(&can_use("r", tool, json!({}))));
        assert_eq!(response["behavior"], "deny", "{tool}");
        assert!(
            response["message"].as_str().unwrap().contains("read-only"),
            "{response}"
        );
    }
    for tool in ["Read", "Grep", "Glob", "mcp__teamboard__send_message"] {
        let (_, response) = answer(&s.on_line(&can_use("r", tool, json!({"x":1}))));
        assert_eq!(response["behavior"], "allow", "{tool}");
    }
}

#[test]
fn the_plan_is_held_until_the_lead_approves_and_nothing_else_runs_meanwhile() {
    let mut s = Stream::new(AgentPolicy::Workspace, true, false);
    assert!(s.gate_closed());
    let (_, response) = answer(&s.on_line(&can_use("w1", "Write", json!({"file_path":"/x"}))));
    assert_eq!(response["behavior"], "deny");
    assert!(
        response["message"]
            .as_str()
            .unwrap()
            .contains("until the lead approves"),
        "{response}"
    );
    let input = json!({"plan":"# Plan\n1. echo hello\n2. done\n",
                       "planFilePath":"/tmp/home/.claude/plans/plan-then-do-it.md"});
    let held = s.on_line(&can_use("47b13d90", EXIT_PLAN, input.clone()));
    assert_eq!(
        held,
        [Action::Emit(AgentEvent::PlanProposed(
            "# Plan\n1. echo hello\n2. done\n".into()
        ))]
    );
    let lines = s.answer_plan(PlanAnswer::Approved {
        feedback: String::new(),
    });
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(
        lines[0],
        json!({"type":"control_response","response":{"subtype":"success","request_id":"47b13d90",
               "response":{"behavior":"allow","updatedInput":input}}})
    );
    assert_eq!(lines[1]["type"], "control_request");
    assert_eq!(
        lines[1]["request"],
        json!({"subtype":"set_permission_mode","mode":"default"})
    );
    assert!(!s.gate_closed());
    let (_, response) = answer(&s.on_line(&can_use("b1", "Bash", json!({"command":"touch x"}))));
    assert_eq!(response["behavior"], "allow");
}

#[test]
fn a_rejected_plan_is_denied_with_the_feedback_and_the_gate_stays_closed() {
    let mut s = Stream::new(AgentPolicy::Workspace, true, false);
    s.on_line(&can_use("p1", EXIT_PLAN, json!({"plan":"v1"})));
    let lines = s.answer_plan(PlanAnswer::Rejected {
        feedback: "add tests".into(),
    });
    let [line] = lines.as_slice() else {
        panic!("{lines:?}")
    };
    assert_eq!(line["response"]["request_id"], "p1");
    assert_eq!(line["response"]["response"]["behavior"], "deny");
    assert!(
        line["response"]["response"]["message"]
            .as_str()
            .unwrap()
            .contains("The lead rejected the plan: add tests"),
        "{line}"
    );
    assert!(s.gate_closed());
    // The next proposal is held again.
    assert_eq!(
        s.on_line(&can_use("p2", EXIT_PLAN, json!({"plan":"v2"}))),
        [Action::Emit(AgentEvent::PlanProposed("v2".into()))]
    );
}

#[test]
fn a_decision_on_a_plan_submitted_through_the_board_reaches_the_agent_as_input() {
    // The agent sent its plan with the board's submit_plan and ended its
    // turn: nothing is held, so the decision comes as a user line.
    let mut s = Stream::new(AgentPolicy::Workspace, true, false);
    let lines = s.answer_plan(PlanAnswer::Rejected {
        feedback: "add tests".into(),
    });
    assert_eq!(
        lines,
        [user_value(
            "[Runtime] The lead rejected the plan: add tests\nRevise it and propose it again."
        )]
    );
    assert!(s.gate_closed() && s.busy());
    let lines = s.answer_plan(PlanAnswer::Approved {
        feedback: String::new(),
    });
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["request"]["subtype"], "set_permission_mode");
    assert_eq!(
        lines[1],
        user_value("[Runtime] The lead approved your plan. Carry it out now.")
    );
    assert!(!s.gate_closed());
    // Their echoes deliver nothing anyone waits on.
    assert!(s.on_line(&echo("rejected")).is_empty());
    assert!(s.on_line(&echo("approved")).is_empty());
}

#[test]
fn a_second_proposal_releases_the_first_instead_of_leaving_it_hanging() {
    let mut s = Stream::new(AgentPolicy::Workspace, true, false);
    s.on_line(&can_use("p1", EXIT_PLAN, json!({"plan":"v1"})));
    let actions = s.on_line(&can_use("p2", EXIT_PLAN, json!({"plan":"v2"})));
    assert_eq!(actions.len(), 2, "{actions:?}");
    let (id, response) = answer(&actions[..1]);
    assert_eq!((id.as_str(), &response["behavior"]), ("p1", &json!("deny")));
    let lines = s.answer_plan(PlanAnswer::Approved {
        feedback: String::new(),
    });
    assert_eq!(lines[0]["response"]["request_id"], "p2");
}

#[test]
fn unknown_control_requests_get_an_error_answer_and_answers_to_ours_are_read() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    let actions = s.on_line(&json!({"type":"control_request","request_id":"h1",
        "request":{"subtype":"hook_callback","callback_id":"x"}}));
    let [Action::Write(line)] = actions.as_slice() else {
        panic!("{actions:?}")
    };
    assert_eq!(line["response"]["subtype"], "error");
    assert_eq!(line["response"]["request_id"], "h1");
    assert!(
        s.on_line(
            &json!({"type":"control_response","response":{"subtype":"success",
            "request_id":"teamboard-1","response":{"still_queued":[]}}})
        )
        .is_empty()
    );
}

#[test]
fn interrupts_are_control_requests_with_ids_of_their_own() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    let a = s.interrupt();
    let b = s.interrupt();
    assert_eq!(a["type"], "control_request");
    assert_eq!(a["request"], json!({"subtype":"interrupt"}));
    assert_ne!(a["request_id"], b["request_id"]);
}

#[test]
fn an_echo_nobody_wrote_and_thinking_blocks_emit_nothing() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    assert!(s.on_line(&echo("?")).is_empty());
    assert!(
        s.on_line(&assistant(
            json!([{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"text","text":"  "}])
        ))
        .is_empty()
    );
}

#[test]
fn each_model_call_reports_its_usage_when_it_ends_and_the_result_only_the_rest() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(Some(FIRST_INPUT), "go");
    s.on_line(&init());
    s.on_line(&echo("go"));
    // The start says the input; the `assistant` snapshots repeat it and count
    // for nothing; the delta ends the call with its output.
    assert!(s.on_line(&message_start("msg_1", 10_000)).is_empty());
    s.on_line(&assistant(json!([{"type":"text","text":"step 1"}])));
    s.on_line(&assistant(json!([{"type":"text","text":"step 1 again"}])));
    assert_eq!(
        emitted(s.on_line(&message_delta(500))),
        [call_usage(10_000, 500, None)]
    );
    // A delta of no call (its start was never seen) reports nothing.
    assert!(s.on_line(&message_delta(500)).is_empty());
    s.on_line(&message_start("msg_2", 10_000));
    assert_eq!(
        emitted(s.on_line(&message_delta(500))),
        [call_usage(10_000, 500, None)]
    );
    // A third call is cut off before its delta: the turn's result, which sums
    // all three, reports what the two did not.
    s.on_line(&message_start("msg_3", 10_000));
    let result = json!({"type":"result","subtype":"success","is_error":false,"num_turns":3,
        "result":"done","session_id":SID,"usage":{"input_tokens":30_000,"output_tokens":1_100,
        "cache_creation_input_tokens":0,"cache_read_input_tokens":0}});
    let events = emitted(s.on_line(&result));
    assert_eq!(
        events,
        [
            AgentEvent::Usage(Usage {
                tokens: TokenUsage {
                    input: 10_000,
                    output: 100,
                    ..TokenUsage::default()
                },
                model: Some("anthropic/claude-opus-5-5".into()),
                subscription: None,
                ends_turn: true,
            }),
            AgentEvent::Idle {
                answer: "done".into()
            },
        ]
    );
    // The next turn counts afresh: a result that its calls covered adds
    // nothing. Its call ended the turn, rather than asked for a tool.
    s.user_line(Some(1), "more");
    s.on_line(&echo("more"));
    s.on_line(&message_start("msg_4", 200));
    let mut end = message_delta(40);
    end["event"]["delta"]["stop_reason"] = json!("end_turn");
    assert_eq!(emitted(s.on_line(&end)), [ending_call(200, 40)]);
    let result = json!({"type":"result","subtype":"success","is_error":false,"result":"ok",
        "usage":{"input_tokens":200,"output_tokens":40}});
    assert_eq!(
        emitted(s.on_line(&result)),
        [AgentEvent::Idle {
            answer: "ok".into()
        }]
    );
}

#[test]
fn a_login_without_an_api_key_is_a_subscription_unless_other_credentials_are_set() {
    // Claude Code 2.1.332 says `apiKeySource: none` on a claude.ai login.
    let login = {
        let mut v = init();
        v["apiKeySource"] = json!("none");
        v
    };
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.on_line(&login);
    s.on_line(&message_start("msg_1", 10));
    assert_eq!(
        emitted(s.on_line(&message_delta(5))),
        [call_usage(10, 5, Some(SUBSCRIPTION))]
    );
    // It says the same with a gateway's token or a cloud provider: paid.
    let mut s = Stream::new(AgentPolicy::Workspace, false, false).with_other_credentials(true);
    s.on_line(&login);
    s.on_line(&message_start("msg_1", 10));
    assert_eq!(
        emitted(s.on_line(&message_delta(5))),
        [call_usage(10, 5, None)]
    );
    // And an API key is paid.
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.on_line(&init());
    s.on_line(&message_start("msg_1", 10));
    assert_eq!(
        emitted(s.on_line(&message_delta(5))),
        [call_usage(10, 5, None)]
    );
}

#[test]
fn a_rejected_rate_limit_event_is_a_usage_limit_until_its_reset() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(None, "x");
    let mut login = init();
    login["apiKeySource"] = json!("none");
    s.on_line(&login);
    // As 2.1.332 printed them on a login, after a call and before a 429.
    let allowed = json!({"type":"rate_limit_event","rate_limit_info":{"status":"allowed",
        "isUsingOverage":false},"uuid":"u","session_id":SID});
    assert!(s.on_line(&allowed).is_empty());
    let rejected = json!({"type":"rate_limit_event","rate_limit_info":{"status":"rejected",
        "resetsAt":1_796_544_882,"rateLimitType":"five_hour","isUsingOverage":false,
        "unifiedWindows":{"five_hour":{"utilization":1,"resetsAt":1_796_544_882,
        "status":"rejected"}}},"uuid":"u","session_id":SID});
    assert_eq!(
        emitted(s.on_line(&rejected)),
        [AgentEvent::LimitReached(Limit {
            account: SUBSCRIPTION.into(),
            model: Some("anthropic/claude-opus-5-5".into()),
            until_ms: Some(1_796_544_882_000),
            reason: "five_hour usage limit".into(),
        })]
    );
}

#[test]
fn its_own_spend_cap_ends_the_turn_over_budget_not_failed() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(None, "x");
    s.on_line(&init());
    s.on_line(&message_start("msg_1", 10_000));
    s.on_line(&message_delta(500));
    let line = json!({"type":"result","subtype":"error_max_budget_usd","is_error":true,
        "num_turns":3,"stop_reason":"tool_use","terminal_reason":"budget_exhausted",
        "errors":["Reached maximum budget ($0.12)"],"total_cost_usd":0.15,"session_id":SID,
        "usage":{"input_tokens":10_000,"output_tokens":500}});
    assert_eq!(
        emitted(s.on_line(&line)),
        [AgentEvent::OverBudget(
            "claude ended the turn with an error (budget_exhausted): Reached maximum budget ($0.12)"
                .into()
        )]
    );
    assert!(!s.busy());
}

#[test]
fn a_subagents_calls_streaming_beside_the_sessions_are_counted_apart() {
    let mut s = Stream::new(AgentPolicy::Workspace, false, false);
    s.user_line(None, "x");
    s.on_line(&init());
    let by_task = |mut v: Value| {
        v["parent_tool_use_id"] = json!("toolu_task_1");
        v
    };
    s.on_line(&message_start("msg_main", 1_000));
    s.on_line(&by_task(message_start("msg_sub", 300)));
    assert_eq!(
        emitted(s.on_line(&by_task(message_delta(30)))),
        [call_usage(300, 30, None)]
    );
    assert_eq!(
        emitted(s.on_line(&message_delta(100))),
        [call_usage(1_000, 100, None)]
    );
}
