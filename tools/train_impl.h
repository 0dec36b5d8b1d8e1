/* `ctensor train`: its options, the run, and what it reports. */
#ifndef CT_TRAIN_IMPL_H
#define CT_TRAIN_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctensor/ctensor.h"
#include "gpu_usage.h"

typedef struct train_options {
    const char *model;       /* "mlp" | "cnn" | "resnet20" | "resnet18" | "gpt" | "gpt-mini"
                              * | "gpt2-124m" */
    const char *dataset;     /* "fashion-mnist" | "cifar10" | "synthetic" | DIR | FILE.npy;
                              * GPT: FILE.txt | "synthetic" */
    const char *dataset_dir; /* cifar10's folder (--dataset cifar10 DIR), else NULL */
    const char *labels;      /* labels .npy beside a FILE.npy dataset */
    int augment;             /* --augment 1, --no-augment 0, else -1: on for a ResNet on cifar10 */
    int64_t synthetic_size;  /* --synthetic-size: training samples of synthetic (0: default) */
    ct_device device;
    const char *device_text; /* --device as given; NULL: CT_DEVICE, else auto */
    bool soft_placement;     /* --soft-placement: an absent device falls back to auto */
    int epochs;
    int64_t batch_size; /* 0: auto */
    double lr;
    const char *optimizer; /* "sgd" | "adam" | "adamw" */
    /* The recipe (train_options.c gives the ResNets theirs where not given): SGD's momentum
     * and Nesterov, the weight decay and whether batch norm's weights and the biases (the
     * parameters of rank <= 1) are kept free of it, the loss's label smoothing, and the lr
     * schedule ("none" | "onecycle" | "cosine", stepped every batch) with its linear warm-up
     * (cosine) in epochs. */
    double momentum, weight_decay, label_smoothing; /* weight_decay < 0: the optimiser's */
    bool nesterov, no_decay_norm_bias;
    const char *schedule;
    int warmup_epochs;
    uint64_t seed;
    int workers;
    int64_t limit; /* use the first `limit` training samples (0: all) */
    const char *checkpoint;
    bool resume;
    bool resume_weights_only; /* --resume taking the model's weights alone, on purpose */
    bool json;
    bool nondeterministic; /* --nondeterministic: deterministic algorithms off */
    bool progress;         /* a progress bar (stdout is a terminal and not --json) */
    const char *amp;       /* --amp: "off" | "bf16" | "f16" | "auto" */
    bool profile;          /* --profile: where the training steps' time goes (ctensor/profile.h) */
    /* Data parallelism (train_dist.c): --devices (one replica per device, threads engine),
     * --comm-timeout (0: CT_COMM_TIMEOUT or its default); this replica's communicator (NULL
     * alone: then no ct_ddp). */
    const char *devices;
    double comm_timeout;
    ct_comm *comm;
    /* GPT models (train_gpt.c): the shape (--layers --heads --width --context; --vocab with
     * synthetic tokens), the steps, and how often the validation loss is measured and the
     * checkpoint written. */
    ct_gpt_config gpt;
    int64_t steps, eval_interval;
} train_options;

/* Parse argv (argv[0] is "train"); -1 to go on, else the exit status (0 after --help). */
int train_parse(int argc, char **argv, train_options *out);

/* What a run measured, for the summary. */
typedef struct train_summary {
    char device[32];
    const char *model, *optimizer;
    int epochs_run, epochs;
    int64_t batch_size, train_samples, test_samples, parameters;
    double seconds;            /* training time, evaluation excluded */
    double data_seconds;       /* of which spent waiting for the loader's next batch */
    double samples_per_second; /* training samples over training time */
    double final_loss, train_accuracy, test_accuracy;
    bool tested;           /* test_accuracy was measured (an epoch ended, or the loaded model) */
    int checkpoint_epoch;  /* resumed from a checkpoint of this epoch (0: not resumed) */
    int interrupted_by;    /* the signal that stopped the run, or 0 */
    size_t peak_memory;    /* the device pool's high-water mark */
    const char *precision; /* "f32", "bf16" or "f16" (--amp) */
    bool deterministic;    /* deterministic algorithms were on (not --nondeterministic) */
    int64_t skipped_steps; /* steps the f16 loss scaler skipped */
    ct_transfer_statistics transfers;
    /* Data parallelism: world size (1 alone), engine ("self", "threads", "mpi"), rank 0's
     * ct_ddp statistics. */
    int world_size;
    const char *engine;
    ct_ddp_statistics ddp;
    /* The training device's GPU, read through NVML while the epochs ran (measured false on
     * the CPU or without NVML). */
    gpu_usage_summary gpu;
    /* --profile: the training loops' profile, summed over the epochs, and their steps. */
    bool profiled;
    int64_t steps;
    ct_profile_stats profile;
} train_summary;

