/* Data-parallel training (PyTorch's DistributedDataParallel): every rank starts from rank
 * 0's parameters and buffers; the gradients travel in buckets, filled in reverse parameter
 * order (the order backward produces them: 1 MiB for the first bucket, which fills soonest,
 * 25 MiB for the rest; one bucket on an engine that cannot overlap backward) and each
 * all-reduced as soon as its last gradient is in, while backward goes on. Each gradient enters its
 * bucket scaled by local/global samples, so the sum over ranks is the mean over the global batch,
 * an uneven last batch included. Buckets start in order on every rank (collectives must match), and
 * in-flight ones are polled from the hook after every node of backward, so that MPI progresses them
 * during backward. With an engine that works on device memory (NCCL) a bucket is packed on the host
 * as for the others, then copied to a device twin that the engine reduces, and copied back:
 * correct, but two transfers per bucket more than packing on the device would take.
 * The last bucket also carries CT_DDP_STOP_REASONS floats after its gradients: a 1 at
 * reason - 1 from a rank that asked to stop, so that the sums tell every rank which reasons
 * any rank gave, without a collective of their own. The engine reduces a bucket in place
 * (buf_outlives): a bucket whose collective never ended is leaked, never freed. */
#include <stdio.h>
#include <string.h>

#include "autograd/grad_hook_impl.h"
#include "core/transfer_impl.h"
#include "dist/comm_impl.h"
#include "nn/module_impl.h"
#include "ops/op_impl.h"

#define DEFAULT_BUCKET_BYTES ((size_t)25 << 20)
#define DEFAULT_FIRST_BUCKET_BYTES ((size_t)1 << 20)
#define MAX_PARAMS 1024

typedef struct bucket {
    int first, count; /* parameters [first, first + count) of the reversed list */
    int64_t elements;
    float *buf;
    ct_tensor *dev; /* a device engine's (NCCL) copy of buf, on the engine's device */
    int ready;
    bool launched, synchronous;
    double launched_at, ended_at;
    ct__coll coll;
    char what[48];
} bucket;

struct ct_ddp {
    ct_comm *comm;
    int nparams, nbuckets, next_launch;
    ct_tensor **params; /* reversed; borrowed from the model */
    int *bucket_of;
    int64_t *offset;
    bool *ready;
    bucket *buckets;
    double scale;      /* this step's local / global samples */
    int stop_request;  /* this rank's stop reason, carried by every step from now on */
    int stop_reason;   /* the largest any rank carried in the last step; 0: none */
    int64_t stop_at;   /* the stop reasons' offset in the last bucket */
    ct_status failure; /* the first failure inside backward's hook */
    char failure_message[768];
    ct_ddp_statistics stats;
};

static ct_status note_failure(ct_ddp *d, ct_status status) {
    if (d->failure == CT_OK && status != CT_OK) {
        d->failure = status;
        snprintf(d->failure_message, sizeof d->failure_message, "%s", ct_last_error());
    }
    return d->failure;
}

static void mark_ended(bucket *b) {
    if (b->coll.done && b->ended_at == 0)
        b->ended_at = b->coll.ended ? b->coll.ended : ct__comm_now();
}

/* A device engine's bucket travels from its device copy: buf there first, with the copy
 * ended before the engine's own stream reads it. */
static ct_status to_device(bucket *b) {
    if (!b->dev) return CT_OK;
    ct_device device = b->dev->storage->device;
    ct_status status = ct__transfer(&device, ct__data(b->dev), NULL, b->buf,
                                    (size_t)b->elements * sizeof(float), false, "ct_ddp_backward");
    return status == CT_OK ? ct_synchronize(device) : status;
}

