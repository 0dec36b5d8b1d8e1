/* `ctensor train --model gpt|gpt-mini|gpt2-124m`: a GPT-2 language model trained as nanoGPT
 * does: random windows of a byte-level text (or synthetic tokens), AdamW with weight decay on
 * the matrices and embeddings only, gradient clipping at 1.0, a linear warm-up and a cosine
 * decay, the validation loss (and bits per byte for text) every --eval-interval steps, with
 * checkpoints, resume and --amp as the other models. */
#include <math.h>
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
    ct_dtype amp;        /* CT_F32: off */
    int64_t *x, *y;      /* a batch on the host */
    ct_tensor *loss_sum; /* training losses since the last report, on the device */
    int64_t losses;
    double train_seconds;
    int64_t trained_steps; /* in this run */
} gpt_run;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int failed(const char *what) { return ct_cli_fail("%s: %s", what, ct_last_error()); }

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

/* The mean loss of a batch (x, y on the host) (a new tensor), under autocast with --amp. */
static ct_tensor *batch_loss(gpt_run *r) {
    const train_options *o = r->o;
    int64_t b = o->batch_size, t = o->gpt.context;
    ct_tensor *x = ct_from_data(r->x, 2, (int64_t[]){b, t}, CT_I64, o->device);
    ct_tensor *y = ct_from_data(r->y, 1, (int64_t[]){b * t}, CT_I64, o->device);
    if (!x || !y) return NULL;
    if (r->amp != CT_F32 && ct_autocast_push(o->device.type, r->amp) != CT_OK) return NULL;
    ct_tensor *logits = ct_module_forward(r->model, x);
    if (r->amp != CT_F32) ct_autocast_pop();
    /* The loss is on autocast's f32 list: the region may end before it. */
    return ct_cross_entropy(ct_reshape(logits, 2, (int64_t[]){b * t, o->gpt.vocab}), y, NULL);
}

static ct_status backward_and_step(gpt_run *r, const ct_tensor *loss) {
    ct_status s = ct_optimizer_zero_grad(r->optimizer);
    const ct_tensor *scaled = r->scaler ? ct_grad_scaler_scale(r->scaler, loss) : loss;
    if (s == CT_OK) s = scaled ? ct_backward(scaled) : ct_last_status();
    if (s == CT_OK && r->scaler) s = ct_grad_scaler_unscale(r->scaler);
    if (s == CT_OK) s = ct_clip_grad_norm(r->nparams, r->params, 1.0, 2.0, NULL);
    if (s != CT_OK) return s;
    if (!r->scaler) return ct_optimizer_step(r->optimizer);
    s = ct_grad_scaler_step(r->scaler, r->optimizer, NULL);
    return s == CT_OK ? ct_grad_scaler_update(r->scaler) : s;
}

/* One training step on the batch of index `step`; its loss joins the running sum. */
static ct_status train_step(gpt_run *r, int64_t step) {
    const train_options *o = r->o;
    gpt_data_batch(&r->data, 0, step, o->batch_size, o->gpt.context, r->x, r->y);
    /* Dropout's draws depend on the seed and the step alone, so a resumed run is the same. */
    ct_manual_seed(o->seed * 1000003u + (uint64_t)step);
    ct_status s = ct_optimizer_set_lr(r->optimizer, learning_rate(o, step));
    if (s != CT_OK || ct_scope_begin() != CT_OK) return ct_last_status();
    ct_tensor *loss = batch_loss(r);
    s = loss ? backward_and_step(r, loss) : ct_last_status();
    if (s == CT_OK) {
        ct_no_grad_push();
        ct_tensor *sum = ct_add(r->loss_sum, loss);
        ct_no_grad_pop();
        s = sum ? CT_OK : ct_last_status();
        if (sum) {
            ct_keep(sum);
            ct_release(r->loss_sum);
            r->loss_sum = sum;
            r->losses++;
        }
    }
    ct_scope_end();
    return s;
}

/* The mean loss over the validation batches, in evaluation mode. */
static ct_status evaluate(gpt_run *r, double *loss) {
    const train_options *o = r->o;
    double total = 0;
    ct_status s = ct_module_eval(r->model);
    ct_no_grad_push();
    for (int i = 0; s == CT_OK && i < EVAL_BATCHES; i++) {
        gpt_data_batch(&r->data, 1, i, o->batch_size, o->gpt.context, r->x, r->y);
        double value = 0;
        if (ct_scope_begin() != CT_OK) {
            s = ct_last_status();
            break;
        }
        ct_tensor *l = batch_loss(r);
        s = l ? ct_item(l, &value) : ct_last_status();
        ct_scope_end();
        total += value;
    }
    ct_no_grad_pop();
    ct_module_train(r->model, true);
    *loss = total / EVAL_BATCHES;
    return s;
}

