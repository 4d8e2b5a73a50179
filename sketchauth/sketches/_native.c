/*
 * sketchauth.sketches._native -- compiled kernels for PinSketch (GF(2^m), m <= 32), the fuzzy
 * vaults (prime fields p < 2^31) and the polar list decoder of the angular sketch.
 *
 * Optional: the package builds it when a C compiler is available and falls back to the numpy
 * implementations in _gf2m.py / _prime_field.py / polar.py otherwise (same results, checked by
 * the tests).
 * Everything here is hazmat: the Python wrappers validate parameters; this file still checks every
 * index it uses, so no input can make it read or write out of bounds.
 *
 * GF(2^m)
 *   Elements are uint32 in the polynomial basis modulo the fixed primitive polynomial of each m
 *   (the table in _gf2m.py).  Three multiplication kernels, chosen per field object:
 *     "pclmul"   -- the x86 carry-less multiply instruction (detected at run time with cpuid),
 *                   reduction by two carry-less folds with the low part r of the polynomial;
 *     "tables"   -- log/antilog tables of the generator x (m <= 16);
 *     "portable" -- carry-less products from a 4-bit window table of one operand (16 multiples,
 *                   eight lookups), reduction by four byte tables.
 *   Sums of products are accumulated *unreduced* (uint64, carry-less products of two m-bit values
 *   have at most 2m - 1 <= 63 bits and XOR never carries) and reduced once: a polynomial step
 *   "acc += q * b(z)" costs deg b carry-less products and no reductions.
 *
 *   Decoding (binary BCH, Dodis-Ostrovsky-Reyzin-Smith section 6.3; the same pipeline as
 *   minisketch's doc/math.md): odd power sums, Berlekamp-Massey with the binary shortcut (even
 *   discrepancies vanish), then the roots of sigma(z) by Berlekamp's trace algorithm:
 *     Z_k = z^(2^k) mod sigma for k = 0..m (m squarings modulo sigma); sigma has deg sigma distinct
 *     roots in GF(2^m) iff Z_m = z.  For beta_i = beta * x^i the trace polynomials
 *     T_i = sum_k beta_i^(2^k) Z_k = Tr(beta_i z) mod sigma take the value 0 or 1 at every root,
 *     and gcd(h, T_i mod h) splits each pending factor h whose roots they separate.  The beta_i,
 *     i < m, form a GF(2)-basis, so two distinct roots r, s (Tr(beta_i (r + s)) is a non-zero
 *     linear functional of beta_i) are separated within m rounds: splitting always terminates.
 *     beta comes from the caller (Python's secrets), or from getentropy in decode_plain, so a
 *     crafted sketch cannot predict which splits happen.  Factors of degree 2 are solved in
 *     closed form (z = b y, y^2 + y = c / b^2).
 *   PinSketch's public calls: encode_plain and decode_plain take the caller's plain sets (exact
 *   list, tuple, set or frozenset of exact ints, or an 8-byte integer buffer) and validate them
 *   here (range, size, duplicates by an O(n) radix sort), returning None for anything else so
 *   that the Python general path words every refusal; decode_plain also checks the stored
 *   payload's words and cyclotomic relations (SketchFormatError, the wording of pinsketch.py).
 *
 * F_p (vaults)
 *   Residues in [0, p), p < 2^31; products below 2^62 are reduced by Barrett's method with
 *   mu = floor(2^64 / p) (quotient estimate off by at most one).  Berlekamp-Welch: Gaussian
 *   elimination to row echelon form, back substitution with free variables 0 (any solution gives
 *   F), division Q / E, agreement count.  Evaluation at every point 0..N-1 (vault lock and
 *   read-back) uses forward differences: after deg F + 1 Horner evaluations each further value
 *   costs deg F modular additions and no multiplications.
 *
 * Polar list decoder (angular sketch on a polar code)
 *   decode_batch in polar.py is the specification; polar_scl is the same recursion on int64: the
 *   same node kinds (rate-0, rate-one, repetition, leaf, inner), the same candidate order and the
 *   same stable pruning (ties: the earlier candidate), so it returns the same bits for every
 *   input.  The inputs are integers of magnitude <= 2^29 (checked) and N <= 4096, so every value
 *   is an integer below N 2^29 and every metric one below N^2 2^29 <= 2^53: float64 computes them
 *   exactly, and int64 computes the same numbers.  Rate-one candidates are kept as (parent path,
 *   set of flipped forks) and written out once at the end.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define SA_HAVE_X86_CLMUL 1
#include <cpuid.h>
#include <immintrin.h>
#define SA_TARGET_PCLMUL __attribute__((target("pclmul,sse4.1")))
#else
#define SA_HAVE_X86_CLMUL 0
#endif

#if defined(__SIZEOF_INT128__)
#define SA_HAVE_INT128 1
#else
#define SA_HAVE_INT128 0
#endif

#define GF_MIN_M 8
#define GF_MAX_M 32
#define GF_TABLES_MAX_M 16

/* Primitive polynomials, indexed by m (the same table as _gf2m.PRIMITIVE_POLYNOMIALS). */
static const uint64_t PRIMITIVE[GF_MAX_M + 1] = {
    0, 0, 0, 0, 0, 0, 0, 0,
    0x11D, 0x211, 0x409, 0x805, 0x1053, 0x201B, 0x402B, 0x8003,
    0x1002D, 0x20009, 0x40081, 0x80027, 0x100009, 0x200005, 0x400003, 0x800021,
    0x100001B, 0x2000009, 0x4000047, 0x8000027, 0x10000009, 0x20000005, 0x40000053, 0x80000009,
    0x1000000C5ULL,
};

enum { K_PCLMUL = 0, K_TABLES = 1, K_PORTABLE = 2 };
static const char *const KERNEL_NAMES[] = {"pclmul", "tables", "portable"};

/* ------------------------------------------------------------------------------------------------
 * small helpers
 * --------------------------------------------------------------------------------------------- */

static int bit_length64(uint64_t v)
{
#if defined(__GNUC__) || defined(__clang__)
    return v ? 64 - __builtin_clzll(v) : 0;
#else
    int n = 0;
    while (v) {
        v >>= 1;
        n++;
    }
    return n;
#endif
}

static int cpu_has_pclmul(void)
{
#if SA_HAVE_X86_CLMUL
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    return (c & bit_PCLMUL) != 0 && (c & bit_SSE4_1) != 0;
#else
    return 0;
#endif
}

static void *xalloc(size_t count, size_t size)
{
    /* Raw allocator: usable without the GIL, and traced by tracemalloc. */
    if (size && count > ((size_t)-1) / size) return NULL;
    return PyMem_RawCalloc(count ? count : 1, size ? size : 1);
}

/* ------------------------------------------------------------------------------------------------
 * the field
 * --------------------------------------------------------------------------------------------- */

typedef struct {
    int m;
    int kernel;
    uint32_t mask;
    uint64_t poly;     /* full polynomial, x^m included */
    uint64_t low;      /* poly without x^m */
    uint32_t red[4][256]; /* (byte << (m + 8k)) mod poly */
    uint32_t sqr[4][256]; /* square of (byte << 8k), reduced */
    uint16_t *log;     /* tables kernel: log[a], a != 0 */
    uint16_t *exp;     /* tables kernel: exp[i] = x^i for i < 2(2^m - 1) */
    uint32_t order1;   /* 2^m - 1 */
    /* y^2 + y = k: echelon rows (pivot bit, row, combination of inputs) */
    int as_count;
    int as_pivot[GF_MAX_M];
    uint32_t as_row[GF_MAX_M];
    uint32_t as_combo[GF_MAX_M];
} gf_t;

static uint64_t clmul_sw(uint64_t a, uint32_t b)
{
    uint64_t r = 0;
    while (b) {
        if (b & 1) r ^= a;
        a <<= 1;
        b >>= 1;
    }
    return r;
}

static uint32_t reduce_slow(const gf_t *f, uint64_t v)
{
    for (int bit = bit_length64(v) - 1; bit >= f->m; bit--)
        if ((v >> bit) & 1) v ^= f->poly << (bit - f->m);
    return (uint32_t)v;
}

/* Reduce a value of at most 2m - 1 bits (an XOR of carry-less products) by byte tables. */
static inline uint32_t gf_reduce(const gf_t *f, uint64_t v)
{
    uint64_t h = v >> f->m;
    return ((uint32_t)v & f->mask) ^ f->red[0][h & 255] ^ f->red[1][(h >> 8) & 255] ^
           f->red[2][(h >> 16) & 255] ^ f->red[3][(h >> 24) & 255];
}

static inline uint32_t gf_sqr(const gf_t *f, uint32_t a)
{
    return f->sqr[0][a & 255] ^ f->sqr[1][(a >> 8) & 255] ^ f->sqr[2][(a >> 16) & 255] ^
           f->sqr[3][a >> 24];
}

/* -- portable carry-less products: 4-bit window over the multiples of a ------------------------ */

static inline void win_table(uint64_t tab[16], uint32_t a)
{
    uint64_t a1 = a, a2 = a1 << 1, a4 = a1 << 2, a8 = a1 << 3;
    tab[0] = 0;
    tab[1] = a1;
    tab[2] = a2;
    tab[3] = a2 ^ a1;
    tab[4] = a4;
    tab[5] = a4 ^ a1;
    tab[6] = a4 ^ a2;
    tab[7] = a4 ^ a2 ^ a1;
    for (int i = 0; i < 8; i++) tab[8 + i] = a8 ^ tab[i];
}

static inline uint64_t win_mul(const uint64_t tab[16], uint32_t b)
{
    return tab[b & 15] ^ (tab[(b >> 4) & 15] << 4) ^ (tab[(b >> 8) & 15] << 8) ^
           (tab[(b >> 12) & 15] << 12) ^ (tab[(b >> 16) & 15] << 16) ^
           (tab[(b >> 20) & 15] << 20) ^ (tab[(b >> 24) & 15] << 24) ^ (tab[b >> 28] << 28);
}

/* -- hardware carry-less products ------------------------------------------------------------ */

#if SA_HAVE_X86_CLMUL
SA_TARGET_PCLMUL static inline uint64_t clmul_hw(uint64_t a, uint64_t b)
{
    __m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)a), _mm_cvtsi64_si128((long long)b), 0);
    return (uint64_t)_mm_cvtsi128_si64(p);
}

/* Full product: two folds of the high part with r = poly - x^m (deg r <= (m + 1) / 2 is checked
 * when the field is built, so the second fold is below x^m). */
SA_TARGET_PCLMUL static inline uint32_t mul_hw(const gf_t *f, uint32_t a, uint32_t b)
{
    uint64_t p = clmul_hw(a, b);
    uint64_t p1 = (p & f->mask) ^ clmul_hw(p >> f->m, f->low);
    return (uint32_t)((p1 & f->mask) ^ clmul_hw(p1 >> f->m, f->low));
}
#endif

/* -- scalar product -------------------------------------------------------------------------- */

static inline uint32_t mul_tables(const gf_t *f, uint32_t a, uint32_t b)
{
    if (!a || !b) return 0;
    return f->exp[(uint32_t)f->log[a] + f->log[b]];
}

static uint32_t gf_mul(const gf_t *f, uint32_t a, uint32_t b)
{
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        return mul_hw(f, a, b);
#endif
    case K_TABLES:
        return mul_tables(f, a, b);
    default: {
        uint64_t tab[16];
        win_table(tab, a);
        return gf_reduce(f, win_mul(tab, b));
    }
    }
}

static uint32_t gf_inv(const gf_t *f, uint32_t a)
{
    /* binary extended Euclid on GF(2)[x]: u * g1 = a (mod poly) invariant; a != 0 */
    uint64_t u = a, v = f->poly, g1 = 1, g2 = 0;
    if (a == 0) return 0;
    while (u != 1) {
        int j = bit_length64(u) - bit_length64(v);
        if (j < 0) {
            uint64_t t = u;
            u = v;
            v = t;
            t = g1;
            g1 = g2;
            g2 = t;
            j = -j;
        }
        u ^= v << j;
        g1 ^= g2 << j;
    }
    return (uint32_t)g1;
}

static uint32_t gf_mulx(const gf_t *f, uint32_t a)
{
    uint64_t v = (uint64_t)a << 1;
    if (v >> f->m) v ^= f->poly;
    return (uint32_t)v;
}

/* -- vector primitives (kernel switch once per vector) --------------------------------------- */

/* acc[i] ^= c * x[i] (unreduced for the carry-less kernels) */
#if SA_HAVE_X86_CLMUL
SA_TARGET_PCLMUL static void axpy_hw(int m, uint64_t *acc, uint32_t c, const uint32_t *x, size_t n)
{
    const __m128i cc = _mm_cvtsi64_si128((long long)c);
    size_t i = 0;
    if (m <= 16) {
        /* x[i] + x[i+1] z^32 in one 64-bit lane: c * x[i] < 2^31 cannot reach the second product,
         * so one carry-less multiply gives two products (four per pair of instructions). */
        for (; i + 4 <= n; i += 4) {
            __m128i xv = _mm_loadu_si128((const __m128i *)(x + i));
            __m128i p0 = _mm_clmulepi64_si128(cc, xv, 0x00);
            __m128i p1 = _mm_clmulepi64_si128(cc, xv, 0x10);
            __m128i a0 = _mm_loadu_si128((const __m128i *)(acc + i));
            __m128i a1 = _mm_loadu_si128((const __m128i *)(acc + i + 2));
            _mm_storeu_si128((__m128i *)(acc + i), _mm_xor_si128(a0, _mm_cvtepu32_epi64(p0)));
            _mm_storeu_si128((__m128i *)(acc + i + 2), _mm_xor_si128(a1, _mm_cvtepu32_epi64(p1)));
        }
    } else {
        for (; i + 2 <= n; i += 2) {
            __m128i xv = _mm_cvtepu32_epi64(_mm_loadl_epi64((const __m128i *)(x + i)));
            __m128i p0 = _mm_clmulepi64_si128(cc, xv, 0x00);
            __m128i p1 = _mm_clmulepi64_si128(cc, xv, 0x10);
            __m128i a = _mm_loadu_si128((const __m128i *)(acc + i));
            _mm_storeu_si128((__m128i *)(acc + i), _mm_xor_si128(a, _mm_unpacklo_epi64(p0, p1)));
        }
    }
    for (; i < n; i++) acc[i] ^= clmul_hw(c, x[i]);
}

SA_TARGET_PCLMUL static void scale_hw(const gf_t *f, uint32_t *out, uint32_t c, const uint32_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = mul_hw(f, c, x[i]);
}

SA_TARGET_PCLMUL static uint64_t dot_rev_hw(const uint32_t *a, const uint32_t *b, size_t n)
{
    uint64_t acc = 0;
    for (size_t i = 0; i < n; i++) acc ^= clmul_hw(a[i], *(b - i));
    return acc;
}
#endif

static void axpy_lazy(const gf_t *f, uint64_t *acc, uint32_t c, const uint32_t *x, size_t n)
{
    if (!c) return;
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        axpy_hw(f->m, acc, c, x, n);
        return;
#endif
    case K_TABLES: {
        uint32_t lc = f->log[c];
        for (size_t i = 0; i < n; i++)
            if (x[i]) acc[i] ^= f->exp[lc + f->log[x[i]]];
        return;
    }
    default: {
        uint64_t tab[16];
        win_table(tab, c);
        for (size_t i = 0; i < n; i++) acc[i] ^= win_mul(tab, x[i]);
        return;
    }
    }
}

/* sum_{i<n} a[i] * b[-i] (b walks backwards), unreduced */
static uint64_t dot_rev_lazy(const gf_t *f, const uint32_t *a, const uint32_t *b, size_t n)
{
    uint64_t acc = 0;
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        return dot_rev_hw(a, b, n);
#endif
    case K_TABLES:
        for (size_t i = 0; i < n; i++) acc ^= mul_tables(f, a[i], *(b - i));
        return acc;
    default:
        for (size_t i = 0; i < n; i++) {
            uint64_t tab[16];
            if (!a[i]) continue;
            win_table(tab, a[i]);
            acc ^= win_mul(tab, *(b - i));
        }
        return acc;
    }
}

/* out[i] = c * x[i], reduced */
static void scale_vec(const gf_t *f, uint32_t *out, uint32_t c, const uint32_t *x, size_t n)
{
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        scale_hw(f, out, c, x, n);
        return;
#endif
    case K_TABLES:
        for (size_t i = 0; i < n; i++) out[i] = mul_tables(f, c, x[i]);
        return;
    default: {
        uint64_t tab[16];
        win_table(tab, c);
        for (size_t i = 0; i < n; i++) out[i] = gf_reduce(f, win_mul(tab, x[i]));
        return;
    }
    }
}

