/* 2-d convolution through oneDNN's convolution primitives: forward, backward data and
 * backward weights, in bf16 on the CPU's bf16 units (bf16 in and
 * out with f32 accumulation inside oneDNN, as PyTorch's CPU autocast runs it) and in f32.
 *
 * The op layer hands bf16 tensors here only when ct__cpu_conv2d_native said yes for the
 * geometry (the CPU has AVX512_BF16 or AMX-BF16, the build has oneDNN, and oneDNN made the
 * primitives); otherwise it computes in f32. cpu_conv.c sends f32 convolutions here where
 * oneDNN made their primitives and ct__cpu_conv2d_f32_on_onednn agrees: on the two models of
 * `ctensor train` its f32 kernels measured faster than im2col + OpenBLAS
 * (bench/bench_f32_paths.c), but for a single input channel on CPUs without AVX-512. Tensors stay
 * in ctensor's plain NCHW (or channels-last NHWC) and OIHW layouts (GOIHW with groups); where a
 * primitive chose a blocked
 * layout for an argument (oneDNN's fast kernels mostly do), each call reorders it into the
 * workspace and back (ONEDNN_VERBOSE=1 lists them). Primitives are made once per geometry and
 * kind and kept (a training step runs the same few convolutions thousands of times; making
 * one costs far more than running it on a small batch), with the direct algorithm or, for f32
 * 3x3 stride-1 convolutions of 32 channels and more under ct_set_matmul_precision("high"),
 * Winograd (tries_winograd). Each call's
 * scratchpad is the workspace the op layer took from the device pool (oneDNN's user scratchpad
 * mode), so calls from several threads at once do not share scratch. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backend/conv_args_impl.h"
#include "backend/cpu/cpu_impl.h"
#include "core/dtype_impl.h"
#include "core/error_impl.h"
#include "ctensor/autocast.h"

#ifdef CT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>

typedef enum conv_kind { FORWARD, BACKWARD_DATA, BACKWARD_WEIGHTS, KIND_COUNT } conv_kind;

/* A convolution's geometry: what its primitives are made for. */
typedef struct conv_key {
    int64_t batch, in_channels, in_h, in_w, out_channels, kernel_h, kernel_w, out_h, out_w;
    int64_t stride[2], padding[2], dilation[2], groups, dtype;
    /* bias: forward adds one; reduced: f32 may round more for speed (allow_tf32); nhwc: the
     * activations are channels-last. */
    bool bias, reduced, nhwc;
} conv_key;

/* One tensor argument of a primitive: the layout the primitive chose for it (md) and, where
 * that is not ctensor's plain one, the reorder between the two (plain to md for an input,
 * md to plain for an output) and where in the workspace the reordered copy lives. */
typedef struct conv_slot {
    int arg;
    bool output;
    dnnl_memory_desc_t md;
    dnnl_primitive_t reorder; /* NULL: the primitive reads or writes the plain tensor */
    size_t offset, size;
    /* Backward weights' gradient of the output, in the layout backward data reordered it
     * into, at the same place: after backward data ran, the copy is there already. */
    bool reuses_data_copy;
} conv_slot;

#define MAX_SLOTS 4

/* A primitive, its arguments, and the scratchpad it (and its reorders) want. */
typedef struct conv_step {
    dnnl_primitive_t primitive;
    conv_slot slot[MAX_SLOTS];
    int slots;
    dnnl_memory_desc_t scratch_md;
} conv_step;

/* A geometry's three steps; made says whether oneDNN made all of them, winograd whether with
 * the Winograd algorithm (else direct), for all three alike. The workspace holds
 * the scratchpad (scratch bytes, shared by every primitive, which run one after another),
 * then the reordered copies of the forward (forward_bytes) or of the larger backward step
 * (backward_bytes: the two run one after the other, so their copies share the room, except
 * that the output gradient's copy, backward data's first, stays for backward weights where
 * both chose one layout for it). A backward geometry is made without the bias: the op layer
 * sums the bias's gradient itself. */
