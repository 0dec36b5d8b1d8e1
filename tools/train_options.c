/* `ctensor train`'s command line: every option checked, one clear line for a bad one. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_impl.h"
#include "train_impl.h"

static const char help[] =
    "usage: ctensor train [options]\n"
    "Train a model on a dataset on a device, with progress, and print a summary.\n\n"
    "  --model mlp|cnn|resnet20|resnet18\n"
    "                             784-256-128-10 MLP, the small CNN, ResNet-20 (0.27M\n"
    "                             parameters) or the CIFAR ResNet-18 (11.2M) (default cnn).\n"
    "                             The resnets train by default with SGD, lr 0.1, momentum\n"
    "                             0.9, weight decay 5e-4 and a one-cycle schedule\n"
    "  --model gpt|gpt-mini|gpt2-124m\n"
    "                             a GPT-2 language model (nanoGPT's): gpt-mini is 4 layers,\n"
    "                             4 heads, width 256, context 256; gpt2-124m is GPT-2's\n"
    "                             12, 12, 768, 1024 (vocabulary 50257 with synthetic\n"
    "                             tokens); gpt is gpt-mini's shape changed by the options\n"
    "                             below. GPT defaults (nanoGPT's): AdamW, lr 6e-4, betas\n"
    "                             (0.9, 0.95), weight decay 0.1 on matrices and embeddings\n"
    "                             only, gradient clipping at norm 1.0, linear warm-up over\n"
    "                             the first 10%% of the steps (at most 100) then cosine decay\n"
    "                             to lr / 10, batch 16, dropout 0\n"
    "  --layers N --heads N --width N --context N\n"
    "                             a GPT's shape (width a multiple of heads)\n"
    "  --dataset FILE.txt|synthetic\n"
    "                             GPT: any text, read as bytes (vocabulary 256; the last\n"
    "                             10%% held out for validation, reported in bits per byte),\n"
    "                             or random tokens (--vocab N, default 50257)\n"
    "  --vocab N                  the vocabulary of synthetic tokens\n"
    "  --steps N                  GPT: optimiser steps, each on --batch-size random windows\n"
    "                             of context + 1 tokens (default 200)\n"
    "  --eval-interval N          GPT: validation loss and checkpoint every N steps and at\n"
    "                             the end (default 100)\n"
    "  --dataset NAME|DIR|FILE    fashion-mnist (Debian's dataset-fashion-mnist), a folder\n"
    "                             with the four MNIST-named IDX files (gzipped or not),\n"
    "                             images in FILE.npy with --labels LABELS.npy, cifar10 DIR,\n"
    "                             or synthetic (default fashion-mnist). The MLP and the CNN\n"
    "                             take 1x28x28 images; a ResNet takes any, and 28x28 ones\n"
    "                             are zero-padded to 32x32. Pixels are normalised with the\n"
    "                             training set's mean and standard deviation per channel\n"
    "  --dataset cifar10 DIR      CIFAR-10's binary version unpacked in DIR\n"
    "                             (cifar-10-batches-bin: data_batch_1.bin to\n"
    "                             data_batch_5.bin and test_batch.bin)\n"
    "  --dataset synthetic        random images of the model's input (3x32x32 for a ResNet,\n"
    "                             else 1x28x28) and labels, made on the device: times the\n"
    "                             model without reading or copying data\n"
    "  --synthetic-size N         training samples of synthetic (default 50000; the test\n"
    "                             set is a fifth of it, 10000 by default)\n"
    "  --augment, --no-augment    random crops of the training images padded by 4 pixels,\n"
    "                             and horizontal flips, drawn per sample and epoch from\n"
    "                             --seed (default: on for a ResNet on cifar10, else off)\n"
    "  --labels FILE.npy          labels for a .npy dataset\n"
    "  --device auto|cpu|cuda[:N] where to train (default $CT_DEVICE, else auto: the best\n"
    "                             device present)\n"
    "  --soft-placement           a --device (or CT_DEVICE) that is not present trains on\n"
    "                             the best device present instead, with a warning (as\n"
    "                             CT_SOFT_PLACEMENT=1 does)\n"
    "  --epochs N                 passes over the training set (default 3)\n"
    "  --batch-size N|auto        samples per step (default 128); auto: the largest that\n"
    "                             fits the device's memory, found by halving on\n"
    "                             out-of-memory (with ranks: the global batch, the\n"
    "                             ranks times the smallest that fits on every rank)\n"
    "  --lr X                     learning rate, the peak of a one-cycle schedule (default\n"
    "                             0.001; resnets 0.1)\n"
    "  --optimizer sgd|adam|adamw (default adam; resnets sgd)\n"
    "  --momentum X               SGD's momentum (default 0.9)\n"
    "  --nesterov                 SGD with Nesterov momentum\n"
    "  --weight-decay X           L2 penalty (SGD, Adam) or decoupled decay (AdamW) (default\n"
    "                             the optimiser's: 0, AdamW 0.01; resnets 5e-4)\n"
    "  --no-decay-norm-bias       no weight decay on batch norm's weights and the biases\n"
    "                             (PyTorch's parameter group with weight_decay 0)\n"
    "  --label-smoothing X        the loss's label smoothing in [0, 1) (default 0)\n"
    "  --schedule none|onecycle|cosine\n"
    "                             the lr schedule, stepped every batch: onecycle is PyTorch's\n"
    "                             OneCycleLR(max_lr=lr) with its defaults (30% rising from\n"
    "                             lr/25, then annealing to lr/25e4; momentum from 0.95 to\n"
    "                             0.85 and back); cosine anneals from lr to 0, after "
    "--warmup-epochs\n"
    "                             (default none; resnets onecycle)\n"
    "  --warmup-epochs N          cosine's linear warm-up from lr/steps, in epochs (default 0)\n"
    "  --seed N                   initialisation, shuffling (default 0)\n"
    "  --workers N                data-loading threads (default: 0 when training on the\n"
    "                             CPU, whose cores the step needs; 2 for a GPU)\n"
    "  --limit N                  train on the first N samples only\n"
    "  --checkpoint FILE          save model and optimiser after each epoch (safetensors)\n"
    "  --resume                   continue from --checkpoint's last epoch; the checkpoint\n"
    "                             must hold the whole model and optimiser state, nothing\n"
    "                             else, all finite\n"
    "  --resume-weights-only      --resume with the weights alone: the optimiser starts\n"
    "                             afresh (a warning says what was left out)\n"
    "  --amp off|bf16|f16|auto    mixed precision: matmul and convolution in bf16 or f16\n"
    "                             (autocast), f16 with a loss scaler; auto: bf16 where the\n"
    "                             device has bf16 faster than f32, else off (default off).\n"
    "                             On a CPU without AVX512_BF16 or AMX, and for f16 on any\n"
    "                             CPU, it is emulated and slower than f32; `ctensor devices`\n"
    "                             says whether this CPU's bf16 units are faster than f32\n"
    "  --nondeterministic         let the GPU's kernels pick their fastest algorithms, whose\n"
    "                             results may differ in the last bits from run to run. By\n"
    "                             default training is deterministic: the same seed, device\n"
    "                             and thread count give the same weights, bit for bit,\n"
    "                             resumed or not (ct_use_deterministic_algorithms)\n"
    "  --json                     print the summary as one JSON object\n"
    "  --profile                  where the training steps' time goes: per kind of kernel\n"
    "                             (conv, matmul, norm, elementwise, ...) and per phase\n"
    "                             (forward, backward, optimizer, data wait), host time to\n"
    "                             issue and device time; on a GPU each kernel is waited for,\n"
    "                             so a profiled run is slower than an unprofiled one\n"
    "  --devices D1,D2,...        data parallelism in one process: one replica per device\n"
    "                             (cpu:0,cpu:1 splits the CPU into logical devices);\n"
    "                             --batch-size is the global batch. Under mpirun each process\n"
    "                             is one replica (Open MPI; NCCL with --device cuda) and\n"
    "                             only rank 0 prints and saves\n"
    "  --comm-timeout SECONDS     deadline of each collective (default CT_COMM_TIMEOUT, 300)\n"
    "\nEach option is given once.\n\n" CT_CLI_EXIT_STATUS_HELP;

static int bad(const char *option, const char *value, const char *expected) {
    return ct_cli_usage_error("%s \"%s\": expected %s (see ctensor train --help)", option,
                              value ? value : "", expected);
}

/* The options, each given once. */
static const struct {
    const char *name;
    bool takes_value;
} options[] = {{"--json", false},           {"--nondeterministic", false},
               {"--resume", false},         {"--resume-weights-only", false},
               {"--soft-placement", false}, {"--model", true},
               {"--dataset", true},         {"--labels", true},
               {"--device", true},          {"--epochs", true},
               {"--batch-size", true},      {"--lr", true},
               {"--optimizer", true},       {"--seed", true},
               {"--workers", true},         {"--limit", true},
               {"--checkpoint", true},      {"--amp", true},
               {"--devices", true},         {"--comm-timeout", true},
               {"--augment", false},        {"--no-augment", false},
               {"--synthetic-size", true},  {"--profile", false},
               {"--momentum", true},        {"--nesterov", false},
               {"--weight-decay", true},    {"--no-decay-norm-bias", false},
               {"--label-smoothing", true}, {"--schedule", true},
               {"--warmup-epochs", true},

               {"--layers", true},          {"--heads", true},
               {"--width", true},           {"--context", true},
               {"--vocab", true},           {"--steps", true},
               {"--eval-interval", true}};
