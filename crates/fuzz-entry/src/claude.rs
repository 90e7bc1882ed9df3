//! Claude Code's stream-json, read by the runtime's state machine
//! (`runtime::claude::stream::Stream`) as its driver feeds it: the first user
//! line written, then each line the CLI prints, with the driver's own calls
//! in between.

use crate::script::{self, Call, Step};
use teammated::runtime::claude::stream::{Action, Stream};
use teammated::runtime::process::Line;
use teammated::runtime::{FIRST_INPUT, PlanAnswer};

/// A session: a setup byte, then the CLI's lines and the driver's calls.
pub fn claude_stream(data: &[u8]) {
    let (setup, steps) = script::read(data);
    let mut stream = Stream::new(setup.policy, setup.plan_first, setup.resuming)
        .with_other_credentials(setup.other_credentials);
    stream.user_line(Some(FIRST_INPUT), "the task");
    let mut tag = FIRST_INPUT;
    for step in steps {
        match step {
            Step::Agent(line) => {
                let Some(Line::Json(value)) = Line::read(line) else {
                    continue;
                };
                for action in stream.on_line(&value) {
                    if let Action::ResumeFailed(why) = action {
                        // The driver starts a new process and writes again
                        // what the old one had not taken.
                        for pending in stream.restart_new(why) {
                            stream.user_line(pending.tag, &pending.text);
                        }
                    }
                }
            }
            Step::Call(Call::Send(text)) => {
                tag += 1;
                stream.user_line(Some(tag), &text);
            }
            Step::Call(Call::Interrupt) => {
                if stream.busy() {
                    stream.interrupt();
                }
            }
            Step::Call(Call::Approve(feedback)) => {
                stream.answer_plan(PlanAnswer::Approved { feedback });
            }
            Step::Call(Call::Reject(feedback)) => {
                stream.answer_plan(PlanAnswer::Rejected { feedback });
            }
        }
    }
}
