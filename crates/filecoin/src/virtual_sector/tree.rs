//! Merkle trees of a virtual sector: only the touched leaves are real, every other leaf
//! has one default value, so a tree of 2^30 leaves costs a few hashes per touched leaf.
//!
//! The hashes are the hasher's own (`Hasher::Function`), level by level in the tree's
//! arities, exactly as storage-proofs' `InclusionPath::root` recomputes them; paths come
//! out in the `(siblings, index)` form `MerkleProof::from_parts` takes.

use std::collections::{BTreeMap, HashMap};

use filecoin_hashers::Hasher;
use merkletree::hash::Algorithm;

/// The `(siblings, index in its group)` path elements of one leaf, leaf level first.
pub(crate) type Path<D> = Vec<(Vec<D>, usize)>;

/// A tree whose leaves are `default_leaf` except at the positions given.
pub(crate) struct SparseTree<H: Hasher> {
    /// Arity of each level, leaf level first (e.g. 9 x 8 then 8 for 32 GiB tree C).
    arities: Vec<usize>,
    /// The hash of an all-default subtree at each level (`defaults[0]` is the leaf).
    defaults: Vec<H::Domain>,
    /// Real nodes per level (level 0: the touched leaves).
    levels: Vec<HashMap<u64, H::Domain>>,
}

fn hash_group<H: Hasher>(children: &[H::Domain], height: usize) -> H::Domain {
    H::Function::default().multi_node(children, height)
}

impl<H: Hasher> SparseTree<H> {
    /// Builds the tree of `leaves` (index, value) over `arities` (whose product is the
    /// leaf count); untouched leaves are `default_leaf`.
    pub(crate) fn new(
        arities: Vec<usize>,
        default_leaf: H::Domain,
        leaves: impl IntoIterator<Item = (u64, H::Domain)>,
    ) -> Self {
        let mut defaults = vec![default_leaf];
        for (height, &arity) in arities.iter().enumerate() {
            let below = *defaults.last().expect("at least the leaf default");
            defaults.push(hash_group::<H>(&vec![below; arity], height));
        }
        let mut levels = vec![leaves.into_iter().collect::<HashMap<_, _>>()];
        for (height, &arity) in arities.iter().enumerate() {
            let below = &levels[height];
            // Parent index -> its children's values (defaults where untouched).
            let mut groups: BTreeMap<u64, Vec<H::Domain>> = BTreeMap::new();
            for (&i, &v) in below {
                let group = groups
                    .entry(i / arity as u64)
                    .or_insert_with(|| vec![defaults[height]; arity]);
                group[(i % arity as u64) as usize] = v;
            }
            let above = groups
                .into_iter()
                .map(|(p, children)| (p, hash_group::<H>(&children, height)))
                .collect();
            levels.push(above);
        }
        Self {
            arities,
            defaults,
            levels,
        }
    }

    /// The root.
    pub(crate) fn root(&self) -> H::Domain {
        let top = self.arities.len();
        self.levels[top]
            .get(&0)
            .copied()
            .unwrap_or(self.defaults[top])
    }

    fn node(&self, level: usize, index: u64) -> H::Domain {
        self.levels[level]
            .get(&index)
            .copied()
            .unwrap_or(self.defaults[level])
    }

    /// The leaf at `index`.
    pub(crate) fn leaf(&self, index: u64) -> H::Domain {
        self.node(0, index)
    }

    /// The inclusion path of leaf `index`.
    pub(crate) fn path(&self, index: u64) -> Path<H::Domain> {
        let mut i = index;
        self.arities
            .iter()
            .enumerate()
            .map(|(level, &arity)| {
                let (group, pos) = (i / arity as u64, (i % arity as u64) as usize);
                let siblings = (0..arity)
                    .filter(|&j| j != pos)
                    .map(|j| self.node(level, group * arity as u64 + j as u64))
                    .collect();
                i = group;
                (siblings, pos)
            })
            .collect()
    }
}

/// A binary tree over leaves that repeat with a period of `pattern.len()` (a power of two
/// dividing the leaf count): the data of a virtual sector, whose root is known without
/// knowing which leaves will be challenged.
pub(crate) struct PeriodicTree<H: Hasher> {
    /// The pattern's own tree, leaf level first (`pattern_levels[k]` has `len >> k` nodes).
    pattern_levels: Vec<Vec<H::Domain>>,
    /// Above the pattern every subtree is the same: one hash per level.
    upper: Vec<H::Domain>,
}