/* Start the buckets that are full, in order; poll those in flight. */
static ct_status progress(ct_ddp *d) {
    while (d->next_launch < d->nbuckets && d->failure == CT_OK) {
        bucket *b = &d->buckets[d->next_launch];
        if (b->ready < b->count) break;
        b->coll = (ct__coll){.kind = CT__COLL_ALL_REDUCE,
                             .dtype = CT_F32,
                             .count = b->elements,
                             .op = CT_COMM_SUM,
                             .buf = b->dev ? (void *)ct__data(b->dev) : b->buf,
                             .buf_outlives = true,
                             .what = b->what};
        b->launched_at = ct__comm_now();
        b->launched = true;
        if (note_failure(d, to_device(b)) != CT_OK) break;
        note_failure(d, ct__comm_start(d->comm, &b->coll));
        b->synchronous = b->coll.done;
        mark_ended(b);
        d->next_launch++;
    }
    for (int i = 0; i < d->next_launch && d->failure == CT_OK; i++) {
        bucket *b = &d->buckets[i];
        if (b->coll.finished) continue;
        note_failure(d, ct__comm_poll(d->comm, &b->coll));
        mark_ended(b);
    }
    return d->failure;
}

/* Parameter i's gradient (or zeros without one), scaled, into its bucket. */
static ct_status pack(ct_ddp *d, int i) {
    ct_tensor *p = d->params[i], *g = p->grad;
    float *dst = d->buckets[d->bucket_of[i]].buf + d->offset[i];
    size_t bytes = (size_t)p->numel * sizeof(float);
    if (!g) {
        memset(dst, 0, bytes);
    } else if (g->storage->device.type == CT_DEVICE_CPU && g->contiguous) {
        const float *src = (const float *)ct__data(g);
        for (int64_t k = 0; k < p->numel; k++) dst[k] = (float)(src[k] * d->scale);
        return CT_OK;
    } else {
        ct_tensor *dense = ct_contiguous(g);
        ct_status status = dense ? ct__transfer(NULL, dst, &dense->storage->device, ct__data(dense),
                                                bytes, false, "ct_ddp_backward")
                                 : ct_last_status();
        ct_release(dense);
        if (status != CT_OK) return status;
        for (int64_t k = 0; k < p->numel; k++) dst[k] = (float)(dst[k] * d->scale);
    }
    return CT_OK;
}

static ct_status mark_ready(ct_ddp *d, int i) {
    if (d->ready[i])
        return ct__error(CT_ERR_STATE,
                         "ct_ddp_backward: a parameter (%lld elements, number %d from the last) "
                         "got its gradient twice in one backward; data parallelism needs each "
                         "parameter used once per step",
                         (long long)d->params[i]->numel, i);
    ct_status status = pack(d, i);
    if (status != CT_OK) return status;
    d->ready[i] = true;
    d->buckets[d->bucket_of[i]].ready++;
    return CT_OK;
}

/* A leaf's gradient is ready (NULL: a node of backward ran): pack it, start what is full,
 * poll what is in flight. */
static void on_grad_ready(ct_tensor *leaf, void *user) {
    ct_ddp *d = user;
    if (d->failure != CT_OK) return;
    if (!leaf) {
        progress(d);
        return;
    }
    for (int i = 0; i < d->nparams; i++)
        if (d->params[i] == leaf) {
            if (note_failure(d, mark_ready(d, i)) == CT_OK) progress(d);
            return;
        }
}

/* The reduced bucket values back into each parameter's gradient. */
static ct_status unpack(ct_ddp *d) {
    for (int i = 0; i < d->nbuckets; i++) {
        bucket *b = &d->buckets[i];
        if (!b->dev) continue;
        ct_device device = b->dev->storage->device;
        ct_status status =
            ct__transfer(NULL, b->buf, &device, ct__data(b->dev),
                         (size_t)b->elements * sizeof(float), false, "ct_ddp_backward");
        if (status != CT_OK) return status;
    }
    for (int i = 0; i < d->nparams; i++) {
        ct_tensor *p = d->params[i];
        const float *src = d->buckets[d->bucket_of[i]].buf + d->offset[i];
        size_t bytes = (size_t)p->numel * sizeof(float);
        ct_tensor *g = p->grad;
        if (g && g->storage->device.type == CT_DEVICE_CPU && g->contiguous) {
            memcpy(ct__data(g), src, bytes);
            ct__storage_written(g);
            continue;
        }
        ct_tensor *host = ct__host_tensor_new(CT_F32, p->ndim, p->shape);
        if (!host) return ct_last_status();
        memcpy(ct__data(host), src, bytes);
        ct_tensor *moved = ct_to(host, p->storage->device);
        ct_release(host);
        if (!moved) return ct_last_status();
        ct__set_leaf_grad(p, moved);
    }
    return CT_OK;
}

