/* The CPU FFT's plans: the factors of a length, the choice between mixed radix and
 * Bluestein's algorithm, the twiddle tables, and the bounded cache of plans shared by all
 * threads (cpu_fft_impl.h). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "backend/cpu/cpu_fft.h"
#include "backend/cpu/cpu_fft_impl.h"

#define CT_FFT_HALF_PI 1.57079632679489661923132169163975144L

/* e^{2 pi i k / n} in long double: k reduced modulo n, the angle's quadrant taken exactly in
 * integers (4k = q n + r, 2 pi k / n = (pi / 2) (q + r / n), exact for n < 2^61) and the
 * rest folded to [0, pi / 4] before sinl and cosl. */
static void unit_root(int64_t k, int64_t n, long double *re, long double *im) {
    k %= n;
    if (k < 0) k += n;
    int64_t q = 4 * k / n, r = 4 * k - q * n;
    long double c, s;
    if (2 * r <= n) {
        long double t = CT_FFT_HALF_PI * (long double)r / (long double)n;
        c = cosl(t);
        s = sinl(t);
    } else {
        long double t = CT_FFT_HALF_PI * (long double)(n - r) / (long double)n;
        c = sinl(t);
        s = cosl(t);
    }
    switch (q) { /* times i^q */
    case 0: *re = c, *im = s; break;
    case 1: *re = -s, *im = c; break;
    case 2: *re = -c, *im = -s; break;
    default: *re = s, *im = -c; break;
    }
}

/* The n-th roots of unity for a plan's tables: e^{2 pi i k / n} = hi[k / width] lo[k % width]
 * with width ~ sqrt(n), both factors from unit_root and their product in long double, so
 * that each root rounded to double is within about one unit in the last place (2 sqrt(n)
 * calls of sinl and cosl instead of n). */
typedef struct roots {
    int64_t n, width;
    long double *lo, *hi; /* (re, im) pairs */
} roots;

static bool roots_init(roots *r, int64_t n) {
    int64_t width = 1;
    while (width * width < n) width++;
    int64_t high = n / width + 1;
    *r = (roots){n, width, malloc((size_t)width * 2 * sizeof(long double)),
                 malloc((size_t)high * 2 * sizeof(long double))};
    if (!r->lo || !r->hi) return false;
    for (int64_t t = 0; t < width; t++) unit_root(t, n, &r->lo[2 * t], &r->lo[2 * t + 1]);
    for (int64_t t = 0; t < high; t++) unit_root(t * width, n, &r->hi[2 * t], &r->hi[2 * t + 1]);
    return true;
}

static void roots_free(roots *r) {
    free(r->lo);
    free(r->hi);
}

static void root_at(const roots *r, int64_t k, double *re, double *im) {
    k %= r->n;
    if (k < 0) k += r->n;
    const long double *a = r->hi + 2 * (k / r->width), *b = r->lo + 2 * (k % r->width);
    *re = (double)(a[0] * b[0] - a[1] * b[1]);
    *im = (double)(a[0] * b[1] + a[1] * b[0]);
}

static double *new_table(int64_t pairs) { return malloc((size_t)pairs * 2 * sizeof(double)); }

static void put(double *table, int64_t i, double re, double im) {
    table[2 * i] = re;
    table[2 * i + 1] = im;
}

static void plan_free(ct__fft_plan *plan) {
    if (!plan) return;
    for (int i = 0; i < plan->stages; i++) {
        free(plan->stage[i].tw);
        free(plan->stage[i].roots);
    }
    free(plan->chirp);
    free(plan->filter);
    plan_free(plan->inner);
    plan_free(plan->sub);
    free(plan->rtw);
    free(atomic_load(&plan->spare));
    free(plan);
}

/* n's factors, outermost stage first: 4s, a 2, 3s, 5s, then the other primes ascending. */
static int factorize(int64_t n, int *factors) {
    int count = 0;
    while (n % 4 == 0) factors[count++] = 4, n /= 4;
    if (n % 2 == 0) factors[count++] = 2, n /= 2;
    for (int64_t p = 3; p * p <= n; p += 2)
        while (n % p == 0)
            factors[count++] = p > CT_FFT_GENERIC_MAX ? CT_FFT_GENERIC_MAX + 1 : (int)p, n /= p;
    if (n > 1) factors[count++] = n > CT_FFT_GENERIC_MAX ? CT_FFT_GENERIC_MAX + 1 : (int)n;
    return count;
}

