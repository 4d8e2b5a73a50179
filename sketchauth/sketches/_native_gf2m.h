/*
 * The GF(2^m) kernels of sketchauth.sketches._native (see _native.c's header for the mathematics),
 * written once for both element widths.  _native.c includes this file twice, after defining:
 *   gf_e           the element word: uint32_t (m <= 32) or uint64_t (32 < m <= 64);
 *   gf_w           an unreduced carry-less product (up to 2m - 1 bits): uint64_t or unsigned __int128;
 *   GF_WIDE        0 or 1 (where the two widths need different code: byte-table counts, the window
 *                  product's length, the PCLMUL reduction, the SIMD axpy of 32-bit elements);
 *   GF_BYTES       byte tables per element (4 or 8);
 *   GF_PASS_MIN_M, GF_PASS_MAX_M   the m this pass serves;
 *   GF_SFX, GF_NAME(name)          the suffix given to every static name below (_32, _64), by the
 *                  #define list that follows, undone at the end of the file;
 *   GF_TYPE_NAME   the Python type's name.
 * No include guard: including it twice is the point.
 */

/* Names of this pass: every static name of this file gets the pass's suffix (GF_SFX). */
#define FIELDS GF_NAME(FIELDS)
#define GF2mObject GF_NAME(GF2mObject)
#define GF2mType GF_NAME(GF2mType)
#define bitlen_w GF_NAME(bitlen_w)
#define GF2m_berlekamp_massey GF_NAME(GF2m_berlekamp_massey)
#define GF2m_decode_plain GF_NAME(GF2m_decode_plain)
#define GF2m_encode_plain GF_NAME(GF2m_encode_plain)
#define GF2m_find_roots GF_NAME(GF2m_find_roots)
#define GF2m_get_kernel GF_NAME(GF2m_get_kernel)
#define GF2m_get_m GF_NAME(GF2m_get_m)
#define GF2m_getset GF_NAME(GF2m_getset)
#define GF2m_inv GF_NAME(GF2m_inv)
#define GF2m_methods GF_NAME(GF2m_methods)
#define GF2m_mul GF_NAME(GF2m_mul)
#define GF2m_new GF_NAME(GF2m_new)
#define GF2m_poly_deflate GF_NAME(GF2m_poly_deflate)
#define GF2m_poly_divmod GF_NAME(GF2m_poly_divmod)
#define GF2m_poly_eval GF_NAME(GF2m_poly_eval)
#define GF2m_poly_eval_many GF_NAME(GF2m_poly_eval_many)
#define GF2m_poly_gcd GF_NAME(GF2m_poly_gcd)
#define GF2m_poly_mul GF_NAME(GF2m_poly_mul)
#define GF2m_power_sums GF_NAME(GF2m_power_sums)
#define GF2m_power_sums_packed GF_NAME(GF2m_power_sums_packed)
#define GF2m_power_sums_segments GF_NAME(GF2m_power_sums_segments)
#define GF2m_recover GF_NAME(GF2m_recover)
#define GF2m_recover_payload GF_NAME(GF2m_recover_payload)
#define GF2m_repr GF_NAME(GF2m_repr)
#define GF2m_scale GF_NAME(GF2m_scale)
#define GF2m_solve_artin_schreier GF_NAME(GF2m_solve_artin_schreier)
#define GF2m_sqr GF_NAME(GF2m_sqr)
#define GF2m_vmul GF_NAME(GF2m_vmul)
#define axpy_hw GF_NAME(axpy_hw)
#define axpy_lazy GF_NAME(axpy_lazy)
#define berlekamp_massey GF_NAME(berlekamp_massey)
#define build_artin_schreier GF_NAME(build_artin_schreier)
#define clmul_hw GF_NAME(clmul_hw)
#define clmul_sw GF_NAME(clmul_sw)
#define cmp_u32 GF_NAME(cmp_u32)
#define deflate GF_NAME(deflate)
#define dot_rev_hw GF_NAME(dot_rev_hw)
#define dot_rev_lazy GF_NAME(dot_rev_lazy)
#define draw_beta GF_NAME(draw_beta)
#define elem_from GF_NAME(elem_from)
#define elems_from_words GF_NAME(elems_from_words)
#define emit_factor GF_NAME(emit_factor)
#define eval_many GF_NAME(eval_many)
#define eval_many_hw GF_NAME(eval_many_hw)
#define factor_list GF_NAME(factor_list)
#define find_roots GF_NAME(find_roots)
#define frobenius GF_NAME(frobenius)
#define get_field GF_NAME(get_field)
#define gf_inv GF_NAME(gf_inv)
#define gf_mul GF_NAME(gf_mul)
#define gf_mulx GF_NAME(gf_mulx)
#define gf_reduce GF_NAME(gf_reduce)
#define gf_sqr GF_NAME(gf_sqr)
#define gf_t GF_NAME(gf_t)
#define list_from GF_NAME(list_from)
#define make_monic GF_NAME(make_monic)
#define mul_hw GF_NAME(mul_hw)
#define mul_tables GF_NAME(mul_tables)
#define plain_elem GF_NAME(plain_elem)
#define plain_elements GF_NAME(plain_elements)
#define plain_words GF_NAME(plain_words)
#define poly_divmod GF_NAME(poly_divmod)
#define poly_from GF_NAME(poly_from)
#define poly_gcd GF_NAME(poly_gcd)
#define power_sums GF_NAME(power_sums)
#define power_sums_hw GF_NAME(power_sums_hw)
#define power_sums_portable GF_NAME(power_sums_portable)
#define power_sums_tables GF_NAME(power_sums_tables)
#define quadratic_roots GF_NAME(quadratic_roots)
#define recover_difference GF_NAME(recover_difference)
#define recover_owned GF_NAME(recover_owned)
#define reduce_slow GF_NAME(reduce_slow)
#define scale_hw GF_NAME(scale_hw)
#define scale_vec GF_NAME(scale_vec)
#define solve_artin_schreier GF_NAME(solve_artin_schreier)
#define sort_elems GF_NAME(sort_elems)
#define syndrome_relations GF_NAME(syndrome_relations)
#define trim GF_NAME(trim)
#define vmul64 GF_NAME(vmul64)
#define vmul_hw GF_NAME(vmul_hw)
#define win_mul GF_NAME(win_mul)
#define win_table GF_NAME(win_table)

/* ------------------------------------------------------------------------------------------------
 * the field
 * --------------------------------------------------------------------------------------------- */

