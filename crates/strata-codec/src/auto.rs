//! `auto`: choose a column's compression chain by trying candidates on a sample.
//!
//! A spec of `auto` (or `auto:ratio`, `auto:write`, `auto:read`) is resolved when a
//! column is written: [`choose`] compresses a sample of the column's blocks with every
//! candidate chain that suits its element kind and keeps the best for the objective.
//! The chosen concrete spec is what is stored, so readers never see `auto`.
//!
//! ```
//! use strata_codec::{ElementKind, NumericClass, auto::{Objective, choose}};
//! // Sorted nanosecond timestamps: an integer method wins.
//! let raw: Vec<u8> = (0..50_000i64).flat_map(|i| (1_000_000 + i * 997 + i % 7).to_le_bytes()).collect();
//! let choice = choose(ElementKind::new(8, NumericClass::Signed), &raw, Objective::Ratio, 17).unwrap();
//! assert!(choice.spec.to_string().contains("pco") || choice.spec.to_string().contains("delta"));
//! assert!(choice.reason.contains("ratio"));
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use rayon::prelude::*;

use crate::element::{ElementKind, NumericClass};
use crate::spec::CompressionSpec;
use crate::{CodecError, compress_block, decompress_block};

/// What `auto` optimises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Objective {
    /// The smallest stored size among the light chains of [`candidates`] (no slow
    /// levels: zstd level 1 with filters, pcodec level 6). pcodec writes 1.2x to 3x
    /// slower than zstd level 1 on a column but stores far less on numbers. The
    /// choice depends only on sizes, so it is the same on every machine.
    #[default]
    Ratio,
    /// The fastest write: compression time plus the time to write the stored bytes
    /// at [`ASSUMED_DEVICE_MBPS`].
    Write,
    /// The fastest read: the time to read the stored bytes at
    /// [`ASSUMED_DEVICE_MBPS`] plus decompression time.
    Read,
}

/// The storage bandwidth the write and read objectives assume, MB/s: a fast SSD.
/// Slower storage favours smaller output; this keeps compression when it pays.
pub const ASSUMED_DEVICE_MBPS: f64 = 1000.0;

/// Blocks sampled from a column: evenly spaced whole blocks, at most this many.
pub const SAMPLE_BLOCKS: usize = 4;

/// A candidate must store at least 3% less than an earlier (simpler, faster) one to
/// be preferred on ratio, so near-ties go to the faster chain. On TAQ quote sizes,
/// shuffle+zstd:1 stores 1.8% more than pcodec and compresses 2.5x faster.
const RATIO_MARGIN: f64 = 0.97;

/// ... and save at least this share of the raw bytes: on a column that already
/// shrinks to almost nothing, a slower chain is not worth a few bytes.
const MIN_SAVING: f64 = 0.001;

/// For the ratio objective, every candidate is tried on the first sampled block and
/// only those storing at most this factor times the best there go on to the rest of
/// the sample: the losers (often pcodec searching its own delta order, the slowest
/// trial) are dropped after a quarter of the work. On the built-in 5M-row quote
/// table every choice stayed the same (the same bytes stored), and with pcodec's
/// mode search skipped after Strata's delta (see `block.rs`), `strata compress
/// --spec auto` ran 3-6% fewer instructions on Time, Bid_Price and Sequence_Number.
const PRUNE_FACTOR: f64 = 1.10;

impl Objective {
    /// Every objective.
    pub const ALL: [Objective; 3] = [Objective::Ratio, Objective::Write, Objective::Read];

