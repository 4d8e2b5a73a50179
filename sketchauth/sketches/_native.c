/*
 * sketchauth.sketches._native -- compiled kernels for PinSketch (GF(2^m), m <= 64), the fuzzy
 * vaults (prime fields p < 2^31) and the polar list decoder of the angular sketch.
 *
 * Optional: the package builds it when a C compiler is available and falls back to the numpy
 * implementations in _gf2m.py / _prime_field.py / polar.py otherwise (same results, checked by
 * the tests).
 * Everything here is hazmat: the Python wrappers validate parameters; this file still checks every
 * index it uses, so no input can make it read or write out of bounds.
 *
 * GF(2^m)
 *   Elements are words in the polynomial basis modulo the fixed primitive polynomial of each m
 *   (the table in _gf2m.py).  The kernels live in _native_gf2m.h, compiled twice below: uint32
 *   elements with uint64 unreduced products for m <= 32 (type GF2m), and uint64 elements with
 *   unsigned __int128 products for 32 < m <= 64 (type GF2m64, where the compiler has 128-bit
 *   integers); GF2m(m, kernel) returns the one for m.  Three multiplication kernels, chosen per
 *   field object:
 *     "pclmul"   -- the x86 carry-less multiply instruction (detected at run time with cpuid),
 *                   reduction by two carry-less folds with the low part r of the polynomial;
 *     "tables"   -- log/antilog tables of the generator x (m <= 16);
 *     "portable" -- carry-less products from a 4-bit window table of one operand (16 multiples,
 *                   eight lookups), reduction by four byte tables.
 *   Sums of products are accumulated *unreduced* (uint64, or 128 bits above m = 32: carry-less
 *   products of two m-bit values have at most 2m - 1 bits and XOR never carries) and reduced once:
 *   a polynomial step "acc += q * b(z)" costs deg b carry-less products and no reductions.
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
#define GF_MAX_M 64
#define GF_NARROW_MAX_M 32 /* elements below 2^32, unreduced products in uint64 */
#define GF_TABLES_MAX_M 16

/* Primitive polynomials without their leading term x^m (which does not fit a word at m = 64),
 * indexed by m: the same table as _gf2m.PRIMITIVE_POLYNOMIALS, for each m the lexicographically
 * first primitive polynomial with the fewest terms (galois.primitive_poly(2, m, terms="min")). */