typedef struct {
    int m;
    int kernel;
    gf_e mask;
    gf_w poly;     /* full polynomial, x^m included */
    uint64_t low;      /* poly without x^m */
    gf_e red[GF_BYTES][256]; /* (byte << (m + 8k)) mod poly */
    gf_e sqr[GF_BYTES][256]; /* square of (byte << 8k), reduced */
    uint16_t *log;     /* tables kernel: log[a], a != 0 */
    uint16_t *exp;     /* tables kernel: exp[i] = x^i for i < 2(2^m - 1) */
    gf_e order1;   /* 2^m - 1 */
    /* y^2 + y = k: echelon rows (pivot bit, row, combination of inputs) */
    int as_count;
    int as_pivot[GF_MAX_M];
    gf_e as_row[GF_MAX_M];
    gf_e as_combo[GF_MAX_M];
} gf_t;

/* Bits of an unreduced value (a carry-less product: below 2^(2m - 1)). */
static inline int bitlen_w(gf_w v)
{
#if GF_WIDE
    uint64_t high = (uint64_t)(v >> 64);
    return high ? 64 + bit_length64(high) : bit_length64((uint64_t)v);
#else
    return bit_length64(v);
#endif
}

static gf_w clmul_sw(gf_w a, gf_e b)
{
    gf_w r = 0;
    while (b) {
        if (b & 1) r ^= a;
        a <<= 1;
        b >>= 1;
    }
    return r;
}

static gf_e reduce_slow(const gf_t *f, gf_w v)
{
    for (int bit = bitlen_w(v) - 1; bit >= f->m; bit--)
        if ((v >> bit) & 1) v ^= f->poly << (bit - f->m);
    return (gf_e)v;
}

/* Reduce a value of at most 2m - 1 bits (an XOR of carry-less products) by byte tables. */
static inline gf_e gf_reduce(const gf_t *f, gf_w v)
{
#if GF_WIDE
    uint64_t h = (uint64_t)(v >> f->m); /* below 2^(m - 1) */
    return ((gf_e)v & f->mask) ^ f->red[0][h & 255] ^ f->red[1][(h >> 8) & 255] ^
           f->red[2][(h >> 16) & 255] ^ f->red[3][(h >> 24) & 255] ^ f->red[4][(h >> 32) & 255] ^
           f->red[5][(h >> 40) & 255] ^ f->red[6][(h >> 48) & 255] ^ f->red[7][h >> 56];
#else
    gf_w h = v >> f->m;
    return ((gf_e)v & f->mask) ^ f->red[0][h & 255] ^ f->red[1][(h >> 8) & 255] ^
           f->red[2][(h >> 16) & 255] ^ f->red[3][(h >> 24) & 255];
#endif
}

static inline gf_e gf_sqr(const gf_t *f, gf_e a)
{
#if GF_WIDE
    return f->sqr[0][a & 255] ^ f->sqr[1][(a >> 8) & 255] ^ f->sqr[2][(a >> 16) & 255] ^
           f->sqr[3][(a >> 24) & 255] ^ f->sqr[4][(a >> 32) & 255] ^ f->sqr[5][(a >> 40) & 255] ^
           f->sqr[6][(a >> 48) & 255] ^ f->sqr[7][a >> 56];
#else
    return f->sqr[0][a & 255] ^ f->sqr[1][(a >> 8) & 255] ^ f->sqr[2][(a >> 16) & 255] ^
           f->sqr[3][a >> 24];
#endif
}

/* -- portable carry-less products: 4-bit window over the multiples of a ------------------------ */

static inline void win_table(gf_w tab[16], gf_e a)
{
    gf_w a1 = a, a2 = a1 << 1, a4 = a1 << 2, a8 = a1 << 3;
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

static inline gf_w win_mul(const gf_w tab[16], gf_e b)
{
#if GF_WIDE
    gf_w r = 0;
    for (int s = 0; s < 64; s += 4) r ^= tab[(b >> s) & 15] << s;
    return r;
#else
    return tab[b & 15] ^ (tab[(b >> 4) & 15] << 4) ^ (tab[(b >> 8) & 15] << 8) ^
           (tab[(b >> 12) & 15] << 12) ^ (tab[(b >> 16) & 15] << 16) ^
           (tab[(b >> 20) & 15] << 20) ^ (tab[(b >> 24) & 15] << 24) ^ (tab[b >> 28] << 28);
#endif
}

/* -- hardware carry-less products ------------------------------------------------------------ */

#if SA_HAVE_X86_CLMUL
#if GF_WIDE
/* The whole 128-bit product of two 64-bit words. */
SA_TARGET_PCLMUL static inline gf_w clmul_hw(uint64_t a, uint64_t b)
{
    __m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)a), _mm_cvtsi64_si128((long long)b), 0);
    return ((gf_w)(uint64_t)_mm_extract_epi64(p, 1) << 64) | (uint64_t)_mm_cvtsi128_si64(p);
}

/* Full product, reduced without leaving the vector registers: with s = 64 - m, the product of
 * a x^s and b is (a b) x^s, whose high word is h = (a b) div x^m and whose low word is
 * (a b mod x^m) x^s.  The first fold multiplies h by r x^s (r = poly - x^m, deg r = d <= (m + 1)/2,
 * so r x^s fits a word): high word h2 = (h r) div x^m < 2^(d - 1), low word (h r mod x^m) x^s.
 * The second fold h2 r < 2^(2d - 1) <= 2^m is already reduced.  Three carry-less multiplies, one
 * shift of both low words by s, no 128-bit arithmetic in general registers. */
SA_TARGET_PCLMUL static inline gf_e mul_hw(const gf_t *f, gf_e a, gf_e b)
{
    const int s = 64 - f->m;
    const __m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)(a << s)), _mm_cvtsi64_si128((long long)b), 0x00);
    const __m128i t = _mm_clmulepi64_si128(p, _mm_cvtsi64_si128((long long)(f->low << s)), 0x01);
    const __m128i u = _mm_clmulepi64_si128(t, _mm_cvtsi64_si128((long long)f->low), 0x01);
    const __m128i low = _mm_srl_epi64(_mm_xor_si128(p, t), _mm_cvtsi32_si128(s));
    return (gf_e)_mm_cvtsi128_si64(_mm_xor_si128(low, u));
}
#else
SA_TARGET_PCLMUL static inline uint64_t clmul_hw(uint64_t a, uint64_t b)
{
    __m128i p = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)a), _mm_cvtsi64_si128((long long)b), 0);
    return (uint64_t)_mm_cvtsi128_si64(p);
}

/* Full product: two folds of the high part with r = poly - x^m (deg r <= (m + 1) / 2 is checked
 * when the field is built, so the second fold is below x^m). */
SA_TARGET_PCLMUL static inline gf_e mul_hw(const gf_t *f, gf_e a, gf_e b)
{
    uint64_t p = clmul_hw(a, b);
    uint64_t p1 = (p & f->mask) ^ clmul_hw(p >> f->m, f->low);
    return (gf_e)((p1 & f->mask) ^ clmul_hw(p1 >> f->m, f->low));
}
#endif
#endif

/* -- scalar product -------------------------------------------------------------------------- */

