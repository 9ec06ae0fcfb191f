//! Whether an HLO value reaches a contraction (a dot or a convolution),
//! followed through a module's dataflow: through its users, into called
//! computations (operand k is their parameter k; a loop's operand its
//! body's and condition's parameter 0) and through tuples into loops (the
//! element's `get-tuple-element`). The one walk of the what-if programs
//! built from an HloProto (`oomscope_xla`) and from dump text
//! (`oomscope_dump`), each of which gives its module as a [`Dataflow`].
//! *Why here:* both format crates use it and neither may import the other.

use std::cell::RefCell;
use std::hash::Hash;

// foldhash: as fast as the walk needs, and seeded per process, so ids
// chosen to collide in a crafted file cannot make the memo quadratic.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// A module's instructions as the walk sees them.
pub trait Dataflow {
    /// How an instruction is named (an id, or a name in dump text).
    type Id: Copy + Eq + Hash;
    /// The instructions that read `id`'s value, in module order.
    fn users(&self, id: Self::Id) -> &[Self::Id];
    /// The `get-tuple-element` users of `id` that read its element
    /// `element`, in module order (a tuple of thousands of arguments is
    /// not scanned per element).
    fn element_users(&self, id: Self::Id, element: i64) -> &[Self::Id];
    /// The users of `id` other than its `get-tuple-element`s, in order.
    fn value_users(&self, id: Self::Id) -> &[Self::Id];
    /// The instruction's opcode; `None` when there is no such instruction.
    fn opcode(&self, id: Self::Id) -> Option<&str>;
    /// A `get-tuple-element`'s index.
    fn tuple_index(&self, id: Self::Id) -> Option<i64>;
    /// Whether `user` calls a computation.
    fn calls(&self, user: Self::Id) -> bool;
    /// Appends the operand positions at which `user` reads `operand`,
    /// ascending.
    fn operand_positions(&self, user: Self::Id, operand: Self::Id, out: &mut Vec<usize>);
    /// Appends parameter `k` of each computation `user` calls, in order.
    fn called_parameters(&self, user: Self::Id, k: i64, out: &mut Vec<Self::Id>);
}

/// A value followed through the module: an instruction, and the tuple
/// element of it held (None: all of it).
pub type State<Id> = (Id, Option<i64>);

/// States remembered per module at most (bounded whatever the module).
const MAX_MEMO: usize = 4_000_000;

/// The states a value flows to from `state` (through its users, or only
/// `only` among them), appended to `out`; true when one of those users is
/// a contraction of the whole value (then `out` may be incomplete).
pub fn successors<G: Dataflow>(
    graph: &G,
    (id, element): State<G::Id>,
    only: Option<G::Id>,
    out: &mut Vec<State<G::Id>>,
) -> bool {
    let mut positions = Vec::new();
    let mut parameters = Vec::new();
    let mut step = |user: G::Id, out: &mut Vec<State<G::Id>>| -> bool {
        let Some(opcode) = graph.opcode(user) else {
            return false;
        };
        match opcode {
            "dot" | "convolution" | "ragged-dot" => return element.is_none(),
            "get-tuple-element" => {
                if element.is_none() || element == graph.tuple_index(user) {
                    out.push((user, None));
                }
            }
            "tuple" => {
                if element.is_none() {
                    positions.clear();
                    graph.operand_positions(user, id, &mut positions);
                    out.extend(positions.iter().map(|&k| (user, Some(k as i64))));
                }
            }
            _ => {
                // Into called computations: operand k is parameter k
                // (fusion, call, custom-call, while body/condition).
                if graph.calls(user) {
                    positions.clear();
                    graph.operand_positions(user, id, &mut positions);
                    let k_of = |k: usize| if opcode == "while" { 0 } else { k as i64 };
                    for &k in &positions {
                        parameters.clear();
                        graph.called_parameters(user, k_of(k), &mut parameters);
                        out.extend(parameters.iter().map(|&p| (p, element)));
                    }
                }
                if element.is_none() {
                    out.push((user, None));
                } else if opcode == "while" {
                    // The loop's result holds the same element.
                    out.push((user, element));
                }
            }
        }
        false
    };
    match (only, element) {
        // (One reader of thousands: looked at alone, not found among them.)
        (Some(reader), _) => step(reader, out),
        // An element: its own get-tuple-elements, then the other users
        // (those reading another element are passed over either way).
        (None, Some(e)) => {
            for &user in graph.element_users(id, e) {
                out.push((user, None));
            }
            graph.value_users(id).iter().any(|&user| step(user, out))
        }
        (None, None) => graph.users(id).iter().any(|&user| step(user, out)),
    }
}

