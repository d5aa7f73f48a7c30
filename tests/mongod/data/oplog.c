/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The bounded change history (the oplog) and the cluster clock: appending entries, dropping
 * the oldest past the entry or byte bound, finding the position of a resume point, and
 * waking change-stream getMores. Callers hold the server lock.
 */
#include "data/oplog.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void
md_oplog_init(md_oplog_t *log, size_t capacity, size_t max_bytes)
{
   memset(log, 0, sizeof *log);
   log->capacity = capacity ? capacity : 1;
   log->max_bytes = max_bytes;
   log->ring = calloc(log->capacity, sizeof *log->ring);
   log->last.t = (uint32_t)time(NULL);
   log->last.i = 1;
   log->start = log->last;
   pthread_condattr_t attr;
   pthread_condattr_init(&attr);
   pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
   pthread_cond_init(&log->cond, &attr);
   pthread_condattr_destroy(&attr);
}

static size_t
str_size(const char *s)
{
   return s ? strlen(s) + 1 : 0;
}

static size_t
doc_size(const bson_t *b)
{
   return b ? b->len : 0;
}

static const char *
put_str(uint8_t **at, const char *s)
{
   size_t n = str_size(s);
   if (!n) {
      return NULL;
   }
   memcpy(*at, s, n);
   *at += n;
   return (const char *)(*at - n);
}

static md_oplog_doc_t
put_doc(uint8_t **at, const bson_t *b)
{
   md_oplog_doc_t d = {NULL, 0};
   if (b) {
      memcpy(*at, bson_get_data(b), b->len);
      d.data = *at;
      d.len = b->len;
      *at += b->len;
   }
   return d;
}

md_oplog_entry_t *
md_oplog_entry_new(const md_oplog_parts_t *p)
{
   size_t size = sizeof(md_oplog_entry_t) + str_size(p->db) + str_size(p->coll) +
                 str_size(p->to_db) + str_size(p->to_coll) + doc_size(p->doc_key) +
                 doc_size(p->full_doc) + doc_size(p->pre_image) + doc_size(p->update_desc);
   md_oplog_entry_t *e = calloc(1, size);
   uint8_t *at = e->data;
   e->op = p->op;
   e->db = put_str(&at, p->db);
   e->coll = put_str(&at, p->coll);
   e->to_db = put_str(&at, p->to_db);
   e->to_coll = put_str(&at, p->to_coll);
   e->doc_key = put_doc(&at, p->doc_key);
   e->full_doc = put_doc(&at, p->full_doc);
   e->pre_image = put_doc(&at, p->pre_image);
   e->update_desc = put_doc(&at, p->update_desc);
   e->bytes = size;
   return e;
}

const bson_t *
md_oplog_doc(md_oplog_doc_t d, bson_t *out)
{
   return d.len && bson_init_static(out, d.data, d.len) ? out : NULL;
}

void
md_oplog_entry_free(md_oplog_entry_t *e)
{
   if (!e) {
      return;
   }
   bson_destroy(e->lsid);
   free(e);
}

void
md_oplog_destroy(md_oplog_t *log)
{
   for (uint64_t s = log->first_seq; s < log->next_seq; s++) {
      md_oplog_entry_free(log->ring[s % log->capacity]);
   }
   free(log->ring);
   pthread_cond_destroy(&log->cond);
}

int
md_ts_cmp(md_ts_t a, md_ts_t b)
{
   if (a.t != b.t) {
      return a.t < b.t ? -1 : 1;
   }
   return a.i < b.i ? -1 : a.i > b.i;
}

/* Advances the cluster clock: a Timestamp strictly greater than the previous one. */
static void
tick(md_oplog_t *log, int64_t *wall_ms)
{
   struct timespec now;
   clock_gettime(CLOCK_REALTIME, &now);
   int64_t ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 + log->wall_offset_ms;
   uint32_t secs = (uint32_t)(ms / 1000);
   if (secs > log->last.t) {
      log->last.t = secs;
      log->last.i = 1;
   } else {
      log->last.i++;
   }
   *wall_ms = ms;
}

/* Stores `e` (its ts and wall time set), evicting the oldest entries beyond the bounds. */
static void
store_entry(md_oplog_t *log, md_oplog_entry_t *e)
{
   if (e->lsid) {
      e->bytes += sizeof(bson_t) + e->lsid->len; /* a transaction's session, held apart */
   }
   log->bytes += e->bytes;
   while (log->next_seq > log->first_seq && (log->next_seq - log->first_seq == log->capacity ||
                                             (log->max_bytes && log->bytes > log->max_bytes))) {
      md_oplog_entry_t *old = log->ring[log->first_seq % log->capacity];
      log->lost = true;
      log->lost_ts = old->ts;
      log->bytes -= old->bytes;
      md_oplog_entry_free(old);
      log->first_seq++;
   }
   e->seq = log->next_seq++;
   log->ring[e->seq % log->capacity] = e;
}

