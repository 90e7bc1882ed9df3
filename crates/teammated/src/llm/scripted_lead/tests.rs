use super::*;

const GOAL: &str = "Refactor.\n````plan\nteammate ada role=dev\ntask a: A\n    ```sh\n    echo a\n    ```\ntask b after=a plan: B\ncheck sh test.sh\ncheck test -f b\ntask c after=b no-worktree: C\n````";

fn user(text: &str) -> ChatMessage {
    ChatMessage::user_text(text)
}

fn results(pairs: &[(&str, &str, bool)]) -> ChatMessage {
    ChatMessage {
        role: Role::User,
        content: pairs
            .iter()
            .map(|(id, content, is_error)| Block::ToolResult {
                tool_use_id: id.to_string(),
                content: content.to_string(),
                is_error: *is_error,
            })
            .collect(),
    }
}

fn uses(blocks: &[Block]) -> Vec<(String, String, Value)> {
    blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

fn text(blocks: &[Block]) -> String {
    ChatMessage {
        role: Role::Assistant,
        content: blocks.to_vec(),
    }
    .joined_text()
}

#[test]
fn a_plan_is_proposed_then_started_in_dependency_rounds() {
    let mut msgs = vec![user(GOAL)];
    let proposal = next_step(&msgs);
    assert!(uses(&proposal).is_empty());
    let said = text(&proposal);
    assert!(
        said.contains("3 task(s), 1 teammate(s)") && said.contains("B (after a)"),
        "{said}"
    );
    assert!(said.contains("needs an approved plan") && said.contains("\"start\""));
    assert!(
        said.contains("completes only when `sh test.sh`, `test -f b` pass")
            && said.contains("C (after b), works without a worktree"),
        "{said}"
    );
    msgs.push(ChatMessage::assistant_text(said));
    msgs.push(user("start"));

    // Round 1: only the task without blockers.
    let round = next_step(&msgs);
    let calls = uses(&round);
    assert_eq!(calls.len(), 1, "{round:?}");
    assert_eq!(calls[0].1, "create_task");
    assert_eq!(calls[0].2["subject"], "A");
    assert_eq!(calls[0].2["description"], "```sh\necho a\n```");
    assert_eq!(calls[0].2.get("checks"), None, "no checks, no field");
    assert_eq!(calls[0].2.get("no_worktree"), None);
    msgs.push(ChatMessage {
        role: Role::Assistant,
        content: round,
    });
    msgs.push(results(&[(&calls[0].0, "created task #7: A", false)]));

    // Round 2: B, blocked by the id round 1 got, needing a plan.
    let round = next_step(&msgs);
    let calls = uses(&round);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].2["subject"], "B");
    assert_eq!(calls[0].2["blocked_by"], json!([7]));
    assert_eq!(calls[0].2["require_plan"], true);
    assert_eq!(calls[0].2["checks"], json!(["sh test.sh", "test -f b"]));
    msgs.push(ChatMessage {
        role: Role::Assistant,
        content: round,
    });
    // An event fed in between rounds does not derail the start.
    let mut res = results(&[(&calls[0].0, "created task #8: B (blocked by #7)", false)]);
    res.content.push(Block::text("[Idle] ada".to_string()));
    msgs.push(res);

    // Round 3: C, after B, without a worktree.
    let round = next_step(&msgs);
    let calls = uses(&round);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].2["subject"], "C");
    assert_eq!(calls[0].2["blocked_by"], json!([8]));
    assert_eq!(calls[0].2["no_worktree"], true);
    assert_eq!(calls[0].2.get("checks"), None);
    msgs.push(ChatMessage {
        role: Role::Assistant,
        content: round,
    });
    msgs.push(results(&[(
        &calls[0].0,
        "created task #9: C (blocked by #8)",
        false,
    )]));

    // Round 4: the team.
    let round = next_step(&msgs);
    let calls = uses(&round);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].1, "spawn_teammate");
    assert_eq!(calls[0].2, json!({"name": "ada", "role": "dev"}));
    msgs.push(ChatMessage {
        role: Role::Assistant,
        content: round,
    });
    msgs.push(results(&[(&calls[0].0, "spawned ada", false)]));

    // Then it says so, and the start is over.
    let end = next_step(&msgs);
    assert!(uses(&end).is_empty());
    assert!(
        text(&end).starts_with("Started: 3 task(s)"),
        "{}",
        text(&end)
    );
    msgs.push(ChatMessage {
        role: Role::Assistant,
        content: end,
    });
    msgs.push(user("[Result from ada] #7 A: completed by ada"));
    let noted = next_step(&msgs);
    assert!(uses(&noted).is_empty(), "a result starts nothing");
}

#[test]
fn plans_are_approved_unless_they_delete_recursively() {
    let msgs = vec![user(
        "[Plan request r3 from ada for task #8] Decide it with review_plan.\necho fine\n[Plan request r4 from cy for task #9] Decide it with review_plan.\nrm -rf build\n[Idle] brook",
    )];
    let step = next_step(&msgs);
    let calls = uses(&step);
    assert_eq!(calls.len(), 2, "{step:?}");
    assert_eq!(calls[0].2["request"], 3);
    assert_eq!(calls[0].2["approve"], true);
    assert_eq!(calls[1].2["request"], 4);
    assert_eq!(calls[1].2["approve"], false);
    assert!(calls[1].2["feedback"].as_str().unwrap().contains("rm -rf"));
    // Once reviewed, not again.
    let mut msgs = msgs;
    msgs.push(ChatMessage {
        role: Role::Assistant,
        content: step,
    });
    msgs.push(results(&[
        (&calls[0].0, "plan request r3 from ada is approved", false),
        (&calls[1].0, "plan request r4 from cy is rejected", false),
    ]));
    let after = next_step(&msgs);
    assert!(uses(&after).is_empty());
    assert!(text(&after).contains("is approved"), "{}", text(&after));
}

#[test]
fn a_failed_creation_stops_the_start_and_says_why() {
    let mut msgs = vec![
        user(GOAL),
        ChatMessage::assistant_text("plan"),
        user("start"),
    ];
    let round = next_step(&msgs);
    let id = uses(&round)[0].0.clone();
    msgs.push(ChatMessage {
        role: Role::Assistant,
        content: round,
    });
    msgs.push(results(&[(&id, "boardd refused: no", true)]));
    let end = next_step(&msgs);
    assert!(uses(&end).is_empty());
    assert!(
        text(&end).contains("create_task failed: boardd refused"),
        "{}",
        text(&end)
    );
}

#[test]
fn the_summary_comes_from_the_board_report() {
    let msgs = vec![user(
        "[Result from ada] #1 A: completed by ada\n[Board done] 1 task(s): 1 completed, 0 failed, 0 cancelled.\n#1 A: completed by ada — a\nSummarise the results for the person.",
    )];
    let said = text(&next_step(&msgs));
    assert!(
        said.starts_with("Summary of the team's work: 1 task(s): 1 completed"),
        "{said}"
    );
    assert!(said.contains("#1 A: completed by ada — a") && !said.contains("Summarise"));
}

#[test]
fn start_without_a_plan_or_words_without_one_get_help() {
    let said = text(&next_step(&[user("start")]));
    assert!(said.contains("no plan to start"), "{said}");
    let said = text(&next_step(&[user("hello")]));
    assert!(
        said.contains("not a model") && said.contains("````plan"),
        "{said}"
    );
}
