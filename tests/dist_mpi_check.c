/* The MPI engine's checks, run under mpirun by test_dist_mpi.sh (one process per rank):
 *   collectives  every collective against its definition (computed here in float64)
 *   mismatch     rank 1 all-reduces one element more: every rank must name the mismatch
 *   stall        the last rank stops itself (SIGSTOP) before an all-reduce: the others must
 *                end with CT_ERR_COMM naming it within CT_COMM_TIMEOUT
 *   buckets      data-parallel steps with many small buckets in flight at once, the ranks
 *                at different paces: every rank must end with the same parameters
 *   progress     a bucket launched before a long node of backward (a large product) ends
 *                while that node runs, with no poll from backward in between: the engine's
 *                own thread moves it on
 * Prints one line per rank and exits 0 when the rank saw what it should. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctensor/ctensor.h"

#define N 5

static double value(int r, int i) { return (r + 1) * 0.25 + i * (r % 2 ? -1.5 : 3.0); }

static ct_tensor *rank_tensor(int r, int64_t n, ct_dtype dtype) {
    double host[N + 1];
    for (int i = 0; i < n; i++) host[i] = value(r, i);
    return ct_cast(ct_from_data(host, 1, &n, CT_F64, CT_CPU), dtype);
}

static int fail(int rank, const char *what) {
    printf("rank %d: FAIL %s: %s %s\n", rank, what, ct_status_name(ct_last_status()),
           ct_last_error());
    return 1;
}

static bool near(const ct_tensor *t, int i, double expected, double tol) {
    double got = 0;
    ct_tensor *e = ct_cast(ct_slice(t, 0, i, i + 1, 1), CT_F64);
    bool ok = e && ct_item(e, &got) == CT_OK && (got - expected) * (got - expected) <= tol * tol;
    ct_release(e);
    if (!ok) printf("element %d: %.17g, expected %.17g\n", i, got, expected);
    return ok;
}

static int collectives(ct_comm *comm) {
    int rank = ct_comm_rank(comm), size = ct_comm_size(comm), root = size - 1;
    if (strcmp(ct_comm_engine(comm), "mpi") != 0) return fail(rank, "engine is not mpi");
    ct_tensor *sum = rank_tensor(rank, N, CT_F32), *avg = rank_tensor(rank, N, CT_F64);
    ct_tensor *isum = rank_tensor(rank, N, CT_I64), *b = rank_tensor(rank, N, CT_F32);
    if (ct_comm_all_reduce(comm, sum, CT_COMM_SUM) || ct_comm_all_reduce(comm, avg, CT_COMM_AVG) ||
        ct_comm_all_reduce(comm, isum, CT_COMM_SUM) || ct_comm_broadcast(comm, b, root) ||
        ct_comm_barrier(comm))
        return fail(rank, "a collective");
    ct_tensor *g = ct_comm_all_gather(comm, sum);
    if (!g || ct_ndim(g) != 2 || ct_size(g, 0) != size) return fail(rank, "all-gather's shape");
    for (int i = 0; i < N; i++) {
        double s = 0;
        int64_t si = 0;
        for (int q = 0; q < size; q++) s += (float)value(q, i), si += (int64_t)value(q, i);
        bool ok = near(sum, i, s, 1e-5 * (1 + s * s)) && near(avg, i, s / size, 1e-5) &&
                  near(isum, i, (double)si, 0) && near(b, i, (float)value(root, i), 0);
        ct_tensor *row = ct_slice(g, 0, size - 1, size, 1);
        ok = ok && near(ct_reshape(row, 1, (int64_t[]){N}), i, s, 1e-5 * (1 + s * s));
        if (!ok) return fail(rank, "a value");
    }
    printf("rank %d: PASS collectives of %d ranks\n", rank, size);
    return 0;
}

static int mismatch(ct_comm *comm) {
    int rank = ct_comm_rank(comm);
    ct_tensor *t = rank_tensor(rank, rank == 1 ? N + 1 : N, CT_F32);
    ct_status status = ct_comm_all_reduce(comm, t, CT_COMM_SUM);
    if (status != CT_ERR_COMM || !strstr(ct_last_error(), "mismatched collective"))
        return fail(rank, "the mismatch was not named");
    printf("rank %d: PASS %s\n", rank, ct_last_error());
    return 0;
}

static int stall(ct_comm *comm) {
    int rank = ct_comm_rank(comm), size = ct_comm_size(comm);
    ct_tensor *t = rank_tensor(rank, N, CT_F32);
    if (ct_comm_barrier(comm) != CT_OK) return fail(rank, "the first barrier");
    if (rank == size - 1) {
        printf("rank %d: stopping\n", rank);
        fflush(stdout);
        raise(SIGSTOP);
    }
    ct_status status = ct_comm_all_reduce(comm, t, CT_COMM_SUM);
    if (status != CT_ERR_COMM || !strstr(ct_last_error(), "ct_comm_all_reduce #1"))
        return fail(rank, "the stopped rank was not noticed");
    printf("rank %d: PASS %s\n", rank, ct_last_error());
    fflush(stdout);
    return 3; /* non-zero: mpirun ends the job, the stopped rank with it */
}

