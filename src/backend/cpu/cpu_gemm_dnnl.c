/* bf16 GEMM on the CPU's bf16 units through oneDNN (Debian's libdnnl; OpenBLAS 0.3.21 has no
 * sbgemm), and whether the CPU has them.
 *
 * ct__cpu_gemm_bf16 multiplies bf16 matrices (or f32 matrices whose values are bf16's, as the
 * convolution's f32 copies of bf16 tensors are: converted exactly) into an f32 result, with
 * f32 accumulation, when the processor has AVX512_BF16 or AMX-BF16 and the build has oneDNN
 * (CT_DNNL); otherwise it declines and the caller computes in f32 (emulated bf16). Its
 * matmul primitives are made once per shape and layout and kept (a training step makes the
 * same few products thousands of times; making a primitive costs tens of microseconds).
 * Each call brings its own scratchpad (oneDNN's user mode): the convolution calls from several
 * threads at once, and the library's shared scratchpad would be written by all of them.
 * CT_BF16_GEMM=off in the environment declines always, to measure the emulated path. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"
#include "ctensor/autocast.h"

#ifdef CT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

/* AVX512_BF16: every processor with AMX-BF16 has it too, and clang before 16 cannot name
 * "amx-bf16" in __builtin_cpu_supports. */
static bool hardware_bf16(void) { return __builtin_cpu_supports("avx512bf16"); }

/* A product's shape and layout: what a primitive is made for. */
typedef struct gemm_key {
    int64_t m, n, k, lda, ldb, ldc;
    bool ta, tb, accumulate;
} gemm_key;

#define CACHE_SIZE 256

/* A primitive and the scratchpad it wants. */
typedef struct gemm_primitive {
    dnnl_primitive_t primitive;
    dnnl_memory_desc_t scratch_md;
    size_t scratch_size;
} gemm_primitive;

static struct {
    gemm_key key;
    gemm_primitive p;
} cache[CACHE_SIZE];
static int cache_count;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine; /* NULL when oneDNN could not make one */
static bool enabled;

/* oneDNN's JIT kernels are registered with VTune by default: the first one made dlopens
 * libJitPI.so, which fails without VTune and leaves glibc's per-thread dlerror state on the
 * thread that made it, often an OpenMP thread of a worker; a thread that exits as the process
 * does then shows that state to LeakSanitizer as a leak. A user who profiles sets
 * DNNL_JIT_PROFILE, which this leaves alone. */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

static void setup(void) {
    if (!getenv("DNNL_JIT_PROFILE")) dnnl_set_jit_profiling_flags(DNNL_JIT_PROFILE_NONE);
}

void ct__cpu_dnnl_setup(void) { pthread_once(&setup_once, setup); }

static void init(void) {
    ct__cpu_dnnl_setup();
    const char *env = getenv("CT_BF16_GEMM");
    enabled = hardware_bf16() && !(env && strcmp(env, "off") == 0);
    if (enabled && dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
    enabled = enabled && engine;
}

static bool same_key(const gemm_key *a, const gemm_key *b) {
    return a->m == b->m && a->n == b->n && a->k == b->k && a->lda == b->lda && a->ldb == b->ldb &&
           a->ldc == b->ldc && a->ta == b->ta && a->tb == b->tb && a->accumulate == b->accumulate;
}

/* A row-major (rows x cols) matrix with leading dimension ld, read transposed when t. */
static bool matrix_desc(dnnl_memory_desc_t *md, int64_t rows, int64_t cols, int64_t ld, bool t,
                        dnnl_data_type_t type) {
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {t ? 1 : ld, t ? ld : 1};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, type, strides) == dnnl_success;
}

static bool make_primitive(const gemm_key *key, gemm_primitive *out) {
    dnnl_memory_desc_t a, b, c;
    if (!matrix_desc(&a, key->m, key->k, key->lda, key->ta, dnnl_bf16) ||
        !matrix_desc(&b, key->k, key->n, key->ldb, key->tb, dnnl_bf16) ||
        !matrix_desc(&c, key->m, key->n, key->ldc, false, dnnl_f32))
        return false;
    dnnl_matmul_desc_t desc;
    if (dnnl_matmul_desc_init(&desc, &a, &b, NULL, &c) != dnnl_success) return false;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t post = NULL;
    bool ok =
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    if (ok && key->accumulate)
        ok = dnnl_post_ops_create(&post) == dnnl_success &&
             dnnl_post_ops_append_sum(post, 1.0f) == dnnl_success &&
             dnnl_primitive_attr_set_post_ops(attr, post) == dnnl_success;
    dnnl_primitive_desc_t pd = NULL;
    out->primitive = NULL;
    if (ok && dnnl_primitive_desc_create(&pd, &desc, attr, engine, NULL) == dnnl_success) {
        const dnnl_memory_desc_t *scratch =
            dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
        if (scratch) {
            out->scratch_md = *scratch;
            out->scratch_size = dnnl_memory_desc_get_size(scratch);
            if (dnnl_primitive_create(&out->primitive, pd) != dnnl_success) out->primitive = NULL;
        }
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (post) dnnl_post_ops_destroy(post);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return out->primitive != NULL;
}

/* The cached primitive of key (made on first use); *owned when the cache is full and the
 * caller must destroy it. */
static bool primitive_for(const gemm_key *key, gemm_primitive *out, bool *owned) {
    *owned = false;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cache_count; i++) {
        if (same_key(&cache[i].key, key)) {
            *out = cache[i].p;
            pthread_mutex_unlock(&cache_lock);
            return true;
        }
    }
    bool made = make_primitive(key, out);
    if (made && cache_count < CACHE_SIZE)
        cache[cache_count].key = *key, cache[cache_count++].p = *out;
    else
        *owned = made;
    pthread_mutex_unlock(&cache_lock);
    return made;
}

