/* Data-parallel training over the threads engine against training alone: the same seed and
 * global batch give the same parameters (<= 1e-4 relative) with 1, 2 or 3 replicas, for an
 * MLP and a small CNN, with an uneven last batch (3 replicas: one gets no sample of it) and
 * buckets small enough that several travel per step; ct_ddp_new starts every replica from
 * rank 0's parameters; bad steps are refused. On every device (the fake GPU too). */
#include "ct_test.h"

#define SAMPLES 10
#define BATCH 4
#define STEPS 5 /* batches of 4, 4, 2, 4, 4: two epochs' worth, the last batch uneven */
#define MAX_RANKS 3

typedef struct setup {
    ct_device device;
    bool cnn;
    int ranks;
    double params[MAX_RANKS][4096];
    int64_t count[MAX_RANKS];
    ct_status status[MAX_RANKS];
    char message[MAX_RANKS][512];
    double comm_seconds;
    /* Made before the replicas start: threads drawing from the one random stream at once
     * would interleave their draws. */
    ct_module *models[MAX_RANKS];
} setup;

static ct_module *make_model(bool cnn, uint64_t seed) {
    ct_manual_seed(seed);
    if (!cnn)
        return ct_nn_sequential(
            3, (ct_module *[]){ct_nn_linear(6, 8, true), ct_nn_tanh(), ct_nn_linear(8, 3, true)});
    return ct_nn_sequential(4, (ct_module *[]){ct_nn_conv2d(1, 2, 3, NULL, true), ct_nn_relu(),
                                               ct_nn_flatten(), ct_nn_linear(2 * 4 * 4, 3, true)});
}

/* The dataset, the same in every replica: inputs (SAMPLES, 6) or (SAMPLES, 1, 6, 6). */
static bool make_data(bool cnn, ct_device device, ct_tensor **x, ct_tensor **y) {
    float xs[SAMPLES * 36];
    int64_t ys[SAMPLES];
    for (int i = 0; i < SAMPLES * 36; i++) xs[i] = (float)(((i * 37) % 23) / 11.0 - 1.0);
    for (int i = 0; i < SAMPLES; i++) ys[i] = (i * 7) % 3;
    int64_t shape[4] = {SAMPLES, 1, 6, 6}, mlp_shape[2] = {SAMPLES, 6}, n = SAMPLES;
    *x = cnn ? ct_from_data(xs, 4, shape, CT_F32, device)
             : ct_from_data(xs, 2, mlp_shape, CT_F32, device);
    *y = ct_from_data(ys, 1, &n, CT_I64, device);
    return *x && *y;
}

/* Rows [from, to) of batch `step` for `rank` of `ranks`. */
static void slice_of(int step, int rank, int ranks, int64_t *from, int64_t *to, int64_t *global) {
    int64_t start = (step * BATCH) % 12, end = start + BATCH;
    if (start >= SAMPLES) start = 0, end = BATCH; /* never: 12 covers 0, 4, 8 */
    if (end > SAMPLES) end = SAMPLES;
    *global = end - start;
    *from = start + *global * rank / ranks;
    *to = start + *global * (rank + 1) / ranks;
}

static bool flatten_params(ct_module *m, double *out, int64_t *count) {
    ct_tensor *params[16];
    int n = ct_module_parameters(m, params, 16);
    *count = 0;
    for (int i = 0; i < n; i++) {
        ct_tensor *d = ct_cast(params[i], CT_F64);
        int64_t k = ct_numel(d);
        if (!d || ct_copy_to_host(d, out + *count, (size_t)k * sizeof(double)) != CT_OK)
            return false;
        *count += k;
        ct_release(d);
    }
    return true;
}

/* One replica: SGD steps on its slices; rank r starts from seed r (ct_ddp_new must make
 * every replica rank 0's). ranks 0 means training alone with ct_backward. */