/* out[i] = a[i] * b[i] */
#if SA_HAVE_X86_CLMUL
SA_TARGET_PCLMUL static void vmul_hw(const gf_t *f, uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = mul_hw(f, (uint32_t)a[i], (uint32_t)b[i]);
}
#endif

static void vmul64(const gf_t *f, uint64_t *out, const uint64_t *a, const uint64_t *b, size_t n)
{
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        vmul_hw(f, out, a, b, n);
        return;
#endif
    case K_TABLES:
        for (size_t i = 0; i < n; i++) out[i] = mul_tables(f, (uint32_t)a[i], (uint32_t)b[i]);
        return;
    default:
        for (size_t i = 0; i < n; i++) out[i] = gf_mul(f, (uint32_t)a[i], (uint32_t)b[i]);
        return;
    }
}

/* -- odd power sums ---------------------------------------------------------------------------- */

#define PS_BLOCK 64

/* acc[k] ^= sum_j e[j]^(2k+1) for k < t: a block of elements advances together (independent
 * products, so the multiplier's latency overlaps), each by its square per step. */
#if SA_HAVE_X86_CLMUL
SA_TARGET_PCLMUL static void power_sums_hw(const gf_t *f, uint32_t *acc, const uint32_t *e, size_t n, size_t t)
{
    uint32_t cur[PS_BLOCK], sq[PS_BLOCK];
    for (size_t start = 0; start < n; start += PS_BLOCK) {
        size_t b = n - start < PS_BLOCK ? n - start : PS_BLOCK;
        for (size_t j = 0; j < b; j++) {
            cur[j] = e[start + j];
            sq[j] = gf_sqr(f, cur[j]);
        }
        for (size_t k = 0; k < t; k++) {
            uint32_t s = 0;
            for (size_t j = 0; j < b; j++) {
                s ^= cur[j];
                cur[j] = mul_hw(f, cur[j], sq[j]);
            }
            acc[k] ^= s;
        }
    }
}
#endif

static void power_sums_tables(const gf_t *f, uint32_t *acc, const uint32_t *e, size_t n, size_t t)
{
    uint32_t lg[PS_BLOCK], step[PS_BLOCK];
    const uint32_t q = f->order1;
    for (size_t start = 0; start < n; start += PS_BLOCK) {
        size_t b = 0;
        for (size_t j = start; j < n && j < start + PS_BLOCK; j++) {
            if (!e[j]) continue; /* 0^i = 0 for i >= 1 */
            lg[b] = f->log[e[j]];
            step[b] = (2 * lg[b]) % q;
            b++;
        }
        for (size_t k = 0; k < t; k++) {
            uint32_t s = 0;
            for (size_t j = 0; j < b; j++) {
                s ^= f->exp[lg[j]];
                lg[j] += step[j];
                if (lg[j] >= q) lg[j] -= q;
            }
            acc[k] ^= s;
        }
    }
}

static void power_sums_portable(const gf_t *f, uint32_t *acc, const uint32_t *e, size_t n, size_t t)
{
    uint32_t cur[PS_BLOCK];
    uint64_t tab[PS_BLOCK][16];
    for (size_t start = 0; start < n; start += PS_BLOCK) {
        size_t b = n - start < PS_BLOCK ? n - start : PS_BLOCK;
        for (size_t j = 0; j < b; j++) {
            cur[j] = e[start + j];
            win_table(tab[j], gf_sqr(f, cur[j]));
        }
        for (size_t k = 0; k < t; k++) {
            uint32_t s = 0;
            for (size_t j = 0; j < b; j++) {
                s ^= cur[j];
                cur[j] = gf_reduce(f, win_mul(tab[j], cur[j]));
            }
            acc[k] ^= s;
        }
    }
}

static void power_sums(const gf_t *f, uint32_t *acc, const uint32_t *e, size_t n, size_t t)
{
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        power_sums_hw(f, acc, e, n, t);
        return;
#endif
    case K_TABLES:
        power_sums_tables(f, acc, e, n, t);
        return;
    default:
        power_sums_portable(f, acc, e, n, t);
        return;
    }
}

/* -- field construction ------------------------------------------------------------------------ */

static gf_t *FIELDS[GF_MAX_M + 1][3];

static void build_artin_schreier(gf_t *f)
{
    f->as_count = 0;
    for (int j = 0; j < f->m; j++) {
        uint32_t value = gf_sqr(f, (uint32_t)1 << j) ^ ((uint32_t)1 << j);
        uint32_t combo = (uint32_t)1 << j;
        for (int r = 0; r < f->as_count; r++) {
            if ((value >> f->as_pivot[r]) & 1) {
                value ^= f->as_row[r];
                combo ^= f->as_combo[r];
            }
        }
        if (value) {
            int c = f->as_count++;
            f->as_pivot[c] = bit_length64(value) - 1;
            f->as_row[c] = value;
            f->as_combo[c] = combo;
        }
    }
}

/* y with y^2 + y = k; returns 0 and sets *y, or -1 when Tr(k) = 1 (no solution) */
static int solve_artin_schreier(const gf_t *f, uint32_t k, uint32_t *y)
{
    uint32_t out = 0;
    for (int r = 0; r < f->as_count; r++) {
        if ((k >> f->as_pivot[r]) & 1) {
            k ^= f->as_row[r];
            out ^= f->as_combo[r];
        }
    }
    if (k) return -1;
    *y = out;
    return 0;
}

/* The field for (m, kernel), built once per process.  Called with the GIL held. */
static gf_t *get_field(int m, int kernel)
{
    gf_t *f;
    if (m < GF_MIN_M || m > GF_MAX_M || kernel < 0 || kernel > 2) return NULL;
    if (FIELDS[m][kernel]) return FIELDS[m][kernel];
    f = (gf_t *)xalloc(1, sizeof(gf_t));
    if (!f) return NULL;
    f->m = m;
    f->kernel = kernel;
    f->poly = PRIMITIVE[m];
    f->low = f->poly ^ ((uint64_t)1 << m);
    f->mask = (uint32_t)(((uint64_t)1 << m) - 1);
    f->order1 = f->mask;
    for (int k = 0; k < 4; k++)
        for (uint32_t byte = 0; byte < 256; byte++) {
            /* m + 8k + 8 <= 64 for m <= 32: the shifted byte fits */
            f->red[k][byte] = reduce_slow(f, (uint64_t)byte << (m + 8 * k));
            f->sqr[k][byte] = 8 * k < m ? reduce_slow(f, clmul_sw((uint64_t)byte << (8 * k), byte << (8 * k))) : 0;
        }
    if (kernel == K_PCLMUL && 2 * (bit_length64(f->low) - 1) > m + 1) {
        /* two folds would not reach below x^m (never the case for the table above) */
        PyMem_RawFree(f);
        return NULL;
    }
    if (kernel == K_TABLES) {
        uint32_t n = f->order1, value = 1;
        if (m > GF_TABLES_MAX_M) {
            PyMem_RawFree(f);
            return NULL;
        }
        f->log = (uint16_t *)xalloc((size_t)1 << m, sizeof(uint16_t));
        f->exp = (uint16_t *)xalloc(2 * (size_t)n, sizeof(uint16_t));
        if (!f->log || !f->exp) {
            PyMem_RawFree(f->log);
            PyMem_RawFree(f->exp);
            PyMem_RawFree(f);
            return NULL;
        }
        for (uint32_t i = 0; i < n; i++) {
            f->exp[i] = f->exp[i + n] = (uint16_t)value;
            f->log[value] = (uint16_t)i;
            value <<= 1;
            if (value >> m) value ^= (uint32_t)f->poly;
        }
    }
    build_artin_schreier(f);
    FIELDS[m][kernel] = f;
    return f;
}

/* ------------------------------------------------------------------------------------------------
 * polynomials over GF(2^m): coefficients low degree first, length = degree + 1, zero = length 0
 * --------------------------------------------------------------------------------------------- */

static size_t trim(const uint32_t *p, size_t len)
{
    while (len && !p[len - 1]) len--;
    return len;
}

/* Division of a (length la) by b (length lb >= 1, b[lb-1] != 0): the quotient into q (la-lb+1
 * entries, unless NULL) and the remainder into r (lb-1 entries); r may alias a.  Each quotient
 * step reduces one coefficient and adds q_k * b(z) unreduced (acc: la entries of scratch). */
static void poly_divmod(const gf_t *f, const uint32_t *a, size_t la, const uint32_t *b, size_t lb,
                        uint32_t *q, uint32_t *r, uint64_t *acc)
{
    size_t db = lb - 1;
    uint32_t lead_inv = b[db] == 1 ? 1 : gf_inv(f, b[db]);
    for (size_t i = 0; i < la; i++) acc[i] = a[i];
    for (size_t k = la; k-- > db;) {
        uint32_t c = gf_reduce(f, acc[k]);
        if (lead_inv != 1) c = gf_mul(f, c, lead_inv);
        if (q) q[k - db] = c;
        axpy_lazy(f, acc + (k - db), c, b, db);
    }
    for (size_t i = 0; i < db; i++) r[i] = i < la ? gf_reduce(f, acc[i]) : 0;
}

static void make_monic(const gf_t *f, uint32_t *p, size_t len)
{
    if (len && p[len - 1] != 1) {
        uint32_t inv = gf_inv(f, p[len - 1]);
        scale_vec(f, p, inv, p, len - 1);
        p[len - 1] = 1;
    }
}

/* Monic gcd of a (non-zero) and b by Euclid.  x and y hold max(la, lb) entries each, acc as
 * many; the result is left in x or y (made monic once, at the end) and returned through *out. */
static size_t poly_gcd(const gf_t *f, const uint32_t *a, size_t la, const uint32_t *b, size_t lb,
                       uint32_t *x, uint32_t *y, uint64_t *acc, uint32_t **out)
{
    size_t lx = la, ly = lb;
    memcpy(x, a, la * sizeof(uint32_t));
    memcpy(y, b, lb * sizeof(uint32_t));
    while (ly) { /* remainders stay non-monic: one product per quotient step, not per coefficient */
        uint32_t *tp;
        size_t tl;
        if (lx >= ly) {
            poly_divmod(f, x, lx, y, ly, NULL, x, acc);
            lx = trim(x, ly - 1);
        }
        tp = x, x = y, y = tp;
        tl = lx, lx = ly, ly = tl;
    }
    make_monic(f, x, lx);
    *out = x;
    return lx;
}

/* out[j] = p(x[j]) by Horner's rule, a block of points at a time (independent products). */
#define EVAL_BLOCK 32
#if SA_HAVE_X86_CLMUL
SA_TARGET_PCLMUL static void eval_many_hw(const gf_t *f, const uint32_t *p, size_t lp, const uint32_t *x, size_t n, uint32_t *out)
{
    for (size_t s = 0; s < n; s += EVAL_BLOCK) {
        size_t b = n - s < EVAL_BLOCK ? n - s : EVAL_BLOCK;
        uint32_t acc[EVAL_BLOCK];
        for (size_t j = 0; j < b; j++) acc[j] = p[lp - 1];
        for (size_t i = lp - 1; i-- > 0;)
            for (size_t j = 0; j < b; j++) acc[j] = mul_hw(f, acc[j], x[s + j]) ^ p[i];
        memcpy(out + s, acc, b * sizeof(uint32_t));
    }
}
#endif

static void eval_many(const gf_t *f, const uint32_t *p, size_t lp, const uint32_t *x, size_t n, uint32_t *out)
{
    if (lp == 0) {
        memset(out, 0, n * sizeof(uint32_t));
        return;
    }
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        eval_many_hw(f, p, lp, x, n, out);
        return;
#endif
    case K_TABLES:
        for (size_t j = 0; j < n; j++) {
            uint32_t acc = p[lp - 1];
            if (!x[j]) {
                out[j] = p[0];
                continue;
            }
            uint32_t lx = f->log[x[j]];
            for (size_t i = lp - 1; i-- > 0;) acc = (acc ? f->exp[f->log[acc] + lx] : 0) ^ p[i];
            out[j] = acc;
        }
        return;
    default:
        for (size_t j = 0; j < n; j++) {
            uint64_t tab[16];
            uint32_t acc = p[lp - 1];
            win_table(tab, x[j]);
            for (size_t i = lp - 1; i-- > 0;) acc = gf_reduce(f, win_mul(tab, acc)) ^ p[i];
            out[j] = acc;
        }
        return;
    }
}

/* p(z) / (z - root) for a root of p (synthetic division), in place; returns the new length. */
static size_t deflate(const gf_t *f, uint32_t *p, size_t lp, uint32_t root)
{
    uint32_t carry = 0;
    for (size_t i = lp - 1; i > 0; i--) {
        carry = p[i] ^ gf_mul(f, root, carry); /* quotient coefficient i - 1 */
        p[i] = carry;                          /* p[i] is no longer needed */
    }
    /* p[1..lp) holds the quotient */
    memmove(p, p + 1, (lp - 1) * sizeof(uint32_t));
    return lp - 1;
}

/* ------------------------------------------------------------------------------------------------
 * Berlekamp-Massey (binary): s[0..ns) = s_1..s_ns with s_2i = s_i^2
 * --------------------------------------------------------------------------------------------- */

/* c, b, tmp: ns + 2 entries each.  Returns the register length L and the trimmed length of c
 * in *lc (the connection polynomial Lambda, Lambda_0 = 1), or -1 if a length would overflow. */
static Py_ssize_t berlekamp_massey(const gf_t *f, const uint32_t *s, size_t ns, uint32_t *c, size_t *lc,
                                   uint32_t *b, uint32_t *tmp)
{
    size_t lenc = 1, lenb = 1, length = 0, gap = 1, cap = ns + 2;
    uint32_t binv = 1;
    c[0] = b[0] = 1;
    for (size_t n = 0; n < ns; n++) {
        size_t top, newlen;
        uint32_t d, coef;
        if (n & 1) { /* even power sum: its discrepancy is zero */
            gap++;
            continue;
        }
        top = length < lenc - 1 ? length : lenc - 1;
        d = s[n] ^ (top ? gf_reduce(f, dot_rev_lazy(f, c + 1, s + n - 1, top)) : 0);
        if (!d) {
            gap++;
            continue;
        }
        coef = gf_mul(f, d, binv);
        newlen = gap + lenb > lenc ? gap + lenb : lenc;
        if (newlen > cap) return -1;
        if (2 * length <= n) {
            memcpy(tmp, c, lenc * sizeof(uint32_t));
            for (size_t i = lenc; i < newlen; i++) c[i] = 0;
            for (size_t i = 0; i < lenb; i++) c[gap + i] ^= gf_mul(f, coef, b[i]);
            memcpy(b, tmp, lenc * sizeof(uint32_t));
            lenb = lenc;
            binv = gf_inv(f, d);
            gap = 1;
            length = n + 1 - length;
        } else {
            for (size_t i = lenc; i < newlen; i++) c[i] = 0;
            for (size_t i = 0; i < lenb; i++) c[gap + i] ^= gf_mul(f, coef, b[i]);
            gap++;
        }
        lenc = trim(c, newlen);
        if (!lenc) lenc = 1; /* c_0 = 1 always; defensive */
    }
    *lc = lenc;
    return (Py_ssize_t)length;
}

/* ------------------------------------------------------------------------------------------------
 * roots of sigma: Frobenius powers and the trace algorithm
 * --------------------------------------------------------------------------------------------- */

enum {
    ROOTS_ZERO = -1,      /* sigma(0) = 0 */
    ROOTS_NOT_SPLIT = -2, /* z^(2^m) != z mod sigma: repeated roots or roots outside the field */
    ROOTS_QUADRATIC = -3, /* a quadratic factor without two distinct roots */
    ROOTS_MEMORY = -4,
    ROOTS_UNSPLIT = -5,   /* splitting did not finish (impossible when sigma passed the check) */
};

/* Z[k*L .. (k+1)*L) = z^(2^k) mod sigma for k = 0..m (sigma monic of degree L >= 2).  Each
 * step squares (p(z)^2 = sum p_i^2 z^(2i), squaring is GF(2)-linear) and reduces the
 * degree-(2L - 2) result modulo sigma.  Returns 1 iff Z_m = z. */