#define OPTION_COUNT (int)(sizeof options / sizeof options[0])

bool train_is_gpt(const char *model) {
    return !strcmp(model, "gpt") || !strcmp(model, "gpt-mini") || !strcmp(model, "gpt2-124m");
}

/* The index of option in options, or -1. */
static int option_index(const char *option) {
    for (int i = 0; i < OPTION_COUNT; i++)
        if (strcmp(option, options[i].name) == 0) return i;
    return -1;
}

static int unknown(const char *option) {
    return ct_cli_usage_error("unknown option \"%s\" (see ctensor train --help)", option);
}

/* A device that parses but is not present, from --device or CT_DEVICE (named by `from`): how
 * many of its type there are, or why there is none. */
static int absent_device(const char *from, const char *value, ct_device device) {
    const char *type = ct_device_type_name(device.type);
    int count = ct_device_count(device.type);
    const char *hint = "; --soft-placement trains on the best device present instead";
    if (count == 0 && ct_device_check(device) != CT_OK)
        return ct_cli_usage_error("%s \"%s\": there is no %s device: %s%s", from, value, type,
                                  ct_last_error(), hint);
    return ct_cli_usage_error("%s \"%s\": there %s %d %s device%s (%s:0 to %s:%d)%s", from, value,
                              count == 1 ? "is" : "are", count, type, count == 1 ? "" : "s", type,
                              type, count - 1, hint);
}

