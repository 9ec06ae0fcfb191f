//! Building evaluated nodes: the definition's title and advice plus the
//! user's numbers.

use std::collections::BTreeMap;

use oomscope_report::{CitedBuffer, DiagnosisAction, DiagnosisNode};
use serde_json::Value;

use crate::tree::{action_text, node_def};

/// Buffers a node cites per role: the largest, enough to act on.
pub(crate) const MAX_CITES: usize = 12;

/// A node title inside a sentence: its first letter lowered, acronyms
/// (`HBM`, `E0101`, a first word `CUDA`) kept.
pub(crate) fn lower_first(title: &str) -> String {
    let first = title.split(' ').next().unwrap_or("");
    if first.chars().filter(|c| c.is_alphabetic()).count() > 1
        && first.chars().all(|c| !c.is_lowercase())
    {
        return title.to_string();
    }
    let mut chars = title.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// An evaluated node under construction.
#[derive(Debug, Clone)]
pub(crate) struct NodeEval {
    pub id: &'static str,
    pub selected: bool,
    pub reason: String,
    pub facts: BTreeMap<String, Value>,
    pub actions: Vec<DiagnosisAction>,
    pub cites: Vec<CitedBuffer>,
}

impl NodeEval {
    pub fn new(id: &'static str, reason: impl Into<String>) -> Self {
        NodeEval {
            id,
            selected: false,
            reason: reason.into(),
            facts: BTreeMap::new(),
            actions: Vec::new(),
            cites: Vec::new(),
        }
    }

    /// Cites `buffers` (at most [`MAX_CITES`] per role) as what this node
    /// is about, so that the views can link to them.
    pub fn cite(&mut self, role: &str, buffers: impl IntoIterator<Item = CitedBuffer>) {
        self.cites
            .extend(buffers.into_iter().take(MAX_CITES).map(|mut b| {
                b.role = role.to_string();
                b
            }));
    }

    pub fn fact(&mut self, key: &str, value: impl Into<Value>) {
        self.facts.insert(key.to_string(), value.into());
    }

    /// Adds action `key` of this node: its advice, then `detail` (the
    /// user's numbers), with an optional estimate and how it was computed.
    pub fn action(&mut self, key: &str, detail: &str, estimate: Option<(i64, String)>) {
        self.action_worded(action_text(self.id, key), detail, estimate);
    }

    /// Adds an action whose advice is worded here (for the input's
    /// framework) instead of the tree's generic text, then `detail`.
    pub fn action_worded(&mut self, advice: &str, detail: &str, estimate: Option<(i64, String)>) {
        let text = match (advice.is_empty(), detail.is_empty()) {
            (false, false) => format!("{advice} {detail}"),
            (false, true) => advice.to_string(),
            _ => detail.to_string(),
        };
        let (estimate_bytes, how) = match estimate {
            Some((bytes, how)) => (Some(bytes), Some(how)),
            None => (None, None),
        };
        self.actions.push(DiagnosisAction {
            text,
            estimate_bytes,
            how,
            ..DiagnosisAction::default()
        });
    }

    pub fn build(self) -> DiagnosisNode {
        DiagnosisNode {
            id: self.id.to_string(),
            title: node_def(self.id).map_or("", |d| d.title).to_string(),
            selected: self.selected,
            reason: self.reason,
            facts: self.facts,
            actions: self.actions,
            cites: self.cites,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lower_first;

    #[test]
    fn titles_in_sentences_keep_their_acronyms() {
        assert_eq!(lower_first("Steady growth"), "steady growth");
        assert_eq!(
            lower_first("A buffer does not fit in the free HBM (E0100)"),
            "a buffer does not fit in the free HBM (E0100)"
        );
        assert_eq!(lower_first("CUDA graphs hold memory"), "CUDA graphs hold memory");
        assert_eq!(lower_first(""), "");
    }
}