static int frobenius(const gf_t *f, const uint32_t *sigma, size_t L, uint32_t *Z, uint64_t *acc)
{
    memset(Z, 0, L * sizeof(uint32_t));
    Z[1] = 1;
    for (int k = 1; k <= f->m; k++) {
        const uint32_t *prev = Z + (size_t)(k - 1) * L;
        uint32_t *cur = Z + (size_t)k * L;
        memset(acc, 0, (2 * L - 1) * sizeof(uint64_t));
        for (size_t i = 0; i < L; i++) acc[2 * i] = gf_sqr(f, prev[i]);
        for (size_t top = 2 * L - 1; top-- > L;) {
            uint32_t c = gf_reduce(f, acc[top]);
            axpy_lazy(f, acc + (top - L), c, sigma, L);
        }
        for (size_t i = 0; i < L; i++) cur[i] = gf_reduce(f, acc[i]);
    }
    {
        const uint32_t *last = Z + (size_t)f->m * L;
        for (size_t i = 0; i < L; i++)
            if (last[i] != (i == 1)) return 0;
    }
    return 1;
}

static int quadratic_roots(const gf_t *f, uint32_t b, uint32_t c, uint32_t *roots, size_t *nroots, size_t cap)
{
    uint32_t y, k, root, ib;
    if (!b || !c) return ROOTS_QUADRATIC; /* repeated root (b = 0) or zero root (c = 0) */
    ib = gf_inv(f, b);
    k = gf_mul(f, c, gf_sqr(f, ib));
    if (solve_artin_schreier(f, k, &y)) return ROOTS_QUADRATIC;
    if (*nroots + 2 > cap) return ROOTS_QUADRATIC;
    root = gf_mul(f, b, y);
    roots[(*nroots)++] = root;
    roots[(*nroots)++] = root ^ b;
    return 0;
}

typedef struct {
    uint32_t *coef; /* arena */
    size_t used, cap;
    size_t *off, *len;
    size_t count, max_count;
} factor_list;

/* A factor of sigma: degree 1 and 2 are solved at once, larger ones wait for the next round. */
static int emit_factor(const gf_t *f, const uint32_t *h, size_t lh, factor_list *next, uint32_t *roots,
                       size_t *nroots, size_t cap)
{
    if (lh == 2) {
        if (*nroots >= cap) return ROOTS_UNSPLIT;
        roots[(*nroots)++] = h[0];
        return 0;
    }
    if (lh == 3) return quadratic_roots(f, h[1], h[0], roots, nroots, cap);
    if (next->used + lh > next->cap || next->count >= next->max_count) return ROOTS_MEMORY;
    memmove(next->coef + next->used, h, lh * sizeof(uint32_t));
    next->off[next->count] = next->used;
    next->len[next->count] = lh;
    next->count++;
    next->used += lh;
    return 0;
}

/* The L roots of the monic sigma (length L + 1) into roots[0..L), or a ROOTS_* error. */
static Py_ssize_t find_roots(const gf_t *f, const uint32_t *sigma, size_t L, uint32_t beta, uint32_t *roots)
{
    size_t nroots = 0, m = (size_t)f->m;
    Py_ssize_t status = 0;
    uint32_t *Z = NULL, *T = NULL, *arena = NULL, *rbuf = NULL, *gx = NULL, *gy = NULL, *qbuf = NULL;
    uint64_t *acc = NULL;
    size_t *idx = NULL;
    factor_list lists[2];

    if (L == 0) return 0;
    if (sigma[0] == 0) return ROOTS_ZERO;
    if (L == 1) {
        roots[0] = sigma[0];
        return 1;
    }
    if (L == 2) {
        int rc = quadratic_roots(f, sigma[1], sigma[0], roots, &nroots, 2);
        return rc ? rc : 2;
    }
    Z = (uint32_t *)xalloc((m + 1) * L, sizeof(uint32_t));
    T = (uint32_t *)xalloc(L + 1, sizeof(uint32_t));
    arena = (uint32_t *)xalloc(2 * (2 * L + 2), sizeof(uint32_t));
    rbuf = (uint32_t *)xalloc(L + 1, sizeof(uint32_t));
    gx = (uint32_t *)xalloc(L + 1, sizeof(uint32_t));
    gy = (uint32_t *)xalloc(L + 1, sizeof(uint32_t));
    qbuf = (uint32_t *)xalloc(L + 1, sizeof(uint32_t));
    acc = (uint64_t *)xalloc(2 * L + 2, sizeof(uint64_t));
    idx = (size_t *)xalloc(4 * (L + 1), sizeof(size_t));
    if (!Z || !T || !arena || !rbuf || !gx || !gy || !qbuf || !acc || !idx) {
        status = ROOTS_MEMORY;
        goto done;
    }
    if (!frobenius(f, sigma, L, Z, acc)) {
        status = ROOTS_NOT_SPLIT;
        goto done;
    }
    for (int i = 0; i < 2; i++) {
        lists[i].coef = arena + (size_t)i * (2 * L + 2);
        lists[i].cap = 2 * L + 2;
        lists[i].off = idx + (size_t)(2 * i) * (L + 1);
        lists[i].len = idx + (size_t)(2 * i + 1) * (L + 1);
        lists[i].max_count = L + 1;
        lists[i].used = lists[i].count = 0;
    }
    memcpy(lists[0].coef, sigma, (L + 1) * sizeof(uint32_t));
    lists[0].off[0] = 0;
    lists[0].len[0] = L + 1;
    lists[0].count = 1;
    lists[0].used = L + 1;
    {
        int cur = 0;
        uint32_t b = beta;
        for (size_t round = 0; round < m && lists[cur].count; round++, b = gf_mulx(f, b)) {
            factor_list *pend = &lists[cur], *next = &lists[1 - cur];
            size_t lt;
            uint32_t c = b;
            /* T = Tr(b z) mod sigma = sum_k b^(2^k) Z_k */
            memset(acc, 0, L * sizeof(uint64_t));
            for (size_t k = 0; k < m; k++) {
                axpy_lazy(f, acc, c, Z + k * L, L);
                c = gf_sqr(f, c);
            }
            for (size_t i = 0; i < L; i++) T[i] = gf_reduce(f, acc[i]);
            lt = trim(T, L);
            next->used = next->count = 0;
            for (size_t j = 0; j < pend->count; j++) {
                const uint32_t *h = pend->coef + pend->off[j];
                size_t lh = pend->len[j], lr, lg, lq;
                uint32_t *g;
                if (lt >= lh) {
                    poly_divmod(f, T, lt, h, lh, NULL, rbuf, acc);
                    lr = trim(rbuf, lh - 1);
                } else {
                    memcpy(rbuf, T, lt * sizeof(uint32_t));
                    lr = lt;
                }
                lg = lr ? poly_gcd(f, h, lh, rbuf, lr, gx, gy, acc, &g) : lh;
                if (lr == 0 || lg <= 1 || lg >= lh) { /* no split this round */
                    status = emit_factor(f, h, lh, next, roots, &nroots, L);
                    if (status) goto done;
                    continue;
                }
                poly_divmod(f, h, lh, g, lg, qbuf, rbuf, acc);
                lq = lh - lg + 1;
                status = emit_factor(f, g, lg, next, roots, &nroots, L);
                if (!status) status = emit_factor(f, qbuf, lq, next, roots, &nroots, L);
                if (status) goto done;
            }
            cur = 1 - cur;
        }
        if (lists[cur].count || nroots != L) {
            status = ROOTS_UNSPLIT;
            goto done;
        }
    }
    status = (Py_ssize_t)nroots;
done:
    PyMem_RawFree(Z);
    PyMem_RawFree(T);
    PyMem_RawFree(arena);
    PyMem_RawFree(rbuf);
    PyMem_RawFree(gx);
    PyMem_RawFree(gy);
    PyMem_RawFree(qbuf);
    PyMem_RawFree(acc);
    PyMem_RawFree(idx);
    return status;
}

/* ------------------------------------------------------------------------------------------------
 * PinSketch recovery: D from its odd power sums, then A = B xor D
 * --------------------------------------------------------------------------------------------- */

enum { RECOVER_TOO_FAR = -10 };

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Evaluating sigma at the sample's own elements (B \ A are roots there) costs n * L products and
 * removes those roots before the trace algorithm (about m * L^2 products for degree L). Worth
 * it only when the sample is small against m * L. */
#define SAMPLE_EVAL_DIVISOR 4

/* The roots of the locator of the set whose odd power sums are diff[0..t), i.e. D = A xor B;
 * sample (sorted, distinct) is B.  Returns |D| with the roots in *out (sorted, caller frees),
 * or a negative error. */
static Py_ssize_t recover_difference(const gf_t *f, const uint32_t *diff, size_t t, const uint32_t *sample,
                                     size_t n, uint32_t beta, uint32_t **out)
{
    size_t ns = 2 * t, lc = 0, L, nfound = 0;
    Py_ssize_t length, status = RECOVER_TOO_FAR;
    uint32_t *s = (uint32_t *)xalloc(ns, sizeof(uint32_t));
    uint32_t *c = (uint32_t *)xalloc(ns + 2, sizeof(uint32_t));
    uint32_t *b = (uint32_t *)xalloc(ns + 2, sizeof(uint32_t));
    uint32_t *tmp = (uint32_t *)xalloc(ns + 2, sizeof(uint32_t));
    uint32_t *roots = NULL, *values = NULL, *check = NULL;
    *out = NULL;
    if (!s || !c || !b || !tmp) {
        status = ROOTS_MEMORY;
        goto done;
    }
    for (size_t i = 0; i < t; i++) {
        s[2 * i] = diff[i];
        s[2 * i + 1] = gf_sqr(f, s[i]);
    }
    length = berlekamp_massey(f, s, ns, c, &lc, b, tmp);
    if (length < 0 || (size_t)length > t || lc - 1 != (size_t)length) goto done;
    L = (size_t)length;
    roots = (uint32_t *)xalloc(L + 1, sizeof(uint32_t));
    check = (uint32_t *)xalloc(t, sizeof(uint32_t));
    if (!roots || !check) {
        status = ROOTS_MEMORY;
        goto done;
    }
    /* sigma(z) = z^L Lambda(1/z): reverse c in place (tmp) */
    for (size_t i = 0; i <= L; i++) tmp[i] = c[L - i];
    {
        size_t lsig = L + 1;
        if (L >= 3 && n && n <= (size_t)f->m * L / SAMPLE_EVAL_DIVISOR) {
            values = (uint32_t *)xalloc(n, sizeof(uint32_t));
            if (!values) {
                status = ROOTS_MEMORY;
                goto done;
            }
            eval_many(f, tmp, lsig, sample, n, values);
            for (size_t j = 0; j < n && nfound < L; j++)
                if (!values[j] && sample[j]) {
                    roots[nfound++] = sample[j];
                    lsig = deflate(f, tmp, lsig, sample[j]);
                }
        }
        status = find_roots(f, tmp, lsig - 1, beta, roots + nfound);
        if (status < 0) {
            status = RECOVER_TOO_FAR;
            goto done;
        }
    }
    qsort(roots, L, sizeof(uint32_t), cmp_u32);
    for (size_t i = 1; i < L; i++)
        if (roots[i] == roots[i - 1]) {
            status = RECOVER_TOO_FAR;
            goto done;
        }
    if (L && roots[0] == 0) {
        status = RECOVER_TOO_FAR;
        goto done;
    }
    /* the roots' own power sums must be exactly the syndromes */
    memset(check, 0, t * sizeof(uint32_t));
    power_sums(f, check, roots, L, t);
    if (memcmp(check, diff, t * sizeof(uint32_t)) != 0) {
        status = RECOVER_TOO_FAR;
        goto done;
    }
    *out = roots;
    roots = NULL;
    status = (Py_ssize_t)L;
done:
    PyMem_RawFree(s);
    PyMem_RawFree(c);
    PyMem_RawFree(b);
    PyMem_RawFree(tmp);
    PyMem_RawFree(roots);
    PyMem_RawFree(values);
    PyMem_RawFree(check);
    return status;
}

/* ------------------------------------------------------------------------------------------------
 * prime fields F_p, p < 2^31
 * --------------------------------------------------------------------------------------------- */

#define FP_MAX_MODULUS ((uint64_t)1 << 31)

typedef struct {
    uint64_t p;
    uint64_t mu; /* floor((2^64 - 1) / p) */
} fp_t;

static fp_t fp_make(uint64_t p)
{
    fp_t F;
    F.p = p;
    F.mu = UINT64_MAX / p;
    return F;
}

/* x mod p for x < 2^63.  The quotient estimate floor(x * mu / 2^64) is at most one below
 * floor(x / p) (mu > 2^64 / p - 1 and x < 2^64), so one conditional subtraction finishes. */
static inline uint64_t fp_red(const fp_t *F, uint64_t x)
{
#if SA_HAVE_INT128
    uint64_t q = (uint64_t)(((unsigned __int128)x * F->mu) >> 64);
    uint64_t r = x - q * F->p;
    return r >= F->p ? r - F->p : r;
#else
    return x % F->p;
#endif
}

static inline uint64_t fp_mul(const fp_t *F, uint64_t a, uint64_t b) { return fp_red(F, a * b); }

static uint64_t fp_pow(const fp_t *F, uint64_t a, uint64_t e)
{
    uint64_t r = 1 % F->p;
    while (e) {
        if (e & 1) r = fp_mul(F, r, a);
        a = fp_mul(F, a, a);
        e >>= 1;
    }
    return r;
}

static uint64_t fp_horner(const fp_t *F, const uint64_t *c, size_t k, uint64_t x)
{
    uint64_t acc = 0;
    for (size_t j = k; j-- > 0;) acc = fp_red(F, acc * x + c[j]);
    return acc;
}

/* Berlekamp-Welch for one word: n points (x_i, y_i), distinct x_i, message length k, radius
 * e = (n - k) / 2.  Unknowns: Q (e + k coefficients) and monic E of degree e; equations
 * Q(x_i) - y_i E(x_i) = 0.  Any solution gives F = Q / E when some F is within e of the word
 * (see _prime_field.py), so: Gaussian elimination to echelon form, back substitution with the
 * free variables 0, exact division, agreement count.  Returns 1 and F in coeffs, or 0.
 * M: n * (2e + k + 1) scratch entries, sol: 2e + k, pivcol: n. */
static int bw_row(const fp_t *F, const uint64_t *xs, const uint64_t *ys, size_t n, size_t k, uint64_t *coeffs,
                  uint32_t *M, uint64_t *sol, size_t *pivcol)
{
    const uint64_t p = F->p;
    size_t e = (n - k) / 2, u = 2 * e + k, w = u + 1, rank = 0, agree = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t *row = M + i * w;
        uint64_t x = xs[i], y = ys[i], power = 1, neg_y = y ? p - y : 0;
        for (size_t j = 0; j < e + k; j++) {
            row[j] = (uint32_t)power;
            if (j < e) row[e + k + j] = (uint32_t)fp_mul(F, neg_y, power);
            if (j == e) row[u] = (uint32_t)fp_mul(F, y, power);
            power = fp_mul(F, power, x);
        }
    }
    for (size_t col = 0; col < u && rank < n; col++) {
        size_t piv = rank;
        uint32_t *pr;
        uint64_t inv;
        while (piv < n && M[piv * w + col] == 0) piv++;
        if (piv == n) continue;
        pr = M + rank * w;
        if (piv != rank) {
            uint32_t *other = M + piv * w;
            for (size_t j = col; j < w; j++) {
                uint32_t t = pr[j];
                pr[j] = other[j];
                other[j] = t;
            }
        }
        inv = fp_pow(F, pr[col], p - 2);
        for (size_t j = col; j < w; j++) pr[j] = (uint32_t)fp_mul(F, pr[j], inv);
        for (size_t i = rank + 1; i < n; i++) {
            uint32_t *ri = M + i * w;
            uint64_t g;
            if (!ri[col]) continue;
            g = p - ri[col];
            for (size_t j = col; j < w; j++) ri[j] = (uint32_t)fp_red(F, ri[j] + g * pr[j]);
        }
        pivcol[rank++] = col;
    }
    for (size_t i = rank; i < n; i++)
        if (M[i * w + u]) return 0; /* inconsistent system */
    memset(sol, 0, u * sizeof(uint64_t));
    for (size_t r = rank; r-- > 0;) {
        const uint32_t *pr = M + r * w;
        size_t c = pivcol[r];
        uint64_t sub = 0;
        for (size_t j = c + 1; j < u; j++) sub = fp_red(F, sub + (uint64_t)pr[j] * sol[j]);
        sol[c] = pr[u] >= sub ? pr[u] - sub : pr[u] + p - sub;
    }
    /* F = Q / E, E = sol[e+k .. u) with leading 1 */
    {
        uint64_t *Q = sol, *E = sol + e + k;
        for (size_t shift = k; shift-- > 0;) {
            uint64_t lead = Q[shift + e], g = lead ? p - lead : 0;
            coeffs[shift] = lead;
            for (size_t j = 0; j < e; j++) Q[shift + j] = fp_red(F, Q[shift + j] + g * E[j]);
            Q[shift + e] = 0;
        }
        for (size_t j = 0; j < e; j++)
            if (Q[j]) return 0; /* E does not divide Q */
    }
    for (size_t i = 0; i < n; i++) agree += fp_horner(F, coeffs, k, xs[i]) == ys[i];
    return agree >= n - e;
}

