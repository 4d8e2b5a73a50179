/*
 * Benchmark-only C (never part of the package): compiled by bench_native.py into a temporary
 * directory with the machine's compiler, loaded with ctypes.
 *
 * 1. Naive floors -- what a straightforward C port of the vault arithmetic costs, with plain
 *    `%` reductions and no algorithmic tricks:
 *      naive_bw          Berlekamp-Welch: the (2e + k)-unknown system by Gauss-Jordan, Q / E,
 *                        agreement count (the algorithm of _prime_field.berlekamp_welch);
 *      naive_vault_lock  F by Horner at every point 0..p-1, chaff u + [u >= F(x)] elsewhere;
 *      naive_vault_read  Berlekamp-Welch on the sample's points, then F by Horner at every
 *                        point and the agreeing points collected.
 * 2. A timing shim for a peer library (minisketch), called through function pointers that the
 *    benchmark takes from the shared library the user names on the command line: the whole
 *    encode or decode pipeline runs `reps` times in C and each run is timed here, so no Python
 *    or ctypes overhead is charged to the peer (nor its one-off object construction).
 *
 * Every *_times function writes two durations in nanoseconds per repetition into `times`: wall
 * time (times[2r]) and the thread's CPU time (times[2r + 1]; not counting time spent descheduled,
 * which dominates wall time on a busy machine), each per call of a batch of set_inner_calls().
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Calls per timed sample (short calls are timed in batches so the clock reads do not count). */
static int inner_calls = 1;

void set_inner_calls(int n) { inner_calls = n > 0 ? n : 1; }

#define TIMED_BEGIN                                                                                              \
    int64_t wall0_ = clock_ns(CLOCK_MONOTONIC), cpu0_ = clock_ns(CLOCK_THREAD_CPUTIME_ID);                       \
    for (int inner_ = 0; inner_ < inner_calls; inner_++) {
#define TIMED_END(r)                                                                                             \
    }                                                                                                             \
    times[2 * (r)] = (clock_ns(CLOCK_MONOTONIC) - wall0_) / inner_calls;                                          \
    times[2 * (r) + 1] = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0_) / inner_calls

/* ---- naive prime-field floors --------------------------------------------------------------- */

static int64_t pw(int64_t a, int64_t e, int64_t p)
{
    int64_t r = 1 % p;
    a %= p;
    while (e) {
        if (e & 1) r = r * a % p;
        a = a * a % p;
        e >>= 1;
    }
    return r;
}

static int64_t horner(const int64_t *c, int k, int64_t x, int64_t p)
{
    int64_t acc = 0;
    for (int j = k - 1; j >= 0; j--) acc = (acc * x + c[j]) % p;
    return acc;
}

/* Returns 1 and F in coeffs (k values) when some F of degree < k is within (n - k) / 2 of the
 * points. scratch: n * (n + 1) + n int64. */
int naive_bw(const int64_t *xs, const int64_t *ys, int n, int k, int64_t p, int64_t *coeffs, int64_t *scratch)
{
    int e = (n - k) / 2, u = 2 * e + k, w = u + 1, row = 0, agree = 0;
    int64_t *M = scratch, *x = scratch + (size_t)n * w;
    int *pivot = (int *)calloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) {
        int64_t power = 1;
        for (int j = 0; j < e + k; j++) {
            M[i * w + j] = power;
            if (j < e) M[i * w + e + k + j] = (p - ys[i]) % p * power % p;
            if (j == e) M[i * w + u] = ys[i] * power % p;
            power = power * xs[i] % p;
        }
    }
    for (int col = 0; col < u && row < n; col++) {
        int piv = row;
        while (piv < n && M[piv * w + col] == 0) piv++;
        if (piv == n) continue;
        for (int j = 0; j < w; j++) {
            int64_t t = M[row * w + j];
            M[row * w + j] = M[piv * w + j];
            M[piv * w + j] = t;
        }
        int64_t inv = pw(M[row * w + col], p - 2, p);
        for (int j = 0; j < w; j++) M[row * w + j] = M[row * w + j] * inv % p;
        for (int i = 0; i < n; i++) {
            int64_t f = M[i * w + col];
            if (i == row || f == 0) continue;
            for (int j = 0; j < w; j++) M[i * w + j] = ((M[i * w + j] - f * M[row * w + j]) % p + p) % p;
        }
        pivot[row++] = col;
    }
    for (int i = row; i < n; i++)
        if (M[i * w + u]) {
            free(pivot);
            return 0;
        }
    memset(x, 0, sizeof(int64_t) * (size_t)u);
    for (int r = 0; r < row; r++) x[pivot[r]] = M[r * w + u];
    free(pivot);
    /* F = Q / E (E monic of degree e) */
    int64_t *Q = x, *E = x + e + k;
    for (int s = k - 1; s >= 0; s--) {
        int64_t lead = Q[s + e];
        coeffs[s] = lead;
        for (int j = 0; j < e; j++) Q[s + j] = ((Q[s + j] - lead * E[j]) % p + p) % p;
        Q[s + e] = 0;
    }
    for (int j = 0; j < e; j++)
        if (Q[j]) return 0;
    for (int i = 0; i < n; i++) agree += horner(coeffs, k, xs[i], p) == ys[i];
    return agree >= n - e;
}

