/* `ctensor train`: train the MLP or the small CNN on a dataset on a device, with a data
 * loader that prepares and moves batches while the step runs, progress, checkpoints, and
 * a summary of accuracy, time, throughput, memory and transfers. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_impl.h"
#include "train_data_impl.h"
#include "train_impl.h"

/* Fashion-MNIST's pixel mean and standard deviation (over the training set, pixels in
 * [0, 1]), used to normalise every dataset of 28x28 images here. */
#define PIXEL_MEAN 0.2860
#define PIXEL_STD 0.3530
/* The largest evaluation batch (never more than the training batch). */
#define EVAL_BATCH 1000

typedef struct trainer {
    train_options *o;
    ct_module *model;
    ct_optimizer *optimizer;
    train_data data;
    ct_loader *train, *test;
    ct_ddp *ddp;   /* data parallelism over o->comm, else NULL */
    int64_t batch; /* the (global) batch size */
    /* Running sums of the epoch on the device, read at progress points only (a read is a
     * synchronisation). */
    ct_tensor *loss_sum, *correct;
} trainer;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int failed(const char *what) {
    fprintf(stderr, "ctensor train: %s: %s\n", what, ct_last_error());
    return 1;
}

/* failed() for a training or evaluation step: when the step ran out of memory at a batch size
 * the user chose, the line also names the option that finds one that fits. */
