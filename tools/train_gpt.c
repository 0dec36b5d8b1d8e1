/* `ctensor train --model gpt|gpt-mini|gpt2-124m`: a GPT-2 language model trained as nanoGPT
 * does: random windows of a byte-level text (or synthetic tokens), AdamW with weight decay on
 * the matrices and embeddings only, gradient clipping at 1.0, a linear warm-up and a cosine
 * decay, the validation loss (and bits per byte for text) every --eval-interval steps, with
 * checkpoints, resume and --amp as the other models. Under data parallelism (train_dist.c:
 * --devices or mpirun) each replica takes its rows of every batch, training and validation,
 * through the image models' machinery (ct_ddp): gradients averaged, the same run as on one
 * device up to the order of float sums. SIGINT and SIGTERM stop the run after a step, as for
 * the image models (train_stop_signal). --profile times the training steps (not the
 * evaluations) by phase and kernel kind, as for the image models (train_profile.c). */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_impl.h"
#include "train_gpt_impl.h"

#define EVAL_BATCHES 8 /* validation batches per evaluation, the same ones every time */
#define MAX_WARMUP 100

typedef struct gpt_run {
    train_options *o;
    gpt_data data;
    ct_module *model;
    ct_optimizer *optimizer;
    ct_grad_scaler *scaler; /* --amp f16 only */
    ct_tensor **params;
    int nparams;
    ct_ddp *ddp;         /* data parallelism over o->comm, else NULL */
    int rank;            /* 0 alone */
    int64_t row0, rows;  /* this replica's rows [row0, row0 + rows) of every batch */
    int agreed_stop;     /* under data parallelism, the signal every rank stops for */
    size_t step_memory;  /* the most a step allocated above what was held when it began */
    size_t first_rss;    /* the resident set's growth over the run's first step */
    size_t run_peak;     /* the device's peak over the run */
    ct_dtype amp;        /* CT_F32: off */
    int64_t *x, *y;      /* a batch on the host */
    ct_tensor *loss_sum; /* training losses since the last report, on the device */
    int64_t losses;
    double train_seconds;
    int64_t trained_steps; /* in this run */
    /* --profile (rank 0): the training steps' profile, stopped around each evaluation and
     * summed over the stretches between (profile), and the steps it covers. */
    bool profiling, profile_running;
    ct_profile_stats profile;
    int64_t profiled_steps;
} gpt_run;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int failed(const char *what) { return ct_cli_fail("%s: %s", what, ct_last_error()); }

/* The signal the run stops for, 0 while it goes on: this process's own, or under data
 * parallelism the one the ranks agreed on at a collective, so that every rank stops after
 * the same step. */
static int stopping(const gpt_run *r) { return r->ddp ? r->agreed_stop : train_stop_signal(); }

/* nanoGPT's get_lr: linear warm-up over the first 10% of the steps (at most 100), then a
 * cosine from lr down to lr / 10 at the last step. */
static double learning_rate(const train_options *o, int64_t step) {
    int64_t warmup = o->steps / 10 < MAX_WARMUP ? o->steps / 10 : MAX_WARMUP;
    if (step < warmup) return o->lr * (double)(step + 1) / (double)(warmup + 1);
    double span = (double)(o->steps - warmup), min_lr = o->lr / 10;
    double ratio = span > 0 ? (double)(step - warmup) / span : 1.0;
    return min_lr + 0.5 * (1.0 + cos(M_PI * ratio)) * (o->lr - min_lr);
}

/* AdamW with nanoGPT's betas and weight decay 0.1 on parameters of 2 or more axes. */
static ct_status make_optimizer(gpt_run *r) {
    ct_adam_options adam = ct_adamw_defaults();
    adam.lr = r->o->lr, adam.beta2 = 0.95, adam.weight_decay = 0.1;
    r->optimizer = ct_adamw(r->nparams, r->params, &adam);
    if (!r->optimizer) return ct_last_status();
    for (int i = 0; i < r->nparams; i++)
        if (ct_ndim(r->params[i]) < 2) ct_optimizer_set_weight_decay(r->optimizer, i, 0.0);
    return CT_OK;
}

/* The mean loss of this replica's rows of a batch (x, y on the host) (a new tensor), under
 * autocast with --amp; NULL without the error set when it has no row. */
