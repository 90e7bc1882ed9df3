//! The team plan format the scripted lead reads from the person's message.
//!
//! A plan is a fenced block whose info string is `plan`. Task descriptions may hold
//! ```` ```sh ```` blocks of their own (the scripted teammates run them), so the plan's
//! fence is longer: it closes only at a line of exactly its own backticks.
//!
//! `````text
//! ````plan
//! # a comment
//! teammate ada role=dev
//! teammate brook role=dev
//! task config: Move the settings into config.env
//!     Indented lines are the task's description,
//!     ```sh
//!     echo and may hold shell blocks
//!     ```
//! task auth role=dev
//! task tests after=config,auth plan priority=2: Write and run the checks
//! check sh backend/test.sh
//!     Write backend/test.sh and run it.
//! task summary after=tests no-worktree
//! ````
//! `````
//!
//! - `teammate NAME [role=ROLE]`: a teammate to spawn (role `dev` when not given).
//! - `task NAME [after=A,B] [role=ROLE] [priority=N] [plan] [no-worktree][: SUBJECT]`:
//!   a task. Its subject is SUBJECT, or NAME without one; `after` names earlier tasks
//!   it is blocked by; `plan` makes whoever claims it get a plan approved first;
//!   `no-worktree` makes it work in the team's directory instead of a worktree.
//! - `check COMMAND`: a completion check of the task written last; the rest of the
//!   line is one shell command, taken as it is (spaces, quotes and colons
//!   included). Repeat the line for more checks.
//! - Indented lines (and blank lines between them) after a `task` line are its
//!   description, with the common indentation removed; `check` lines may come
//!   among them.

/// A teammate the plan asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeammateSpec {
    pub name: String,
    pub role: String,
}

/// A task the plan asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec {
    pub name: String,
    pub subject: String,
    /// Names of earlier tasks.
    pub after: Vec<String>,
    pub role: Option<String>,
    pub priority: i64,
    pub require_plan: bool,
    /// Work in the team's directory instead of a worktree of its own.
    pub no_worktree: bool,
    /// Shell commands that must pass before the task may complete, in order.
    pub checks: Vec<String>,
    pub description: String,
}

/// A whole plan, in the order it was written.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlanSpec {
    pub teammates: Vec<TeammateSpec>,
    pub tasks: Vec<TaskSpec>,
}

/// The last plan block of `text`: `None` when there is none, an error that says
/// which line is wrong when there is one that does not parse.
pub fn find_plan(text: &str) -> Option<Result<PlanSpec, String>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = None;
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim();
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        if ticks >= 3 && trimmed[ticks..].trim() == "plan" {
            let fence = &trimmed[..ticks];
            let end = lines[i + 1..]
                .iter()
                .position(|l| l.trim() == fence)
                .map(|p| i + 1 + p);
            let Some(end) = end else {
                return Some(Err(format!(
                    "the plan block opened with {fence}plan is never closed with {fence}"
                )));
            };
            found = Some(parse(&lines[i + 1..end]));
            i = end;
        }
        i += 1;
    }
    found
}

fn parse(lines: &[&str]) -> Result<PlanSpec, String> {
    let mut plan = PlanSpec::default();
    // The description lines of the task being read.
    let mut description: Vec<&str> = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        let at = || format!("plan line {}: '{}'", n + 1, line.trim());
        let indented = line.starts_with(' ') || line.starts_with('\t');
        if line.trim().is_empty() || (indented && !plan.tasks.is_empty()) {
            if !plan.tasks.is_empty() {
                description.push(line);
            }
            continue;
        }
        if indented {
            return Err(format!("{}: an indented line belongs to a task", at()));
        }
        if line.starts_with('#') {
            continue;
        }
        // A check belongs to the task above and does not end its description, so
        // it is read before the ':' that would split off a subject: a command may
        // hold colons of its own.
        if let Some(command) = check_line(line) {
            let task = plan
                .tasks
                .last_mut()
                .ok_or_else(|| format!("{}: a check belongs to a task written above it", at()))?;
            if command.is_empty() {
                return Err(format!(
                    "{}: a check is a shell command, e.g. 'check cargo test'",
                    at()
                ));
            }
            task.checks.push(command.to_string());
            continue;
        }
        finish_description(&mut plan, &mut description);
        let (head, subject) = match line.split_once(':') {
            Some((h, s)) => (h, Some(s.trim())),
            None => (*line, None),
        };
        let mut words = head.split_whitespace();
        let keyword = words.next().unwrap_or_default();
        let name = words
            .next()
            .ok_or_else(|| format!("{}: a name must follow '{keyword}'", at()))?
            .to_string();
        check_name(&name).map_err(|e| format!("{}: {e}", at()))?;
        match keyword {
            "teammate" => {
                let mut role = "dev".to_string();
                for w in words {
                    match w.split_once('=') {
                        Some(("role", r)) if !r.is_empty() => role = r.to_string(),
                        _ => return Err(format!("{}: unknown setting '{w}'", at())),
                    }
                }
                if plan.teammates.iter().any(|t| t.name == name) {
                    return Err(format!("{}: teammate {name} twice", at()));
                }
                plan.teammates.push(TeammateSpec { name, role });
            }
            "task" => {
                let mut task = TaskSpec {
                    subject: subject
                        .filter(|s| !s.is_empty())
                        .unwrap_or(&name)
                        .to_string(),
                    name,
                    after: Vec::new(),
                    role: None,
                    priority: 0,
                    require_plan: false,
                    no_worktree: false,
                    checks: Vec::new(),
                    description: String::new(),
                };
                for w in words {
                    match w.split_once('=') {
                        Some(("after", list)) => {
                            for dep in list.split(',').filter(|d| !d.is_empty()) {
                                if !plan.tasks.iter().any(|t| t.name == dep) {
                                    return Err(format!(
                                        "{}: '{dep}' is not a task written before this one",
                                        at()
                                    ));
                                }
                                task.after.push(dep.to_string());
                            }
                        }
                        Some(("role", r)) if !r.is_empty() => task.role = Some(r.to_string()),
                        Some(("priority", p)) => {
                            task.priority = p.parse().map_err(|_| {
                                format!("{}: priority must be a whole number", at())
                            })?;
                        }
                        None if w == "plan" => task.require_plan = true,
                        None if w == "no-worktree" => task.no_worktree = true,
                        _ => return Err(format!("{}: unknown setting '{w}'", at())),
                    }
                }
                if plan
                    .tasks
                    .iter()
                    .any(|t| t.name == task.name || t.subject == task.subject)
                {
                    return Err(format!("{}: a task of that name or subject exists", at()));
                }
                plan.tasks.push(task);
            }
            other => {
                return Err(format!(
                    "{}: a plan line starts with 'teammate', 'task' or 'check', not '{other}'",
                    at()
                ));
            }
        }
    }
    finish_description(&mut plan, &mut description);
    if plan.tasks.is_empty() {
        return Err("the plan has no tasks".to_string());
    }
    Ok(plan)
}