/* Values of F at 0, 1, 2, ... by forward differences: d[j] = Delta^j F(x); stepping x adds
 * d[j+1] to d[j] (old values), so each value costs deg F modular additions. */
typedef struct {
    uint32_t *d;
    size_t D;
    uint32_t p;
} fd_t;

static int fd_init(fd_t *s, const fp_t *F, const uint64_t *c, size_t k)
{
    size_t D = k ? k - 1 : 0;
    s->d = (uint32_t *)xalloc(D + 1, sizeof(uint32_t));
    s->D = D;
    s->p = (uint32_t)F->p;
    if (!s->d) return -1;
    for (size_t j = 0; j <= D; j++) s->d[j] = k ? (uint32_t)fp_horner(F, c, k, j % F->p) : 0;
    for (size_t level = 1; level <= D; level++)
        for (size_t i = D; i >= level; i--) {
            uint32_t a = s->d[i], b = s->d[i - 1];
            s->d[i] = a >= b ? a - b : a + s->p - b;
        }
    return 0;
}

/* out[0..count) = next values */
static void fd_run(fd_t *s, uint32_t *out, size_t count)
{
    uint32_t *d = s->d, p = s->p;
    size_t D = s->D;
    for (size_t x = 0; x < count; x++) {
        out[x] = d[0];
        for (size_t j = 0; j < D; j++) {
            uint32_t v = d[j] + d[j + 1] - p; /* in [-p, p - 2] as int32 */
            d[j] = v + ((uint32_t)((int32_t)v >> 31) & p);
        }
    }
}

/* ------------------------------------------------------------------------------------------------
 * Python interface
 * --------------------------------------------------------------------------------------------- */

/* A C-contiguous buffer of 8-byte native integers (numpy int64/uint64). */
static int get_words(PyObject *obj, Py_buffer *view, size_t *count, const char *name)
{
    const char *fmt;
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    fmt = view->format ? view->format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
    if (view->itemsize != 8 || strlen(fmt) != 1 || !strchr("qQlLnN", *fmt)) {
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous array of 64-bit integers", name);
        PyBuffer_Release(view);
        return -1;
    }
    *count = (size_t)(view->len / 8);
    return 0;
}

static PyObject *new_words(size_t count, void **data)
{
    PyObject *out = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(count * 8));
    if (out) *data = PyByteArray_AS_STRING(out);
    return out;
}

typedef struct {
    PyObject_HEAD
    const gf_t *f;
} GF2mObject;

/* sketchauth.errors.DecodeError, looked up when the module is initialised: decoding failures
 * are raised as the library's own exception, never returned as sentinels. */
static PyObject *DecodeErrorType = NULL;

static const char *roots_message(Py_ssize_t code)
{
    switch (code) {
    case ROOTS_ZERO:
        return "locator has a zero root";
    case ROOTS_NOT_SPLIT:
        return "locator does not split into distinct linear factors over the field";
    case ROOTS_QUADRATIC:
        return "quadratic factor has a repeated or zero root, or no root in the field";
    default:
        return "locator roots are not distinct non-zero field elements";
    }
}

static int elem_from(PyObject *o, const gf_t *f, uint32_t *out)
{
    unsigned long long v;
    if (!PyLong_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "field elements must be ints");
        return -1;
    }
    v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "field element out of range");
        return -1;
    }
    if (v > f->mask) {
        PyErr_SetString(PyExc_ValueError, "field element out of range");
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* A sequence of field elements as a uint32 array (at least `extra` spare entries). */
static uint32_t *poly_from(PyObject *seq, const gf_t *f, size_t *len, size_t extra)
{
    PyObject *fast = PySequence_Fast(seq, "polynomial must be a sequence of ints");
    Py_ssize_t n;
    uint32_t *out;
    if (!fast) return NULL;
    n = PySequence_Fast_GET_SIZE(fast);
    out = (uint32_t *)xalloc((size_t)n + extra + 1, sizeof(uint32_t));
    if (!out) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (elem_from(PySequence_Fast_GET_ITEM(fast, i), f, &out[i]) < 0) {
            Py_DECREF(fast);
            PyMem_RawFree(out);
            return NULL;
        }
    Py_DECREF(fast);
    *len = (size_t)n;
    return out;
}

static PyObject *list_from(const uint32_t *p, size_t len)
{
    PyObject *out = PyList_New((Py_ssize_t)len);
    if (!out) return NULL;
    for (size_t i = 0; i < len; i++) {
        PyObject *v = PyLong_FromUnsignedLong(p[i]);
        if (!v) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, v);
    }
    return out;
}

/* Field elements from a word buffer, range-checked (a copy: later changes cannot bypass it). */
static uint32_t *elems_from_words(const gf_t *f, const Py_buffer *view, size_t n)
{
    const uint64_t *w = (const uint64_t *)view->buf;
    uint32_t *out = (uint32_t *)xalloc(n + 1, sizeof(uint32_t));
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (w[i] > f->mask) {
            PyMem_RawFree(out);
            PyErr_SetString(PyExc_ValueError, "array holds a value outside the field");
            return NULL;
        }
        out[i] = (uint32_t)w[i];
    }
    return out;
}

static PyObject *GF2m_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"m", "kernel", NULL};
    int m;
    const char *kernel_name;
    int kernel = -1;
    GF2mObject *self;
    const gf_t *f;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "is", kwlist, &m, &kernel_name)) return NULL;
    for (int i = 0; i < 3; i++)
        if (strcmp(kernel_name, KERNEL_NAMES[i]) == 0) kernel = i;
    if (kernel < 0) return PyErr_Format(PyExc_ValueError, "unknown kernel %s", kernel_name);
    if (m < GF_MIN_M || m > GF_MAX_M) return PyErr_Format(PyExc_ValueError, "m must be in [8, 32], got %d", m);
    if (kernel == K_PCLMUL && !cpu_has_pclmul())
        return PyErr_Format(PyExc_ValueError, "this CPU has no carry-less multiply instruction");
    if (kernel == K_TABLES && m > GF_TABLES_MAX_M)
        return PyErr_Format(PyExc_ValueError, "log tables are only built for m <= 16");
    f = get_field(m, kernel);
    if (!f) return PyErr_NoMemory();
    self = (GF2mObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->f = f;
    return (PyObject *)self;
}

static PyObject *GF2m_repr(GF2mObject *self)
{
    return PyUnicode_FromFormat("GF2m(m=%d, kernel='%s')", self->f->m, KERNEL_NAMES[self->f->kernel]);
}

static PyObject *GF2m_get_m(GF2mObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->f->m);
}

static PyObject *GF2m_get_kernel(GF2mObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(KERNEL_NAMES[self->f->kernel]);
}

static PyObject *GF2m_mul(GF2mObject *self, PyObject *args)
{
    PyObject *a, *b;
    uint32_t x, y;
    if (!PyArg_ParseTuple(args, "OO", &a, &b) || elem_from(a, self->f, &x) < 0 || elem_from(b, self->f, &y) < 0)
        return NULL;
    return PyLong_FromUnsignedLong(gf_mul(self->f, x, y));
}

static PyObject *GF2m_sqr(GF2mObject *self, PyObject *a)
{
    uint32_t x;
    if (elem_from(a, self->f, &x) < 0) return NULL;
    return PyLong_FromUnsignedLong(gf_sqr(self->f, x));
}

static PyObject *GF2m_inv(GF2mObject *self, PyObject *a)
{
    uint32_t x;
    if (elem_from(a, self->f, &x) < 0) return NULL;
    if (!x) {
        PyErr_SetString(PyExc_ZeroDivisionError, "zero has no inverse");
        return NULL;
    }
    return PyLong_FromUnsignedLong(gf_inv(self->f, x));
}

static PyObject *GF2m_solve_artin_schreier(GF2mObject *self, PyObject *a)
{
    uint32_t k, y;
    if (elem_from(a, self->f, &k) < 0) return NULL;
    if (solve_artin_schreier(self->f, k, &y)) {
        PyErr_SetString(DecodeErrorType, "quadratic factor has no root in the field");
        return NULL;
    }
    return PyLong_FromUnsignedLong(y);
}

static PyObject *GF2m_scale(GF2mObject *self, PyObject *args)
{
    PyObject *c_obj, *seq, *out;
    uint32_t c, *v;
    size_t n;
    if (!PyArg_ParseTuple(args, "OO", &c_obj, &seq) || elem_from(c_obj, self->f, &c) < 0) return NULL;
    if (!(v = poly_from(seq, self->f, &n, 0))) return NULL;
    scale_vec(self->f, v, c, v, n);
    out = list_from(v, n);
    PyMem_RawFree(v);
    return out;
}

/* vmul(a, b, out): out[i] = a[i] * b[i] for equal-length word arrays */
static PyObject *GF2m_vmul(GF2mObject *self, PyObject *args)
{
    PyObject *ao, *bo, *oo;
    Py_buffer a, b, o;
    size_t na, nb, no;
    if (!PyArg_ParseTuple(args, "OOO", &ao, &bo, &oo)) return NULL;
    if (get_words(ao, &a, &na, "a") < 0) return NULL;
    if (get_words(bo, &b, &nb, "b") < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    if (PyObject_GetBuffer(oo, &o, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&a);
        PyBuffer_Release(&b);
        return NULL;
    }
    no = (size_t)o.len / 8;
    if (na != nb || na != no || (size_t)o.len != 8 * no) {
        PyErr_SetString(PyExc_ValueError, "vmul needs three arrays of one length");
    } else {
        const uint64_t *pa = (const uint64_t *)a.buf, *pb = (const uint64_t *)b.buf;
        int bad = 0;
        for (size_t i = 0; i < na && !bad; i++) bad = pa[i] > self->f->mask || pb[i] > self->f->mask;
        if (bad)
            PyErr_SetString(PyExc_ValueError, "array holds a value outside the field");
        else
            vmul64(self->f, (uint64_t *)o.buf, pa, pb, na);
    }
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&o);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* power_sums(elements, t) -> bytearray of t words: sum_a a^(2k+1), k < t */
static PyObject *GF2m_power_sums(GF2mObject *self, PyObject *args)
{
    PyObject *eo, *out = NULL;
    Py_buffer ev;
    size_t n;
    Py_ssize_t t;
    uint32_t *e, *acc;
    uint64_t *dst;
    if (!PyArg_ParseTuple(args, "On", &eo, &t)) return NULL;
    if (t < 0) return PyErr_Format(PyExc_ValueError, "t must be >= 0");
    if (get_words(eo, &ev, &n, "elements") < 0) return NULL;
    e = elems_from_words(self->f, &ev, n);
    PyBuffer_Release(&ev);
    if (!e) return NULL;
    acc = (uint32_t *)xalloc((size_t)t + 1, sizeof(uint32_t));
    if (acc) out = new_words((size_t)t, (void **)&dst);
    if (acc && out) {
        Py_BEGIN_ALLOW_THREADS
        power_sums(self->f, acc, e, n, (size_t)t);
        Py_END_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < t; k++) dst[k] = acc[k];
    } else if (!acc) {
        PyErr_NoMemory();
    }
    PyMem_RawFree(e);
    PyMem_RawFree(acc);
    return out;
}

/* power_sums_packed(elements, t, width) -> bytes: the t odd power sums as big-endian words of
 * `width` bytes (1..8) — a PinSketch payload in one call (every sum is a field element, so it
 * fits whenever 8 * width >= m). */
static PyObject *GF2m_power_sums_packed(GF2mObject *self, PyObject *args)
{
    PyObject *eo, *out = NULL;
    Py_buffer ev;
    size_t n;
    Py_ssize_t t, width;
    uint32_t *e, *acc;
    if (!PyArg_ParseTuple(args, "Onn", &eo, &t, &width)) return NULL;
    if (t < 0) return PyErr_Format(PyExc_ValueError, "t must be >= 0");
    if (width < 1 || width > 8 || 8 * width < (Py_ssize_t)self->f->m)
        return PyErr_Format(PyExc_ValueError, "width must hold a field element (1..8 bytes)");
    if (get_words(eo, &ev, &n, "elements") < 0) return NULL;
    e = elems_from_words(self->f, &ev, n);
    PyBuffer_Release(&ev);
    if (!e) return NULL;
    acc = (uint32_t *)xalloc((size_t)t + 1, sizeof(uint32_t));
    if (acc) out = PyBytes_FromStringAndSize(NULL, t * width);
    if (acc && out) {
        unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(out);
        Py_BEGIN_ALLOW_THREADS
        power_sums(self->f, acc, e, n, (size_t)t);
        Py_END_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < t; k++) {
            uint64_t v = acc[k];
            for (Py_ssize_t b = width - 1; b >= 0; b--, v >>= 8) dst[k * width + b] = (unsigned char)v;
        }
    } else if (!acc) {
        PyErr_NoMemory();
    }
    PyMem_RawFree(e);
    PyMem_RawFree(acc);
    return out;
}

/* power_sums_segments(elements, lengths, t) -> bytearray, one row of t words per segment */
static PyObject *GF2m_power_sums_segments(GF2mObject *self, PyObject *args)
{
    PyObject *eo, *lo, *out = NULL;
    Py_buffer ev, lv;
    size_t n, sets, total = 0;
    Py_ssize_t t;
    uint32_t *e = NULL, *acc = NULL;
    uint64_t *dst;
    const int64_t *lengths;
    if (!PyArg_ParseTuple(args, "OOn", &eo, &lo, &t)) return NULL;
    if (t < 0) return PyErr_Format(PyExc_ValueError, "t must be >= 0");
    if (get_words(eo, &ev, &n, "elements") < 0) return NULL;
    if (get_words(lo, &lv, &sets, "lengths") < 0) {
        PyBuffer_Release(&ev);
        return NULL;
    }
    if (t && sets > (size_t)PY_SSIZE_T_MAX / 8 / (size_t)t) {
        PyBuffer_Release(&lv);
        PyBuffer_Release(&ev);
        return PyErr_NoMemory();
    }
    lengths = (const int64_t *)lv.buf;
    for (size_t i = 0; i < sets; i++) {
        if (lengths[i] < 0 || (uint64_t)lengths[i] > n - total) {
            PyErr_SetString(PyExc_ValueError, "segment lengths must be >= 0 and sum to the element count");
            goto done;
        }
        total += (size_t)lengths[i];
    }
    if (total != n) {
        PyErr_SetString(PyExc_ValueError, "segment lengths must be >= 0 and sum to the element count");
        goto done;
    }
    if (!(e = elems_from_words(self->f, &ev, n))) goto done;
    acc = (uint32_t *)xalloc(sets * (size_t)t + 1, sizeof(uint32_t));
    if (!acc) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = new_words(sets * (size_t)t, (void **)&dst))) goto done;
    Py_BEGIN_ALLOW_THREADS
    {
        size_t start = 0;
        for (size_t i = 0; i < sets; i++) {
            power_sums(self->f, acc + i * (size_t)t, e + start, (size_t)lengths[i], (size_t)t);
            start += (size_t)lengths[i];
        }
        for (size_t i = 0; i < sets * (size_t)t; i++) dst[i] = acc[i];
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&ev);
    PyBuffer_Release(&lv);
    PyMem_RawFree(e);
    PyMem_RawFree(acc);
    return out;
}

static PyObject *GF2m_berlekamp_massey(GF2mObject *self, PyObject *seq)
{
    size_t ns, lc = 0;
    uint32_t *s, *c = NULL, *b = NULL, *tmp = NULL;
    Py_ssize_t length;
    PyObject *out = NULL, *poly;
    if (!(s = poly_from(seq, self->f, &ns, 0))) return NULL;
    c = (uint32_t *)xalloc(ns + 2, sizeof(uint32_t));
    b = (uint32_t *)xalloc(ns + 2, sizeof(uint32_t));
    tmp = (uint32_t *)xalloc(ns + 2, sizeof(uint32_t));
    if (!c || !b || !tmp) {
        PyErr_NoMemory();
        goto done;
    }
    length = berlekamp_massey(self->f, s, ns, c, &lc, b, tmp);
    if (length < 0) {
        PyErr_SetString(PyExc_RuntimeError, "Berlekamp-Massey register overflow");
        goto done;
    }
    if ((poly = list_from(c, lc))) out = Py_BuildValue("(Nn)", poly, length);
done:
    PyMem_RawFree(s);
    PyMem_RawFree(c);
    PyMem_RawFree(b);
    PyMem_RawFree(tmp);
    return out;
}