static ct_tensor *batch_loss(gpt_run *r) {
    const train_options *o = r->o;
    int64_t b = r->rows, t = o->gpt.context;
    if (b == 0) return NULL;
    ct_tensor *x = ct_from_data(r->x + r->row0 * t, 2, (int64_t[]){b, t}, CT_I64, o->device);
    ct_tensor *y = ct_from_data(r->y + r->row0 * t, 1, (int64_t[]){b * t}, CT_I64, o->device);
    if (!x || !y) return NULL;
    /* The profile's phases (ctensor/profile.h): ct_backward marks its own. */
    ct_profile_set_phase(CT_PROFILE_FORWARD);
    if (r->amp != CT_F32 && ct_autocast_push(o->device.type, r->amp) != CT_OK) return NULL;
    ct_tensor *logits = ct_module_forward(r->model, x);
    if (r->amp != CT_F32) ct_autocast_pop();
    /* The loss is on autocast's f32 list: the region may end before it. */
    return ct_cross_entropy(ct_reshape(logits, 2, (int64_t[]){b * t, o->gpt.vocab}), y, NULL);
}

/* The backward pass of loss (NULL: no row here), its gradients averaged over the replicas
 * under data parallelism (a signal this rank received goes to every rank with them), then
 * clipping and the optimiser's step; the gradients are freed after it, so that the next
 * forward pass does not hold them. */
static ct_status backward_and_step(gpt_run *r, const ct_tensor *loss) {
    const ct_tensor *scaled = r->scaler && loss ? ct_grad_scaler_scale(r->scaler, loss) : loss;
    if (loss && !scaled) return ct_last_status();
    ct_status s = CT_OK;
    if (r->ddp && train_stop_signal()) s = ct_ddp_request_stop(r->ddp, train_stop_signal());
    if (s == CT_OK)
        s = r->ddp ? ct_ddp_backward(r->ddp, scaled, r->rows, r->o->batch_size)
                   : ct_backward(scaled);
    if (s == CT_OK && ct_ddp_stop_reason(r->ddp) > r->agreed_stop)
        r->agreed_stop = ct_ddp_stop_reason(r->ddp);
    ct_profile_set_phase(CT_PROFILE_OPTIMIZER); /* the unscale and the clipping too */
    if (s == CT_OK && r->scaler) s = ct_grad_scaler_unscale(r->scaler);
    if (s == CT_OK) s = ct_clip_grad_norm(r->nparams, r->params, 1.0, 2.0, NULL);
    if (s != CT_OK) return s;
    if (!r->scaler) {
        s = ct_optimizer_step(r->optimizer);
    } else {
        s = ct_grad_scaler_step(r->scaler, r->optimizer, NULL);
        if (s == CT_OK) s = ct_grad_scaler_update(r->scaler);
    }
    return s == CT_OK ? ct_optimizer_zero_grad(r->optimizer) : s;
}

/* One training step on the batch of index `step`; its loss joins the running sum. */
static ct_status train_step(gpt_run *r, int64_t step) {
    const train_options *o = r->o;
    ct_profile_set_phase(CT_PROFILE_DATA); /* the batch, made on the host and copied over */
    gpt_data_batch(&r->data, 0, step, o->batch_size, o->gpt.context, r->x, r->y);
    /* Dropout's draws depend on the seed and the step alone, so a resumed run is the same.
     * (The replicas of --devices, threads of one process, share the stream: they train with
     * dropout 0, the only value ctensor train gives, and draw nothing.) */
    if (!r->ddp) ct_manual_seed(o->seed * 1000003u + (uint64_t)step);
    ct_status s = ct_optimizer_set_lr(r->optimizer, learning_rate(o, step));
    if (s != CT_OK || ct_scope_begin() != CT_OK) return ct_last_status();
    ct_tensor *loss = batch_loss(r);
    s = loss || r->rows == 0 ? backward_and_step(r, loss) : ct_last_status();
    ct_profile_set_phase(CT_PROFILE_OTHER);
    if (s == CT_OK && loss) {
        /* This replica's share of the batch's mean: the sum over the replicas is the mean. */
        ct_no_grad_push();
        ct_tensor *sum =
            ct_add(r->loss_sum, ct_mul_scalar(loss, (double)r->rows / (double)o->batch_size));
        ct_no_grad_pop();
        s = sum ? CT_OK : ct_last_status();
        if (sum) {
            ct_keep(sum);
            ct_release(r->loss_sum);
            r->loss_sum = sum;
        }
    }
    if (s == CT_OK) r->losses++;
    ct_scope_end();
    return s;
}

