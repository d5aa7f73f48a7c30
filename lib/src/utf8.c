/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The UTF-8 check that every string of a commit, of an inbox apply and of an event the relay
 * publishes goes through (utf8-private.h). Pure functions over the caller's bytes: no state,
 * safe from any thread. It sits below both check.c and bson-walk.c, which use it.
 */
#include "utf8-private.h"

#include <stdint.h>
#include <string.h>

/* The length of the UTF-8 sequence at @u (@avail bytes left) as bson_utf8_validate() judges
 * it, or 0 if invalid: shortest forms only, no surrogates, nothing above U+10FFFF, and the
 * two-byte form of NUL (C0 80) only where NUL is allowed. */
static size_t
utf8_seq(const unsigned char *u, size_t avail, bool allow_nul)
{
   size_t n = u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : 2;
   uint32_t c = u[0] & (n == 2 ? 0x1Fu : n == 3 ? 0x0Fu : 0x07u);

   if ((u[0] & 0xC0) == 0x80 || u[0] >= 0xF8 || n > avail) {
      return 0;
   }
   for (size_t j = 1; j < n; j++) {
      if ((u[j] & 0xC0) != 0x80) {
         return 0;
      }
      c = (c << 6) | (u[j] & 0x3Fu);
   }
   if (c > 0x10FFFF || (c & 0xFFFFF800u) == 0xD800) {
      return 0;
   }
   if (n == 2) {
      return c >= 0x80 || (c == 0 && allow_nul) ? 2 : 0;
   }
   return c >= (n == 3 ? 0x800u : 0x10000u) ? n : 0;
}

/* bson_utf8_validate() decodes byte by byte, validation is a large share of a commit's CPU
 * (and of the relay's for large events), and keys and values are mostly ASCII: runs of 8
 * ASCII bytes (without NUL unless allowed) are taken at once, and the check goes back to
 * them after every other character. Accepts exactly what bson_utf8_validate() accepts
 * (fuzz-bson-walk compares them). */
/* Nonzero if one of the 8 bytes at @p is 0x80 or above, or NUL unless @allow_nul. */
static inline uint64_t
not_plain8(const unsigned char *p, bool allow_nul)
{
   const uint64_t high = 0x8080808080808080ull, ones = 0x0101010101010101ull;
   uint64_t v;

   memcpy(&v, p, 8);
   return (v & high) | (allow_nul ? 0 : (v - ones) & ~v & high);
}

bool
_outbox_utf8_valid(const char *s, size_t len, bool allow_nul)
{
   const unsigned char *u = (const unsigned char *)s;
   size_t i = 0;

   while (i < len) {
      /* 32 bytes at a time through long plain runs (64 KiB strings), then 8. */
      if (len - i >= 32 &&
          !(not_plain8(u + i, allow_nul) | not_plain8(u + i + 8, allow_nul) |
            not_plain8(u + i + 16, allow_nul) | not_plain8(u + i + 24, allow_nul))) {
         i += 32;
         continue;
      }
      if (len - i >= 8 && !not_plain8(u + i, allow_nul)) {
         i += 8;
         continue;
      }
      if (u[i] < 0x80) {
         if (!u[i] && !allow_nul) {
            return false;
         }
         i++;
         continue;
      }
      size_t n = utf8_seq(u + i, len - i, allow_nul);
      if (!n) {
         return false;
      }
      i += n;
   }
   return true;
}

/* A code point MQTT 5 section 1.5.4 lets a receiver refuse besides U+0000: a control
 * character (U+0001..U+001F, U+007F..U+009F) or a non-character (U+FDD0..U+FDEF, and
 * U+nFFFE, U+nFFFF of every plane). */
static bool
mqtt_refusable(uint32_t c)
{
   return c < 0x20 || (c >= 0x7F && c <= 0x9F) || (c >= 0xFDD0 && c <= 0xFDEF) ||
          (c & 0xFFFEu) == 0xFFFEu;
}

size_t
_outbox_mqtt_char_len(const char *s, size_t avail)
{
   const unsigned char *u = (const unsigned char *)s;
   size_t n;
   uint32_t c;

   if (avail == 0) {
      return 0;
   }
   if (u[0] < 0x80) {
      return mqtt_refusable(u[0]) ? 0 : 1;
   }
   n = utf8_seq(u, avail, false);
   if (!n) {
      return 0;
   }
   c = u[0] & (n == 2 ? 0x1Fu : n == 3 ? 0x0Fu : 0x07u);
   for (size_t j = 1; j < n; j++) {
      c = (c << 6) | (u[j] & 0x3Fu);
   }
   return mqtt_refusable(c) ? 0 : n;
}

bool
_outbox_utf8_mqtt_valid(const char *s, size_t len)
{
   const unsigned char *u = (const unsigned char *)s;
   size_t i = 0;

   while (i < len) {
      /* Printable ASCII runs (nearly every header and id) go 8 bytes at a time: a byte below
       * 0x20 borrows into its high bit, one of 0x7F or above carries into it or has it set. */
      if (len - i >= 8) {
         const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
         uint64_t v;
         memcpy(&v, u + i, 8);
         if (!((v | (v + ones) | ((v - 0x20 * ones) & ~v)) & high)) {
            i += 8;
            continue;
         }
      }
      if (u[i] >= 0x20 && u[i] < 0x7F) {
         i++;
         continue;
      }
      size_t n = _outbox_mqtt_char_len(s + i, len - i);
      if (!n) {
         return false;
      }
      i += n;
   }
   return true;
}
