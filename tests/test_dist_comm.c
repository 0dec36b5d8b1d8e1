/* The communicator: the world of one, and the threads engine's collectives against their
 * definitions (computed here in float64 from what each rank put in), on every device;
 * fingerprints that name a mismatched collective; deadlines that end a collective a rank
 * never joins, naming it and the missing rank; the timeout's settings. The MPI engine runs
 * the same checks under mpirun (test_dist_mpi.sh). */
#include <stdlib.h>
#include <time.h>

#include "ct_test.h"

#define RANKS 3
#define N 7

typedef struct job {
    ct_device device;
    int skip_rank;       /* a rank that does not call the collective (-1: none) */
    int mismatched_rank; /* a rank that passes one element more (-1: none) */
    int failing_rank;    /* a rank that fails before the collectives and returns 1 (0: none) */
    ct_status status[RANKS], again[RANKS];
    char message[RANKS][1024];
    double sum[RANKS][N], avg[RANKS][N], bcast[RANKS][N], gathered[RANKS][RANKS * N];
    int64_t isum[RANKS][N];
} job;

/* Rank r's value at i. */
static double value(int r, int i) { return (r + 1) * 0.5 + i * (r % 2 ? -1.25 : 2.0); }

static ct_tensor *rank_tensor(int r, int64_t n, ct_dtype dtype, ct_device device) {
    double host[N + 1];
    for (int i = 0; i < n; i++) host[i] = value(r, i);
    ct_tensor *t64 = ct_from_data(host, 1, &n, CT_F64, CT_CPU);
    ct_tensor *t = ct_to(ct_cast(t64, dtype), device);
    return t;
}

static bool read_back(const ct_tensor *t, double *out, int64_t n) {
    ct_tensor *d = ct_cast(t, CT_F64);
    bool ok = d && ct_copy_to_host(d, out, (size_t)n * sizeof(double)) == CT_OK;
    ct_release(d);
    return ok;
}

/* Every collective once; stops at the first failure, recording it. */
static int collectives(int rank, ct_comm *comm, ct_device device, void *user) {
    job *j = user;
    ct_scope_begin();
    ct_status status = CT_OK;
    if (rank == j->skip_rank) goto done;
    if (j->failing_rank && rank == j->failing_rank) {
        ct_reshape(ct_zeros(1, (int64_t[]){3}, CT_F32, CT_CPU), 1, (int64_t[]){4}); /* an error */
        ct_scope_end();
        return 1;
    }
    int64_t n = rank == j->mismatched_rank ? N + 1 : N;
    ct_tensor *a = rank_tensor(rank, n, CT_F32, j->device);
    ct_tensor *b = rank_tensor(rank, N, CT_F64, j->device);
    ct_tensor *c = rank_tensor(rank, N, CT_F32, j->device);
    ct_tensor *ints = ct_cast(rank_tensor(rank, N, CT_F64, j->device), CT_I64);
    status = !a || !b || !c || !ints ? ct_last_status() : CT_OK;
    if (status == CT_OK) status = ct_comm_all_reduce(comm, a, CT_COMM_SUM);
    if (status == CT_OK) status = ct_comm_all_reduce(comm, b, CT_COMM_AVG);
    if (status == CT_OK) status = ct_comm_all_reduce(comm, ints, CT_COMM_SUM);
    if (status == CT_OK) status = ct_comm_broadcast(comm, c, 2);
    ct_tensor *g = status == CT_OK ? ct_comm_all_gather(comm, c) : NULL;
    if (status == CT_OK && !g) status = ct_last_status();
    if (status == CT_OK) status = ct_comm_barrier(comm);
    if (status == CT_OK) {
        double ibuf[N];
        bool ok = read_back(a, j->sum[rank], N) && read_back(b, j->avg[rank], N) &&
                  read_back(c, j->bcast[rank], N) && read_back(ints, ibuf, N);
        /* The all-gather of the broadcast: RANKS copies of rank 2's values. */
        ok = ok && ct_ndim(g) == 2 && ct_size(g, 0) == RANKS && ct_size(g, 1) == N &&
             ct_device_equal(ct_device_of(g), j->device) &&
             read_back(g, j->gathered[rank], RANKS * N);
        for (int i = 0; i < N; i++) j->isum[rank][i] = (int64_t)ibuf[i];
        status = ok ? CT_OK : CT_ERR_STATE;
    }
done:
    j->status[rank] = status;
    snprintf(j->message[rank], sizeof j->message[rank], "%s", ct_last_error());
    /* A broken communicator refuses at once. */
    j->again[rank] = status == CT_OK ? CT_OK : ct_comm_barrier(comm);
    ct_clear_error();
    ct_scope_end();
    return 0;
}