/* train_step, and the most it allocated above what it began with (parameters, optimiser
 * state: the activations, gradients and temporaries of a step), the peak of the run kept;
 * for the run's first step, the growth of the resident set too (the optimiser's state,
 * made in the first step, included, as in PyTorch's AdamW: bench/peer_torch_gpt.py). */
static ct_status measured_step(gpt_run *r, int64_t step) {
    ct_device device = r->o->device;
    ct_memory_statistics before = {0}, after = {0};
    ct_memory_stats(device, &before);
    if (before.peak_allocated > r->run_peak) r->run_peak = before.peak_allocated;
    ct_reset_peak_memory(device);
    size_t rss = r->trained_steps == 0 ? train_rss_begin() : 0;
    ct_status s = train_step(r, step);
    if (r->trained_steps == 0) r->first_rss = train_rss_growth(rss);
    ct_memory_stats(device, &after);
    if (after.peak_allocated > r->run_peak) r->run_peak = after.peak_allocated;
    size_t used =
        after.peak_allocated > before.allocated ? after.peak_allocated - before.allocated : 0;
    /* The first step of a run allocates the optimiser's state: not a step's working memory. */
    if (r->trained_steps > 0 && used > r->step_memory) r->step_memory = used;
    return s;
}

/* --profile: start the profile of a stretch of training steps (nothing when it runs). */
static ct_status profile_begin(gpt_run *r) {
    if (!r->profiling || r->profile_running) return CT_OK;
    ct_status status = ct_profile_begin();
    r->profile_running = status == CT_OK;
    return status;
}

/* --profile: end the stretch's profile and add it to the run's. */
static void profile_end(gpt_run *r) {
    if (!r->profile_running) return;
    r->profile_running = false;
    ct_profile_stats stretch;
    ct_profile_report(&stretch);
    ct_profile_end();
    train_profile_add(&r->profile, &stretch);
}

/* The sum of a scalar over the replicas (itself alone). */
static ct_status sum_over_replicas(const gpt_run *r, double *value) {
    if (!r->ddp) return CT_OK;
    ct_scope_begin();
    ct_tensor *t = ct_full(0, NULL, *value, CT_F64, r->o->device);
    ct_status s = t ? ct_comm_all_reduce(r->o->comm, t, CT_COMM_SUM) : ct_last_status();
    if (s == CT_OK) s = ct_item(t, value);
    ct_scope_end();
    return s;
}

/* Under data parallelism, agree on the stop at a point with no gradient all-reduce (the end
 * of an evaluation). */
static ct_status agree_stop(gpt_run *r) {
    if (!r->ddp) return CT_OK;
    int agreed = r->agreed_stop;
    ct_status s = train_agree_stop(r->o->comm, r->o->device, &agreed);
    if (s == CT_OK && agreed > r->agreed_stop) r->agreed_stop = agreed;
    return s;
}

/* The mean loss over the validation batches (each replica its rows), in evaluation mode; NaN
 * when a signal stopped it on one device (under data parallelism it ends, for the ranks to
 * agree on the stop after it). */
static ct_status evaluate(gpt_run *r, double *loss) {
    const train_options *o = r->o;
    double total = 0;
    ct_status s = ct_module_eval(r->model);
    ct_no_grad_push();
    for (int i = 0; s == CT_OK && i < EVAL_BATCHES && (r->ddp || !stopping(r)); i++) {
        gpt_data_batch(&r->data, 1, i, o->batch_size, o->gpt.context, r->x, r->y);
        double value = 0;
        if (ct_scope_begin() != CT_OK) {
            s = ct_last_status();
            break;
        }
        ct_tensor *l = batch_loss(r);
        s = l ? ct_item(l, &value) : r->rows ? ct_last_status() : CT_OK;
        ct_scope_end();
        total += value * (double)r->rows / (double)o->batch_size;
    }
    ct_no_grad_pop();
    ct_module_train(r->model, true);
    if (s == CT_OK) s = sum_over_replicas(r, &total);
    if (s == CT_OK) s = agree_stop(r);
    *loss = stopping(r) ? NAN : total / EVAL_BATCHES;
    return s;
}