static inline gf_e mul_tables(const gf_t *f, gf_e a, gf_e b)
{
    if (!a || !b) return 0;
    return f->exp[(gf_e)f->log[a] + f->log[b]];
}

static gf_e gf_mul(const gf_t *f, gf_e a, gf_e b)
{
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        return mul_hw(f, a, b);
#endif
    case K_TABLES:
        return mul_tables(f, a, b);
    default: {
        gf_w tab[16];
        win_table(tab, a);
        return gf_reduce(f, win_mul(tab, b));
    }
    }
}

static gf_e gf_inv(const gf_t *f, gf_e a)
{
    /* binary extended Euclid on GF(2)[x]: u * g1 = a (mod poly) invariant; a != 0 */
    gf_w u = a, v = f->poly, g1 = 1, g2 = 0;
    if (a == 0) return 0;
    while (u != 1) {
        int j = bitlen_w(u) - bitlen_w(v);
        if (j < 0) {
            gf_w t = u;
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
    return (gf_e)g1;
}

static gf_e gf_mulx(const gf_t *f, gf_e a)
{
    gf_w v = (gf_w)a << 1;
    if (v >> f->m) v ^= f->poly;
    return (gf_e)v;
}

/* -- vector primitives (kernel switch once per vector) --------------------------------------- */

/* acc[i] ^= c * x[i] (unreduced for the carry-less kernels) */
#if SA_HAVE_X86_CLMUL
SA_TARGET_PCLMUL static void axpy_hw(int m, gf_w *acc, gf_e c, const gf_e *x, size_t n)
{
#if GF_WIDE
    (void)m;
    for (size_t i = 0; i < n; i++) acc[i] ^= clmul_hw(c, x[i]);
#else
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
#endif
}

SA_TARGET_PCLMUL static void scale_hw(const gf_t *f, gf_e *out, gf_e c, const gf_e *x, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = mul_hw(f, c, x[i]);
}

SA_TARGET_PCLMUL static gf_w dot_rev_hw(const gf_e *a, const gf_e *b, size_t n)
{
    gf_w acc = 0;
    for (size_t i = 0; i < n; i++) acc ^= clmul_hw(a[i], *(b - i));
    return acc;
}
#endif

static void axpy_lazy(const gf_t *f, gf_w *acc, gf_e c, const gf_e *x, size_t n)
{
    if (!c) return;
    switch (f->kernel) {
#if SA_HAVE_X86_CLMUL
    case K_PCLMUL:
        axpy_hw(f->m, acc, c, x, n);
        return;
#endif
    case K_TABLES: {
        gf_e lc = f->log[c];
        for (size_t i = 0; i < n; i++)
            if (x[i]) acc[i] ^= f->exp[lc + f->log[x[i]]];
        return;
    }
    default: {
        gf_w tab[16];
        win_table(tab, c);
        for (size_t i = 0; i < n; i++) acc[i] ^= win_mul(tab, x[i]);
        return;
    }
    }
}

/* sum_{i<n} a[i] * b[-i] (b walks backwards), unreduced */
static gf_w dot_rev_lazy(const gf_t *f, const gf_e *a, const gf_e *b, size_t n)
{
    gf_w acc = 0;
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
            gf_w tab[16];
            if (!a[i]) continue;
            win_table(tab, a[i]);
            acc ^= win_mul(tab, *(b - i));
        }
        return acc;
    }
}

/* out[i] = c * x[i], reduced */
static void scale_vec(const gf_t *f, gf_e *out, gf_e c, const gf_e *x, size_t n)
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
        gf_w tab[16];
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
    for (size_t i = 0; i < n; i++) out[i] = mul_hw(f, (gf_e)a[i], (gf_e)b[i]);
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
        for (size_t i = 0; i < n; i++) out[i] = mul_tables(f, (gf_e)a[i], (gf_e)b[i]);
        return;
    default:
        for (size_t i = 0; i < n; i++) out[i] = gf_mul(f, (gf_e)a[i], (gf_e)b[i]);
        return;
    }
}

/* -- odd power sums ---------------------------------------------------------------------------- */

#define PS_BLOCK 64

/* acc[k] ^= sum_j e[j]^(2k+1) for k < t: a block of elements advances together (independent
 * products, so the multiplier's latency overlaps), each by its square per step. */
#if SA_HAVE_X86_CLMUL
SA_TARGET_PCLMUL static void power_sums_hw(const gf_t *f, gf_e *acc, const gf_e *e, size_t n, size_t t)
{
    gf_e cur[PS_BLOCK], sq[PS_BLOCK];
    for (size_t start = 0; start < n; start += PS_BLOCK) {
        size_t b = n - start < PS_BLOCK ? n - start : PS_BLOCK;
        for (size_t j = 0; j < b; j++) {
            cur[j] = e[start + j];
            sq[j] = gf_sqr(f, cur[j]);
        }
        for (size_t k = 0; k < t; k++) {
            gf_e s = 0;
            for (size_t j = 0; j < b; j++) {
                s ^= cur[j];
                cur[j] = mul_hw(f, cur[j], sq[j]);
            }
            acc[k] ^= s;
        }
    }
}
#endif

static void power_sums_tables(const gf_t *f, gf_e *acc, const gf_e *e, size_t n, size_t t)
{
    gf_e lg[PS_BLOCK], step[PS_BLOCK];
    const gf_e q = f->order1;
    for (size_t start = 0; start < n; start += PS_BLOCK) {
        size_t b = 0;
        for (size_t j = start; j < n && j < start + PS_BLOCK; j++) {
            if (!e[j]) continue; /* 0^i = 0 for i >= 1 */
            lg[b] = f->log[e[j]];
            step[b] = (2 * lg[b]) % q;
            b++;
        }
        for (size_t k = 0; k < t; k++) {
            gf_e s = 0;
            for (size_t j = 0; j < b; j++) {
                s ^= f->exp[lg[j]];
                lg[j] += step[j];
                if (lg[j] >= q) lg[j] -= q;
            }
            acc[k] ^= s;
        }
    }
}

static void power_sums_portable(const gf_t *f, gf_e *acc, const gf_e *e, size_t n, size_t t)
{
    gf_e cur[PS_BLOCK];
    gf_w tab[PS_BLOCK][16];
    for (size_t start = 0; start < n; start += PS_BLOCK) {
        size_t b = n - start < PS_BLOCK ? n - start : PS_BLOCK;
        for (size_t j = 0; j < b; j++) {
            cur[j] = e[start + j];
            win_table(tab[j], gf_sqr(f, cur[j]));
        }
        for (size_t k = 0; k < t; k++) {
            gf_e s = 0;
            for (size_t j = 0; j < b; j++) {
                s ^= cur[j];
                cur[j] = gf_reduce(f, win_mul(tab[j], cur[j]));
            }
            acc[k] ^= s;
        }
    }
}

