/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Event ids: random UUIDs (version 4) from getrandom() (uuid-private.h). Its only state is a
 * per-thread buffer of random bytes, touched by its own thread alone (and emptied in a forked
 * child by the atfork handler), so no lock is needed.
 */
#include "uuid-private.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static void
fill_random(uint8_t *buf, size_t len)
{
   size_t got = 0;

   while (got < len) {
      ssize_t r = getrandom(buf + got, len - got, 0);

      if (r < 0) {
         if (errno == EINTR) {
            continue;
         }
         fprintf(stderr, "liboutbox: getrandom() failed (errno %d); cannot make event ids\n",
                 errno);
         abort();
      }
      got += (size_t)r;
   }
}

/* A syscall per event id was a visible part of a commit's CPU, so each thread takes 16 ids'
 * worth of bytes at once (256 bytes: getrandom() never returns short for that). Per thread,
 * so no lock and nothing shared between threads. */
#define RANDOM_BUF 256

static _Thread_local struct {
   uint8_t bytes[RANDOM_BUF];
   size_t pos; /* next unused byte; RANDOM_BUF = empty */
} pool = {.pos = RANDOM_BUF};

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child inherits the forking thread's unused bytes; without this, parent and child
 * would hand out the same event ids. (Only the forking thread exists in the child.) */
static void
discard_after_fork(void)
{
   explicit_bzero(pool.bytes, sizeof pool.bytes);
   pool.pos = RANDOM_BUF;
}

static void
register_atfork(void)
{
   if (pthread_atfork(NULL, NULL, discard_after_fork) != 0) {
      fprintf(stderr, "liboutbox: pthread_atfork() failed; cannot make event ids safely\n");
      abort();
   }
}

static void
take_random(uint8_t *out, size_t len)
{
   if (pool.pos + len > RANDOM_BUF) {
      /* Before any byte is handed out, so no child can inherit unregistered bytes. */
      pthread_once(&atfork_once, register_atfork);
      fill_random(pool.bytes, RANDOM_BUF);
      pool.pos = 0;
   }
   memcpy(out, pool.bytes + pool.pos, len);
   pool.pos += len;
}

void
_outbox_uuid_v4(char out[_OUTBOX_UUID_LEN + 1])
{
   static const char hex[] = "0123456789abcdef";
   uint8_t b[16];
   size_t o = 0;

   take_random(b, sizeof b);
   b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
   b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
   for (size_t i = 0; i < sizeof b; i++) {
      if (i == 4 || i == 6 || i == 8 || i == 10) {
         out[o++] = '-';
      }
      out[o++] = hex[b[i] >> 4];
      out[o++] = hex[b[i] & 0x0f];
   }
   out[o] = '\0';
}

bool
_outbox_uuid_is_valid(const char *s, size_t len)
{
   if (!s || len != _OUTBOX_UUID_LEN) {
      return false;
   }
   for (size_t i = 0; i < len; i++) {
      char c = s[i];

      if (i == 8 || i == 13 || i == 18 || i == 23) {
         if (c != '-') {
            return false;
         }
      } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
         return false;
      }
   }
   return true;
}