static int spawn_job(job *j, double timeout) {
    ct_comm *comms[RANKS];
    if (ct_comm_threads(RANKS, comms) != CT_OK) return -1;
    ct_device devices[RANKS] = {j->device, j->device, j->device};
    for (int r = 0; r < RANKS; r++) ct_comm_set_timeout(comms[r], timeout);
    int rc = ct_comm_spawn(RANKS, comms, devices, collectives, j);
    for (int r = 0; r < RANKS; r++) ct_comm_free(comms[r]);
    return rc;
}

static bool run_job(job *j, double timeout) { return spawn_job(j, timeout) == 0; }

DEVICE_TEST(test_dist_threads_collectives_match_definitions) {
    job j = {.device = device, .skip_rank = -1, .mismatched_rank = -1};
    CHECK(run_job(&j, 60));
    for (int r = 0; r < RANKS; r++) {
        if (j.status[r] != CT_OK) ct_test_fail(__FILE__, __LINE__, "rank %d: %s", r, j.message[r]);
        CHECK(j.status[r] == CT_OK);
        for (int i = 0; i < N; i++) {
            double sum = 0;
            for (int q = 0; q < RANKS; q++) sum += value(q, i);
            CHECK_NEAR(j.sum[r][i], sum, 1e-5 * (1 + fabs(sum)));
            CHECK_NEAR(j.avg[r][i], sum / RANKS, 1e-12 * (1 + fabs(sum)));
            int64_t isum = 0;
            for (int q = 0; q < RANKS; q++) isum += (int64_t)value(q, i);
            CHECK(j.isum[r][i] == isum);
            CHECK_NEAR(j.bcast[r][i], (float)value(2, i), 0);
            for (int q = 0; q < RANKS; q++)
                CHECK_NEAR(j.gathered[r][q * N + i], (float)value(2, i), 0);
        }
        /* Every rank has the same bits. */
        CHECK(memcmp(j.sum[r], j.sum[0], sizeof j.sum[0]) == 0);
    }
}

TEST(test_dist_threads_mismatch_is_named) {
    job j = {.device = CT_CPU, .skip_rank = -1, .mismatched_rank = 1};
    CHECK(run_job(&j, 60));
    for (int r = 0; r < RANKS; r++) {
        CHECK(j.status[r] == CT_ERR_COMM);
        CHECK(strstr(j.message[r], "mismatched collective"));
        CHECK(strstr(j.message[r], "ct_comm_all_reduce #0 (sum of 7 float32)"));
        CHECK(strstr(j.message[r], "(sum of 8 float32)"));
        CHECK(j.again[r] == CT_ERR_COMM);
    }
}

TEST(test_dist_threads_missing_rank_times_out_naming_it) {
    job j = {.device = CT_CPU, .skip_rank = 1, .mismatched_rank = -1};
    CHECK(run_job(&j, 0.3));
    for (int r = 0; r < RANKS; r += 2) {
        CHECK(j.status[r] == CT_ERR_COMM);
        if (!strstr(j.message[r], "ranks not heard from: 1"))
            ct_test_fail(__FILE__, __LINE__, "rank %d: %s", r, j.message[r]);
        CHECK(strstr(j.message[r], "ct_comm_all_reduce #0"));
        CHECK(strstr(j.message[r], "timed out after 0.3 s"));
        CHECK(j.again[r] == CT_ERR_COMM);
    }
}

/* A replica that returns an error calls no more collectives: the others fail at once with
 * its reason, not at their deadline (60 s here). */
