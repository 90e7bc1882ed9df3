//! The file-level import graph: which source file of a crate imports which,
//! read from each file's `use` declarations and its paths that start with
//! `crate::`, `super::` or `self::`.
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
//!
//! The text is read into tokens by `proc-macro2`, the lexer every derive macro
//! of the workspace already uses, so that comments, strings and raw strings
//! cannot fool it. Why not the parser on top of it (`syn` with its `full`
//! grammar): the little this needs of Rust's grammar is a `use` tree and a
//! path, and `syn` would add a build of its own to every `cargo xtask`.

use anyhow::{Context, bail};
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
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

/// A token as the scan sees it: `::` is one punctuation, a group keeps its
/// opening delimiter.
#[derive(Debug)]
enum Tok {
    Word(String),
    Punct(String),
    Group(char, Vec<Tok>),
    Literal,
}

impl Tok {
    fn is(&self, text: &str) -> bool {
        matches!(self, Tok::Word(t) | Tok::Punct(t) if t == text)
    }

    fn word(&self) -> Option<&String> {
        match self {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }
}

fn toks(stream: TokenStream) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut joint_colon = false;
    for tree in stream {
        let colon = matches!(&tree, TokenTree::Punct(p) if p.as_char() == ':');
        if colon && joint_colon {
            out.pop();
            out.push(Tok::Punct("::".into()));
            joint_colon = false;
            continue;
        }
        joint_colon =
            matches!(&tree, TokenTree::Punct(p) if colon && p.spacing() == Spacing::Joint);
        out.push(match tree {
            TokenTree::Ident(i) => Tok::Word(i.to_string()),
            TokenTree::Punct(p) => Tok::Punct(p.as_char().to_string()),
            TokenTree::Literal(_) => Tok::Literal,
            TokenTree::Group(g) => {
                let open = match g.delimiter() {
                    Delimiter::Parenthesis => '(',
                    Delimiter::Brace => '{',
                    Delimiter::Bracket => '[',
                    Delimiter::None => ' ',
                };
                Tok::Group(open, toks(g.stream()))
            }
        });
    }
    out
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
            let tokens: TokenStream = text
                .parse()
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            let shown = file
                .strip_prefix(dir)
                .unwrap_or(&file)
                .display()
                .to_string();
            c.module(&path).file = shown.clone();
            for child in c.scan(&path, &shown, &toks(tokens)) {
                let child_path = [path.clone(), vec![child.clone()]].concat();
                pending.push((child_path, child_file(&file, &child)?));
            }
        }
        Ok(c)
    }

    fn module(&mut self, path: &[String]) -> &mut Module {
        self.modules.entry(path.join("::")).or_default()
    }

    /// Records what the tokens of module `here` (in `file`) import; answers
    /// their `mod x;` declarations.
    fn scan(&mut self, here: &[String], file: &str, toks: &[Tok]) -> Vec<String> {
        let mut decls = Vec::new();
        let (mut test, mut i) = (false, 0);
        while i < toks.len() {
            let next = |k: usize| toks.get(i + k);
            match &toks[i] {
                // `#[...]` and `#![...]`.
                Tok::Punct(p) if p == "#" => {
                    let at = if next(1).is_some_and(|t| t.is("!")) {
                        i + 2
                    } else {
                        i + 1
                    };
                    if let Some(Tok::Group('[', attr)) = toks.get(at) {
                        test |= matches!(attr.as_slice(), [cfg, Tok::Group('(', arg)]
                            if cfg.is("cfg") && matches!(arg.as_slice(), [t] if t.is("test")));
                        i = at + 1;
                        continue;
                    }
                }
                Tok::Word(w) if w == "mod" && next(1).and_then(Tok::word).is_some() => {
                    let name = next(1).and_then(Tok::word).cloned().unwrap_or_default();
                    match next(2) {
                        Some(t) if t.is(";") && !test => {
                            self.module(here).children.insert(name.clone());
                            decls.push(name);
                        }
                        Some(Tok::Group('{', inner)) if !test => {
                            self.module(here).children.insert(name.clone());
                            let inner_path = [here.to_vec(), vec![name]].concat();
                            self.module(&inner_path).file = file.to_string();
                            self.scan(&inner_path, file, inner);
                        }
                        _ => {}
                    }
                    test = false;
                    i += 3;
                    continue;
                }
                Tok::Word(w) if w == "use" => {
                    let end = toks[i..]
                        .iter()
                        .position(|t| t.is(";"))
                        .map_or(toks.len(), |p| i + p);
                    if !test {
                        let mut items = Vec::new();
                        use_tree(&toks[i + 1..end], &mut Vec::new(), &mut items);
                        let m = self.module(here);
                        for (p, name) in items {
                            let p = absolute(here, &p);
                            m.refs.push(p.clone());
                            match name {
                                Some(name) => _ = m.imports.insert(name, p),
                                None => m.globs.push(p),
                            }
                        }
                    }
                    test = false;
                    i = end + 1;
                    continue;
                }
                Tok::Word(w)
                    if matches!(w.as_str(), "crate" | "super" | "self")
                        && next(1).is_some_and(|t| t.is("::"))
                        && !(i > 0 && toks[i - 1].is("::")) =>
                {
                    let mut p = vec![w.clone()];
                    let mut j = i + 1;
                    while toks.get(j).is_some_and(|t| t.is("::"))
                        && let Some(seg) = toks.get(j + 1).and_then(Tok::word)
                    {
                        p.push(seg.clone());
                        j += 2;
                    }
                    let abs = absolute(here, &p);
                    self.module(here).refs.push(abs);
                    i = j;
                    continue;
                }
                Tok::Group(_, inner) => decls.extend(self.scan(here, file, inner)),
                Tok::Word(w)
                    if matches!(
                        w.as_str(),
                        "fn" | "struct" | "enum" | "impl" | "trait" | "const" | "static" | "type"
                    ) =>
                {
                    test = false
                }
                Tok::Punct(p) if p == ";" => test = false,
                _ => {}
            }
            i += 1;
        }
        decls
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
    tokens: &[Tok],
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let depth = prefix.len();
    for (i, t) in tokens.iter().enumerate() {
        match t {
            Tok::Punct(p) if p == "*" => out.push((prefix.clone(), None)),
            Tok::Group('{', inner) => {
                for part in inner.split(|t| t.is(",")) {
                    use_tree(part, prefix, out);
                }
            }
            Tok::Word(w) if w == "as" => {
                if let (Some(last), Some(alias)) =
                    (out.last_mut(), tokens.get(i + 1).and_then(Tok::word))
                {
                    last.1 = Some(alias.clone());
                }
                break;
            }
            Tok::Word(w) if w == "self" && i + 1 == tokens.len() && !prefix.is_empty() => {
                out.push((prefix.clone(), prefix.last().cloned()));
            }
            Tok::Word(w) if w != "pub" && w != "in" => {
                if tokens.get(i + 1).is_some_and(|n| n.is("::")) {
                    prefix.push(w.clone());
                } else {
                    out.push(([prefix.clone(), vec![w.clone()]].concat(), Some(w.clone())));
                }
            }
            _ => {}
        }
    }
    prefix.truncate(depth);
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
        let tokens = toks("crate::a::{self, b::{C, D as E}, f::*}".parse().unwrap());
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
