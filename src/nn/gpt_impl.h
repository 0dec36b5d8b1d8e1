/* The GPT module's layout, shared by its construction (gpt.c) and its forward passes, full
 * and cached (gpt_forward.c). The tree mirrors nanoGPT's, so the state-dict names follow:
 *
 *     GPT (sizes: vocab, context, layers, heads, width; p: dropout)
 *       transformer: wte, wpe (Embedding), h (ModuleList of Block), ln_f (LayerNorm)
 *       Block: ln_1, attn (CausalSelfAttention: c_attn, c_proj), ln_2, mlp (MLP: c_fc, c_proj)
 */
#ifndef CT_GPT_IMPL_H
#define CT_GPT_IMPL_H

#include "nn/module_impl.h"

enum { CT__GPT_VOCAB, CT__GPT_CONTEXT, CT__GPT_LAYERS, CT__GPT_HEADS, CT__GPT_WIDTH };
/* Children of transformer, of a block, and of its attention and MLP. */
enum { CT__GPT_WTE, CT__GPT_WPE, CT__GPT_H, CT__GPT_LN_F };
enum { CT__BLOCK_LN_1, CT__BLOCK_ATTN, CT__BLOCK_LN_2, CT__BLOCK_MLP };
enum { CT__ATTN_C_ATTN, CT__ATTN_C_PROJ };
enum { CT__MLP_C_FC, CT__MLP_C_PROJ };

extern const char ct__gpt_kind[]; /* "GPT": how a module is known to be one */

ct_tensor *ct__gpt_forward(ct_module *m, const ct_tensor *tokens);
ct_tensor *ct__gpt_block_forward(ct_module *m, const ct_tensor *x);
ct_tensor *ct__gpt_attention_forward(ct_module *m, const ct_tensor *x);
ct_tensor *ct__gpt_mlp_forward(ct_module *m, const ct_tensor *x);

#endif
