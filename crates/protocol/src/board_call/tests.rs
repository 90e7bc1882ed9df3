use super::*;

const FRONTS: [Front; 4] = [
    Front::McpMember,
    Front::McpOwn,
    Front::Teammate,
    Front::Lead,
];

fn parse(tool: &str, arguments: Value) -> Result<BoardCall, BadCall> {
    BoardCall::parse(&MemberCall {
        tool: tool.into(),
        arguments,
    })
}

/// Reads `tool(arguments)` as `front` does; the error's words, or `None`.
fn refusal(front: Front, tool: &str, arguments: &Value) -> Option<String> {
    let read = match front {
        Front::McpMember | Front::McpOwn => parse(tool, arguments.clone()).map(|_| ()),
        Front::Teammate => TeammateCall::read(tool, arguments).map(|_| ()),
        Front::Lead => LeadCall::read(tool, arguments).map(|_| ()),
    };
    read.err().map(|e| e.0)
}

#[test]
fn every_call_reads_back_from_its_wire_form() {
    let calls = [
        BoardCall::ListTasks { status: None },
        BoardCall::ListTasks {
            status: Some(TaskStatus::InProgress),
        },
        BoardCall::GetTask { id: 3, claim: true },
        BoardCall::CreateTask(NewTask {
            subject: "s".into(),
            description: "d".into(),
            blocked_by: vec![1, 2],
            priority: -1,
            role: Some("dev".into()),
            require_plan: true,
            checks: vec!["make test".into()],
            no_worktree: false,
            review: false,
        }),
        BoardCall::SendMessage {
            to: "lead".into(),
            text: "hi".into(),
        },
        BoardCall::CompleteTask {
            task: Some(4),
            result: "done".into(),
        },
        BoardCall::FailTask {
            task: None,
            reason: "no".into(),
        },
        BoardCall::SubmitPlan {
            task: Some(2),
            plan: "1. x".into(),
        },
    ];
    for call in calls {
        assert_eq!(BoardCall::parse(&call.to_call()), Ok(call.clone()));
    }
    assert_eq!(BOARD_TOOLS.len(), 7);
}

#[test]
fn lenient_where_the_meaning_is_plain() {
    assert_eq!(
        parse("get_task", json!({"id": "#7"})),
        Ok(BoardCall::GetTask {
            id: 7,
            claim: false
        })
    );
    assert_eq!(
        parse("list_tasks", Value::Null),
        Ok(BoardCall::ListTasks { status: None })
    );
    assert_eq!(
        parse("list_tasks", json!({"status": "In-Progress"})),
        Ok(BoardCall::ListTasks {
            status: Some(TaskStatus::InProgress)
        })
    );
    let Ok(BoardCall::CreateTask(t)) = parse(
        "create_task",
        json!({"subject": "x", "checks": "cargo test", "blocked_by": 2, "role": " "}),
    ) else {
        panic!("a task");
    };
    assert_eq!(
        (t.checks, t.blocked_by, t.role),
        (vec!["cargo test".to_string()], vec![2], None)
    );
}

#[test]
fn refusals_say_what_the_tool_takes() {
    let cases = [
        (
            "make_coffee",
            json!({}),
            "unknown board tool 'make_coffee'; the tools are: list_tasks",
        ),
        ("list_tasks", json!([1]), "must be a JSON object"),
        (
            "send_message",
            json!({"to": "bob", "content": "hi"}),
            "send_message takes no argument 'content'; it takes: to, text",
        ),
        (
            "complete_task",
            json!({}),
            "complete_task needs 'result': what you did",
        ),
        (
            "fail_task",
            json!({"reason": "  "}),
            "'reason' of fail_task is empty",
        ),
        ("get_task", json!({"id": 0}), "must be a task id"),
        (
            "get_task",
            json!({"id": 1, "claim": "yes"}),
            "true or false",
        ),
        (
            "list_tasks",
            json!({"status": "done"}),
            "unknown status 'done'",
        ),
        (
            "create_task",
            json!({"subject": "x", "checks": [1]}),
            "'checks' of create_task must be a list of shell commands, not 1",
        ),
        (
            "create_task",
            json!({"subject": "x", "checks": ["t"], "no_worktree": true}),
            "drop one of them",
        ),
    ];
    for (tool, args, want) in cases {
        let err = parse(tool, args.clone()).expect_err(tool);
        assert!(err.0.contains(want), "{tool} {args}: {err}");
    }
}