/* The mean training loss since the last call (NaN when there was none). */
static double take_train_loss(gpt_run *r) {
    double sum = NAN;
    if (r->losses && ct_item(r->loss_sum, &sum) != CT_OK) sum = NAN;
    if (r->losses && sum_over_replicas(r, &sum) != CT_OK) sum = NAN;
    double mean = r->losses ? sum / (double)r->losses : NAN;
    ct_fill(r->loss_sum, 0.0);
    r->losses = 0;
    return mean;
}

static ct_status save(gpt_run *r, int64_t done) {
    const train_options *o = r->o;
    char sizes[5][24];
    const int64_t values[5] = {o->gpt.vocab, o->gpt.context, o->gpt.layers, o->gpt.heads,
                               o->gpt.width};
    for (int i = 0; i < 5; i++) snprintf(sizes[i], sizeof sizes[i], "%lld", (long long)values[i]);
    const char *const metadata[] = {
        "model",  o->model,    "gpt.vocab", sizes[0],    "gpt.context", sizes[1], "gpt.layers",
        sizes[2], "gpt.heads", sizes[3],    "gpt.width", sizes[4],      NULL};
    return train_save_checkpoint_with(o->checkpoint, r->model, r->optimizer, r->scaler, (int)done,
                                      o->seed, metadata);
}

static void report(const gpt_run *r, int64_t step, double train_loss, double val_loss) {
    const train_options *o = r->o;
    if (o->json || r->rank) return;
    double tokens = (double)(r->trained_steps * o->batch_size * o->gpt.context);
    printf("step %lld/%lld  train loss %.4f  val loss %.4f", (long long)step, (long long)o->steps,
           train_loss, val_loss);
    if (r->data.bytes) printf(" (%.4f bits per byte)", val_loss / M_LN2);
    if (r->train_seconds > 0) printf("  %.0f tokens/s", tokens / r->train_seconds);
    printf("\n");
    fflush(stdout);
}

/* A number, or null for NaN (not measured). */
static void print_number(double value) {
    if (isnan(value))
        printf("null");
    else
        printf("%.6f", value);
}

static void summary(const gpt_run *r, int64_t done, double val_loss) {
    const train_options *o = r->o;
    if (r->rank) return;
    double tokens = (double)(r->trained_steps * o->batch_size * o->gpt.context);
    double rate = r->train_seconds > 0 ? tokens / r->train_seconds : 0;
    int world = ct_comm_size(o->comm);
    ct_memory_statistics mem = {0};
    ct_memory_stats(o->device, &mem);
    size_t peak = mem.peak_allocated > r->run_peak ? mem.peak_allocated : r->run_peak;
    char device[32];
    ct_device_str(o->device, device, sizeof device);
    const train_summary profiled = {
        .profiled = r->profiling, .profile = r->profile, .steps = r->profiled_steps};
    double bpb = r->data.bytes ? val_loss / M_LN2 : NAN;
    if (o->json) {
        printf("{\"model\": \"%s\", \"device\": \"%s\", \"layers\": %lld, \"heads\": %lld, "
               "\"width\": %lld, \"context\": %lld, \"vocab\": %lld, \"parameters\": %lld, "
               "\"batch_size\": %lld, \"steps\": %lld, \"steps_run\": %lld, \"precision\": "
               "\"%s\", \"world_size\": %d, \"engine\": \"%s\", "
               "\"interrupted_by_signal\": %d, \"val_loss\": ",
               o->model, device, (long long)o->gpt.layers, (long long)o->gpt.heads,
               (long long)o->gpt.width, (long long)o->gpt.context, (long long)o->gpt.vocab,
               (long long)ct_module_parameter_count(r->model), (long long)o->batch_size,
               (long long)done, (long long)r->trained_steps, train_amp_name(r->amp), world,
               o->comm ? ct_comm_engine(o->comm) : "self", stopping(r));
        print_number(val_loss);
        printf(", \"bits_per_byte\": ");
        print_number(bpb);
        printf(", \"tokens_per_second\": %.1f, \"seconds\": %.3f, \"peak_memory\": %zu, "
               "\"step_memory\": %zu, \"first_step_rss_growth\": %zu",
               rate, r->train_seconds, peak, r->step_memory, r->first_rss);
        train_profile_print_json(&profiled);
        printf("}\n");
        ct_cli_result_printed();
        return;
    }
    printf("\nsummary\n");
    printf("  model         %s: %lld layers, %lld heads, width %lld, context %lld, vocabulary "
           "%lld; %lld parameters\n",
           o->model, (long long)o->gpt.layers, (long long)o->gpt.heads, (long long)o->gpt.width,
           (long long)o->gpt.context, (long long)o->gpt.vocab,
           (long long)ct_module_parameter_count(r->model));
    printf("  training      %lld steps of batch %lld on %s", (long long)done,
           (long long)o->batch_size, device);
    if (world > 1) printf(" (rank 0 of %d, %s engine)", world, ct_comm_engine(o->comm));
    printf(" (%s), %lld in this run, %.1f s, %.0f tokens/s\n", train_amp_name(r->amp),
           (long long)r->trained_steps, r->train_seconds, rate);
    if (isnan(val_loss))
        printf("  validation    not measured (stopped by a signal)");
    else
        printf("  validation    loss %.4f", val_loss);
    if (r->data.bytes && !isnan(val_loss)) printf(", %.4f bits per byte", bpb);
    printf("\n  peak memory   %.1f MiB%s; a step's own (activations, gradients) %.1f MiB\n",
           (double)peak / (1 << 20), world > 1 ? " on rank 0" : "",
           (double)r->step_memory / (1 << 20));
    train_profile_print_text(&profiled);
}