/* The largest stop reason whose sum over the ranks is not zero (unpack brought a device
 * engine's sums back to buf). */
static int carried_stop(const ct_ddp *d) {
    const float *reasons = d->buckets[d->nbuckets - 1].buf + d->stop_at;
    for (int r = CT_DDP_STOP_REASONS; r > 0; r--)
        if (reasons[r - 1] > 0.5f) return r;
    return 0;
}

static void account(ct_ddp *d, double backward_end) {
    for (int i = 0; i < d->nbuckets; i++) {
        const bucket *b = &d->buckets[i];
        double ended = b->ended_at ? b->ended_at : ct__comm_now();
        d->stats.comm_seconds += ended - b->launched_at;
        /* A collective that ended inside its start (the threads engine) held backward up:
         * none of it is hidden, all of it waited. */
        if (b->synchronous) {
            d->stats.wait_seconds += ended - b->launched_at;
            continue;
        }
        double until = ended < backward_end ? ended : backward_end;
        if (until > b->launched_at) d->stats.hidden_seconds += until - b->launched_at;
    }
}

static ct_status check_step(const ct_ddp *d, const ct_tensor *loss, int64_t local, int64_t global) {
    if (!d) return ct__error(CT_ERR_INVALID_ARG, "ct_ddp_backward: ddp is NULL");
    if (global <= 0 || local < 0 || local > global || (local > 0) != (loss != NULL))
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_ddp_backward: expected 0 <= local_samples <= global_samples, "
                         "global_samples > 0 and a loss exactly when local_samples > 0; got "
                         "%lld of %lld with%s loss",
                         (long long)local, (long long)global, loss ? "" : "out a");
    return CT_OK;
}

static void reset_step(ct_ddp *d, int64_t local, int64_t global) {
    d->scale = (double)local / (double)global;
    float *reasons = d->buckets[d->nbuckets - 1].buf + d->stop_at;
    memset(reasons, 0, CT_DDP_STOP_REASONS * sizeof *reasons);
    if (d->stop_request) reasons[d->stop_request - 1] = 1;
    d->failure = CT_OK;
    d->next_launch = 0;
    memset(d->ready, 0, (size_t)d->nparams * sizeof *d->ready);
    for (int i = 0; i < d->nbuckets; i++) {
        bucket *b = &d->buckets[i];
        b->ready = 0, b->launched = false, b->launched_at = b->ended_at = 0;
        b->coll.done = b->coll.finished = false;
    }
}

/* Backward failed on this rank: the buckets it started are left in flight and the other
 * ranks wait for the rest, so the communicator cannot be used again. Keeps the error. */
static ct_status abandon_step(ct_ddp *d) {
    ct_status status = ct_last_status();
    if (d->next_launch > 0) {
        snprintf(d->comm->broken_why, sizeof d->comm->broken_why,
                 "a data-parallel backward failed on rank %d after starting %d of %d gradient "
                 "buckets: %s",
                 d->comm->rank, d->next_launch, d->nbuckets, ct_last_error());
        d->comm->broken = true;
        d->comm->abandoned = true;
    }
    return status;
}

ct_status ct_ddp_backward(ct_ddp *d, const ct_tensor *loss, int64_t local_samples,
                          int64_t global_samples) {
    ct_status status = check_step(d, loss, local_samples, global_samples);
    if (status != CT_OK) return status;
    double start = ct__comm_now();
    reset_step(d, local_samples, global_samples);
    if (loss) {
        ct__set_grad_ready_hook(on_grad_ready, d);
        status = ct_backward(loss);
        ct__set_grad_ready_hook(NULL, NULL);
        if (status != CT_OK) return abandon_step(d);
    }
    double backward_end = ct__comm_now();
    /* Parameters backward did not reach (or every one, without a loss) send zeros. */
    for (int i = 0; i < d->nparams && d->failure == CT_OK; i++)
        if (!d->ready[i]) note_failure(d, mark_ready(d, i));
    progress(d);
    for (int i = 0; i < d->nbuckets && d->failure == CT_OK; i++) {
        note_failure(d, ct__comm_wait(d->comm, &d->buckets[i].coll));
        mark_ended(&d->buckets[i]);
    }
    double waited = ct__comm_now() - backward_end;
    if (d->failure != CT_OK) return ct__error(d->failure, "%s", d->failure_message);
    account(d, backward_end);
    status = unpack(d);
    if (status == CT_OK) d->stop_reason = carried_stop(d);
    d->stats.steps++;
    d->stats.wait_seconds += waited;
    d->stats.step_seconds += ct__comm_now() - start;
    return status;
}