static bool execute(const gemm_primitive *p, const gemm_key *key, const void *a, const void *b,
                    float *c) {
    dnnl_memory_desc_t da, db, dc;
    matrix_desc(&da, key->m, key->k, key->lda, key->ta, dnnl_bf16);
    matrix_desc(&db, key->k, key->n, key->ldb, key->tb, dnnl_bf16);
    matrix_desc(&dc, key->m, key->n, key->ldc, false, dnnl_f32);
    void *scratch = p->scratch_size ? ct__aligned_host_block(p->scratch_size) : NULL;
    dnnl_memory_t ma = NULL, mb = NULL, mc = NULL, ms = NULL;
    dnnl_stream_t stream = NULL;
    bool ok = (scratch || !p->scratch_size) &&
              dnnl_memory_create(&ma, &da, engine, (void *)a) == dnnl_success &&
              dnnl_memory_create(&mb, &db, engine, (void *)b) == dnnl_success &&
              dnnl_memory_create(&mc, &dc, engine, c) == dnnl_success &&
              dnnl_memory_create(&ms, &p->scratch_md, engine, scratch) == dnnl_success &&
              dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success;
    if (ok) {
        dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, ma},
                                   {DNNL_ARG_WEIGHTS, mb},
                                   {DNNL_ARG_DST, mc},
                                   {DNNL_ARG_SCRATCHPAD, ms}};
        ok = dnnl_primitive_execute(p->primitive, stream, 4, args) == dnnl_success &&
             dnnl_stream_wait(stream) == dnnl_success;
    }
    if (stream) dnnl_stream_destroy(stream);
    dnnl_memory_t mems[4] = {ma, mb, mc, ms};
    for (int i = 0; i < 4; i++)
        if (mems[i]) dnnl_memory_destroy(mems[i]);
    ct__free_mem(scratch);
    return ok;
}

/* The stored (rows x cols, leading dimension ld) f32 matrix as contiguous bf16. */
static uint16_t *to_bf16(const float *src, int64_t rows, int64_t cols, int64_t ld) {
    uint16_t *dst = ct__malloc((size_t)(rows * cols) * sizeof *dst);
    if (!dst) return NULL;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = ct__f32_to_bf16(src[i * ld + j]);
    return dst;
}

bool ct__cpu_gemm_bf16(bool f32_inputs, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const void *a, int64_t lda, const void *b, int64_t ldb, bool accumulate,
                       float *c, int64_t ldc) {
    pthread_once(&once, init);
    if (!enabled || m <= 0 || n <= 0 || k <= 0) return false;
    uint16_t *ca = NULL, *cb = NULL;
    if (f32_inputs) {
        int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
        ca = to_bf16(a, ar, ac, lda);
        cb = ca ? to_bf16(b, br, bc, ldb) : NULL;
        a = ca, b = cb, lda = ac, ldb = bc;
    }
    gemm_key key = {m, n, k, lda, ldb, ldc, ta, tb, accumulate};
    gemm_primitive p;
    bool owned = false, ok = false;
    if ((!f32_inputs || cb) && primitive_for(&key, &p, &owned)) ok = execute(&p, &key, a, b, c);
    if (owned) dnnl_primitive_destroy(p.primitive);
    ct__free_mem(ca);
    ct__free_mem(cb);
    return ok;
}

bool ct_cpu_has_native_bf16(void) {
    pthread_once(&once, init);
    return enabled;
}

#else

bool ct__cpu_gemm_bf16(bool f32_inputs, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                       const void *a, int64_t lda, const void *b, int64_t ldb, bool accumulate,
                       float *c, int64_t ldc) {
    (void)f32_inputs, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)a, (void)lda;
    (void)b, (void)ldb, (void)accumulate, (void)c, (void)ldc;
    return false;
}

bool ct_cpu_has_native_bf16(void) { return false; }

#endif