    /// The name used in specs (`auto:ratio`).
    pub fn name(self) -> &'static str {
        match self {
            Objective::Ratio => "ratio",
            Objective::Write => "write",
            Objective::Read => "read",
        }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Objective {
    type Err = String;

    fn from_str(text: &str) -> Result<Objective, String> {
        Objective::ALL
            .into_iter()
            .find(|o| o.name() == text)
            .ok_or_else(|| format!("unknown auto objective '{text}'; valid: ratio, write, read"))
    }
}

/// One candidate tried on the sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The candidate chain.
    pub spec: CompressionSpec,
    /// Sampled blocks it was tried on: all of them, or (ratio objective) only the
    /// first when that block showed it out of reach of the best (see
    /// [`PRUNE_FACTOR`]); such a trial cannot win.
    pub blocks: usize,
    /// Sample bytes over stored bytes, on the blocks it was tried on.
    pub ratio: f64,
    /// Sample MB (10^6 bytes) compressed per second. For the ratio objective the
    /// candidates are tried in parallel, so this is a speed under contention.
    pub compress_mbps: f64,
    /// Sample MB decompressed per second (not measured for the ratio objective,
    /// which does not need it).
    pub decompress_mbps: Option<f64>,
}

/// What `auto` chose and why.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoChoice {
    /// The chosen concrete spec.
    pub spec: CompressionSpec,
    /// The objective it was chosen for.
    pub objective: Objective,
    /// Every candidate's figures on the sample, in the order tried.
    pub trials: Vec<Trial>,
    /// One line saying why this spec won.
    pub reason: String,
}

/// The chains `auto` tries for elements of `kind` with block size `2^lbs`: zstd
/// level 1 alone and after filters that cost one pass over the block, and pcodec at
/// level 6 after Strata's delta filter (fast: pcodec skips its own delta search)
/// and alone (slower: it searches). Ties go to the earlier, faster chain. The write
/// and read objectives add the fastest codecs.
pub fn candidates(kind: ElementKind, objective: Objective, lbs: u8) -> Vec<CompressionSpec> {
    let mut names: Vec<&str> = match (kind.class, kind.width) {
        (NumericClass::Opaque, _) | (_, 1) => vec!["zstd:1"],
        (NumericClass::Float, _) => {
            vec!["zstd:1", "xor+zstd:1", "dec+zstd:1", "dec+delta+zstd:1", "dec+delta+pco:6", "pco:6", "dec+pco:6"]
        }
        (NumericClass::Signed | NumericClass::Unsigned, _) => {
            vec!["zstd:1", "delta+zstd:1", "delta+shuffle+zstd:1", "shuffle+zstd:1", "delta+pco:6", "pco:6"]
        }
    };
    if objective != Objective::Ratio {
        names.extend(["lz4hc:0", "snappy", "zstd:-7"]);
        if kind.width > 1 && kind.class != NumericClass::Opaque {
            names.push("shuffle+lz4hc:0");
        }
    }
    names
        .into_iter()
        .map(|name| {
            let mut spec: CompressionSpec = name.parse().expect("candidate specs are valid");
            spec.lbs = lbs;
            spec
        })
        .filter(|spec| spec.check_suitable(kind).is_ok())
        .collect()
}

/// Up to [`SAMPLE_BLOCKS`] whole blocks of `2^lbs` bytes spread evenly over `raw`
/// (all of it when it is that small). Block edges fall on element boundaries.
pub fn sample(raw: &[u8], kind: ElementKind, lbs: u8) -> Vec<&[u8]> {
    let block = (1usize << lbs) / kind.width * kind.width;
    let blocks = raw.len().div_ceil(block.max(1));
    if blocks <= SAMPLE_BLOCKS {
        return raw.chunks(block.max(1)).collect();
    }
    (0..SAMPLE_BLOCKS)
        .map(|i| {
            let b = i * (blocks - 1) / (SAMPLE_BLOCKS - 1);
            &raw[b * block..((b + 1) * block).min(raw.len())]
        })
        .collect()
}