static int step_failed(const trainer *t, const char *what) {
    if (ct_last_status() != CT_ERR_OUT_OF_MEMORY || t->o->batch_size == 0) return failed(what);
    fprintf(stderr, "ctensor train: %s: %s; --batch-size auto finds the largest batch that fits\n",
            what, ct_last_error());
    return 1;
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

/* A batch as images (N, 1, 28, 28), whether it came as images or as rows of 784 (a view;
 * the caller's scope releases it). */
static ct_tensor *as_images(const ct_tensor *x) {
    return ct_reshape(x, 4, (int64_t[]){ct_size(x, 0), 1, 28, 28});
}

/* A step on this replica's slice (y's samples) of a global batch of `global` samples. */
static ct_status step(trainer *t, const ct_tensor *x, const ct_tensor *y, int64_t global) {
    if (t->ddp && ct_size(y, 0) == 0) { /* no sample of this last batch here: zeros go */
        ct_status status = ct_optimizer_zero_grad(t->optimizer);
        if (status == CT_OK) status = ct_ddp_backward(t->ddp, NULL, 0, global);
        return status == CT_OK ? ct_optimizer_step(t->optimizer) : status;
    }
    ct_tensor *logits = ct_module_forward(t->model, as_images(x));
    ct_tensor *loss = ct_cross_entropy(logits, y, NULL);
    if (!loss) return ct_last_status();
    ct_status status = ct_optimizer_zero_grad(t->optimizer);
    if (status == CT_OK)
        status = t->ddp ? ct_ddp_backward(t->ddp, loss, ct_size(y, 0), global) : ct_backward(loss);
    if (status == CT_OK) status = ct_optimizer_step(t->optimizer);
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

/* One pass over the training set. */
static ct_status train_epoch(trainer *t, int epoch, epoch_result *r) {
    ct_status status = ct_loader_start_epoch(t->train, epoch - 1);
    if (status == CT_OK) status = reset_sums(t);
    int64_t steps = ct_loader_batches(t->train), done = 0, samples = 0;
    int64_t count = ct_size(t->data.train_images, 0);
    double start = now(), last_report = 0, loss_sum = 0, correct = 0;
    r->data_seconds = 0;
    ct_module_train(t->model, true);
    while (status == CT_OK) {
        ct_scope_begin(); /* a step's tensors go at its end */
        ct_tensor *x, *y;
        double asked = now();
        status = ct_loader_next(t->train, &x, &y);
        r->data_seconds += now() - asked;
        bool more = status == CT_OK && x;
        int64_t global = count - done * t->batch < t->batch ? count - done * t->batch : t->batch;
        if (more) status = step(t, x, y, global);
        if (more && status == CT_OK) samples += global, done++;
        ct_scope_end();
        if (!more || status != CT_OK) break;
        double elapsed = now() - start;
        if (t->o->progress && (elapsed - last_report > 0.2 || done == steps)) {
            last_report = elapsed;
            status = ct_item(t->loss_sum, &loss_sum);
            if (status == CT_OK) status = ct_item(t->correct, &correct);
            /* Only this replica's sums during the epoch: a read of every rank's would be a
             * collective at a time each rank picks for itself. */
            if (t->ddp) loss_sum *= ct_comm_size(t->o->comm), correct *= ct_comm_size(t->o->comm);
            double rate = samples / elapsed;
            train_progress(t->o, epoch, done, steps, loss_sum / samples, correct / samples, rate,
                           (steps - done) * (elapsed / done));
        }
    }
    if (status == CT_OK) status = ct_synchronize(t->o->device);
    r->seconds = now() - start;
    if (status == CT_OK) status = read_sums(t, &loss_sum, &correct);
    r->loss = samples ? loss_sum / samples : 0;
    r->accuracy = samples ? correct / samples : 0;
    return status;
}

/* Accuracy on the test set, in evaluation mode without recording. The hits add up on the
 * device and are read once at the end: a read per batch would wait for the device each time. */
static ct_status evaluate(trainer *t, double *accuracy) {
    ct_module_eval(t->model);
    ct_status status = ct_loader_start_epoch(t->test, 0);
    ct_tensor *hits = ct_zeros(0, NULL, CT_I64, t->o->device);
    if (!hits) status = ct_last_status();
    int64_t samples = 0;
    ct_no_grad_push();
    while (status == CT_OK) {
        ct_scope_begin();
        ct_tensor *x, *y;
        status = ct_loader_next(t->test, &x, &y);
        bool more = status == CT_OK && x;
        if (more) {
            ct_tensor *predicted = ct_argmax(ct_module_forward(t->model, as_images(x)), 1, false);
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
        if (!more) break;
    }
    ct_no_grad_pop();
    double total = 0;
    if (status == CT_OK && t->ddp) status = ct_comm_all_reduce(t->o->comm, hits, CT_COMM_SUM);
    if (t->ddp) samples = ct_size(t->data.test_images, 0);
    if (status == CT_OK) status = ct_item(hits, &total);
    ct_release(hits);
    *accuracy = samples ? total / samples : 0;
    return status;
}

static ct_loader *make_loader(const trainer *t, const ct_tensor *images, const ct_tensor *labels,
                              int64_t batch, bool training) {
    ct_loader_options options = {.batch_size = batch,
                                 .shuffle = training,
                                 .seed = t->o->seed,
                                 .workers = t->o->workers,
                                 .device = t->o->device,
                                 .scale = 1.0 / 255,
                                 .mean = {PIXEL_MEAN},
                                 .std = {PIXEL_STD},
                                 .shard_index = ct_comm_rank(t->o->comm),
                                 .shard_count = ct_comm_size(t->o->comm)};
    return ct_loader_new(images, labels, &options);
}

static ct_optimizer *make_optimizer(const train_options *o, ct_module *model) {
    ct_tensor *params[32];
    int n = ct_module_parameters(model, params, 32);
    if (strcmp(o->optimizer, "sgd") == 0)
        return ct_sgd(n, params, &(ct_sgd_options){.lr = o->lr, .momentum = 0.9});
    ct_adam_options adam =
        strcmp(o->optimizer, "adamw") == 0 ? ct_adamw_defaults() : ct_adam_defaults();
    adam.lr = o->lr;
    return strcmp(o->optimizer, "adamw") == 0 ? ct_adamw(n, params, &adam)
                                              : ct_adam(n, params, &adam);
}

/* Whether a training step at batch b fits in the device's memory: forward and backward on
 * a batch of zeros while the loader's queued batches and the optimiser's state (two
 * tensors per parameter) are held too. */
static bool step_fits(trainer *t, int64_t b, ct_status *status) {
    ct_device device = t->o->device;
    int64_t shape[4] = {b, 1, 28, 28};
    int queued = 2 * (t->o->workers ? t->o->workers : 1) + 1;
    ct_scope_begin();
    bool ok = true;
    for (int i = 0; i < queued && ok; i++) ok = ct_empty(4, shape, CT_F32, device) != NULL;
    ct_tensor *params[32];
    int n = ct_module_parameters(t->model, params, 32);
    for (int i = 0; i < n && ok; i++)
        ok = ct_zeros(ct_ndim(params[i]), ct_shape(params[i]), CT_F32, device) &&
             ct_zeros(ct_ndim(params[i]), ct_shape(params[i]), CT_F32, device);
    if (ok) {
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

/* The largest power-of-two batch up to 4096 (and the training set) that fits. */
static ct_status auto_batch(trainer *t, int64_t *batch) {
    int64_t n = ct_size(t->data.train_images, 0), b = 4096;
    while (b > 1 && b > n) b /= 2;
    for (; b >= 1; b /= 2) {
        ct_status status;
        if (step_fits(t, b, &status)) {
            *batch = b;
            return CT_OK;
        }
        if (status != CT_OK) return status;
        ct_empty_cache(t->o->device);
    }
    fprintf(stderr, "ctensor train: out of memory: not even a batch of 1 fits on the device\n");
    return CT_ERR_OUT_OF_MEMORY;
}

/* Model, optimiser, checkpoint, batch size and loaders; prints its own error line. */
static int set_up(trainer *t, int *first_epoch, int64_t *batch) {
    train_options *o = t->o;
    if (train_load_data(o, &t->data) != CT_OK) return 1;
    train_limit(&t->data, o->limit);
    /* The replicas of --devices are threads of one process: each seeds the process's random
     * stream and draws its model whole, so that the draws do not interleave. */
    static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&init_lock);
    ct_manual_seed(o->seed);
    t->model = train_model(o->model);
    pthread_mutex_unlock(&init_lock);
    if (!t->model || ct_module_to(t->model, o->device) != CT_OK) return failed("model");
    t->optimizer = make_optimizer(o, t->model);
    if (!t->optimizer) return failed("optimizer");
    *first_epoch = 1;
    if (o->checkpoint && !train_checkpoint_folder_writable(o->checkpoint)) return 1;
    if (o->resume) {
        int done = 0;
        if (train_load_checkpoint(o->checkpoint, t->model, t->optimizer, &done) != CT_OK)
            return failed(o->checkpoint);
        *first_epoch = done + 1;
    }
    if (o->comm && !(t->ddp = ct_ddp_new(o->comm, t->model, NULL)))
        return failed("data parallelism");
    *batch = o->batch_size;
    if (*batch == 0) {
        ct_status status = auto_batch(t, batch);
        if (status == CT_ERR_OUT_OF_MEMORY) return 1;
        if (status != CT_OK) return failed("--batch-size auto");
    }
    t->batch = *batch;
    t->train = make_loader(t, t->data.train_images, t->data.train_labels, *batch, true);
    /* Evaluation keeps no activations for a backward pass, so the training batch, which fits,
     * fits there too: a larger one may not, under a memory limit. */
    int64_t eval_batch = *batch < EVAL_BATCH ? *batch : EVAL_BATCH;
    t->test = t->train ? make_loader(t, t->data.test_images, t->data.test_labels, eval_batch, false)
                       : NULL;
    return t->test ? 0 : failed("data loader");
}

static int run(trainer *t, train_summary *summary) {
    train_options *o = t->o;
    int first_epoch;
    int rc = set_up(t, &first_epoch, &summary->batch_size);
    if (rc) return rc;
    ct_reset_peak_memory(o->device);
    ct_transfer_stats_reset();
    for (int epoch = first_epoch; epoch <= o->epochs; epoch++) {
        epoch_result r;
        double test_accuracy;
        if (train_epoch(t, epoch, &r) != CT_OK) return step_failed(t, "training");
        if (evaluate(t, &test_accuracy) != CT_OK) return step_failed(t, "evaluation");
        int64_t samples = ct_size(t->data.train_images, 0);
        if (ct_comm_rank(o->comm) == 0)
            train_epoch_line(o, epoch, r.loss, r.accuracy, test_accuracy, r.seconds,
                             samples / r.seconds);
        summary->epochs_run++;
        summary->seconds += r.seconds;
        summary->data_seconds += r.data_seconds;
        summary->final_loss = r.loss, summary->train_accuracy = r.accuracy;
        summary->test_accuracy = test_accuracy;
        if (o->checkpoint && ct_comm_rank(o->comm) == 0 &&
            train_save_checkpoint(o->checkpoint, t->model, t->optimizer, epoch, o->seed) != CT_OK)
            return failed(o->checkpoint);
    }
    summary->train_samples = ct_size(t->data.train_images, 0);
    summary->test_samples = ct_size(t->data.test_images, 0);
    summary->samples_per_second =
        summary->seconds > 0 ? summary->train_samples * summary->epochs_run / summary->seconds : 0;
    summary->parameters = ct_module_parameter_count(t->model);
    ct_memory_statistics memory;
    if (ct_memory_stats(o->device, &memory) == CT_OK) summary->peak_memory = memory.peak_allocated;
    ct_transfer_stats(&summary->transfers);
    summary->world_size = ct_comm_size(o->comm);
    summary->engine = ct_comm_engine(o->comm);
    if (t->ddp) ct_ddp_stats(t->ddp, &summary->ddp);
    return 0;
}

int train_replica(train_options *o, train_summary *summary) {
    trainer t = {.o = o};
    *summary = (train_summary){.model = o->model, .optimizer = o->optimizer, .epochs = o->epochs};
    ct_device_str(o->device, summary->device, sizeof summary->device);
    int rc = run(&t, summary);
    ct_release(t.loss_sum);
    ct_release(t.correct);
    ct_loader_free(t.train);
    ct_loader_free(t.test);
    ct_ddp_free(t.ddp);
    ct_optimizer_free(t.optimizer);
    ct_module_free(t.model);
    train_release_data(&t.data);
    return rc;
}

int ct_cli_train(int argc, char **argv) {
    train_options o;
    int parsed = train_parse(argc, argv, &o);
    if (parsed >= 0) return parsed;
    ct_comm *world = ct_comm_world(); /* a world of one unless started by mpirun */
    if (!world) return failed("mpirun");
    int rc;
    if (o.devices || ct_comm_size(world) > 1) {
        rc = train_dist_run(&o, world);
    } else if (ct_device_check(o.device) != CT_OK) {
        rc = failed("--device");
    } else {
        train_summary summary;
        rc = train_replica(&o, &summary);
        if (rc == 0) train_print_summary(&o, &summary);
    }
    ct_comm_free(world);
    return rc;
}