/* --device VALUE that does not parse: when only its index is out of range, say how many
 * devices there are; else the forms accepted. */
static int bad_device(const char *value) {
    const char *colon = strrchr(value, ':');
    char kind[32];
    ct_device device;
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1) &&
        snprintf(kind, sizeof kind, "%.*s:0", (int)(colon - value), value) < (int)sizeof kind &&
        ct_device_parse(kind, &device) == CT_OK)
        return absent_device("--device", value, device);
    return bad("--device", value, "auto, cpu, cuda or cuda:N");
}

/* A decimal number in [lo, hi). */
static bool parse_real(const char *text, double lo, double hi, double *out) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= lo && v < hi)) return false;
    *out = v;
    return true;
}

/* A GPT size option (--layers ... --eval-interval): true when option is one, with *n its
 * value or -1 when it is not a positive integer. */
static bool gpt_size(const char *option, const char *value, train_options *o, int64_t *n) {
    int64_t *field = strcmp(option, "--layers") == 0          ? &o->gpt.layers
                     : strcmp(option, "--heads") == 0         ? &o->gpt.heads
                     : strcmp(option, "--width") == 0         ? &o->gpt.width
                     : strcmp(option, "--context") == 0       ? &o->gpt.context
                     : strcmp(option, "--vocab") == 0         ? &o->gpt.vocab
                     : strcmp(option, "--steps") == 0         ? &o->steps
                     : strcmp(option, "--eval-interval") == 0 ? &o->eval_interval
                                                              : NULL;
    if (!field) return false;
    if (!ct_cli_parse_int(value, 1, strcmp(option, "--steps") == 0 ? 100000 : 1 << 30, n)) *n = -1;
    if (*n > 0) *field = *n;
    return true;
}

