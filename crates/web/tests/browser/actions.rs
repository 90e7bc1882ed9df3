//! Changing the board from the page: each through boardd, refusals in words.

use crate::Scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_added_on_the_page_is_on_the_board() {
    let Some(s) = Scenario::start("add_task").await else {
        return;
    };
    let first = s.board.add("Design", "", &[]).await;
    s.fill("[name=add-subject]", "Written on the page").await;
    s.fill("[name=add-description]", "with a description").await;
    s.fill("[name=add-blocked_by]", &format!("#{}", first.id))
        .await;
    s.fill("[name=add-priority]", "3").await;
    s.fill("[name=add-role]", "coder").await;
    s.click("form.action-add button").await;
    s.wait_for("#task-2", "Written on the page").await;
    s.wait_for("#task-2", "blocked by #1").await;
    let task = s.board.task(2).await;
    assert_eq!(task.description, "with a description");
    assert_eq!(task.blocked_by, vec![first.id]);
    assert_eq!(task.priority, 3);
    assert_eq!(task.role.as_deref(), Some("coder"));
    // The form is empty again for the next one.
    let subject = s
        .js("return document.querySelector('[name=add-subject]').value")
        .await;
    assert_eq!(subject, serde_json::json!(""));
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_task_is_edited_on_the_page() {
    let Some(s) = Scenario::start("edit_task").await else {
        return;
    };
    let t = s.board.add("Frist draft", "old words", &[]).await;
    s.click(&format!("#task-{}", t.id)).await;
    s.fill("[name=edit-subject]", "First draft").await;
    s.fill("[name=edit-description]", "new words").await;
    s.fill("[name=edit-priority]", "7").await;
    s.click("form.action-edit button").await;
    s.wait_for(&format!("#task-{}", t.id), "First draft").await;
    s.wait_for("#detail .history", "edited").await;
    let task = s.board.task(t.id).await;
    assert_eq!(
        (
            task.subject.as_str(),
            task.description.as_str(),
            task.priority
        ),
        ("First draft", "new words", 7)
    );
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_cancelled_on_the_page_moves_to_cancelled_and_can_be_retried() {
    let Some(s) = Scenario::start("cancel_and_retry_task").await else {
        return;
    };
    let t = s.board.add("Not needed", "", &[]).await;
    s.click(&format!("#task-{}", t.id)).await;
    s.click("form.action-cancel button").await;
    let cancelled = format!(r#".column[data-status="cancelled"] #task-{}"#, t.id);
    s.wait_for(&cancelled, "Not needed").await;
    assert_eq!(
        s.board.task(t.id).await.status,
        teamboard_protocol::TaskStatus::Cancelled
    );
    s.screenshot_as("cancel_task").await;
    s.click("form.action-retry button").await;
    s.wait_for(
        &format!(r#".column[data-status="pending"] #task-{}"#, t.id),
        "Not needed",
    )
    .await;
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boardd_refusals_are_shown_in_its_words() {
    let Some(s) = Scenario::start("refusal_in_words").await else {
        return;
    };
    s.fill("[name=add-subject]", "Depends on nothing real")
        .await;
    s.fill("[name=add-blocked_by]", "99").await;
    s.click("form.action-add button").await;
    let said = s.wait_for("form.action-add .refusal", "99").await;
    assert!(said.contains("#99"), "{said}");
    // Nothing was added, and what was typed is still there to fix.
    assert!(
        s.board
            .lead
            .list_tasks(None)
            .await
            .expect("list")
            .is_empty()
    );
    let subject = s
        .js("return document.querySelector('[name=add-subject]').value")
        .await;
    assert_eq!(subject, serde_json::json!("Depends on nothing real"));
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claimed_task_cannot_be_edited_and_the_page_says_so() {
    let Some(s) = Scenario::start("edit_refused_once_claimed").await else {
        return;
    };
    let t = s.board.add("Claimed soon", "", &[]).await;
    s.click(&format!("#task-{}", t.id)).await;
    s.fill("[name=edit-subject]", "Too late").await;
    // A teammate claims it while the person types: the form being typed into
    // stays, and boardd refuses the edit in words.
    let bob = teamboard_testkit::teammate(&s.board.daemon.socket, "bob", "dev").await;
    bob.claim_task(t.id).await.expect("claim");
    s.wait_for(&format!("#task-{}", t.id), "bob").await;
    let typed = s
        .js("return document.querySelector('[name=edit-subject]').value")
        .await;
    assert_eq!(typed, serde_json::json!("Too late"));
    s.click("form.action-edit button").await;
    s.wait_for("form.action-edit .refusal", "held by bob").await;
    assert_eq!(s.board.task(t.id).await.subject, "Claimed soon");
    s.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_may_send_only_the_ops_of_its_actions() {
    let Some(s) = Scenario::start("ops_outside_the_table_refused").await else {
        return;
    };
    let answer = s
        .js("return fetch('/api/op', {method: 'POST', headers: {'content-type': 'application/json'}, \
             body: JSON.stringify({op: 'register', args: {role: 'dev'}})}) \
             .then(r => r.json().then(j => [r.status, j.error.message]));")
        .await;
    assert_eq!(answer[0], serde_json::json!(403), "{answer}");
    assert!(s.board.lead.team().await.expect("team").is_empty());
    s.finish().await;
}