static int set_up(gpt_run *r, int64_t *first) {
    train_options *o = r->o;
    if (gpt_data_load(o, &r->data) != CT_OK) return CT_CLI_USAGE;
    o->gpt.vocab = r->data.vocab;
    if (train_amp_resolve(o->amp, o->device, &r->amp) != CT_OK) return failed("--amp");
    /* This replica's rows of every batch: an even share, the first ones one more. */
    int world = ct_comm_size(o->comm);
    r->rank = ct_comm_rank(o->comm);
    int64_t share = o->batch_size / world, extra = o->batch_size % world;
    r->rows = share + (r->rank < extra);
    r->row0 = r->rank * share + (r->rank < extra ? r->rank : extra);
    /* The replicas of --devices are threads of one process: each seeds the process's random
     * stream and draws its model whole, so that the draws do not interleave. */
    static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&init_lock);
    ct_manual_seed(o->seed);
    r->model = ct_nn_gpt(&o->gpt);
    pthread_mutex_unlock(&init_lock);
    if (!r->model || ct_module_to(r->model, o->device) != CT_OK) return failed("the model");
    r->nparams = ct_module_parameters(r->model, NULL, 0);
    r->params = calloc((size_t)r->nparams, sizeof *r->params);
    r->x = malloc(sizeof(int64_t) * (size_t)(o->batch_size * o->gpt.context));
    r->y = malloc(sizeof(int64_t) * (size_t)(o->batch_size * o->gpt.context));
    r->loss_sum = ct_zeros(0, NULL, CT_F32, o->device);
    if (!r->params || !r->x || !r->y || !r->loss_sum)
        return ct_cli_fail("out of memory for the run");
    ct_module_parameters(r->model, r->params, r->nparams);
    if (make_optimizer(r) != CT_OK) return failed("the optimiser");
    if (r->amp == CT_F16) { /* parameters in state order: their names, for its warnings */
        const char **names = calloc((size_t)r->nparams, sizeof *names);
        for (int i = 0, j = 0; names && j < r->nparams; i++) {
            bool buffer;
            const char *name = ct_module_state_at(r->model, i, NULL, &buffer);
            if (!buffer) names[j++] = name;
        }
        r->scaler = names ? ct_grad_scaler_new(r->nparams, r->params, names, NULL) : NULL;
        free(names);
        if (!r->scaler) return failed("the loss scaler");
    }
    if (o->checkpoint && !train_checkpoint_folder_writable(o->checkpoint)) return CT_CLI_USAGE;
    int done = 0;
    if (o->resume && train_load_checkpoint(o, r->model, r->optimizer, r->scaler, &done) != CT_OK)
        return CT_CLI_USAGE;
    *first = done;
    if (o->comm && !(r->ddp = ct_ddp_new(o->comm, r->model, NULL)))
        return failed("data parallelism");
    if (!o->json && done && !r->rank)
        printf("resumed from %s at step %d of %lld\n", o->checkpoint, done, (long long)o->steps);
    return -1;
}