void
md_oplog_append(md_oplog_t *log, md_oplog_entry_t *e)
{
   tick(log, &e->wall_ms);
   e->ts = log->last;
   store_entry(log, e);
   if (log->waiters > 0) {
      pthread_cond_broadcast(&log->cond);
   }
}

md_ts_t
md_oplog_append_txn(md_oplog_t *log, md_oplog_entry_t **entries, size_t n, const bson_t *lsid,
                    int64_t txn_number)
{
   int64_t wall_ms;
   if (n == 0) {
      return log->last;
   }
   tick(log, &wall_ms);
   for (size_t i = 0; i < n; i++) {
      md_oplog_entry_t *e = entries[i];
      e->ts = log->last;
      e->wall_ms = wall_ms;
      e->lsid = bson_copy(lsid);
      e->txn_number = txn_number;
      e->txn_index = (uint32_t)i;
      store_entry(log, e);
   }
   if (log->waiters > 0) {
      pthread_cond_broadcast(&log->cond);
   }
   return log->last;
}

void
md_oplog_wait(md_oplog_t *log, pthread_mutex_t *lock, int64_t deadline_ms)
{
   struct timespec ts = {.tv_sec = deadline_ms / 1000, .tv_nsec = (deadline_ms % 1000) * 1000000};
   log->waiters++;
   pthread_cond_timedwait(&log->cond, lock, &ts);
   log->waiters--;
}

void
md_oplog_wake(md_oplog_t *log)
{
   pthread_cond_broadcast(&log->cond);
}

md_oplog_entry_t *
md_oplog_at(const md_oplog_t *log, uint64_t seq)
{
   if (seq < log->first_seq || seq >= log->next_seq) {
      return NULL;
   }
   return log->ring[seq % log->capacity];
}

uint64_t
md_oplog_seek(const md_oplog_t *log, md_ts_t ts, bool inclusive)
{
   uint64_t lo = log->first_seq, hi = log->next_seq;
   while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      int c = md_ts_cmp(md_oplog_at(log, mid)->ts, ts);
      if (c < 0 || (c == 0 && !inclusive)) {
         lo = mid + 1;
      } else {
         hi = mid;
      }
   }
   return lo;
}

uint64_t
md_oplog_seek_after(const md_oplog_t *log, md_ts_t ts, uint32_t index)
{
   uint64_t seq = md_oplog_seek(log, ts, true);
   md_oplog_entry_t *e;
   while ((e = md_oplog_at(log, seq)) && md_ts_cmp(e->ts, ts) == 0 && e->txn_index <= index) {
      seq++;
   }
   return seq;
}

void
md_token_format(char out[MD_TOKEN_LEN + 1], md_ts_t ts, uint32_t index, unsigned kind)
{
   /* "82%08X%08X%08X%02X" by hand: every event gets a token, and snprintf was 2% of the
    * server's work on a busy change stream. */
   static const char hex[] = "0123456789ABCDEF";
   const uint32_t words[3] = {ts.t, ts.i, index};
   char *o = out;
   *o++ = '8';
   *o++ = '2';
   for (int w = 0; w < 3; w++) {
      for (int shift = 28; shift >= 0; shift -= 4) {
         *o++ = hex[(words[w] >> shift) & 0xf];
      }
   }
   *o++ = hex[(kind >> 4) & 0xf];
   *o++ = hex[kind & 0xf];
   *o = '\0';
}

bool
md_token_parse(const char *s, md_ts_t *ts, uint32_t *index, unsigned *kind)
{
   if (strlen(s) != MD_TOKEN_LEN || strncmp(s, "82", 2) != 0) {
      return false;
   }
   for (int k = 0; k < MD_TOKEN_LEN; k++) {
      if (!((s[k] >= '0' && s[k] <= '9') || (s[k] >= 'A' && s[k] <= 'F'))) {
         return false;
      }
   }
   char buf[9];
   memcpy(buf, s + 2, 8);
   buf[8] = '\0';
   ts->t = (uint32_t)strtoul(buf, NULL, 16);
   memcpy(buf, s + 10, 8);
   ts->i = (uint32_t)strtoul(buf, NULL, 16);
   memcpy(buf, s + 18, 8);
   *index = (uint32_t)strtoul(buf, NULL, 16);
   memcpy(buf, s + 26, 2);
   buf[2] = '\0';
   *kind = (unsigned)strtoul(buf, NULL, 16);
   return true;
}
