/* `ctensor generate`: sample bytes from a GPT checkpoint of `ctensor train --model gpt...`,
 * one token per step through the model's key/value cache (ct_gpt_forward_cached). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_impl.h"

static const char help[] =
    "usage: ctensor generate --checkpoint FILE [options]\n"
    "Sample text from a GPT trained on bytes by ctensor train --model gpt|gpt-mini|gpt2-124m.\n"
    "The prompt and what follows it go to stdout as bytes. Each new byte is one step of the\n"
    "model over its cached keys and values; when the context is full, the cache restarts\n"
    "from the last half of it.\n\n"
    "  --checkpoint FILE     a checkpoint written by ctensor train --model gpt...\n"
    "  --prompt TEXT         the text to continue (default: a newline)\n"
    "  --tokens N            bytes to sample (default 200)\n"
    "  --temperature T       divide the logits by T > 0 before sampling; 0 picks the most\n"
    "                        likely byte (default 0.8)\n"
    "  --top-k K             sample among the K most likely bytes only (default 0: all)\n"
    "  --seed N              the sampling's random stream (default 0)\n"
    "  --device D            where to run (default $CT_DEVICE, else auto)\n"
    "  --json                one JSON object: the text (NUL bytes end it), the counts and\n"
    "                        bytes per second\n\n" CT_CLI_EXIT_STATUS_HELP;

typedef struct generate_options {
    const char *checkpoint, *prompt;
    int64_t tokens, top_k;
    double temperature;
    uint64_t seed;
    ct_device device;
    bool json;
} generate_options;

static int bad(const char *option, const char *value, const char *expected) {
    return ct_cli_usage_error("%s \"%s\": expected %s (see ctensor generate --help)", option, value,
                              expected);
}

static int parse(int argc, char **argv, generate_options *o) {
    *o = (generate_options){.prompt = "\n", .tokens = 200, .temperature = 0.8};
    const char *env = getenv("CT_DEVICE");
    if (ct_device_parse(env && *env ? env : "auto", &o->device) != CT_OK)
        return ct_cli_usage_error("CT_DEVICE=\"%.64s\" is not a device", env);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            fputs(help, stdout);
            return 0;
        }
        if (!strcmp(arg, "--json")) {
            o->json = true;
            continue;
        }
        if (i + 1 >= argc) return bad(arg, "", "an option and its value");
        const char *v = argv[++i];
        int64_t n;
        if (!strcmp(arg, "--checkpoint")) {
            o->checkpoint = v;
        } else if (!strcmp(arg, "--prompt")) {
            o->prompt = v;
        } else if (!strcmp(arg, "--tokens")) {
            if (!ct_cli_parse_int(v, 0, 1 << 24, &n)) return bad(arg, v, "an integer >= 0");
            o->tokens = n;
        } else if (!strcmp(arg, "--top-k")) {
            if (!ct_cli_parse_int(v, 0, 1 << 24, &n)) return bad(arg, v, "an integer >= 0");
            o->top_k = n;
        } else if (!strcmp(arg, "--seed")) {
            if (!ct_cli_parse_int(v, 0, INT64_MAX, &n)) return bad(arg, v, "an integer >= 0");
            o->seed = (uint64_t)n;
        } else if (!strcmp(arg, "--temperature")) {
            char *end;
            o->temperature = strtod(v, &end);
            if (end == v || *end || !(o->temperature >= 0 && o->temperature < 1e6))
                return bad(arg, v, "a number >= 0");
        } else if (!strcmp(arg, "--device")) {
            if (ct_device_parse(v, &o->device) != CT_OK) return bad(arg, v, "a device");
        } else {
            return ct_cli_usage_error("unknown option \"%s\" (see ctensor generate --help)", arg);
        }
    }
    if (!o->checkpoint) return bad("--checkpoint", "", "a checkpoint file");
    if (!o->prompt[0]) return bad("--prompt", "", "at least one byte to continue");
    if (ct_device_check(o->device) != CT_OK)
        return ct_cli_usage_error("--device: %s", ct_last_error());
    return -1;
}

/* The GPT config in a checkpoint's metadata, or false after an error line. */
static bool read_config(const char *path, const ct_state_dict *sd, ct_gpt_config *c) {
    const char *keys[5] = {"gpt.vocab", "gpt.context", "gpt.layers", "gpt.heads", "gpt.width"};
    int64_t *fields[5] = {&c->vocab, &c->context, &c->layers, &c->heads, &c->width};
    *c = (ct_gpt_config){0};
    for (int i = 0; i < 5; i++) {
        const char *text = ct_state_dict_get_metadata(sd, keys[i]);
        if (!text || !ct_cli_parse_int(text, 1, 1 << 30, fields[i])) {
            ct_cli_usage_error("%s: no valid \"%s\" in its metadata: it is not a GPT checkpoint "
                               "of ctensor train --model gpt...",
                               path, keys[i]);
            return false;
        }
    }
    if (c->vocab == 256) return true;
    ct_cli_usage_error("%s: a model of %lld tokens (synthetic); generate samples bytes, from a "
                       "model trained on a text file (vocabulary 256)",
                       path, (long long)c->vocab);
    return false;
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A byte from the last position's logits (v of them): the most likely at temperature 0,
 * else a draw from softmax(logits / temperature) over the top_k most likely (0: all). */
static int sample(const generate_options *o, const float *logits, int v, uint64_t *rng) {
    int best = 0;
    for (int i = 1; i < v; i++)
        if (logits[i] > logits[best]) best = i;
    if (o->temperature == 0) return best;
    double cut = -INFINITY;
    if (o->top_k > 0 && o->top_k < v) { /* the k-th largest logit */
        float sorted[256];
        memcpy(sorted, logits, sizeof(float) * (size_t)v);
        for (int k = 0; k < o->top_k; k++) { /* a partial selection sort: k <= 256 */
            int m = k;
            for (int i = k + 1; i < v; i++)
                if (sorted[i] > sorted[m]) m = i;
            float t = sorted[k];
            sorted[k] = sorted[m], sorted[m] = t;
        }
        cut = sorted[o->top_k - 1];
    }
    double p[256], total = 0;
    for (int i = 0; i < v; i++) {
        p[i] = logits[i] < cut ? 0 : exp((logits[i] - logits[best]) / o->temperature);
        total += p[i];
    }
    double u = (double)(splitmix64(rng) >> 11) * 0x1p-53 * total;
    for (int i = 0; i < v; i++)
        if ((u -= p[i]) < 0) return i;
    return best;
}

/* Run tokens [from, to) of seq through the cache; the last position's logits to host. */
static ct_status feed(ct_module *m, ct_gpt_cache *cache, const int64_t *seq, int64_t from,
                      int64_t to, float *logits, int v, ct_device device) {
    ct_scope_begin();
    ct_tensor *x = ct_from_data(seq + from, 2, (int64_t[]){1, to - from}, CT_I64, device);
    ct_tensor *y = x ? ct_gpt_forward_cached(m, cache, x) : NULL;
    ct_tensor *last = y ? ct_slice(y, 1, -1, INT64_MAX, 1) : NULL;
    ct_tensor *f = last ? ct_contiguous(ct_cast(last, CT_F32)) : NULL;
    ct_status s = f ? ct_copy_to_host(f, logits, sizeof(float) * (size_t)v) : ct_last_status();
    ct_scope_end();
    return s;
}

static int generate(const generate_options *o, ct_module *m, int64_t context) {
    size_t prompt_len = strlen(o->prompt);
    int64_t total = (int64_t)prompt_len + o->tokens;
    int64_t *seq = malloc(sizeof(int64_t) * (size_t)(total > 0 ? total : 1));
    char *text = malloc((size_t)total + 1);
    ct_gpt_cache *cache = ct_gpt_cache_new(m, 1);
    if (!seq || !text || !cache) {
        free(seq), free(text), ct_gpt_cache_free(cache);
        return ct_cli_fail("the cache: %s", ct_last_error());
    }
    for (size_t i = 0; i < prompt_len; i++) seq[i] = (unsigned char)o->prompt[i];
    if (!o->json) fwrite(o->prompt, 1, prompt_len, stdout);
    uint64_t rng = o->seed;
    float logits[256];
    int64_t n = (int64_t)prompt_len, start = n > context ? n - context : 0;
    ct_status s = feed(m, cache, seq, start, n, logits, 256, o->device);
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    for (int64_t k = 0; s == CT_OK && k < o->tokens; k++) {
        int next = sample(o, logits, 256, &rng);
        seq[n++] = next;
        if (!o->json) {
            putchar(next);
            fflush(stdout);
        }
        if (k + 1 == o->tokens) break;
        if (ct_gpt_cache_length(cache) == context) { /* full: restart from its last half */
            ct_gpt_cache_reset(cache);
            s = feed(m, cache, seq, n - context / 2, n, logits, 256, o->device);
        } else {
            s = feed(m, cache, seq, n - 1, n, logits, 256, o->device);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    double seconds = (double)(ts1.tv_sec - ts0.tv_sec) + 1e-9 * (double)(ts1.tv_nsec - ts0.tv_nsec);
    int rc = s == CT_OK ? 0 : ct_cli_fail("sampling: %s", ct_last_error());
    if (rc == 0 && o->json) {
        for (int64_t i = 0; i < n; i++) text[i] = (char)seq[i];
        text[n] = '\0';
        printf("{\"text\": ");
        ct_cli_json_string(stdout, text);
        printf(", \"prompt_bytes\": %zu, \"tokens\": %lld, \"tokens_per_second\": %.1f}\n",
               prompt_len, (long long)o->tokens, seconds > 0 ? (double)o->tokens / seconds : 0.0);
        ct_cli_result_printed();
    } else if (rc == 0) {
        putchar('\n');
    }
    ct_gpt_cache_free(cache);
    free(text);
    free(seq);
    return rc;
}

int ct_cli_generate(int argc, char **argv) {
    generate_options o;
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    ct_state_dict *sd = ct_safetensors_load(o.checkpoint, CT_CPU);
    if (!sd) return ct_cli_usage_error("%s: %s", o.checkpoint, ct_last_error());
    ct_gpt_config config;
    ct_module *m = NULL;
    if (read_config(o.checkpoint, sd, &config)) {
        m = ct_nn_gpt(&config);
        if (!m || ct_module_load_state_dict(m, sd, NULL) != CT_OK)
            rc = ct_cli_usage_error("%s: %s", o.checkpoint, ct_last_error());
        else if (ct_module_to(m, o.device) != CT_OK || ct_module_eval(m) != CT_OK)
            rc = ct_cli_fail("the model: %s", ct_last_error());
    } else {
        rc = CT_CLI_USAGE;
    }
    ct_state_dict_free(sd);
    if (rc < 0) {
        ct_no_grad_push();
        rc = generate(&o, m, config.context);
        ct_no_grad_pop();
    }
    ct_module_free(m);
    return rc;
}
