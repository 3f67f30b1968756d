//! The cgroup tree the jobs run in, as engines hand it to policies: tenant 0 is the root
//! (jobs without a cgroup), every other tenant has a parent, a weight and perhaps an
//! io.latency target. A job's `cgroup=a/b` makes `a` a tenant below the root and `a/b`
//! one below `a`.

use crate::Nanos;

/// One cgroup: its path below the root (`a/b`), its parent tenant and its weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantNode {
    pub name: String,
    pub parent: u32,
    pub weight: u32,
}

/// Tenants by number (the index): 0 is the root; a parent comes before its children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TenantTree {
    nodes: Vec<TenantNode>,
    /// Whether a job named the tenant itself (and so gave its weight).
    named: Vec<bool>,
    /// Each tenant's io.latency target (`cgroup_io_latency`), if a job gave one.
    latency_targets: Vec<Option<Nanos>>,
}

/// The weight of the root and of a cgroup no job gives one (the kernel's default).
pub const DEFAULT_WEIGHT: u32 = 100;

impl Default for TenantTree {
    fn default() -> TenantTree {
        TenantTree {
            nodes: vec![TenantNode { name: String::new(), parent: 0, weight: DEFAULT_WEIGHT }],
            named: vec![true],
            latency_targets: vec![None],
        }
    }
}

impl TenantTree {
    /// The tenant of cgroup `path` (slashes separate levels; empty parts are ignored),
    /// adding it and any missing ancestor. A cgroup added for a descendant's sake takes
    /// the default weight until `explicit_weight` names it; after that its weight stays.
    /// An empty path is the root, whose weight does not change.
    pub fn add(&mut self, path: &str, explicit_weight: Option<u32>) -> u32 {
        let mut tenant = 0u32;
        let mut so_far = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if !so_far.is_empty() {
                so_far.push('/');
            }
            so_far.push_str(part);
            tenant = match self.nodes.iter().position(|n| n.name == so_far) {
                Some(i) => i as u32,
                None => {
                    self.nodes.push(TenantNode { name: so_far.clone(), parent: tenant, weight: DEFAULT_WEIGHT });
                    self.named.push(false);
                    self.latency_targets.push(None);
                    (self.nodes.len() - 1) as u32
                }
            };
        }
        if let Some(weight) = explicit_weight.filter(|_| !self.named[tenant as usize]) {
            self.nodes[tenant as usize].weight = weight;
            self.named[tenant as usize] = true;
        }
        tenant
    }

    /// A tree of `weights.len()` cgroups directly below the root (tenants 1, 2, ...).
    pub fn flat(weights: &[u32]) -> TenantTree {
        let mut tree = TenantTree::default();
        for (i, &weight) in weights.iter().enumerate() {
            tree.nodes.push(TenantNode { name: format!("tenant{}", i + 1), parent: 0, weight });
            tree.named.push(true);
            tree.latency_targets.push(None);
        }
        tree
    }

    /// Gives `tenant` (not the root, which has none in the kernel either) its io.latency
    /// target, unless an earlier job gave it one: the first target given stays.
    pub fn set_latency_target(&mut self, tenant: u32, target: Nanos) {
        if let Some(slot) = self.latency_targets.get_mut(tenant as usize).filter(|s| tenant != 0 && s.is_none()) {
            *slot = Some(target);
        }
    }

    /// The io.latency target of `tenant`, if it has one.
    pub fn latency_target(&self, tenant: u32) -> Option<Nanos> {
        self.latency_targets.get(tenant as usize).copied().flatten()
    }

    pub fn node(&self, tenant: u32) -> Option<&TenantNode> {
        self.nodes.get(tenant as usize)
    }

    /// The tenants below the root, in number order.
    pub fn cgroups(&self) -> impl Iterator<Item = (u32, &TenantNode)> {
        self.nodes.iter().enumerate().skip(1).map(|(i, n)| (i as u32, n))
    }

    /// Where `tenant` sits: its parent and the parent's weight (`None`: right below the
    /// root), and its own weight. A tenant the tree does not know (a policy driven
    /// without `set_tenants`) is a cgroup right below the root with `weight`, its
    /// requests' weight.
    pub fn place(&self, tenant: u32, weight: u32) -> (Option<(u32, u32)>, u32) {
        match self.node(tenant).filter(|_| tenant != 0) {
            Some(n) => ((n.parent != 0).then(|| (n.parent, self.nodes[n.parent as usize].weight)), n.weight),
            None => (None, weight),
        }
    }

    /// The path from the root to `tenant`, both included (`[0]` for the root; `[0,
    /// tenant]` for a tenant the tree does not know, as `place` puts it).
    pub fn path_to(&self, tenant: u32) -> Vec<u32> {
        let mut path = vec![tenant];
        let mut at = tenant;
        while at != 0 {
            at = self.node(at).map_or(0, |n| n.parent);
            path.push(at);
        }
        path.reverse();
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_adds_its_ancestors_first_with_the_default_weight() {
        let mut tree = TenantTree::default();
        assert_eq!(tree.add("a/b", Some(300)), 2);
        assert_eq!(tree.node(1), Some(&TenantNode { name: "a".into(), parent: 0, weight: 100 }));
        assert_eq!(tree.node(2), Some(&TenantNode { name: "a/b".into(), parent: 1, weight: 300 }));
        // a job in `a` itself names it later: the weight is its own from then on
        assert_eq!(tree.add("/a/", Some(500)), 1);
        assert_eq!(tree.node(1).unwrap().weight, 500);
        assert_eq!(tree.add("a", Some(700)), 1);
        assert_eq!(tree.node(1).unwrap().weight, 500, "the first weight given stays");
        assert_eq!(tree.add("a//c", None), 3);
        assert_eq!(tree.path_to(3), vec![0, 1, 3]);
        assert_eq!(tree.path_to(9), vec![0, 9], "an unknown tenant is right below the root");
        assert_eq!(tree.path_to(0), vec![0]);
        assert_eq!(tree.place(3, 50), (Some((1, 500)), 100));
        assert_eq!((tree.place(1, 50), tree.place(9, 50)), ((None, 500), (None, 50)));
        assert_eq!(tree.add("", Some(200)), 0);
        assert_eq!(tree.node(0).unwrap().weight, 100, "the root keeps its weight");
        assert!(TenantTree::flat(&[100, 200]).cgroups().all(|(_, n)| n.parent == 0));
    }

    #[test]
    fn the_first_latency_target_given_stays() {
        let mut tree = TenantTree::default();
        let b = tree.add("a/b", None);
        assert_eq!((tree.latency_target(1), tree.latency_target(b)), (None, None));
        tree.set_latency_target(b, Nanos::from_us(100));
        tree.set_latency_target(b, Nanos::from_us(300));
        assert_eq!(tree.latency_target(b), Some(Nanos::from_us(100)));
        tree.set_latency_target(0, Nanos::from_us(100));
        assert_eq!(tree.latency_target(0), None, "the root has no io.latency");
        assert_eq!(tree.latency_target(9), None);
        tree.set_latency_target(9, Nanos::from_us(100));
    }
}