static int parse_value(const char *option, const char *value, train_options *o) {
    int64_t n;
    if (strcmp(option, "--model") == 0) {
        if (strcmp(value, "mlp") && strcmp(value, "cnn") && strcmp(value, "resnet20") &&
            strcmp(value, "resnet18") && !train_is_gpt(value))
            return bad(option, value, "mlp, cnn, resnet20, resnet18, gpt, gpt-mini or gpt2-124m");
        o->model = value;
    } else if (gpt_size(option, value, o, &n)) {
        if (n < 0) return bad(option, value, "a positive integer");
    } else if (strcmp(option, "--dataset") == 0) {
        o->dataset = value;
    } else if (strcmp(option, "--synthetic-size") == 0) {
        if (!ct_cli_parse_int(value, 1, INT32_MAX, &n))
            return bad(option, value, "a positive integer");
        o->synthetic_size = n;
    } else if (strcmp(option, "--labels") == 0) {
        o->labels = value;
    } else if (strcmp(option, "--device") == 0) {
        if (ct_device_parse(value, &o->device) != CT_OK) return bad_device(value);
        o->device_text = value;
    } else if (strcmp(option, "--epochs") == 0) {
        if (!ct_cli_parse_int(value, 1, 100000, &n)) return bad(option, value, "an integer >= 1");
        o->epochs = (int)n;
    } else if (strcmp(option, "--batch-size") == 0) {
        if (strcmp(value, "auto") == 0)
            o->batch_size = 0;
        else if (!ct_cli_parse_int(value, 1, INT32_MAX, &n))
            return bad(option, value, "a positive integer or auto");
        else
            o->batch_size = n;
    } else if (strcmp(option, "--lr") == 0) {
        char *end;
        double lr = strtod(value, &end);
        if (end == value || *end || !(lr > 0 && lr < 1e3))
            return bad(option, value, "a number > 0 and < 1000");
        o->lr = lr;
    } else if (strcmp(option, "--optimizer") == 0) {
        if (strcmp(value, "sgd") && strcmp(value, "adam") && strcmp(value, "adamw"))
            return bad(option, value, "sgd, adam or adamw");
        o->optimizer = value;
    } else if (strcmp(option, "--momentum") == 0) {
        if (!parse_real(value, 0, 1, &o->momentum))
            return bad(option, value, "a number >= 0 and < 1");
    } else if (strcmp(option, "--weight-decay") == 0) {
        if (!parse_real(value, 0, 1, &o->weight_decay))
            return bad(option, value, "a number >= 0 and < 1");
    } else if (strcmp(option, "--label-smoothing") == 0) {
        if (!parse_real(value, 0, 1, &o->label_smoothing))
            return bad(option, value, "a number >= 0 and < 1");
    } else if (strcmp(option, "--schedule") == 0) {
        if (strcmp(value, "none") && strcmp(value, "onecycle") && strcmp(value, "cosine"))
            return bad(option, value, "none, onecycle or cosine");
        o->schedule = value;
    } else if (strcmp(option, "--warmup-epochs") == 0) {
        if (!ct_cli_parse_int(value, 0, 100000, &n)) return bad(option, value, "an integer >= 0");
        o->warmup_epochs = (int)n;
    } else if (strcmp(option, "--seed") == 0) {
        if (!ct_cli_parse_int(value, 0, INT64_MAX, &n))
            return bad(option, value, "an integer >= 0");
        o->seed = (uint64_t)n;
    } else if (strcmp(option, "--workers") == 0) {
        if (!ct_cli_parse_int(value, 0, 64, &n)) return bad(option, value, "an integer in 0..64");
        o->workers = (int)n;
    } else if (strcmp(option, "--limit") == 0) {
        if (!ct_cli_parse_int(value, 1, INT64_MAX, &n))
            return bad(option, value, "a positive integer");
        o->limit = n;
    } else if (strcmp(option, "--amp") == 0) {
        if (strcmp(value, "off") && strcmp(value, "bf16") && strcmp(value, "f16") &&
            strcmp(value, "auto"))
            return bad(option, value, "off, bf16, f16 or auto");
        o->amp = value;
    } else if (strcmp(option, "--checkpoint") == 0) {
        o->checkpoint = value;
    } else if (strcmp(option, "--devices") == 0) {
        o->devices = value; /* train_dist.c parses the list */
    } else if (strcmp(option, "--comm-timeout") == 0) {
        char *end;
        double seconds = strtod(value, &end);
        if (end == value || *end || !(seconds > 0 && seconds < 1e7))
            return bad(option, value, "a number of seconds > 0");
        o->comm_timeout = seconds;
    } else {
        return unknown(option);
    }
    return -1;
}