/* poly_divmod(a, b) -> (quotient, remainder), both trimmed; b must be non-zero */
static PyObject *GF2m_poly_divmod(GF2mObject *self, PyObject *args)
{
    PyObject *ao, *bo, *out = NULL;
    uint32_t *a = NULL, *b = NULL, *q = NULL, *r = NULL;
    uint64_t *acc = NULL;
    size_t la, lb;
    if (!PyArg_ParseTuple(args, "OO", &ao, &bo)) return NULL;
    if (!(a = poly_from(ao, self->f, &la, 0)) || !(b = poly_from(bo, self->f, &lb, 0))) goto done;
    la = trim(a, la);
    lb = trim(b, lb);
    if (!lb) {
        PyErr_SetString(PyExc_ZeroDivisionError, "division by the zero polynomial");
        goto done;
    }
    q = (uint32_t *)xalloc(la + 1, sizeof(uint32_t));
    r = (uint32_t *)xalloc(lb, sizeof(uint32_t));
    acc = (uint64_t *)xalloc(la + 1, sizeof(uint64_t));
    if (!q || !r || !acc) {
        PyErr_NoMemory();
        goto done;
    }
    if (la < lb) {
        memcpy(r, a, la * sizeof(uint32_t));
        out = Py_BuildValue("(NN)", list_from(q, 0), list_from(r, la));
    } else {
        poly_divmod(self->f, a, la, b, lb, q, r, acc);
        out = Py_BuildValue("(NN)", list_from(q, trim(q, la - lb + 1)), list_from(r, trim(r, lb - 1)));
    }
done:
    PyMem_RawFree(a);
    PyMem_RawFree(b);
    PyMem_RawFree(q);
    PyMem_RawFree(r);
    PyMem_RawFree(acc);
    return out;
}

static PyObject *GF2m_poly_gcd(GF2mObject *self, PyObject *args)
{
    PyObject *ao, *bo, *out = NULL;
    uint32_t *a = NULL, *b = NULL, *x = NULL, *y = NULL, *g;
    uint64_t *acc = NULL;
    size_t la, lb, cap, lg;
    if (!PyArg_ParseTuple(args, "OO", &ao, &bo)) return NULL;
    if (!(a = poly_from(ao, self->f, &la, 0)) || !(b = poly_from(bo, self->f, &lb, 0))) goto done;
    la = trim(a, la);
    lb = trim(b, lb);
    if (!la && !lb) {
        PyErr_SetString(PyExc_ValueError, "gcd of two zero polynomials");
        goto done;
    }
    if (!la) { /* gcd(0, b) = monic b */
        uint32_t *t = a;
        a = b, b = t, la = lb, lb = 0;
    }
    cap = (la > lb ? la : lb) + 1;
    x = (uint32_t *)xalloc(cap, sizeof(uint32_t));
    y = (uint32_t *)xalloc(cap, sizeof(uint32_t));
    acc = (uint64_t *)xalloc(cap, sizeof(uint64_t));
    if (!x || !y || !acc) {
        PyErr_NoMemory();
        goto done;
    }
    lg = poly_gcd(self->f, a, la, b, lb, x, y, acc, &g);
    out = list_from(g, lg);
done:
    PyMem_RawFree(a);
    PyMem_RawFree(b);
    PyMem_RawFree(x);
    PyMem_RawFree(y);
    PyMem_RawFree(acc);
    return out;
}

static PyObject *GF2m_poly_mul(GF2mObject *self, PyObject *args)
{
    PyObject *ao, *bo, *out = NULL;
    uint32_t *a = NULL, *b = NULL, *r = NULL;
    uint64_t *acc = NULL;
    size_t la, lb;
    if (!PyArg_ParseTuple(args, "OO", &ao, &bo)) return NULL;
    if (!(a = poly_from(ao, self->f, &la, 0)) || !(b = poly_from(bo, self->f, &lb, 0))) goto done;
    la = trim(a, la);
    lb = trim(b, lb);
    if (!la || !lb) {
        out = PyList_New(0);
        goto done;
    }
    acc = (uint64_t *)xalloc(la + lb, sizeof(uint64_t));
    r = (uint32_t *)xalloc(la + lb, sizeof(uint32_t));
    if (!acc || !r) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t i = 0; i < la; i++) axpy_lazy(self->f, acc + i, a[i], b, lb);
    for (size_t i = 0; i + 1 < la + lb; i++) r[i] = gf_reduce(self->f, acc[i]);
    out = list_from(r, trim(r, la + lb - 1));
done:
    PyMem_RawFree(a);
    PyMem_RawFree(b);
    PyMem_RawFree(r);
    PyMem_RawFree(acc);
    return out;
}

static PyObject *GF2m_poly_eval(GF2mObject *self, PyObject *args)
{
    PyObject *po, *xo;
    uint32_t *p, x, v;
    size_t lp;
    if (!PyArg_ParseTuple(args, "OO", &po, &xo) || elem_from(xo, self->f, &x) < 0) return NULL;
    if (!(p = poly_from(po, self->f, &lp, 0))) return NULL;
    eval_many(self->f, p, lp, &x, 1, &v);
    PyMem_RawFree(p);
    return PyLong_FromUnsignedLong(v);
}

/* poly_eval_many(p, xs) -> bytearray of words p(x) */
static PyObject *GF2m_poly_eval_many(GF2mObject *self, PyObject *args)
{
    PyObject *po, *xo, *out = NULL;
    Py_buffer xv;
    uint32_t *p = NULL, *x = NULL, *v = NULL;
    uint64_t *dst;
    size_t lp, n;
    if (!PyArg_ParseTuple(args, "OO", &po, &xo)) return NULL;
    if (get_words(xo, &xv, &n, "points") < 0) return NULL;
    if (!(p = poly_from(po, self->f, &lp, 0)) || !(x = elems_from_words(self->f, &xv, n))) goto done;
    if (!(v = (uint32_t *)xalloc(n + 1, sizeof(uint32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = new_words(n, (void **)&dst))) goto done;
    Py_BEGIN_ALLOW_THREADS
    eval_many(self->f, p, trim(p, lp), x, n, v);
    for (size_t i = 0; i < n; i++) dst[i] = v[i];
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&xv);
    PyMem_RawFree(p);
    PyMem_RawFree(x);
    PyMem_RawFree(v);
    return out;
}

static PyObject *GF2m_poly_deflate(GF2mObject *self, PyObject *args)
{
    PyObject *po, *ro, *out;
    uint32_t *p, root;
    size_t lp;
    if (!PyArg_ParseTuple(args, "OO", &po, &ro) || elem_from(ro, self->f, &root) < 0) return NULL;
    if (!(p = poly_from(po, self->f, &lp, 0))) return NULL;
    if (!lp) {
        PyMem_RawFree(p);
        return PyList_New(0);
    }
    lp = deflate(self->f, p, lp, root);
    out = list_from(p, lp);
    PyMem_RawFree(p);
    return out;
}

/* find_roots(sigma, beta) -> list of the deg sigma roots; DecodeError when they are not distinct
 * non-zero field elements */
static PyObject *GF2m_find_roots(GF2mObject *self, PyObject *args)
{
    PyObject *so, *bo, *out;
    uint32_t *sigma, beta, *roots;
    size_t ls;
    Py_ssize_t status;
    if (!PyArg_ParseTuple(args, "OO", &so, &bo) || elem_from(bo, self->f, &beta) < 0) return NULL;
    if (!beta) return PyErr_Format(PyExc_ValueError, "beta must be non-zero");
    if (!(sigma = poly_from(so, self->f, &ls, 0))) return NULL;
    if (!ls || sigma[ls - 1] != 1) {
        PyMem_RawFree(sigma);
        return PyErr_Format(PyExc_ValueError, "find_roots needs a monic polynomial");
    }
    roots = (uint32_t *)xalloc(ls, sizeof(uint32_t));
    if (!roots) {
        PyMem_RawFree(sigma);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    status = find_roots(self->f, sigma, ls - 1, beta, roots);
    Py_END_ALLOW_THREADS
    if (status >= 0)
        out = list_from(roots, (size_t)status);
    else if (status == ROOTS_MEMORY)
        out = PyErr_NoMemory();
    else {
        PyErr_SetString(DecodeErrorType, roots_message(status));
        out = NULL;
    }
    PyMem_RawFree(sigma);
    PyMem_RawFree(roots);
    return out;
}

/* recover(sums, sample, beta, add_sample=False) -> bytearray of int64 (sorted sample xor D);
 * DecodeError when no set of at most t elements has the power sums of D.  sums are those of
 * D = A xor B, or with add_sample those of A (the sample's are added here). */
/* sample XOR D, where D is the set of at most t elements whose odd power sums are diff (with
 * the sample's own sums added first when add_sample): a sorted int64 bytearray, or DecodeError.
 * Takes ownership of diff and sample (freed here). */
static PyObject *recover_owned(const gf_t *f, uint32_t *diff, size_t t, uint32_t *sample, size_t n, uint32_t beta,
                               int add_sample)
{
    PyObject *out = NULL;
    uint32_t *roots = NULL;
    Py_ssize_t count = 0;
    for (size_t i = 1; i < n; i++)
        if (sample[i] <= sample[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "sample must be sorted and distinct");
            goto done;
        }
    Py_BEGIN_ALLOW_THREADS
    {
        int zero = 1;
        if (add_sample) power_sums(f, diff, sample, n, t); /* xors B's sums into A's */
        for (size_t i = 0; i < t; i++) zero &= diff[i] == 0;
        if (!zero) count = recover_difference(f, diff, t, sample, n, beta, &roots);
    }
    Py_END_ALLOW_THREADS
    if (count == ROOTS_MEMORY) {
        PyErr_NoMemory();
        goto done;
    }
    if (count < 0) {
        PyErr_SetString(DecodeErrorType, "no set of at most t elements has these power sums");
        goto done;
    }
    {
        /* merge: symmetric difference of two sorted lists */
        size_t i = 0, j = 0, k = 0, L = (size_t)count;
        int64_t *dst;
        if (!(out = new_words(n + L, (void **)&dst))) goto done;
        while (i < n || j < L) {
            if (j == L || (i < n && sample[i] < roots[j]))
                dst[k++] = sample[i++];
            else if (i == n || roots[j] < sample[i])
                dst[k++] = roots[j++];
            else
                i++, j++;
        }
        if (PyByteArray_Resize(out, (Py_ssize_t)(8 * k)) < 0) Py_CLEAR(out);
    }
done:
    PyMem_RawFree(diff);
    PyMem_RawFree(sample);
    PyMem_RawFree(roots);
    return out;
}

static PyObject *GF2m_recover(GF2mObject *self, PyObject *args)
{
    PyObject *do_, *so, *bo;
    Py_buffer dv, sv;
    uint32_t beta, *diff = NULL, *sample = NULL;
    size_t t, n;
    int add_sample = 0;
    if (!PyArg_ParseTuple(args, "OOO|p", &do_, &so, &bo, &add_sample) || elem_from(bo, self->f, &beta) < 0)
        return NULL;
    if (!beta) return PyErr_Format(PyExc_ValueError, "beta must be non-zero");
    if (get_words(do_, &dv, &t, "difference sums") < 0) return NULL;
    if (get_words(so, &sv, &n, "sample") < 0) {
        PyBuffer_Release(&dv);
        return NULL;
    }
    diff = elems_from_words(self->f, &dv, t);
    if (diff) sample = elems_from_words(self->f, &sv, n);
    PyBuffer_Release(&dv);
    PyBuffer_Release(&sv);
    if (!diff || !sample) {
        PyMem_RawFree(diff);
        return NULL;
    }
    return recover_owned(self->f, diff, t, sample, n, beta, add_sample);
}

/* recover_payload(payload, width, sample, beta): recover(sums, sample, beta, True) with the
 * sums read from a payload of big-endian words of `width` bytes (a PinSketch payload, whose
 * length and values the caller has checked; values outside the field are refused here too). */
static PyObject *GF2m_recover_payload(GF2mObject *self, PyObject *args)
{
    PyObject *so, *bo;
    Py_buffer pv, sv;
    uint32_t beta = 0, *diff = NULL, *sample = NULL;
    size_t t, n;
    Py_ssize_t width;
    if (!PyArg_ParseTuple(args, "y*nOO", &pv, &width, &so, &bo)) return NULL;
    if (elem_from(bo, self->f, &beta) < 0 || !beta || width < 1 || width > 8 || pv.len % width) {
        PyBuffer_Release(&pv);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, beta ? "payload must be whole words of 1..8 bytes" : "beta must be non-zero");
        return NULL;
    }
    t = (size_t)(pv.len / width);
    if (!(diff = (uint32_t *)xalloc(t + 1, sizeof(uint32_t)))) {
        PyBuffer_Release(&pv);
        return PyErr_NoMemory();
    }
    for (size_t k = 0; k < t; k++) {
        const unsigned char *w = (const unsigned char *)pv.buf + k * (size_t)width;
        uint64_t v = 0;
        for (Py_ssize_t b = 0; b < width; b++) v = (v << 8) | w[b];
        if (v > self->f->mask) {
            PyBuffer_Release(&pv);
            PyMem_RawFree(diff);
            PyErr_SetString(PyExc_ValueError, "payload holds a value outside the field");
            return NULL;
        }
        diff[k] = (uint32_t)v;
    }
    PyBuffer_Release(&pv);
    if (get_words(so, &sv, &n, "sample") < 0) {
        PyMem_RawFree(diff);
        return NULL;
    }
    sample = elems_from_words(self->f, &sv, n);
    PyBuffer_Release(&sv);
    if (!sample) {
        PyMem_RawFree(diff);
        return NULL;
    }
    return recover_owned(self->f, diff, t, sample, n, beta, 1);
}

/* -- fast public paths: plain inputs validated here, one call per encode or decode ---------------- */

/* Sort field elements (values below 2^bits): insertion sort for small inputs, else an LSD radix
 * sort on bytes (passes where every value has the same byte are skipped).  O(n) for any input,
 * so a crafted sample cannot buy quadratic work.  Returns -1 when scratch memory is missing. */
static int sort_elems(uint32_t *a, size_t n, int bits)
{
    uint32_t *tmp, *src = a, *dst;
    size_t count[256];
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            uint32_t v = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
            a[j] = v;
        }
        return 0;
    }
    if (!(tmp = (uint32_t *)xalloc(n, sizeof(uint32_t)))) return -1;
    dst = tmp;
    for (int shift = 0; shift < bits; shift += 8) {
        size_t sum = 0;
        memset(count, 0, sizeof count);
        for (size_t i = 0; i < n; i++) count[(src[i] >> shift) & 255]++;
        if (count[(src[0] >> shift) & 255] == n) continue;
        for (int d = 0; d < 256; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) dst[count[(src[i] >> shift) & 255]++] = src[i];
        {
            uint32_t *swap = src;
            src = dst;
            dst = swap;
        }
    }
    if (src != a) memcpy(a, src, n * sizeof(uint32_t));
    PyMem_RawFree(tmp);
    return 0;
}

/* One Python int of a plain container as a non-zero field element (0 if it is none). */
static int plain_elem(const gf_t *f, PyObject *o, uint32_t *out)
{
    int overflow = 0;
    long long v;
    if (!PyLong_CheckExact(o)) return 0;
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow || v < 1 || (unsigned long long)v > f->mask) return 0;
    *out = (uint32_t)v;
    return 1;
}

/* Elements of a buffer of 8-byte integers (one dimension, C-contiguous), each a non-zero field
 * element; 0 for any other buffer or value. */
static int plain_words(const gf_t *f, PyObject *obj, uint32_t **out, size_t *n)
{
    Py_buffer view;
    const char *fmt;
    const uint64_t *w;
    int ok = 0;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        return 0;
    }
    fmt = view.format ? view.format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
    *n = view.itemsize == 8 ? (size_t)(view.len / 8) : 0;
    if (view.ndim != 1 || *n == 0 || strlen(fmt) != 1 || !strchr("qQlLnN", *fmt)) goto done;
    if (!(*out = (uint32_t *)xalloc(*n, sizeof(uint32_t)))) {
        PyErr_NoMemory();
        ok = -1;
        goto done;
    }
    w = (const uint64_t *)view.buf;
    for (size_t k = 0; k < *n; k++) {
        /* as int64 or uint64 alike: a field element is a small positive value in both */
        if (w[k] == 0 || w[k] > f->mask) {
            PyMem_RawFree(*out);
            *out = NULL;
            goto done;
        }
        (*out)[k] = (uint32_t)w[k];
    }
    ok = 1;
