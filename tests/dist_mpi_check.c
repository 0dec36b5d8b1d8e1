/* The MPI engine's checks, run under mpirun by test_dist_mpi.sh (one process per rank):
 *   collectives  every collective against its definition (computed here in float64)
 *   mismatch     rank 1 all-reduces one element more: every rank must name the mismatch
 *   stall        the last rank stops itself (SIGSTOP) before an all-reduce: the others must
 *                end with CT_ERR_COMM naming it within CT_COMM_TIMEOUT
 * Prints one line per rank and exits 0 when the rank saw what it should. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "collectives";
    ct_comm *world = ct_comm_world();
    if (!world) return fail(-1, "ct_comm_world");
    ct_scope_begin();
    int rc = strcmp(mode, "mismatch") == 0 ? mismatch(world)
             : strcmp(mode, "stall") == 0  ? stall(world)
                                           : collectives(world);
    ct_scope_end();
    fflush(stdout);
    ct_comm_free(world);
    return rc;
}