/// A bad call of a tool that several front ends offer is refused by each
/// with the same words.
#[test]
fn the_same_bad_call_gets_the_same_words_wherever_it_is_read() {
    let cases = [
        ("get_task", json!({"id": "three"})),
        ("get_task", json!({})),
        ("list_tasks", json!({"state": "pending"})),
        ("list_tasks", json!({"status": "done"})),
        ("create_task", json!({"subject": " "})),
        ("create_task", json!({"subject": "x", "blocked_by": ["a"]})),
        (
            "create_task",
            json!({"subject": "x", "require_plan": "yes"}),
        ),
        ("complete_task", json!({"result": 3})),
        ("submit_plan", json!("a plan")),
    ];
    for (tool, args) in cases {
        let words: Vec<(Front, String)> = FRONTS
            .iter()
            .filter(|f| f.specs().iter().any(|s| s.name == tool))
            .map(|f| (*f, refusal(*f, tool, &args).expect("refused")))
            .collect();
        assert!(words.len() >= 2, "{tool}: offered by one front end only");
        assert!(
            words.iter().all(|(_, w)| *w == words[0].1),
            "{tool} {args}: {words:#?}"
        );
    }
}

/// Every property a schema offers is read, and every required one is
/// required by the reader too, whose refusal names it.
#[test]
fn the_schemas_say_what_the_readers_read() {
    let sample = |schema: &Value| -> Value {
        match schema["type"].as_str() {
            Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("array") if schema["items"]["type"] == "integer" => json!([1]),
            Some("array") => json!(["x"]),
            _ => match schema["enum"].get(0) {
                Some(first) => first.clone(),
                None => json!("x"),
            },
        }
    };
    for front in FRONTS {
        for spec in front.specs() {
            let name = spec.name.as_str();
            let schema = &spec.input_schema;
            let props = schema["properties"].as_object().expect("properties");
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut all = Map::new();
            for (key, prop) in props {
                // no_worktree and checks together are refused, and rightly.
                if key != "no_worktree" {
                    all.insert(key.clone(), sample(prop));
                }
            }
            if let Some(e) = refusal(front, name, &Value::Object(all.clone())) {
                panic!("{front:?} {name}: every property: {e}");
            }
            for key in &required {
                let mut without = all.clone();
                without.remove(*key);
                let e = refusal(front, name, &Value::Object(without))
                    .unwrap_or_else(|| panic!("{front:?} {name} without {key}"));
                assert!(e.contains(key), "{front:?} {name} without {key}: {e}");
            }
        }
    }
}

#[test]
fn every_front_ends_tools_are_unique_object_schemas() {
    for front in FRONTS {
        let specs = front.specs();
        let mut names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), specs.len(), "{front:?}: a name twice");
        for s in &specs {
            assert!(!s.description.is_empty(), "{front:?} {}", s.name);
            assert_eq!(s.input_schema["type"], "object", "{front:?} {}", s.name);
        }
    }
    let mcp: Vec<String> = Front::McpOwn.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(mcp, BOARD_TOOLS);
}

#[test]
fn the_loops_own_tools_read_into_their_calls() {
    assert_eq!(
        TeammateCall::read("claim_task", &json!({"id": "#4"})),
        Ok(TeammateCall::ClaimTask { id: 4 })
    );
    assert_eq!(
        TeammateCall::read("send_message", &json!({"to": "bob", "content": "hi"})),
        Ok(TeammateCall::Board(BoardCall::SendMessage {
            to: "bob".into(),
            text: "hi".into()
        }))
    );
    assert_eq!(
        TeammateCall::read("respond_shutdown", &json!({"approve": true, "note": ""})),
        Ok(TeammateCall::RespondShutdown {
            approve: true,
            note: String::new()
        })
    );
    assert_eq!(
        TeammateCall::read("idle", &Value::Null),
        Ok(TeammateCall::Idle)
    );
    assert_eq!(
        LeadCall::read("add_dependency", &json!({"id": 3, "on": 1})),
        Ok(LeadCall::AddDependency(3, vec![1]))
    );
    assert_eq!(
        LeadCall::read(
            "review_plan",
            &json!({"request": "#2", "approve": false, "feedback": "no"})
        ),
        Ok(LeadCall::ReviewPlan {
            request: 2,
            approve: false,
            feedback: Some("no".into())
        })
    );
    assert_eq!(
        LeadCall::read("review_plan", &json!({"request": "r7", "approve": true})),
        Ok(LeadCall::ReviewPlan {
            request: 7,
            approve: true,
            feedback: None
        })
    );
    let refused = |r: Result<LeadCall, BadCall>| r.expect_err("refused").0;
    assert!(
        refused(LeadCall::read(
            "add_dependency",
            &json!({"id": 3, "on": []})
        ))
        .contains("add_dependency needs 'on'")
    );
    // The lead is not offered the tools that end a held task.
    assert!(
        refused(LeadCall::read("complete_task", &json!({"result": "x"})))
            .starts_with("unknown board tool 'complete_task'")
    );
    // The native create_task reads the lead's checks, which its schema leaves out.
    let Ok(TeammateCall::Board(BoardCall::CreateTask(t))) =
        TeammateCall::read("create_task", &json!({"subject": "x", "checks": ["make"]}))
    else {
        panic!("a task");
    };
    assert_eq!(t.checks, ["make"]);
}
