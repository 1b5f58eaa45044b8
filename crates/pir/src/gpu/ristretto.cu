// ristretto255 on the GPU: `compress(r·decompress(Y))` for a batch of public keys Y
// and one scalar r, the per-row work of building a TracEdge key table
// (`tracedge::keytable::build_rows`). Compiled by NVRTC when a table is built on the
// GPU; the same file also compiles as host C++ (without the kernel), which is how the
// test `gpu_ristretto_host` checks every function below against curve25519-dalek on
// machines without a GPU.
//
// Field: GF(2^255 - 19) in five 51-bit limbs held in u64, products accumulated in a
// pair of u64 (`acc`). Every value a function returns has limbs < 2^52 ("loosely
// reduced"); every function accepts such values. Bounds, for `fe_mul` with inputs
// < 2^52: 19·g < 2^56.3, each product < 2^108.3, c0 < 2^110.4, so every carry fits
// in a u64 and the last carry times 19 stays < 2^60.
//
// Points: the twisted Edwards curve -x^2 + y^2 = 1 + d x^2 y^2 in extended
// coordinates (X:Y:Z:T), additions with a cached operand (Y+X, Y-X, Z, 2d·T)
// (add-2008-hwcd-3) and doublings dbl-2008-hwcd. Encoding and decoding follow
// RFC 9496 §4.3. The scalar arrives as 64 signed radix-16 digits in [-8, 8]; the
// multiplication reads its table of 1P..8P with constant-time selects and always
// adds, so its running time does not depend on the (secret) scalar.

// RFN: inlined field arithmetic. RCALL: the point-level functions, kept as calls on
// the GPU so that the PTX stays small (with everything inlined, NVRTC and the
// driver's PTX compiler took tens of seconds).
#ifdef __CUDACC_RTC__
#define RFN __device__ __forceinline__
#define RCALL __device__ __noinline__
#define NO_UNROLL _Pragma("unroll 1")
typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;
typedef signed char i8;
RFN u64 mulhi(u64 a, u64 b) { return __umul64hi(a, b); }
#else
#include <stdint.h>
#define RFN static inline
#define RCALL static
#define NO_UNROLL
typedef uint64_t u64;
typedef uint32_t u32;
typedef uint8_t u8;
typedef int8_t i8;
RFN u64 mulhi(u64 a, u64 b) { return (u64)(((unsigned __int128)a * b) >> 64); }
#endif

#define MASK51 ((1ULL << 51) - 1)

struct fe {
    u64 l[5];
};

struct acc {
    u64 lo, hi;
};

// d, 2d, sqrt(-1) and 1/sqrt(a - d) (RFC 9496 §4.1), in limbs.
#define FE_D {{0x34dca135978a3ULL, 0x1a8283b156ebdULL, 0x5e7a26001c029ULL, 0x739c663a03cbbULL, 0x52036cee2b6ffULL}}
#define FE_D2 {{0x69b9426b2f159ULL, 0x35050762add7aULL, 0x3cf44c0038052ULL, 0x6738cc7407977ULL, 0x2406d9dc56dffULL}}
#define FE_SQRT_M1 {{0x61b274a0ea0b0ULL, 0xd5a5fc8f189dULL, 0x7ef5e9cbd0c60ULL, 0x78595a6804c9eULL, 0x2b8324804fc1dULL}}
#define FE_INVSQRT_A_MINUS_D {{0xfdaa805d40eaULL, 0x2eb482e57d339ULL, 0x7610274bc58ULL, 0x6510b613dc8ffULL, 0x786c8905cfaffULL}}

RFN fe fe_const(u64 x) {
    fe r = {{x, 0, 0, 0, 0}};
    return r;
}

RFN void mac(acc &c, u64 a, u64 b) {
    u64 lo = a * b, hi = mulhi(a, b);
    c.lo += lo;
    c.hi += hi + (c.lo < lo);
}

RFN void acc_add(acc &c, u64 x) {
    c.lo += x;
    c.hi += (c.lo < x);
}

// c >> 51 for c < 2^115.
RFN u64 shr51(const acc &c) { return (c.lo >> 51) | (c.hi << 13); }

