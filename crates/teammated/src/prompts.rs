//! Fixed texts the runtime puts into the conversation. They live apart from the
//! code that sends them because the scripted model recognises them too.

/// The instruction given with the older part of the conversation.
pub(crate) const SUMMARY_PROMPT: &str = "Summarise the work log above for yourself, so that you can \
     continue the work without it: what the task is, what has been done, what was found, \
     which files changed, and what is left. Be concise and concrete.";

/// What a teammate is told with a task that needs a plan. The scripted model
/// looks for it.
pub(crate) const PLAN_FIRST: &str = "[Runtime] This task needs a plan approved by the lead before \
     you change anything: bash, write_file and edit_file stay closed until then. Look \
     around with read_file and glob, then call submit_plan with your plan; it waits for \
     the lead's decision.";

/// The heading of a compaction's summary, after the identity block that opens the
/// compacted conversation. The scripted model reads no task from what follows it.
pub(crate) const SUMMARY_HEADING: &str = "Summary of the earlier part of this conversation";

/// What the lead runtime writes in front of each kind of team event it puts into the
/// lead's context. The scripted lead reads them back.
pub(crate) mod lead {
    /// A plan a teammate asks the lead to approve: `[Plan request rN from NAME ...]`.
    pub(crate) const PLAN_REQUEST: &str = "[Plan request r";
    /// A plan the person decides (`--review-plans person`), for the lead to know
    /// of only: `[Plan for the person r7 from NAME ...]`.
    pub(crate) const PLAN_FOR_PERSON: &str = "[Plan for the person r";
    /// The board is done: every task completed, failed or cancelled, or behind a
    /// blocker that did not complete.
    pub(crate) const BOARD_DONE: &str = "[Board done]";
    /// A task's outcome, as its teammate reported it.
    pub(crate) const RESULT: &str = "[Result from ";
    /// A teammate's error report.
    pub(crate) const ERROR: &str = "[Error from ";
    /// The digest of idle notifications.
    pub(crate) const IDLE: &str = "[Idle]";

    /// Whether the person's words start the plan: `start` alone, in any case, a final
    /// `.` or `!` allowed. The runtime opens the lead's tools on it and the scripted
    /// lead carries out its plan on it: one rule, or the two would disagree.
    pub(crate) fn says_start(words: &str) -> bool {
        words
            .trim()
            .trim_end_matches(['.', '!'])
            .eq_ignore_ascii_case("start")
    }

    /// The answer to a tool that changes the board or the team before the start.
    pub(crate) const NOT_STARTED: &str = "not yet: the person has not said \"start\". \
     Propose the plan in plain words, end your turn and wait for them to say start; until \
     then only list_tasks, get_task and list_team work.";

    /// The lead's system prompt; `{team}` is replaced.
    pub(crate) const SYSTEM: &str = "You are the lead of team '{team}' on a shared task \
     board. A person tells you what they want. First propose a team plan in plain words: \
     the tasks (small, concrete, each with what done means), their dependencies, which can \
     run in parallel, the roles, which tasks need an approved plan before anyone changes \
     anything, the commands that prove a task done (its checks), and the teammates to spawn. Do not act before the person says \"start\". \
     After \"start\", put the tasks on the board with create_task (blocked_by takes the ids \
     create_task returned) and spawn the teammates with spawn_teammate; they claim ready \
     tasks on their own, so never assign work by message. Team events come to you without \
     asking: results, errors, plan requests (decide each with review_plan: approve a plan \
     that does what the task says and nothing dangerous, reject with feedback otherwise), \
     shutdown answers, and a digest of idle teammates, which needs no answer. Do not poll \
     with list_tasks while you wait: end your turn and events will wake you. When the board \
     is done, summarise the results for the person: what was done, by whom, what failed.";
}

/// What an agent runtime (Claude Code, Codex, an ACP agent) is told.
pub(crate) mod agent {
    /// Who the agent is and how the board works: its system prompt where it takes
    /// one, else the head of its first turn.
    pub(crate) fn identity(name: &str, role: &str, team: &str, worktree: Option<&str>) -> String {
        let place = match worktree {
            Some(line) => format!(" {line}"),
            None => String::new(),
        };
        format!(
            "You are {name}, a teammate with the role '{role}' on team '{team}' of a shared \
             task board (teamboard). You work on one task at a time, in the current directory.{place} \
             The board's tools are the MCP server 'teamboard': list_tasks, get_task, \
             create_task, send_message, complete_task, fail_task and submit_plan. When the \
             task is done, end your turn with a short report of what you did and how you \
             checked it: that answer becomes the task's result. If the task cannot be done, \
             call fail_task with the reason. Messages from the lead and your teammates arrive \
             as user input that starts with [Message #N from NAME]; answer them with \
             send_message when they ask something."
        )
    }

    /// Put in front of the task when its session is resumed.
    pub(crate) const RESUMED: &str = "[Runtime] You are back on this task after an \
         interruption (a restart, or the task coming back to you); the conversation above is \
         yours. Check what is already done, then carry on where you left off.";

    /// The first turn of a conversation about messages alone.
    pub(crate) const MESSAGES_ONLY: &str = "[Runtime] You hold no task right now. Read the \
         messages below and answer with send_message where they ask something; then end \
         your turn.";

    /// Put under a task whose claim needs an approved plan.
    pub(crate) const PLAN_FIRST: &str = "[Runtime] This task needs a plan approved by the \
         lead before you change anything. Look around first, then propose your plan; \
         it goes to the lead, and you carry it out once it is approved.";
}

#[cfg(test)]
mod tests {
    use super::lead::says_start;

    #[test]
    fn start_is_the_word_alone() {
        for yes in ["start", " Start. ", "START!", "start!!"] {
            assert!(says_start(yes), "{yes:?}");
        }
        for no in ["", "start now", "do not start", "restart", "start?"] {
            assert!(!says_start(no), "{no:?}");
        }
    }
}
