//! The fast width-3 Poseidon permutation on [`crate::field::Fr`], in the optimised form of the
//! Poseidon paper (appendix B), derived once at start-up from the reference (light-poseidon)
//! constants — no constant table is copied from anywhere:
//!
//! 1. **Constants moved forward.** In a partial round only element 0 goes through x^5, so the
//!    constants added to elements 1 and 2 pass through unchanged; multiplied by the MDS they are
//!    folded into the next round's constants. Each partial round then adds one constant, not three.
//! 2. **Sparse matrices.** Each partial round's MDS `A` is split as `A = M'' · M'` with
//!    `M' = diag(1, Â)` and `M'' = [[a00, v̂ᵀ], [w, I]]` (sparse: 5 multiplications instead of 9).
//!    `M'` leaves element 0 alone, so it commutes with the partial S-box and is pushed into the
//!    previous round's matrix, working backwards; the last full round before the partial rounds
//!    absorbs the final `M'`. A partial round costs 3 + 5 multiplications instead of 3 + 9.
//! 3. **Interleaving.** [`permute_lanes`] runs `L` independent permutations round by round, so
//!    the CPU overlaps their multiplication chains (one permutation is a long dependency chain).
//!
//! Layer 4 of the crate (the permutation); it imports only from this layer or below.

use crate::arith::Arith;
use crate::field::Fr;
use crate::reference;
use ark_bn254::Fr as ArkFr;
use ark_ff::{AdditiveGroup, Field, PrimeField};
use std::sync::OnceLock;

/// Full rounds before (and after) the partial rounds.
pub(crate) const HALF_FULL: usize = 4;
/// Partial rounds.
pub(crate) const PARTIAL: usize = 57;

/// One partial round's sparse matrix `[[m00, v̂ᵀ], [w, I]]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sparse {
    pub(crate) m00: Fr,
    pub(crate) v_hat: [Fr; 2],
    pub(crate) w: [Fr; 2],
}

/// The optimised constants.
#[derive(Debug)]
pub struct Optimized {
    /// Round constants of the 8 full rounds (first 4, then last 4 with the partial rounds'
    /// moved constants folded into the first of them).
    pub(crate) full_constants: [[Fr; 3]; 2 * HALF_FULL],
    /// The MDS matrix, used by every full round except the last one before the partial rounds.
    pub(crate) mds: [[Fr; 3]; 3],
    /// `M'_first · MDS`, the matrix of the last full round before the partial rounds.
    pub(crate) pre_partial_mds: [[Fr; 3]; 3],
    /// The single constant each partial round adds to element 0.
    pub(crate) partial_constants: [Fr; PARTIAL],
    pub(crate) sparse: [Sparse; PARTIAL],
}

fn to_fast(x: &ArkFr) -> Fr {
    Fr::from_limbs(x.into_bigint().0)
}

type ArkMatrix = [[ArkFr; 3]; 3];

fn mat_vec(m: &ArkMatrix, v: &[ArkFr; 3]) -> [ArkFr; 3] {
    std::array::from_fn(|row| (0..3).map(|col| m[row][col] * v[col]).sum())
}

fn mat_mul(a: &ArkMatrix, b: &ArkMatrix) -> ArkMatrix {
    std::array::from_fn(|row| {
        std::array::from_fn(|col| (0..3).map(|k| a[row][k] * b[k][col]).sum())
    })
}

/// Splits `a` into the sparse `M''` and the lower-right block `Â` (so `M' = diag(1, Â)`).
fn split_sparse(a: &ArkMatrix) -> (Sparse, ArkMatrix) {
    let hat = [[a[1][1], a[1][2]], [a[2][1], a[2][2]]];
    let v = [a[0][1], a[0][2]];
    // v̂ solves Âᵀ v̂ = v, so that v̂ᵀ Â = vᵀ.
    let det = hat[0][0] * hat[1][1] - hat[0][1] * hat[1][0];
    let inv_det = det
        .inverse()
        .expect("an MDS matrix has invertible square sub-matrices");
    let v_hat = [
        (hat[1][1] * v[0] - hat[1][0] * v[1]) * inv_det,
        (hat[0][0] * v[1] - hat[0][1] * v[0]) * inv_det,
    ];
    let sparse = Sparse {
        m00: to_fast(&a[0][0]),
        v_hat: [to_fast(&v_hat[0]), to_fast(&v_hat[1])],
        w: [to_fast(&a[1][0]), to_fast(&a[2][0])],
    };
    let mut m_prime = [[ArkFr::ZERO; 3]; 3];
    m_prime[0][0] = ArkFr::ONE;
    for r in 0..2 {
        for c in 0..2 {
            m_prime[r + 1][c + 1] = hat[r][c];
        }
    }
    (sparse, m_prime)
}