// One carry pass: limbs < 2^64 in, limbs < 2^51 + 2^17 out.
RFN fe fe_carry(fe f) {
    u64 c;
    c = f.l[0] >> 51; f.l[0] &= MASK51; f.l[1] += c;
    c = f.l[1] >> 51; f.l[1] &= MASK51; f.l[2] += c;
    c = f.l[2] >> 51; f.l[2] &= MASK51; f.l[3] += c;
    c = f.l[3] >> 51; f.l[3] &= MASK51; f.l[4] += c;
    c = f.l[4] >> 51; f.l[4] &= MASK51; f.l[0] += 19 * c;
    return f;
}

RFN fe fe_add(const fe &f, const fe &g) {
    fe h;
    for (int i = 0; i < 5; i++) h.l[i] = f.l[i] + g.l[i];
    return fe_carry(h);
}

// f - g as f + 4p - g (4p's limbs exceed any loosely reduced g's).
RFN fe fe_sub(const fe &f, const fe &g) {
    fe h;
    h.l[0] = f.l[0] + 0x1FFFFFFFFFFFB4ULL - g.l[0];
    for (int i = 1; i < 5; i++) h.l[i] = f.l[i] + 0x1FFFFFFFFFFFFCULL - g.l[i];
    return fe_carry(h);
}

RFN fe fe_neg(const fe &f) { return fe_sub(fe_const(0), f); }

// The five wide column sums of a product, carried into limbs < 2^52 (the last
// carry wraps around times 19).
RFN fe fe_from_wide(acc c0, acc c1, acc c2, acc c3, acc c4) {
    fe h;
    acc_add(c1, shr51(c0)); h.l[0] = c0.lo & MASK51;
    acc_add(c2, shr51(c1)); h.l[1] = c1.lo & MASK51;
    acc_add(c3, shr51(c2)); h.l[2] = c2.lo & MASK51;
    acc_add(c4, shr51(c3)); h.l[3] = c3.lo & MASK51;
    const u64 carry = shr51(c4);
    h.l[4] = c4.lo & MASK51;
    h.l[0] += 19 * carry;
    h.l[1] += h.l[0] >> 51;
    h.l[0] &= MASK51;
    return h;
}

RFN fe fe_mul(const fe &f, const fe &g) {
    const u64 f0 = f.l[0], f1 = f.l[1], f2 = f.l[2], f3 = f.l[3], f4 = f.l[4];
    const u64 g0 = g.l[0], g1 = g.l[1], g2 = g.l[2], g3 = g.l[3], g4 = g.l[4];
    const u64 g1_19 = 19 * g1, g2_19 = 19 * g2, g3_19 = 19 * g3, g4_19 = 19 * g4;
    acc c0 = {0, 0}, c1 = {0, 0}, c2 = {0, 0}, c3 = {0, 0}, c4 = {0, 0};
    mac(c0, f0, g0); mac(c0, f1, g4_19); mac(c0, f2, g3_19); mac(c0, f3, g2_19); mac(c0, f4, g1_19);
    mac(c1, f0, g1); mac(c1, f1, g0); mac(c1, f2, g4_19); mac(c1, f3, g3_19); mac(c1, f4, g2_19);
    mac(c2, f0, g2); mac(c2, f1, g1); mac(c2, f2, g0); mac(c2, f3, g4_19); mac(c2, f4, g3_19);
    mac(c3, f0, g3); mac(c3, f1, g2); mac(c3, f2, g1); mac(c3, f3, g0); mac(c3, f4, g4_19);
    mac(c4, f0, g4); mac(c4, f1, g3); mac(c4, f2, g2); mac(c4, f3, g1); mac(c4, f4, g0);
    return fe_from_wide(c0, c1, c2, c3, c4);
}

RFN fe fe_sq(const fe &f) {
    const u64 f0 = f.l[0], f1 = f.l[1], f2 = f.l[2], f3 = f.l[3], f4 = f.l[4];
    const u64 f0_2 = 2 * f0, f1_2 = 2 * f1, f3_19 = 19 * f3, f4_19 = 19 * f4;
    acc c0 = {0, 0}, c1 = {0, 0}, c2 = {0, 0}, c3 = {0, 0}, c4 = {0, 0};
    // c_k = sum_{i+j=k} f_i f_j + 19 sum_{i+j=k+5} f_i f_j, cross terms doubled.
    mac(c0, f0, f0); mac(c0, f1_2, f4_19); mac(c0, 2 * f2, f3_19);
    mac(c1, f0_2, f1); mac(c1, 2 * f2, f4_19); mac(c1, f3, f3_19);
    mac(c2, f0_2, f2); mac(c2, f1, f1); mac(c2, 2 * f3, f4_19);
    mac(c3, f0_2, f3); mac(c3, f1_2, f2); mac(c3, f4, f4_19);
    mac(c4, f0_2, f4); mac(c4, f1_2, f3); mac(c4, f2, f2);
    return fe_from_wide(c0, c1, c2, c3, c4);
}

