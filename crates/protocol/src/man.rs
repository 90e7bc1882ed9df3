//! `PROGRAM --generate-man DIR`: a program's man pages, rendered by `clap_mangen`
//! from the same clap definition that gives its `--help`, so the two cannot drift
//! apart. `cargo xtask install` asks each installed program for its pages.
//!
//! Why the built program renders them: a `build.rs` would have to compile each
//! command-line definition a second time with everything it imports (teamctl's
//! reaches into this crate, teammated's into its library), and xtask rendering
//! them itself would have to link all three programs into every `cargo xtask`.
//! The cost here is one hidden argument, looked at before clap parses, so that
//! required flags (teammated's `--name`) do not stand in its way.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;

/// The argument, first on the command line, then the directory.
pub const ARG: &str = "--generate-man";

/// To be called first in a program's `main`, with its command line. When it is
/// `PROGRAM --generate-man DIR`, writes the pages of `commands` into DIR (one per
/// command and visible subcommand, e.g. `teamctl-task-add.1`) and returns the
/// outcome; otherwise returns `None` and the program runs as usual.
pub fn generate_if_asked(
    args: impl IntoIterator<Item = OsString>,
    commands: impl FnOnce() -> Vec<clap::Command>,
) -> Option<io::Result<()>> {
    let mut args = args.into_iter().skip(1);
    if args.next()? != ARG {
        return None;
    }
    let (Some(dir), None) = (args.next(), args.next()) else {
        return Some(Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("usage: {ARG} DIR (the directory the man pages go to)"),
        )));
    };
    Some(write_pages(commands(), &PathBuf::from(dir)))
}

fn write_pages(commands: Vec<clap::Command>, dir: &std::path::Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for command in commands {
        clap_mangen::generate_to(command, dir)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("prog")
            .about("Does things")
            .arg(clap::Arg::new("name").long("name").required(true))
            .subcommand(clap::Command::new("sub").about("A part of it"))
    }

    fn argv(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn writes_a_page_per_command_despite_required_flags() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("man1");
        let asked = argv(&["prog", ARG, out.to_str().unwrap()]);
        generate_if_asked(asked, || vec![command()])
            .unwrap()
            .unwrap();
        let page = std::fs::read_to_string(out.join("prog.1")).unwrap();
        assert!(page.contains(".TH prog 1"), "{page}");
        assert!(page.contains("Does things"), "{page}");
        let sub = std::fs::read_to_string(out.join("prog-sub.1")).unwrap();
        assert!(sub.contains("A part of it"), "{sub}");
    }

    #[test]
    fn other_command_lines_are_left_alone() {
        let never = || -> Vec<clap::Command> { panic!("not asked") };
        assert!(generate_if_asked(argv(&["prog"]), never).is_none());
        assert!(generate_if_asked(argv(&["prog", "--name", "x", ARG, "d"]), never).is_none());
        let e = generate_if_asked(argv(&["prog", ARG]), never).unwrap();
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::InvalidInput);
        let e = generate_if_asked(argv(&["prog", ARG, "a", "b"]), never).unwrap();
        assert_eq!(e.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }
}
