/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Cluster times (ts.h): comparison, and the time a resume token carries. Pure; any thread.
 */
#include "base/ts.h"

int
relay_ts_cmp(relay_ts_t a, relay_ts_t b)
{
   if (a.t != b.t) {
      return a.t < b.t ? -1 : 1;
   }
   if (a.i != b.i) {
      return a.i < b.i ? -1 : 1;
   }
   return 0;
}

static int
hex_digit(char c)
{
   if (c >= '0' && c <= '9') {
      return c - '0';
   }
   if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
   }
   if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
   }
   return -1;
}

/* A 6.0 token's _data is the hex of a KeyString whose first value is the cluster time
 * (r6.0 src/mongo/db/pipeline/resume_token.cpp, ResumeToken::toDocument): type byte 0x82
 * (CType::kTimestamp), then the Timestamp as one big-endian 64-bit word, seconds first
 * (src/mongo/db/storage/key_string.cpp, _appendTimestamp). High-water marks and event tokens
 * alike. */
bool
relay_ts_from_token_data(const char *data, relay_ts_t *ts)
{
   uint64_t word = 0;

   if (!data || data[0] != '8' || data[1] != '2') {
      return false;
   }
   for (int k = 2; k < 18; k++) {
      int d = hex_digit(data[k]); /* stops at the terminator too: it is no digit */
      if (d < 0) {
         return false;
      }
      word = word << 4 | (uint64_t)d;
   }
   ts->t = (uint32_t)(word >> 32);
   ts->i = (uint32_t)word;
   return true;
}
