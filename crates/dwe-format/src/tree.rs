//! The bisection tree over time steps and the residual rule: interior time steps are stored
//! minus the truncating average of their two parents (see [`crate::file_format`]).

/// One node of the tree: time step `t` predicted from parents `left` and `right`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) t: u32,
    pub(crate) left: u32,
    pub(crate) right: u32,
}

/// Interior nodes in pre-order (left subtree first), starting from the interval (0, T−1).
/// Together with 0 and T−1 in front, this is the order time steps are written in.
pub(crate) fn interior_preorder(num_timesteps: u32) -> Vec<Node> {
    let mut out = Vec::new();
    if num_timesteps < 3 {
        return out;
    }
    let mut stack = vec![(0u32, num_timesteps - 1)];
    while let Some((l, r)) = stack.pop() {
        let m = l + (r - l) / 2;
        if m == l {
            continue;
        }
        out.push(Node {
            t: m,
            left: l,
            right: r,
        });
        stack.push((m, r));
        stack.push((l, m));
    }
    out
}

/// All time steps in tree (write) order: `[0, T−1, interior pre-order…]`.
#[must_use]
pub fn tree_order(num_timesteps: u32) -> Vec<u32> {
    let mut order = Vec::new();
    if num_timesteps == 0 {
        return order;
    }
    order.push(0);
    if num_timesteps >= 2 {
        order.push(num_timesteps - 1);
    }
    order.extend(interior_preorder(num_timesteps).iter().map(|n| n.t));
    order
}

/// The nodes from the root interval down to `t` (empty for t = 0 or T−1; t must be < T).
pub(crate) fn path_to(num_timesteps: u32, t: u32) -> Vec<Node> {
    let mut out = Vec::new();
    if t == 0 || t + 1 >= num_timesteps {
        return out;
    }
    let (mut l, mut r) = (0u32, num_timesteps - 1);
    loop {
        let m = l + (r - l) / 2;
        if m == l {
            break; // unreachable for 0 < t < T-1
        }
        out.push(Node {
            t: m,
            left: l,
            right: r,
        });
        match t.cmp(&m) {
            core::cmp::Ordering::Equal => break,
            core::cmp::Ordering::Less => r = m,
            core::cmp::Ordering::Greater => l = m,
        }
    }
    out
}

/// The prediction `trunc((a + b) / 2)` computed in i32; always fits in i16.
#[inline(always)]
pub(crate) fn predict(a: i16, b: i16) -> i16 {
    let avg = (i32::from(a) + i32::from(b)) / 2;
    // |avg| <= 32768 / ... : the truncating mean of two i16 lies between them, so fits in i16.
    #[allow(clippy::cast_possible_truncation)]
    let p = avg as i16;
    p
}

/// In-place version: `x[i] = x[i] wrapping_add predict(left[i], right[i])`.
pub(crate) fn reconstruct_in_place(x: &mut [i16], left: &[i16], right: &[i16]) {
    for ((o, &a), &b) in x.iter_mut().zip(left).zip(right) {
        *o = o.wrapping_add(predict(a, b));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_orders_of_small_t() {
        // Pre-order of the bisection of (0, T−1) after 0 and T−1; the fixtures written by the
        // reference builders check the order byte for byte.
        assert_eq!(tree_order(2), [0, 1]);
        assert_eq!(tree_order(3), [0, 2, 1]);
        assert_eq!(tree_order(6), [0, 5, 2, 1, 3, 4]);
        assert_eq!(tree_order(9), [0, 8, 4, 2, 1, 3, 6, 5, 7]);
    }

    #[test]
    fn every_interior_once_and_paths_match() {
        for t_count in 2..80u32 {
            let mut seen: Vec<u32> = tree_order(t_count);
            seen.sort_unstable();
            assert_eq!(seen, (0..t_count).collect::<Vec<_>>());
            let nodes = interior_preorder(t_count);
            for t in 1..t_count.saturating_sub(1) {
                let path = path_to(t_count, t);
                assert_eq!(path.last().unwrap().t, t);
                assert!(nodes.contains(path.last().unwrap()));
            }
        }
    }

    #[test]
    fn prediction_truncates_toward_zero() {
        assert_eq!(predict(-32768, -1), -16384);
        assert_eq!(predict(-3, 0), -1);
        assert_eq!(predict(1, -2), 0);
        assert_eq!(predict(32767, 32767), 32767);
        assert_eq!(predict(-32768, -32768), -32768);
    }
}