/* Group the reversed parameters into buckets as PyTorch does: a bucket takes parameters
 * until it holds at least its cap (first_cap for the first), then the next one opens. */
static ct_status make_buckets(ct_ddp *d, size_t first_cap, size_t cap) {
    d->buckets = ct__calloc((size_t)d->nparams + 1, sizeof *d->buckets);
    if (!d->buckets) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_ddp_new: out of host memory");
    int n = 0;
    for (int i = 0; i < d->nparams; i++) {
        bucket *b = &d->buckets[n];
        if (b->count == 0) b->first = i;
        d->bucket_of[i] = n;
        d->offset[i] = b->elements;
        b->elements += d->params[i]->numel;
        b->count++;
        size_t limit = n == 0 ? first_cap : cap;
        if ((size_t)b->elements * sizeof(float) >= limit && i + 1 < d->nparams) n++;
    }
    /* The last bucket, the only one of a model without parameters, carries the stop. */
    d->nbuckets = n + 1;
    d->stop_at = d->buckets[n].elements;
    d->buckets[n].elements += CT_DDP_STOP_REASONS;
    for (int i = 0; i < d->nbuckets; i++) {
        bucket *b = &d->buckets[i];
        snprintf(b->what, sizeof b->what, "gradient bucket %d of %d", i, d->nbuckets);
        b->buf = ct__malloc((size_t)(b->elements ? b->elements : 1) * sizeof(float));
        if (!b->buf) return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_ddp_new: out of host memory");
        if (d->comm->engine->device_buffers) {
            int64_t length = b->elements ? b->elements : 1;
            b->dev = ct_empty(1, &length, CT_F32, ct__comm_nccl_device(d->comm));
            if (!b->dev) return ct_last_status();
        }
    }
    d->stats.buckets = d->nbuckets;
    return CT_OK;
}

/* The parameters among tensors (not buffer[i]), reversed: the order backward produces them. */
static ct_status take_parameters(ct_ddp *d, int n, ct_tensor *const *tensors, const bool *buffer) {
    int count = 0;
    for (int i = 0; i < n; i++) count += !(buffer && buffer[i]);
    if (count > MAX_PARAMS)
        return ct__error(CT_ERR_UNSUPPORTED,
                         "ct_ddp_new: the model has %d parameters, more "
                         "than the %d supported",
                         count, MAX_PARAMS);
    d->nparams = count;
    d->params = ct__calloc((size_t)count + 1, sizeof *d->params);
    d->bucket_of = ct__calloc((size_t)count + 1, sizeof *d->bucket_of);
    d->offset = ct__calloc((size_t)count + 1, sizeof *d->offset);
    d->ready = ct__calloc((size_t)count + 1, sizeof *d->ready);
    if (!d->params || !d->bucket_of || !d->offset || !d->ready)
        return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_ddp_new: out of host memory");
    for (int i = 0, taken = 0; i < n; i++) {
        if (buffer && buffer[i]) continue;
        if (!tensors[i]) return ct__error(CT_ERR_INVALID_ARG, "ct_ddp_new: tensor %d is NULL", i);
        if (tensors[i]->dtype != CT_F32)
            return ct__error(CT_ERR_DTYPE,
                             "ct_ddp_new: parameters must be f32 (master "
                             "weights), and one is %s",
                             ct_dtype_name(tensors[i]->dtype));
        d->params[count - 1 - taken++] = tensors[i];
    }
    return CT_OK;
}

/* Every parameter and buffer from rank 0. */
static ct_status broadcast_state(ct_comm *comm, int n, ct_tensor *const *tensors) {
    ct_status status = CT_OK;
    for (int i = 0; status == CT_OK && i < n; i++)
        if (tensors[i]) status = ct_comm_broadcast(comm, tensors[i], 0);
    return status;
}

