/* CRC32C (Castagnoli), for the C modules that checksum without the GIL or without a Python call: the journal's
 * group trailers (storage/_journal_writer.c) and the client's entry digests (client/_native.c).
 *
 * The crc32c package the Python side uses has no C interface, and the journal's writer thread runs without the
 * GIL, so the polynomial is computed here: by the CPU's crc32 instruction where there is one (SSE 4.2), by a table
 * otherwise. ``crc32c_update(crc, data, n)`` continues ``crc`` over ``data`` as ``crc32c.crc32c(data, crc)`` does
 * (``crc32c_update(0, ...)`` starts one); tests/storage/test_journal_group_checksum.py compares both with the
 * package. Each including module calls ``crc32c_init()`` once.
 *
 * The instruction takes three cycles to give its result and can start one per cycle, so a single chain of them
 * runs at a third of the CPU's rate. Long inputs are cut into three streams checksummed side by side, whose
 * registers are then joined: the register after A then B is the register after A carried over |B| zero bytes,
 * XOR the register of B started from zero (the CRC is linear), and carrying over a fixed number of zero bytes is
 * a linear map of the 32-bit register, applied with four 256-entry tables built once.
 */
#ifndef BOOKIE_CRC32C_H
#define BOOKIE_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { CRC32C_POLY = 0x82F63B78u, CRC32C_LONG = 8192, CRC32C_SHORT = 256 }; /* stream lengths: powers of two */

static uint32_t crc32c_table[256];
static int crc32c_hardware;
/* Carry a register over CRC32C_LONG (resp. CRC32C_SHORT) zero bytes: the map applied to each byte of the register. */
static uint32_t crc32c_long_shift[4][256], crc32c_short_shift[4][256];

/* A linear map of 32-bit registers as the images of its 32 unit vectors, applied to ``v``. */
static uint32_t crc32c_apply(const uint32_t map[32], uint32_t v) {
    uint32_t out = 0;
    for (int i = 0; v; i++, v >>= 1)
        if (v & 1)
            out ^= map[i];
    return out;
}

/* ``out`` = ``map`` applied twice. */
static void crc32c_twice(uint32_t out[32], const uint32_t map[32]) {
    for (int i = 0; i < 32; i++)
        out[i] = crc32c_apply(map, map[i]);
}

/* The tables that carry a register over ``zeros`` zero bytes (a power of two). */
static void crc32c_shift_tables(uint32_t tables[4][256], size_t zeros) {
    uint32_t map[32], doubled[32];
    map[0] = CRC32C_POLY; /* one zero bit: the register shifted right, the polynomial added for a bit out */
    for (int i = 1; i < 32; i++)
        map[i] = 1u << (i - 1);
    for (size_t bits = 1; bits < zeros * 8; bits *= 2) {
        crc32c_twice(doubled, map);
        memcpy(map, doubled, sizeof map);
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            tables[k][b] = crc32c_apply(map, b << (8 * k));
}

static uint32_t crc32c_shift(uint32_t tables[4][256], uint32_t crc) {
    return tables[0][crc & 0xFF] ^ tables[1][(crc >> 8) & 0xFF] ^ tables[2][(crc >> 16) & 0xFF] ^ tables[3][crc >> 24];
}

static void crc32c_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_table[i] = c;
    }
    crc32c_shift_tables(crc32c_long_shift, CRC32C_LONG);
    crc32c_shift_tables(crc32c_short_shift, CRC32C_SHORT);
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc32c_hardware = __builtin_cpu_supports("sse4.2");
#endif
}

#if defined(__x86_64__)
/* Three streams of ``len`` bytes from ``*p`` side by side, joined into ``crc``; ``*p`` moves past them. */
__attribute__((target("sse4.2"))) static uint64_t crc32c_three_streams(uint64_t crc, const uint8_t **p, size_t len,
                                                                        uint32_t shift[4][256]) {
    const uint8_t *a = *p, *end = *p + len;
    uint64_t c1 = 0, c2 = 0;
    for (; a < end; a += 8) {
        uint64_t w0, w1, w2;
        memcpy(&w0, a, 8);
        memcpy(&w1, a + len, 8);
        memcpy(&w2, a + 2 * len, 8);
        crc = __builtin_ia32_crc32di(crc, w0);
        c1 = __builtin_ia32_crc32di(c1, w1);
        c2 = __builtin_ia32_crc32di(c2, w2);
    }
    crc = crc32c_shift(shift, (uint32_t)crc) ^ (uint32_t)c1;
    crc = crc32c_shift(shift, (uint32_t)crc) ^ (uint32_t)c2;
    *p += 3 * len;
    return crc;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = crc;
    for (; n >= 3 * CRC32C_LONG; n -= 3 * CRC32C_LONG)
        c = crc32c_three_streams(c, &p, CRC32C_LONG, crc32c_long_shift);
    for (; n >= 3 * CRC32C_SHORT; n -= 3 * CRC32C_SHORT)
        c = crc32c_three_streams(c, &p, CRC32C_SHORT, crc32c_short_shift);
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
