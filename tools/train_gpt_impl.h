/* `ctensor train --model gpt...`: its data (train_gpt_data.c) and the run (train_gpt.c). */
#ifndef CT_TRAIN_GPT_IMPL_H
#define CT_TRAIN_GPT_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "train_impl.h"

/* Token sequences: the bytes of a text file (vocabulary 256), its last 10% held out for
 * validation, or random tokens of a vocabulary (synthetic). */
typedef struct gpt_data {
    uint8_t *bytes; /* the text, or NULL for synthetic tokens */
    int64_t size;   /* bytes in the text */
    int64_t train;  /* bytes [0, train) train; [train, size) validate */
    int64_t vocab;  /* 256 for text */
    uint64_t seed;
} gpt_data;

/* Read o->dataset (or set up synthetic tokens); one error line naming the file and what is
 * wrong (too short for the context, unreadable) on failure. */
ct_status gpt_data_load(const train_options *o, gpt_data *out);
void gpt_data_free(gpt_data *d);

/* Batch `index` of a stream (0: training, keyed by the step; 1: validation, keyed by the
 * evaluation batch): `batch` windows of context + 1 tokens, each starting at a random offset
 * of its part of the text (splitmix64 of the seed, stream and index: the same batches for
 * the same seed, resumed or not, in ctensor and in bench/peer_torch_gpt.py), as inputs x
 * and targets y (x shifted by one), int64, batch * context each. */
void gpt_data_batch(const gpt_data *d, int stream, int64_t index, int64_t batch, int64_t context,
                    int64_t *x, int64_t *y);

/* The resident set size's growth over a stretch of the run (train_rss.c; Linux's /proc):
 * train_rss_begin resets the peak and returns the size now (0 where /proc cannot tell);
 * train_rss_growth(begun) is the peak since, less begun (0 when begun is 0). */
size_t train_rss_begin(void);
size_t train_rss_growth(size_t begun);

#endif
