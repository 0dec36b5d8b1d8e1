/* bench_f32_paths: whether oneDNN's f32 convolution and GEMM beat ctensor's f32 path (im2col +
 * OpenBLAS GEMM for convolution, OpenBLAS for matmul) on the shapes of `ctensor train --model
 * cnn|mlp` at batch 128 (issue 17, item 3).
 *
 * For each convolution of the CNN it times forward, backward data and backward weights: ours
 * through ct_conv2d and ct_backward_with (a backward figure is the forward-and-backward time
 * less the forward's), oneDNN's through its f32 primitives on the layouts it chooses, with the
 * reorders from and to the plain NCHW tensors ctensor holds counted in. For each product of
 * the two models (forward and both backward GEMMs of every linear layer) it times ct_matmul
 * against dnnl_sgemm. Each figure is the best of the runs after a warm-up run. "Ours" is
 * ct_conv2d as built, on the path CT_F32_CONV picks (onednn, im2col, or by shape): the figures that
 * moved f32 convolution onto oneDNN were taken while it was im2col + OpenBLAS; since then the
 * columns of a build with oneDNN time the same kernels, and a build without it (CT_DNNL=OFF) does
 * not build this program.
 *
 * Usage: bench_f32_paths [RUNS]   (OMP_NUM_THREADS as the caller sets it) */
#include <stdio.h>
#include <stdlib.h>

#include <ctensor/ctensor.h>
#include <oneapi/dnnl/dnnl.h>

#include "bench_clock.h"

#define BATCH 128

static int runs = 10;

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        if ((x) != dnnl_success) {                                                                 \
            fprintf(stderr, "bench_f32_paths: oneDNN failed at %s:%d: %s\n", __FILE__, __LINE__,   \
                    #x);                                                                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void need(const void *p, const char *what) {
    if (p) return;
    fprintf(stderr, "bench_f32_paths: %s: %s\n", what, ct_last_error());
    exit(1);
}

typedef struct conv_shape {
    const char *name;
    int64_t in_c, out_c, hw;
} conv_shape;

/* ---- oneDNN's side: one primitive with its reorders from and to plain layouts ---- */

static dnnl_engine_t engine;
static dnnl_stream_t stream;

typedef struct onednn_arg {
    int arg;
    bool output;
    dnnl_memory_t plain, chosen; /* chosen == plain: no reorder */
    dnnl_primitive_t reorder;
} onednn_arg;

typedef struct onednn_run {
    dnnl_primitive_t primitive;
    onednn_arg args[4];
    int n;
} onednn_run;

static void add_arg(onednn_run *r, const_dnnl_primitive_desc_t pd, int arg, dnnl_query_t query,
                    int index, bool output, const dnnl_memory_desc_t *plain) {
    onednn_arg *a = &r->args[r->n++];
    a->arg = arg, a->output = output;
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, query, index);
    CHECK(dnnl_memory_create(&a->plain, plain, engine, DNNL_MEMORY_ALLOCATE));
    a->chosen = a->plain;
    a->reorder = NULL;
    if (dnnl_memory_desc_equal(md, plain)) return;
    CHECK(dnnl_memory_create(&a->chosen, md, engine, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t rpd;
    CHECK(dnnl_reorder_primitive_desc_create(&rpd, output ? md : plain, engine, output ? plain : md,
                                             engine, NULL));
    CHECK(dnnl_primitive_create(&a->reorder, rpd));
    CHECK(dnnl_primitive_desc_destroy(rpd));
}

static void run_reorders(const onednn_run *r, bool outputs) {
    for (int i = 0; i < r->n; i++) {
        const onednn_arg *a = &r->args[i];
        if (!a->reorder || a->output != outputs) continue;
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, outputs ? a->chosen : a->plain},
                                   {DNNL_ARG_TO, outputs ? a->plain : a->chosen}};
        CHECK(dnnl_primitive_execute(a->reorder, stream, 2, args));
    }
}

static double time_onednn(const onednn_run *r) {
    dnnl_exec_arg_t args[4];
    for (int i = 0; i < r->n; i++) args[i] = (dnnl_exec_arg_t){r->args[i].arg, r->args[i].chosen};
    double best = 1e30;
    for (int run = 0; run <= runs; run++) {
        double start = bench_now();
        run_reorders(r, false);
        CHECK(dnnl_primitive_execute(r->primitive, stream, r->n, args));
        run_reorders(r, true);
        CHECK(dnnl_stream_wait(stream));
        double t = bench_now() - start;
        if (run > 0 && t < best) best = t;
    }
    return best;
}

static void free_onednn(onednn_run *r) {
    for (int i = 0; i < r->n; i++) {
        if (r->args[i].reorder) dnnl_primitive_destroy(r->args[i].reorder);
        if (r->args[i].chosen != r->args[i].plain) dnnl_memory_destroy(r->args[i].chosen);
        dnnl_memory_destroy(r->args[i].plain);
    }
    dnnl_primitive_destroy(r->primitive);
}

/* oneDNN's forward, backward data and backward weights times (seconds) of shape s in dt; false
 * where oneDNN has no convolution in dt on this CPU (bf16 before AVX-512). */