static void power_sums(const gf_t *f, gf_e *acc, const gf_e *e, size_t n, size_t t)
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
        gf_e value = gf_sqr(f, (gf_e)1 << j) ^ ((gf_e)1 << j);
        gf_e combo = (gf_e)1 << j;
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
static int solve_artin_schreier(const gf_t *f, gf_e k, gf_e *y)
{
    gf_e out = 0;
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
    if (m < GF_PASS_MIN_M || m > GF_PASS_MAX_M || kernel < 0 || kernel > 2) return NULL;
    if (FIELDS[m][kernel]) return FIELDS[m][kernel];
    f = (gf_t *)xalloc(1, sizeof(gf_t));
    if (!f) return NULL;
    f->m = m;
    f->kernel = kernel;
    f->low = PRIMITIVE_LOW[m];
    f->poly = ((gf_w)1 << m) | f->low;
    f->mask = (gf_e)(((gf_w)1 << m) - 1);
    f->order1 = f->mask;
    for (int k = 0; k < GF_BYTES; k++)
        for (gf_e byte = 0; byte < 256; byte++) {
            /* m + 8k + 8 <= 8 sizeof(gf_w) for m <= 8 sizeof(gf_e): the shifted byte fits */
            f->red[k][byte] = reduce_slow(f, (gf_w)byte << (m + 8 * k));
            f->sqr[k][byte] = 8 * k < m ? reduce_slow(f, clmul_sw((gf_w)byte << (8 * k), byte << (8 * k))) : 0;
        }
    if (kernel == K_PCLMUL && 2 * (bit_length64(f->low) - 1) > m + 1) {
        /* two folds would not reach below x^m (never the case for the table above) */
        PyMem_RawFree(f);
        return NULL;
    }
    if (kernel == K_TABLES) {
        gf_e n = f->order1, value = 1;
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
        for (gf_e i = 0; i < n; i++) {
            f->exp[i] = f->exp[i + n] = (uint16_t)value;
            f->log[value] = (uint16_t)i;
            value <<= 1;
            if (value >> m) value ^= (gf_e)f->poly;
        }
    }
    build_artin_schreier(f);
    FIELDS[m][kernel] = f;
    return f;
}

/* ------------------------------------------------------------------------------------------------
 * polynomials over GF(2^m): coefficients low degree first, length = degree + 1, zero = length 0
 * --------------------------------------------------------------------------------------------- */

static size_t trim(const gf_e *p, size_t len)
{
    while (len && !p[len - 1]) len--;
    return len;
}

/* Division of a (length la) by b (length lb >= 1, b[lb-1] != 0): the quotient into q (la-lb+1
 * entries, unless NULL) and the remainder into r (lb-1 entries); r may alias a.  Each quotient
 * step reduces one coefficient and adds q_k * b(z) unreduced (acc: la entries of scratch). */
static void poly_divmod(const gf_t *f, const gf_e *a, size_t la, const gf_e *b, size_t lb,
                        gf_e *q, gf_e *r, gf_w *acc)
{
    size_t db = lb - 1;
    gf_e lead_inv = b[db] == 1 ? 1 : gf_inv(f, b[db]);
    for (size_t i = 0; i < la; i++) acc[i] = a[i];
    for (size_t k = la; k-- > db;) {
        gf_e c = gf_reduce(f, acc[k]);
        if (lead_inv != 1) c = gf_mul(f, c, lead_inv);
        if (q) q[k - db] = c;
        axpy_lazy(f, acc + (k - db), c, b, db);
    }
    for (size_t i = 0; i < db; i++) r[i] = i < la ? gf_reduce(f, acc[i]) : 0;
}

static void make_monic(const gf_t *f, gf_e *p, size_t len)
{
    if (len && p[len - 1] != 1) {
        gf_e inv = gf_inv(f, p[len - 1]);
        scale_vec(f, p, inv, p, len - 1);
        p[len - 1] = 1;
    }
}

/* Monic gcd of a (non-zero) and b by Euclid.  x and y hold max(la, lb) entries each, acc as
 * many; the result is left in x or y (made monic once, at the end) and returned through *out. */
