/* The NCCL engine (ct_comm_nccl). On a CUDA device with the real plugin: a world of one,
 * its collectives against their definitions, and two ranks on one GPU (which NCCL refuses)
 * given the bootstrap's engine with one warning. With the fake NCCL plugin on the fake GPU
 * (tests/fake_nccl_plugin.c, host memory; CT_NCCL_PLUGIN names it; CT_FAKE_GPU_UUID=per-thread
 * gives each rank's thread a GPU of its own): two ranks bootstrapped over the threads engine,
 * a mismatch named, a collective past its deadline aborting the communicator, an
 * asynchronous NCCL error named, and data-parallel training over the engine giving the model
 * of training alone. Without a CUDA device (the CPU run) these skip by name; on a real GPU
 * the fake-only cases skip (NCCL refuses two ranks on one GPU). */
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#include "ct_test.h"

#define N 4

/* The CUDA device the engine runs on, or false with the test skipped. */
static bool cuda_device(ct_device *out) {
    if (!ct_cuda_is_available()) {
        ct_test_skip("no CUDA device: the NCCL engine takes CUDA tensors (this test's "
                     "fake-GPU run has one)");
        return false;
    }
    *out = (ct_device){CT_DEVICE_CUDA, 0};
    return true;
}

typedef struct fake_api {
    void (*set_mode)(int mode);
    int (*aborts)(void);
} fake_api;

/* The fake plugin's controls, or false with the test skipped (the real plugin is loaded). */
static bool fake_plugin(fake_api *f) {
    const char *path = getenv("CT_NCCL_PLUGIN");
    void *handle = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    *(void **)&f->set_mode = handle ? dlsym(handle, "fake_nccl_set_mode") : NULL;
    *(void **)&f->aborts = handle ? dlsym(handle, "fake_nccl_aborts") : NULL;
    if (f->set_mode && f->aborts) return true;
    ct_test_skip("needs the fake NCCL plugin (CT_NCCL_PLUGIN): NCCL itself refuses two ranks "
                 "on one GPU and cannot be made to fail on demand");
    return false;
}

static ct_tensor *filled(ct_device device, int64_t n, float base) {
    float v[16];
    for (int64_t i = 0; i < n; i++) v[i] = base + (float)i;
    return ct_from_data(v, 1, &n, CT_F32, device);
}

static bool values(const ct_tensor *t, float *out, int64_t n) {
    return ct_copy_to_host(t, out, (size_t)n * sizeof(float)) == CT_OK;
}

TEST(test_dist_nccl_refuses_other_devices) {
    CHECK(ct_comm_nccl(NULL, CT_CPU) == NULL);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "NCCL runs on CUDA devices");
}

TEST(test_dist_nccl_world_of_one) {
    ct_device device;
    if (!cuda_device(&device)) return;
    ct_comm *comm = ct_comm_nccl(NULL, device);
    CHECK_NOT_NULL(comm);
    CHECK(strcmp(ct_comm_engine(comm), "nccl") == 0);
    CHECK(ct_comm_size(comm) == 1 && ct_comm_rank(comm) == 0);
    ct_scope_begin();
    ct_tensor *t = filled(device, N, 1);
    float got[2 * N];
    bool ok = t && ct_comm_all_reduce(comm, t, CT_COMM_SUM) == CT_OK && values(t, got, N);
    ok = ok && got[0] == 1 && got[3] == 4;
    ok = ok && ct_comm_all_reduce(comm, t, CT_COMM_AVG) == CT_OK && values(t, got, N);
    ok = ok && got[1] == 2 && ct_comm_broadcast(comm, t, 0) == CT_OK && values(t, got, N);
    ok = ok && got[2] == 3;
    ct_tensor *all = ok ? ct_comm_all_gather(comm, t) : NULL;
    ok = all && ct_ndim(all) == 2 && ct_shape(all)[0] == 1 && values(all, got, N) && got[3] == 4;
    ok = ok && ct_comm_barrier(comm) == CT_OK;
    ct_tensor *host = ok ? filled(CT_CPU, N, 0) : NULL;
    bool refused = host && ct_comm_all_reduce(comm, host, CT_COMM_SUM) == CT_ERR_DEVICE_MISMATCH;
    ct_scope_end();
    ct_comm_statistics stats;
    ct_comm_stats(comm, &stats);
    ct_comm_free(comm);
    CHECK(ok);
    CHECK_ERROR(CT_ERR_DEVICE_MISMATCH, "contiguous tensors on cuda:0");
    CHECK(refused);
    CHECK(stats.collectives == 5);
}