ct_ddp *ct_ddp_new_tensors(ct_comm *comm, int n, ct_tensor *const *tensors, const bool *buffer,
                           const ct_ddp_options *options) {
    if (!comm || (n > 0 && !tensors) || n < 0)
        return ct__fail(CT_ERR_INVALID_ARG, "ct_ddp_new: %s",
                        !comm   ? "comm is NULL"
                        : n < 0 ? "a negative tensor count"
                                : "tensors is NULL");
    ct_ddp *d = ct__calloc(1, sizeof *d);
    if (!d) return ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_ddp_new: out of host memory");
    d->comm = comm;
    /* With an engine that cannot overlap backward, more buckets would only add rendezvous
     * (each waits for the slowest rank): one bucket unless the caller asked for sizes. */
    bool sized = options && (options->bucket_bytes || options->first_bucket_bytes);
    bool one = comm->engine->synchronous && !sized;
    size_t cap = one                                ? SIZE_MAX
                 : options && options->bucket_bytes ? options->bucket_bytes
                                                    : DEFAULT_BUCKET_BYTES;
    size_t first = one                                      ? SIZE_MAX
                   : options && options->first_bucket_bytes ? options->first_bucket_bytes
                                                            : DEFAULT_FIRST_BUCKET_BYTES;
    ct_status status = take_parameters(d, n, tensors, buffer);
    if (status == CT_OK) status = make_buckets(d, first, cap);
    if (status == CT_OK) status = broadcast_state(comm, n, tensors);
    if (status != CT_OK) {
        ct_ddp_free(d);
        return NULL;
    }
    return d;
}

ct_ddp *ct_ddp_new(ct_comm *comm, ct_module *model, const ct_ddp_options *options) {
    if (!comm || !model)
        return ct__fail(CT_ERR_INVALID_ARG, "ct_ddp_new: %s is NULL", comm ? "model" : "comm");
    int n = ct__module_state_size(model, "ct_ddp_new");
    if (n < 0) return NULL;
    ct_tensor **tensors = ct__calloc((size_t)n + 1, sizeof *tensors);
    bool *buffer = ct__calloc((size_t)n + 1, sizeof *buffer);
    ct_ddp *d = NULL;
    if (!tensors || !buffer)
        ct__fail(CT_ERR_OUT_OF_MEMORY, "ct_ddp_new: out of host memory");
    else {
        for (int i = 0; i < n; i++) ct_module_state_at(model, i, &tensors[i], &buffer[i]);
        d = ct_ddp_new_tensors(comm, n, tensors, buffer, options);
    }
    ct__free_mem(tensors);
    ct__free_mem(buffer);
    return d;
}

ct_status ct_ddp_request_stop(ct_ddp *d, int reason) {
    if (!d) return ct__error(CT_ERR_INVALID_ARG, "ct_ddp_request_stop: ddp is NULL");
    if (reason < 1 || reason > CT_DDP_STOP_REASONS)
        return ct__error(CT_ERR_INVALID_ARG,
                         "ct_ddp_request_stop: the reason must be 1 to %d, got %d",
                         CT_DDP_STOP_REASONS, reason);
    if (reason > d->stop_request) d->stop_request = reason;
    return CT_OK;
}

int ct_ddp_stop_reason(const ct_ddp *d) { return d ? d->stop_reason : 0; }

ct_status ct_ddp_stats(const ct_ddp *d, ct_ddp_statistics *out) {
    if (!d || !out) return ct__error(CT_ERR_INVALID_ARG, "ct_ddp_stats: NULL argument");
    *out = d->stats;
    return CT_OK;
}

void ct_ddp_free(ct_ddp *d) {
    if (!d) return;
    /* A bucket whose collective never ended may still be written by MPI: leak it. */
    for (int i = 0; d->buckets && i < d->nbuckets; i++)
        if (!d->buckets[i].launched || d->buckets[i].coll.finished) {
            ct__free_mem(d->buckets[i].buf);
            ct_release(d->buckets[i].dev);
        }
    ct__free_mem(d->buckets);
    ct__free_mem(d->params);
    ct__free_mem(d->bucket_of);
    ct__free_mem(d->offset);
    ct__free_mem(d->ready);
    ct__free_mem(d);
}
