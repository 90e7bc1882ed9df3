//! `teamctl completions SHELL` and the man pages: generated from the command-line
//! definition, without boardd.

use crate::{TEAMCTL, stderr, stdout, teamctl};
use std::process::Command;
use teamboard_testkit::short_tempdir;

/// Runs `teamctl ARGS` with a socket nothing listens on: none of this may need boardd.
fn offline(args: &[&str]) -> std::process::Output {
    let dir = short_tempdir();
    teamctl(&dir.path().join("none.sock"), args)
}

#[test]
fn bash_completion_loads_and_knows_the_subcommands() {
    let out = offline(&["completions", "bash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let script = stdout(&out);
    for word in [
        "spawn",
        "task",
        "submit-plan",
        "--blocked-by",
        "completions",
    ] {
        assert!(script.contains(word), "{word} missing from the bash script");
    }
    // bash itself accepts it and registers a completion for teamctl.
    let dir = short_tempdir();
    let file = dir.path().join("teamctl.bash");
    std::fs::write(&file, &script).unwrap();
    let check = Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p teamctl", file.display()))
        .output()
        .expect("run bash");
    assert!(check.status.success(), "{}", stderr(&check));
    assert!(stdout(&check).contains("_teamctl"), "{}", stdout(&check));
}

#[test]
fn zsh_and_fish_scripts_name_the_subcommands() {
    let out = offline(&["completions", "zsh"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let zsh = stdout(&out);
    assert!(zsh.starts_with("#compdef teamctl"), "{zsh}");
    assert!(zsh.contains("'spawn:") && zsh.contains("'task:"), "{zsh}");

    let out = offline(&["completions", "fish"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let fish = stdout(&out);
    assert!(fish.contains("complete -c teamctl"), "{fish}");
    assert!(
        fish.contains("-a \"spawn\"") && fish.contains("-a \"task\""),
        "{fish}"
    );
}

#[test]
fn an_unknown_shell_is_refused_with_the_choices() {
    let out = offline(&["completions", "nosuch"]);
    assert_eq!(out.status.code(), Some(2), "clap's usage error");
    assert!(stdout(&out).is_empty());
    let err = stderr(&out);
    assert!(err.contains("invalid value 'nosuch'"), "{err}");
    assert!(err.contains("bash, elvish, fish, powershell, zsh"), "{err}");

    // Like the other commands without a JSON form, it says so rather than ignore it.
    let out = offline(&["completions", "bash", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).is_empty());
    assert!(
        stderr(&out).contains("no --json output"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn man_pages_are_written_for_every_subcommand() {
    let dir = short_tempdir();
    let man = dir.path().join("man1");
    let out = Command::new(TEAMCTL)
        .arg("--generate-man")
        .arg(&man)
        .output()
        .expect("run teamctl");
    assert!(out.status.success(), "{}", stderr(&out));
    let page = |name: &str| std::fs::read_to_string(man.join(name)).unwrap();
    assert!(page("teamctl.1").contains(".TH teamctl 1"));
    let completions = page("teamctl-completions.1");
    assert!(completions.contains("completion script"), "{completions}");
    assert!(man.join("teamctl-task-add.1").exists());

    let out = Command::new(TEAMCTL)
        .arg("--generate-man")
        .output()
        .expect("run teamctl");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("--generate-man DIR"),
        "{}",
        stderr(&out)
    );
}
