/* Ranks that share a GPU. NCCL (since 2.5) refuses two ranks of a communicator on one GPU
 * ("Duplicate GPU detected"), as when mpirun starts more ranks than a machine has GPUs.
 * Before NCCL starts, ct_comm_nccl all-gathers every rank's GPU UUID over the bootstrap;
 * where two ranks share one, every rank (each sees the same UUIDs, so all decide alike) gets
 * instead a communicator that runs its collectives on the bootstrap's engine, through host
 * memory, and rank 0 logs one warning that says why.
 *
 * That communicator borrows the bootstrap's engine: each collective is started, polled and
 * released by the bootstrap's engine on the bootstrap's state, so that it takes its place in
 * the bootstrap's order (MPI needs every rank to post its collectives in one order) and its
 * deadline and numbering stay this communicator's own. A failure breaks both: the bootstrap's
 * engine state is shared. */
#include <stdio.h>
#include <string.h>

#include "core/error_impl.h"
#include "dist/comm_impl.h"

/* What a rank tells the others: its GPU's UUID and its CUDA index. */
#define WORDS 3

typedef struct borrowed {
    ct__comm_engine engine; /* the bootstrap's name and traits, calling into it */
    ct_comm *bootstrap;
} borrowed;

static ct_comm *lender(const ct_comm *comm) { return ((const borrowed *)comm->state)->bootstrap; }

/* A failure of the bootstrap's engine breaks this communicator too. */
static ct_status mirror(ct_comm *comm, ct_status status) {
    const ct_comm *b = lender(comm);
    if (b->broken && !comm->broken) {
        comm->broken = true;
        snprintf(comm->broken_why, sizeof comm->broken_why, "%s", b->broken_why);
    }
    comm->abandoned |= b->abandoned;
    return status;
}

static ct_status borrowed_start(ct_comm *comm, ct__coll *coll) {
    ct_comm *b = lender(comm);
    if (b->broken)
        return ct__comm_fail(comm,
                             "%s on %s: the communicator whose engine it runs on failed "
                             "earlier: %s",
                             ct__coll_name(coll->kind), coll->what, b->broken_why);
    ct_status status = b->engine->start(b, coll);
    return status == CT_OK ? CT_OK : mirror(comm, status);
}

static ct_status borrowed_poll(ct_comm *comm, ct__coll *coll) {
    ct_comm *b = lender(comm);
    ct_status status = b->engine->poll(b, coll);
    return status == CT_OK ? CT_OK : mirror(comm, status);
}

static void borrowed_missing(const ct_comm *comm, const ct__coll *coll, char *buf, size_t size) {
    const ct_comm *b = lender(comm);
    if (b->engine->missing) b->engine->missing(b, coll, buf, size);
}

/* A collective released before it ended (this communicator's deadline passed) leaves the
 * bootstrap's engine with a collective the other ranks may still run: the bootstrap is
 * broken and abandoned as well. */
static void borrowed_release(ct_comm *comm, ct__coll *coll) {
    ct_comm *b = lender(comm);
    if (comm->broken && !b->broken) {
        b->broken = true;
        snprintf(b->broken_why, sizeof b->broken_why, "%s", comm->broken_why);
    }
    b->abandoned |= comm->abandoned;
    if (b->engine->release) b->engine->release(b, coll);
}

static void borrowed_destroy(ct_comm *comm, bool clean) {
    (void)clean;
    ct__free_mem(comm->state);
}

/* "GPU-8-4-4-4-12 hex digits", as nvidia-smi writes a UUID. */
static void uuid_str(const int64_t *words, char *buf, size_t size) {
    unsigned char u[16];
    memcpy(u, words, sizeof u);
    snprintf(buf, size, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

/* The first two ranks (*a < *b) whose known UUIDs are equal; false when none. */
static bool first_pair(const int64_t *all, int size, int *a, int *b) {
    static const int64_t unknown[2];
    for (int i = 0; i < size; i++) {
        if (!memcmp(all + WORDS * i, unknown, sizeof unknown)) continue;
        for (int j = i + 1; j < size; j++)
            if (!memcmp(all + WORDS * i, all + WORDS * j, sizeof unknown)) {
                *a = i, *b = j;
                return true;
            }
    }
    return false;
}

static void warn(const ct_comm *bootstrap, const int64_t *all, int a, int b) {
    char uuid[64], where[96];
    uuid_str(all + WORDS * a, uuid, sizeof uuid);
    long long da = all[WORDS * a + 2], db = all[WORDS * b + 2];
    if (da == db)
        snprintf(where, sizeof where, "cuda:%lld", da);
    else
        snprintf(where, sizeof where, "one GPU (rank %d's cuda:%lld, rank %d's cuda:%lld)", a, da,
                 b, db);
    char engine[32];
    if (!strcmp(bootstrap->engine->name, "mpi"))
        snprintf(engine, sizeof engine, "MPI");
    else
        snprintf(engine, sizeof engine, "the %s engine", bootstrap->engine->name);
    ct__log(CT_LOG_WARNING,
            "ranks %d and %d share %s (UUID %s); NCCL allows one rank per GPU; using %s for the "
            "collectives (through host memory)",
            a, b, where, uuid, engine);
}

ct_status ct__comm_shared_gpu(ct_comm *bootstrap, ct_device device, ct_comm **out) {
    *out = NULL;
    if (!bootstrap || bootstrap->size == 1) return CT_OK;
    ct_device_properties props;
    if (ct_device_info(device, &props) != CT_OK) return ct_last_status();
    int64_t mine[WORDS] = {0, 0, device.index};
    memcpy(mine, props.uuid, sizeof props.uuid);
    int64_t *all = ct__malloc((size_t)bootstrap->size * sizeof mine);
    if (!all) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm_nccl: out of host memory");
    ct__coll coll = {.kind = CT__COLL_ALL_GATHER,
                     .dtype = CT_I64,
                     .count = WORDS,
                     .buf = mine,
                     .out = all,
                     .what = "the ranks' GPU UUIDs"};
    ct_status status = ct__comm_run(bootstrap, &coll);
    int a, b;
    if (status != CT_OK || !first_pair(all, bootstrap->size, &a, &b)) {
        ct__free_mem(all);
        return status;
    }
    if (bootstrap->rank == 0) warn(bootstrap, all, a, b);
    ct__free_mem(all);
    borrowed *s = ct__calloc(1, sizeof *s);
    if (!s) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_comm_nccl: out of host memory");
    s->bootstrap = bootstrap;
    s->engine = (ct__comm_engine){.name = bootstrap->engine->name,
                                  .synchronous = bootstrap->engine->synchronous,
                                  .start = borrowed_start,
                                  .poll = borrowed_poll,
                                  .missing = borrowed_missing,
                                  .release = borrowed_release,
                                  .destroy = borrowed_destroy};
    *out = ct__comm_new(&s->engine, bootstrap->rank, bootstrap->size, bootstrap->local_rank, s);
    if (!*out) {
        ct__free_mem(s);
        return ct_last_status();
    }
    (*out)->timeout = bootstrap->timeout;
    return CT_OK;
}