/// Whether values reach a contraction, remembered for every state visited
/// (the dataflow is acyclic: many parameters and readers share the same
/// paths, each walked once per module).
pub struct Reach<Id> {
    memo: RefCell<HashMap<State<Id>, bool>>,
}

impl<Id: Copy + Eq + Hash> Default for Reach<Id> {
    fn default() -> Self {
        Reach {
            memo: RefCell::new(HashMap::default()),
        }
    }
}

impl<Id: Copy + Eq + Hash> Reach<Id> {
    /// Whether the value of `start` reaches a dot or a convolution (through
    /// its reader `only` alone, when given).
    pub fn reaches<G: Dataflow<Id = Id>>(&self, graph: &G, start: Id, only: Option<Id>) -> bool {
        let mut next = Vec::new();
        if successors(graph, (start, None), only, &mut next) {
            return true;
        }
        next.into_iter().any(|s| self.reaches_from(graph, s))
    }

    /// Whether a value held as `start` reaches a contraction.
    fn reaches_from<G: Dataflow<Id = Id>>(&self, graph: &G, start: State<Id>) -> bool {
        let mut memo = self.memo.borrow_mut();
        if let Some(&known) = memo.get(&start) {
            return known;
        }
        // Depth-first, children before parents; a state met again while
        // open (malformed input) counts as not reaching.
        let mut stack: Vec<(State<Id>, Vec<State<Id>>)> = Vec::new();
        let mut open: HashSet<State<Id>> = HashSet::default();
        let enter = |state: State<Id>,
                     stack: &mut Vec<(State<Id>, Vec<State<Id>>)>,
                     memo: &mut HashMap<State<Id>, bool>,
                     open: &mut HashSet<State<Id>>| {
            let mut next = Vec::new();
            if successors(graph, state, None, &mut next) {
                memo.insert(state, true);
            } else {
                open.insert(state);
                stack.push((state, next));
            }
        };
        enter(start, &mut stack, &mut memo, &mut open);
        while let Some((state, pending)) = stack.last_mut() {
            let state = *state;
            if memo.len() > MAX_MEMO {
                return false;
            }
            let Some(child) = pending.pop() else {
                // Every child examined: none reaches.
                memo.insert(state, false);
                open.remove(&state);
                stack.pop();
                continue;
            };
            if !memo.contains_key(&child) && !open.contains(&child) {
                enter(child, &mut stack, &mut memo, &mut open);
            }
            if memo.get(&child) == Some(&true) {
                // A state reaching a contraction: so does every open state
                // above it on the path.
                while let Some((open_state, _)) = stack.pop() {
                    memo.insert(open_state, true);
                    open.remove(&open_state);
                }
            }
        }
        memo.get(&start).copied().unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, opcode, operands, tuple index, called computations'
    /// parameters by operand position).
    type Row = (
        &'static str,
        &'static str,
        Vec<&'static str>,
        Option<i64>,
        Vec<&'static str>,
    );

    /// A module written as rows.
    struct Toy {
        instructions: Vec<Row>,
        users: HashMap<&'static str, Vec<&'static str>>,
        element_users: HashMap<(&'static str, i64), Vec<&'static str>>,
        value_users: HashMap<&'static str, Vec<&'static str>>,
    }

    impl Toy {
        fn new(instructions: Vec<Row>) -> Toy {
            let mut toy = Toy {
                instructions,
                users: HashMap::default(),
                element_users: HashMap::default(),
                value_users: HashMap::default(),
            };
            for (name, opcode, operands, index, _) in &toy.instructions {
                for &o in operands {
                    toy.users.entry(o).or_default().push(name);
                    match (*opcode, index) {
                        ("get-tuple-element", Some(k)) => {
                            toy.element_users.entry((o, *k)).or_default().push(name)
                        }
                        _ => toy.value_users.entry(o).or_default().push(name),
                    }
                }
            }
            toy
        }

        fn get(&self, id: &str) -> Option<&Row> {
            self.instructions.iter().find(|i| i.0 == id)
        }
    }

    impl Dataflow for Toy {
        type Id = &'static str;
        fn users(&self, id: &'static str) -> &[&'static str] {
            self.users.get(id).map_or(&[][..], Vec::as_slice)
        }
        fn element_users(&self, id: &'static str, element: i64) -> &[&'static str] {
            self.element_users
                .get(&(id, element))
                .map_or(&[][..], Vec::as_slice)
        }
        fn value_users(&self, id: &'static str) -> &[&'static str] {
            self.value_users.get(id).map_or(&[][..], Vec::as_slice)
        }
        fn opcode(&self, id: &'static str) -> Option<&str> {
            self.get(id).map(|i| i.1)
        }
        fn tuple_index(&self, id: &'static str) -> Option<i64> {
            self.get(id).and_then(|i| i.3)
        }
        fn calls(&self, user: &'static str) -> bool {
            self.get(user).is_some_and(|i| !i.4.is_empty())
        }
        fn operand_positions(
            &self,
            user: &'static str,
            operand: &'static str,
            out: &mut Vec<usize>,
        ) {
            if let Some(u) = self.get(user) {
                out.extend(
                    u.2.iter()
                        .enumerate()
                        .filter(|(_, &o)| o == operand)
                        .map(|(k, _)| k),
                );
            }
        }
        fn called_parameters(&self, user: &'static str, k: i64, out: &mut Vec<&'static str>) {
            if let Some(&p) = self.get(user).and_then(|u| u.4.get(k as usize)) {
                out.push(p);
            }
        }
    }

    #[test]
    fn a_tuple_element_reaches_a_contraction_only_through_its_own_get_tuple_element() {
        // t = (a, b); a loop carries t; inside, element 1 is contracted,
        // element 0 only added; after the loop, element 0 is contracted
        // through a fusion's parameter.
        let toy = Toy::new(vec![
            ("a", "parameter", vec![], None, vec![]),
            ("b", "parameter", vec![], None, vec![]),
            ("t", "tuple", vec!["a", "b"], None, vec![]),
            ("w", "while", vec!["t"], None, vec!["state"]),
            ("state", "parameter", vec![], None, vec![]),
            ("x0", "get-tuple-element", vec!["state"], Some(0), vec![]),
            ("x1", "get-tuple-element", vec!["state"], Some(1), vec![]),
            ("sum", "add", vec!["x0", "x0"], None, vec![]),
            ("prod", "dot", vec!["x1", "x1"], None, vec![]),
            ("y0", "get-tuple-element", vec!["w"], Some(0), vec![]),
            ("f", "fusion", vec!["y0"], None, vec!["p0"]),
            ("p0", "parameter", vec![], None, vec![]),
            ("c", "convolution", vec!["p0", "p0"], None, vec![]),
            ("z", "parameter", vec![], None, vec![]),
            ("u", "tuple", vec!["z", "b"], None, vec![]),
            ("v", "get-tuple-element", vec!["u"], Some(1), vec![]),
            ("d", "dot", vec!["v", "v"], None, vec![]),
        ]);
        let reach = Reach::default();
        assert!(reach.reaches(&toy, "b", None));
        // Element 0 reaches the convolution after the loop, in a fusion.
        assert!(reach.reaches(&toy, "a", None));
        // z is element 0 of u, whose element 1 alone is contracted.
        assert!(!reach.reaches(&toy, "z", None));
        // Through one reader only: b reaches through t and through u.
        assert!(reach.reaches(&toy, "b", Some("u")));
        assert!(!reach.reaches(&toy, "z", Some("u")));
        // Each answer is the plain walk's (every state, no memory).
        for start in ["a", "b", "z", "x0", "sum", "y0"] {
            let mut seen: HashSet<State<&str>> = HashSet::default();
            let mut stack = Vec::new();
            let mut plain = successors(&toy, (start, None), None, &mut stack);
            while let Some(state) = stack.pop() {
                if !plain && seen.insert(state) {
                    plain = successors(&toy, state, None, &mut stack);
                }
            }
            assert_eq!(reach.reaches(&toy, start, None), plain, "{start}");
        }
    }
}