/* A rough cost per point of one stage of radix p, in units of a radix-2 butterfly. */
static double stage_cost(int p) {
    return p == 2 ? 1.0 : p == 3 || p == 4 ? 1.5 : p == 5 ? 2.5 : 0.5 * p;
}

static double mixed_cost(int64_t n, const int *factors, int count) {
    double per_point = 0;
    for (int i = 0; i < count; i++) per_point += stage_cost(factors[i]);
    return (double)n * per_point;
}

/* The smallest 2^a 3^b 5^c >= x. */
static int64_t smooth_at_least(int64_t x) {
    int64_t best = 1;
    while (best < x) best *= 2;
    for (int64_t f5 = 1; f5 < 2 * x; f5 *= 5)
        for (int64_t f35 = f5; f35 < 2 * x; f35 *= 3) {
            int64_t v = f35;
            while (v < x) v *= 2;
            if (v < best) best = v;
        }
    return best;
}

static ct__fft_plan *new_plan(int64_t n, int sign, ct__fft_kind kind) {
    ct__fft_plan *plan = calloc(1, sizeof *plan);
    if (plan) *plan = (ct__fft_plan){.n = n, .sign = sign, .kind = kind};
    return plan;
}

static ct__fft_plan *build_mixed(int64_t n, int sign, const int *factors, int count) {
    ct__fft_plan *plan = new_plan(n, sign, CT_FFT_C2C);
    roots w = {0};
    if (!plan || !roots_init(&w, n)) {
        roots_free(&w);
        plan_free(plan);
        return NULL;
    }
    int64_t m = n;
    for (int i = 0; i < count; i++) {
        int p = factors[i];
        m /= p;
        ct__fft_stage *g = &plan->stage[plan->stages++];
        *g = (ct__fft_stage){.p = p, .m = m, .tw = new_table((p - 1) * m)};
        if (p > 5) g->roots = new_table(p);
        if (!g->tw || (p > 5 && !g->roots)) {
            roots_free(&w);
            plan_free(plan);
            return NULL;
        }
        int64_t step = n / (p * m); /* w_{pm} = w_n^step */
        for (int64_t k = 0; k < m; k++)
            for (int r = 1; r < p; r++) {
                double re, im;
                root_at(&w, sign * r * k * step, &re, &im);
                put(g->tw, k * (p - 1) + r - 1, re, im);
            }
        for (int q = 0; p > 5 && q < p; q++) {
            double re, im;
            root_at(&w, sign * q * (n / p), &re, &im);
            put(g->roots, q, re, im);
        }
    }
    roots_free(&w);
    return plan;
}

/* Bluestein's tables: the chirp c_j = e^{sign pi i j^2 / n} (j^2 kept modulo 2n in integers)
 * and the filter FFT_M(b) / M, b_d = conj c_|d| at d modulo M for |d| < n, else 0. */
static ct__fft_plan *build_bluestein(int64_t n, int sign) {
    int64_t big = smooth_at_least(2 * n - 1);
    int factors[CT_FFT_MAX_STAGES];
    int count = factorize(big, factors);
    ct__fft_plan *plan = new_plan(n, sign, CT_FFT_C2C);
    if (!plan) return NULL;
    plan->blue_m = big;
    plan->inner = build_mixed(big, -1, factors, count);
    plan->chirp = new_table(n);
    plan->filter = new_table(big);
    double *b = new_table(big);
    roots w = {0};
    if (!roots_init(&w, 2 * n) || !plan->inner || !plan->chirp || !plan->filter || !b) {
        roots_free(&w);
        free(b);
        plan_free(plan);
        return NULL;
    }
    for (int64_t d = 0; d < big; d++) put(b, d, 0, 0);
    int64_t square = 0; /* j^2 modulo 2n */
    for (int64_t j = 0; j < n; j++) {
        double re, im;
        root_at(&w, sign * square, &re, &im);
        put(plan->chirp, j, re, im);
        put(b, j, re / (double)big, -im / (double)big);
        if (j) put(b, big - j, re / (double)big, -im / (double)big);
        square += 2 * j + 1;
        if (square >= 2 * n) square -= 2 * n;
    }
    ct__fft_exec_c2c(plan->inner, (ct__fft_input){b, 1, false}, plan->filter, NULL);
    free(b);
    roots_free(&w);
    plan->scratch = 2 * big + plan->inner->scratch;
    return plan;
}