done:
    PyBuffer_Release(&view);
    return ok;
}

/* The elements of a plain input -- an exact list, tuple, set or frozenset of exact ints, or a
 * one-dimensional C-contiguous buffer of 8-byte integers -- that are non-zero field elements,
 * distinct, at least one and at most 2^m - 1 of them: into a fresh array (*out, freed by the
 * caller with PyMem_RawFree), sorted when `want_sorted` (or when duplicates must be looked for).
 * Returns 1; 0 when the input is not plain or has any defect (no exception set: the caller's
 * general path then decides what is wrong and words it); -1 with an exception (memory).
 * Reading exact ints runs no Python code, so a container cannot change while it is read. */
static int plain_elements(const gf_t *f, PyObject *obj, int want_sorted, uint32_t **out, size_t *n)
{
    Py_ssize_t size, k = 0;
    int distinct = PySet_CheckExact(obj) || PyFrozenSet_CheckExact(obj), rc;
    *out = NULL;
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        PyObject **items = PySequence_Fast_ITEMS(obj);
        size = PySequence_Fast_GET_SIZE(obj);
        if (size == 0 || (size_t)size > f->mask) return 0;
        if (!(*out = (uint32_t *)xalloc((size_t)size, sizeof(uint32_t)))) goto nomem;
        for (; k < size; k++)
            if (!plain_elem(f, items[k], *out + k)) break;
    } else if (distinct) {
        PyObject *it, *item;
        size = PySet_GET_SIZE(obj);
        if (size == 0 || (size_t)size > f->mask) return 0;
        if (!(*out = (uint32_t *)xalloc((size_t)size, sizeof(uint32_t)))) goto nomem;
        if (!(it = PyObject_GetIter(obj))) {
            PyMem_RawFree(*out);
            *out = NULL;
            return -1;
        }
        while (k < size && (item = PyIter_Next(it)) != NULL) {
            int ok = plain_elem(f, item, *out + k);
            Py_DECREF(item);
            if (!ok) break;
            k++;
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) {
            PyMem_RawFree(*out);
            *out = NULL;
            return -1;
        }
    } else if (PyObject_CheckBuffer(obj) && !PyBytes_Check(obj) && !PyByteArray_Check(obj)) {
        size_t count = 0;
        rc = plain_words(f, obj, out, &count);
        if (rc <= 0) return rc;
        size = k = (Py_ssize_t)count;
        if (count > f->mask) goto defect;
    } else {
        return 0;
    }
    if (k != size) goto defect;
    *n = (size_t)size;
    if (distinct && !want_sorted) return 1;
    if (sort_elems(*out, *n, f->m) < 0) goto nomem;
    if (!distinct)
        for (size_t i = 1; i < *n; i++)
            if ((*out)[i] == (*out)[i - 1]) goto defect;
    return 1;
defect:
    PyMem_RawFree(*out);
    *out = NULL;
    return 0;
nomem:
    PyMem_RawFree(*out);
    *out = NULL;
    PyErr_NoMemory();
    return -1;
}

#if defined(__linux__) || defined(__APPLE__)
#include <sys/random.h>
#include <unistd.h>
#define SA_HAVE_ENTROPY 1
#else
#define SA_HAVE_ENTROPY 0
#endif

/* A uniformly random non-zero field element from the operating system's generator (the trace
 * multiplier beta; getentropy reads what os.urandom and secrets read).  -1 with an exception. */
static int draw_beta(const gf_t *f, uint32_t *beta)
{
#if SA_HAVE_ENTROPY
    uint32_t v;
    do {
        if (getentropy(&v, sizeof v) != 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        v &= f->mask;
    } while (!v);
    *beta = v;
    return 0;
#else
    (void)f;
    (void)beta;
    PyErr_SetString(PyExc_ValueError, "no operating-system generator here: pass beta");
    return -1;
#endif
}

/* encode_plain(values, t, width) -> bytes | None: the PinSketch payload of a plain set (see
 * plain_elements), or None for any other input (the general path validates it). */
static PyObject *GF2m_encode_plain(GF2mObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const gf_t *f = self->f;
    Py_ssize_t t, width;
    uint32_t *e = NULL, acc[64], *sums = acc;
    size_t n = 0;
    int rc;
    PyObject *out = NULL;
    if (nargs != 3) return PyErr_Format(PyExc_TypeError, "encode_plain takes 3 arguments");
    t = PyLong_AsSsize_t(args[1]);
    width = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (t < 1 || width < 1 || width > 8 || 8 * width < (Py_ssize_t)f->m || t > PY_SSIZE_T_MAX / 8)
        return PyErr_Format(PyExc_ValueError, "t must be >= 1 and width must hold a field element (1..8 bytes)");
    rc = plain_elements(f, args[0], 0, &e, &n);
    if (rc <= 0) {
        if (rc < 0) return NULL;
        Py_RETURN_NONE;
    }
    if ((size_t)t > sizeof acc / sizeof acc[0] && !(sums = (uint32_t *)xalloc((size_t)t, sizeof(uint32_t)))) {
        PyMem_RawFree(e);
        return PyErr_NoMemory();
    }
    memset(sums, 0, (size_t)t * sizeof(uint32_t));
    if (n * (size_t)t > 4096) {
        Py_BEGIN_ALLOW_THREADS
        power_sums(f, sums, e, n, (size_t)t);
        Py_END_ALLOW_THREADS
    } else {
        power_sums(f, sums, e, n, (size_t)t);
    }
    out = PyBytes_FromStringAndSize(NULL, t * width);
    if (out) {
        unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(out);
        for (Py_ssize_t k = 0; k < t; k++) {
            uint64_t v = sums[k];
            for (Py_ssize_t b = width - 1; b >= 0; b--, v >>= 8) dst[k * width + b] = (unsigned char)v;
        }
    }
    PyMem_RawFree(e);
    if (sums != acc) PyMem_RawFree(sums);
    return out;
}

/* Whether the odd power sums s[k] = s_(2k+1), k < t, satisfy the relations every set's power sums
 * do (sums of a^i and a^(2i mod 2^m - 1) are related by squaring, and a^(2^m - 1) = 1): 0 if so;
 * 2 if a power sum is not the 2^e-th power of the first one of its cyclotomic coset (i = r 2^e
 * mod 2^m - 1); 3 if the first one of a coset of c < m members is outside GF(2^c).  The same
 * relations, checked in the same order, as PinSketch._check_relations (pinsketch.py). */
static int syndrome_relations(const gf_t *f, const uint32_t *s, size_t t)
{
    const uint64_t n = f->mask, top = 2 * (uint64_t)t; /* odd indices below top are stored */
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < t; k++) {
            uint64_t i = 2 * (uint64_t)k + 1, member = i;
            size_t first = k;
            int c = 0, back = 0;
            do { /* the coset of i (i < n: t < 2^(m-1)); the first stored member and its distance */
                member = (member * 2) % n;
                c++;
                if ((member & 1) && member < top && (member - 1) / 2 < first) {
                    first = (size_t)((member - 1) / 2);
                    back = c;
                }
            } while (member != i);
            if (pass == 0 && first != k) { /* s_i = s_r^(2^(c - back)) with r = 2 first + 1 */
                uint32_t v = s[first];
                for (int e = 0; e < c - back; e++) v = gf_sqr(f, v);
                if (v != s[k]) return 2;
            } else if (pass == 1 && first == k && c < f->m) { /* s_i in GF(2^c) */
                uint32_t v = s[k];
                for (int e = 0; e < c; e++) v = gf_sqr(f, v);
                if (v != s[k]) return 3;
            }
        }
    return 0;
}

static PyObject *SketchFormatErrorType = NULL;

/* decode_plain(record, offset, width, t, sample, beta) -> bytearray | None: recover_payload with
 * the payload read in place (t words of `width` bytes at `offset` of the record, whose digest the
 * caller has checked) and checked as PinSketch._check_payload does (SketchFormatError, the same
 * words), and a plain sample (see plain_elements); None when the sample is not plain.
 * beta None: drawn here from the operating system. */
static PyObject *GF2m_decode_plain(GF2mObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const gf_t *f = self->f;
    Py_ssize_t offset, width, t;
    uint32_t beta = 0, *diff, *sample = NULL;
    size_t n = 0;
    const unsigned char *rec;
    int rc;
    if (nargs != 6) return PyErr_Format(PyExc_TypeError, "decode_plain takes 6 arguments");
    if (!PyBytes_Check(args[0])) return PyErr_Format(PyExc_TypeError, "record must be bytes");
    offset = PyLong_AsSsize_t(args[1]);
    width = PyLong_AsSsize_t(args[2]);
    t = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred()) return NULL;
    if (offset < 0 || width < 1 || width > 8 || 8 * width < (Py_ssize_t)f->m || t < 1 ||
        t > (PyBytes_GET_SIZE(args[0]) - offset) / width)
        return PyErr_Format(PyExc_ValueError, "the payload must lie inside the record, in words of 1..8 bytes");
    if (args[5] == Py_None) {
        if (draw_beta(f, &beta) < 0) return NULL;
    } else if (elem_from(args[5], f, &beta) < 0) {
        return NULL;
    } else if (!beta) {
        return PyErr_Format(PyExc_ValueError, "beta must be non-zero");
    }
    rc = plain_elements(f, args[4], 1, &sample, &n);
    if (rc <= 0) {
        if (rc < 0) return NULL;
        Py_RETURN_NONE;
    }
    if (!(diff = (uint32_t *)xalloc((size_t)t, sizeof(uint32_t)))) {
        PyMem_RawFree(sample);
        return PyErr_NoMemory();
    }
    rec = (const unsigned char *)PyBytes_AS_STRING(args[0]) + offset;
    for (Py_ssize_t k = 0; k < t; k++) {
        uint64_t v = 0;
        for (Py_ssize_t b = 0; b < width; b++) v = (v << 8) | rec[k * width + b];
        if (v > f->mask) {
            PyMem_RawFree(diff);
            PyMem_RawFree(sample);
            return PyErr_Format(SketchFormatErrorType, "PinSketch syndrome wider than %d bits", f->m);
        }
        diff[k] = (uint32_t)v;
    }
    if ((rc = syndrome_relations(f, diff, (size_t)t)) != 0) {
        PyMem_RawFree(diff);
        PyMem_RawFree(sample);
        PyErr_SetString(SketchFormatErrorType, rc == 2 ? "PinSketch syndromes violate a cyclotomic relation"
                                                       : "PinSketch syndrome outside its subfield");
        return NULL;
    }
    return recover_owned(f, diff, (size_t)t, sample, n, beta, 1);
}

static PyMethodDef GF2m_methods[] = {
    {"mul", (PyCFunction)GF2m_mul, METH_VARARGS, "mul(a, b): the product a*b"},
    {"sqr", (PyCFunction)GF2m_sqr, METH_O, "sqr(a): a^2"},
    {"inv", (PyCFunction)GF2m_inv, METH_O, "inv(a): 1/a (ZeroDivisionError for 0)"},
    {"solve_artin_schreier", (PyCFunction)GF2m_solve_artin_schreier, METH_O,
     "solve_artin_schreier(k): some y with y^2 + y = k (DecodeError when Tr(k) = 1)"},
    {"scale", (PyCFunction)GF2m_scale, METH_VARARGS, "scale(c, values): [c*v for v in values]"},
    {"vmul", (PyCFunction)GF2m_vmul, METH_VARARGS, "vmul(a, b, out): out[i] = a[i]*b[i] (64-bit word arrays)"},
    {"power_sums", (PyCFunction)GF2m_power_sums, METH_VARARGS,
     "power_sums(elements, t): bytearray of the t odd power sums (64-bit words)"},
    {"power_sums_packed", (PyCFunction)GF2m_power_sums_packed, METH_VARARGS,
     "power_sums_packed(elements, t, width): the t odd power sums as big-endian words of width bytes"},
    {"power_sums_segments", (PyCFunction)GF2m_power_sums_segments, METH_VARARGS,
     "power_sums_segments(elements, lengths, t): one row of t odd power sums per segment"},
    {"berlekamp_massey", (PyCFunction)GF2m_berlekamp_massey, METH_O,
     "berlekamp_massey(s): (connection polynomial, register length) of s_1..s_n with s_2i = s_i^2"},
    {"poly_divmod", (PyCFunction)GF2m_poly_divmod, METH_VARARGS, "poly_divmod(a, b): (quotient, remainder)"},
    {"poly_gcd", (PyCFunction)GF2m_poly_gcd, METH_VARARGS, "poly_gcd(a, b): monic gcd"},
    {"poly_mul", (PyCFunction)GF2m_poly_mul, METH_VARARGS, "poly_mul(a, b): the product polynomial"},
    {"poly_eval", (PyCFunction)GF2m_poly_eval, METH_VARARGS, "poly_eval(p, x): p(x)"},
    {"poly_eval_many", (PyCFunction)GF2m_poly_eval_many, METH_VARARGS,
     "poly_eval_many(p, xs): bytearray of p(x) for x in xs (64-bit words)"},
    {"poly_deflate", (PyCFunction)GF2m_poly_deflate, METH_VARARGS, "poly_deflate(p, root): p / (z - root)"},
    {"find_roots", (PyCFunction)GF2m_find_roots, METH_VARARGS,
     "find_roots(sigma, beta): the roots of monic sigma (DecodeError unless distinct, non-zero, in the field)"},
    {"encode_plain", (PyCFunction)(void (*)(void))GF2m_encode_plain, METH_FASTCALL,
     "encode_plain(values, t, width): the payload of a plain set of non-zero field elements, or None"},
    {"decode_plain", (PyCFunction)(void (*)(void))GF2m_decode_plain, METH_FASTCALL,
     "decode_plain(record, offset, width, t, sample, beta): recover_payload on a plain sample, or None"},
    {"recover_payload", (PyCFunction)GF2m_recover_payload, METH_VARARGS,
     "recover_payload(payload, width, sample, beta): recover() with the sums as big-endian words"},
    {"recover", (PyCFunction)GF2m_recover, METH_VARARGS,
     "recover(sums, sample, beta, add_sample=False): sorted sample xor D as int64 bytearray (or DecodeError)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef GF2m_getset[] = {
    {"m", (getter)GF2m_get_m, NULL, "field degree", NULL},
    {"kernel", (getter)GF2m_get_kernel, NULL, "multiplication kernel", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject GF2mType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sketchauth.sketches._native.GF2m",
    .tp_basicsize = sizeof(GF2mObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GF2m(m, kernel): GF(2^m) kernels ('pclmul', 'tables' for m <= 16, 'portable')",
    .tp_new = GF2m_new,
    .tp_repr = (reprfunc)GF2m_repr,
    .tp_methods = GF2m_methods,
    .tp_getset = GF2m_getset,
};

/* -- prime-field entry points ------------------------------------------------------------------ */

static int check_modulus(long long p)
{
    if (p < 2 || (uint64_t)p > FP_MAX_MODULUS) {
        PyErr_SetString(PyExc_ValueError, "modulus must be in [2, 2^31]");
        return -1;
    }
    return 0;
}

/* Residues from a word buffer (reduced mod p, into a fresh copy). */
static uint64_t *residues_from(const Py_buffer *view, size_t n, uint64_t p)
{
    const int64_t *w = (const int64_t *)view->buf;
    uint64_t *out = (uint64_t *)xalloc(n + 1, sizeof(uint64_t));
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t v = w[i] % (int64_t)p;
        out[i] = (uint64_t)(v < 0 ? v + (int64_t)p : v);
    }
    return out;
}

/* fp_berlekamp_welch(xs, ys, rows, n, k, p) -> (coeffs bytearray rows*k int64, ok bytearray rows) */
static PyObject *fp_berlekamp_welch(PyObject *module, PyObject *args)
{
    PyObject *xo, *yo, *coeffs = NULL, *ok = NULL;
    Py_buffer xv, yv;
    Py_ssize_t rows, n, k;
    long long p;
    size_t nx, ny;
    uint64_t *xs = NULL, *ys = NULL, *sol = NULL, *dst;
    uint32_t *M = NULL;
    size_t *pivcol = NULL;
    char *okp;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOnnnL", &xo, &yo, &rows, &n, &k, &p)) return NULL;
    if (check_modulus(p) < 0) return NULL;
    if (rows < 0 || k < 1 || n < k) return PyErr_Format(PyExc_ValueError, "need 1 <= k <= n and rows >= 0");
    if (rows && n > PY_SSIZE_T_MAX / 8 / rows) return PyErr_NoMemory();
    if (get_words(xo, &xv, &nx, "xs") < 0) return NULL;
    if (get_words(yo, &yv, &ny, "ys") < 0) {
        PyBuffer_Release(&xv);
        return NULL;
    }
    if (nx != (size_t)(rows * n) || ny != nx) {
        PyErr_SetString(PyExc_ValueError, "xs and ys must hold rows * n values");
        goto done;
    }
    if (!(xs = residues_from(&xv, nx, (uint64_t)p)) || !(ys = residues_from(&yv, ny, (uint64_t)p))) goto done;
    {
        size_t e = (size_t)(n - k) / 2, w = 2 * e + (size_t)k + 1;
        M = (uint32_t *)xalloc((size_t)n * w, sizeof(uint32_t));
        sol = (uint64_t *)xalloc(w, sizeof(uint64_t));
        pivcol = (size_t *)xalloc((size_t)n, sizeof(size_t));
    }
    if (!M || !sol || !pivcol) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(coeffs = new_words((size_t)(rows * k), (void **)&dst))) goto done;
    if (!(ok = PyByteArray_FromStringAndSize(NULL, rows))) goto done;
    okp = PyByteArray_AS_STRING(ok);
    Py_BEGIN_ALLOW_THREADS
    {
        fp_t F = fp_make((uint64_t)p);
        for (Py_ssize_t r = 0; r < rows; r++) {
            /* distinct points per row (the algebra needs them; a repeat fails the row) */
            const uint64_t *x = xs + r * n;
            int distinct = 1;
            uint64_t *out = dst + r * k;
            memset(out, 0, (size_t)k * sizeof(uint64_t));
            for (Py_ssize_t i = 0; i < n && distinct; i++)
                for (Py_ssize_t j = i + 1; j < n && distinct; j++) distinct = x[i] != x[j];
            okp[r] = (char)(distinct && bw_row(&F, x, ys + r * n, (size_t)n, (size_t)k, out, M, sol, pivcol));
        }
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&xv);
    PyBuffer_Release(&yv);
    PyMem_RawFree(xs);
    PyMem_RawFree(ys);
    PyMem_RawFree(M);
    PyMem_RawFree(sol);
    PyMem_RawFree(pivcol);
    if (PyErr_Occurred()) {
        Py_XDECREF(coeffs);
        Py_XDECREF(ok);
        return NULL;
    }
    return Py_BuildValue("(NN)", coeffs, ok);
}

#define FD_BLOCK 4096

/* fp_eval_range(coeffs, rows, k, p, count) -> bytearray rows*count int64: F_r(0..count) */
static PyObject *fp_eval_range(PyObject *module, PyObject *args)
{
    PyObject *co, *out = NULL;
    Py_buffer cv;
    Py_ssize_t rows, k, count;
    long long p;
    size_t nc;
    uint64_t *c = NULL;
    int64_t *dst;
    uint32_t *block = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "OnnLn", &co, &rows, &k, &p, &count)) return NULL;
    if (check_modulus(p) < 0) return NULL;
    if (rows < 0 || k < 0 || count < 0) return PyErr_Format(PyExc_ValueError, "sizes must be >= 0");
    if ((rows && count > PY_SSIZE_T_MAX / 8 / rows) || (rows && k > PY_SSIZE_T_MAX / 8 / rows)) return PyErr_NoMemory();
    if (get_words(co, &cv, &nc, "coefficients") < 0) return NULL;
    if (nc != (size_t)(rows * k)) {
        PyErr_SetString(PyExc_ValueError, "coefficients must hold rows * k values");
        goto done;
    }
    if (!(c = residues_from(&cv, nc, (uint64_t)p))) goto done;
    if (!(block = (uint32_t *)xalloc(FD_BLOCK, sizeof(uint32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = new_words((size_t)(rows * count), (void **)&dst))) goto done;
    {
        fp_t F = fp_make((uint64_t)p);
        int failed = 0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t r = 0; r < rows && !failed; r++) {
            fd_t s;
            if (fd_init(&s, &F, c + r * k, (size_t)k) < 0) {
                failed = 1;
                break;
            }
            for (Py_ssize_t x = 0; x < count; x += FD_BLOCK) {
                size_t b = (size_t)(count - x < FD_BLOCK ? count - x : FD_BLOCK);
                int64_t *o = dst + r * count + x;
                fd_run(&s, block, b);
                for (size_t i = 0; i < b; i++) o[i] = block[i];
            }
            PyMem_RawFree(s.d);
        }
        Py_END_ALLOW_THREADS
        if (failed) {
            Py_CLEAR(out);
            PyErr_NoMemory();
        }
    }
done:
    PyBuffer_Release(&cv);
    PyMem_RawFree(c);
    PyMem_RawFree(block);
    return out;
}

