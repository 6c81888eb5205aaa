/*
 * liblz4 (csrc/lz4, upstream and unchanged) built into kuradb's own
 * translation unit, by build.rs, for two reasons:
 *
 * - Its hash tables are 64 KiB (LZ4_MEMORY_USAGE=16, set by build.rs)
 *   rather than 16 KiB: the lz4 mode searches a preset dictionary's table
 *   beside the working one, and on JSON-like values the larger tables find
 *   more matches (bench/results/2026-11-29-compression.md). Built here, the
 *   setting reaches every program that depends on kuradb, not only this
 *   workspace. It changes speed and ratio only: lz4 blocks decode the same
 *   whatever table made them.
 * - Every liblz4 function is static in this unit (LZ4LIB_VISIBILITY and
 *   LZ4_PUBLISH_STATIC_FUNCTIONS below; the few lz4.c leaves global are
 *   renamed), so every symbol it exports starts with kuradb_lz4_: a program
 *   that links another liblz4 (lz4-sys, say) gets no duplicate symbols and
 *   keeps its own table size.
 */
#define LZ4LIB_VISIBILITY static
#define LZ4_PUBLISH_STATIC_FUNCTIONS
#define LZ4_STATIC_LINKING_ONLY
/* The few functions lz4.c leaves global without the visibility macro. */
#define LZ4_compress_destSize_extState kuradb_lz4_internal_compress_destSize_extState
#define LZ4_compress_forceExtDict kuradb_lz4_internal_compress_forceExtDict
#define LZ4_decompress_safe_forceExtDict kuradb_lz4_internal_decompress_safe_forceExtDict
#define LZ4_decompress_safe_partial_forceExtDict kuradb_lz4_internal_decompress_safe_partial_forceExtDict
#define LZ4_loadDict_internal kuradb_lz4_internal_loadDict_internal
#include "lz4/lz4.c"

LZ4_stream_t *kuradb_lz4_create_stream(void) { return LZ4_createStream(); }

void kuradb_lz4_free_stream(LZ4_stream_t *stream) { LZ4_freeStream(stream); }

void kuradb_lz4_reset_stream_fast(LZ4_stream_t *stream) { LZ4_resetStream_fast(stream); }

int kuradb_lz4_load_dict_slow(LZ4_stream_t *stream, const char *dictionary, int dict_size) {
    return LZ4_loadDictSlow(stream, dictionary, dict_size);
}

void kuradb_lz4_attach_dictionary(LZ4_stream_t *working, const LZ4_stream_t *dictionary) {
    LZ4_attach_dictionary(working, dictionary);
}

int kuradb_lz4_compress_fast_continue(LZ4_stream_t *stream, const char *src, char *dst, int src_size,
                                      int dst_capacity, int acceleration) {
    return LZ4_compress_fast_continue(stream, src, dst, src_size, dst_capacity, acceleration);
}

int kuradb_lz4_compress_fast_ext_state_fast_reset(void *state, const char *src, char *dst, int src_size,
                                                  int dst_capacity, int acceleration) {
    return LZ4_compress_fast_extState_fastReset(state, src, dst, src_size, dst_capacity, acceleration);
}

int kuradb_lz4_decompress_safe_using_dict(const char *src, char *dst, int compressed_size, int dst_capacity,
                                          const char *dict_start, int dict_size) {
    return LZ4_decompress_safe_usingDict(src, dst, compressed_size, dst_capacity, dict_start, dict_size);
}

int kuradb_lz4_sizeof_state(void) { return LZ4_sizeofState(); }
