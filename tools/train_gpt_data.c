/* GPT training data: a text file as bytes, or synthetic tokens, sampled as random windows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_impl.h"
#include "train_gpt_impl.h"

/* splitmix64: the next value of the sequence at *state. */
static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static ct_status read_text(const char *path, gpt_data *d) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        ct_cli_usage_error("--dataset \"%s\": cannot open it (%s)", path, strerror(errno));
        return CT_ERR_IO;
    }
    size_t capacity = 1 << 20, size = 0;
    uint8_t *bytes = malloc(capacity);
    while (bytes) {
        size += fread(bytes + size, 1, capacity - size, f);
        if (size < capacity) break;
        uint8_t *grown = realloc(bytes, capacity *= 2);
        if (!grown) free(bytes);
        bytes = grown;
    }
    bool failed = ferror(f);
    fclose(f);
    if (!bytes || failed) {
        free(bytes);
        ct_cli_usage_error("--dataset \"%s\": %s", path,
                           failed ? "a read failed" : "out of memory for its bytes");
        return CT_ERR_IO;
    }
    d->bytes = bytes;
    d->size = (int64_t)size;
    return CT_OK;
}

ct_status gpt_data_load(const train_options *o, gpt_data *out) {
    *out = (gpt_data){.vocab = o->gpt.vocab, .seed = o->seed};
    if (strcmp(o->dataset, "synthetic") == 0) return CT_OK;
    ct_status status = read_text(o->dataset, out);
    if (status != CT_OK) return status;
    out->vocab = 256;
    out->train = out->size - out->size / 10;
    int64_t window = o->gpt.context + 1;
    if (out->size / 10 >= window) return CT_OK;
    ct_cli_usage_error("--dataset \"%s\": %lld bytes; its last 10%% (the validation part) must "
                       "hold a window of context + 1 = %lld bytes: give at least %lld bytes or "
                       "a smaller --context",
                       o->dataset, (long long)out->size, (long long)window,
                       (long long)(10 * window));
    gpt_data_free(out);
    return CT_ERR_INVALID_ARG;
}

void gpt_data_free(gpt_data *d) {
    free(d->bytes);
    d->bytes = NULL;
}

void gpt_data_batch(const gpt_data *d, int stream, int64_t index, int64_t batch, int64_t context,
                    int64_t *x, int64_t *y) {
    uint64_t state = d->seed * 0x100000001B3ull ^ ((uint64_t)stream << 56) ^ (uint64_t)index;
    for (int64_t b = 0; b < batch; b++) {
        int64_t *xb = x + b * context, *yb = y + b * context;
        if (!d->bytes) {
            for (int64_t t = 0; t <= context; t++) {
                int64_t token = (int64_t)(splitmix64(&state) % (uint64_t)d->vocab);
                if (t < context) xb[t] = token;
                if (t > 0) yb[t - 1] = token;
            }
            continue;
        }
        int64_t lo = stream ? d->train : 0, hi = stream ? d->size : d->train;
        int64_t start = lo + (int64_t)(splitmix64(&state) % (uint64_t)(hi - lo - context));
        for (int64_t t = 0; t < context; t++) {
            xb[t] = d->bytes[start + t];
            yb[t] = d->bytes[start + t + 1];
        }
    }
}