RCALL fe fe_sqn(fe f, int n) {
    NO_UNROLL
    for (int i = 0; i < n; i++) f = fe_sq(f);
    return f;
}

// The canonical little-endian encoding (the value reduced mod p).
RFN void fe_tobytes(u8 *s, const fe &f0) {
    fe f = fe_carry(f0);
    u64 q = (f.l[0] + 19) >> 51;
    q = (f.l[1] + q) >> 51;
    q = (f.l[2] + q) >> 51;
    q = (f.l[3] + q) >> 51;
    q = (f.l[4] + q) >> 51;
    f.l[0] += 19 * q;
    f.l[1] += f.l[0] >> 51; f.l[0] &= MASK51;
    f.l[2] += f.l[1] >> 51; f.l[1] &= MASK51;
    f.l[3] += f.l[2] >> 51; f.l[2] &= MASK51;
    f.l[4] += f.l[3] >> 51; f.l[3] &= MASK51;
    f.l[4] &= MASK51;
    const u64 w[4] = {f.l[0] | (f.l[1] << 51), (f.l[1] >> 13) | (f.l[2] << 38), (f.l[2] >> 26) | (f.l[3] << 25),
                      (f.l[3] >> 39) | (f.l[4] << 12)};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++) s[8 * i + j] = (u8)(w[i] >> (8 * j));
}

// The low 255 bits of `s` (bit 255 ignored; the value may be >= p).
RFN fe fe_frombytes(const u8 *s) {
    u64 w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = 0;
        for (int j = 0; j < 8; j++) w[i] |= (u64)s[8 * i + j] << (8 * j);
    }
    fe f = {{w[0] & MASK51, ((w[0] >> 51) | (w[1] << 13)) & MASK51, ((w[1] >> 38) | (w[2] << 26)) & MASK51,
             ((w[2] >> 25) | (w[3] << 39)) & MASK51, (w[3] >> 12) & MASK51}};
    return f;
}

RFN int fe_is_negative(const fe &f) {
    u8 s[32];
    fe_tobytes(s, f);
    return s[0] & 1;
}

RFN int fe_is_zero(const fe &f) {
    u8 s[32];
    fe_tobytes(s, f);
    u8 x = 0;
    for (int i = 0; i < 32; i++) x |= s[i];
    return x == 0;
}

RFN int fe_eq(const fe &f, const fe &g) { return fe_is_zero(fe_sub(f, g)); }

// f = b ? g : f, without a branch.
RFN void fe_cmov(fe &f, const fe &g, int b) {
    const u64 m = (u64)0 - (u64)(b & 1);
    for (int i = 0; i < 5; i++) f.l[i] ^= m & (f.l[i] ^ g.l[i]);
}

RFN fe fe_abs(const fe &f) {
    fe r = f;
    fe_cmov(r, fe_neg(f), fe_is_negative(f));
    return r;
}

// x^(2^252 - 3) = x^((p - 5) / 8).
RCALL fe fe_pow_p58(const fe &x) {
    fe t0 = fe_sq(x);                    // 2
    fe t1 = fe_sqn(t0, 2);               // 8
    t1 = fe_mul(x, t1);                  // 9
    t0 = fe_mul(t0, t1);                 // 11
    fe t2 = fe_sq(t0);                   // 22
    t1 = fe_mul(t1, t2);                 // 31 = 2^5 - 1
    t2 = fe_sqn(t1, 5);
    t1 = fe_mul(t2, t1);                 // 2^10 - 1
    t2 = fe_sqn(t1, 10);
    t2 = fe_mul(t2, t1);                 // 2^20 - 1
    fe t3 = fe_sqn(t2, 20);
    t2 = fe_mul(t3, t2);                 // 2^40 - 1
    t2 = fe_sqn(t2, 10);
    t1 = fe_mul(t2, t1);                 // 2^50 - 1
    t2 = fe_sqn(t1, 50);
    t2 = fe_mul(t2, t1);                 // 2^100 - 1
    t3 = fe_sqn(t2, 100);
    t2 = fe_mul(t3, t2);                 // 2^200 - 1
    t2 = fe_sqn(t2, 50);
    t1 = fe_mul(t2, t1);                 // 2^250 - 1
    t1 = fe_sqn(t1, 2);                  // 2^252 - 4
    return fe_mul(t1, x);                // 2^252 - 3
}

