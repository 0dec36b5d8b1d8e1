/* `ctensor train`: train the MLP, the small CNN or a ResNet on a dataset on a device, with a data
 * loader that prepares and moves batches while the step runs, progress, checkpoints, and
 * a summary of accuracy, time, throughput, memory and transfers. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_impl.h"
#include "train_data_impl.h"
#include "train_impl.h"

/* The largest evaluation batch (never more than the training batch). */
#define EVAL_BATCH 1000

typedef struct trainer {
    train_options *o;
    ct_module *model;
    ct_optimizer *optimizer;
    ct_lr_schedule *schedule; /* advanced after every step; NULL: --schedule none */
    train_data data;
    train_batches *train, *test;
    ct_ddp *ddp; /* data parallelism over o->comm, else NULL */
    /* Under data parallelism, the signal every rank stops for, agreed at a collective (the
     * next step's gradient all-reduce, or the end of an evaluation); 0 while none. */
    int agreed_stop;
    int64_t batch; /* the (global) batch size */
    /* Running sums of the epoch on the device, read at progress points only (a read is a
     * synchronisation). */
    ct_tensor *loss_sum, *correct;
    ct_dtype amp;           /* the autocast dtype; CT_F32: --amp off */
    ct_grad_scaler *scaler; /* --amp f16 only */
    gpu_usage_sampler *gpu; /* the device's GPU read while the epochs run, else NULL */
    /* --profile (on rank 0): the training loops' profile summed over the epochs, and their
     * steps; whether this epoch's profile runs. */
    bool profiling, profile_running;
    ct_profile_stats profile;
    int64_t profiled_steps;
} trainer;

/* SIGINT or SIGTERM, once received: the run stops at the end of the step. A second one
 * ends the process at once (SA_RESETHAND puts the default action back as the handler starts;
 * the watcher puts it back itself). Under data parallelism a signal may reach one rank only
 * (mpirun's ranks are processes): every rank stops after the step whose collective carried it
 * (see stopping).
 * The signals are blocked in the training threads (this one and every thread it starts, which
 * inherit its mask) and taken by a thread of their own in sigwait, so that no handler runs in
 * the middle of a kernel: with the handler on the computing threads, a GPT stopped by a
 * signal corrupted the heap inside oneDNN's GEMM in about one run in ten. The handler stays
 * for threads that libraries started before (they do not block the signals); its only action
 * is a store to a lock-free atomic, which C11 allows in a handler, and which other threads
 * read. */
static atomic_int stop_signal;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop signal must be lock-free for the handler");

static void request_stop(int sig) { atomic_store(&stop_signal, sig); }

static void *watch_stop_signals(void *set) {
    for (;;) {
        int sig;
        if (sigwait(set, &sig) != 0) continue;
        int none = 0;
        if (atomic_compare_exchange_strong(&stop_signal, &none, sig)) continue;
        /* The second: the default action, on this thread, which unblocks it. */
        signal(sig, SIG_DFL);
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, sig);
        pthread_sigmask(SIG_UNBLOCK, &one, NULL);
        raise(sig);
    }
    return NULL;
}

static void catch_stop_signals(void) {
    struct sigaction action = {.sa_handler = request_stop, .sa_flags = SA_RESETHAND};
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    static sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_t watcher;
    if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return;
    if (pthread_create(&watcher, NULL, watch_stop_signals, &set) == 0) {
        pthread_detach(watcher);
        return;
    }
    pthread_sigmask(SIG_UNBLOCK, &set, NULL); /* no watcher: the handler takes them */
}

int train_stop_signal(void) { return atomic_load(&stop_signal); }

/* The signal the run stops for, 0 while it goes on: this process's own, or under data
 * parallelism the one the ranks agreed on, so that every rank stops after the same step
 * and none waits in a collective the others never start. */
static int stopping(const trainer *t) {
    return t->ddp ? t->agreed_stop : atomic_load(&stop_signal);
}