/// Chooses the spec for a column of `kind` whose raw little-endian values are `raw`,
/// for `objective`, with blocks of `2^lbs` bytes. An empty column gets zstd:1.
pub fn choose(kind: ElementKind, raw: &[u8], objective: Objective, lbs: u8) -> Result<AutoChoice, CodecError> {
    let specs = candidates(kind, objective, lbs);
    let blocks = sample(raw, kind, lbs);
    let sampled: usize = blocks.iter().map(|b| b.len()).sum();
    if sampled == 0 || specs.len() == 1 {
        let why = if sampled == 0 { "empty column: nothing to sample" } else { "the only candidate for this kind" };
        let spec = specs.into_iter().next().expect("zstd:1 suits every kind");
        let reason = format!("{objective}: {spec}, {why}");
        return Ok(AutoChoice { spec, objective, trials: Vec::new(), reason });
    }
    let trials = if objective == Objective::Ratio {
        let first = Run::new(specs[0].clone(), kind, &blocks, false)?;
        if (first.stored() as f64) < MIN_SAVING * sampled as f64 {
            // The first chain stores less than any later one would have to save.
            let first = first.trial();
            let reason = format!(
                "{objective}: {} at ratio {:.0}: the sample shrinks below {}% of its size, so no other chain \
                 could save enough to be preferred",
                first.spec,
                first.ratio,
                MIN_SAVING * 100.0
            );
            return Ok(AutoChoice { spec: first.spec.clone(), objective, trials: vec![first], reason });
        }
        // Sizes do not depend on timing, so the other candidates run side by side:
        // first on one block, then on the rest where that block left them in reach.
        let (head, tail) = blocks.split_at(1);
        let mut rest = specs[1..]
            .par_iter()
            .map(|spec| Run::new(spec.clone(), kind, head, false))
            .collect::<Result<Vec<_>, _>>()?;
        let best_head = rest.iter().chain([&first]).map(|run| run.stored_per_block[0]).min().expect("zstd:1 ran");
        rest.par_iter_mut()
            .filter(|run| run.stored_per_block[0] as f64 <= best_head as f64 * PRUNE_FACTOR)
            .try_for_each(|run| run.extend(kind, tail))?;
        std::iter::once(first).chain(rest).map(Run::trial).collect()
    } else {
        // One at a time, so each candidate's speed is measured alone.
        let read = objective == Objective::Read;
        specs
            .into_iter()
            .map(|spec| Run::new(spec, kind, &blocks, read).map(Run::trial))
            .collect::<Result<Vec<_>, _>>()?
    };
    let mb = sampled as f64 / 1e6;
    let cost = |t: &Trial| {
        let io = mb / t.ratio / ASSUMED_DEVICE_MBPS;
        match objective {
            Objective::Ratio => 1.0 / t.ratio,
            Objective::Write => mb / t.compress_mbps + io,
            Objective::Read => mb / t.decompress_mbps.unwrap_or(f64::INFINITY) + io,
        }
    };
    let whole = |t: &Trial| t.blocks == blocks.len();
    let mut best = 0;
    for (i, t) in trials.iter().enumerate().skip(1).filter(|(_, t)| whole(t)) {
        let better = match objective {
            Objective::Ratio => {
                cost(t) < cost(&trials[best]) * RATIO_MARGIN && cost(&trials[best]) - cost(t) >= MIN_SAVING
            }
            _ => cost(t) < cost(&trials[best]),
        };
        if better {
            best = i;
        }
    }
    let winner = &trials[best];
    let runner_up = trials
        .iter()
        .enumerate()
        .filter(|(i, t)| *i != best && whole(t))
        .min_by(|a, b| cost(a.1).total_cmp(&cost(b.1)))
        .map(|(_, t)| t);
    let figure = |t: &Trial| match objective {
        Objective::Ratio => format!("{} at ratio {:.2}", t.spec, t.ratio),
        Objective::Write => format!("{} at {:.3} ms per MB written", t.spec, 1e3 * cost(t) / mb),
        Objective::Read => format!("{} at {:.3} ms per MB read", t.spec, 1e3 * cost(t) / mb),
    };
    let pruned = trials.iter().filter(|t| !whole(t)).count();
    let reason = format!(
        "{objective}: {} on a {:.0} KiB sample of {} block(s), best of {} candidates{}{}",
        figure(winner),
        sampled as f64 / 1024.0,
        blocks.len(),
        trials.len(),
        if pruned > 0 { format!(" ({pruned} out of reach after the first block)") } else { String::new() },
        runner_up.map(|t| format!("; next {}", figure(t))).unwrap_or_default()
    );
    Ok(AutoChoice { spec: winner.spec.clone(), objective, trials, reason })
}

