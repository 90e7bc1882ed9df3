//! A graph of uses between modules or files, and its cycles. The module graph
//! is read from cargo-modules' DOT output.

use std::collections::{BTreeMap, BTreeSet};

/// Uses between modules (items folded into the modules that hold them), or
/// between files.
pub struct Graph {
    /// Every node's path and kind (`pub(crate) mod`, `pub struct`, `crate`, ...),
    /// or every file with the kind `file`.
    kinds: BTreeMap<String, String>,
    uses: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    /// A graph of `files`, from what each imports.
    pub fn of_files(files: BTreeSet<String>, uses: BTreeMap<String, BTreeSet<String>>) -> Graph {
        Graph {
            kinds: files.into_iter().map(|f| (f, "file".to_string())).collect(),
            uses,
        }
    }

    pub fn from_dot(dot: &str) -> Graph {
        let mut kinds = BTreeMap::new();
        let mut item_uses = Vec::new();
        for line in dot.lines() {
            let line = line.trim();
            let Some(rest) = line.strip_prefix('"') else {
                continue;
            };
            let Some((from, rest)) = rest.split_once('"') else {
                continue;
            };
            if let Some(rest) = rest.strip_prefix(" -> \"") {
                if let Some((to, rest)) = rest.split_once('"')
                    && rest.contains("label=\"uses\"")
                {
                    item_uses.push((from.to_string(), to.to_string()));
                }
            } else if let Some(label) = rest.strip_prefix(" [label=\"")
                && let Some((kind, _)) = label.split_once('|')
            {
                kinds.insert(from.to_string(), kind.to_string());
            }
        }
        let mut graph = Graph {
            kinds,
            uses: BTreeMap::new(),
        };
        for (from, to) in item_uses {
            let (a, b) = (graph.module_of(&from), graph.module_of(&to));
            let related =
                a == b || a.starts_with(&format!("{b}::")) || b.starts_with(&format!("{a}::"));
            if !related {
                graph.uses.entry(a).or_default().insert(b);
            }
        }
        graph
    }

    /// The longest prefix of `path` that is not an item. cargo-modules leaves out
    /// the nodes of modules without edges of their own, so a prefix it does not
    /// know is a module.
    fn module_of(&self, path: &str) -> String {
        let mut module = String::new();
        for part in path.split("::") {
            let candidate = if module.is_empty() {
                part.to_string()
            } else {
                format!("{module}::{part}")
            };
            match self.kinds.get(&candidate) {
                Some(kind) if !(kind.ends_with("mod") || kind == "crate") => break,
                _ => module = candidate,
            }
        }
        module
    }

    /// The modules (or files) in the graph.
    pub fn nodes(&self) -> usize {
        let all: BTreeSet<String> = self
            .kinds
            .iter()
            .map(|(p, kind)| match kind.as_str() {
                "file" => p.clone(),
                _ => self.module_of(p),
            })
            .collect();
        all.len()
    }

    pub fn edges(&self) -> impl Iterator<Item = (&str, &str)> {
        self.uses
            .iter()
            .flat_map(|(a, bs)| bs.iter().map(move |b| (a.as_str(), b.as_str())))
    }

    /// The strongly connected components with more than one module (Tarjan).
    pub fn cycles(&self) -> Vec<Vec<String>> {
        let mut nodes: BTreeSet<&str> = self.uses.keys().map(String::as_str).collect();
        nodes.extend(self.uses.values().flatten().map(String::as_str));
        let mut t = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            next: 0,
            out: Vec::new(),
        };
        for v in nodes {
            if !t.index.contains_key(v) {
                t.visit(v);
            }
        }
        t.out
    }
}

struct Tarjan<'a> {
    graph: &'a Graph,
    index: BTreeMap<&'a str, usize>,
    low: BTreeMap<&'a str, usize>,
    stack: Vec<&'a str>,
    next: usize,
    out: Vec<Vec<String>>,
}

impl<'a> Tarjan<'a> {
    fn visit(&mut self, v: &'a str) {
        self.index.insert(v, self.next);
        self.low.insert(v, self.next);
        self.next += 1;
        self.stack.push(v);
        for w in self.graph.uses.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !self.index.contains_key(w) {
                self.visit(w);
                let lw = self.low[w];
                let lv = self.low.entry(v).or_default();
                *lv = (*lv).min(lw);
            } else if self.stack.contains(&w) {
                let iw = self.index[w];
                let lv = self.low.entry(v).or_default();
                *lv = (*lv).min(iw);
            }
        }
        if self.low[v] == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                component.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                self.out.push(component);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOT: &str = r##"
    "c" [label="crate|c", fillcolor="#5397c8"];
    "c::a" [label="pub(crate) mod|a", fillcolor="#f8c04c"];
    "c::a::A" [label="pub struct|a::A", fillcolor="#81c169"];
    "c::a::A::f" [label="pub fn|a::A::f", fillcolor="#81c169"];
    "c::b::B" [label="pub struct|b::B", fillcolor="#81c169"];
    "c::d::D" [label="pub struct|d::D", fillcolor="#81c169"];
    "c::a::A::f" -> "c::b::B" [label="uses", color="#7f7f7f"];
    "c::b::B" -> "c::a::A" [label="uses", color="#7f7f7f"];
    "c::d::D" -> "c::a::A" [label="uses", color="#7f7f7f"];
    "c::a::A" -> "c::a::A::f" [label="uses", color="#7f7f7f"];
    "c" -> "c::d::D" [label="uses", color="#7f7f7f"];
"##;

    #[test]
    fn items_fold_into_modules_and_a_two_module_loop_is_found() {
        let g = Graph::from_dot(DOT);
        let edges: Vec<_> = g.edges().collect();
        // Within `a`, and the crate root using `d`, are no module edges.
        assert_eq!(
            edges,
            [("c::a", "c::b"), ("c::b", "c::a"), ("c::d", "c::a")]
        );
        assert_eq!(g.cycles(), [vec!["c::a".to_string(), "c::b".to_string()]]);
    }

    #[test]
    fn a_graph_without_loops_has_no_cycles() {
        let dot = DOT.replace(
            r##""c::b::B" -> "c::a::A" [label="uses", color="#7f7f7f"];"##,
            "",
        );
        let g = Graph::from_dot(&dot);
        assert_eq!(g.edges().count(), 2);
        assert!(g.cycles().is_empty());
    }
}