ct_status train_agree_stop(ct_comm *comm, ct_device device, int *agreed) {
    int64_t one = 1, mine = atomic_load(&stop_signal);
    double largest = 0;
    ct_scope_begin();
    ct_tensor *all = ct_comm_all_gather(comm, ct_from_data(&mine, 1, &one, CT_I64, device));
    ct_status status = ct_item(ct_max(all, 0, NULL, false), &largest);
    ct_scope_end();
    if (status == CT_OK && (int)largest > *agreed) *agreed = (int)largest;
    return status;
}

/* Agree on the stop at a point with no gradient all-reduce (the end of an evaluation). */
static ct_status agree_stop(trainer *t) {
    return train_agree_stop(t->o->comm, t->o->device, &t->agreed_stop);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int failed(const char *what) { return ct_cli_fail("%s: %s", what, ct_last_error()); }

/* The exit status for a file or setting named on the command line that cannot be used (its
 * line printed): a usage error, unless the machine ran out of memory or a device failed on the
 * way. */
static int unusable(void) {
    ct_status status = ct_last_status();
    return status == CT_ERR_OUT_OF_MEMORY || status == CT_ERR_BACKEND ? CT_CLI_FAILED
                                                                      : CT_CLI_USAGE;
}

/* failed() for a training or evaluation step: when the step ran out of memory at a batch size
 * the user chose, the line also names the option that finds one that fits. */
static int step_failed(const trainer *t, const char *what) {
    if (ct_last_status() != CT_ERR_OUT_OF_MEMORY || t->o->batch_size == 0) return failed(what);
    return ct_cli_fail("%s: %s; --batch-size auto finds the largest batch that fits", what,
                       ct_last_error());
}

/* Add this batch's loss (times its size) and correct predictions to the running sums. */
static ct_status accumulate(trainer *t, const ct_tensor *logits, const ct_tensor *loss,
                            const ct_tensor *y) {
    ct_no_grad_push();
    ct_tensor *batch_loss = ct_mul_scalar(loss, (double)ct_size(y, 0));
    ct_tensor *hits = ct_sum(ct_eq(ct_argmax(logits, 1, false), y), 0, NULL, false);
    ct_tensor *loss_sum = batch_loss ? ct_add(t->loss_sum, batch_loss) : NULL;
    ct_tensor *correct = hits ? ct_add(t->correct, hits) : NULL;
    ct_no_grad_pop();
    if (!loss_sum || !correct) return ct_last_status();
    ct_keep(loss_sum);
    ct_keep(correct);
    ct_release(t->loss_sum);
    ct_release(t->correct);
    t->loss_sum = loss_sum, t->correct = correct;
    return CT_OK;
}

/* A batch as images (N, C, H, W) of the model's input (a view; the caller's scope releases
 * it). */
static ct_tensor *as_images(const trainer *t, const ct_tensor *x) {
    const train_data *d = &t->data;
    return ct_reshape(x, 4, (int64_t[]){ct_size(x, 0), d->channels, d->height, d->width});
}

/* The model's logits for x, in an autocast region with --amp. */
static ct_tensor *forward(trainer *t, const ct_tensor *x) {
    if (t->amp == CT_F32) return ct_module_forward(t->model, as_images(t, x));
    if (ct_autocast_push(t->o->device.type, t->amp) != CT_OK) return NULL;
    ct_tensor *logits = ct_module_forward(t->model, as_images(t, x));
    ct_autocast_pop();
    return logits;
}

/* The backward pass of loss (NULL: no sample here), its gradients summed over the replicas
 * under data parallelism; then the optimiser's step, through the loss scaler with --amp f16. */
static ct_status backward_and_step(trainer *t, const ct_tensor *loss, int64_t samples,
                                   int64_t global) {
    const ct_tensor *scaled = t->scaler && loss ? ct_grad_scaler_scale(t->scaler, loss) : loss;
    if (loss && !scaled) return ct_last_status();
    ct_status status = CT_OK;
    /* A signal this rank received goes to every rank with this step's gradients. */
    int received = atomic_load(&stop_signal);
    if (t->ddp && received) status = ct_ddp_request_stop(t->ddp, received);
    if (status == CT_OK)
        status = t->ddp ? ct_ddp_backward(t->ddp, scaled, samples, global) : ct_backward(scaled);
    if (status != CT_OK) return status;
    if (t->ddp && ct_ddp_stop_reason(t->ddp) > t->agreed_stop)
        t->agreed_stop = ct_ddp_stop_reason(t->ddp);
    ct_profile_set_phase(CT_PROFILE_OPTIMIZER); /* the loss scaler's unscale too */
    if (!t->scaler) return ct_optimizer_step(t->optimizer);
    status = ct_grad_scaler_step(t->scaler, t->optimizer, NULL);
    return status == CT_OK ? ct_grad_scaler_update(t->scaler) : status;
}

/* A step on this replica's slice (y's samples) of a global batch of `global` samples. */
static ct_status step(trainer *t, const ct_tensor *x, const ct_tensor *y, int64_t global) {
    if (t->ddp && ct_size(y, 0) == 0) { /* no sample of this last batch here: zeros go */
        ct_status status = ct_optimizer_zero_grad(t->optimizer);
        if (status == CT_OK) status = backward_and_step(t, NULL, 0, global);
        if (status == CT_OK && t->schedule) status = ct_lr_schedule_advance(t->schedule);
        return status;
    }
    /* The profile's phases (ctensor/profile.h): ct_backward and the optimiser mark their own. */
    ct_profile_set_phase(CT_PROFILE_FORWARD);
    /* The loss is on autocast's f32 list: the region may end before it. train_load_data
     * checked every label, so a GPU need not read the targets' check back: the step does not
     * wait for the device. */
    ct_tensor *logits = forward(t, x);
    ct_cross_entropy_options loss_options = {.reduction = CT_REDUCTION_MEAN,
                                             .label_smoothing = t->o->label_smoothing,
                                             .ignore_index = -100,
                                             .unchecked_targets = true};
    ct_tensor *loss = ct_cross_entropy(logits, y, &loss_options);
    if (!loss) return ct_last_status();
    ct_status status = ct_optimizer_zero_grad(t->optimizer);
    if (status == CT_OK) status = backward_and_step(t, loss, ct_size(y, 0), global);
    if (status == CT_OK && t->schedule) status = ct_lr_schedule_advance(t->schedule);
    ct_profile_set_phase(CT_PROFILE_OTHER);
    if (status == CT_OK) status = accumulate(t, logits, loss, y);
    return status;
}

static ct_status read_sums(const trainer *t, double *loss_sum, double *correct) {
    ct_status status = CT_OK;
    if (t->ddp) status = ct_comm_all_reduce(t->o->comm, t->loss_sum, CT_COMM_SUM);
    if (t->ddp && status == CT_OK) status = ct_comm_all_reduce(t->o->comm, t->correct, CT_COMM_SUM);
    if (status == CT_OK) status = ct_item(t->loss_sum, loss_sum);
    return status == CT_OK ? ct_item(t->correct, correct) : status;
}

static ct_status reset_sums(trainer *t) {
    ct_release(t->loss_sum);
    ct_release(t->correct);
    t->loss_sum = ct_zeros(0, NULL, CT_F32, t->o->device);
    t->correct = ct_zeros(0, NULL, CT_I64, t->o->device);
    return t->loss_sum && t->correct ? CT_OK : ct_last_status();
}

/* What one pass over the training set measured. */
typedef struct epoch_result {
    double loss, accuracy; /* the epoch's means */
    double seconds;        /* the pass's time */
    double data_seconds;   /* of which the loop spent in ct_loader_next, waiting for batches */
} epoch_result;

/* --profile: start the profile of an epoch's training loop. */
static ct_status profile_begin(trainer *t) {
    ct_status status = t->profiling ? ct_profile_begin() : CT_OK;
    t->profile_running = t->profiling && status == CT_OK;
    return status;
}

/* --profile: end the epoch's profile of `steps` steps and add it to the run's. */
static void profile_end(trainer *t, int64_t steps) {
    if (!t->profile_running) return;
    t->profile_running = false;
    ct_profile_stats epoch;
    ct_profile_report(&epoch);
    ct_profile_end();
    train_profile_add(&t->profile, &epoch);
    t->profiled_steps += steps;
}

/* One pass over the training set. */
static ct_status train_epoch(trainer *t, int epoch, epoch_result *r) {
    ct_status status = train_batches_start(t->train, epoch - 1);
    if (status == CT_OK) status = reset_sums(t);
    int64_t steps = train_batches_count(t->train), done = 0, samples = 0;
    int64_t count = ct_size(t->data.train_images, 0);
    /* The clock starts once every replica is ready, so that another rank's later start-up
     * (its data, its loader) is not counted as this epoch's training time. */
    if (status == CT_OK && t->ddp) status = ct_comm_barrier(t->o->comm);
    double start = now(), last_report = 0, loss_sum = 0, correct = 0;
    if (status == CT_OK) status = profile_begin(t);
    r->data_seconds = 0;
    ct_module_train(t->model, true);
    while (status == CT_OK) {
        ct_scope_begin(); /* a step's tensors go at its end */
        ct_tensor *x, *y;
        double asked = now();
        ct_profile_set_phase(CT_PROFILE_DATA);
        status = train_batches_next(t->train, &x, &y);
        ct_profile_set_phase(CT_PROFILE_OTHER);
        r->data_seconds += now() - asked;
        bool more = status == CT_OK && x;
        int64_t global = count - done * t->batch < t->batch ? count - done * t->batch : t->batch;
        if (more) status = step(t, x, y, global);
        if (more && status == CT_OK) samples += global, done++;
        ct_scope_end();
        if (!more || status != CT_OK || stopping(t)) break;
        double elapsed = now() - start;
        if (t->o->progress && (elapsed - last_report > 0.2 || done == steps)) {
            last_report = elapsed;
            status = ct_item(t->loss_sum, &loss_sum);
            if (status == CT_OK) status = ct_item(t->correct, &correct);
            /* Only this replica's sums during the epoch: a read of every rank's would be a
             * collective at a time each rank picks for itself. */
            if (t->ddp) loss_sum *= ct_comm_size(t->o->comm), correct *= ct_comm_size(t->o->comm);
            double rate = samples / elapsed;
            train_progress(t->o, t->gpu, epoch, done, steps, loss_sum / samples, correct / samples,
                           rate, (steps - done) * (elapsed / done));
        }
    }
    if (status == CT_OK) status = ct_synchronize(t->o->device);
    r->seconds = now() - start;
    profile_end(t, done);
    if (status == CT_OK) status = read_sums(t, &loss_sum, &correct);
    r->loss = samples ? loss_sum / samples : 0;
    r->accuracy = samples ? correct / samples : 0;
    return status;
}

/* Accuracy on the test set, in evaluation mode without recording. The hits add up on the
 * device and are read once at the end: a read per batch would wait for the device each time. */
static ct_status evaluate(trainer *t, double *accuracy) {
    ct_module_eval(t->model);
    ct_status status = train_batches_start(t->test, 0);
    ct_tensor *hits = ct_zeros(0, NULL, CT_I64, t->o->device);
    if (!hits) status = ct_last_status();
    int64_t samples = 0;
    ct_no_grad_push();
    while (status == CT_OK) {
        ct_scope_begin();
        ct_tensor *x, *y;
        status = train_batches_next(t->test, &x, &y);
        bool more = status == CT_OK && x;
        if (more) {
            ct_tensor *predicted = ct_argmax(forward(t, x), 1, false);
            ct_tensor *sum = ct_add(hits, ct_sum(ct_eq(predicted, y), 0, NULL, false));
            if (sum) {
                ct_release(hits);
                hits = ct_keep(sum);
                samples += ct_size(y, 0);
            } else {
                status = ct_last_status();
            }
        }
        ct_scope_end();
        /* Under data parallelism a rank that received a signal stops early: its shard's
         * count is lost with the evaluation, and the ranks agree on the stop below. */
        if (!more || atomic_load(&stop_signal)) break;
    }
    ct_no_grad_pop();
    double total = 0;
    if (status == CT_OK && t->ddp) status = ct_comm_all_reduce(t->o->comm, hits, CT_COMM_SUM);
    if (status == CT_OK && t->ddp) status = agree_stop(t);
    if (t->ddp) samples = ct_size(t->data.test_images, 0);
    if (status == CT_OK) status = ct_item(hits, &total);
    ct_release(hits);
    *accuracy = samples ? total / samples : 0;
    return status;
}

/* The model's parameters (malloc'd; NULL with *n 0 when out of memory). */
static ct_tensor **parameters_of(const ct_module *model, int *n) {
    *n = ct_module_parameters(model, NULL, 0);
    ct_tensor **params = calloc((size_t)(*n ? *n : 1), sizeof *params);
    if (params)
        ct_module_parameters(model, params, *n);
    else
        *n = 0;
    return params;
}

/* --amp f16's loss scaler over the model's parameters, named as in its state dict. */
static ct_grad_scaler *make_scaler(const ct_module *model) {
    int n;
    ct_tensor **params = parameters_of(model, &n);
    const char **names = calloc((size_t)(n ? n : 1), sizeof *names);
    if (!params || !names) {
        free(params), free(names);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        names[i] = "?";
        ct_tensor *entry;
        bool buffer;
        const char *name;
        for (int j = 0; (name = ct_module_state_at(model, j, &entry, &buffer)); j++)
            if (entry == params[i]) names[i] = name;
    }
    ct_grad_scaler *scaler = ct_grad_scaler_new(n, params, names, NULL);
    free(params), free(names);
    return scaler;
}

static ct_optimizer *make_optimizer(const train_options *o, ct_module *model) {
    int n;
    ct_tensor **params = parameters_of(model, &n);
    ct_optimizer *opt = params ? train_optimizer(o, n, params) : NULL;
    free(params);
    return opt;
}

/* Whether a training step at batch b fits in the device's memory: forward and backward on
 * a batch of zeros while the loader's queued batches and the optimiser's state (two
 * tensors per parameter) are held too. */
static bool step_fits(trainer *t, int64_t b, ct_status *status) {
    ct_device device = t->o->device;
    int64_t shape[4] = {b, t->data.channels, t->data.height, t->data.width};
    int queued = 2 * (t->o->workers ? t->o->workers : 1) + 1;
    ct_scope_begin();
    bool ok = true;
    for (int i = 0; i < queued && ok; i++) ok = ct_empty(4, shape, CT_F32, device) != NULL;
    int n;
    ct_tensor **params = parameters_of(t->model, &n);
    ok = ok && params != NULL;
    for (int i = 0; i < n && ok; i++)
        ok = ct_zeros(ct_ndim(params[i]), ct_shape(params[i]), CT_F32, device) &&
             ct_zeros(ct_ndim(params[i]), ct_shape(params[i]), CT_F32, device);
    free(params);
    /* Two passes: the second meets the pool as a training step leaves it (gradients held,
     * blocks split by the first), which the first alone would not see. */
    for (int pass = 0; pass < 2 && ok; pass++) {
        ct_tensor *x = ct_zeros(4, shape, CT_F32, device);
        ct_tensor *y = ct_zeros(1, &b, CT_I64, device);
        ok = ct_backward(ct_cross_entropy(ct_module_forward(t->model, x), y, NULL)) == CT_OK;
    }
    ct_module_zero_grad(t->model);
    ct_scope_end();
    *status = ok || ct_last_status() == CT_ERR_OUT_OF_MEMORY ? CT_OK : ct_last_status();
    if (!ok) ct_clear_error();
    return ok;
}

/* The largest power-of-two batch up to `cap` that fits on this replica's device; 0 when not
 * even 1 does. */
static ct_status local_batch(trainer *t, int64_t cap, int64_t *batch) {
    int64_t b = 4096;
    while (b > 1 && b > cap) b /= 2;
    for (*batch = 0; b >= 1; b /= 2) {
        ct_status status;
        if (step_fits(t, b, &status)) {
            *batch = b;
            return CT_OK;
        }
        if (status != CT_OK) return status;
        ct_empty_cache(t->o->device);
    }
    return CT_OK;
}

/* The smallest of every rank's batch: an all-gather, in which every rank takes part even
 * when its own search failed (its batch is 0 then). */
static ct_status agree_batch(ct_comm *comm, ct_device device, int64_t *batch) {
    int64_t one = 1;
    double smallest = 0;
    ct_scope_begin();
    /* On the replica's device, which a device engine (NCCL) needs. */
    ct_tensor *all = ct_comm_all_gather(comm, ct_from_data(batch, 1, &one, CT_I64, device));
    ct_status status = ct_item(ct_min(all, 0, NULL, false), &smallest);
    ct_scope_end();
    if (status == CT_OK) *batch = (int64_t)smallest;
    return status;
}

/* The largest power-of-two batch up to 4096 (and the training set) that fits; with ranks,
 * the global batch: the world size times the largest local batch that fits on every rank's
 * device (each rank searches its own, then they agree on the smallest). */
static ct_status auto_batch(trainer *t, int64_t *batch) {
    int world = ct_comm_size(t->o->comm);
    int64_t n = ct_size(t->data.train_images, 0), cap = (n < 4096 ? n : 4096) / world;
    ct_status status = local_batch(t, cap > 0 ? cap : 1, batch);
    int64_t mine = status == CT_OK ? *batch : 0;
    if (world > 1) {
        *batch = mine;
        ct_status agreed = agree_batch(t->o->comm, t->o->device, batch);
        if (status == CT_OK) status = agreed;
        if (status != CT_OK) return status;
        *batch *= world;
    }
    if (status != CT_OK) return status;
    if (*batch > 0) return CT_OK;
    ct_cli_fail("out of memory: not even a batch of 1 %s",
                world == 1 ? "fits on the device"
                : mine     ? "per rank fits on another rank's device"
                           : "per rank fits on this rank's device");
    return CT_ERR_OUT_OF_MEMORY;
}

/* Model, optimiser, checkpoint, batch size and loaders; prints its own error line. */
static int set_up(trainer *t, int *first_epoch, int64_t *batch) {
    train_options *o = t->o;
    if (train_load_data(o, &t->data) != CT_OK) return unusable();
    /* The replicas of --devices are threads of one process: each seeds the process's random
     * stream and draws its model whole, so that the draws do not interleave. */
    static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&init_lock);
    ct_status made = train_make_synthetic(o, &t->data);
    ct_manual_seed(o->seed);
    t->model = made == CT_OK ? train_model(o->model, t->data.channels, 10) : NULL;
    pthread_mutex_unlock(&init_lock);
    if (made != CT_OK) return failed("synthetic data");
    train_limit(&t->data, o->limit); /* after the synthetic data are made */
    if (!t->model || ct_module_to(t->model, o->device) != CT_OK) return failed("model");
    t->optimizer = make_optimizer(o, t->model);
    if (!t->optimizer) return failed("optimizer");
    if (train_amp_resolve(o->amp, o->device, &t->amp) != CT_OK) {
        failed("--amp");
        return unusable();
    }
    if (t->amp == CT_F16 && !(t->scaler = make_scaler(t->model))) return failed("--amp f16");
    *first_epoch = 1;
    if (o->checkpoint && !train_checkpoint_folder_writable(o->checkpoint)) return CT_CLI_USAGE;
    if (o->resume) {
        int done = 0;
        if (train_load_checkpoint(o, t->model, t->optimizer, t->scaler, &done) != CT_OK)
            return unusable();
        *first_epoch = done + 1;
    }
    /* The first save is tried now, so that a path that cannot take the file or a full disk is
     * found in seconds, not after an epoch of training. */
    if (o->checkpoint && *first_epoch <= o->epochs && ct_comm_rank(o->comm) == 0 &&
        train_save_checkpoint(o->checkpoint, t->model, t->optimizer, t->scaler, *first_epoch - 1,
                              o->seed) != CT_OK)
        return failed(o->checkpoint);
    if (o->comm && !(t->ddp = ct_ddp_new(o->comm, t->model, NULL)))
        return failed("data parallelism");
    *batch = o->batch_size;
    if (*batch == 0) {
        ct_status status = auto_batch(t, batch);
        if (status == CT_ERR_OUT_OF_MEMORY) return 1;
        if (status != CT_OK) return failed("--batch-size auto");
    }
    t->batch = *batch;
    t->train = train_batches_new(o, &t->data, true, *batch);
    /* Evaluation keeps no activations for a backward pass, so the training batch, which fits,
     * fits there too: a larger one may not, under a memory limit. */
    int64_t eval_batch = *batch < EVAL_BATCH ? *batch : EVAL_BATCH;
    t->test = t->train ? train_batches_new(o, &t->data, false, eval_batch) : NULL;
    if (!t->test) return failed("data loader");
    /* The schedule, at the step the run starts from. */
    int64_t steps = train_batches_count(t->train);
    if (train_schedule(o, t->optimizer, steps, &t->schedule) != CT_OK) return CT_CLI_FAILED;
    for (int64_t i = 0; t->schedule && i < steps * (*first_epoch - 1) && i < steps * o->epochs; i++)
        if (ct_lr_schedule_advance(t->schedule) != CT_OK) return failed("--schedule");
    return 0;
}