static bool onednn_conv(const conv_shape *s, dnnl_data_type_t dt, double t[3]) {
    dnnl_dims_t xd = {BATCH, s->in_c, s->hw, s->hw}, yd = {BATCH, s->out_c, s->hw, s->hw};
    dnnl_dims_t wd = {s->out_c, s->in_c, 3, 3}, bd = {s->out_c};
    dnnl_dims_t stride = {1, 1}, pad = {1, 1};
    dnnl_memory_desc_t x, y, w, b, xa, ya, wa;
    CHECK(dnnl_memory_desc_init_by_tag(&x, 4, xd, dt, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&y, 4, yd, dt, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&w, 4, wd, dt, dnnl_oihw));
    CHECK(dnnl_memory_desc_init_by_tag(&b, 1, bd, dt, dnnl_x));
    CHECK(dnnl_memory_desc_init_by_tag(&xa, 4, xd, dt, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&ya, 4, yd, dt, dnnl_format_tag_any));
    CHECK(dnnl_memory_desc_init_by_tag(&wa, 4, wd, dt, dnnl_format_tag_any));
    dnnl_convolution_desc_t fwd, bwd_data, bwd_weights;
    CHECK(dnnl_convolution_forward_desc_init(&fwd, dnnl_forward_training, dnnl_convolution_direct,
                                             &xa, &wa, &b, &ya, stride, pad, pad));
    CHECK(dnnl_convolution_backward_data_desc_init(&bwd_data, dnnl_convolution_direct, &xa, &wa,
                                                   &ya, stride, pad, pad));
    CHECK(dnnl_convolution_backward_weights_desc_init(&bwd_weights, dnnl_convolution_direct, &xa,
                                                      &wa, &b, &ya, stride, pad, pad));
    dnnl_primitive_desc_t pd[3];
    if (dnnl_primitive_desc_create(&pd[0], &fwd, NULL, engine, NULL) == dnnl_unimplemented)
        return false;
    CHECK(dnnl_primitive_desc_create(&pd[1], &bwd_data, NULL, engine, pd[0]));
    CHECK(dnnl_primitive_desc_create(&pd[2], &bwd_weights, NULL, engine, pd[0]));
    onednn_run r[3] = {0};
    add_arg(&r[0], pd[0], DNNL_ARG_SRC, dnnl_query_src_md, 0, false, &x);
    add_arg(&r[0], pd[0], DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, false, &w);
    add_arg(&r[0], pd[0], DNNL_ARG_BIAS, dnnl_query_weights_md, 1, false, &b);
    add_arg(&r[0], pd[0], DNNL_ARG_DST, dnnl_query_dst_md, 0, true, &y);
    add_arg(&r[1], pd[1], DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, false, &y);
    add_arg(&r[1], pd[1], DNNL_ARG_WEIGHTS, dnnl_query_weights_md, 0, false, &w);
    add_arg(&r[1], pd[1], DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, 0, true, &x);
    add_arg(&r[2], pd[2], DNNL_ARG_SRC, dnnl_query_src_md, 0, false, &x);
    add_arg(&r[2], pd[2], DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, 0, false, &y);
    add_arg(&r[2], pd[2], DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, 0, true, &w);
    add_arg(&r[2], pd[2], DNNL_ARG_DIFF_BIAS, dnnl_query_diff_weights_md, 1, true, &b);
    for (int i = 0; i < 3; i++) {
        CHECK(dnnl_primitive_create(&r[i].primitive, pd[i]));
        CHECK(dnnl_primitive_desc_destroy(pd[i]));
        if (i == 1 && s->in_c == 1) { /* the first layer's input needs no gradient */
            t[i] = 0;
        } else {
            t[i] = time_onednn(&r[i]);
        }
        free_onednn(&r[i]);
    }
    return true;
}

/* ---- ctensor's side ---- */

static ct_tensor *random_tensor(int ndim, const int64_t *shape, bool grad) {
    ct_tensor *t = ct_rand(ndim, shape, CT_F32, CT_CPU);
    need(t, "ct_rand");
    if (grad) ct_set_requires_grad(t, true);
    return t;
}

/* The best time of ct_conv2d on shape s, with backward (gradients of weight and bias, and of
 * the input but for the first layer) when backward is set. */
static double ours_conv_once(const conv_shape *s, bool backward, ct_tensor *const *t,
                             const ct_tensor *g) {
    ct_conv2d_options pad = {.padding = {1, 1}};
    double best = 1e30;
    for (int run = 0; run <= runs; run++) {
        ct_scope_begin();
        for (int i = 0; i < 3; i++) ct_zero_grad(t[i]);
        double start = bench_now();
        ct_tensor *y = ct_conv2d(t[0], t[1], t[2], &pad);
        need(y, "ct_conv2d");
        if (backward && ct_backward_with(y, g, false) != CT_OK) need(NULL, "ct_backward_with");
        double time = bench_now() - start;
        ct_scope_end();
        if (run > 0 && time < best) best = time;
    }
    (void)s;
    return best;
}