/* The options that only some datasets take. */
static int check_data_options(const train_options *o) {
    bool synthetic = strcmp(o->dataset, "synthetic") == 0;
    if (o->synthetic_size && !synthetic)
        return ct_cli_usage_error("--synthetic-size: only --dataset synthetic takes it");
    if (synthetic && o->augment > 0)
        return ct_cli_usage_error("--augment: --dataset synthetic is not augmented (its "
                                  "images are noise made on the device)");
    return -1;
}

/* The device to train on, from --device or CT_DEVICE, present: else an error line (2), or
 * with soft placement a warning line and the best device present. With --devices (one replica
 * per device, made as needed) it is not used alone; under mpirun it is checked per rank. */
static int check_device(train_options *o) {
    const char *from = "--device", *value = o->device_text;
    /* Without --device, CT_DEVICE is the default placement; garbage there is an error, not a
     * silent "auto" that may train somewhere the user did not mean. */
    const char *env = getenv("CT_DEVICE");
    if (!value && env && *env) {
        if (ct_device_parse(env, &o->device) != CT_OK)
            return ct_cli_usage_error("CT_DEVICE=\"%.64s\" is not a device: expected auto, cpu, "
                                      "cuda or cuda:N; fix or unset it, or give --device",
                                      env);
        from = "CT_DEVICE", value = env;
    }
    if (!value || o->devices || ct_device_check(o->device) == CT_OK) return -1;
    if (!o->soft_placement && !ct_soft_placement()) return absent_device(from, value, o->device);
    char message[1024], chosen[32];
    snprintf(message, sizeof message, "%s", ct_last_error());
    ct_clear_error();
    ct_device_parse("auto", &o->device);
    fprintf(stderr, "ctensor train: warning: %s \"%s\": %s; soft placement: training on %s\n", from,
            value, message, ct_device_str(o->device, chosen, sizeof chosen));
    return -1;
}

/* The ResNets' recipe where the options do not say otherwise (SGD, lr 0.1, momentum 0.9,
 * weight decay 5e-4, one-cycle), and the options that go together checked; -1 to go on. */
