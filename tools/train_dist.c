/* `ctensor train` with data parallelism: --devices runs one replica per device on threads of
 * this process (the threads engine; CPU or GPU devices are split into logical ones as
 * needed), and a process started by mpirun is one replica of the MPI world (the MPI engine,
 * or on a CUDA device NCCL, bootstrapped over MPI; MPI again where ranks share a GPU, which
 * NCCL refuses). Every replica runs train_replica with its
 * communicator; only rank 0 prints and writes checkpoints, and its summary adds the world,
 * the engine and the time spent in collectives. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cli_impl.h"
#include "train_impl.h"

#define MAX_DEVICES 64

/* Parse "cpu:0,cpu:1" into devices; 0 and a message on a bad list. */
static int parse_devices(const char *list, ct_device *devices) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        if (n == MAX_DEVICES || ct_device_parse(item, &devices[n]) != CT_OK) {
            ct_cli_usage_error("--devices \"%s\": expected up to %d devices such as "
                               "cpu:0,cpu:1 or cuda:0,cuda:1",
                               list, MAX_DEVICES);
            return 0;
        }
        for (int i = 0; i < n; i++)
            if (ct_device_equal(devices[i], devices[n])) {
                ct_cli_usage_error("--devices \"%s\": %s is named twice", list, item);
                return 0;
            }
        n++;
    }
    if (n == 0) ct_cli_usage_error("--devices \"\": name at least one device");
    return n;
}

/* Split the first physical device of each type into logical devices when the list names
 * more of them than there are. */