typedef struct conv_entry {
    conv_key key;
    bool made, winograd;
    conv_step step[KIND_COUNT];
    size_t scratch, forward_bytes, backward_bytes;
} conv_entry;

#define CACHE_SIZE 128

static conv_entry cache[CACHE_SIZE];
static int cache_count;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine; /* NULL when oneDNN could not make one */

static void init(void) {
    ct__cpu_dnnl_setup();
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}

static conv_key key_of(const ct__conv2d_args *a, bool bias) {
    conv_key k;
    memset(&k, 0, sizeof k); /* padding bytes too: keys compare with memcmp */
    k.batch = a->batch, k.in_channels = a->in_channels, k.in_h = a->in_h, k.in_w = a->in_w;
    k.out_channels = a->out_channels, k.kernel_h = a->kernel_h, k.kernel_w = a->kernel_w;
    k.out_h = a->out_h, k.out_w = a->out_w, k.groups = a->groups, k.bias = bias;
    k.dtype = a->dtype;
    k.reduced = a->allow_tf32 && a->dtype == CT_F32;
    k.nhwc = a->channels_last;
    for (int i = 0; i < 2; i++)
        k.stride[i] = a->stride[i], k.padding[i] = a->padding[i], k.dilation[i] = a->dilation[i];
    return k;
}

/* The memory descriptors of x, weight, bias and y, in ctensor's plain layouts or, with any,
 * in the layouts oneDNN chooses (the bias stays plain). Channels-last activations are
 * given as NHWC either way: oneDNN's NHWC kernels take them as they are, where a layout it
 * chose would cost a reorder each way. */
typedef struct conv_descs {
    dnnl_memory_desc_t x, w, b, y;
} conv_descs;

static bool make_descs(const conv_key *k, bool any, conv_descs *d) {
    dnnl_dims_t x = {k->batch, k->in_channels, k->in_h, k->in_w};
    dnnl_dims_t y = {k->batch, k->out_channels, k->out_h, k->out_w};
    dnnl_dims_t b = {k->out_channels};
    int64_t g = k->groups;
    dnnl_dims_t w = {g, k->out_channels / g, k->in_channels / g, k->kernel_h, k->kernel_w};
    bool grouped = g > 1;
    dnnl_format_tag_t plain = k->nhwc ? dnnl_nhwc : any ? dnnl_format_tag_any : dnnl_nchw;
    dnnl_format_tag_t wplain = any ? dnnl_format_tag_any : grouped ? dnnl_goihw : dnnl_oihw;
    dnnl_data_type_t t = k->dtype == CT_BF16 ? dnnl_bf16 : dnnl_f32;
    return dnnl_memory_desc_init_by_tag(&d->x, 4, x, t, plain) == dnnl_success &&
           dnnl_memory_desc_init_by_tag(&d->y, 4, y, t, plain) == dnnl_success &&
           dnnl_memory_desc_init_by_tag(&d->b, 1, b, t, dnnl_x) == dnnl_success &&
           dnnl_memory_desc_init_by_tag(&d->w, grouped ? 5 : 4, grouped ? w : w + 1, t, wplain) ==
               dnnl_success;
}

/* The plain descriptor of a primitive argument. */
static const dnnl_memory_desc_t *plain_md(const conv_descs *d, int arg) {
    if (arg == DNNL_ARG_SRC || arg == DNNL_ARG_DIFF_SRC) return &d->x;
    if (arg == DNNL_ARG_WEIGHTS || arg == DNNL_ARG_DIFF_WEIGHTS) return &d->w;
    if (arg == DNNL_ARG_BIAS || arg == DNNL_ARG_DIFF_BIAS) return &d->b;
    return &d->y;
}

/* The padding after the image that makes oneDNN's output size ctensor's (which rounds the
 * last partial stride down): negative where the last window ends before the image does (a
 * 1x1 stride-2 convolution of an even size, say), which oneDNN takes as rows and columns it
 * never reads. */