// SQRT_RATIO_M1(u, v) of RFC 9496 §4.2: returns whether u/v is a square; r is the
// non-negative square root of u/v, or of i·u/v when it is not a square.
RCALL int fe_sqrt_ratio_m1(fe &r, const fe &u, const fe &v) {
    const fe sqrt_m1 = FE_SQRT_M1;
    const fe v3 = fe_mul(fe_sq(v), v);
    const fe v7 = fe_mul(fe_sq(v3), v);
    r = fe_mul(fe_mul(u, v3), fe_pow_p58(fe_mul(u, v7)));
    const fe check = fe_mul(v, fe_sq(r));
    const fe u_neg = fe_neg(u);
    const int correct = fe_eq(check, u);
    const int flipped = fe_eq(check, u_neg);
    const int flipped_i = fe_eq(check, fe_mul(u_neg, sqrt_m1));
    fe_cmov(r, fe_mul(sqrt_m1, r), flipped | flipped_i);
    r = fe_abs(r);
    return correct | flipped;
}

struct ge {
    fe X, Y, Z, T;
};

// (Y + X, Y - X, Z, 2d·T): the operand of an addition.
struct ge_cached {
    fe YpX, YmX, Z, T2d;
};

RFN ge_cached ge_to_cached(const ge &p) {
    const fe d2 = FE_D2;
    ge_cached c = {fe_add(p.Y, p.X), fe_sub(p.Y, p.X), p.Z, fe_mul(p.T, d2)};
    return c;
}

RCALL ge ge_add(const ge &p, const ge_cached &q) {
    const fe a = fe_mul(fe_sub(p.Y, p.X), q.YmX);
    const fe b = fe_mul(fe_add(p.Y, p.X), q.YpX);
    const fe c = fe_mul(p.T, q.T2d);
    const fe zz = fe_mul(p.Z, q.Z);
    const fe d = fe_add(zz, zz);
    const fe e = fe_sub(b, a), f = fe_sub(d, c), g = fe_add(d, c), h = fe_add(b, a);
    ge r = {fe_mul(e, f), fe_mul(g, h), fe_mul(f, g), fe_mul(e, h)};
    return r;
}

// 2p; `with_t` = 0 leaves T unset (for a doubling that another doubling follows).
RCALL ge ge_dbl(const ge &p, int with_t) {
    const fe a = fe_sq(p.X);
    const fe b = fe_sq(p.Y);
    const fe zz = fe_sq(p.Z);
    const fe c = fe_add(zz, zz);
    const fe e = fe_sub(fe_sub(fe_sq(fe_add(p.X, p.Y)), a), b);
    const fe g = fe_sub(b, a);          // -a + b
    const fe f = fe_sub(g, c);
    const fe h = fe_neg(fe_add(a, b));  // -a - b
    ge r;
    r.X = fe_mul(e, f);
    r.Y = fe_mul(g, h);
    r.Z = fe_mul(f, g);
    if (with_t) r.T = fe_mul(e, h);
    else r.T = fe_const(0);
    return r;
}

RFN void cached_cmov(ge_cached &a, const ge_cached &b, int m) {
    fe_cmov(a.YpX, b.YpX, m);
    fe_cmov(a.YmX, b.YmX, m);
    fe_cmov(a.Z, b.Z, m);
    fe_cmov(a.T2d, b.T2d, m);
}

// RFC 9496 §4.3.1. Returns 0 for a non-canonical encoding or one that is no point;
// also 0 for the identity (all zero), which is no public key.
RCALL int ristretto_decode(ge &p, const u8 *b) {
    const fe s = fe_frombytes(b);
    u8 chk[32];
    fe_tobytes(chk, s);
    u8 diff = 0, any = 0;
    for (int i = 0; i < 32; i++) {
        diff |= chk[i] ^ b[i];
        any |= b[i];
    }
    int ok = (diff == 0) & ((chk[0] & 1) == 0) & (any != 0);
    const fe one = fe_const(1), d = FE_D;
    const fe ss = fe_sq(s);
    const fe u1 = fe_sub(one, ss);
    const fe u2 = fe_add(one, ss);
    const fe u2_sqr = fe_sq(u2);
    const fe v = fe_sub(fe_neg(fe_mul(d, fe_sq(u1))), u2_sqr);
    fe invsqrt;
    const int was_square = fe_sqrt_ratio_m1(invsqrt, one, fe_mul(v, u2_sqr));
    const fe den_x = fe_mul(invsqrt, u2);
    const fe den_y = fe_mul(fe_mul(invsqrt, den_x), v);
    const fe s2 = fe_add(s, s);
    p.X = fe_abs(fe_mul(s2, den_x));
    p.Y = fe_mul(u1, den_y);
    p.Z = one;
    p.T = fe_mul(p.X, p.Y);
    ok &= was_square & !fe_is_negative(p.T) & !fe_is_zero(p.Y);
    return ok;
}