static int replica(int rank, ct_comm *comm, ct_device device, void *user) {
    setup *s = user;
    ct_scope_begin();
    ct_module *m = s->models[rank];
    ct_status status = m ? ct_module_to(m, device) : ct_last_status();
    ct_tensor *params[16], *x = NULL, *y = NULL;
    int n = m ? ct_module_parameters(m, params, 16) : 0;
    ct_optimizer *sgd = ct_sgd(n, params, &(ct_sgd_options){.lr = 0.2, .momentum = 0.5});
    ct_ddp *ddp = NULL;
    if (status == CT_OK && comm)
        ddp = ct_ddp_new(comm, m, &(ct_ddp_options){.bucket_bytes = 128, .first_bucket_bytes = 64});
    if (status == CT_OK && (!sgd || (comm && !ddp) || !make_data(s->cnn, device, &x, &y)))
        status = ct_last_status();
    for (int step = 0; step < STEPS && status == CT_OK; step++) {
        int64_t from, to, global;
        slice_of(step, rank, comm ? ct_comm_size(comm) : 1, &from, &to, &global);
        ct_scope_begin();
        ct_tensor *loss = NULL;
        if (to > from)
            loss = ct_cross_entropy(ct_module_forward(m, ct_slice(x, 0, from, to, 1)),
                                    ct_slice(y, 0, from, to, 1), NULL);
        status = ct_optimizer_zero_grad(sgd);
        if (status == CT_OK && to > from && !loss) status = ct_last_status();
        if (status == CT_OK)
            status = ddp ? ct_ddp_backward(ddp, loss, to - from, global) : ct_backward(loss);
        if (status == CT_OK) status = ct_optimizer_step(sgd);
        ct_scope_end();
    }
    if (status == CT_OK && !flatten_params(m, s->params[rank], &s->count[rank]))
        status = ct_last_status();
    if (ddp && rank == 0) {
        ct_ddp_statistics stats;
        ct_ddp_stats(ddp, &stats);
        s->comm_seconds = stats.steps == STEPS && stats.buckets > 1 ? stats.comm_seconds : -1;
    }
    s->status[rank] = status;
    snprintf(s->message[rank], sizeof s->message[rank], "%s", ct_last_error());
    ct_clear_error();
    ct_ddp_free(ddp);
    ct_optimizer_free(sgd);
    ct_scope_end();
    return 0;
}

static bool train(setup *s) {
    int models = s->ranks ? s->ranks : 1;
    for (int r = 0; r < models; r++)
        if (!(s->models[r] = make_model(s->cnn, 100 + (uint64_t)r))) return false;
    int rc = 0;
    if (s->ranks == 0) {
        rc = replica(0, NULL, s->device, s);
    } else {
        ct_comm *comms[MAX_RANKS];
        ct_device devices[MAX_RANKS] = {s->device, s->device, s->device};
        if (ct_comm_threads(s->ranks, comms) != CT_OK) return false;
        rc = ct_comm_spawn(s->ranks, comms, devices, replica, s);
        for (int r = 0; r < s->ranks; r++) ct_comm_free(comms[r]);
    }
    for (int r = 0; r < models; r++) ct_module_free(s->models[r]);
    return rc == 0;
}

static void same_model(ct_device device, bool cnn) {
    static setup alone, split;
    alone = (setup){.device = device, .cnn = cnn, .ranks = 0};
    CHECK(train(&alone));
    CHECK_OK(alone.status[0]);
    for (int ranks = 1; ranks <= MAX_RANKS; ranks++) {
        split = (setup){.device = device, .cnn = cnn, .ranks = ranks};
        CHECK(train(&split));
        for (int r = 0; r < ranks; r++) {
            if (split.status[r] != CT_OK)
                ct_test_fail(__FILE__, __LINE__, "%d ranks, rank %d: %s", ranks, r,
                             split.message[r]);
            CHECK(split.status[r] == CT_OK);
            CHECK(split.count[r] == alone.count[0]);
            for (int64_t i = 0; i < alone.count[0]; i++)
                CHECK_NEAR(split.params[r][i], alone.params[0][i],
                           1e-4 * fabs(alone.params[0][i]) + 1e-6);
        }
        CHECK(split.comm_seconds >= 0); /* several buckets travelled each step */
    }
}

DEVICE_TEST(test_dist_ddp_mlp_same_model_whatever_the_ranks) { same_model(device, false); }

DEVICE_TEST(test_dist_ddp_cnn_same_model_whatever_the_ranks) { same_model(device, true); }

TEST(test_dist_ddp_bad_steps) {
    ct_comm *comms[1];
    CHECK_OK(ct_comm_threads(1, comms));
    ct_module *m = make_model(false, 1);
    ct_ddp *ddp = ct_ddp_new(comms[0], m, NULL);
    CHECK_NOT_NULL(ddp);
    CHECK(ct_ddp_backward(ddp, NULL, 1, 4) == CT_ERR_INVALID_ARG);
    CHECK(ct_ddp_backward(ddp, NULL, 0, 0) == CT_ERR_INVALID_ARG);
    CHECK(ct_ddp_backward(ddp, NULL, 5, 4) == CT_ERR_INVALID_ARG);
    CHECK(ct_ddp_new(NULL, m, NULL) == NULL);
    ct_clear_error();
    /* Without a sample, the step still gives every parameter a (zero) gradient. */
    CHECK_OK(ct_ddp_backward(ddp, NULL, 0, 4));
    ct_tensor *params[4];
    CHECK(ct_module_parameters(m, params, 4) == 4);
    ct_scope_begin();
    double total = 1;
    CHECK_OK(ct_item(ct_sum(ct_abs(ct_grad(params[0])), 0, NULL, false), &total));
    CHECK(total == 0);
    ct_scope_end();
    ct_ddp_free(ddp);
    ct_module_free(m);
    ct_comm_free(comms[0]);
}

