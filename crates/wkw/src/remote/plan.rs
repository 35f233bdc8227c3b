//! Planning the byte ranges of a remote read (the fetched bytes reach the decoder as a
//! `scifmt_io::Prefetched`).

use super::RemoteOptions;

/// The requests for the block ranges of several files (`files[i]`: file i's ranges, as
/// `(start, end)`), planned by [`scifmt_io::coalesce`] under `options` (one round of at most
/// `concurrency` requests where the byte budget allows).
pub(crate) fn schedule(
    options: &RemoteOptions,
    files: Vec<Vec<(u64, u64)>>,
) -> Vec<Vec<(u64, u64)>> {
    let objects: Vec<Vec<std::ops::Range<u64>>> = files
        .into_iter()
        .map(|r| r.into_iter().map(|(s, e)| s..e).collect())
        .collect();
    options
        .plan(&objects)
        .into_iter()
        .map(|rs| {
            rs.into_iter()
                .map(|q| (q.range.start, q.range.end))
                .collect()
        })
        .collect()
}

/// The part of `[s, e)` not inside `[0, have)`: `None` if nothing is left.
pub(crate) fn beyond(s: u64, e: u64, have: u64) -> Option<(u64, u64)> {
    let s = s.max(have);
    (e > s).then_some((s, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_leaves_what_was_not_fetched() {
        assert_eq!(beyond(0, 10, 13), None);
        assert_eq!(beyond(5, 20, 13), Some((13, 20)));
    }
}