static void right_padding(const conv_key *k, dnnl_dims_t r) {
    int64_t in[2] = {k->in_h, k->in_w}, out[2] = {k->out_h, k->out_w};
    int64_t kernel[2] = {k->kernel_h, k->kernel_w};
    for (int i = 0; i < 2; i++) {
        int64_t span = (kernel[i] - 1) * k->dilation[i] + 1;
        r[i] = (out[i] - 1) * k->stride[i] + span - in[i] - k->padding[i];
    }
}

/* The operation descriptor of one kind with algorithm alg, on layouts oneDNN chooses. */
static bool op_desc(const conv_key *k, conv_kind kind, dnnl_alg_kind_t alg,
                    dnnl_convolution_desc_t *op) {
    dnnl_dims_t s = {k->stride[0], k->stride[1]}, l = {k->padding[0], k->padding[1]}, r;
    dnnl_dims_t dil = {k->dilation[0] - 1, k->dilation[1] - 1}; /* oneDNN: 0 is none */
    conv_descs d;
    right_padding(k, r);
    if (!make_descs(k, true, &d)) return false;
    const dnnl_memory_desc_t *b = k->bias ? &d.b : NULL;
    dnnl_status_t st =
        kind == FORWARD ? dnnl_dilated_convolution_forward_desc_init(
                              op, dnnl_forward_training, alg, &d.x, &d.w, b, &d.y, s, dil, l, r)
        : kind == BACKWARD_DATA
            ? dnnl_dilated_convolution_backward_data_desc_init(op, alg, &d.x, &d.w, &d.y, s, dil, l,
                                                               r)
            : dnnl_dilated_convolution_backward_weights_desc_init(op, alg, &d.x, &d.w, b, &d.y, s,
                                                                  dil, l, r);
    return st == dnnl_success;
}

/* The arguments of each kind: (argument, query, output). */
static const struct {
    int arg;
    dnnl_query_t query;
    bool output;
} kind_args[KIND_COUNT][MAX_SLOTS] = {
    {{DNNL_ARG_SRC, dnnl_query_src_md, false},
     {DNNL_ARG_WEIGHTS, dnnl_query_weights_md, false},
     {DNNL_ARG_DST, dnnl_query_dst_md, true},
     {DNNL_ARG_BIAS, dnnl_query_weights_md, false}},
    {{DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, false},
     {DNNL_ARG_WEIGHTS, dnnl_query_weights_md, false},
     {DNNL_ARG_DIFF_SRC, dnnl_query_diff_src_md, true},
     {0, dnnl_query_undef, false}},
    {{DNNL_ARG_SRC, dnnl_query_src_md, false},
     {DNNL_ARG_DIFF_DST, dnnl_query_diff_dst_md, false},
     {DNNL_ARG_DIFF_WEIGHTS, dnnl_query_diff_weights_md, true},
     {DNNL_ARG_DIFF_BIAS, dnnl_query_diff_weights_md, true}},
};

static size_t aligned(size_t n) { return (n + 63) & ~(size_t)63; }

/* The larger of *scratch and the scratchpad pd wants. */
static void grow_scratch(const_dnnl_primitive_desc_t pd, size_t *scratch) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t size = md ? dnnl_memory_desc_get_size(md) : 0;
    if (size > *scratch) *scratch = size;
}

/* The reorder between plain and the chosen layout of slot s, when they differ. */
static bool make_reorder(const conv_descs *d, dnnl_primitive_attr_t attr, conv_slot *s,
                         size_t *scratch) {
    const dnnl_memory_desc_t *plain = plain_md(d, s->arg);
    if (dnnl_memory_desc_equal(plain, &s->md)) return true;
    dnnl_primitive_desc_t pd = NULL;
    const dnnl_memory_desc_t *from = s->output ? &s->md : plain, *to = s->output ? plain : &s->md;
    bool ok =
        dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, attr) == dnnl_success &&
        dnnl_primitive_create(&s->reorder, pd) == dnnl_success;
    if (ok) grow_scratch(pd, scratch);
    if (pd) dnnl_primitive_desc_destroy(pd);
    s->size = dnnl_memory_desc_get_size(&s->md);
    return ok;
}