/* fp_agree(coeffs, values, p, limit) -> bytearray int64: the i with F(i) == values[i], at most
 * limit + 1 of them (the caller only needs to know whether there are exactly limit). */
static PyObject *fp_agree(PyObject *module, PyObject *args)
{
    PyObject *co, *vo, *out = NULL;
    Py_buffer cv, vv;
    long long p;
    Py_ssize_t limit;
    size_t k, n, found = 0;
    uint64_t *c = NULL;
    uint32_t *block = NULL;
    int64_t *dst;
    (void)module;
    if (!PyArg_ParseTuple(args, "OOLn", &co, &vo, &p, &limit)) return NULL;
    if (check_modulus(p) < 0) return NULL;
    if (limit < 0) return PyErr_Format(PyExc_ValueError, "limit must be >= 0");
    if (get_words(co, &cv, &k, "coefficients") < 0) return NULL;
    if (get_words(vo, &vv, &n, "values") < 0) {
        PyBuffer_Release(&cv);
        return NULL;
    }
    if (!(c = residues_from(&cv, k, (uint64_t)p))) goto done;
    if (!(block = (uint32_t *)xalloc(FD_BLOCK, sizeof(uint32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = new_words((size_t)limit + 1, (void **)&dst))) goto done;
    {
        fp_t F = fp_make((uint64_t)p);
        fd_t s;
        const int64_t *values = (const int64_t *)vv.buf;
        int failed = 0;
        Py_BEGIN_ALLOW_THREADS
        if (fd_init(&s, &F, c, k) < 0) {
            failed = 1;
        } else {
            for (size_t x = 0; x < n && found <= (size_t)limit; x += FD_BLOCK) {
                size_t b = n - x < FD_BLOCK ? n - x : FD_BLOCK;
                fd_run(&s, block, b);
                for (size_t i = 0; i < b && found <= (size_t)limit; i++)
                    if ((int64_t)block[i] == values[x + i]) dst[found++] = (int64_t)(x + i);
            }
            PyMem_RawFree(s.d);
        }
        Py_END_ALLOW_THREADS
        if (failed) {
            Py_CLEAR(out);
            PyErr_NoMemory();
        } else if (PyByteArray_Resize(out, (Py_ssize_t)(8 * found)) < 0) {
            Py_CLEAR(out);
        }
    }
done:
    PyBuffer_Release(&cv);
    PyBuffer_Release(&vv);
    PyMem_RawFree(c);
    PyMem_RawFree(block);
    return out;
}

/* fp_lock(coeffs, p, count, genuine, offsets) -> bytearray int64 of count vault values: F(i) at
 * the genuine i (strictly increasing), offsets mapped to chaff u + [u >= F(i)] elsewhere. */
static PyObject *fp_lock(PyObject *module, PyObject *args)
{
    PyObject *co, *go, *oo, *out = NULL;
    Py_buffer cv, gv, ov;
    long long p;
    Py_ssize_t count;
    size_t k, g, no;
    uint64_t *c = NULL;
    uint32_t *block = NULL;
    int64_t *dst;
    const int64_t *genuine, *offsets;
    (void)module;
    if (!PyArg_ParseTuple(args, "OLnOO", &co, &p, &count, &go, &oo)) return NULL;
    if (check_modulus(p) < 0) return NULL;
    if (count < 0) return PyErr_Format(PyExc_ValueError, "count must be >= 0");
    if (get_words(co, &cv, &k, "coefficients") < 0) return NULL;
    if (get_words(go, &gv, &g, "genuine") < 0) {
        PyBuffer_Release(&cv);
        return NULL;
    }
    if (get_words(oo, &ov, &no, "offsets") < 0) {
        PyBuffer_Release(&cv);
        PyBuffer_Release(&gv);
        return NULL;
    }
    genuine = (const int64_t *)gv.buf;
    offsets = (const int64_t *)ov.buf;
    if (g > (size_t)count || no != (size_t)count - g) {
        PyErr_SetString(PyExc_ValueError, "need count - len(genuine) offsets");
        goto done;
    }
    for (size_t i = 0; i < g; i++)
        if (genuine[i] < 0 || genuine[i] >= count || (i && genuine[i] <= genuine[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "genuine indices must be increasing and below count");
            goto done;
        }
    for (size_t i = 0; i < no; i++)
        if (offsets[i] < 0 || offsets[i] >= p - 1) {
            PyErr_SetString(PyExc_ValueError, "chaff offsets must be in [0, p - 1)");
            goto done;
        }
    if (!(c = residues_from(&cv, k, (uint64_t)p))) goto done;
    if (!(block = (uint32_t *)xalloc(FD_BLOCK, sizeof(uint32_t)))) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = new_words((size_t)count, (void **)&dst))) goto done;
    {
        fp_t F = fp_make((uint64_t)p);
        fd_t s;
        int failed = 0;
        Py_BEGIN_ALLOW_THREADS
        if (fd_init(&s, &F, c, k) < 0) {
            failed = 1;
        } else {
            size_t gi = 0, oi = 0;
            for (size_t x = 0; x < (size_t)count; x += FD_BLOCK) {
                size_t b = (size_t)count - x < FD_BLOCK ? (size_t)count - x : FD_BLOCK;
                fd_run(&s, block, b);
                for (size_t i = 0; i < b; i++) {
                    int64_t fx = block[i];
                    if (gi < g && genuine[gi] == (int64_t)(x + i)) {
                        dst[x + i] = fx;
                        gi++;
                    } else {
                        int64_t u = offsets[oi++];
                        dst[x + i] = u + (u >= fx);
                    }
                }
            }
            PyMem_RawFree(s.d);
        }
        Py_END_ALLOW_THREADS
        if (failed) {
            Py_CLEAR(out);
            PyErr_NoMemory();
        }
    }
done:
    PyBuffer_Release(&cv);
    PyBuffer_Release(&gv);
    PyBuffer_Release(&ov);
    PyMem_RawFree(c);
    PyMem_RawFree(block);
    return out;
}

static PyObject *cpu_features(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return Py_BuildValue("{s:O,s:O}", "pclmul", cpu_has_pclmul() ? Py_True : Py_False, "entropy",
                         SA_HAVE_ENTROPY ? Py_True : Py_False);
}

/* -- input validation -------------------------------------------------------------------------- */

static void sort_i64(int64_t *a, size_t n)
{
    /* insertion sort for the small sets of the common case, heap sort beyond: O(n log n),
     * no recursion, no allocation */
    if (n <= 64) {
        for (size_t i = 1; i < n; i++) {
            int64_t v = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
            a[j] = v;
        }
        return;
    }
    for (size_t start = n / 2; start-- > 0;) {
        size_t root = start;
        for (size_t child; (child = 2 * root + 1) < n; root = child) {
            if (child + 1 < n && a[child] < a[child + 1]) child++;
            if (a[root] >= a[child]) break;
            int64_t tmp = a[root];
            a[root] = a[child];
            a[child] = tmp;
        }
    }
    for (size_t end = n - 1; end > 0; end--) {
        int64_t tmp = a[0];
        a[0] = a[end];
        a[end] = tmp;
        size_t root = 0;
        for (size_t child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && a[child] < a[child + 1]) child++;
            if (a[root] >= a[child]) break;
            tmp = a[root];
            a[root] = a[child];
            a[child] = tmp;
        }
    }
}

/* plain_element_set of a C-contiguous buffer of 8-byte integers (a numpy int64 or uint64 vector). */
static PyObject *plain_element_words(PyObject *obj, long long low, long long high, Py_ssize_t max_size)
{
    Py_buffer view;
    const char *fmt;
    PyObject *out = NULL;
    int64_t *dst;
    size_t n;
    int is_unsigned;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    fmt = view.format ? view.format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
    n = view.itemsize == 8 ? (size_t)(view.len / 8) : 0;
    if (view.ndim != 1 || n == 0 || strlen(fmt) != 1 || !strchr("qQlLnN", *fmt) ||
        (max_size >= 0 && n > (size_t)max_size))
        goto none;
    is_unsigned = strchr("QLN", *fmt) != NULL;
    if (!(out = new_words(n, (void **)&dst))) goto done;
    for (size_t k = 0; k < n; k++) {
        uint64_t u = ((const uint64_t *)view.buf)[k];
        int64_t v = (int64_t)u;
        if ((is_unsigned && u > (uint64_t)INT64_MAX) || v < low || v >= high) goto none;
        dst[k] = v;
    }
    sort_i64(dst, n);
    for (size_t k = 1; k < n; k++)
        if (dst[k] == dst[k - 1]) goto none;
    goto done;
none:
    Py_XDECREF(out);
    out = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&view);
    return out;
}

/* plain_element_set(values, low, high, max_size) -> bytearray | None
 * The sorted int64 words of a list, tuple, set or frozenset (exact types) of Python ints (exact
 * type), or of a one-dimensional C-contiguous buffer of 8-byte integers, that are distinct and in
 * [low, high), at most max_size of them (max_size < 0: no bound).
 * None for anything else and for every defect: the caller's general path then decides what is
 * wrong and says so. Reading exact ints runs no Python code, so the container cannot change
 * while it is read. */
static PyObject *plain_element_set(PyObject *module, PyObject *args)
{
    PyObject *obj, *out;
    long long low, high;
    Py_ssize_t max_size, n, k = 0;
    int64_t *dst;
    if (!PyArg_ParseTuple(args, "OLLn", &obj, &low, &high, &max_size)) return NULL;
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        n = PySequence_Fast_GET_SIZE(obj);
    } else if (PySet_CheckExact(obj) || PyFrozenSet_CheckExact(obj)) {
        n = PySet_GET_SIZE(obj);
    } else if (PyObject_CheckBuffer(obj)) {
        return plain_element_words(obj, low, high, max_size);
    } else {
        Py_RETURN_NONE;
    }
    if (n == 0 || (max_size >= 0 && n > max_size)) Py_RETURN_NONE;
    if (!(out = new_words((size_t)n, (void **)&dst))) return NULL;
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        PyObject **items = PySequence_Fast_ITEMS(obj);
        for (; k < n; k++) {
            int overflow = 0;
            long long v;
            if (!PyLong_CheckExact(items[k])) break;
            v = PyLong_AsLongLongAndOverflow(items[k], &overflow);
            if (overflow || v < low || v >= high) break;
            dst[k] = v;
        }
    } else {
        PyObject *it = PyObject_GetIter(obj), *item;
        if (!it) {
            Py_DECREF(out);
            return NULL;
        }
        while (k < n && (item = PyIter_Next(it)) != NULL) {
            int overflow = 0, ok = 0;
            if (PyLong_CheckExact(item)) {
                long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
                if (!overflow && v >= low && v < high) {
                    dst[k++] = v;
                    ok = 1;
                }
            }
            Py_DECREF(item);
            if (!ok) break;
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) {
            Py_DECREF(out);
            return NULL;
        }
    }
    if (k != n) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    sort_i64(dst, (size_t)n);
    for (Py_ssize_t i = 1; i < n; i++)
        if (dst[i] == dst[i - 1]) {
            Py_DECREF(out);
            Py_RETURN_NONE;
        }
    return out;
}

/* ------------------------------------------------------------------------------------------------
 * polar list decoder (the specification is decode_batch in polar.py; this is the same decoder)
 * --------------------------------------------------------------------------------------------- */

#define SCL_MAX_LIST 32
#define SCL_MAX_LOG 12                   /* N <= 4096: every metric is an integer <= N^2 2^29 <= 2^53 */
#define SCL_MAX_INPUT ((int64_t)1 << 29) /* |input| bound (known bits of a shortened code) */