TEST(test_dist_threads_failed_rank_fails_the_others_at_once) {
    job j = {.device = CT_CPU, .skip_rank = -1, .mismatched_rank = -1, .failing_rank = 1};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(spawn_job(&j, 60) == 1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK((double)(t1.tv_sec - t0.tv_sec) < 30);
    for (int r = 0; r < RANKS; r += 2) {
        CHECK(j.status[r] == CT_ERR_COMM);
        if (!strstr(j.message[r], "rank 1 of 3 (cpu:0) stopped with an error: ct_reshape"))
            ct_test_fail(__FILE__, __LINE__, "rank %d: %s", r, j.message[r]);
        CHECK(j.again[r] == CT_ERR_COMM);
    }
}

TEST(test_dist_world_of_one) {
    ct_comm *world = ct_comm_world();
    CHECK_NOT_NULL(world);
    CHECK(ct_comm_size(world) == 1 && ct_comm_rank(world) == 0);
    CHECK(strcmp(ct_comm_engine(world), "self") == 0);
    ct_scope_begin();
    ct_tensor *t = rank_tensor(0, N, CT_F32, CT_CPU);
    CHECK_OK(ct_comm_all_reduce(world, t, CT_COMM_AVG));
    double got[N];
    CHECK(read_back(t, got, N));
    for (int i = 0; i < N; i++) CHECK_NEAR(got[i], (float)value(0, i), 0);
    ct_tensor *g = ct_comm_all_gather(world, t);
    CHECK(g && ct_ndim(g) == 2 && ct_size(g, 0) == 1);
    CHECK_OK(ct_comm_barrier(world));
    ct_scope_end();
    ct_comm_statistics stats;
    CHECK_OK(ct_comm_stats(world, &stats));
    CHECK(stats.collectives == 3 && stats.bytes == 2 * N * 4);
    ct_comm_free(world);
}

TEST(test_dist_bad_arguments) {
    ct_comm *comms[2];
    CHECK(ct_comm_threads(0, comms) == CT_ERR_INVALID_ARG);
    CHECK(ct_comm_threads(65, comms) == CT_ERR_INVALID_ARG);
    ct_clear_error();
    CHECK_OK(ct_comm_threads(1, comms));
    CHECK(ct_comm_set_timeout(comms[0], 0) == CT_ERR_INVALID_ARG);
    CHECK(ct_comm_set_timeout(comms[0], -1) == CT_ERR_INVALID_ARG);
    CHECK_OK(ct_comm_set_timeout(comms[0], 2.5));
    CHECK(ct_comm_timeout(comms[0]) == 2.5);
    ct_scope_begin();
    ct_tensor *t = ct_zeros(1, (int64_t[]){3}, CT_F32, CT_CPU);
    CHECK(ct_comm_broadcast(comms[0], t, 1) == CT_ERR_INVALID_ARG);
    CHECK(ct_comm_all_reduce(comms[0], ct_zeros(1, (int64_t[]){3}, CT_U8, CT_CPU), CT_COMM_SUM) ==
          CT_ERR_DTYPE);
    CHECK(ct_comm_all_reduce(comms[0], t, (ct_comm_op)7) == CT_ERR_INVALID_ARG);
    ct_clear_error();
    ct_scope_end();
    ct_comm_free(comms[0]);
    /* ct_comm_spawn takes the ranks of one threads group only. */
    ct_comm *world = ct_comm_world();
    CHECK_NOT_NULL(world);
    ct_device cpu = CT_CPU;
    CHECK(ct_comm_spawn(1, &world, &cpu, collectives, NULL) == -1);
    CHECK_ERROR(CT_ERR_INVALID_ARG, "ct_comm_threads group");
    ct_comm_free(world);
}

TEST(test_dist_timeout_from_environment) {
    ct_comm *comms[1];
    setenv("CT_COMM_TIMEOUT", "12.5", 1);
    CHECK_OK(ct_comm_threads(1, comms));
    CHECK(ct_comm_timeout(comms[0]) == 12.5);
    ct_comm_free(comms[0]);
    setenv("CT_COMM_TIMEOUT", "soon", 1);
    ct_test_warnings warnings = {0};
    ct_set_log_hook(ct_test_record_warning, &warnings);
    CHECK_OK(ct_comm_threads(1, comms));
    ct_set_log_hook(NULL, NULL);
    unsetenv("CT_COMM_TIMEOUT");
    CHECK(ct_comm_timeout(comms[0]) == 300);
    CHECK(warnings.count == 1 && strstr(warnings.last, "CT_COMM_TIMEOUT"));
    ct_comm_free(comms[0]);
}