/* The progress line of a step (a bar on a terminal) with gpu's latest reading (NULL: none),
 * and the summary. */
void train_progress(const train_options *o, gpu_usage_sampler *gpu, int epoch, int64_t step,
                    int64_t steps, double loss, double accuracy, double samples_per_second,
                    double eta_seconds);
void train_epoch_line(const train_options *o, int epoch, double loss, double accuracy,
                      double test_accuracy, double seconds, double samples_per_second);
void train_print_summary(const train_options *o, const train_summary *s);

/* One replica's whole run (the only one without data parallelism): trains and fills the
 * summary; prints its own error line; only rank 0 prints epoch lines and checkpoints. */
int train_replica(train_options *o, train_summary *summary);

/* --profile (train_profile.c): add one epoch's profile to a sum, and print the summary's
 * profile as a table or as the JSON member ", \"profile\": {...}" (null when not profiled). */
void train_profile_add(ct_profile_stats *sum, const ct_profile_stats *epoch);
void train_profile_print_text(const train_summary *s);
void train_profile_print_json(const train_summary *s);

/* Data parallelism (train_dist.c): the run over a world of several ranks or devices, and
 * its lines of the summary. */
int train_dist_run(train_options *o, ct_comm *world);
void train_dist_print_text(const train_summary *s);
void train_dist_print_json(const train_summary *s);

/* Whether o->model is a GPT (gpt, gpt-mini, gpt2-124m; train_options.c), and one replica's
 * run (train_gpt.c, the only one without data parallelism): trains, prints its progress and
 * (rank 0) its summary; sets summary->interrupted_by alone; returns 0 or the exit status of
 * a failure (its line printed). */
bool train_is_gpt(const char *model);
int train_gpt_replica(train_options *o, train_summary *summary);

/* SIGINT and SIGTERM (cmd_train.c): the signal this process received, 0 while none; the run
 * stops at the end of the step. Under data parallelism, train_agree_stop raises *agreed to
 * the largest signal any rank of comm received (an all-gather: every rank calls it at the
 * same point). */
int train_stop_signal(void);
ct_status train_agree_stop(ct_comm *comm, ct_device device, int *agreed);

/* The model of o->model for images of in_channels and `classes` classes (NULL with the error
 * set). */
ct_module *train_model(const char *name, int64_t in_channels, int64_t classes);
/* The optimiser of o->optimizer, o->lr and the recipe over n parameters (NULL with the error
 * set). */
ct_optimizer *train_optimizer(const train_options *o, int n, ct_tensor **params);
/* The lr schedule of o->schedule over o->epochs of steps_per_epoch steps (*out NULL for
 * "none"); on failure its error line is printed. */
ct_status train_schedule(const train_options *o, ct_optimizer *opt, int64_t steps_per_epoch,
                         ct_lr_schedule **out);

/* Whether path's folder takes new files, checked before training so that an epoch is not
 * trained for nothing; prints the error line when not. */
bool train_checkpoint_folder_writable(const char *path);
/* Save the model, optimiser and epoch to path (atomically). */
ct_status train_save_checkpoint(const char *path, const ct_module *model,
                                const ct_optimizer *optimizer, const ct_grad_scaler *scaler,
                                int epoch, uint64_t seed);
/* The same with more metadata: key and value pairs, NULL after the last (NULL: none). */
ct_status train_save_checkpoint_with(const char *path, const ct_module *model,
                                     const ct_optimizer *optimizer, const ct_grad_scaler *scaler,
                                     int epoch, uint64_t seed, const char *const *metadata);
/* Load o->checkpoint into model and optimizer and say its epoch. Refused (one line on stderr,
 * nothing loaded) when a tensor of the model or, past epoch 0, an entry of the optimiser's
 * state is missing, when it holds other tensors, or when a value is not finite; with
 * o->resume_weights_only the weights alone are loaded, with a warning line, whatever the
 * optimiser's state is. */
ct_status train_load_checkpoint(const train_options *o, ct_module *model, ct_optimizer *optimizer,
                                ct_grad_scaler *scaler, int *epoch);

/* --amp (train_amp.c): the dtype autocast lowers to (CT_F32: off; auto: bf16 where the
 * device has native bf16), its name, and the loss scaler's state in a checkpoint (NULL
 * scaler: nothing to do). */
ct_status train_amp_resolve(const char *amp, ct_device device, ct_dtype *out);
const char *train_amp_name(ct_dtype amp);
ct_status train_amp_save(ct_state_dict *sd, const ct_grad_scaler *scaler);
ct_status train_amp_load(const char *path, const ct_state_dict *sd, ct_grad_scaler *scaler);

#endif