/// A candidate's work on sampled blocks so far.
struct Run {
    spec: CompressionSpec,
    raw: usize,
    stored_per_block: Vec<usize>,
    compress_secs: f64,
    decompress_secs: Option<f64>,
}

impl Run {
    /// Compresses `blocks` with `spec` (and decompresses them again, timed, when
    /// `time_decompression`).
    fn new(
        spec: CompressionSpec,
        kind: ElementKind,
        blocks: &[&[u8]],
        time_decompression: bool,
    ) -> Result<Run, CodecError> {
        let mut run = Run {
            spec,
            raw: 0,
            stored_per_block: Vec::with_capacity(SAMPLE_BLOCKS),
            compress_secs: 0.0,
            decompress_secs: time_decompression.then_some(0.0),
        };
        run.extend(kind, blocks)?;
        Ok(run)
    }

    /// Tries the spec on more blocks.
    fn extend(&mut self, kind: ElementKind, blocks: &[&[u8]]) -> Result<(), CodecError> {
        let start = Instant::now();
        let packed = blocks.iter().map(|b| compress_block(&self.spec, kind, b)).collect::<Result<Vec<_>, _>>()?;
        self.compress_secs += start.elapsed().as_secs_f64();
        if let Some(secs) = &mut self.decompress_secs {
            let start = Instant::now();
            for (block, p) in blocks.iter().zip(&packed) {
                if let Some(p) = p {
                    decompress_block(&self.spec, kind, p, block.len())?;
                }
            }
            *secs += start.elapsed().as_secs_f64();
        }
        self.raw += blocks.iter().map(|b| b.len()).sum::<usize>();
        self.stored_per_block.extend(packed.iter().zip(blocks).map(|(p, b)| p.as_ref().map_or(b.len(), Vec::len)));
        Ok(())
    }

    fn stored(&self) -> usize {
        self.stored_per_block.iter().sum()
    }

