// Prints llama.cpp's logits for a token sequence, one line per position (space-separated %.9g):
// the llama.cpp side of scripts/check-convert-logits. Built by that script against a llama.cpp
// checkout's llama.h and a build's libllama (1348f67); not part of the project's build.
//   convert-logits MODEL.gguf ID ID ...
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

int main(int argc, char** argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf ID...\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.use_extra_bufts = false;  // no load-time repacking (it crashes on some AVX-512 hosts)
    struct llama_model* model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 256;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;  // an F16 cache alone costs ~1e-3 of relative error
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    struct llama_context* ctx = llama_init_from_model(model, cp);
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    for (int i = 2; i < argc; ++i) {
        llama_token tok = (llama_token)atoi(argv[i]);
        if (llama_decode(ctx, llama_batch_get_one(&tok, 1)) != 0) {
            fprintf(stderr, "llama_decode failed at position %d\n", i - 2);
            return 1;
        }
        const float* logits = llama_get_logits_ith(ctx, -1);
        for (int v = 0; v < n_vocab; ++v) printf(v ? " %.9g" : "%.9g", logits[v]);
        printf("\n");
    }
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
