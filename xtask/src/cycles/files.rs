//! The file-level import graph: which source file of a crate imports which,
//! read from the text of each file's `use` declarations and of its paths that
//! start with `crate::`, `super::` or `self::`.
//!
//! Why a graph of files beside the graph of modules: cargo-modules files a
//! method under its type's path wherever its `impl` block sits, and folds a
//! use of a name that a parent re-exports into the parent, which the module
//! check leaves out as an ancestor. Two files that import each other through
//! their parent's re-exports, or through an `impl` block placed in the other's
//! module, are then a circle it cannot see. Read from the text, an import lands
//! on the file that defines the name: a re-export (`pub use`, or a plain `use`
//! a child reaches through `super::`) is followed to its source.
//!
//! Left out, as in the module check: a file's imports of its own ancestors and
//! descendants (a `mod.rs` declaring what its submodules share, and using
//! them, is the ordinary shape of a Rust module), and `#[cfg(test)]` modules
//! and imports. Known limits, each harmless for finding circles: a `use` inside
//! a function counts as the module's, and the other `#[cfg(test)]` items count.
//! Why not a parser crate (`syn`): the little this needs of Rust's grammar is a
//! `use` tree and a path, and `syn` would add a build of its own to every
//! `cargo xtask`.

use anyhow::{Context, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's modules, each with the file that holds it and what it imports.
#[derive(Default)]
pub struct Crate {
    modules: BTreeMap<String, Module>,
}

#[derive(Default)]
struct Module {
    /// The file, relative to the crate's directory; an inline `mod x { }`
    /// shares its enclosing file.
    file: String,
    children: BTreeSet<String>,
    /// Each name a `use` brings in, with the path it stands for.
    imports: BTreeMap<String, Vec<String>>,
    /// The modules of `use path::*`.
    globs: Vec<Vec<String>>,
    /// Every path the module names, made absolute (`crate`, ...).
    refs: Vec<Vec<String>>,
}

impl Crate {
    /// Reads the crate whose root file is `root` (`src/lib.rs`, `src/main.rs`).
    pub fn read(root: &Path) -> anyhow::Result<Crate> {
        let dir = root
            .parent()
            .and_then(Path::parent)
            .context("the root file has no crate directory")?;
        let mut c = Crate::default();
        let mut pending = vec![(vec!["crate".to_string()], root.to_path_buf())];
        while let Some((path, file)) = pending.pop() {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let shown = file
                .strip_prefix(dir)
                .unwrap_or(&file)
                .display()
                .to_string();
            for child in c.scan(&path, &shown, &strip(&text)) {
                pending.push((
                    [path.clone(), vec![child.clone()]].concat(),
                    child_file(&file, &child)?,
                ));
            }
        }
        Ok(c)
    }

    /// Records the modules of one file; answers its `mod x;` declarations.
    fn scan(&mut self, path: &[String], file: &str, text: &str) -> Vec<String> {
        let tokens = tokenize(text);
        let mut out = Vec::new();
        // The inline modules open at this point, with the depth their `}` closes.
        let mut stack: Vec<(Vec<String>, usize)> = vec![(path.to_vec(), 0)];
        self.module(path, file);
        let (mut depth, mut test, mut i) = (0usize, false, 0);
        while i < tokens.len() {
            let here = stack.last().map_or(path.to_vec(), |s| s.0.clone());
            match tokens[i].as_str() {
                "#" if tokens.get(i + 1).is_some_and(|t| t == "[") => {
                    let end = close(&tokens, i + 1, "[", "]");
                    test |= tokens[i + 2..end].join("") == "cfg(test)";
                    i = end + 1;
                    continue;
                }
                "mod" if tokens.get(i + 1).is_some_and(|t| is_ident(t)) => {
                    let name = tokens[i + 1].clone();
                    match tokens.get(i + 2).map(String::as_str) {
                        Some(";") if !test => {
                            self.modules
                                .entry(join(&here))
                                .or_default()
                                .children
                                .insert(name.clone());
                            if here.len() == path.len() {
                                out.push(name);
                            }
                            i += 3;
                        }
                        Some("{") if test => i = close(&tokens, i + 2, "{", "}") + 1,
                        Some("{") => {
                            let inner = [here.clone(), vec![name.clone()]].concat();
                            self.modules
                                .entry(join(&here))
                                .or_default()
                                .children
                                .insert(name);
                            self.module(&inner, file);
                            depth += 1;
                            stack.push((inner, depth));
                            i += 3;
                        }
                        _ => i += 2,
                    }
                    test = false;
                    continue;
                }
                "use" => {
                    let end = tokens[i..]
                        .iter()
                        .position(|t| t == ";")
                        .map_or(tokens.len(), |p| i + p);
                    if !test {
                        let mut items = Vec::new();
                        use_tree(&tokens[i + 1..end], &mut Vec::new(), &mut items);
                        let m = self.modules.entry(join(&here)).or_default();
                        for (p, name) in items {
                            let p = absolute(&here, &p);
                            m.refs.push(p.clone());
                            match name {
                                Some(name) => {
                                    m.imports.insert(name, p);
                                }
                                None => m.globs.push(p),
                            }
                        }
                    }
                    test = false;
                    i = end + 1;
                    continue;
                }
                "{" => depth += 1,
                "}" => {
                    if stack.last().is_some_and(|s| s.1 == depth) && stack.len() > 1 {
                        stack.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                "crate" | "super" | "self"
                    if tokens.get(i + 1).is_some_and(|n| n == "::")
                        && !(i > 0 && tokens[i - 1] == "::") =>
                {
                    let mut p = vec![tokens[i].clone()];
                    let mut j = i + 1;
                    while tokens.get(j).is_some_and(|t| t == "::")
                        && tokens.get(j + 1).is_some_and(|t| is_ident(t))
                    {
                        p.push(tokens[j + 1].clone());
                        j += 2;
                    }
                    let abs = absolute(&here, &p);
                    self.modules.entry(join(&here)).or_default().refs.push(abs);
                    i = j;
                    continue;
                }
                ";" | "fn" | "struct" | "enum" | "impl" | "trait" | "const" | "static" | "type" => {
                    test = false
                }
                _ => {}
            }
            i += 1;
        }
        out
    }

    fn module(&mut self, path: &[String], file: &str) {
        self.modules.entry(join(path)).or_default().file = file.to_string();
    }

    /// The module whose file defines what `path` names: through child modules,
    /// and through `use` to where the name comes from.
    fn resolve(&self, path: &[String], hops: usize) -> Option<String> {
        let mut at = "crate".to_string();
        for (n, seg) in path.iter().enumerate().skip(1) {
            let m = self.modules.get(&at)?;
            if m.children.contains(seg) {
                at = format!("{at}::{seg}");
                continue;
            }
            let rest = &path[n + 1..];
            let via = m
                .imports
                .get(seg)
                .map(|p| [p.clone(), rest.to_vec()].concat());
            let via = via.or_else(|| {
                m.globs.iter().find_map(|g| {
                    let inner = [g.clone(), vec![seg.clone()]].concat();
                    let target = self.modules.get(&self.resolve(g, hops + 1)?)?;
                    (target.children.contains(seg) || target.imports.contains_key(seg))
                        .then(|| [inner, rest.to_vec()].concat())
                })
            });
            return match via {
                Some(p) if hops < 16 && p.first().is_some_and(|s| s == "crate") && p != path => {
                    self.resolve(&p, hops + 1)
                }
                _ => Some(at),
            };
        }
        Some(at)
    }

    /// The crate's files.
    pub fn files(&self) -> BTreeSet<String> {
        self.modules.values().map(|m| m.file.clone()).collect()
    }

    /// File-to-file imports, without those between a module and its ancestors
    /// or descendants.
    pub fn imports(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, m) in &self.modules {
            for r in &m.refs {
                if r.first().is_none_or(|s| s != "crate") {
                    continue;
                }
                let Some(target) = self.resolve(r, 0) else {
                    continue;
                };
                let related = target == *name
                    || target.starts_with(&format!("{name}::"))
                    || name.starts_with(&format!("{target}::"));
                let file = &self.modules[&target].file;
                if !related && *file != m.file {
                    out.entry(m.file.clone()).or_default().insert(file.clone());
                }
            }
        }
        out
    }
}

fn join(path: &[String]) -> String {
    path.join("::")
}

/// `self::`, `super::` and a leading `crate::` made into a path from the crate.
fn absolute(here: &[String], p: &[String]) -> Vec<String> {
    let mut base = here.to_vec();
    let mut rest = p;
    match p.first().map(String::as_str) {
        Some("crate") => return p.to_vec(),
        Some("self") => rest = &p[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        // A child module or an extern crate: resolving decides.
        _ => {}
    }
    [base, rest.to_vec()].concat()
}

/// Where `mod child;` of `parent` lives.
fn child_file(parent: &Path, child: &str) -> anyhow::Result<PathBuf> {
    let dir = parent.parent().context("a source file has no directory")?;
    let own = match parent.file_stem().and_then(|s| s.to_str()) {
        Some("lib" | "main" | "mod") => dir.to_path_buf(),
        Some(stem) => dir.join(stem),
        None => bail!("{} has no name", parent.display()),
    };
    let flat = own.join(format!("{child}.rs"));
    if flat.exists() {
        return Ok(flat);
    }
    let nested = own.join(child).join("mod.rs");
    if nested.exists() {
        return Ok(nested);
    }
    bail!("no file for `mod {child};` of {}", parent.display())
}

/// The paths a `use` tree names, each with the name it brings in (`None` for
/// a glob).
fn use_tree(
    tokens: &[String],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let depth = prefix.len();
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].as_str() {
            "::" | "pub" | "(" | ")" | "in" => {}
            "*" => out.push((prefix.clone(), None)),
            "{" => {
                let end = close(tokens, i, "{", "}");
                let mut start = i + 1;
                for k in i + 1..=end {
                    if k == end || (tokens[k] == "," && depth_at(tokens, i + 1, k) == 0) {
                        use_tree(&tokens[start..k], prefix, out);
                        start = k + 1;
                    }
                }
                i = end;
            }
            "as" => {
                if let (Some(last), Some(alias)) = (out.last_mut(), tokens.get(i + 1)) {
                    last.1 = Some(alias.clone());
                }
                i += 1;
            }
            "self" if i + 1 == tokens.len() && !prefix.is_empty() => {
                out.push((prefix.clone(), prefix.last().cloned()));
            }
            t if is_ident(t) => {
                if tokens.get(i + 1).is_some_and(|n| n == "::") {
                    prefix.push(t.to_string());
                } else {
                    let mut p = prefix.clone();
                    p.push(t.to_string());
                    out.push((p, Some(t.to_string())));
                }
            }
            _ => {}
        }
        i += 1;
    }
    prefix.truncate(depth);
}

/// The brace depth at `k`, counted from `from`.
fn depth_at(tokens: &[String], from: usize, k: usize) -> i32 {
    tokens[from..k]
        .iter()
        .map(|t| match t.as_str() {
            "{" => 1,
            "}" => -1,
            _ => 0,
        })
        .sum()
}

/// The index of the token that closes the `open` at `at`.
fn close(tokens: &[String], at: usize, open: &str, shut: &str) -> usize {
    let mut depth = 0;
    for (k, t) in tokens.iter().enumerate().skip(at) {
        if t == open {
            depth += 1;
        } else if t == shut {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    tokens.len().saturating_sub(1)
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::` and single punctuation, from text without comments and
/// literals.
fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
            continue;
        }
        if c.is_ascii_punctuation() {
            out.push(c.to_string());
        }
        i += 1;
    }
    out
}

/// The text with comments, strings and character literals blanked, so that
/// neither a path in a doc comment nor a brace in a string counts.
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let rest = |k: usize| c.get(i + k).copied();
        if c[i] == '/' && rest(1) == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c[i] == '/' && rest(1) == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // r"..", r#".."#, br#".."#: no escapes, closed by the same hashes.
        let raw_at = if c[i] == 'r' {
            Some(i + 1)
        } else if c[i] == 'b' && rest(1) == Some('r') {
            Some(i + 2)
        } else {
            None
        };
        if let Some(mut k) = raw_at
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            let mut hashes = 0;
            while c.get(k) == Some(&'#') {
                hashes += 1;
                k += 1;
            }
            if c.get(k) == Some(&'"') {
                k += 1;
                while k < c.len() {
                    if c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')) {
                        k += 1 + hashes;
                        break;
                    }
                    k += 1;
                }
                out.push_str(" \"\" ");
                i = k;
                continue;
            }
        }
        if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push_str(" \"\" ");
            i += 1;
            continue;
        }
        // A character literal, not a lifetime: 'x' or '\n'.
        if c[i] == '\'' && (rest(2) == Some('\'') || rest(1) == Some('\\')) {
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push_str(" ' ");
            i += 1;
            continue;
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crate in a temporary directory: `(path under src/, text)`.
    fn krate(files: &[(&str, &str)]) -> (tempfile::TempDir, Crate) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join("src").join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let c = Crate::read(&dir.path().join("src/lib.rs")).unwrap();
        (dir, c)
    }

    fn edges(c: &Crate) -> Vec<(String, String)> {
        c.imports()
            .into_iter()
            .flat_map(|(a, bs)| bs.into_iter().map(move |b| (a.clone(), b)))
            .collect()
    }

    #[test]
    fn an_import_through_the_parents_re_export_lands_on_the_defining_file() {
        let (_d, c) = krate(&[
            ("lib.rs", "mod repo;\n"),
            (
                "repo/mod.rs",
                "mod gate;\nmod land;\npub use land::Landing;\nuse gate::Gate as G;\n",
            ),
            ("repo/gate.rs", "use super::Landing;\npub struct Gate;\n"),
            ("repo/land.rs", "pub struct Landing(super::G);\n"),
        ]);
        // mod.rs's own uses of its children are left out.
        assert_eq!(
            edges(&c),
            [
                ("src/repo/gate.rs".into(), "src/repo/land.rs".into()),
                ("src/repo/land.rs".into(), "src/repo/gate.rs".into())
            ]
        );
        assert_eq!(c.files().len(), 4);
    }

    #[test]
    fn comments_strings_tests_and_inline_modules_are_read_as_rust_reads_them() {
        let (_d, c) = krate(&[
            (
                "lib.rs",
                "mod a;\nmod b;\npub mod texts {\n    pub const X: &str = \"{\";\n    pub const Y: char = '}';\n}\n",
            ),
            (
                "a.rs",
                "// crate::b::B in a comment\n/* and /* nested */ crate::b::B */\n\
                 const S: &str = r#\"crate::b::B\"#;\nconst C: char = '{';\nconst D: char = '}';\n\
                 fn f<'a>(x: &'a str) -> &'a str { x }\n\
                 #[cfg(test)]\nuse crate::b::B;\n#[cfg(test)]\nmod tests { use crate::b::B; }\n\
                 fn g() -> &'static str { crate::texts::X }\n",
            ),
            ("b.rs", "pub struct B;\nfn h() { let _ = crate::a::f; }\n"),
        ]);
        // a.rs names b only in comments, strings and tests; texts is inline in lib.rs.
        assert_eq!(
            edges(&c),
            [
                ("src/a.rs".into(), "src/lib.rs".into()),
                ("src/b.rs".into(), "src/a.rs".into())
            ]
        );
    }

    #[test]
    fn use_trees_are_expanded() {
        let tokens = tokenize("crate::a::{self, b::{C, D as E}, f::*}");
        let mut out = Vec::new();
        use_tree(&tokens, &mut Vec::new(), &mut out);
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            out,
            [
                (s(&["crate", "a"]), Some("a".into())),
                (s(&["crate", "a", "b", "C"]), Some("C".into())),
                (s(&["crate", "a", "b", "D"]), Some("E".into())),
                (s(&["crate", "a", "f"]), None),
            ]
        );
    }
}