/// The command of a `check COMMAND` line, trimmed (empty when there is none).
fn check_line(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("check")?;
    if rest.is_empty() {
        return Some("");
    }
    rest.starts_with([' ', '\t']).then(|| rest.trim())
}

/// Gives the description lines read so far to the last task, dedented.
fn finish_description(plan: &mut PlanSpec, lines: &mut Vec<&str>) {
    let Some(task) = plan.tasks.last_mut() else {
        lines.clear();
        return;
    };
    if lines.is_empty() {
        return;
    }
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let text: Vec<&str> = lines
        .iter()
        .map(|l| {
            if l.trim().is_empty() {
                ""
            } else {
                &l[indent..]
            }
        })
        .collect();
    task.description = text.join("\n").trim_matches('\n').to_string();
    lines.clear();
}

fn check_name(name: &str) -> Result<(), String> {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err(format!(
            "'{name}': names use letters, digits, '-' and '_' only"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = "Please refactor.\n\n````plan\n# team\nteammate ada role=dev\nteammate brook\n\ntask config: Move the settings\n    Move them.\n\n    ```sh\n    echo moved\n    ```\ntask auth role=dev\ntask tests after=config,auth plan priority=2: Check it\n    run the checks\n````\nthanks";

    #[test]
    fn a_plan_block_with_shell_blocks_inside_parses() {
        let plan = find_plan(PLAN).expect("a plan").expect("it parses");
        assert_eq!(
            plan.teammates,
            vec![
                TeammateSpec {
                    name: "ada".into(),
                    role: "dev".into()
                },
                TeammateSpec {
                    name: "brook".into(),
                    role: "dev".into()
                }
            ]
        );
        let names: Vec<&str> = plan.tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["config", "auth", "tests"]);
        assert_eq!(plan.tasks[0].subject, "Move the settings");
        assert_eq!(
            plan.tasks[0].description,
            "Move them.\n\n```sh\necho moved\n```"
        );
        assert_eq!(plan.tasks[1].subject, "auth");
        assert_eq!(plan.tasks[1].role.as_deref(), Some("dev"));
        let tests = &plan.tasks[2];
        assert_eq!(tests.after, ["config", "auth"]);
        assert!(tests.require_plan);
        assert_eq!(tests.priority, 2);
        assert_eq!(tests.description, "run the checks");
        assert!(tests.checks.is_empty() && !tests.no_worktree);
    }

    #[test]
    fn check_lines_give_the_task_above_its_checks_as_written() {
        let text = "````plan\ntask tests: Test it\n    Write the tests,\ncheck sh backend/test.sh\n\n    then run them.\ncheck\tcargo test -- --skip 'a:b'\ntask summary after=tests no-worktree\n    Sum up.\n````";
        let plan = find_plan(text).expect("a plan").expect("it parses");
        let tests = &plan.tasks[0];
        assert_eq!(tests.subject, "Test it");
        assert_eq!(
            tests.checks,
            ["sh backend/test.sh", "cargo test -- --skip 'a:b'"],
            "the whole rest of the line, colons and quotes included"
        );
        assert_eq!(
            tests.description, "Write the tests,\n\nthen run them.",
            "a check line does not end the description"
        );
        assert!(!tests.no_worktree);
        let summary = &plan.tasks[1];
        assert!(summary.no_worktree && summary.checks.is_empty());
        assert_eq!(summary.description, "Sum up.");
    }

    #[test]
    fn mistakes_name_their_line() {
        let bad = |body: &str| {
            find_plan(&format!("````plan\n{body}\n````"))
                .expect("a plan")
                .expect_err("refused")
        };
        assert!(bad("task b after=a").contains("'a' is not a task written before"));
        assert!(bad("task a\ntask a").contains("exists"));
        assert!(bad("job a").contains("not 'job'"));
        assert!(bad("check make test\ntask a").contains("a check belongs to a task written above"));
        assert!(bad("task a\ncheck   ").contains("a check is a shell command"));
        assert!(bad("task a\nchecks make").contains("not 'checks'"));
        assert!(bad("task a colour=red").contains("unknown setting 'colour=red'"));
        assert!(bad("teammate ada").contains("no tasks"));
        assert!(bad("task a priority=high").contains("whole number"));
        assert!(
            find_plan("```plan\ntask a\n")
                .expect("a plan")
                .expect_err("refused")
                .contains("never closed")
        );
        assert_eq!(find_plan("no plan here"), None);
    }
}