    fn trial(self) -> Trial {
        let mb = self.raw as f64 / 1e6;
        Trial {
            blocks: self.stored_per_block.len(),
            ratio: self.raw as f64 / self.stored().max(1) as f64,
            compress_mbps: mb / self.compress_secs.max(1e-9),
            decompress_mbps: self.decompress_secs.map(|secs| mb / secs.max(1e-9)),
            spec: self.spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn longs(values: impl Iterator<Item = i64>) -> Vec<u8> {
        values.flat_map(i64::to_le_bytes).collect()
    }

    #[test]
    fn candidates_suit_their_kind() {
        for kind in [
            ElementKind::BYTES,
            ElementKind::new(2, NumericClass::Signed),
            ElementKind::new(4, NumericClass::Unsigned),
            ElementKind::new(4, NumericClass::Float),
            ElementKind::new(8, NumericClass::Float),
            ElementKind::new(8, NumericClass::Signed),
        ] {
            for objective in Objective::ALL {
                let specs = candidates(kind, objective, 14);
                assert!(!specs.is_empty());
                assert_eq!(specs[0].to_string(), "zstd:1@14", "zstd:1 is always the first, simplest");
                assert!(specs.iter().all(|s| s.check_suitable(kind).is_ok() && s.lbs == 14));
            }
        }
        assert_eq!(candidates(ElementKind::BYTES, Objective::Ratio, 17).len(), 1);
    }

    #[test]
    fn samples_are_whole_spread_blocks() {
        let raw = vec![0u8; (1 << 12) * 10 + 100];
        let kind = ElementKind::new(4, NumericClass::Signed);
        let blocks = sample(&raw, kind, 12);
        assert_eq!(blocks.len(), SAMPLE_BLOCKS);
        assert!(blocks.iter().all(|b| b.len() % 4 == 0));
        assert_eq!(blocks.last().unwrap().len(), 100, "the last block is included");
        assert_eq!(sample(&raw[..5000], kind, 12).len(), 2, "a small column is sampled whole");
        assert!(sample(&[], kind, 12).is_empty());
    }

    #[test]
    fn ratio_picks_the_smallest_and_explains() {
        // Exact cent prices: dec turns them into integers, which pco packs tightly.
        let prices: Vec<u8> =
            (0..40_000).flat_map(|i: i64| ((10_000 + (i * 7919) % 300) as f64 / 100.0).to_le_bytes()).collect();
        let kind = ElementKind::new(8, NumericClass::Float);
        let choice = choose(kind, &prices, Objective::Ratio, 17).unwrap();
        let best = choice.trials.iter().map(|t| t.ratio).fold(0.0, f64::max);
        let chosen = choice.trials.iter().find(|t| t.spec == choice.spec).unwrap();
        assert!(chosen.ratio >= best * RATIO_MARGIN, "{choice:?}");
        assert!(choice.spec.filters.contains(&crate::Filter::Decimal), "{}", choice.spec);
        assert!(choice.reason.starts_with("ratio: ") && choice.reason.contains("next "), "{}", choice.reason);
        assert_eq!(choose(kind, &prices, Objective::Ratio, 17).unwrap().spec, choice.spec, "deterministic");
        // zstd:1 on raw floats stores several times what dec+pco does: after the
        // first block it is out of reach, and only the winner's rivals go on.
        let blocks = sample(&prices, kind, 17).len();
        assert!(blocks > 1);
        assert_eq!(chosen.blocks, blocks, "the winner was tried on the whole sample");
        let pruned: Vec<String> = choice.trials.iter().filter(|t| t.blocks == 1).map(|t| t.spec.to_string()).collect();
        assert!(pruned.contains(&"xor+zstd:1".to_string()), "{pruned:?}");
        assert!(choice.reason.contains(&format!("({} out of reach after the first block)", pruned.len())));
    }

    #[test]
    fn every_objective_returns_a_suitable_spec() {
        let raw = longs((0..30_000).map(|i| i * 1000 + i % 13));
        let kind = ElementKind::new(8, NumericClass::Signed);
        for objective in Objective::ALL {
            let choice = choose(kind, &raw, objective, 16).unwrap();
            assert!(choice.spec.check_suitable(kind).is_ok());
            assert!(choice.reason.starts_with(objective.name()), "{}", choice.reason);
            assert_eq!(choice.trials.len(), candidates(kind, objective, 16).len());
        }
        let empty = choose(kind, &[], Objective::Write, 17).unwrap();
        assert_eq!(empty.spec.to_string(), "zstd:1");
        // zstd:1 stores a block of zeros in a few bytes.
        let zeros = vec![0u8; 1 << 20];
        let choice = choose(kind, &zeros, Objective::Ratio, 17).unwrap();
        assert_eq!(choice.spec.to_string(), "zstd:1", "{}", choice.reason);
        assert_eq!(choice.trials.len(), 1, "nothing else can save enough: {}", choice.reason);
        assert!(choice.reason.contains("no other chain"), "{}", choice.reason);
        let chars = choose(ElementKind::BYTES, b"RRRRRRRR", Objective::Ratio, 17).unwrap();
        assert!(chars.trials.is_empty() && chars.reason.contains("only candidate"), "{}", chars.reason);
        assert!("fast".parse::<Objective>().unwrap_err().contains("ratio, write, read"));
    }
}