static size_t poly_gcd(const gf_t *f, const gf_e *a, size_t la, const gf_e *b, size_t lb,
                       gf_e *x, gf_e *y, gf_w *acc, gf_e **out)
{
    size_t lx = la, ly = lb;
    memcpy(x, a, la * sizeof(gf_e));
    memcpy(y, b, lb * sizeof(gf_e));
    while (ly) { /* remainders stay non-monic: one product per quotient step, not per coefficient */
        gf_e *tp;
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
SA_TARGET_PCLMUL static void eval_many_hw(const gf_t *f, const gf_e *p, size_t lp, const gf_e *x, size_t n, gf_e *out)
{
    for (size_t s = 0; s < n; s += EVAL_BLOCK) {
        size_t b = n - s < EVAL_BLOCK ? n - s : EVAL_BLOCK;
        gf_e acc[EVAL_BLOCK];
        for (size_t j = 0; j < b; j++) acc[j] = p[lp - 1];
        for (size_t i = lp - 1; i-- > 0;)
            for (size_t j = 0; j < b; j++) acc[j] = mul_hw(f, acc[j], x[s + j]) ^ p[i];
        memcpy(out + s, acc, b * sizeof(gf_e));
    }
}
#endif

static void eval_many(const gf_t *f, const gf_e *p, size_t lp, const gf_e *x, size_t n, gf_e *out)
{
    if (lp == 0) {
        memset(out, 0, n * sizeof(gf_e));
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
            gf_e acc = p[lp - 1];
            if (!x[j]) {
                out[j] = p[0];
                continue;
            }
            gf_e lx = f->log[x[j]];
            for (size_t i = lp - 1; i-- > 0;) acc = (acc ? f->exp[f->log[acc] + lx] : 0) ^ p[i];
            out[j] = acc;
        }
        return;
    default:
        for (size_t j = 0; j < n; j++) {
            gf_w tab[16];
            gf_e acc = p[lp - 1];
            win_table(tab, x[j]);
            for (size_t i = lp - 1; i-- > 0;) acc = gf_reduce(f, win_mul(tab, acc)) ^ p[i];
            out[j] = acc;
        }
        return;
    }
}

/* p(z) / (z - root) for a root of p (synthetic division), in place; returns the new length. */
static size_t deflate(const gf_t *f, gf_e *p, size_t lp, gf_e root)
{
    gf_e carry = 0;
    for (size_t i = lp - 1; i > 0; i--) {
        carry = p[i] ^ gf_mul(f, root, carry); /* quotient coefficient i - 1 */
        p[i] = carry;                          /* p[i] is no longer needed */
    }
    /* p[1..lp) holds the quotient */
    memmove(p, p + 1, (lp - 1) * sizeof(gf_e));
    return lp - 1;
}

/* ------------------------------------------------------------------------------------------------
 * Berlekamp-Massey (binary): s[0..ns) = s_1..s_ns with s_2i = s_i^2
 * --------------------------------------------------------------------------------------------- */

/* c, b, tmp: ns + 2 entries each.  Returns the register length L and the trimmed length of c
 * in *lc (the connection polynomial Lambda, Lambda_0 = 1), or -1 if a length would overflow. */
static Py_ssize_t berlekamp_massey(const gf_t *f, const gf_e *s, size_t ns, gf_e *c, size_t *lc,
                                   gf_e *b, gf_e *tmp)
{
    size_t lenc = 1, lenb = 1, length = 0, gap = 1, cap = ns + 2;
    gf_e binv = 1;
    c[0] = b[0] = 1;
    for (size_t n = 0; n < ns; n++) {
        size_t top, newlen;
        gf_e d, coef;
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
            memcpy(tmp, c, lenc * sizeof(gf_e));
            for (size_t i = lenc; i < newlen; i++) c[i] = 0;
            for (size_t i = 0; i < lenb; i++) c[gap + i] ^= gf_mul(f, coef, b[i]);
            memcpy(b, tmp, lenc * sizeof(gf_e));
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

/* Z[k*L .. (k+1)*L) = z^(2^k) mod sigma for k = 0..m (sigma monic of degree L >= 2).  Each
 * step squares (p(z)^2 = sum p_i^2 z^(2i), squaring is GF(2)-linear) and reduces the
 * degree-(2L - 2) result modulo sigma.  Returns 1 iff Z_m = z. */
static int frobenius(const gf_t *f, const gf_e *sigma, size_t L, gf_e *Z, gf_w *acc)
{
    memset(Z, 0, L * sizeof(gf_e));
    Z[1] = 1;
    for (int k = 1; k <= f->m; k++) {
        const gf_e *prev = Z + (size_t)(k - 1) * L;
        gf_e *cur = Z + (size_t)k * L;
        memset(acc, 0, (2 * L - 1) * sizeof(gf_w));
        for (size_t i = 0; i < L; i++) acc[2 * i] = gf_sqr(f, prev[i]);
        for (size_t top = 2 * L - 1; top-- > L;) {
            gf_e c = gf_reduce(f, acc[top]);
            axpy_lazy(f, acc + (top - L), c, sigma, L);
        }
        for (size_t i = 0; i < L; i++) cur[i] = gf_reduce(f, acc[i]);
    }
    {
        const gf_e *last = Z + (size_t)f->m * L;
        for (size_t i = 0; i < L; i++)
            if (last[i] != (i == 1)) return 0;
    }
    return 1;
}

static int quadratic_roots(const gf_t *f, gf_e b, gf_e c, gf_e *roots, size_t *nroots, size_t cap)
{
    gf_e y, k, root, ib;
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
    gf_e *coef; /* arena */
    size_t used, cap;
    size_t *off, *len;
    size_t count, max_count;
} factor_list;

/* A factor of sigma: degree 1 and 2 are solved at once, larger ones wait for the next round. */
static int emit_factor(const gf_t *f, const gf_e *h, size_t lh, factor_list *next, gf_e *roots,
                       size_t *nroots, size_t cap)
{
    if (lh == 2) {
        if (*nroots >= cap) return ROOTS_UNSPLIT;
        roots[(*nroots)++] = h[0];
        return 0;
    }
    if (lh == 3) return quadratic_roots(f, h[1], h[0], roots, nroots, cap);
    if (next->used + lh > next->cap || next->count >= next->max_count) return ROOTS_MEMORY;
    memmove(next->coef + next->used, h, lh * sizeof(gf_e));
    next->off[next->count] = next->used;
    next->len[next->count] = lh;
    next->count++;
    next->used += lh;
    return 0;
}

/* The L roots of the monic sigma (length L + 1) into roots[0..L), or a ROOTS_* error. */
static Py_ssize_t find_roots(const gf_t *f, const gf_e *sigma, size_t L, gf_e beta, gf_e *roots)
{
    size_t nroots = 0, m = (size_t)f->m;
    Py_ssize_t status = 0;
    gf_e *Z = NULL, *T = NULL, *arena = NULL, *rbuf = NULL, *gx = NULL, *gy = NULL, *qbuf = NULL;
    gf_w *acc = NULL;
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
    Z = (gf_e *)xalloc((m + 1) * L, sizeof(gf_e));
    T = (gf_e *)xalloc(L + 1, sizeof(gf_e));
    arena = (gf_e *)xalloc(2 * (2 * L + 2), sizeof(gf_e));
    rbuf = (gf_e *)xalloc(L + 1, sizeof(gf_e));
    gx = (gf_e *)xalloc(L + 1, sizeof(gf_e));
    gy = (gf_e *)xalloc(L + 1, sizeof(gf_e));
    qbuf = (gf_e *)xalloc(L + 1, sizeof(gf_e));
    acc = (gf_w *)xalloc(2 * L + 2, sizeof(gf_w));
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
    memcpy(lists[0].coef, sigma, (L + 1) * sizeof(gf_e));
    lists[0].off[0] = 0;
    lists[0].len[0] = L + 1;
    lists[0].count = 1;
    lists[0].used = L + 1;
    {
        int cur = 0;
        gf_e b = beta;
        for (size_t round = 0; round < m && lists[cur].count; round++, b = gf_mulx(f, b)) {
            factor_list *pend = &lists[cur], *next = &lists[1 - cur];
            size_t lt;
            gf_e c = b;
            /* T = Tr(b z) mod sigma = sum_k b^(2^k) Z_k */
            memset(acc, 0, L * sizeof(gf_w));
            for (size_t k = 0; k < m; k++) {
                axpy_lazy(f, acc, c, Z + k * L, L);
                c = gf_sqr(f, c);
            }
            for (size_t i = 0; i < L; i++) T[i] = gf_reduce(f, acc[i]);
            lt = trim(T, L);
            next->used = next->count = 0;
            for (size_t j = 0; j < pend->count; j++) {
                const gf_e *h = pend->coef + pend->off[j];
                size_t lh = pend->len[j], lr, lg, lq;
                gf_e *g;
                if (lt >= lh) {
                    poly_divmod(f, T, lt, h, lh, NULL, rbuf, acc);
                    lr = trim(rbuf, lh - 1);
                } else {
                    memcpy(rbuf, T, lt * sizeof(gf_e));
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


static int cmp_u32(const void *a, const void *b)
{
    gf_e x = *(const gf_e *)a, y = *(const gf_e *)b;
    return (x > y) - (x < y);
}

/* Evaluating sigma at the sample's own elements (B \ A are roots there) costs n * L products and
 * removes those roots before the trace algorithm (about m * L^2 products for degree L). Worth
 * it only when the sample is small against m * L. */
#define SAMPLE_EVAL_DIVISOR 4

/* The roots of the locator of the set whose odd power sums are diff[0..t), i.e. D = A xor B;
 * sample (sorted, distinct) is B.  Returns |D| with the roots in *out (sorted, caller frees),
 * or a negative error. */
static Py_ssize_t recover_difference(const gf_t *f, const gf_e *diff, size_t t, const gf_e *sample,
                                     size_t n, gf_e beta, gf_e **out)
{
    size_t ns = 2 * t, lc = 0, L, nfound = 0;
    Py_ssize_t length, status = RECOVER_TOO_FAR;
    gf_e *s = (gf_e *)xalloc(ns, sizeof(gf_e));
    gf_e *c = (gf_e *)xalloc(ns + 2, sizeof(gf_e));
    gf_e *b = (gf_e *)xalloc(ns + 2, sizeof(gf_e));
    gf_e *tmp = (gf_e *)xalloc(ns + 2, sizeof(gf_e));
    gf_e *roots = NULL, *values = NULL, *check = NULL;
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
    roots = (gf_e *)xalloc(L + 1, sizeof(gf_e));
    check = (gf_e *)xalloc(t, sizeof(gf_e));
    if (!roots || !check) {
        status = ROOTS_MEMORY;
        goto done;
    }
    /* sigma(z) = z^L Lambda(1/z): reverse c in place (tmp) */
    for (size_t i = 0; i <= L; i++) tmp[i] = c[L - i];
    {
        size_t lsig = L + 1;
        if (L >= 3 && n && n <= (size_t)f->m * L / SAMPLE_EVAL_DIVISOR) {
            values = (gf_e *)xalloc(n, sizeof(gf_e));
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
    qsort(roots, L, sizeof(gf_e), cmp_u32);
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
    memset(check, 0, t * sizeof(gf_e));
    power_sums(f, check, roots, L, t);
    if (memcmp(check, diff, t * sizeof(gf_e)) != 0) {
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

typedef struct {
    PyObject_HEAD
    const gf_t *f;
} GF2mObject;

/* sketchauth.errors.DecodeError, looked up when the module is initialised: decoding failures
 * are raised as the library's own exception, never returned as sentinels. */
static int elem_from(PyObject *o, const gf_t *f, gf_e *out)
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
    *out = (gf_e)v;
    return 0;
}

/* A sequence of field elements as a uint32 array (at least `extra` spare entries). */
static gf_e *poly_from(PyObject *seq, const gf_t *f, size_t *len, size_t extra)
{
    PyObject *fast = PySequence_Fast(seq, "polynomial must be a sequence of ints");
    Py_ssize_t n;
    gf_e *out;
    if (!fast) return NULL;
    n = PySequence_Fast_GET_SIZE(fast);
    out = (gf_e *)xalloc((size_t)n + extra + 1, sizeof(gf_e));
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

static PyObject *list_from(const gf_e *p, size_t len)
{
    PyObject *out = PyList_New((Py_ssize_t)len);
    if (!out) return NULL;
    for (size_t i = 0; i < len; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(p[i]);
        if (!v) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, v);
    }
    return out;
}

/* Field elements from a word buffer, range-checked (a copy: later changes cannot bypass it). */
static gf_e *elems_from_words(const gf_t *f, const Py_buffer *view, size_t n)
{
    const uint64_t *w = (const uint64_t *)view->buf;
    const int is_signed = words_signed(view);
    gf_e *out = (gf_e *)xalloc(n + 1, sizeof(gf_e));
    if (!out) {
        PyErr_NoMemory();
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (w[i] > f->mask || (is_signed && (int64_t)w[i] < 0)) { /* negative int64: not 2^64 - k */
            PyMem_RawFree(out);
            PyErr_SetString(PyExc_ValueError, "array holds a value outside the field");
            return NULL;
        }
        out[i] = (gf_e)w[i];
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
    if (m < GF_PASS_MIN_M || m > GF_PASS_MAX_M)
        return PyErr_Format(PyExc_ValueError, "m must be in [%d, %d], got %d", GF_PASS_MIN_M, GF_PASS_MAX_M, m);
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
    gf_e x, y;
    if (!PyArg_ParseTuple(args, "OO", &a, &b) || elem_from(a, self->f, &x) < 0 || elem_from(b, self->f, &y) < 0)
        return NULL;
    return PyLong_FromUnsignedLongLong(gf_mul(self->f, x, y));
}

static PyObject *GF2m_sqr(GF2mObject *self, PyObject *a)
{
    gf_e x;
    if (elem_from(a, self->f, &x) < 0) return NULL;
    return PyLong_FromUnsignedLongLong(gf_sqr(self->f, x));
}

static PyObject *GF2m_inv(GF2mObject *self, PyObject *a)
{
    gf_e x;
    if (elem_from(a, self->f, &x) < 0) return NULL;
    if (!x) {
        PyErr_SetString(PyExc_ZeroDivisionError, "zero has no inverse");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(gf_inv(self->f, x));
}

static PyObject *GF2m_solve_artin_schreier(GF2mObject *self, PyObject *a)
{
    gf_e k, y;
    if (elem_from(a, self->f, &k) < 0) return NULL;
    if (solve_artin_schreier(self->f, k, &y)) {
        PyErr_SetString(DecodeErrorType, "quadratic factor has no root in the field");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(y);
}

static PyObject *GF2m_scale(GF2mObject *self, PyObject *args)
{
    PyObject *c_obj, *seq, *out;
    gf_e c, *v;
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
    gf_e *e, *acc;
    uint64_t *dst;
    if (!PyArg_ParseTuple(args, "On", &eo, &t)) return NULL;
    if (t < 0) return PyErr_Format(PyExc_ValueError, "t must be >= 0");
    if (get_words(eo, &ev, &n, "elements") < 0) return NULL;
    e = elems_from_words(self->f, &ev, n);
    PyBuffer_Release(&ev);
    if (!e) return NULL;
    acc = (gf_e *)xalloc((size_t)t + 1, sizeof(gf_e));
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
    gf_e *e, *acc;
    if (!PyArg_ParseTuple(args, "Onn", &eo, &t, &width)) return NULL;
    if (t < 0) return PyErr_Format(PyExc_ValueError, "t must be >= 0");
    if (width < 1 || width > 8 || 8 * width < (Py_ssize_t)self->f->m)
        return PyErr_Format(PyExc_ValueError, "width must hold a field element (1..8 bytes)");
    if (get_words(eo, &ev, &n, "elements") < 0) return NULL;
    e = elems_from_words(self->f, &ev, n);
    PyBuffer_Release(&ev);
    if (!e) return NULL;
    acc = (gf_e *)xalloc((size_t)t + 1, sizeof(gf_e));
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
    gf_e *e = NULL, *acc = NULL;
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
    acc = (gf_e *)xalloc(sets * (size_t)t + 1, sizeof(gf_e));
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
    gf_e *s, *c = NULL, *b = NULL, *tmp = NULL;
    Py_ssize_t length;
    PyObject *out = NULL, *poly;
    if (!(s = poly_from(seq, self->f, &ns, 0))) return NULL;
    c = (gf_e *)xalloc(ns + 2, sizeof(gf_e));
    b = (gf_e *)xalloc(ns + 2, sizeof(gf_e));
    tmp = (gf_e *)xalloc(ns + 2, sizeof(gf_e));
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
    gf_e *a = NULL, *b = NULL, *q = NULL, *r = NULL;
    gf_w *acc = NULL;
    size_t la, lb;
    if (!PyArg_ParseTuple(args, "OO", &ao, &bo)) return NULL;
    if (!(a = poly_from(ao, self->f, &la, 0)) || !(b = poly_from(bo, self->f, &lb, 0))) goto done;
    la = trim(a, la);
    lb = trim(b, lb);
    if (!lb) {
        PyErr_SetString(PyExc_ZeroDivisionError, "division by the zero polynomial");
        goto done;
    }
    q = (gf_e *)xalloc(la + 1, sizeof(gf_e));
    r = (gf_e *)xalloc(lb, sizeof(gf_e));
    acc = (gf_w *)xalloc(la + 1, sizeof(gf_w));
    if (!q || !r || !acc) {
        PyErr_NoMemory();
        goto done;
    }
    if (la < lb) {
        memcpy(r, a, la * sizeof(gf_e));
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
    gf_e *a = NULL, *b = NULL, *x = NULL, *y = NULL, *g;
    gf_w *acc = NULL;
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
        gf_e *t = a;
        a = b, b = t, la = lb, lb = 0;
    }
    cap = (la > lb ? la : lb) + 1;
    x = (gf_e *)xalloc(cap, sizeof(gf_e));
    y = (gf_e *)xalloc(cap, sizeof(gf_e));
    acc = (gf_w *)xalloc(cap, sizeof(gf_w));
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
    gf_e *a = NULL, *b = NULL, *r = NULL;
    gf_w *acc = NULL;
    size_t la, lb;
    if (!PyArg_ParseTuple(args, "OO", &ao, &bo)) return NULL;
    if (!(a = poly_from(ao, self->f, &la, 0)) || !(b = poly_from(bo, self->f, &lb, 0))) goto done;
    la = trim(a, la);
    lb = trim(b, lb);
    if (!la || !lb) {
        out = PyList_New(0);
        goto done;
    }
    acc = (gf_w *)xalloc(la + lb, sizeof(gf_w));
    r = (gf_e *)xalloc(la + lb, sizeof(gf_e));
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
    gf_e *p, x, v;
    size_t lp;
    if (!PyArg_ParseTuple(args, "OO", &po, &xo) || elem_from(xo, self->f, &x) < 0) return NULL;
    if (!(p = poly_from(po, self->f, &lp, 0))) return NULL;
    eval_many(self->f, p, lp, &x, 1, &v);
    PyMem_RawFree(p);
    return PyLong_FromUnsignedLongLong(v);
}

/* poly_eval_many(p, xs) -> bytearray of words p(x) */
static PyObject *GF2m_poly_eval_many(GF2mObject *self, PyObject *args)
{
    PyObject *po, *xo, *out = NULL;
    Py_buffer xv;
    gf_e *p = NULL, *x = NULL, *v = NULL;
    uint64_t *dst;
    size_t lp, n;
    if (!PyArg_ParseTuple(args, "OO", &po, &xo)) return NULL;
    if (get_words(xo, &xv, &n, "points") < 0) return NULL;
    if (!(p = poly_from(po, self->f, &lp, 0)) || !(x = elems_from_words(self->f, &xv, n))) goto done;
    if (!(v = (gf_e *)xalloc(n + 1, sizeof(gf_e)))) {
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
    gf_e *p, root;
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
    gf_e *sigma, beta, *roots;
    size_t ls;
    Py_ssize_t status;
    if (!PyArg_ParseTuple(args, "OO", &so, &bo) || elem_from(bo, self->f, &beta) < 0) return NULL;
    if (!beta) return PyErr_Format(PyExc_ValueError, "beta must be non-zero");
    if (!(sigma = poly_from(so, self->f, &ls, 0))) return NULL;
    if (!ls || sigma[ls - 1] != 1) {
        PyMem_RawFree(sigma);
        return PyErr_Format(PyExc_ValueError, "find_roots needs a monic polynomial");
    }
    roots = (gf_e *)xalloc(ls, sizeof(gf_e));
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
static PyObject *recover_owned(const gf_t *f, gf_e *diff, size_t t, gf_e *sample, size_t n, gf_e beta,
                               int add_sample)
{
    PyObject *out = NULL;
    gf_e *roots = NULL;
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
        uint64_t *dst; /* read as int64, or as uint64 at m = 64 */
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
    gf_e beta, *diff = NULL, *sample = NULL;
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
    gf_e beta = 0, *diff = NULL, *sample = NULL;
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
    if (!(diff = (gf_e *)xalloc(t + 1, sizeof(gf_e)))) {
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
        diff[k] = (gf_e)v;
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
static int sort_elems(gf_e *a, size_t n, int bits)
{
    gf_e *tmp, *src = a, *dst;
    size_t count[256];
    if (n <= 32) {
        for (size_t i = 1; i < n; i++) {
            gf_e v = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1] > v; j--) a[j] = a[j - 1];
            a[j] = v;
        }
        return 0;
    }
    if (!(tmp = (gf_e *)xalloc(n, sizeof(gf_e)))) return -1;
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
            gf_e *swap = src;
            src = dst;
            dst = swap;
        }
    }
    if (src != a) memcpy(a, src, n * sizeof(gf_e));
    PyMem_RawFree(tmp);
    return 0;
}

/* One Python int of a plain container as a non-zero field element (0 if it is none). */
static int plain_elem(const gf_t *f, PyObject *o, gf_e *out)
{
    int overflow = 0;
    long long v;
    if (!PyLong_CheckExact(o)) return 0;
    v = PyLong_AsLongLongAndOverflow(o, &overflow);
#if GF_WIDE
    if (overflow > 0) { /* 2^63 and above: an element of GF(2^64) when below 2^64 */
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (u == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (u > f->mask) return 0;
        *out = (gf_e)u;
        return 1;
    }
#endif
    if (overflow || v < 1 || (unsigned long long)v > f->mask) return 0;
    *out = (gf_e)v;
    return 1;
}

/* Elements of a buffer of 8-byte integers (one dimension, C-contiguous), each a non-zero field
 * element; 0 for any other buffer or value. */
static int plain_words(const gf_t *f, PyObject *obj, gf_e **out, size_t *n)
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
    if (!(*out = (gf_e *)xalloc(*n, sizeof(gf_e)))) {
        PyErr_NoMemory();
        ok = -1;
        goto done;
    }
    w = (const uint64_t *)view.buf;
    for (size_t k = 0; k < *n; k++) {
        /* int64 or uint64: a field element is positive in both (a negative int64 never is) */
        if (w[k] == 0 || w[k] > f->mask || (!strchr("QLN", *fmt) && (int64_t)w[k] < 0)) {
            PyMem_RawFree(*out);
            *out = NULL;
            goto done;
        }
        (*out)[k] = (gf_e)w[k];
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
static int plain_elements(const gf_t *f, PyObject *obj, int want_sorted, gf_e **out, size_t *n)
{
    Py_ssize_t size, k = 0;
    int distinct = PySet_CheckExact(obj) || PyFrozenSet_CheckExact(obj), rc;
    *out = NULL;
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        PyObject **items = PySequence_Fast_ITEMS(obj);
        size = PySequence_Fast_GET_SIZE(obj);
        if (size == 0 || (size_t)size > f->mask) return 0;
        if (!(*out = (gf_e *)xalloc((size_t)size, sizeof(gf_e)))) goto nomem;
        for (; k < size; k++)
            if (!plain_elem(f, items[k], *out + k)) break;
    } else if (distinct) {
        PyObject *it, *item;
        size = PySet_GET_SIZE(obj);
        if (size == 0 || (size_t)size > f->mask) return 0;
        if (!(*out = (gf_e *)xalloc((size_t)size, sizeof(gf_e)))) goto nomem;
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


/* A uniformly random non-zero field element from the operating system's generator (the trace
 * multiplier beta; getentropy reads what os.urandom and secrets read).  -1 with an exception. */
static int draw_beta(const gf_t *f, gf_e *beta)
{
#if SA_HAVE_ENTROPY
    gf_e v;
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
    gf_e *e = NULL, acc[64], *sums = acc;
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
    if ((size_t)t > sizeof acc / sizeof acc[0] && !(sums = (gf_e *)xalloc((size_t)t, sizeof(gf_e)))) {
        PyMem_RawFree(e);
        return PyErr_NoMemory();
    }
    memset(sums, 0, (size_t)t * sizeof(gf_e));
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
static int syndrome_relations(const gf_t *f, const gf_e *s, size_t t)
{
    const uint64_t n = f->mask, top = 2 * (uint64_t)t; /* odd indices below top are stored */
    for (int pass = 0; pass < 2; pass++)
        for (size_t k = 0; k < t; k++) {
            uint64_t i = 2 * (uint64_t)k + 1, member = i;
            size_t first = k;
            int c = 0, back = 0;
            do { /* the coset of i (i < n: t < 2^(m-1)); the first stored member and its distance */
                member = ((member << 1) | (member >> (f->m - 1))) & n; /* 2 member mod 2^m - 1 */
                c++;
                if ((member & 1) && member < top && (member - 1) / 2 < first) {
                    first = (size_t)((member - 1) / 2);
                    back = c;
                }
            } while (member != i);
            if (pass == 0 && first != k) { /* s_i = s_r^(2^(c - back)) with r = 2 first + 1 */
                gf_e v = s[first];
                for (int e = 0; e < c - back; e++) v = gf_sqr(f, v);
                if (v != s[k]) return 2;
            } else if (pass == 1 && first == k && c < f->m) { /* s_i in GF(2^c) */
                gf_e v = s[k];
                for (int e = 0; e < c; e++) v = gf_sqr(f, v);
                if (v != s[k]) return 3;
            }
        }
    return 0;
}


/* decode_plain(record, offset, width, t, sample, beta) -> bytearray | None: recover_payload with
 * the payload read in place (t words of `width` bytes at `offset` of the record, whose digest the
 * caller has checked) and checked as PinSketch._check_payload does (SketchFormatError, the same
 * words), and a plain sample (see plain_elements); None when the sample is not plain.
 * beta None: drawn here from the operating system. */
static PyObject *GF2m_decode_plain(GF2mObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const gf_t *f = self->f;
    Py_ssize_t offset, width, t;
    gf_e beta = 0, *diff, *sample = NULL;
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
    if (!(diff = (gf_e *)xalloc((size_t)t, sizeof(gf_e)))) {
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
        diff[k] = (gf_e)v;
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
    .tp_name = GF_TYPE_NAME,
    .tp_basicsize = sizeof(GF2mObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GF2m(m, kernel): GF(2^m) kernels ('pclmul', 'tables' for m <= 16, 'portable')",
    .tp_new = GF2m_new,
    .tp_repr = (reprfunc)GF2m_repr,
    .tp_methods = GF2m_methods,
    .tp_getset = GF2m_getset,
};


/* end of the pass */
#undef FIELDS
#undef GF2mObject
#undef GF2mType
#undef bitlen_w
#undef GF2m_berlekamp_massey
#undef GF2m_decode_plain
#undef GF2m_encode_plain
#undef GF2m_find_roots
#undef GF2m_get_kernel
#undef GF2m_get_m
#undef GF2m_getset
#undef GF2m_inv
#undef GF2m_methods
#undef GF2m_mul
#undef GF2m_new
#undef GF2m_poly_deflate
#undef GF2m_poly_divmod
#undef GF2m_poly_eval
#undef GF2m_poly_eval_many
#undef GF2m_poly_gcd
#undef GF2m_poly_mul
#undef GF2m_power_sums
#undef GF2m_power_sums_packed
#undef GF2m_power_sums_segments
#undef GF2m_recover
#undef GF2m_recover_payload
#undef GF2m_repr
#undef GF2m_scale
#undef GF2m_solve_artin_schreier
#undef GF2m_sqr
#undef GF2m_vmul
#undef axpy_hw
#undef axpy_lazy
#undef berlekamp_massey
#undef build_artin_schreier
#undef clmul_hw
#undef clmul_sw
#undef cmp_u32
#undef deflate
#undef dot_rev_hw
#undef dot_rev_lazy
#undef draw_beta
#undef elem_from
#undef elems_from_words
#undef emit_factor
#undef eval_many
#undef eval_many_hw
#undef factor_list
#undef find_roots
#undef frobenius
#undef get_field
#undef gf_inv
#undef gf_mul
#undef gf_mulx
#undef gf_reduce
#undef gf_sqr
#undef gf_t
#undef list_from
#undef make_monic
#undef mul_hw
#undef mul_tables
#undef plain_elem
#undef plain_elements
#undef plain_words
#undef poly_divmod
#undef poly_from
#undef poly_gcd
#undef power_sums
#undef power_sums_hw
#undef power_sums_portable
#undef power_sums_tables
#undef quadratic_roots
#undef recover_difference
#undef recover_owned
#undef reduce_slow
#undef scale_hw
#undef scale_vec
#undef solve_artin_schreier
#undef sort_elems
#undef syndrome_relations
#undef trim
#undef vmul64
#undef vmul_hw
#undef win_mul
#undef win_table
