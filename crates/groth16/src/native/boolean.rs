//! Twins of bellpepper-core's `boolean` gadgets (re-exported by bellperson 0.27 as
//! `gadgets::boolean`): `AllocatedBit::{alloc, xor, and, and_not, nor}` and
//! `Boolean::{xor, and, sha256_ch, sha256_maj}` with all their constant cases.
//!
//! The public functions take and return [`Bit`]s; the crate's word code calls the
//! literal forms (`*_lit`), which carry the bits' (logical) values beside them.

use bellperson::Index;

use super::{code_of, mark_a_code, mark_a_lit, mark_b_code, mark_b_lit, Bit, Consts, Lit};
use super::{index_of, ONE_CODE};
use crate::sink::WitnessSink;

/// `AllocatedBit::alloc`: a new variable holding `v` and its boolean constraint
/// `(1 - x) * x = 0`. Returns the variable's code.
#[inline]
pub(crate) fn alloc_code<S: WitnessSink>(s: &mut S, k: &Consts, v: bool) -> u64 {
    let i = s.push_aux(k.bit(v));
    s.push_constraint(k.bit(!v), k.bit(v));
    s.mark_a(Index::Aux(i));
    s.mark_b(Index::Aux(i));
    (i as u64) << 1
}

/// `AllocatedBit::xor(x, y)` of variables holding `xv`, `yv`:
/// `(x + x) * y = x + y - r`.
#[inline]
pub(crate) fn xor_code<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    x: u64,
    xv: bool,
    y: u64,
    yv: bool,
) -> u64 {
    let i = s.push_aux(k.bit(xv ^ yv));
    let a = if xv { k.two } else { k.zero };
    s.push_constraint(a, k.bit(yv));
    mark_a_code(s, x);
    mark_b_code(s, y);
    (i as u64) << 1
}

/// `AllocatedBit::and(x, y)`: `x * y = r`.
#[inline]
pub(crate) fn and_code<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    x: u64,
    xv: bool,
    y: u64,
    yv: bool,
) -> u64 {
    let i = s.push_aux(k.bit(xv & yv));
    s.push_constraint(k.bit(xv), k.bit(yv));
    mark_a_code(s, x);
    mark_b_code(s, y);
    (i as u64) << 1
}

/// `AllocatedBit::and_not(x, y)`: `x * (1 - y) = r`.
#[inline]
pub(crate) fn and_not_code<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    x: u64,
    xv: bool,
    y: u64,
    yv: bool,
) -> u64 {
    times_not_y(s, k, x, xv, y, yv)
}

/// `AllocatedBit::nor(x, y)`: `(1 - x) * (1 - y) = r`.
#[inline]
pub(crate) fn nor_code<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    x: u64,
    xv: bool,
    y: u64,
    yv: bool,
) -> u64 {
    times_not_y(s, k, x, !xv, y, yv)
}

/// The constraint `A * (1 - y) = r` of and_not (A = x) and nor (A = 1 - x), `av` the
/// value of A: r is allocated, x marked in A, ONE and y in B (unless y is ONE itself).
#[inline]
fn times_not_y<S: WitnessSink>(s: &mut S, k: &Consts, x: u64, av: bool, y: u64, yv: bool) -> u64 {
    let r = av & !yv;
    let i = s.push_aux(k.bit(r));
    s.push_constraint(k.bit(av), k.bit(!yv));
    mark_a_code(s, x);
    if y != ONE_CODE {
        s.mark_b(Index::Input(0));
        mark_b_code(s, y);
    }
    (i as u64) << 1
}

/// `Boolean::xor(a, b)` of literals of values `av`, `bv`; the result's value is
/// `av ^ bv`.
#[inline]
pub(crate) fn xor_lit<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    a: Lit,
    av: bool,
    b: Lit,
    bv: bool,
) -> Lit {
    if a == Lit::FALSE {
        return b;
    }
    if b == Lit::FALSE {
        return a;
    }
    if a == Lit::TRUE {
        return b.negate();
    }
    if b == Lit::TRUE {
        return a.negate();
    }
    match (a.tag(), b.tag()) {
        // a XOR (NOT b) = NOT(a XOR b), the variable of `is` first.
        (Lit::TAG_IS, Lit::TAG_NOT) => Lit::not_of(xor_code(s, k, a.code(), av, b.code(), !bv)),
        (Lit::TAG_NOT, Lit::TAG_IS) => Lit::not_of(xor_code(s, k, b.code(), bv, a.code(), !av)),
        (Lit::TAG_IS, Lit::TAG_IS) => Lit::is(xor_code(s, k, a.code(), av, b.code(), bv)),
        _ => Lit::is(xor_code(s, k, a.code(), !av, b.code(), !bv)),
    }
}

