//! The example the demo plays: the person asks the lead for the backend refactor
//! (config, auth and tests in parallel where the dependencies allow, keeping the
//! interface, a summary at the end), with a tiny backend for the team to change.
//!
//! The person's words end with the team plan as a ````plan block, which is what
//! the offline scripted lead reads (a model would write the plan itself). The
//! scripted teammates run every ```sh block of a task's description, in order, in
//! the task's worktree, so each description below is both the brief a real model
//! would read and the exact work the offline stand-in does. Everything is plain
//! POSIX shell (grep, sed, wc), so the demo needs nothing beyond bash and git.
//!
//! Whatever a task leaves in its worktree is committed and lands on the target
//! branch, so the tasks write only what belongs in the repository.

/// The backend before the refactor: `backend/app.py`, the first commit of the
/// demo's repository. It is never run (no Python needed): the tasks read and check it.
pub const APP_PY: &str = r#"# A tiny backend that grew in one file: settings, auth and handlers together.
DATABASE_URL = "postgres://localhost/shop"
SECRET_KEY = "s3cret"
PORT = 8080
LOG_LEVEL = "info"


def login(user, password):
    return user == "admin" and password == SECRET_KEY


def handle(request):
    if not login(request.user, request.password):
        return 401
    return 200
"#;

/// One task of the example.
pub struct Step {
    /// The short name, used as the subject and in the live board.
    pub name: &'static str,
    /// Names of earlier steps this one is blocked by.
    pub after: &'static [&'static str],
    /// Whoever claims it must have a plan approved by the lead first.
    pub plan: bool,
    /// Shell commands boardd runs in the task's worktree before its work may land.
    pub checks: &'static [&'static str],
    pub description: &'static str,
}

/// The repository's target branch, where the team's work lands.
pub const BRANCH: &str = "main";

/// The message of the repository's first commit.
pub const FIRST_COMMIT: &str = "A tiny backend: settings, auth and handlers in one file";

/// The teammates the plan asks for, all of one role.
pub const TEAMMATES: [&str; 3] = ["ada", "brook", "cy"];
pub const ROLE: &str = "dev";

/// What the person tells the lead.
pub const REQUEST: &str = "Refactor the backend in backend/: move the settings into a \
config file and put login behind an auth interface, in parallel since they do not \
depend on each other, while handle() keeps its interface. Then write and run tests \
that check both; I want the lead to review that plan before it runs. Finish with a \
summary of what changed.";

/// The person's whole message: the request, then the team plan for the scripted
/// lead.
pub fn goal() -> String {
    let mut s = format!("{REQUEST}\n\n````plan\n");
    for name in TEAMMATES {
        s.push_str(&format!("teammate {name} role={ROLE}\n"));
    }
    for step in &STEPS {
        s.push_str(&format!("task {}", step.name));
        if !step.after.is_empty() {
            s.push_str(&format!(" after={}", step.after.join(",")));
        }
        if step.plan {
            s.push_str(" plan");
        }
        s.push('\n');
        for check in step.checks {
            s.push_str(&format!("check {check}\n"));
        }
        for line in step.description.lines() {
            if line.is_empty() {
                s.push('\n');
            } else {
                s.push_str(&format!("    {line}\n"));
            }
        }
    }
    s.push_str("````\n");
    s
}

/// The steps in creation order: `config` and `auth` are independent, `tests` waits
/// for both, `summary` waits for `tests`. Each starts from the target branch as it
/// is when the step is claimed, so `tests` finds the landed config and auth, and
/// `tests` lands only when the test script it wrote passes there.
pub const STEPS: [Step; 4] = [
    Step {
        name: "config",
        after: &[],
        plan: false,
        checks: &[],
        description: CONFIG,
    },
    Step {
        name: "auth",
        after: &[],
        plan: false,
        checks: &[],
        description: AUTH,
    },
    Step {
        name: "tests",
        after: &["config", "auth"],
        plan: true,
        checks: &[TEST_CHECK],
        description: TESTS,
    },
    Step {
        name: "summary",
        after: &["tests"],
        plan: false,
        checks: &[],
        description: SUMMARY,
    },
];

// The `sleep 1` blocks stand in for a model thinking. Without them the two
// independent tasks finish in milliseconds and the board never visibly shows two
// teammates working side by side.

