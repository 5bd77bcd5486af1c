// Writes tests/data/golden/q8-activations.json (to stdout): a deterministic non-integer input
// of 1024 floats and the exact bytes ggml's quantize_row_q8_0_ref, quantize_row_q8_1_ref and
// quantize_row_q8_K_ref write for it. Built and run by scripts/make-q8-goldens against ggml's
// own ggml-base library; nothing of this project is involved.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ggml-quants.h"

enum { N = 1024 };

static uint32_t lcg_state = 12345u;
// Uniform in [-1, 1), deterministic on every platform (32-bit LCG, top 24 bits).
static float uniform(void) {
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return (float)(lcg_state >> 8) / 8388608.0f - 1.0f;
}

// The input, by 256-element (Q8_K) block; every 32-element (Q8_0/Q8_1) block is noted.
static void make_input(float* x) {
    memset(x, 0, N * sizeof(float));
    // Block A: every 32-block starts with -254, the first largest magnitude, so Q8_K's iscale is
    // -127/-254 = 0.5 exactly and Q8_0's d = 254/127 = 2 (id 0.5): odd integers land on .5.
    for (int b = 0; b < 8; ++b) x[32 * b] = -254.f;
    for (int j = 1; j < 32; ++j) {
        const float k = (float)j;
        x[j] = (j % 2 ? 1.f : -1.f) * (2.f * k - 1.f);                 // +-1, +-3, ...: exact .5 ties
        x[32 + j] = nextafterf(2.f * k + 1.f, j % 2 ? 1e9f : -1e9f);     // one ulp beside a tie
        x[64 + j] = (j % 3 == 0 ? k / 3.f : j % 3 == 1 ? 0.1f * k : -0.7f * k);  // fractions
        x[128 + j] = 253.f - (float)(j % 4) * 0.25f;                    // 126.5, 126.375, ... near the top
        x[160 + j] = -253.f + (float)(j % 5) * 0.2f;
        x[192 + j] = 254.f * uniform();
        x[224 + j] = 200.f * uniform();
    }
    static const float tiny[] = {1.f, -1.f, 0.999f, -1.001f, 1e-3f, -1e-3f, 1e-20f, -1e-20f, 1e-40f, -0.f,
                                 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 3.f, -3.f, 0.75f, -0.25f};
    for (int j = 0; j < (int)(sizeof tiny / sizeof tiny[0]); ++j) x[97 + j] = tiny[j];  // 32-block 3
    // Block B: one +127 (so Q8_K's iscale is -1 and d = -1: the values change sign); its 32-block
    // has d = 1 in Q8_0 and holds +-(k + 0.5). The other 32-blocks have maxima from 1e-3 to 100.
    static const float spans[] = {1.f, 1e-3f, 100.f, 3.3f, 0.37f, 64.f, 12.7f};
    for (int j = 0; j < 32; ++j) x[256 + j] = (j % 2 ? -1.f : 1.f) * ((float)(j % 16) + 0.5f);
    x[256 + 17] = 127.f;
    for (int b = 1; b < 8; ++b)
        for (int j = 0; j < 32; ++j) x[256 + 32 * b + j] = spans[b - 1] * uniform();
    // Block C: one large outlier per 32-block (alternating sign), the rest in [-2, 2); 32-block 5
    // is all zeros (Q8_0 d = 0).
    for (int b = 0; b < 8; ++b) {
        if (b == 5) continue;
        for (int j = 0; j < 32; ++j) x[512 + 32 * b + j] = 2.f * uniform();
        x[512 + 32 * b + (7 * b + 3) % 32] = (b % 2 ? -1.f : 1.f) * (1000.f + 37.5f * (float)b);
    }
    // Block D stays all zeros (Q8_K's amax == 0 path).
}

static void hex(const char* key, const void* p, size_t n, int last) {
    const uint8_t* b = (const uint8_t*)p;
    printf("  \"%s\": \"", key);
    for (size_t i = 0; i < n; ++i) printf("%02x", b[i]);
    printf("\"%s\n", last ? "" : ",");
}

int main(int argc, char** argv) {
    static float x[N];
    static block_q8_0 q0[N / QK8_0];
    static block_q8_1 q1[N / QK8_1];
    static block_q8_K qk[N / QK_K];
    make_input(x);
    // ggml leaves bsums unset for an all-zero Q8_K block: zero them, as this project does.
    memset(qk, 0, sizeof qk);
    quantize_row_q8_0_ref(x, q0, N);
    quantize_row_q8_1_ref(x, q1, N);
    quantize_row_q8_K_ref(x, qk, N);
    printf("{\n  \"generator\": \"scripts/make-q8-goldens: ggml's quantize_row_q8_0_ref, quantize_row_q8_1_ref, "
           "quantize_row_q8_K_ref (%s)\",\n  \"n\": %d,\n", argc > 1 ? argv[1] : "ggml", N);
    hex("input_f32le", x, sizeof x, 0);
    hex("q8_0", q0, sizeof q0, 0);
    hex("q8_1", q1, sizeof q1, 0);
    hex("q8_K", qk, sizeof qk, 1);
    printf("}\n");
    return 0;
}
