/* pora_example.c: proves pora.h usable from plain C. Writes a small shard file, opens it through
 * the C ABI, hashes one nonce, mines a slot with every nonce valid and checks that the mined
 * record for that nonce carries the same hash1, then checks the error paths (short randao, double
 * free, use after close). Exits 0 only when every check holds.
 *
 * Build (see Makefile):  cc -I../../crates/pora-ffi/include pora_example.c \
 *                          ../../target/release/libpora_ffi.a -ldl -lm -lpthread -o pora_example
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pora.h"

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); failures++; } } while (0)

/* A 64-KV shard of 4 KiB KVs (shard 0): header, then pseudo-random bytes. */
static int write_shard(const char *path) {
    const unsigned long long chunks = 64, kv = 4096, meta = 32;
    unsigned char header[4096] = {0};
    unsigned long long fields[8] = {0xcf20bd770c22b2e1ULL, 1, 0, chunks, 0, kv, kv, meta};
    for (int f = 0; f < 8; f++)
        for (int b = 0; b < 8; b++) header[8 * f + b] = (unsigned char)(fields[f] >> (56 - 8 * b));
    memset(header + 64, 0x5c, 20);
    FILE *out = fopen(path, "wb");
    if (!out) return -1;
    fwrite(header, 1, sizeof header, out);
    unsigned long long x = 88172645463325252ULL; /* xorshift64 */
    for (unsigned long long i = 0; i < chunks * (kv + meta); i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        fputc((int)(x & 0xff), out);
    }
    return fclose(out);
}

/* Copies pora's buffer into a NUL-terminated string and frees the buffer. */
static char *take(PoraBuf *buf) {
    char *s = malloc(buf->len + 1);
    if (buf->len) memcpy(s, buf->ptr, buf->len);
    s[buf->len] = 0;
    CHECK(pora_buf_free(buf) == PORA_STATUS_OK, "pora_buf_free");
    return s;
}

/* The value of "key":"..." after position `from` in json (a 0x hash), or NULL. */
static char *field(const char *json, const char *key, char *value, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *at = strstr(json, pattern);
    if (!at) return NULL;
    at += strlen(pattern);
    const char *end = strchr(at, '"');
    if (!end || (size_t)(end - at) >= cap) return NULL;
    memcpy(value, at, (size_t)(end - at));
    value[end - at] = 0;
    return value;
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "pora_example_shard.dat";
    CHECK(pora_abi_version() == PORA_ABI_VERSION, "ABI %u, header %d", pora_abi_version(), PORA_ABI_VERSION);
    if (write_shard(path) != 0) { fprintf(stderr, "cannot write %s\n", path); return 1; }

    PoraBytes file = {(const uint8_t *)path, strlen(path)};
    size_t group = 1;
    PoraOpenOptions options;
    memset(&options, 0, sizeof options); /* all zero = defaults */
    options.method = (PoraBytes){(const uint8_t *)"pread", 5};
    options.threads = 2;
    options.depth = 1;
    options.profile = PORA_PROFILE_SOURCE_IGNORE;
    uint64_t handle = 0;
    PoraBuf out;
    PoraStatus st = pora_open(&file, 1, &group, 1, &options, &handle, &out);
    char *info = take(&out);
    if (st != PORA_STATUS_OK) { fprintf(stderr, "open: %d %s\n", st, info); return 1; }
    printf("opened: %s\n", info);
    free(info);

    uint8_t randao[32];
    memset(randao, 0x42, sizeof randao);
    st = pora_hash(handle, 0, (PoraBytes){randao, 32}, 17, NULL, &out);
    char *hashed = take(&out);
    CHECK(st == PORA_STATUS_OK, "hash: %s", hashed);
    char hash1[80] = {0};
    CHECK(field(hashed, "hash1", hash1, sizeof hash1) != NULL, "no hash1 in %s", hashed);
    printf("nonce 17: hash1 %s\n", hash1);
    free(hashed);

    PoraSlotParams params;
    memset(&params, 0, sizeof params);
    params.randao = (PoraBytes){randao, 32};
    params.nonce_start = 17;
    params.nonce_end = 18;
    /* The time left to the caller's deadline, measured right before the call: a whole slot. */
    params.deadline_remaining_ns = PORA_DEFAULT_SLOT_LENGTH_MS * 1000000ull;
    params.find = PORA_FIND_ALL;
    params.difficulty.kind = PORA_DIFF_KIND_REQUIRED;
    memset(params.difficulty.required_diff, 0xff, 32); /* every nonce valid */
    uint64_t token = 0;
    st = pora_cancel_new(&token, &out);
    free(take(&out));
    CHECK(st == PORA_STATUS_OK, "cancel_new");
    st = pora_mine_slot(handle, &params, token, &out);
    char *mined = take(&out);
    CHECK(st == PORA_STATUS_OK, "mine: %s", mined);
    char mined_hash1[80] = {0};
    const char *found = strstr(mined, "\"found\":[");
    CHECK(found && field(found, "hash1", mined_hash1, sizeof mined_hash1), "no found nonce in %s", mined);
    CHECK(strcmp(hash1, mined_hash1) == 0, "mined hash1 %s, hashed %s", mined_hash1, hash1);
    CHECK(strstr(mined, "\"noncesTried\":1") != NULL, "noncesTried in %s", mined);
    printf("mined: %s\n", mined);
    free(mined);

    /* Error paths: a short randao, a double free, use after close, a freed token. */
    st = pora_hash(handle, 0, (PoraBytes){randao, 31}, 1, NULL, &out);
    char *msg = take(&out);
    CHECK(st == PORA_STATUS_INVALID_ARGUMENT && strstr(msg, "randao"), "short randao: %d %s", st, msg);
    free(msg);
    st = pora_hash(handle, 0, (PoraBytes){randao, 32}, 1, NULL, &out);
    PoraBuf copy = out;
    free(take(&out));
    CHECK(pora_buf_free(&copy) == PORA_STATUS_INVALID_ARGUMENT, "double free not detected");
    st = pora_cancel_free(token, &out);
    free(take(&out));
    st = pora_cancel(token, &out);
    free(take(&out));
    CHECK(st == PORA_STATUS_CLOSED, "cancel after free: %d", st);
    st = pora_close(handle, &out);
    free(take(&out));
    CHECK(st == PORA_STATUS_OK, "close");
    st = pora_mine_slot(handle, &params, 0, &out);
    msg = take(&out);
    CHECK(st == PORA_STATUS_CLOSED, "mine after close: %d %s", st, msg);
    free(msg);

    remove(path);
    if (failures) { fprintf(stderr, "%d checks failed\n", failures); return 1; }
    printf("pora_example: all checks passed\n");
    return 0;
}