/* Backward data's copy of the output gradient that backward weights can read as it is: the
 * first slot (at offset 0), reordered into the layout md. */
static const conv_slot *data_copy_for(const conv_step *data, const dnnl_memory_desc_t *md) {
    const conv_slot *s = data && data->slots ? &data->slot[0] : NULL;
    return s && md && s->arg == DNNL_ARG_DIFF_DST && s->reorder &&
                   dnnl_memory_desc_equal(&s->md, md)
               ? s
               : NULL;
}

/* Make one step of kind from its primitive descriptor: the primitive, its slots and their
 * reorders, the copies laid out from *offset on. For backward weights, data is backward
 * data's step, whose copy of the output gradient it reuses where the layouts agree. */
static bool make_step(const conv_key *k, conv_kind kind, const_dnnl_primitive_desc_t pd,
                      dnnl_primitive_attr_t attr, const conv_step *data, conv_step *st,
                      size_t *scratch, size_t *offset) {
    conv_descs d;
    if (!make_descs(k, false, &d) || dnnl_primitive_create(&st->primitive, pd) != dnnl_success)
        return false;
    grow_scratch(pd, scratch);
    /* That copy stays where backward data put it, and this step's own copies go after it. */
    const conv_slot *twin =
        data_copy_for(data, dnnl_primitive_desc_query_md(pd, dnnl_query_diff_dst_md, 0));
    if (twin) *offset = twin->offset + aligned(twin->size);
    for (int i = 0; i < MAX_SLOTS; i++) {
        int arg = kind_args[kind][i].arg;
        bool bias = arg == DNNL_ARG_BIAS || arg == DNNL_ARG_DIFF_BIAS;
        if (arg == 0 || (bias && !k->bias)) continue;
        conv_slot *s = &st->slot[st->slots++];
        s->arg = arg;
        s->output = kind_args[kind][i].output;
        const dnnl_memory_desc_t *md =
            dnnl_primitive_desc_query_md(pd, kind_args[kind][i].query, bias ? 1 : 0);
        if (!md) return false;
        s->md = *md;
        if (!make_reorder(&d, attr, s, scratch)) return false;
        if (twin && arg == DNNL_ARG_DIFF_DST)
            s->reuses_data_copy = true, s->offset = twin->offset;
        else if (s->reorder)
            s->offset = *offset, *offset += aligned(s->size);
    }
    return true;
}

static void destroy_step(conv_step *st) {
    if (st->primitive) dnnl_primitive_destroy(st->primitive);
    for (int i = 0; i < st->slots; i++)
        if (st->slot[i].reorder) dnnl_primitive_destroy(st->slot[i].reorder);
    memset(st, 0, sizeof *st);
}

/* Whether key's primitives are first tried with the Winograd algorithm (F(4x4, 3x3); where
 * oneDNN has none for the CPU they are made direct): f32 under ct_set_matmul_precision("high"),
 * 3x3, stride 1, undilated, ungrouped, with at least 32 input and output channels: the
 * ResNets' shapes where its three kinds measured faster than direct (bench_resnet_conv; at 16
 * channels it was slower). Its result is a fixed function of the inputs as direct's
 * is (the algorithm depends on the shape and the setting alone, never on a timing), but it
 * rounds more: about 4x direct's error against float64 (its transforms add and subtract
 * partial sums), which is why full f32 ("highest", the default) keeps direct. */
static bool tries_winograd(const conv_key *k) {
    return k->dtype == CT_F32 && k->reduced && k->kernel_h == 3 && k->kernel_w == 3 &&
           k->stride[0] == 1 && k->stride[1] == 1 && k->dilation[0] == 1 && k->dilation[1] == 1 &&
           k->groups == 1 && k->in_channels >= 32 && k->out_channels >= 32;
}