static int recipe(train_options *o, const bool *given) {
    if (strncmp(o->model, "resnet", 6) == 0) {
        if (!given[option_index("--optimizer")]) o->optimizer = "sgd";
        if (!given[option_index("--lr")]) o->lr = 0.1;
        if (!given[option_index("--weight-decay")]) o->weight_decay = 5e-4;
        if (!given[option_index("--schedule")]) o->schedule = "onecycle";
    }
    bool sgd = strcmp(o->optimizer, "sgd") == 0;
    if (!sgd && (given[option_index("--momentum")] || o->nesterov))
        return ct_cli_usage_error("--momentum and --nesterov are SGD's: give --optimizer sgd (see "
                                  "ctensor train --help)");
    if (o->nesterov && o->momentum <= 0) return bad("--nesterov", "", "a --momentum > 0 with it");
    if (o->warmup_epochs && strcmp(o->schedule, "cosine"))
        return ct_cli_usage_error("--warmup-epochs is the cosine schedule's warm-up: give "
                                  "--schedule cosine (onecycle warms up by itself)");
    if (o->warmup_epochs >= o->epochs)
        return ct_cli_usage_error("--warmup-epochs %d: the warm-up must be shorter than --epochs "
                                  "(%d)",
                                  o->warmup_epochs, o->epochs);
    return -1;
}

/* A GPT's preset shape, then the options given; nanoGPT's training defaults for what was
 * not given. */
static int gpt_defaults(train_options *o, const bool *given) {
    bool big = strcmp(o->model, "gpt2-124m") == 0, synthetic = !strcmp(o->dataset, "synthetic");
    ct_gpt_config preset = {.vocab = synthetic ? 50257 : 256,
                            .context = big ? 1024 : 256,
                            .layers = big ? 12 : 4,
                            .heads = big ? 12 : 4,
                            .width = big ? 768 : 256};
    int64_t *sizes[] = {&o->gpt.vocab, &o->gpt.context, &o->gpt.layers, &o->gpt.heads,
                        &o->gpt.width};
    const int64_t *defaults[] = {&preset.vocab, &preset.context, &preset.layers, &preset.heads,
                                 &preset.width};
    for (int i = 0; i < 5; i++)
        if (*sizes[i] == 0) *sizes[i] = *defaults[i];
    if (!synthetic && given[option_index("--vocab")])
        return bad("--vocab", "", "--dataset synthetic with it (text is bytes: vocabulary 256)");
    if (!synthetic && given[option_index("--dataset")] == false)
        return ct_cli_usage_error("--model %s needs --dataset FILE.txt or --dataset synthetic",
                                  o->model);
    if (o->gpt.width % o->gpt.heads)
        return ct_cli_usage_error("--width %lld is not a multiple of --heads %lld",
                                  (long long)o->gpt.width, (long long)o->gpt.heads);
    if (!given[option_index("--batch-size")]) o->batch_size = 16;
    if (!given[option_index("--lr")]) o->lr = 6e-4;
    if (!given[option_index("--optimizer")]) o->optimizer = "adamw";
    if (!o->steps) o->steps = 200;
    if (!o->eval_interval) o->eval_interval = o->steps < 100 ? o->steps : 100;
    if (o->batch_size == 0) return bad("--batch-size", "auto", "a number for a GPT");
    static const char *const image_only[] = {"--epochs",
                                             "--limit",
                                             "--labels",
                                             "--workers",
                                             "--augment",
                                             "--no-augment",
                                             "--synthetic-size",
                                             "--momentum",
                                             "--nesterov",
                                             "--weight-decay",
                                             "--no-decay-norm-bias",
                                             "--label-smoothing",
                                             "--schedule",
                                             "--warmup-epochs"};
    for (size_t i = 0; i < sizeof image_only / sizeof image_only[0]; i++)
        if (given[option_index(image_only[i])])
            return bad(image_only[i], "", "an image model with it (a GPT takes --steps)");
    return -1;
}