static const uint64_t PRIMITIVE_LOW[GF_MAX_M + 1] = {
    0, 0, 0, 0, 0, 0, 0, 0,
    0x1D, 0x11, 0x9, 0x5, 0x53, 0x1B, 0x2B, 0x3,                         /*  8..15 */
    0x2D, 0x9, 0x81, 0x27, 0x9, 0x5, 0x3, 0x21,                          /* 16..23 */
    0x1B, 0x9, 0x47, 0x27, 0x9, 0x5, 0x53, 0x9,                          /* 24..31 */
    0xC5, 0x2001, 0x119, 0x5, 0x801, 0x53, 0x63, 0x11,                   /* 32..39 */
    0x39, 0x9, 0x99, 0x59, 0x65, 0x1B, 0x1C1, 0x21,                      /* 40..47 */
    0x291, 0x201, 0x1D, 0x4B, 0x9, 0x47, 0x149, 0x1000001,               /* 48..55 */
    0x95, 0x81, 0x80001, 0x95, 0x3, 0x27, 0x69, 0x3,                     /* 56..63 */
    0x1B,                                                                /* 64 */
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
 * roots of sigma: Frobenius powers and the trace algorithm
 * --------------------------------------------------------------------------------------------- */

enum {
    ROOTS_ZERO = -1,      /* sigma(0) = 0 */
    ROOTS_NOT_SPLIT = -2, /* z^(2^m) != z mod sigma: repeated roots or roots outside the field */
    ROOTS_QUADRATIC = -3, /* a quadratic factor without two distinct roots */
    ROOTS_MEMORY = -4,
    ROOTS_UNSPLIT = -5,   /* splitting did not finish (impossible when sigma passed the check) */
};


enum { RECOVER_TOO_FAR = -10 };

#if defined(__linux__) || defined(__APPLE__)
#include <sys/random.h>
#include <unistd.h>
#define SA_HAVE_ENTROPY 1
#else
#define SA_HAVE_ENTROPY 0
#endif

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


static PyObject *SketchFormatErrorType = NULL;

/* Whether a word buffer (see get_words) holds signed integers. */
static int words_signed(const Py_buffer *view)
{
    const char *fmt = view->format ? view->format : "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<') fmt++;
    return strchr("qln", *fmt) != NULL;
}

/* ------------------------------------------------------------------------------------------------
 * The GF(2^m) kernels, compiled twice from _native_gf2m.h: elements in uint32 with unreduced
 * products in uint64 for m <= 32 (names ending _32), and elements in uint64 with unreduced
 * products in unsigned __int128 for 32 < m <= 64 (names ending _64; only where the compiler has
 * a 128-bit integer, else those m use the numpy implementation).  Every static name of the header
 * is renamed per pass by a macro (#define gf_mul GF_NAME(gf_mul)), so the two passes are the
 * same source.
 * --------------------------------------------------------------------------------------------- */

#define GF_CAT2(a, b) a##b
#define GF_CAT(a, b) GF_CAT2(a, b)
#define GF_NAME(name) GF_CAT(name, GF_SFX)

#define GF_WIDE 0
#define GF_SFX _32
#define GF_PASS_MIN_M GF_MIN_M
#define GF_PASS_MAX_M GF_NARROW_MAX_M
#define GF_BYTES 4
#define GF_TYPE_NAME "sketchauth.sketches._native.GF2m"
#define gf_e uint32_t
#define gf_w uint64_t
#include "_native_gf2m.h"
#undef GF_WIDE
#undef GF_SFX
#undef GF_PASS_MIN_M
#undef GF_PASS_MAX_M
#undef GF_BYTES
#undef GF_TYPE_NAME
#undef gf_e
#undef gf_w

#if SA_HAVE_INT128
#define SA_HAVE_GF64 1
#define GF_WIDE 1
#define GF_SFX _64
#define GF_PASS_MIN_M (GF_NARROW_MAX_M + 1)
#define GF_PASS_MAX_M GF_MAX_M
#define GF_BYTES 8
#define GF_TYPE_NAME "sketchauth.sketches._native.GF2m64"
#define gf_e uint64_t
#define gf_w unsigned __int128
#include "_native_gf2m.h"
#undef GF_WIDE
#undef GF_SFX
#undef GF_PASS_MIN_M
#undef GF_PASS_MAX_M
#undef GF_BYTES
#undef GF_TYPE_NAME
#undef gf_e
#undef gf_w
#else
#define SA_HAVE_GF64 0
#endif

/* GF2m(m, kernel): the type of m's pass (GF2m for m <= 32, GF2m64 above). */
static PyObject *GF2m_dispatch_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"m", "kernel", NULL};
    int m;
    const char *kernel_name;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "is", kwlist, &m, &kernel_name)) return NULL;
    if (m > GF_NARROW_MAX_M) {
#if SA_HAVE_GF64
        return GF2m_new_64(&GF2mType_64, args, kwds);
#else
        return PyErr_Format(PyExc_ValueError, "m > 32 needs a compiler with 128-bit integers, got %d", m);
#endif
    }
    return GF2m_new_32(type, args, kwds);
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

#define SCL_MAX_LIST 1024            /* the sketch offers 128; longer lists are for measurement */
#define SCL_INSERTION_SORT 256       /* candidates up to which the selection is an insertion sort */
#define SCL_RATE1_FORKS 31           /* a rate-one node forks on at most this many positions (cf: uint32) */
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
    int sel[2 * SCL_MAX_LIST], merge[2 * SCL_MAX_LIST]; /* selection, and the merge sort's scratch */
    int order[SCL_MAX_LIST][SCL_RATE1_FORKS];      /* rate-one: least reliable positions per path */
    int64_t weakest[SCL_MAX_LIST][SCL_RATE1_FORKS]; /* and their magnitudes */
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
 * candidate (a stable sort); all k candidates in their order when k <= size.  Returns the count.
 * Up to 256 candidates (lists up to 128) an insertion sort, fast on the nearly sorted candidates;
 * beyond, a bottom-up merge sort (O(k log k)): both stable, so the same selection. */