/* A checkpoint at or past --epochs: nothing to train; the loaded model is evaluated, so the
 * summary's accuracy is measured, not the zeros of a run that did not happen. */
static int evaluate_only(trainer *t, train_summary *summary, int done) {
    if (!t->o->json)
        printf("checkpoint already at epoch %d of %d; nothing to train: evaluating the loaded "
               "model\n",
               done, t->o->epochs);
    if (evaluate(t, &summary->test_accuracy) != CT_OK) return step_failed(t, "evaluation");
    summary->tested = !stopping(t);
    summary->interrupted_by = stopping(t);
    return 0;
}

/* The epochs from first_epoch; stops early, after a step, on SIGINT or SIGTERM. */
static int train_epochs(trainer *t, train_summary *summary, int first_epoch) {
    train_options *o = t->o;
    for (int epoch = first_epoch; epoch <= o->epochs && !stopping(t); epoch++) {
        epoch_result r;
        double test_accuracy;
        if (train_epoch(t, epoch, &r) != CT_OK) return step_failed(t, "training");
        if (stopping(t)) break;
        if (evaluate(t, &test_accuracy) != CT_OK) return step_failed(t, "evaluation");
        if (stopping(t)) break;
        int64_t samples = ct_size(t->data.train_images, 0);
        if (ct_comm_rank(o->comm) == 0)
            train_epoch_line(o, epoch, r.loss, r.accuracy, test_accuracy, r.seconds,
                             samples / r.seconds);
        summary->epochs_run++;
        summary->seconds += r.seconds;
        summary->data_seconds += r.data_seconds;
        summary->final_loss = r.loss, summary->train_accuracy = r.accuracy;
        summary->test_accuracy = test_accuracy;
        summary->tested = true;
        if (o->checkpoint && ct_comm_rank(o->comm) == 0 &&
            train_save_checkpoint(o->checkpoint, t->model, t->optimizer, t->scaler, epoch,
                                  o->seed) != CT_OK)
            return failed(o->checkpoint);
    }
    int stop = stopping(t);
    if (!stop) return 0;
    summary->interrupted_by = stop;
    /* A line from every process: each rank of mpirun's, naming itself; one for the replicas
     * of --devices (the threads engine), threads of one process. */
    bool threads = strcmp(ct_comm_engine(o->comm), "threads") == 0;
    if (threads && ct_comm_rank(o->comm) > 0) return 0;
    char who[48] = "";
    if (ct_comm_size(o->comm) > 1 && !threads)
        snprintf(who, sizeof who, "rank %d of %d: ", ct_comm_rank(o->comm), ct_comm_size(o->comm));
    int last = first_epoch - 1 + summary->epochs_run;
    bool mine = atomic_load(&stop_signal) != 0;
    ct_cli_fail("%s%s: stopped after a step of epoch %d; the epoch is not counted%s", who,
                stop == SIGINT
                    ? mine ? "interrupted (SIGINT)" : "interrupted (SIGINT on another rank)"
                : mine ? "terminated (SIGTERM)"
                       : "terminated (SIGTERM on another rank)",
                last + 1,
                o->checkpoint ? last > 0 ? ", and the checkpoint holds the end of the last one"
                                         : ", and the checkpoint holds the model before training"
                              : "");
    return 0;
}