int64_t naive_bw_times(const int64_t *xs, const int64_t *ys, int n, int k, int64_t p, int64_t *coeffs, int reps,
                       int64_t *times)
{
    int64_t *scratch = (int64_t *)malloc(sizeof(int64_t) * ((size_t)n * (n + 1) + n + 1));
    int ok = 0;
    for (int r = 0; r < reps; r++) {
        TIMED_BEGIN;
        ok = naive_bw(xs, ys, n, k, p, coeffs, scratch);
        TIMED_END(r);
    }
    free(scratch);
    return ok;
}

/* vault lock: values[x] = F(x) on the genuine points (flags), chaff from offsets elsewhere */
int64_t naive_vault_lock_times(const int64_t *coeffs, int k, int64_t p, const uint8_t *genuine,
                               const int64_t *offsets, int64_t *values, int reps, int64_t *times)
{
    for (int r = 0; r < reps; r++) {
        TIMED_BEGIN;
        int64_t o = 0;
        for (int64_t x = 0; x < p; x++) {
            int64_t f = horner(coeffs, k, x, p);
            if (genuine[x]) {
                values[x] = f;
            } else {
                int64_t u = offsets[o++];
                values[x] = u + (u >= f);
            }
        }
        TIMED_END(r);
    }
    return 0;
}

/* vault read-back: Berlekamp-Welch on the sample, then the agreeing points; returns how many */
int64_t naive_vault_read_times(const int64_t *values, int64_t p, const int64_t *sample, int n, int k,
                               int64_t *found, int reps, int64_t *times)
{
    int64_t *xs = (int64_t *)malloc(sizeof(int64_t) * (size_t)n), *ys = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
    int64_t *coeffs = (int64_t *)malloc(sizeof(int64_t) * (size_t)k);
    int64_t *scratch = (int64_t *)malloc(sizeof(int64_t) * ((size_t)n * (n + 1) + n + 1));
    int64_t count = 0;
    for (int r = 0; r < reps; r++) {
        TIMED_BEGIN;
        for (int i = 0; i < n; i++) {
            xs[i] = sample[i];
            ys[i] = values[sample[i]];
        }
        count = -1;
        if (naive_bw(xs, ys, n, k, p, coeffs, scratch)) {
            count = 0;
            for (int64_t x = 0; x < p; x++)
                if (horner(coeffs, k, x, p) == values[x] && count < n + 1) found[count++] = x;
        }
        TIMED_END(r);
    }
    free(xs);
    free(ys);
    free(coeffs);
    free(scratch);
    return count;
}

/* ---- peer shim: minisketch through function pointers ------------------------------------------ */

typedef void *(*create_fn)(uint32_t, uint32_t, size_t);
typedef void (*destroy_fn)(void *);
typedef void (*add_fn)(void *, uint64_t);
typedef void (*serialize_fn)(const void *, unsigned char *);
typedef void (*deserialize_fn)(void *, const unsigned char *);
typedef long (*decode_fn)(const void *, size_t, uint64_t *);

/* fns: create, destroy, add_uint64, serialize, deserialize, decode.  The peer's sketch object is
 * created once, outside the timed region (its constructor seeds a random generator, a cost a
 * long-running caller pays once); each timed encode resets it by loading an all-zero sketch. */
int64_t peer_encode_times(void **fns, uint32_t bits, uint32_t impl, size_t capacity, const uint64_t *elements,
                          size_t n, unsigned char *out, size_t out_size, int reps, int64_t *times)
{
    void *sketch = ((create_fn)fns[0])(bits, impl, capacity);
    unsigned char *zero = (unsigned char *)calloc(out_size, 1);
    for (int r = 0; r < reps; r++) {
        TIMED_BEGIN;
        ((deserialize_fn)fns[4])(sketch, zero);
        for (size_t i = 0; i < n; i++) ((add_fn)fns[2])(sketch, elements[i]);
        ((serialize_fn)fns[3])(sketch, out);
        TIMED_END(r);
    }
    ((destroy_fn)fns[1])(sketch);
    free(zero);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The decode a caller of the peer writes: load the sketch of A, add the sample B (sorted),
 * D = A xor B by the peer, then A = B xor D (sorted) into result; returns |A| or -1. */
int64_t peer_decode_times(void **fns, uint32_t bits, uint32_t impl, size_t capacity, const unsigned char *serialized,
                          const uint64_t *sample, size_t n, uint64_t *result, int reps, int64_t *times)
{
    uint64_t *diff = (uint64_t *)malloc(sizeof(uint64_t) * (capacity + 1));
    void *sketch = ((create_fn)fns[0])(bits, impl, capacity);
    int64_t count = -1;
    for (int r = 0; r < reps; r++) {
        TIMED_BEGIN;
        ((deserialize_fn)fns[4])(sketch, serialized);
        for (size_t i = 0; i < n; i++) ((add_fn)fns[2])(sketch, sample[i]);
        long found = ((decode_fn)fns[5])(sketch, capacity, diff);
        count = -1;
        if (found >= 0) {
            size_t i = 0, j = 0, k = 0, L = (size_t)found;
            qsort(diff, L, sizeof(uint64_t), cmp_u64);
            while (i < n || j < L) {
                if (j == L || (i < n && sample[i] < diff[j]))
                    result[k++] = sample[i++];
                else if (i == n || diff[j] < sample[i])
                    result[k++] = diff[j++];
                else
                    i++, j++;
            }
            count = (int64_t)k;
        }
        TIMED_END(r);
    }
    ((destroy_fn)fns[1])(sketch);
    free(diff);
    return count;
}