/* ---- two ranks over the threads engine (the fake plugin) ---- */

typedef struct pair {
    float sum[N], avg[N], bcast[N], gathered[2 * N];
    ct_status mismatch[2];
    char message[2][768];
    char engine[2][16];
} pair;

/* Two ranks on threads of this process, on the same device, each on a GPU of its own as the
 * fake GPU reports it (CT_FAKE_GPU_UUID=per-thread) or on one GPU (unset). */
static int spawn_two(ct_device device, bool own_gpus, ct_replica_fn fn, void *user) {
    ct_comm *boot[2];
    if (ct_comm_threads(2, boot) != CT_OK) return -1;
    if (own_gpus) setenv("CT_FAKE_GPU_UUID", "per-thread", 1);
    int rc = ct_comm_spawn(2, boot, (ct_device[]){device, device}, fn, user);
    unsetenv("CT_FAKE_GPU_UUID");
    ct_comm_free(boot[0]);
    ct_comm_free(boot[1]);
    return rc;
}

/* The checks of two_ranks' results. */
#define CHECK_PAIR(p, engine_name)                                                                 \
    do {                                                                                           \
        for (int i = 0; i < N; i++) {                                                              \
            CHECK_NEAR((p).sum[i], 2 * i + 1, 0);                                                  \
            CHECK_NEAR((p).avg[i], i + 0.5, 0);                                                    \
            CHECK_NEAR((p).bcast[i], 10 + i, 0);                                                   \
            CHECK_NEAR((p).gathered[i], i, 0);                                                     \
            CHECK_NEAR((p).gathered[N + i], 100 + i, 0);                                           \
        }                                                                                          \
        for (int r = 0; r < 2; r++) {                                                              \
            CHECK(strcmp((p).engine[r], engine_name) == 0);                                        \
            CHECK((p).mismatch[r] == CT_ERR_COMM);                                                 \
            CHECK(strstr((p).message[r], "mismatched collective") != NULL);                        \
            CHECK(strstr((p).message[r], "ct_comm_all_reduce #4") != NULL);                        \
        }                                                                                          \
    } while (0)

static int two_ranks(int rank, ct_comm *boot, ct_device device, void *user) {
    pair *p = user;
    ct_comm *comm = ct_comm_nccl(boot, device);
    if (!comm) return 1;
    snprintf(p->engine[rank], sizeof p->engine[rank], "%s", ct_comm_engine(comm));
    ct_scope_begin();
    ct_tensor *t = filled(device, N, (float)rank);
    int rc = t && ct_comm_all_reduce(comm, t, CT_COMM_SUM) == CT_OK && values(t, p->sum, N) ? 0 : 2;
    ct_tensor *u = rc ? NULL : filled(device, N, (float)rank);
    if (!u || ct_comm_all_reduce(comm, u, CT_COMM_AVG) || !values(u, p->avg, N)) rc = 3;
    ct_tensor *v = rc ? NULL : filled(device, N, 10.0f * (float)rank);
    if (!v || ct_comm_broadcast(comm, v, 1) || !values(v, p->bcast, N)) rc = 4;
    ct_tensor *g = rc ? NULL : ct_comm_all_gather(comm, filled(device, N, 100.0f * (float)rank));
    if (!g || !values(g, p->gathered, 2 * N)) rc = 5;
    ct_tensor *odd = rc ? NULL : filled(device, 3 + rank, 0);
    if (odd) {
        p->mismatch[rank] = ct_comm_all_reduce(comm, odd, CT_COMM_SUM);
        snprintf(p->message[rank], sizeof p->message[rank], "%s", ct_last_error());
        ct_clear_error();
    }
    ct_scope_end();
    ct_comm_free(comm);
    return rc;
}