static int run(trainer *t, train_summary *summary) {
    train_options *o = t->o;
    int first_epoch = 1;
    int rc = set_up(t, &first_epoch, &summary->batch_size);
    if (rc) return rc;
    summary->checkpoint_epoch = first_epoch - 1;
    ct_reset_peak_memory(o->device);
    ct_transfer_stats_reset();
    t->profiling = o->profile && ct_comm_rank(o->comm) == 0;
    t->gpu = gpu_usage_sampler_start(o->device);
    rc = first_epoch > o->epochs ? evaluate_only(t, summary, first_epoch - 1)
                                 : train_epochs(t, summary, first_epoch);
    gpu_usage_sampler_stop(t->gpu, &summary->gpu);
    t->gpu = NULL;
    if (rc) return rc;
    summary->train_samples = ct_size(t->data.train_images, 0);
    summary->test_samples = ct_size(t->data.test_images, 0);
    summary->samples_per_second =
        summary->seconds > 0 ? summary->train_samples * summary->epochs_run / summary->seconds : 0;
    summary->parameters = ct_module_parameter_count(t->model);
    ct_memory_statistics memory;
    if (ct_memory_stats(o->device, &memory) == CT_OK) summary->peak_memory = memory.peak_allocated;
    ct_transfer_stats(&summary->transfers);
    summary->precision = train_amp_name(t->amp);
    summary->deterministic = ct_are_deterministic_algorithms_enabled();
    summary->skipped_steps = ct_grad_scaler_skipped_steps(t->scaler);
    summary->world_size = ct_comm_size(o->comm);
    summary->engine = ct_comm_engine(o->comm);
    if (t->ddp) ct_ddp_stats(t->ddp, &summary->ddp);
    summary->profiled = t->profiling;
    summary->profile = t->profile;
    summary->steps = t->profiled_steps;
    return 0;
}