/// Derives the optimised form from the reference parameters.
fn derive() -> Optimized {
    let p = reference::params();
    assert_eq!(
        (p.full_rounds, p.partial_rounds, p.width),
        (2 * HALF_FULL, PARTIAL, 3),
        "light-poseidon's width-3 parameters changed shape"
    );
    let mds: ArkMatrix = std::array::from_fn(|r| std::array::from_fn(|c| p.mds[r][c]));
    let rounds = p.full_rounds + p.partial_rounds;
    let mut constants: Vec<[ArkFr; 3]> = (0..rounds)
        .map(|r| std::array::from_fn(|i| p.ark[r * 3 + i]))
        .collect();
    // 1. Move each partial round's constants for elements 1, 2 into the next round.
    for r in HALF_FULL..HALF_FULL + PARTIAL {
        let rest = [ArkFr::ZERO, constants[r][1], constants[r][2]];
        let pushed = mat_vec(&mds, &rest);
        for i in 0..3 {
            constants[r + 1][i] += pushed[i];
        }
        constants[r][1] = ArkFr::ZERO;
        constants[r][2] = ArkFr::ZERO;
    }
    // 2. Sparse matrices, from the last partial round backwards.
    let mut sparse = [Sparse {
        m00: Fr::ZERO,
        v_hat: [Fr::ZERO; 2],
        w: [Fr::ZERO; 2],
    }; PARTIAL];
    let mut a = mds;
    for i in (0..PARTIAL).rev() {
        let (s, m_prime) = split_sparse(&a);
        sparse[i] = s;
        a = mat_mul(&m_prime, &mds);
    }
    let fast_matrix = |m: &ArkMatrix| -> [[Fr; 3]; 3] {
        std::array::from_fn(|r| std::array::from_fn(|c| to_fast(&m[r][c])))
    };
    let fast_row = |row: &[ArkFr; 3]| -> [Fr; 3] { std::array::from_fn(|i| to_fast(&row[i])) };
    let full_rounds: Vec<usize> = (0..HALF_FULL).chain(HALF_FULL + PARTIAL..rounds).collect();
    Optimized {
        full_constants: std::array::from_fn(|i| fast_row(&constants[full_rounds[i]])),
        mds: fast_matrix(&mds),
        pre_partial_mds: fast_matrix(&a),
        partial_constants: std::array::from_fn(|i| to_fast(&constants[HALF_FULL + i][0])),
        sparse,
    }
}

/// The optimised constants, derived on first use.
pub fn optimized() -> &'static Optimized {
    static OPT: OnceLock<Optimized> = OnceLock::new();
    OPT.get_or_init(derive)
}

#[inline(always)]
fn mat_vec_fast<A: Arith>(arith: A, m: &[[Fr; 3]; 3], s: &[Fr; 3]) -> [Fr; 3] {
    std::array::from_fn(|r| arith.dot3(m[r], *s))
}

#[inline(always)]
fn full_round<const L: usize, A: Arith>(
    arith: A,
    states: &mut [[Fr; 3]; L],
    c: &[Fr; 3],
    m: &[[Fr; 3]; 3],
) {
    for s in states.iter_mut() {
        let x = [
            arith.pow5(s[0].add_mod(c[0])),
            arith.pow5(s[1].add_mod(c[1])),
            arith.pow5(s[2].add_mod(c[2])),
        ];
        *s = mat_vec_fast(arith, m, &x);
    }
}

#[inline(always)]
fn partial_round<const L: usize, A: Arith>(arith: A, states: &mut [[Fr; 3]; L], c: Fr, m: &Sparse) {
    for s in states.iter_mut() {
        let x0 = arith.pow5(s[0].add_mod(c));
        let out0 = arith.dot3([m.m00, m.v_hat[0], m.v_hat[1]], [x0, s[1], s[2]]);
        s[1] = arith.mul(m.w[0], x0).add_mod(s[1]);
        s[2] = arith.mul(m.w[1], x0).add_mod(s[2]);
        s[0] = out0;
    }
}

/// `L` independent permutations, interleaved round by round, multiplying with `arith`.
#[inline(always)]
pub fn permute_lanes<const L: usize, A: Arith>(
    arith: A,
    opt: &Optimized,
    states: &mut [[Fr; 3]; L],
) {
    for r in 0..HALF_FULL - 1 {
        full_round(arith, states, &opt.full_constants[r], &opt.mds);
    }
    full_round(
        arith,
        states,
        &opt.full_constants[HALF_FULL - 1],
        &opt.pre_partial_mds,
    );
    for i in 0..PARTIAL {
        partial_round(arith, states, opt.partial_constants[i], &opt.sparse[i]);
    }
    for r in HALF_FULL..2 * HALF_FULL {
        full_round(arith, states, &opt.full_constants[r], &opt.mds);
    }
}

/// One permutation with the given multiply (tests compare the implementations).
pub fn permute_with<A: Arith>(arith: A, state: [Fr; 3]) -> [Fr; 3] {
    let mut lanes = [state];
    permute_lanes(arith, optimized(), &mut lanes);
    lanes[0]
}