int train_parse(int argc, char **argv, train_options *o) {
    *o = (train_options){.model = "cnn",
                         .dataset = "fashion-mnist",
                         .epochs = 3,
                         .batch_size = 128,
                         .lr = 1e-3,
                         .optimizer = "adam",
                         .momentum = 0.9,
                         .weight_decay = -1,
                         .schedule = "none",
                         .workers = -1,
                         .augment = -1,
                         .amp = "off"};
    ct_device_parse("auto", &o->device);
    bool given[OPTION_COUNT] = {false};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(help, stdout);
            return 0;
        }
        /* --option, --option value or --option=value */
        char name[64];
        const char *eq = strchr(arg, '='), *value = NULL;
        if (strncmp(arg, "--", 2) != 0) return bad("argument", arg, "an option (--name value)");
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        int k = option_index(name);
        if (k < 0) return unknown(eq ? name : arg);
        if (given[k])
            return ct_cli_usage_error("%s is given twice: give it once (see ctensor train --help)",
                                      name);
        given[k] = true;
        if (!options[k].takes_value) {
            if (eq) return bad(name, eq + 1, "no value: it is a flag");
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 >= argc) {
            return bad(arg, "", "a value after it");
        } else {
            value = argv[++i];
        }
        if (value && !value[0])
            return ct_cli_usage_error("%s is empty: give it a value (see ctensor train --help)",
                                      name);
        if (strcmp(name, "--json") == 0) {
            o->json = true;
        } else if (strcmp(name, "--nondeterministic") == 0) {
            o->nondeterministic = true;
        } else if (strcmp(name, "--resume") == 0) {
            o->resume = true;
        } else if (strcmp(name, "--resume-weights-only") == 0) {
            o->resume = o->resume_weights_only = true;
        } else if (strcmp(name, "--soft-placement") == 0) {
            o->soft_placement = true;
        } else if (strcmp(name, "--augment") == 0 || strcmp(name, "--no-augment") == 0) {
            if (o->augment >= 0)
                return ct_cli_usage_error("--augment and --no-augment: give one of them");
            o->augment = strcmp(name, "--augment") == 0;
        } else if (strcmp(name, "--profile") == 0) {
            o->profile = true;
        } else if (strcmp(name, "--nesterov") == 0) {
            o->nesterov = true;
        } else if (strcmp(name, "--no-decay-norm-bias") == 0) {
            o->no_decay_norm_bias = true;
        } else {
            int status = parse_value(name, value, o);
            if (status >= 0) return status;
        }
        /* --dataset cifar10 DIR: the folder is the next argument. */
        if (strcmp(name, "--dataset") == 0 && strcmp(value, "cifar10") == 0) {
            if (i + 1 >= argc || strncmp(argv[i + 1], "--", 2) == 0 || !argv[i + 1][0])
                return bad("--dataset cifar10", "",
                           "its folder after it: --dataset cifar10 DIR (CIFAR-10's binary "
                           "version, unpacked)");
            o->dataset_dir = argv[++i];
        }
    }
    int status = check_data_options(o);
    if (status >= 0) return status;
    if (o->resume && !o->checkpoint) return bad("--resume", "", "--checkpoint FILE with it");
    if (train_is_gpt(o->model)) {
        status = gpt_defaults(o, given);
        if (status >= 0) return status;
    } else {
        static const char *const gpt_only[] = {"--layers", "--heads", "--width",        "--context",
                                               "--vocab",  "--steps", "--eval-interval"};
        for (size_t i = 0; i < sizeof gpt_only / sizeof gpt_only[0]; i++)
            if (given[option_index(gpt_only[i])])
                return bad(gpt_only[i], "", "--model gpt, gpt-mini or gpt2-124m with it");
        status = recipe(o, given);
        if (status >= 0) return status;
    }
    status = check_device(o);
    if (status >= 0) return status;
    /* On the CPU a worker thread takes its time from the step's own threads: measured with
     * bench/bench_loader on 2 cores, preparing batches in the step's thread keeps the
     * throughput of batches made beforehand, one worker loses 6% and two 25%. A GPU leaves
     * the cores free for the workers. */
    if (o->workers < 0) o->workers = ct_device_is_host(o->device) ? 0 : 2;
    o->progress = !o->json && isatty(STDOUT_FILENO);
    return -1;
}