/* Make the three steps of e->key with algorithm alg; false (none kept) when oneDNN cannot. */
static bool make_steps(conv_entry *e, dnnl_alg_kind_t alg) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd[KIND_COUNT] = {NULL, NULL, NULL};
    bool ok =
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user) == dnnl_success;
    size_t offset[KIND_COUNT] = {0, 0, 0};
    e->scratch = 0;
    for (int i = 0; ok && i < KIND_COUNT; i++) {
        dnnl_convolution_desc_t op;
        ok = op_desc(&e->key, (conv_kind)i, alg, &op) &&
             dnnl_primitive_desc_create(&pd[i], &op, attr, engine,
                                        i == FORWARD ? NULL : pd[FORWARD]) == dnnl_success;
        const conv_step *data = i == BACKWARD_WEIGHTS ? &e->step[BACKWARD_DATA] : NULL;
        ok = ok && make_step(&e->key, (conv_kind)i, pd[i], attr, data, &e->step[i], &e->scratch,
                             &offset[i]);
    }
    for (int i = 0; i < KIND_COUNT; i++) {
        if (pd[i]) dnnl_primitive_desc_destroy(pd[i]);
        if (!ok) destroy_step(&e->step[i]);
    }
    if (attr) dnnl_primitive_attr_destroy(attr);
    e->scratch = aligned(e->scratch);
    e->forward_bytes = offset[FORWARD];
    e->backward_bytes = offset[BACKWARD_DATA] > offset[BACKWARD_WEIGHTS] ? offset[BACKWARD_DATA]
                                                                         : offset[BACKWARD_WEIGHTS];
    return ok;
}

/* Make the three steps of e->key: Winograd where tries_winograd says so and oneDNN has it,
 * else direct; e->made says whether they were made. */
static void make_entry(conv_entry *e) {
    e->winograd = tries_winograd(&e->key) && make_steps(e, dnnl_convolution_winograd);
    e->made = e->winograd || make_steps(e, dnnl_convolution_direct);
}

/* The cached entry of key, made on first use; NULL when oneDNN cannot run it or the cache is
 * full (the op layer then computes in f32). Entries are never removed, so a pointer stays
 * good. */
static const conv_entry *entry_for(const conv_key *key) {
    pthread_once(&once, init);
    if (!engine) return NULL;
    const conv_entry *found = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < cache_count && !found; i++)
        if (memcmp(&cache[i].key, key, sizeof *key) == 0) found = &cache[i];
    if (!found && cache_count < CACHE_SIZE) {
        conv_entry *e = &cache[cache_count++];
        memset(e, 0, sizeof *e);
        e->key = *key;
        make_entry(e);
        found = e;
    }
    pthread_mutex_unlock(&cache_lock);
    return found && found->made ? found : NULL;
}

bool ct__cpu_conv2d_native(int device, const ct__conv2d_args *args) {
    (void)device;
    if (args->dtype != CT_BF16 || args->batch == 0 || !ct_cpu_has_native_bf16()) return false;
    conv_key with = key_of(args, true), without = key_of(args, false);
    return entry_for(&with) && entry_for(&without);
}

/* Where f32 convolutions run: CT_F32_CONV=onednn or im2col in the environment picks one for all
 * (to measure the two from one build, and to test both), else the shape and CPU decide. */
typedef enum f32_conv_choice {
    F32_CONV_BY_SHAPE,
    F32_CONV_ONEDNN,
    F32_CONV_IM2COL
} f32_conv_choice;
static pthread_once_t f32_once = PTHREAD_ONCE_INIT;
static f32_conv_choice f32_choice;

static void read_f32_choice(void) {
    const char *env = getenv("CT_F32_CONV");
    f32_choice = !env                         ? F32_CONV_BY_SHAPE
                 : strcmp(env, "onednn") == 0 ? F32_CONV_ONEDNN
                 : strcmp(env, "im2col") == 0 ? F32_CONV_IM2COL
                                              : F32_CONV_BY_SHAPE;
}

/* Whether an f32 convolution with in_channels_per_group input channels per group runs on
 * oneDNN (else im2col + OpenBLAS): CT_F32_CONV=onednn|im2col decides; by default oneDNN,
 * except one input channel per group on a CPU without AVX-512, where oneDNN's AVX2 kernels
 * are the slower ones (docs/PERFORMANCE.md, "Design choices and their measurements"). */