/* The line of a run stopped by a signal (one for the replicas of --devices, threads of one
 * process; one from each rank of mpirun's, naming itself). */
static void stopped_line(const gpt_run *r, int64_t done, bool saved) {
    const train_options *o = r->o;
    bool threads = r->ddp && strcmp(ct_comm_engine(o->comm), "threads") == 0;
    if (threads && r->rank > 0) return;
    char who[48] = "";
    if (r->ddp && !threads)
        snprintf(who, sizeof who, "rank %d of %d: ", r->rank, ct_comm_size(o->comm));
    int stop = stopping(r);
    bool mine = train_stop_signal() == stop;
    ct_cli_fail("%s%s: stopped after step %lld of %lld%s", who,
                stop == SIGINT
                    ? mine ? "interrupted (SIGINT)" : "interrupted (SIGINT on another rank)"
                : mine ? "terminated (SIGTERM)"
                       : "terminated (SIGTERM on another rank)",
                (long long)done, (long long)o->steps, saved ? "; the checkpoint holds it" : "");
}

static int run(gpt_run *r, int *interrupted_by) {
    train_options *o = r->o;
    int64_t step = 0;
    int rc = set_up(r, &step);
    if (rc >= 0) return rc;
    ct_reset_peak_memory(o->device);
    double val_loss = NAN;
    bool measured = false, saved = false;
    /* A fresh run saves its initial model first, as the image models do: a path that cannot
     * take the file is found before any training. */
    if (o->checkpoint && step == 0 && !r->rank && save(r, 0) != CT_OK) return failed(o->checkpoint);
    if (r->ddp && ct_comm_barrier(o->comm) != CT_OK) return failed("data parallelism");
    r->profiling = o->profile && r->rank == 0;
    while (step < o->steps && !stopping(r)) {
        if (profile_begin(r) != CT_OK) return failed("--profile");
        double start = now();
        if (measured_step(r, step) != CT_OK) return failed("the training step");
        step++;
        r->trained_steps++;
        ct_synchronize(o->device);
        r->train_seconds += now() - start;
        r->profiled_steps += r->profile_running;
        saved = false;
        if (stopping(r) || (step % o->eval_interval && step != o->steps)) continue;
        profile_end(r); /* the evaluation and the checkpoint are not training steps */
        double train_loss = take_train_loss(r);
        if (evaluate(r, &val_loss) != CT_OK) return failed("the validation");
        measured = !stopping(r);
        if (measured) report(r, step, train_loss, val_loss);
        if (o->checkpoint && !r->rank && save(r, step) != CT_OK) return failed(o->checkpoint);
        saved = o->checkpoint != NULL;
    }
    profile_end(r);
    if (stopping(r)) {
        /* The last step is whole: the checkpoint takes it (once). */
        if (o->checkpoint && !saved && !r->rank && save(r, step) != CT_OK)
            return failed(o->checkpoint);
        val_loss = NAN;
        stopped_line(r, step, o->checkpoint != NULL);
    } else if (!measured && evaluate(r, &val_loss) != CT_OK) {
        return failed("the validation");
    }
    summary(r, step, val_loss);
    *interrupted_by = stopping(r);
    return 0;
}

int train_gpt_replica(train_options *o, train_summary *summary) {
    gpt_run r = {.o = o};
    *summary = (train_summary){.model = o->model};
    int rc = run(&r, &summary->interrupted_by);
    ct_ddp_free(r.ddp);
    ct_release(r.loss_sum);
    ct_grad_scaler_free(r.scaler);
    ct_optimizer_free(r.optimizer);
    ct_module_free(r.model);
    free(r.params);
    free(r.x);
    free(r.y);
    gpt_data_free(&r.data);
    return rc;
}