static int scl_select(scl_t *s, int k, int size)
{
    int *sel = s->sel, *tmp = s->merge;
    const int64_t *cm = s->cm;
    for (int i = 0; i < k; i++) sel[i] = i;
    if (k <= size) return k;
    if (k <= SCL_INSERTION_SORT) {
        for (int i = 1; i < k; i++) {
            int v = sel[i], j = i;
            for (; j > 0 && cm[sel[j - 1]] > cm[v]; j--) sel[j] = sel[j - 1];
            sel[j] = v;
        }
        return size;
    }
    for (int w = 1; w < k; w *= 2) {
        for (int lo = 0; lo < k; lo += 2 * w) {
            int mid = lo + w < k ? lo + w : k, hi = lo + 2 * w < k ? lo + 2 * w : k, i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = cm[sel[j]] < cm[sel[i]] ? sel[j++] : sel[i++];
            while (i < mid) tmp[o++] = sel[i++];
            while (j < hi) tmp[o++] = sel[j++];
        }
        memcpy(sel, tmp, (size_t)k * sizeof(int));
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
        if (t > SCL_RATE1_FORKS) t = SCL_RATE1_FORKS;
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
 * With paths (not NULL): every surviving path to paths (q x n bits, in the decoder's path order)
 * and its metric to metrics, and out is untouched.  The path count, or -1 when a value is out of range. */
static int scl_decode(scl_t *s, const double *llr, size_t n, uint8_t *out, uint8_t *paths, int64_t *metrics)
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
    if (paths) {
        for (int i = 0; i < q; i++) {
            memcpy(paths + (size_t)i * n, s->root + (size_t)i * s->N, n);
            metrics[i] = s->metric[i];
        }
        return q;
    }
    for (int i = 1; i < q; i++)
        if (s->metric[i] < s->metric[best]) best = i;
    memcpy(out, s->root + (size_t)best * s->N, n);
    return q;
}

/* polar_scl(llr, frozen, n, list_size[, paths]) -> bytes: the list decoder's coded bits (B x n, one
 * byte each) for llr (C-contiguous float64, B x N values, integers of magnitude <= 2^29) and the
 * frozen mask (N bytes, 0 or 1; N a power of two <= 4096, so every metric stays exact below 2^53).
 * With paths true: (bits, metrics, q), every surviving path of every row (B x q x n bytes, in the
 * decoder's path order) and its metric (B x q int64); q depends on the mask and the list only. */
static PyObject *polar_scl(PyObject *module, PyObject *args)
{
    PyObject *lo, *out = NULL;
    Py_buffer lv, fv;
    Py_ssize_t n, list_size;
    int want_paths = 0, q = -1;
    PyObject *metrics = NULL;
    const char *fmt;
    size_t N, count, B;
    int logN = 0;
    scl_t *s = NULL;
    (void)module;
    if (!PyArg_ParseTuple(args, "Oy*nn|p", &lo, &fv, &n, &list_size, &want_paths)) return NULL;
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
        PyErr_SetString(PyExc_ValueError, "list_size must be in [1, 1024]");
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
    {
        size_t width = want_paths ? (size_t)list_size : 1; /* paths per row, at most */
        if (!(out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(B * width * (size_t)n)))) goto done;
        if (want_paths && !(metrics = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(B * width * 8)))) goto done;
    }
    {
        uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
        int64_t *mt = metrics ? (int64_t *)PyBytes_AS_STRING(metrics) : NULL;
        const double *src = (const double *)lv.buf;
        size_t bad = B;
        Py_BEGIN_ALLOW_THREADS
        for (size_t b = 0; b < B; b++) {
            int got;
            if (want_paths) { /* rows packed at the first row's count (the same for every row) */
                size_t at = b * (size_t)(q < 0 ? 0 : q);
                got = scl_decode(s, src + b * N, (size_t)n, NULL, dst + at * (size_t)n, mt + at);
                if (got >= 0 && q < 0) q = got;
            } else {
                got = scl_decode(s, src + b * N, (size_t)n, dst + b * (size_t)n, NULL, NULL);
            }
            if (got < 0 || (want_paths && got != q)) {
                bad = b;
                break;
            }
        }
        Py_END_ALLOW_THREADS
        if (bad < B) {
            Py_CLEAR(out);
            PyErr_Format(PyExc_ValueError, "llr row %zu holds a value that is not an integer of magnitude <= 2^29",
                         bad);
        } else if (want_paths) {
            PyObject *res = NULL;
            size_t rows = B * (size_t)(q < 0 ? 0 : q);
            if (_PyBytes_Resize(&out, (Py_ssize_t)(rows * (size_t)n)) == 0 &&
                _PyBytes_Resize(&metrics, (Py_ssize_t)(rows * 8)) == 0)
                res = Py_BuildValue("(OOi)", out, metrics, q < 0 ? 0 : q);
            Py_CLEAR(out);
            out = res;
        }
    }
done:
    Py_XDECREF(metrics);
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
     "polar_scl(llr, frozen, n, list_size[, paths]): the polar list decoder's coded bits, B x n bytes; "
     "with paths: (bits B x q x n, int64 metrics B x q, q) of every surviving path"},
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
    GF2mType_32.tp_new = GF2m_dispatch_new;
    if (PyType_Ready(&GF2mType_32) < 0) return NULL;
#if SA_HAVE_GF64
    if (PyType_Ready(&GF2mType_64) < 0) return NULL;
#endif
    m = PyModule_Create(&native_module);
    if (!m) return NULL;
    if (PyModule_AddIntConstant(m, "GF_MAX_M", SA_HAVE_GF64 ? GF_MAX_M : GF_NARROW_MAX_M) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&GF2mType_32);
    if (PyModule_AddObject(m, "GF2m", (PyObject *)&GF2mType_32) < 0) {
        Py_DECREF(&GF2mType_32);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