/* Our forward and backward (data and weights together) times of shape s. */
static void ours_conv(const conv_shape *s, double t[2]) {
    ct_tensor *args[3] = {random_tensor(4, (int64_t[]){BATCH, s->in_c, s->hw, s->hw}, s->in_c > 1),
                          random_tensor(4, (int64_t[]){s->out_c, s->in_c, 3, 3}, true),
                          random_tensor(1, (int64_t[]){s->out_c}, true)};
    ct_tensor *g = random_tensor(4, (int64_t[]){BATCH, s->out_c, s->hw, s->hw}, false);
    t[0] = ours_conv_once(s, false, args, g);
    t[1] = ours_conv_once(s, true, args, g) - t[0];
    for (int i = 0; i < 3; i++) ct_release(args[i]);
    ct_release(g);
}

/* ---- GEMM: C (m x n) = A (m x k) B (k x n), both sides on the same random data ---- */

static double time_gemm(int64_t m, int64_t n, int64_t k, bool onednn) {
    ct_tensor *a = random_tensor(2, (int64_t[]){m, k}, false);
    ct_tensor *b = random_tensor(2, (int64_t[]){k, n}, false);
    float *c = malloc(sizeof(float) * (size_t)(m * n));
    need(c, "malloc");
    double best = 1e30;
    for (int run = 0; run <= runs; run++) {
        ct_scope_begin();
        double start = bench_now();
        if (onednn) {
            CHECK(dnnl_sgemm('N', 'N', m, n, k, 1.0f, ct_data_ptr(a), k, ct_data_ptr(b), n, 0.0f, c,
                             n));
        } else {
            need(ct_matmul(a, b), "ct_matmul");
        }
        double time = bench_now() - start;
        ct_scope_end();
        if (run > 0 && time < best) best = time;
    }
    free(c);
    ct_release(a);
    ct_release(b);
    return best;
}

int main(int argc, char **argv) {
    if (argc > 1) runs = atoi(argv[1]);
    if (runs < 1) runs = 1;
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    static const conv_shape convs[] = {{"cnn conv1 1->32 28x28", 1, 32, 28},
                                       {"cnn conv2 32->64 14x14", 32, 64, 14}};
    printf("f32 at batch %d, best of %d runs (ms); backward = data + weights\n", BATCH, runs);
    printf("(bf16: oneDNN's bf16 primitives, for comparison; the CPU path of autocast bf16; n/a "
           "where oneDNN has none for this CPU)\n");
    printf("%-26s %9s %9s %9s %9s %9s %9s\n", "convolution", "ours fwd", "dnnl fwd", "bf16 fwd",
           "ours bwd", "dnnl bwd", "bf16 bwd");
    for (int i = 0; i < 2; i++) {
        double ours[2], dnnl[3], bf16[3];
        ours_conv(&convs[i], ours);
        if (!onednn_conv(&convs[i], dnnl_f32, dnnl)) {
            fprintf(stderr, "bench_f32_paths: oneDNN has no f32 convolution here\n");
            return 1;
        }
        char bf16_fwd[16] = "n/a", bf16_bwd[16] = "n/a";
        if (onednn_conv(&convs[i], dnnl_bf16, bf16)) {
            snprintf(bf16_fwd, sizeof bf16_fwd, "%.3f", bf16[0] * 1e3);
            snprintf(bf16_bwd, sizeof bf16_bwd, "%.3f", (bf16[1] + bf16[2]) * 1e3);
        }
        printf("%-26s %9.3f %9.3f %9s %9.3f %9.3f %9s\n", convs[i].name, ours[0] * 1e3,
               dnnl[0] * 1e3, bf16_fwd, ours[1] * 1e3, (dnnl[1] + dnnl[2]) * 1e3, bf16_bwd);
    }
    /* Every linear layer's forward (B x in . in x out), backward data (B x out . out x in) and
     * backward weights (in x B . B x out), as m n k. */
    static const struct {
        const char *name;
        int64_t in, out;
    } linears[] = {{"cnn fc1", 3136, 128},
                   {"cnn fc2", 128, 10},
                   {"mlp fc1", 784, 256},
                   {"mlp fc2", 256, 128},
                   {"mlp fc3", 128, 10}};
    printf("%-26s %9s %9s\n", "gemm m x n x k", "ours", "dnnl");
    for (int i = 0; i < 5; i++) {
        int64_t in = linears[i].in, out = linears[i].out;
        int64_t mnk[3][3] = {{BATCH, out, in}, {BATCH, in, out}, {in, out, BATCH}};
        for (int j = 0; j < 3; j++) {
            char label[64];
            snprintf(label, sizeof label, "%s %lldx%lldx%lld", linears[i].name,
                     (long long)mnk[j][0], (long long)mnk[j][1], (long long)mnk[j][2]);
            printf("%-26s %9.3f %9.3f\n", label,
                   time_gemm(mnk[j][0], mnk[j][1], mnk[j][2], false) * 1e3,
                   time_gemm(mnk[j][0], mnk[j][1], mnk[j][2], true) * 1e3);
        }
    }
    dnnl_stream_destroy(stream);
    dnnl_engine_destroy(engine);
    return 0;
}