/* The threads engine cannot overlap backward, so by default every gradient travels in one
 * bucket; a size the caller gives brings back the others' sizes (two parameters of 1.2 MB:
 * the 1 MiB first bucket takes one). */
TEST(test_dist_ddp_threads_engine_one_bucket_by_default) {
    ct_comm *comms[1];
    CHECK_OK(ct_comm_threads(1, comms));
    int64_t n = 300000;
    ct_tensor *a = ct_ones(1, &n, CT_F32, CT_CPU), *b = ct_ones(1, &n, CT_F32, CT_CPU);
    CHECK_OK(ct_set_requires_grad(a, true));
    CHECK_OK(ct_set_requires_grad(b, true));
    ct_ddp *whole = ct_ddp_new_tensors(comms[0], 2, (ct_tensor *[]){a, b}, NULL, NULL);
    ct_ddp *split = ct_ddp_new_tensors(comms[0], 2, (ct_tensor *[]){a, b}, NULL,
                                       &(ct_ddp_options){.bucket_bytes = 32 << 20});
    ct_ddp_statistics one = {0}, two = {0};
    CHECK_OK(ct_ddp_stats(whole, &one));
    CHECK_OK(ct_ddp_stats(split, &two));
    CHECK(one.buckets == 1);
    CHECK(two.buckets == 2);
    ct_ddp_free(whole);
    ct_ddp_free(split);
    ct_release(a), ct_release(b);
    ct_comm_free(comms[0]);
}