TEST(test_dist_nccl_two_ranks_bootstrapped_over_threads) {
    ct_device device;
    fake_api fake;
    if (!cuda_device(&device) || !fake_plugin(&fake)) return;
    static pair p;
    ct_test_warnings warnings = {0};
    ct_set_log_hook(ct_test_record_warning, &warnings);
    int rc = spawn_two(device, true, two_ranks, &p);
    ct_set_log_hook(NULL, NULL);
    CHECK(rc == 0);
    CHECK(warnings.count == 0);
    CHECK_PAIR(p, "nccl");
}

/* NCCL refuses two ranks on one GPU: ct_comm_nccl finds them by their GPUs' UUIDs before
 * NCCL starts, and every rank gets the bootstrap's engine instead, with one warning from rank
 * 0. Needs no NCCL, so it runs on a real GPU too. */
TEST(test_dist_nccl_ranks_sharing_a_gpu_use_the_bootstrap_engine) {
    ct_device device;
    if (!cuda_device(&device)) return;
    ct_device_properties props;
    CHECK_OK(ct_device_info(device, &props));
    static const unsigned char unknown[16];
    CHECK(memcmp(props.uuid, unknown, sizeof unknown) != 0);
    static pair p;
    ct_test_warnings warnings = {0};
    ct_set_log_hook(ct_test_record_warning, &warnings);
    int rc = spawn_two(device, false, two_ranks, &p);
    ct_set_log_hook(NULL, NULL);
    CHECK(rc == 0);
    CHECK_PAIR(p, "threads");
    CHECK(warnings.count == 1);
    CHECK(strstr(warnings.last, "ranks 0 and 1 share cuda:0 (UUID GPU-") != NULL);
    CHECK(strstr(warnings.last, "NCCL allows one rank per GPU; using the threads engine for the "
                                "collectives") != NULL);
}

/* On the bootstrap's engine, a collective still has this communicator's deadline: rank 1
 * never calls it, rank 0's ends at 0.3 s naming it and rank 1, and the bootstrap, whose
 * engine the collective was left in, refuses later calls too. */
typedef struct stall {
    ct_status status, later;
    char message[768], engine[16];
} stall;

static int stall_rank(int rank, ct_comm *boot, ct_device device, void *user) {
    stall *s = user;
    ct_comm *comm = ct_comm_nccl(boot, device);
    if (!comm) return 1;
    if (rank == 0) {
        snprintf(s->engine, sizeof s->engine, "%s", ct_comm_engine(comm));
        ct_comm_set_timeout(comm, 0.3);
        ct_scope_begin();
        ct_tensor *t = filled(device, N, 0);
        s->status = t ? ct_comm_all_reduce(comm, t, CT_COMM_SUM) : CT_ERR_STATE;
        snprintf(s->message, sizeof s->message, "%s", ct_last_error());
        s->later = ct_comm_barrier(boot);
        ct_scope_end();
        ct_clear_error();
    }
    ct_comm_free(comm);
    return 0;
}

TEST(test_dist_nccl_ranks_sharing_a_gpu_keep_the_deadline) {
    ct_device device;
    if (!cuda_device(&device)) return;
    static stall s;
    ct_test_warnings warnings = {0};
    ct_set_log_hook(ct_test_record_warning, &warnings);
    int rc = spawn_two(device, false, stall_rank, &s);
    ct_set_log_hook(NULL, NULL);
    CHECK(rc == 0);
    CHECK(strcmp(s.engine, "threads") == 0);
    CHECK(s.status == CT_ERR_COMM);
    CHECK(strstr(s.message, "ct_comm_all_reduce #0") && strstr(s.message, "timed out after 0.3 s"));
    CHECK(strstr(s.message, "ranks not heard from: 1") != NULL);
    CHECK(s.later == CT_ERR_COMM);
}