/// `Boolean::and(a, b)`; the result's value is `av & bv`.
#[inline]
pub(crate) fn and_lit<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    a: Lit,
    av: bool,
    b: Lit,
    bv: bool,
) -> Lit {
    if a == Lit::FALSE || b == Lit::FALSE {
        return Lit::FALSE;
    }
    if a == Lit::TRUE {
        return b;
    }
    if b == Lit::TRUE {
        return a;
    }
    match (a.tag(), b.tag()) {
        (Lit::TAG_IS, Lit::TAG_NOT) => Lit::is(and_not_code(s, k, a.code(), av, b.code(), !bv)),
        (Lit::TAG_NOT, Lit::TAG_IS) => Lit::is(and_not_code(s, k, b.code(), bv, a.code(), !av)),
        (Lit::TAG_NOT, Lit::TAG_NOT) => Lit::is(nor_code(s, k, a.code(), !av, b.code(), !bv)),
        _ => Lit::is(and_code(s, k, a.code(), av, b.code(), bv)),
    }
}

/// `Boolean::sha256_ch(a, b, c)` = `(a and b) xor ((not a) and c)`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn ch_lit<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    a: Lit,
    av: bool,
    b: Lit,
    bv: bool,
    c: Lit,
    cv: bool,
) -> Lit {
    let ch = (av & bv) ^ (!av & cv);
    if a.is_const() && b.is_const() && c.is_const() {
        return Lit::constant(ch);
    }
    if a == Lit::FALSE {
        return c;
    }
    if b == Lit::FALSE {
        return and_lit(s, k, a.negate(), !av, c, cv);
    }
    if c == Lit::FALSE {
        return and_lit(s, k, a, av, b, bv);
    }
    if c == Lit::TRUE {
        return and_lit(s, k, a, av, b.negate(), !bv).negate();
    }
    if b == Lit::TRUE {
        return and_lit(s, k, a.negate(), !av, c.negate(), !cv).negate();
    }
    // a is TRUE or a variable; b and c are variables.
    let i = s.push_aux(k.bit(ch));
    // a(b - c) = ch - c
    s.push_constraint(k.small(bv as i32 - cv as i32), k.bit(av));
    // b - c: the variable cancels when b and c are the same literal.
    if b != c {
        mark_a_code(s, b.code());
        mark_a_code(s, c.code());
    }
    mark_b_lit(s, a);
    Lit::is((i as u64) << 1)
}

/// `Boolean::sha256_maj(a, b, c)` = `(a and b) xor (a and c) xor (b and c)`.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn maj_lit<S: WitnessSink>(
    s: &mut S,
    k: &Consts,
    a: Lit,
    av: bool,
    b: Lit,
    bv: bool,
    c: Lit,
    cv: bool,
) -> Lit {
    let maj = (av & bv) ^ (av & cv) ^ (bv & cv);
    if a.is_const() && b.is_const() && c.is_const() {
        return Lit::constant(maj);
    }
    if a == Lit::FALSE {
        return and_lit(s, k, b, bv, c, cv);
    }
    if b == Lit::FALSE {
        return and_lit(s, k, a, av, c, cv);
    }
    if c == Lit::FALSE {
        return and_lit(s, k, a, av, b, bv);
    }
    if c == Lit::TRUE {
        return and_lit(s, k, a.negate(), !av, b.negate(), !bv).negate();
    }
    if b == Lit::TRUE {
        return and_lit(s, k, a.negate(), !av, c.negate(), !cv).negate();
    }
    if a == Lit::TRUE {
        return and_lit(s, k, b.negate(), !bv, c.negate(), !cv).negate();
    }
    // All three are variables.
    let i = s.push_aux(k.bit(maj));
    let bc = bv & cv;
    let z = and_lit(s, k, b, bv, c, cv);
    // (2bc - b - c) * a = bc - maj
    s.push_constraint(k.small(2 * bc as i32 - bv as i32 - cv as i32), k.bit(av));
    mark_a_lit(s, z);
    // -b - c: the variable cancels when c is the negation of b.
    if b != c.negate() {
        mark_a_code(s, b.code());
        mark_a_code(s, c.code());
    }
    mark_b_lit(s, a);
    Lit::is((i as u64) << 1)
}