/* The mean training loss since the last call (NaN when there was none). */
static double take_train_loss(gpt_run *r) {
    double sum = NAN;
    if (r->losses && ct_item(r->loss_sum, &sum) != CT_OK) sum = NAN;
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
    if (o->json) return;
    double tokens = (double)(r->trained_steps * o->batch_size * o->gpt.context);
    printf("step %lld/%lld  train loss %.4f  val loss %.4f", (long long)step, (long long)o->steps,
           train_loss, val_loss);
    if (r->data.bytes) printf(" (%.4f bits per byte)", val_loss / M_LN2);
    if (r->train_seconds > 0) printf("  %.0f tokens/s", tokens / r->train_seconds);
    printf("\n");
    fflush(stdout);
}

static void summary(const gpt_run *r, int64_t done, double val_loss) {
    const train_options *o = r->o;
    double tokens = (double)(r->trained_steps * o->batch_size * o->gpt.context);
    double rate = r->train_seconds > 0 ? tokens / r->train_seconds : 0;
    ct_memory_statistics mem = {0};
    ct_memory_stats(o->device, &mem);
    char device[32];
    ct_device_str(o->device, device, sizeof device);
    double bpb = r->data.bytes ? val_loss / M_LN2 : NAN;
    if (o->json) {
        printf("{\"model\": \"%s\", \"device\": \"%s\", \"layers\": %lld, \"heads\": %lld, "
               "\"width\": %lld, \"context\": %lld, \"vocab\": %lld, \"parameters\": %lld, "
               "\"batch_size\": %lld, \"steps\": %lld, \"steps_run\": %lld, \"precision\": "
               "\"%s\", \"val_loss\": %.6f, \"bits_per_byte\": ",
               o->model, device, (long long)o->gpt.layers, (long long)o->gpt.heads,
               (long long)o->gpt.width, (long long)o->gpt.context, (long long)o->gpt.vocab,
               (long long)ct_module_parameter_count(r->model), (long long)o->batch_size,
               (long long)done, (long long)r->trained_steps, train_amp_name(r->amp), val_loss);
        if (r->data.bytes)
            printf("%.6f", bpb);
        else
            printf("null");
        printf(", \"tokens_per_second\": %.1f, \"seconds\": %.3f, \"peak_memory\": %zu}\n", rate,
               r->train_seconds, mem.peak_allocated);
        ct_cli_result_printed();
        return;
    }
    printf("\nsummary\n");
    printf("  model         %s: %lld layers, %lld heads, width %lld, context %lld, vocabulary "
           "%lld; %lld parameters\n",
           o->model, (long long)o->gpt.layers, (long long)o->gpt.heads, (long long)o->gpt.width,
           (long long)o->gpt.context, (long long)o->gpt.vocab,
           (long long)ct_module_parameter_count(r->model));
    printf("  training      %lld steps of batch %lld on %s (%s), %lld in this run, %.1f s, "
           "%.0f tokens/s\n",
           (long long)done, (long long)o->batch_size, device, train_amp_name(r->amp),
           (long long)r->trained_steps, r->train_seconds, rate);
    printf("  validation    loss %.4f", val_loss);
    if (r->data.bytes) printf(", %.4f bits per byte", bpb);
    printf("\n  peak memory   %.1f MiB\n", (double)mem.peak_allocated / (1 << 20));
}

static int set_up(gpt_run *r, int64_t *first) {
    train_options *o = r->o;
    if (gpt_data_load(o, &r->data) != CT_OK) return CT_CLI_USAGE;
    o->gpt.vocab = r->data.vocab;
    if (train_amp_resolve(o->amp, o->device, &r->amp) != CT_OK) return failed("--amp");
    ct_manual_seed(o->seed);
    r->model = ct_nn_gpt(&o->gpt);
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
    if (!o->json && done)
        printf("resumed from %s at step %d of %lld\n", o->checkpoint, done, (long long)o->steps);
    return -1;
}

static int run(gpt_run *r) {
    train_options *o = r->o;
    int64_t step = 0;
    int rc = set_up(r, &step);
    if (rc >= 0) return rc;
    ct_reset_peak_memory(o->device);
    double val_loss = NAN;
    bool measured = false;
    while (step < o->steps) {
        double start = now();
        if (train_step(r, step) != CT_OK) return failed("the training step");
        step++;
        r->trained_steps++;
        ct_synchronize(o->device);
        r->train_seconds += now() - start;
        if (step % o->eval_interval && step != o->steps) continue;
        double train_loss = take_train_loss(r);
        if (evaluate(r, &val_loss) != CT_OK) return failed("the validation");
        measured = true;
        report(r, step, train_loss, val_loss);
        if (o->checkpoint && save(r, step) != CT_OK) return failed(o->checkpoint);
    }
    if (!measured && evaluate(r, &val_loss) != CT_OK) return failed("the validation");
    summary(r, step, val_loss);
    return 0;
}

int train_gpt_run(train_options *o) {
    gpt_run r = {.o = o};
    int rc = run(&r);
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