TEST(test_dist_nccl_timeout_aborts_and_names_the_collective) {
    ct_device device;
    fake_api fake;
    if (!cuda_device(&device) || !fake_plugin(&fake)) return;
    ct_comm *comm = ct_comm_nccl(NULL, device);
    CHECK_NOT_NULL(comm);
    CHECK_OK(ct_comm_set_timeout(comm, 0.3));
    int aborts = fake.aborts();
    ct_scope_begin();
    ct_tensor *t = filled(device, N, 0);
    fake.set_mode(1); /* collectives never end */
    ct_status first = t ? ct_comm_all_reduce(comm, t, CT_COMM_SUM) : CT_ERR_STATE;
    fake.set_mode(0);
    char message[768];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_status later = ct_comm_broadcast(comm, t, 0);
    ct_scope_end();
    ct_comm_free(comm);
    CHECK(first == CT_ERR_COMM);
    CHECK(strstr(message, "ct_comm_all_reduce #0") && strstr(message, "timed out after 0.3 s"));
    CHECK(strstr(message, "NCCL's collective on cuda:0") != NULL);
    CHECK(fake.aborts() == aborts + 1);
    CHECK(later == CT_ERR_COMM);
    CHECK_ERROR(CT_ERR_COMM, "failed earlier");
}