static ct__fft_plan *build_c2c(int64_t n, int sign) {
    int factors[CT_FFT_MAX_STAGES];
    int count = factorize(n, factors);
    bool too_large = false;
    for (int i = 0; i < count; i++) too_large |= factors[i] > CT_FFT_GENERIC_MAX;
    if (count > 0 && (too_large || factors[count - 1] > 5)) {
        int64_t big = smooth_at_least(2 * n - 1);
        int big_factors[CT_FFT_MAX_STAGES];
        int big_count = factorize(big, big_factors);
        double bluestein = 2 * mixed_cost(big, big_factors, big_count) + 3.0 * big + 2.0 * n;
        if (too_large || bluestein < mixed_cost(n, factors, count)) return build_bluestein(n, sign);
    }
    return build_mixed(n, sign, factors, count);
}

static ct__fft_plan *build_real(int64_t n, ct__fft_kind kind) {
    int sign = kind == CT_FFT_R2C ? -1 : 1;
    ct__fft_plan *plan = new_plan(n, sign, kind);
    if (!plan) return NULL;
    int64_t h = n / 2;
    plan->sub = build_c2c(n % 2 ? n : h, sign);
    if (!plan->sub) {
        plan_free(plan);
        return NULL;
    }
    if (n % 2) {
        plan->scratch = 2 * n + plan->sub->scratch;
        return plan;
    }
    plan->rtw = new_table(h);
    roots w = {0};
    if (!roots_init(&w, n) || !plan->rtw) {
        roots_free(&w);
        plan_free(plan);
        return NULL;
    }
    for (int64_t k = 0; k < h; k++) {
        double re, im;
        root_at(&w, sign * k, &re, &im);
        put(plan->rtw, k, re, im);
    }
    roots_free(&w);
    plan->scratch = h + plan->sub->scratch;
    return plan;
}

/* The cache holds one reference to each of its plans; users one each more. The least
 * recently used plan leaves when a new one needs its place, and is freed when its last user
 * releases it. */
static ct__fft_plan *cache[CT_FFT_PLAN_CACHE_SIZE];
static int cache_count;
static uint64_t cache_clock;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static ct__fft_plan *find_locked(int64_t n, ct__fft_kind kind, int sign) {
    for (int i = 0; i < cache_count; i++) {
        ct__fft_plan *p = cache[i];
        if (p->n == n && p->kind == kind && p->sign == sign) {
            p->refs++;
            p->used = ++cache_clock;
            return p;
        }
    }
    return NULL;
}

ct__fft_plan *ct__fft_plan_get(int64_t n, ct__fft_kind kind, int sign) {
    if (kind != CT_FFT_C2C) sign = kind == CT_FFT_R2C ? -1 : 1;
    pthread_mutex_lock(&cache_lock);
    ct__fft_plan *found = find_locked(n, kind, sign);
    pthread_mutex_unlock(&cache_lock);
    if (found) return found;
    ct__fft_plan *made = kind == CT_FFT_C2C ? build_c2c(n, sign) : build_real(n, kind);
    if (!made) return NULL;
    ct__fft_plan *evicted = NULL;
    pthread_mutex_lock(&cache_lock);
    found = find_locked(n, kind, sign); /* another thread's, made meanwhile */
    if (!found) {
        made->refs = 2;
        made->used = ++cache_clock;
        int slot = cache_count;
        if (cache_count == CT_FFT_PLAN_CACHE_SIZE) {
            slot = 0;
            for (int i = 1; i < cache_count; i++)
                if (cache[i]->used < cache[slot]->used) slot = i;
            if (--cache[slot]->refs == 0) evicted = cache[slot];
        } else {
            cache_count++;
        }
        cache[slot] = made;
    }
    pthread_mutex_unlock(&cache_lock);
    plan_free(evicted);
    if (found) plan_free(made);
    return found ? found : made;
}

void ct__fft_plan_release(ct__fft_plan *plan) {
    if (!plan) return;
    pthread_mutex_lock(&cache_lock);
    bool last = --plan->refs == 0;
    pthread_mutex_unlock(&cache_lock);
    if (last) plan_free(plan);
}

int ct__fft_cached_plans(void) {
    pthread_mutex_lock(&cache_lock);
    int count = cache_count;
    pthread_mutex_unlock(&cache_lock);
    return count;
}
