/* CRC32C (Castagnoli), for the C modules that checksum without the GIL or without a Python call: the journal's
 * group trailers (storage/_write_path.c) and the client's entry digests (client/_native.c).
 *
 * The crc32c package the Python side uses has no C interface, and the journal's writer thread runs without the
 * GIL, so the polynomial is computed here: by the CPU's crc32 instruction where there is one (SSE 4.2), by a table
 * otherwise. ``crc32c_update(crc, data, n)`` continues ``crc`` over ``data`` as ``crc32c.crc32c(data, crc)`` does
 * (``crc32c_update(0, ...)`` starts one); tests/storage/test_journal_group_checksum.py compares both with the
 * package. Each including module calls ``crc32c_init()`` once.
 */
#ifndef BOOKIE_CRC32C_H
#define BOOKIE_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static uint32_t crc32c_table[256];
static int crc32c_hardware;

static void crc32c_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc32c_table[i] = c;
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc32c_hardware = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
    }
    uint32_t c32 = (uint32_t)c;
    for (; n > 0; p++, n--)
        c32 = __builtin_ia32_crc32qi(c32, *p);
    return c32;
}
#endif

static uint32_t crc32c_update(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (crc32c_hardware)
        return ~crc32c_sse42(c, p, n);
#endif
    for (; n > 0; p++, n--)
        c = crc32c_table[(c ^ *p) & 0xFF] ^ (c >> 8);
    return ~c;
}

#endif