// RFC 9496 §4.3.2.
RCALL void ristretto_encode(u8 *out, const ge &p) {
    const fe sqrt_m1 = FE_SQRT_M1, invsqrt_a_minus_d = FE_INVSQRT_A_MINUS_D;
    const fe u1 = fe_mul(fe_add(p.Z, p.Y), fe_sub(p.Z, p.Y));
    const fe u2 = fe_mul(p.X, p.Y);
    fe invsqrt;
    fe_sqrt_ratio_m1(invsqrt, fe_const(1), fe_mul(u1, fe_sq(u2)));
    const fe den1 = fe_mul(invsqrt, u1);
    const fe den2 = fe_mul(invsqrt, u2);
    const fe z_inv = fe_mul(fe_mul(den1, den2), p.T);
    const fe ix0 = fe_mul(p.X, sqrt_m1);
    const fe iy0 = fe_mul(p.Y, sqrt_m1);
    const fe enchanted = fe_mul(den1, invsqrt_a_minus_d);
    const int rotate = fe_is_negative(fe_mul(p.T, z_inv));
    fe x = p.X, y = p.Y, den_inv = den2;
    fe_cmov(x, iy0, rotate);
    fe_cmov(y, ix0, rotate);
    fe_cmov(den_inv, enchanted, rotate);
    fe_cmov(y, fe_neg(y), fe_is_negative(fe_mul(x, z_inv)));
    const fe s = fe_abs(fe_mul(den_inv, fe_sub(p.Z, y)));
    fe_tobytes(out, s);
}

// out = encode(k·decode(in)), k = sum digits[i]·16^i with digits in [-8, 8].
// Returns 0 (out unspecified) when `in` is no public key.
RCALL int ristretto_mul_encode(u8 *out, const u8 *in, const i8 *digits) {
    ge p;
    const int ok = ristretto_decode(p, in);
    ge_cached table[8];
    table[0] = ge_to_cached(p);
    ge m = p;
    for (int j = 1; j < 8; j++) {
        m = ge_add(m, table[0]);
        table[j] = ge_to_cached(m);
    }
    ge q = {fe_const(0), fe_const(1), fe_const(1), fe_const(0)};
    NO_UNROLL
    for (int i = 63; i >= 0; i--) {
        if (i != 63) {
            q = ge_dbl(q, 0);
            q = ge_dbl(q, 0);
            q = ge_dbl(q, 0);
            q = ge_dbl(q, 1);
        }
        const int d = digits[i];
        const int neg = d < 0;
        const int a = neg ? -d : d;
        ge_cached sel = {fe_const(1), fe_const(1), fe_const(1), fe_const(0)};
        for (int j = 0; j < 8; j++) cached_cmov(sel, table[j], a == j + 1);
        ge_cached nsel = {sel.YmX, sel.YpX, sel.Z, fe_neg(sel.T2d)};
        cached_cmov(sel, nsel, neg);
        q = ge_add(q, sel);
    }
    ristretto_encode(out, q);
    return ok;
}

#ifdef __CUDACC_RTC__
// One thread per key: out[i] = encode(k·decode(keys[i])), ok[i] = whether keys[i]
// is a public key. `digits` holds k's 64 signed radix-16 digits.
extern "C" __global__ void __launch_bounds__(128)
    ristretto_mul(const u8 *__restrict__ keys, u64 n, const i8 *__restrict__ digits, u8 *__restrict__ out,
                  u8 *__restrict__ ok) {
    __shared__ i8 dig[64];
    if (threadIdx.x < 64) dig[threadIdx.x] = digits[threadIdx.x];
    __syncthreads();
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    u8 in[32], res[32];
    for (int j = 0; j < 32; j++) in[j] = keys[32 * i + j];
    ok[i] = (u8)ristretto_mul_encode(res, in, dig);
    for (int j = 0; j < 32; j++) out[32 * i + j] = res[j];
}
#endif