int train_replica(train_options *o, train_summary *summary) {
    trainer t = {.o = o};
    *summary = (train_summary){.model = o->model, .optimizer = o->optimizer, .epochs = o->epochs};
    ct_device_str(o->device, summary->device, sizeof summary->device);
    int rc = run(&t, summary);
    ct_release(t.loss_sum);
    ct_release(t.correct);
    train_batches_free(t.train);
    train_batches_free(t.test);
    ct_ddp_free(t.ddp);
    ct_grad_scaler_free(t.scaler);
    ct_lr_schedule_free(t.schedule);
    ct_optimizer_free(t.optimizer);
    ct_module_free(t.model);
    train_release_data(&t.data);
    return rc;
}

int ct_cli_train(int argc, char **argv) {
    train_options o;
    int parsed = train_parse(argc, argv, &o);
    if (parsed >= 0) return parsed;
    /* Reproducible by default: the same seed, device and thread count, the same weights. */
    ct_use_deterministic_algorithms(!o.nondeterministic);
    ct_comm *world = ct_comm_world(); /* a world of one unless started by mpirun */
    if (!world) return failed("mpirun");
    catch_stop_signals();
    int rc;
    if (o.devices || ct_comm_size(world) > 1) {
        rc = train_dist_run(&o, world);
    } else {
        /* A GPT prints its own summary. */
        bool gpt = train_is_gpt(o.model);
        train_summary summary;
        rc = gpt ? train_gpt_replica(&o, &summary) : train_replica(&o, &summary);
        if (rc == 0 && !gpt) train_print_summary(&o, &summary);
        if (rc == 0 && summary.interrupted_by) rc = 128 + summary.interrupted_by;
    }
    ct_comm_free(world);
    return rc;
}