bool ct__cpu_conv2d_f32_on_onednn(int64_t in_channels_per_group) {
    pthread_once(&f32_once, read_f32_choice);
    if (f32_choice != F32_CONV_BY_SHAPE) return f32_choice == F32_CONV_ONEDNN;
    return in_channels_per_group > 1 || __builtin_cpu_supports("avx512f");
}

bool ct__cpu_conv2d_dnnl_runs(const ct__conv2d_args *a, bool backward) {
    if (a->dtype == CT_F32 && !ct__cpu_conv2d_f32_on_onednn(a->in_channels / a->groups))
        return false;
    conv_key key = key_of(a, !backward && a->bias != NULL);
    return a->batch > 0 && entry_for(&key);
}

bool ct__cpu_conv2d_dnnl_winograd(const ct__conv2d_args *a, bool backward) {
    conv_key key = key_of(a, !backward && a->bias != NULL);
    return ct__cpu_conv2d_dnnl_runs(a, backward) && entry_for(&key)->winograd;
}

static const conv_entry *entry_of_call(const ct__conv2d_args *a, bool backward) {
    conv_key key = key_of(a, !backward && a->bias != NULL);
    const conv_entry *e = entry_for(&key);
    if (!e)
        ct__error(CT_ERR_BACKEND, "ct_conv2d: oneDNN made no %s convolution here",
                  ct_dtype_name(a->dtype));
    return e;
}

ct_status ct__cpu_conv2d_dnnl_workspace(const ct__conv2d_args *a, bool backward, size_t *bytes) {
    const conv_entry *e = entry_of_call(a, backward);
    if (!e) return ct_last_status();
    *bytes = e->scratch + (backward ? e->backward_bytes : e->forward_bytes);
    return CT_OK;
}

/* Run one reorder, or the step's primitive, on stream, on memories made over the given
 * pointers. */
static bool run_primitive(dnnl_stream_t stream, dnnl_primitive_t p, int n, const int *arg,
                          const dnnl_memory_desc_t *const *md, void *const *data, void *scratch,
                          const dnnl_memory_desc_t *scratch_md) {
    dnnl_exec_arg_t args[MAX_SLOTS + 1];
    dnnl_memory_t mem[MAX_SLOTS + 1] = {NULL};
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        ok = dnnl_memory_create(&mem[i], md[i], engine, data[i]) == dnnl_success;
        args[i] = (dnnl_exec_arg_t){arg[i], mem[i]};
    }
    ok = ok && dnnl_memory_create(&mem[n], scratch_md, engine, scratch) == dnnl_success;
    args[n] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, mem[n]};
    ok = ok && dnnl_primitive_execute(p, stream, n + 1, args) == dnnl_success &&
         dnnl_stream_wait(stream) == dnnl_success;
    for (int i = 0; i <= n; i++)
        if (mem[i]) dnnl_memory_destroy(mem[i]);
    return ok;
}

/* Reorder slot s between the user's plain tensor and its copy in the workspace. */
static bool reorder(dnnl_stream_t stream, const conv_entry *e, const conv_slot *s, void *user,
                    char *ws, const conv_descs *d, const dnnl_memory_desc_t *scratch_md) {
    const dnnl_memory_desc_t *plain = plain_md(d, s->arg);
    const dnnl_memory_desc_t *md[2] = {s->output ? &s->md : plain, s->output ? plain : &s->md};
    void *data[2] = {s->output ? ws + e->scratch + s->offset : user,
                     s->output ? user : ws + e->scratch + s->offset};
    int arg[2] = {DNNL_ARG_FROM, DNNL_ARG_TO};
    return run_primitive(stream, s->reorder, 2, arg, md, data, ws, scratch_md);
}

/* Run step kind: reorder its inputs, run it, reorder its outputs. user[i] is slot i's tensor;
 * data_ran: backward data has just run, so the copy a slot reuses from it is in place. */