impl<H: Hasher> PeriodicTree<H> {
    /// A tree of `2^height` leaves, leaf `i` being `pattern[i % pattern.len()]`.
    pub(crate) fn new(pattern: Vec<H::Domain>, height: usize) -> Self {
        assert!(pattern.len().is_power_of_two() && pattern.len() <= 1 << height);
        let mut pattern_levels = vec![pattern];
        while pattern_levels.last().expect("non-empty").len() > 1 {
            let height = pattern_levels.len() - 1;
            let below = pattern_levels.last().expect("non-empty");
            let above = below
                .chunks(2)
                .map(|pair| hash_group::<H>(pair, height))
                .collect();
            pattern_levels.push(above);
        }
        let mut upper = vec![pattern_levels.last().expect("non-empty")[0]];
        for h in pattern_levels.len() - 1..height {
            let below = *upper.last().expect("non-empty");
            upper.push(hash_group::<H>(&[below, below], h));
        }
        Self {
            pattern_levels,
            upper,
        }
    }

    fn pattern_height(&self) -> usize {
        self.pattern_levels.len() - 1
    }

    /// The root.
    pub(crate) fn root(&self) -> H::Domain {
        *self.upper.last().expect("non-empty")
    }

    /// The leaf at `index`.
    pub(crate) fn leaf(&self, index: u64) -> H::Domain {
        let p = &self.pattern_levels[0];
        p[(index % p.len() as u64) as usize]
    }

    /// The inclusion path of leaf `index`.
    pub(crate) fn path(&self, index: u64) -> Path<H::Domain> {
        let ph = self.pattern_height();
        let height = ph + self.upper.len() - 1;
        (0..height)
            .map(|level| {
                let pos = ((index >> level) & 1) as usize;
                let sibling = if level < ph {
                    let nodes = &self.pattern_levels[level];
                    nodes[(((index >> level) ^ 1) % nodes.len() as u64) as usize]
                } else {
                    self.upper[level - ph]
                };
                (vec![sibling], pos)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_hashers::poseidon::{PoseidonDomain, PoseidonHasher};
    use filecoin_hashers::sha256::{Sha256Domain, Sha256Hasher};
    use filecoin_hashers::Domain;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// Root of a full tree over every leaf, hashed level by level.
    fn full_root<H: Hasher>(mut nodes: Vec<H::Domain>, arities: &[usize]) -> H::Domain {
        for (height, &a) in arities.iter().enumerate() {
            nodes = nodes
                .chunks(a)
                .map(|c| hash_group::<H>(c, height))
                .collect();
        }
        assert_eq!(nodes.len(), 1);
        nodes[0]
    }

    /// Root recomputed from a leaf and its path, as `InclusionPath::root` does.
    fn root_from_path<H: Hasher>(leaf: H::Domain, path: &Path<H::Domain>) -> H::Domain {
        path.iter()
            .enumerate()
            .fold(leaf, |h, (height, (siblings, index))| {
                let mut nodes = siblings.clone();
                nodes.insert(*index, h);
                hash_group::<H>(&nodes, height)
            })
    }

    #[test]
    fn a_sparse_tree_is_the_full_tree_of_its_leaves() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let arities = [8usize, 8, 2];
        let n = 128u64;
        let default = PoseidonDomain::random(&mut rng);
        let touched: Vec<(u64, PoseidonDomain)> = [0u64, 5, 63, 64, 127, 9]
            .iter()
            .map(|&i| (i, PoseidonDomain::random(&mut rng)))
            .collect();
        let tree = SparseTree::<PoseidonHasher>::new(arities.to_vec(), default, touched.clone());
        let mut all = vec![default; n as usize];
        for &(i, v) in &touched {
            all[i as usize] = v;
        }
        assert_eq!(
            tree.root(),
            full_root::<PoseidonHasher>(all.clone(), &arities)
        );
        for i in [0u64, 1, 5, 9, 63, 64, 100, 127] {
            assert_eq!(tree.leaf(i), all[i as usize]);
            let path = tree.path(i);
            assert_eq!(path.len(), arities.len());
            assert_eq!(
                root_from_path::<PoseidonHasher>(all[i as usize], &path),
                tree.root()
            );
        }
    }

    #[test]
    fn a_periodic_tree_is_the_full_tree_of_its_repeated_pattern() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let pattern: Vec<Sha256Domain> = (0..8).map(|_| Sha256Domain::random(&mut rng)).collect();
        let height = 6;
        let tree = PeriodicTree::<Sha256Hasher>::new(pattern.clone(), height);
        let all: Vec<Sha256Domain> = (0..1 << height).map(|i| pattern[i % 8]).collect();
        assert_eq!(tree.root(), full_root::<Sha256Hasher>(all.clone(), &[2; 6]));
        for i in [0u64, 1, 7, 8, 33, 63] {
            assert_eq!(tree.leaf(i), all[i as usize]);
            let path = tree.path(i);
            assert_eq!(path.len(), height);
            assert_eq!(
                root_from_path::<Sha256Hasher>(all[i as usize], &path),
                tree.root()
            );
        }
        // A pattern as long as the tree.
        let whole = PeriodicTree::<Sha256Hasher>::new(all.clone(), height);
        assert_eq!(whole.root(), tree.root());
    }
}