static ct_status configure_devices(const ct_device *devices, int n) {
    ct_device_type types[8];
    int kinds = ct_device_types(types, 8);
    for (int k = 0; k < kinds && k < 8; k++) {
        int highest = -1;
        for (int i = 0; i < n; i++)
            if (devices[i].type == types[k] && devices[i].index > highest)
                highest = devices[i].index;
        if (highest < 0 || highest < ct_device_count(types[k])) continue;
        ct_status status = ct_configure_logical_devices(types[k], 0, highest + 1, NULL);
        if (status != CT_OK) return status;
    }
    for (int i = 0; i < n; i++) {
        ct_status status = ct_device_check(devices[i]);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

typedef struct replicas {
    train_options *o;
    train_summary summaries[MAX_DEVICES];
} replicas;

static int run_one(int rank, ct_comm *comm, ct_device device, void *user) {
    replicas *r = user;
    train_options o = *r->o;
    o.device = device;
    o.comm = comm;
    if (rank != 0) o.progress = false;
    if (o.comm_timeout > 0) ct_comm_set_timeout(comm, o.comm_timeout);
    return train_is_gpt(o.model) ? train_gpt_replica(&o, &r->summaries[rank])
                                 : train_replica(&o, &r->summaries[rank]);
}

/* --devices: the threads engine. */
static int run_threads(train_options *o) {
    ct_device devices[MAX_DEVICES];
    int n = parse_devices(o->devices, devices);
    if (n == 0) return 2;
    if (configure_devices(devices, n) != CT_OK)
        return ct_cli_fail("--devices: %s", ct_last_error());
    ct_comm *comms[MAX_DEVICES];
    if (ct_comm_threads(n, comms) != CT_OK) return ct_cli_fail("--devices: %s", ct_last_error());
    static replicas r; /* large; one run per process */
    r.o = o;
    int rc = ct_comm_spawn(n, comms, devices, run_one, &r);
    if (rc < 0) ct_cli_fail("--devices: %s", ct_last_error());
    for (int i = 0; i < n; i++) ct_comm_free(comms[i]);
    if (rc == 0 && !train_is_gpt(o->model)) { /* a GPT's rank 0 printed its own */
        ct_device_str(devices[0], r.summaries[0].device, sizeof r.summaries[0].device);
        train_print_summary(o, &r.summaries[0]);
    }
    /* Every replica stopped for the same signal (their collectives agreed on it). */
    if (rc == 0 && r.summaries[0].interrupted_by) rc = 128 + r.summaries[0].interrupted_by;
    return rc < 0 ? 1 : rc;
}

/* Several ranks on one machine, OMP_NUM_THREADS unset: each takes its share of the cores
 * (at least one), as the threads engine's replicas do, rather than every rank starting a
 * thread per core and the ranks' threads taking the cores from each other. */
static void share_cores(void) {
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long ranks = local ? strtol(local, NULL, 10) : 1, cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (getenv("OMP_NUM_THREADS") || ranks <= 1 || cores < 1) return;
#ifdef _OPENMP
    omp_set_num_threads(cores / ranks > 1 ? (int)(cores / ranks) : 1);
#endif
}

/* Under mpirun: this process is one rank of the world. */
static int run_mpi(train_options *o, ct_comm *world) {
    if (ct_device_check(o->device) != CT_OK) return ct_cli_fail("--device: %s", ct_last_error());
    share_cores();
    int rank = ct_comm_rank(world);
    if (o->comm_timeout > 0) ct_comm_set_timeout(world, o->comm_timeout);
    train_options mine = *o;
    /* CUDA tensors go over NCCL, its unique id over the world (which must outlive it); where
     * ranks share a GPU, ct_comm_nccl gives one on the world's engine (MPI) instead. */
    mine.comm = ct_device_is_host(o->device) ? world : ct_comm_nccl(world, o->device);
    if (!mine.comm)
        return ct_cli_fail("rank %d of %d: the communicator for --device cuda: %s", rank,
                           ct_comm_size(world), ct_last_error());
    if (rank != 0) mine.progress = false;
    train_summary summary;
    bool gpt = train_is_gpt(o->model); /* prints its own summary */
    int rc = gpt ? train_gpt_replica(&mine, &summary) : train_replica(&mine, &summary);
    if (rc == 0 && rank == 0 && !gpt) train_print_summary(&mine, &summary);
    if (rc != 0) ct_cli_fail("rank %d of %d failed", rank, ct_comm_size(world));
    if (mine.comm != world) ct_comm_free(mine.comm);
    /* Every rank stopped after the same step, for the signal their collectives agreed on. */
    return rc == 0 && summary.interrupted_by ? 128 + summary.interrupted_by : rc;
}

int train_dist_run(train_options *o, ct_comm *world) {
    if (o->devices && ct_comm_size(world) > 1) {
        return ct_cli_usage_error("--devices: not under mpirun, where each process is one "
                                  "replica on --device");
    }
    return o->devices ? run_threads(o) : run_mpi(o, world);
}

void train_dist_print_text(const train_summary *s) {
    if (s->world_size <= 1) return;
    const ct_ddp_statistics *d = &s->ddp;
    double comm = d->comm_seconds, exposed = d->wait_seconds;
    printf("  data parallel %d ranks (%s engine), %lld gradient buckets per step\n", s->world_size,
           s->engine, (long long)d->buckets);
    printf("  collectives   %.2f s in gradient all-reduces, %.2f s of it hidden behind "
           "backward (%.0f%%); %.2f s waited, %.1f%% of the training time\n",
           comm, d->hidden_seconds, comm > 0 ? 100 * d->hidden_seconds / comm : 0.0, exposed,
           s->seconds > 0 ? 100 * exposed / s->seconds : 0.0);
}

void train_dist_print_json(const train_summary *s) {
    const ct_ddp_statistics *d = &s->ddp;
    printf(", \"world_size\": %d, \"engine\": ", s->world_size > 0 ? s->world_size : 1);
    ct_cli_json_string(stdout, s->engine ? s->engine : "self");
    printf(", \"comm_buckets\": %lld, \"comm_seconds\": %.4f, \"comm_hidden_seconds\": %.4f, "
           "\"comm_wait_seconds\": %.4f, \"comm_overlap\": %.4f",
           (long long)d->buckets, d->comm_seconds, d->hidden_seconds, d->wait_seconds,
           d->comm_seconds > 0 ? d->hidden_seconds / d->comm_seconds : 0.0);
}