/* ct_ddp_new_tensors: parameters and buffers of a model that is not one ct_module. */
TEST(test_dist_ddp_new_tensors) {
    ct_comm *comms[1];
    CHECK_OK(ct_comm_threads(1, comms));
    ct_tensor *w = ct_ones(1, (int64_t[]){3}, CT_F32, CT_CPU);
    ct_tensor *count = ct_zeros(0, NULL, CT_I64, CT_CPU);
    ct_tensor *wide = ct_ones(1, (int64_t[]){3}, CT_F64, CT_CPU);
    CHECK_OK(ct_set_requires_grad(w, true));
    ct_ddp *ddp =
        ct_ddp_new_tensors(comms[0], 2, (ct_tensor *[]){w, count}, (bool[]){false, true}, NULL);
    CHECK_NOT_NULL(ddp);
    ct_scope_begin();
    ct_status status = ct_ddp_backward(ddp, ct_sum(w, 0, NULL, false), 1, 1);
    double total = 0;
    if (status == CT_OK) status = ct_item(ct_sum(ct_grad(w), 0, NULL, false), &total);
    ct_scope_end();
    CHECK_OK(status);
    CHECK(total == 3);
    ct_ddp_free(ddp);
    /* An integer tensor is fine as a buffer, not as a parameter. */
    CHECK(ct_ddp_new_tensors(comms[0], 2, (ct_tensor *[]){w, count}, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "f32");
    CHECK(ct_ddp_new_tensors(comms[0], 1, (ct_tensor *[]){wide}, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_DTYPE, "float64");
    CHECK(ct_ddp_new_tensors(comms[0], -1, NULL, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "negative");
    CHECK(ct_ddp_new_tensors(NULL, 0, NULL, NULL, NULL) == NULL);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "comm is NULL");
    ct_release(w);
    ct_release(count);
    ct_release(wide);
    ct_comm_free(comms[0]);
}

/* A parameter used twice in one step (a tied embedding: GPT's token embedding is its
 * classifier) travels once, with the sum of both uses: loss = sum(w * x) + sum(w * w) on 2
 * replicas gives every rank the mean of x + 2w over the ranks' x. */
typedef struct tied_run {
    double grads[2][3];
    ct_status status[2];
} tied_run;

static int tied_replica(int rank, ct_comm *comm, ct_device device, void *user) {
    tied_run *s = user;
    ct_scope_begin();
    ct_tensor *w = ct_ones(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *x = ct_full(1, (int64_t[]){3}, rank ? 3.0 : 1.0, CT_F32, device);
    ct_status status = w && x ? ct_set_requires_grad(w, true) : ct_last_status();
    ct_ddp *ddp = status == CT_OK ? ct_ddp_new_tensors(comm, 1, &w, NULL, NULL) : NULL;
    if (status == CT_OK && !ddp) status = ct_last_status();
    ct_tensor *first = ct_sum(ct_mul(w, x), 0, NULL, false);
    ct_tensor *second = ct_sum(ct_mul(w, w), 0, NULL, false);
    if (status == CT_OK) status = ct_ddp_backward(ddp, ct_add(first, second), 1, 2);
    ct_tensor *g = status == CT_OK ? ct_to(ct_grad(w), CT_CPU) : NULL;
    for (int i = 0; g && i < 3; i++) s->grads[rank][i] = ((const float *)ct_data_ptr(g))[i];
    s->status[rank] = status;
    ct_ddp_free(ddp);
    ct_scope_end();
    return 0;
}

DEVICE_TEST(test_dist_ddp_parameter_used_twice) {
    ct_comm *comms[2];
    CHECK_OK(ct_comm_threads(2, comms));
    static tied_run s;
    s = (tied_run){0};
    CHECK(ct_comm_spawn(2, comms, (ct_device[]){device, device}, tied_replica, &s) == 0);
    for (int r = 0; r < 2; r++) {
        CHECK_OK(s.status[r]);
        /* (1 + 2 + 3 + 2) / 2 */
        for (int i = 0; i < 3; i++) CHECK(s.grads[r][i] == 4.0);
    }
    for (int r = 0; r < 2; r++) ct_comm_free(comms[r]);
}

/* A stop asked for on one rank reaches every rank with the next step's gradients: rank 1
 * asks before step 1 (reason 2), rank 0 before step 2 (reason 15, larger, wins); a model of
 * buffers only (no gradient bucket of its own) carries it too. */
typedef struct stop_run {
    int reasons[2][3]; /* ct_ddp_stop_reason after each step, per rank */
    int buffers[2];    /* and after the buffers-only ddp's step */
    ct_status status[2];
} stop_run;

static int stop_replica(int rank, ct_comm *comm, ct_device device, void *user) {
    stop_run *s = user;
    ct_scope_begin();
    ct_tensor *w = ct_ones(1, (int64_t[]){3}, CT_F32, device);
    ct_tensor *count = ct_zeros(0, NULL, CT_I64, device);
    ct_status status = w && count ? ct_set_requires_grad(w, true) : ct_last_status();
    ct_ddp *ddp = status == CT_OK ? ct_ddp_new_tensors(comm, 1, &w, NULL, NULL) : NULL;
    ct_ddp *buffers = ddp ? ct_ddp_new_tensors(comm, 1, &count, (bool[]){true}, NULL) : NULL;
    if (status == CT_OK && (!ddp || !buffers)) status = ct_last_status();
    for (int step = 0; step < 3 && status == CT_OK; step++) {
        if (step == 1 && rank == 1) status = ct_ddp_request_stop(ddp, 2);
        if (step == 2 && rank == 0) status = ct_ddp_request_stop(ddp, 15);
        if (status == CT_OK) status = ct_ddp_backward(ddp, ct_sum(w, 0, NULL, false), 1, 2);
        s->reasons[rank][step] = ct_ddp_stop_reason(ddp);
    }
    if (status == CT_OK && rank == 1) status = ct_ddp_request_stop(buffers, 9);
    if (status == CT_OK) status = ct_ddp_backward(buffers, NULL, 0, 1);
    s->buffers[rank] = ct_ddp_stop_reason(buffers);
    s->status[rank] = status;
    ct_ddp_free(ddp);
    ct_ddp_free(buffers);
    ct_scope_end();
    return 0;
}

TEST(test_dist_ddp_stop_reaches_every_rank) {
    ct_comm *comms[2];
    CHECK_OK(ct_comm_threads(2, comms));
    static stop_run s;
    s = (stop_run){0};
    CHECK(ct_comm_spawn(2, comms, (ct_device[]){CT_CPU, CT_CPU}, stop_replica, &s) == 0);
    for (int r = 0; r < 2; r++) {
        CHECK_OK(s.status[r]);
        CHECK(s.reasons[r][0] == 0);
        CHECK(s.reasons[r][1] == 2);
        CHECK(s.reasons[r][2] == 15);
        CHECK(s.buffers[r] == 9);
    }
    ct_ddp *ddp = ct_ddp_new_tensors(comms[0], 0, NULL, NULL, NULL);
    CHECK_NOT_NULL(ddp);
    CHECK(ct_ddp_request_stop(ddp, 0) == CT_ERR_INVALID_ARG);
    CHECK(ct_ddp_request_stop(ddp, CT_DDP_STOP_REASONS + 1) == CT_ERR_INVALID_ARG);
    CHECK(ct_ddp_request_stop(NULL, 2) == CT_ERR_INVALID_ARG);
    CHECK(ct_ddp_stop_reason(NULL) == 0);
    ct_clear_error();
    ct_ddp_free(ddp);
    for (int r = 0; r < 2; r++) ct_comm_free(comms[r]);
}