static ct_status execute(const conv_entry *e, conv_kind kind, const ct__conv2d_args *a,
                         void *const *user, bool data_ran) {
    const conv_step *st = &e->step[kind];
    conv_descs d;
    dnnl_memory_desc_t scratch_md;
    dnnl_dims_t scratch_dims = {(int64_t)e->scratch};
    dnnl_stream_t stream = NULL;
    bool ok = make_descs(&e->key, false, &d) &&
              dnnl_memory_desc_init_by_tag(&scratch_md, 1, scratch_dims, dnnl_u8, dnnl_x) ==
                  dnnl_success &&
              dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success;
    int arg[MAX_SLOTS];
    const dnnl_memory_desc_t *md[MAX_SLOTS];
    void *data[MAX_SLOTS];
    for (int i = 0; ok && i < st->slots; i++) {
        const conv_slot *s = &st->slot[i];
        arg[i] = s->arg, md[i] = &s->md;
        data[i] = s->reorder ? a->workspace + e->scratch + s->offset : user[i];
        if (s->reorder && !s->output && !(s->reuses_data_copy && data_ran))
            ok = reorder(stream, e, s, user[i], a->workspace, &d, &scratch_md);
    }
    ok = ok &&
         run_primitive(stream, st->primitive, st->slots, arg, md, data, a->workspace, &scratch_md);
    for (int i = 0; ok && i < st->slots; i++)
        if (st->slot[i].reorder && st->slot[i].output)
            ok = reorder(stream, e, &st->slot[i], user[i], a->workspace, &d, &scratch_md);
    if (stream) dnnl_stream_destroy(stream);
    return ok ? CT_OK
              : ct__error(CT_ERR_BACKEND, "ct_conv2d: oneDNN's %s convolution failed",
                          ct_dtype_name(a->dtype));
}

ct_status ct__cpu_conv2d_dnnl_forward(const ct__conv2d_args *a) {
    const conv_entry *e = entry_of_call(a, false);
    if (!e) return ct_last_status();
    void *user[MAX_SLOTS] = {a->x, a->weight, a->y, a->bias};
    return execute(e, FORWARD, a, user, false);
}

ct_status ct__cpu_conv2d_dnnl_backward(const ct__conv2d_args *a) {
    const conv_entry *e = entry_of_call(a, true);
    if (!e) return ct_last_status();
    ct_status status = CT_OK;
    if (a->grad_x) {
        void *user[MAX_SLOTS] = {a->y, a->weight, a->grad_x, NULL};
        status = execute(e, BACKWARD_DATA, a, user, false);
    }
    if (status != CT_OK || !a->grad_weight) return status;
    void *user[MAX_SLOTS] = {a->x, a->y, a->grad_weight, NULL};
    return execute(e, BACKWARD_WEIGHTS, a, user, a->grad_x != NULL);
}

#else

bool ct__cpu_conv2d_native(int device, const ct__conv2d_args *args) {
    (void)device, (void)args;
    return false;
}

bool ct__cpu_conv2d_f32_on_onednn(int64_t in_channels_per_group) {
    (void)in_channels_per_group;
    return false;
}

bool ct__cpu_conv2d_dnnl_runs(const ct__conv2d_args *a, bool backward) {
    (void)a, (void)backward;
    return false;
}

bool ct__cpu_conv2d_dnnl_winograd(const ct__conv2d_args *a, bool backward) {
    (void)a, (void)backward;
    return false;
}

ct_status ct__cpu_conv2d_dnnl_workspace(const ct__conv2d_args *a, bool backward, size_t *bytes) {
    (void)a, (void)backward, (void)bytes;
    return ct__error(CT_ERR_UNSUPPORTED, "ct_conv2d: this build has no oneDNN");
}

ct_status ct__cpu_conv2d_dnnl_forward(const ct__conv2d_args *a) {
    (void)a;
    return ct__error(CT_ERR_UNSUPPORTED, "ct_conv2d: this build has no oneDNN");
}

ct_status ct__cpu_conv2d_dnnl_backward(const ct__conv2d_args *a) {
    (void)a;
    return ct__error(CT_ERR_UNSUPPORTED, "ct_conv2d: this build has no oneDNN");
}

#endif