TEST(test_dist_nccl_async_error_is_named) {
    ct_device device;
    fake_api fake;
    if (!cuda_device(&device) || !fake_plugin(&fake)) return;
    ct_comm *comm = ct_comm_nccl(NULL, device);
    CHECK_NOT_NULL(comm);
    int aborts = fake.aborts();
    ct_scope_begin();
    ct_tensor *t = filled(device, N, 0);
    ct_status first = t ? ct_comm_barrier(comm) : CT_ERR_STATE;
    fake.set_mode(2); /* the asynchronous state fails once a collective was queued */
    ct_status status = first == CT_OK ? ct_comm_all_reduce(comm, t, CT_COMM_SUM) : CT_ERR_STATE;
    fake.set_mode(0);
    ct_scope_end();
    ct_comm_free(comm);
    CHECK(first == CT_OK);
    CHECK(status == CT_ERR_COMM);
    CHECK(strstr(ct_last_error(), "ct_comm_all_reduce #1 on a tensor (4) failed at rank 0 of 1"));
    CHECK_ERROR(CT_ERR_COMM, "ncclCommGetAsyncError");
    CHECK(fake.aborts() == aborts + 1);
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ct_comm_free finalises the communicator (ncclCommFinalize, polled) under its deadline and
 * then destroys it; a finalize that never ends (a peer gone) is aborted at the deadline rather
 * than waited for. */
TEST(test_dist_nccl_free_does_not_wait_for_a_finalize_that_never_ends) {
    ct_device device;
    fake_api fake;
    if (!cuda_device(&device) || !fake_plugin(&fake)) return;
    int aborts = fake.aborts();
    for (int hangs = 0; hangs <= 1; hangs++) {
        ct_comm *comm = ct_comm_nccl(NULL, device);
        CHECK_NOT_NULL(comm);
        CHECK_OK(ct_comm_set_timeout(comm, 0.3));
        ct_scope_begin();
        ct_tensor *t = filled(device, N, 0);
        CHECK(t && ct_comm_all_reduce(comm, t, CT_COMM_SUM) == CT_OK);
        ct_scope_end();
        fake.set_mode(hangs); /* 1: collectives and the finalize never end */
        double start = seconds_now();
        ct_comm_free(comm);
        double took = seconds_now() - start;
        fake.set_mode(0);
        CHECK(fake.aborts() == aborts + hangs);
        CHECK(hangs ? took >= 0.3 && took < 5 : took < 0.3);
    }
}

/* ---- data-parallel training over the engine ---- */

#define SAMPLES 8
#define STEPS 3

typedef struct training {
    ct_module *models[2];
    double params[2][256];
    ct_status status[2];
    char message[2][512];
    int64_t buckets;
    char engine[16];
} training;

static int train(int rank, ct_comm *boot, ct_device device, void *user) {
    training *t = user;
    ct_comm *comm = boot ? ct_comm_nccl(boot, device) : NULL;
    int ranks = boot ? ct_comm_size(boot) : 1;
    ct_module *m = t->models[rank];
    ct_status status = boot && !comm ? ct_last_status() : ct_module_to(m, device);
    ct_tensor *params[8];
    int n = ct_module_parameters(m, params, 8);
    ct_optimizer *sgd = ct_sgd(n, params, &(ct_sgd_options){.lr = 0.3});
    ct_ddp *ddp =
        status == CT_OK && comm
            ? ct_ddp_new(comm, m, &(ct_ddp_options){.bucket_bytes = 64, .first_bucket_bytes = 32})
            : NULL;
    if (status == CT_OK && (!sgd || (comm && !ddp))) status = ct_last_status();
    float xs[SAMPLES * 3];
    int64_t ys[SAMPLES], xshape[2] = {SAMPLES, 3}, yshape = SAMPLES;
    for (int i = 0; i < SAMPLES * 3; i++) xs[i] = (float)((i * 5) % 7) / 3.0f - 1.0f;
    for (int i = 0; i < SAMPLES; i++) ys[i] = i % 2;
    ct_scope_begin();
    ct_tensor *x = ct_from_data(xs, 2, xshape, CT_F32, device);
    ct_tensor *y = ct_from_data(ys, 1, &yshape, CT_I64, device);
    int64_t from = SAMPLES * rank / ranks, to = SAMPLES * (rank + 1) / ranks;
    for (int step = 0; step < STEPS && status == CT_OK; step++) {
        ct_scope_begin();
        ct_tensor *loss = ct_cross_entropy(ct_module_forward(m, ct_slice(x, 0, from, to, 1)),
                                           ct_slice(y, 0, from, to, 1), NULL);
        status = loss ? ct_optimizer_zero_grad(sgd) : ct_last_status();
        if (status == CT_OK)
            status = ddp ? ct_ddp_backward(ddp, loss, to - from, SAMPLES) : ct_backward(loss);
        if (status == CT_OK) status = ct_optimizer_step(sgd);
        ct_scope_end();
    }
    ct_scope_end();
    for (int i = 0, k = 0; status == CT_OK && i < n; i++) {
        ct_tensor *d = ct_cast(params[i], CT_F64);
        status =
            d ? ct_copy_to_host(d, t->params[rank] + k, (size_t)ct_numel(d) * 8) : ct_last_status();
        k += (int)ct_numel(params[i]);
        ct_release(d);
    }
    ct_ddp_statistics stats = {0};
    if (ddp) ct_ddp_stats(ddp, &stats);
    if (rank == 0) t->buckets = stats.buckets;
    if (rank == 0) snprintf(t->engine, sizeof t->engine, "%s", ct_comm_engine(comm));
    t->status[rank] = status;
    snprintf(t->message[rank], sizeof t->message[rank], "%s", ct_last_error());
    ct_clear_error();
    ct_ddp_free(ddp);
    ct_optimizer_free(sgd);
    ct_comm_free(comm);
    return 0;
}

static ct_module *mlp(void) {
    ct_manual_seed(7);
    return ct_nn_sequential(
        3, (ct_module *[]){ct_nn_linear(3, 5, true), ct_nn_tanh(), ct_nn_linear(5, 2, true)});
}

TEST(test_dist_nccl_ddp_gives_the_model_of_training_alone) {
    ct_device device;
    fake_api fake;
    if (!cuda_device(&device) || !fake_plugin(&fake)) return;
    static training alone, split;
    alone = (training){.models = {mlp()}};
    split = (training){.models = {mlp(), mlp()}};
    CHECK(alone.models[0] && split.models[0] && split.models[1]);
    train(0, NULL, device, &alone);
    int rc = spawn_two(device, true, train, &split);
    ct_module_free(alone.models[0]);
    ct_module_free(split.models[0]);
    ct_module_free(split.models[1]);
    CHECK(rc == 0);
    for (int r = 0; r < 2; r++)
        if (split.status[r] != CT_OK || alone.status[0] != CT_OK)
            CHECK(!fprintf(stderr, "rank %d: %s / %s\n", r, split.message[r], alone.message[0]));
    CHECK(split.buckets > 1);
    CHECK(strcmp(split.engine, "nccl") == 0);
    for (int i = 0; i < 3 * 5 + 5 + 5 * 2 + 2; i++) {
        CHECK_NEAR(split.params[0][i], alone.params[0][i], 1e-5);
        CHECK_NEAR(split.params[1][i], alone.params[0][i], 1e-5);
    }
}