/// `AllocatedBit::alloc`: a new boolean variable holding `value`.
pub fn alloc<S: WitnessSink>(s: &mut S, value: bool) -> Bit {
    let code = alloc_code(s, Consts::get(), value);
    Bit::Is {
        var: index_of(code),
        value,
    }
}

/// `AllocatedBit::xor` of the variables `x` (value `xv`) and `y` (value `yv`).
pub fn allocated_xor<S: WitnessSink>(s: &mut S, x: Index, xv: bool, y: Index, yv: bool) -> Bit {
    let code = xor_code(s, Consts::get(), code_of(x), xv, code_of(y), yv);
    Bit::Is {
        var: index_of(code),
        value: xv ^ yv,
    }
}

/// `AllocatedBit::and` of the variables `x` and `y`.
pub fn allocated_and<S: WitnessSink>(s: &mut S, x: Index, xv: bool, y: Index, yv: bool) -> Bit {
    let code = and_code(s, Consts::get(), code_of(x), xv, code_of(y), yv);
    Bit::Is {
        var: index_of(code),
        value: xv & yv,
    }
}

/// `AllocatedBit::and_not` (`x and not y`) of the variables `x` and `y`.
pub fn allocated_and_not<S: WitnessSink>(s: &mut S, x: Index, xv: bool, y: Index, yv: bool) -> Bit {
    let code = and_not_code(s, Consts::get(), code_of(x), xv, code_of(y), yv);
    Bit::Is {
        var: index_of(code),
        value: xv & !yv,
    }
}

/// `AllocatedBit::nor` of the variables `x` and `y`.
pub fn allocated_nor<S: WitnessSink>(s: &mut S, x: Index, xv: bool, y: Index, yv: bool) -> Bit {
    let code = nor_code(s, Consts::get(), code_of(x), xv, code_of(y), yv);
    Bit::Is {
        var: index_of(code),
        value: !xv & !yv,
    }
}

/// `Boolean::xor`.
pub fn xor<S: WitnessSink>(s: &mut S, a: &Bit, b: &Bit) -> Bit {
    let ((la, av), (lb, bv)) = (a.lit(), b.lit());
    Bit::of_lit(xor_lit(s, Consts::get(), la, av, lb, bv), av ^ bv)
}

/// `Boolean::and`.
pub fn and<S: WitnessSink>(s: &mut S, a: &Bit, b: &Bit) -> Bit {
    let ((la, av), (lb, bv)) = (a.lit(), b.lit());
    Bit::of_lit(and_lit(s, Consts::get(), la, av, lb, bv), av & bv)
}

/// `Boolean::sha256_ch`: `(a and b) xor ((not a) and c)`.
pub fn sha256_ch<S: WitnessSink>(s: &mut S, a: &Bit, b: &Bit, c: &Bit) -> Bit {
    let ((la, av), (lb, bv), (lc, cv)) = (a.lit(), b.lit(), c.lit());
    let v = (av & bv) ^ (!av & cv);
    Bit::of_lit(ch_lit(s, Consts::get(), la, av, lb, bv, lc, cv), v)
}

/// `Boolean::sha256_maj`: `(a and b) xor (a and c) xor (b and c)`.
pub fn sha256_maj<S: WitnessSink>(s: &mut S, a: &Bit, b: &Bit, c: &Bit) -> Bit {
    let ((la, av), (lb, bv), (lc, cv)) = (a.lit(), b.lit(), c.lit());
    let v = (av & bv) ^ (av & cv) ^ (bv & cv);
    Bit::of_lit(maj_lit(s, Consts::get(), la, av, lb, bv, lc, cv), v)
}