enum { SCL_RATE0 = 0, SCL_RATE1 = 1, SCL_REP = 2, SCL_LEAF = 3, SCL_INNER = 4 };

typedef struct {
    int L, logN;
    size_t N;
    uint8_t *kind;                          /* 2N: node (depth d, offset o) is 2^d + o / (N >> d) */
    int64_t *alpha[SCL_MAX_LOG + 1];        /* L x (N >> d): the input of the node at depth d */
    uint8_t *beta_l[SCL_MAX_LOG + 1];       /* L x (N >> d): output of a left child at depth d */
    uint8_t *beta_r[SCL_MAX_LOG + 1];       /* L x (N >> d): output of a right child at depth d */
    int par_l[SCL_MAX_LOG + 1][SCL_MAX_LIST];
    int par_r[SCL_MAX_LOG + 1][SCL_MAX_LIST];
    uint8_t *root;                          /* L x N */
    int root_par[SCL_MAX_LIST];
    int64_t metric[SCL_MAX_LIST];           /* the current paths' metrics */
    int64_t cm[2 * SCL_MAX_LIST], tm[2 * SCL_MAX_LIST]; /* candidates: metric, */
    int cp[2 * SCL_MAX_LIST], tp[2 * SCL_MAX_LIST];     /* parent path, */
    uint32_t cf[2 * SCL_MAX_LIST], tf[2 * SCL_MAX_LIST]; /* flips (rate-one) or bit (repetition, leaf) */
    int sel[2 * SCL_MAX_LIST];
    int order[SCL_MAX_LIST][SCL_MAX_LIST - 1];      /* rate-one: least reliable positions per path */
    int64_t weakest[SCL_MAX_LIST][SCL_MAX_LIST - 1]; /* and their magnitudes */
    void *block;
} scl_t;

/* The node kinds of a frozen mask, in the order _node tests them. */
static void scl_classify(scl_t *s, const uint8_t *frozen)
{
    for (int d = 0; d <= s->logN; d++) {
        size_t m = s->N >> d;
        for (size_t o = 0; o < s->N; o += m) {
            size_t nfrozen = 0;
            uint8_t k;
            for (size_t j = 0; j < m; j++) nfrozen += frozen[o + j] != 0;
            if (nfrozen == m) k = SCL_RATE0;
            else if (m > 1 && nfrozen == 0) k = SCL_RATE1;
            else if (m > 1 && nfrozen == m - 1 && !frozen[o + m - 1]) k = SCL_REP;
            else if (m == 1) k = SCL_LEAF;
            else k = SCL_INNER;
            s->kind[((size_t)1 << d) + o / m] = k;
        }
    }
}

static void scl_free(scl_t *s)
{
    PyMem_RawFree(s->block);
    PyMem_RawFree(s->kind);
    PyMem_RawFree(s);
}

static scl_t *scl_new(const uint8_t *frozen, int logN, int L)
{
    size_t N = (size_t)1 << logN, total = 0, at = 0;
    scl_t *s = (scl_t *)xalloc(1, sizeof(scl_t));
    char *base;
    if (!s) return NULL;
    s->L = L;
    s->logN = logN;
    s->N = N;
    for (int d = 0; d <= logN; d++) total += (size_t)L * (N >> d) * (sizeof(int64_t) + 2);
    total += (size_t)L * N;
    s->kind = (uint8_t *)xalloc(2 * N, 1);
    s->block = xalloc(total, 1);
    if (!s->kind || !s->block) {
        scl_free(s);
        return NULL;
    }
    base = (char *)s->block;
    for (int d = 0; d <= logN; d++) { /* int64 arrays first: aligned */
        s->alpha[d] = (int64_t *)(base + at);
        at += (size_t)L * (N >> d) * sizeof(int64_t);
    }
    for (int d = 0; d <= logN; d++) {
        s->beta_l[d] = (uint8_t *)(base + at);
        at += (size_t)L * (N >> d);
        s->beta_r[d] = (uint8_t *)(base + at);
        at += (size_t)L * (N >> d);
    }
    s->root = (uint8_t *)(base + at);
    scl_classify(s, frozen);
    return s;
}

/* _prune: the indices of the `size` candidates of least metric, in that order, ties to the earlier
 * candidate (a stable sort); all k candidates in their order when k <= size.  Returns the count. */
static int scl_select(scl_t *s, int k, int size)
{
    int *sel = s->sel;
    for (int i = 0; i < k; i++) sel[i] = i;
    if (k <= size) return k;
    for (int i = 1; i < k; i++) {
        int v = sel[i], j = i;
        for (; j > 0 && s->cm[sel[j - 1]] > s->cm[v]; j--) sel[j] = sel[j - 1];
        sel[j] = v;
    }
    return size;
}

/* The candidates sel[0..k) become candidates 0..k. */
static void scl_keep(scl_t *s, int k)
{
    for (int i = 0; i < k; i++) {
        int c = s->sel[i];
        s->tm[i] = s->cm[c];
        s->tp[i] = s->cp[c];
        s->tf[i] = s->cf[c];
    }
    memcpy(s->cm, s->tm, (size_t)k * sizeof(int64_t));
    memcpy(s->cp, s->tp, (size_t)k * sizeof(int));
    memcpy(s->cf, s->tf, (size_t)k * sizeof(uint32_t));
}

static int64_t scl_negative_sum(const int64_t *a, size_t m)
{
    int64_t t = 0;
    for (size_t j = 0; j < m; j++) t += a[j] < 0 ? -a[j] : 0;
    return t;
}

/* _node: decode the subtree `id` (depth d, length m = N >> d) for the p paths whose values are
 * s->alpha[d] (p x m) and metrics s->metric[0..p).  Writes the survivors' coded bits to beta
 * (rows of m), their parent paths to parents and their metrics to s->metric; returns how many. */
static int scl_node(scl_t *s, int d, size_t id, int p, uint8_t *beta, int *parents)
{
    size_t m = s->N >> d, h = m / 2;
    const int64_t *alpha = s->alpha[d];
    int L = s->L, q;
    switch (s->kind[id]) {
    case SCL_RATE0:
        memset(beta, 0, (size_t)p * m);
        for (int i = 0; i < p; i++) {
            parents[i] = i;
            s->metric[i] += scl_negative_sum(alpha + i * m, m);
        }
        return p;
    case SCL_REP:
    case SCL_LEAF: /* candidates: all zeros for each path, then all ones for each path */
        for (int i = 0; i < p; i++) {
            const int64_t *a = alpha + i * m;
            int64_t zero = 0, one = 0;
            for (size_t j = 0; j < m; j++) {
                if (a[j] < 0) zero -= a[j];
                else one += a[j];
            }
            s->cm[i] = s->metric[i] + zero;
            s->cm[p + i] = s->metric[i] + one;
            s->cp[i] = s->cp[p + i] = i;
            s->cf[i] = 0;
            s->cf[p + i] = 1;
        }
        q = scl_select(s, 2 * p, L);
        for (int i = 0; i < q; i++) {
            int c = s->sel[i];
            memset(beta + i * m, (int)s->cf[c], m);
            parents[i] = s->cp[c];
            s->metric[i] = s->cm[c];
        }
        return q;
    case SCL_RATE1: {
        int t = L - 1 < (int)m ? L - 1 : (int)m, k = p;
        for (int i = 0; i < p; i++) { /* the t least reliable positions, stable order */
            const int64_t *a = alpha + i * m;
            int *ord = s->order[i];
            int64_t *wk = s->weakest[i];
            int count = 0;
            for (size_t j = 0; j < m; j++) {
                int64_t v = a[j] < 0 ? -a[j] : a[j];
                int at;
                if (count == t && (t == 0 || v >= wk[t - 1])) continue;
                at = count < t ? count++ : t - 1;
                for (; at > 0 && wk[at - 1] > v; at--) {
                    wk[at] = wk[at - 1];
                    ord[at] = ord[at - 1];
                }
                wk[at] = v;
                ord[at] = (int)j;
            }
            s->cm[i] = s->metric[i];
            s->cp[i] = i;
            s->cf[i] = 0;
        }
        for (int step = 0; step < t; step++) { /* fork: [kept..., flipped...], prune */
            for (int i = 0; i < k; i++) {
                s->cm[k + i] = s->cm[i] + s->weakest[s->cp[i]][step];
                s->cp[k + i] = s->cp[i];
                s->cf[k + i] = s->cf[i] | ((uint32_t)1 << step);
            }
            k = scl_select(s, 2 * k, L);
            scl_keep(s, k);
        }
        for (int i = 0; i < k; i++) {
            const int64_t *a = alpha + s->cp[i] * m;
            uint8_t *row = beta + i * m;
            for (size_t j = 0; j < m; j++) row[j] = a[j] < 0;
            for (int step = 0; step < t; step++)
                if (s->cf[i] >> step & 1) row[s->order[s->cp[i]][step]] ^= 1;
            parents[i] = s->cp[i];
            s->metric[i] = s->cm[i];
        }
        return k;
    }
    default: { /* SCL_INNER: d < logN, since a node of length 1 is a leaf */
        int64_t *child = s->alpha[d + 1];
        uint8_t *bl = s->beta_l[d + 1], *br = s->beta_r[d + 1];
        int *pl = s->par_l[d + 1], *pr = s->par_r[d + 1], p1, p2;
        for (int i = 0; i < p; i++) {
            const int64_t *a1 = alpha + i * m, *a2 = a1 + h;
            int64_t *c = child + i * h;
            for (size_t j = 0; j < h; j++) {
                int64_t x = a1[j], y = a2[j], ax = x < 0 ? -x : x, ay = y < 0 ? -y : y;
                int64_t mag = ax < ay ? ax : ay;
                c[j] = (x == 0 || y == 0) ? 0 : ((x < 0) != (y < 0) ? -mag : mag);
            }
        }
        p1 = scl_node(s, d + 1, 2 * id, p, bl, pl);
        for (int i = 0; i < p1; i++) {
            const int64_t *a1 = alpha + pl[i] * m, *a2 = a1 + h;
            const uint8_t *b = bl + i * h;
            int64_t *c = child + i * h;
            for (size_t j = 0; j < h; j++) c[j] = b[j] ? a2[j] - a1[j] : a2[j] + a1[j];
        }
        p2 = scl_node(s, d + 1, 2 * id + 1, p1, br, pr);
        for (int i = 0; i < p2; i++) {
            const uint8_t *l = bl + pr[i] * h, *r = br + i * h;
            uint8_t *row = beta + i * m;
            for (size_t j = 0; j < h; j++) row[j] = l[j] ^ r[j];
            memcpy(row + h, r, h);
            parents[i] = pl[pr[i]];
        }
        return p2;
    }
    }
}

/* Decode one word: llr (N doubles, checked here: integers of magnitude <= 2^29) to out (n bits).
 * -1 when a value is out of range. */
static int scl_decode(scl_t *s, const double *llr, size_t n, uint8_t *out)
{
    int q, best = 0;
    for (size_t j = 0; j < s->N; j++) {
        double v = llr[j];
        int64_t iv;
        if (!(v >= -(double)SCL_MAX_INPUT && v <= (double)SCL_MAX_INPUT)) return -1; /* NaN too */
        iv = (int64_t)v;
        if ((double)iv != v) return -1;
        s->alpha[0][j] = iv;
    }
    s->metric[0] = 0;
    q = scl_node(s, 0, 1, 1, s->root, s->root_par);
    for (int i = 1; i < q; i++)
        if (s->metric[i] < s->metric[best]) best = i;
    memcpy(out, s->root + (size_t)best * s->N, n);
    return 0;
}

/* polar_scl(llr, frozen, n, list_size) -> bytes: the list decoder's coded bits (B x n, one byte
 * each) for llr (C-contiguous float64, B x N values, integers of magnitude <= 2^29) and the frozen
 * mask (N bytes, 0 or 1; N a power of two <= 4096, so every metric stays exact below 2^53). */
static PyObject *polar_scl(PyObject *module, PyObject *args)
{
    PyObject *lo, *out = NULL;
    Py_buffer lv, fv;
    Py_ssize_t n, list_size;
    const char *fmt;
    size_t N, count, B;
    int logN = 0;
    scl_t *s = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "Oy*nn", &lo, &fv, &n, &list_size)) return NULL;
    if (PyObject_GetBuffer(lo, &lv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&fv);
        return NULL;
    }
    fmt = lv.format ? lv.format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
    if (lv.itemsize != 8 || strcmp(fmt, "d") != 0) {
        PyErr_SetString(PyExc_TypeError, "llr must be a contiguous array of float64");
        goto done;
    }
    N = (size_t)fv.len;
    count = (size_t)(lv.len / 8);
    while (logN <= SCL_MAX_LOG && ((size_t)1 << logN) < N) logN++;
    if (N == 0 || logN > SCL_MAX_LOG || ((size_t)1 << logN) != N) {
        PyErr_SetString(PyExc_ValueError, "frozen must have a power-of-two length N <= 4096");
        goto done;
    }
    for (size_t j = 0; j < N; j++)
        if (((const uint8_t *)fv.buf)[j] > 1) {
            PyErr_SetString(PyExc_ValueError, "frozen must hold bytes 0 or 1");
            goto done;
        }
    if (n < 0 || (size_t)n > N) {
        PyErr_SetString(PyExc_ValueError, "n must be in [0, N]");
        goto done;
    }
    if (list_size < 1 || list_size > SCL_MAX_LIST) {
        PyErr_SetString(PyExc_ValueError, "list_size must be in [1, 32]");
        goto done;
    }
    if (count % N != 0) {
        PyErr_SetString(PyExc_ValueError, "llr must hold a multiple of N values");
        goto done;
    }
    B = count / N; /* B * n <= count: no overflow */
    if (!(s = scl_new((const uint8_t *)fv.buf, logN, (int)list_size))) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(B * (size_t)n)))) goto done;
    {
        uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
        const double *src = (const double *)lv.buf;
        size_t bad = B;
        Py_BEGIN_ALLOW_THREADS
        for (size_t b = 0; b < B; b++)
            if (scl_decode(s, src + b * N, (size_t)n, dst + b * (size_t)n) < 0) {
                bad = b;
                break;
            }
        Py_END_ALLOW_THREADS
        if (bad < B) {
            Py_CLEAR(out);
            PyErr_Format(PyExc_ValueError, "llr row %zu holds a value that is not an integer of magnitude <= 2^29",
                         bad);
        }
    }
done:
    if (s) scl_free(s);
    PyBuffer_Release(&lv);
    PyBuffer_Release(&fv);
    return out;
}

static PyMethodDef module_methods[] = {
    {"cpu_features", cpu_features, METH_NOARGS, "cpu_features(): {'pclmul': bool}"},
    {"plain_element_set", plain_element_set, METH_VARARGS,
     "plain_element_set(values, low, high, max_size): sorted int64 bytearray of a plain set of ints, or None"},
    {"fp_berlekamp_welch", fp_berlekamp_welch, METH_VARARGS,
     "fp_berlekamp_welch(xs, ys, rows, n, k, p): (coefficients int64 bytearray, ok bytearray)"},
    {"fp_eval_range", fp_eval_range, METH_VARARGS,
     "fp_eval_range(coeffs, rows, k, p, count): F_r(x) for x < count, int64 bytearray"},
    {"fp_agree", fp_agree, METH_VARARGS, "fp_agree(coeffs, values, p, limit): indices with F(i) == values[i]"},
    {"fp_lock", fp_lock, METH_VARARGS, "fp_lock(coeffs, p, count, genuine, offsets): vault values"},
    {"polar_scl", polar_scl, METH_VARARGS,
     "polar_scl(llr, frozen, n, list_size): the polar list decoder's coded bits, B x n bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    "sketchauth.sketches._native",
    "Compiled GF(2^m) and F_p kernels for PinSketch and the fuzzy vaults, and the polar list decoder (optional; see _gf2m.py).",
    -1,
    module_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m, *errors;
    if (!DecodeErrorType) {
        if (!(errors = PyImport_ImportModule("sketchauth.errors"))) return NULL;
        DecodeErrorType = PyObject_GetAttrString(errors, "DecodeError");
        SketchFormatErrorType = PyObject_GetAttrString(errors, "SketchFormatError");
        Py_DECREF(errors);
        if (!DecodeErrorType || !SketchFormatErrorType) return NULL;
    }
    if (PyType_Ready(&GF2mType) < 0) return NULL;
    m = PyModule_Create(&native_module);
    if (!m) return NULL;
    Py_INCREF(&GF2mType);
    if (PyModule_AddObject(m, "GF2m", (PyObject *)&GF2mType) < 0) {
        Py_DECREF(&GF2mType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
