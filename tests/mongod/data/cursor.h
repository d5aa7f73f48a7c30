/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Server-side cursors: the rest of a query's results (materialised when the query ran) or a
 * change stream. Cursors outlive connections, as in mongod, until exhausted, killed or idle
 * for 10 minutes. Callers hold the server lock. A cursor in use by a waiting getMore is
 * marked `in_use`; killing it then only marks it, and the getMore frees it.
 */
#ifndef MD_CURSOR_H
#define MD_CURSOR_H

#include <bson/bson.h>

#include "data/hmap.h"

typedef struct _md_changestream_t md_changestream_t;

typedef struct {
   int64_t id;
   char *ns;
   bson_t **docs; /* owned */
   size_t n_docs, pos;
   md_changestream_t *cs; /* owned; NULL for a query cursor */
   const void *owner;     /* the transaction that opened it (dies with it), or NULL */
   int64_t last_used_ms;
   bool in_use, killed;
   int member;       /* a change stream's: the member whose client opened it */
   bool rolled_back; /* a change stream killed by its member's rollback */
} md_cursor_t;

typedef struct {
   md_hmap_t *map;
   int64_t next_id;
} md_cursors_t;

void md_cursors_init(md_cursors_t *cursors);
void md_cursors_destroy(md_cursors_t *cursors);

/* Registers a cursor over docs[pos..n) (taking the array and the documents) or a change
 * stream (`cs`, taken). Also reaps cursors idle for more than 10 minutes. */
md_cursor_t *md_cursor_new(md_cursors_t *cursors, const char *ns, bson_t **docs, size_t n,
                           size_t pos, md_changestream_t *cs);
md_cursor_t *md_cursor_get(md_cursors_t *cursors, int64_t id);
/* Unregisters and frees the cursor. */
void md_cursor_free(md_cursors_t *cursors, md_cursor_t *cursor);
/* Kills the cursors `owner` opened (a transaction that ended); waiting getMores free theirs. */
void md_cursors_kill_owned(md_cursors_t *cursors, const void *owner);

/* Appends `{cursor: {<batch_name>: [...], id, ns}}` to `reply` with up to `batch_size`
 * (< 0: no limit but 16 MiB) of docs[*pos..n), advancing *pos. Returns true if all were sent. */
/* Kills the change streams opened on member `member`, which is rolling back: each is kept,
 * marked `rolled_back`, for its next getMore to fail (a waiting one is marked killed). */
void md_cursors_roll_back(md_cursors_t *cursors, int member);

bool md_cursor_reply(bson_t *reply, const char *batch_name, const char *ns, bson_t **docs, size_t n,
                     size_t *pos, int64_t batch_size, int64_t id);

void md_docs_free(bson_t **docs, size_t n);

int64_t md_now_ms(void);

#endif