static int buckets(ct_comm *comm) {
    int rank = ct_comm_rank(comm);
    ct_manual_seed(rank); /* different on every rank: ct_ddp_new makes them rank 0's */
    ct_module *m = ct_nn_sequential(5, (ct_module *[]){ct_nn_linear(16, 32, true), ct_nn_tanh(),
                                                       ct_nn_linear(32, 32, true), ct_nn_tanh(),
                                                       ct_nn_linear(32, 4, true)});
    ct_ddp *ddp =
        ct_ddp_new(comm, m, &(ct_ddp_options){.bucket_bytes = 64, .first_bucket_bytes = 16});
    ct_tensor *params[8];
    int n = ct_module_parameters(m, params, 8);
    ct_optimizer *sgd = ct_sgd(n, params, &(ct_sgd_options){.lr = 0.05});
    if (!ddp || !sgd) return fail(rank, "ct_ddp_new");
    for (int step = 0; step < 40; step++) {
        ct_scope_begin();
        ct_manual_seed(1000 + (uint64_t)step * 7 + (uint64_t)rank);
        ct_tensor *x = ct_randn(2, (int64_t[]){8, 16}, CT_F32, CT_CPU);
        ct_tensor *y = ct_zeros(1, (int64_t[]){8}, CT_I64, CT_CPU);
        ct_tensor *loss = ct_cross_entropy(ct_module_forward(m, x), y, NULL);
        /* Uneven paces: the ranks reach each bucket at different times. */
        nanosleep(&(struct timespec){0, ((step * 37 + rank * 11) % 5) * 300000L}, NULL);
        ct_status status = ct_optimizer_zero_grad(sgd);
        if (status == CT_OK) status = ct_ddp_backward(ddp, loss, 8, 8 * ct_comm_size(comm));
        if (status == CT_OK) status = ct_optimizer_step(sgd);
        ct_scope_end();
        if (status != CT_OK) return fail(rank, "a step");
    }
    ct_ddp_statistics stats;
    ct_ddp_stats(ddp, &stats);
    for (int i = 0; i < n; i++) {
        ct_tensor *g = ct_comm_all_gather(comm, params[i]);
        ct_tensor *first = ct_slice(g, 0, 0, 1, 1);
        double differs = -1;
        if (ct_item(ct_max(ct_abs(ct_sub(g, first)), 0, NULL, false), &differs) || differs != 0)
            return fail(rank, "the ranks' parameters differ");
    }
    printf("rank %d: PASS %lld steps of %lld buckets, parameters equal on every rank\n", rank,
           (long long)stats.steps, (long long)stats.buckets);
    ct_optimizer_free(sgd);
    ct_ddp_free(ddp);
    ct_module_free(m);
    return 0;
}

/* The share of the step above which bucket 0 waited for backward (see progress). */
#define PROGRESS_SHARE 0.28

static int progress(ct_comm *comm) {
    int rank = ct_comm_rank(comm);
    /* The second layer's 4 MiB weight gradient fills bucket 0 first; the first layer's
     * weight gradient (2 * 4096 * 2048 * 1024 flops, a fifth of a second on a core,
     * half the backward) comes next. */
    ct_module *m = ct_nn_sequential(
        2, (ct_module *[]){ct_nn_linear(2048, 1024, false), ct_nn_linear(1024, 1024, false)});
    ct_ddp *ddp = ct_ddp_new(comm, m, NULL);
    if (!ddp) return fail(rank, "ct_ddp_new");
    for (int step = 0; step < 3; step++) {
        ct_scope_begin();
        ct_tensor *x = ct_randn(2, (int64_t[]){4096, 2048}, CT_F32, CT_CPU);
        ct_tensor *loss = ct_mean(ct_module_forward(m, x), 0, NULL, false);
        ct_status status = ct_ddp_backward(ddp, loss, 4096, 4096 * ct_comm_size(comm));
        ct_scope_end();
        if (status != CT_OK) return fail(rank, "a step");
    }
    ct_ddp_statistics stats;
    ct_ddp_stats(ddp, &stats);
    ct_ddp_free(ddp);
    ct_module_free(m);
    /* Bucket 0's time in flight while backward ran, as a share of the step: the whole first
     * layer's backward when the bucket waits for backward's next poll; a few milliseconds
     * when it moves on by itself. A rank that reaches the bucket first also waits there for
     * the others, so the test takes the rank that waited least: the last to arrive. The first
     * layer's backward is about a third of the step: without the engine's thread the share was
     * 35-43%; with it 2-11%, and 21% under the sanitizers, whose build slows ctensor's own
     * copies around the all-reduce. */
    double share = stats.hidden_seconds / stats.step_seconds, least = share;
    ct_tensor *shares = ct_comm_all_gather(comm, ct_full(1, (int64_t[]){1}, share, CT_F64, CT_CPU));
    if (!shares || ct_item(ct_min(shares, 0, NULL, false), &least) != CT_OK)
        return fail(rank, "the shares' all-gather");
    printf("rank %d: %s bucket 0 in flight %.1f ms per step of %.1f ms (least of the ranks: "
           "%.0f%%)\n",
           rank, least < PROGRESS_SHARE ? "PASS" : "FAIL",
           1e3 * stats.hidden_seconds / (double)stats.steps,
           1e3 * stats.step_seconds / (double)stats.steps, 100 * least);
    return least < PROGRESS_SHARE ? 0 : 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "collectives";
    ct_comm *world = ct_comm_world();
    if (!world) return fail(-1, "ct_comm_world");
    ct_scope_begin();
    int rc = strcmp(mode, "mismatch") == 0   ? mismatch(world)
             : strcmp(mode, "stall") == 0    ? stall(world)
             : strcmp(mode, "buckets") == 0  ? buckets(world)
             : strcmp(mode, "progress") == 0 ? progress(world)
                                             : collectives(world);
    ct_scope_end();
    fflush(stdout);
    ct_comm_free(world);
    return rc;
}
