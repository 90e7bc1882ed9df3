//! Codex's app-server messages, read by the runtime's session state machine
//! (`runtime::codex::state::Core`) as its actor feeds it: `begin`, then each
//! line Codex prints, with the actor's own calls in between.

use crate::script::{self, Call, Step};
use std::path::PathBuf;
use teammated::runtime::PlanAnswer;
use teammated::runtime::codex::state::{Core, Setup};
use teammated::runtime::process::Line;

/// A session: a setup byte, then Codex's lines and the actor's calls.
pub fn codex_app_server(data: &[u8]) {
    let (setup, steps) = script::read(data);
    let mut core = Core::new(Setup {
        cwd: PathBuf::from("/tmp/ws"),
        identity: "You are ann.".to_string(),
        prompt: "the task".to_string(),
        resume: setup.resuming.then(|| "thr_1".to_string()),
        model: setup.other_credentials.then(|| "gpt-5-codex".to_string()),
        mcp: None,
        policy: setup.policy,
        plan_first: setup.plan_first,
        max_rounds: 3,
    });
    core.begin();
    let mut tag = 0;
    for step in steps {
        match step {
            Step::Agent(line) => {
                if let Some(Line::Json(value)) = Line::read(line) {
                    core.on_line(value);
                }
            }
            Step::Call(Call::Send(text)) => {
                tag += 1;
                core.send(tag, &text);
            }
            Step::Call(Call::Interrupt) => {
                if !core.turn_over() {
                    core.interrupt();
                }
            }
            Step::Call(Call::Approve(feedback)) => {
                core.answer_plan(PlanAnswer::Approved { feedback });
            }
            Step::Call(Call::Reject(feedback)) => {
                core.answer_plan(PlanAnswer::Rejected { feedback });
            }
        }
    }
}