const CONFIG: &str = r#"Move the settings out of backend/app.py into backend/config.env
(KEY=value lines, so shell scripts and the app can both read them).

```sh
sleep 1
```

```sh
grep -E '^[A-Z_]+ = ' backend/app.py | sed -e 's/ = /=/' -e 's/"//g' > backend/config.env
echo "moved $(grep -c . backend/config.env) settings to backend/config.env"
```
"#;

const AUTH: &str = r#"Put login behind one interface: backend/auth.sh USER PASSWORD exits 0
when the credentials are valid, reading SECRET_KEY from config.env.

```sh
sleep 1
```

```sh
cat > backend/auth.sh <<'EOF'
#!/bin/sh
# auth.sh USER PASSWORD: exits 0 when the credentials are valid.
# SECRET_KEY comes from config.env next to this file, so it lives in one place.
. "$(dirname "$0")/config.env"
[ "$1" = admin ] && [ "$2" = "$SECRET_KEY" ]
EOF
chmod +x backend/auth.sh
echo "put login behind backend/auth.sh ($(grep -c '' backend/auth.sh) lines)"
```
"#;

/// The `tests` task's completion check: the test script the task writes, run by
/// boardd in the task's worktree before its work may land on the target.
pub const TEST_CHECK: &str = "sh backend/test.sh";

const TESTS: &str = r#"Write backend/test.sh, which checks that the settings come from
config.env and that login goes through auth.sh, and run it. Any FAIL fails the task,
and the task lands only when `sh backend/test.sh` passes, as its completion check.

```sh
cat > backend/test.sh <<'EOF'
#!/bin/sh
# Checks the refactor: settings in config.env, login through auth.sh.
cd "$(dirname "$0")" || exit 1
passed=0 failed=0
check() {
    what=$1; shift
    if "$@" >/dev/null 2>&1; then
        echo "PASS $what"; passed=$((passed + 1))
    else
        echo "FAIL $what"; failed=$((failed + 1))
    fi
}
check "config.env has DATABASE_URL" grep -q '^DATABASE_URL=' config.env
check "config.env has SECRET_KEY" grep -q '^SECRET_KEY=' config.env
check "auth.sh accepts the configured key" ./auth.sh admin s3cret
check "auth.sh rejects a wrong key" sh -c '! ./auth.sh admin wrong'
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
EOF
chmod +x backend/test.sh
```

```sh
report=$(backend/test.sh); status=$?
echo "$report" | tail -n 1   # the count first, then every check
echo "$report" | grep -E '^(PASS|FAIL)'
exit "$status"
```
"#;

const SUMMARY: &str = r#"Summarise the refactor in SUMMARY.md: the files in backend/ and
whether the checks pass.

```sh
{
    echo "refactor done: $(ls backend | grep -c .) files in backend/, $(backend/test.sh | grep -c '^PASS') checks pass"
    for f in backend/*; do echo "  $f: $(grep -c '' "$f") lines"; done
} | tee SUMMARY.md
```
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dependency_names_an_earlier_step() {
        for (i, step) in STEPS.iter().enumerate() {
            for dep in step.after {
                assert!(
                    STEPS[..i].iter().any(|s| s.name == *dep),
                    "{} waits for {dep}, which is not created before it",
                    step.name
                );
            }
        }
    }

    #[test]
    fn the_goal_holds_the_plan_block_with_one_plan_step() {
        let goal = goal();
        assert!(goal.starts_with(REQUEST));
        assert!(
            goal.contains("\ntask tests after=config,auth plan\ncheck sh backend/test.sh\n"),
            "{goal}"
        );
        assert_eq!(
            goal.matches("\ncheck ").count(),
            1,
            "only tests has a check"
        );
        assert_eq!(goal.matches(" plan\n").count(), 1);
        // The descriptions' own fences stay inside the plan's longer one.
        assert!(goal.trim_end().ends_with("\n````"));
        assert_eq!(goal.matches("\n````").count(), 2);
    }

    #[test]
    fn every_step_has_shell_blocks() {
        for step in &STEPS {
            assert!(step.description.contains("```sh\n"), "{}", step.name);
        }
    }
}
