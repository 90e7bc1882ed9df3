//! How a fuzz input for a line protocol is laid out, so that the fuzzer can
//! reach the states a driver's own calls lead to (a turn started, a plan held
//! for the lead) and not only those the agent's lines lead to.
//!
//! An input is lines. The first byte of the input, when there is one, chooses
//! the session's setup ([`Setup`]). Each line that starts with `!` is the
//! driver's own call ([`Call`]); every other line is what the agent printed,
//! handed to `teammated::runtime::process::Line::read` as the process reader
//! does. An agent line starting with `!` is not JSON, so the drivers skip it
//! anyway: taking such lines for calls hides nothing from the parsers.

use teamboard_protocol::AgentPolicy;

/// The setup chosen by the first byte's bits.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub policy: AgentPolicy,
    pub plan_first: bool,
    pub resuming: bool,
    pub other_credentials: bool,
}

impl Setup {
    fn of(byte: u8) -> Setup {
        Setup {
            policy: if byte & 1 == 0 {
                AgentPolicy::Workspace
            } else {
                AgentPolicy::ReadOnly
            },
            plan_first: byte & 2 != 0,
            resuming: byte & 4 != 0,
            other_credentials: byte & 8 != 0,
        }
    }
}

/// One step of a session.
#[derive(Debug, Clone, PartialEq)]
pub enum Step<'a> {
    /// A line from the agent's stdout, its newline included when it had one.
    Agent(&'a [u8]),
    Call(Call),
}

/// A call of the driver's own, from a `!` line.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    /// `!send TEXT`: input from the work loop.
    Send(String),
    /// `!interrupt`: a stop of the running turn.
    Interrupt,
    /// `!approve TEXT`, `!reject TEXT`: the lead's decision on a plan.
    Approve(String),
    Reject(String),
}

/// Splits an input into its setup and steps.
pub fn read(data: &[u8]) -> (Setup, Vec<Step<'_>>) {
    let Some((&first, rest)) = data.split_first() else {
        return (Setup::of(0), Vec::new());
    };
    let steps = rest
        .split_inclusive(|b| *b == b'\n')
        .map(|line| match line.strip_prefix(b"!") {
            Some(call) => Step::Call(call_of(call)),
            None => Step::Agent(line),
        })
        .collect();
    (Setup::of(first), steps)
}

fn call_of(line: &[u8]) -> Call {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    let (verb, arg) = text.split_once(' ').unwrap_or((text, ""));
    match verb {
        "interrupt" => Call::Interrupt,
        "approve" => Call::Approve(arg.to_string()),
        "reject" => Call::Reject(arg.to_string()),
        _ => Call::Send(arg.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_byte_is_the_setup_and_bang_lines_are_calls() {
        let (setup, steps) = read(b"\x03{\"a\":1}\n!send hi there\n!interrupt\n!approve ok\ntail");
        assert_eq!(setup.policy, AgentPolicy::ReadOnly);
        assert!(setup.plan_first && !setup.resuming);
        assert_eq!(
            steps,
            [
                Step::Agent(b"{\"a\":1}\n"),
                Step::Call(Call::Send("hi there".into())),
                Step::Call(Call::Interrupt),
                Step::Call(Call::Approve("ok".into())),
                Step::Agent(b"tail"),
            ]
        );
    }
}
