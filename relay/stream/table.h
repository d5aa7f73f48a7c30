/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's bookkeeping, free of I/O so it can be unit-tested: the entities with events in
 * flight, each entity's events in seq order, and the stream positions those events came
 * from (which decide how far the checkpoint may advance).
 *
 * Ordering rule: an entity has at most one event in flight. Its next event is offered for
 * publishing only after the broker acknowledged the previous one, so a later event can never
 * overtake an earlier one, not even when a publish fails and is retried after a reconnect
 * (the retry is the same event again). Throughput comes from many entities in flight at once.
 *
 * Checkpoint rule: every change event read from the stream gets a position (its resume
 * token) in a FIFO, and each buffered event holds a reference to the position it came from.
 * The checkpoint may only move to the token of a position once it and every position before
 * it hold no more events, i.e. everything seen before that token is published and cleared.
 *
 * Not thread-safe: only the relay's main thread touches a table.
 */
#ifndef RELAY_TABLE_H
#define RELAY_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bson/bson.h>

#include "base/partition.h"
#include "stream/event.h"

typedef enum {
   RELAY_ITEM_QUEUED = 0, /* waiting to be published */
   RELAY_ITEM_INFLIGHT,   /* published, no acknowledgement yet */
   RELAY_ITEM_ACKED,      /* acknowledged, waiting to be cleared from the document */
   RELAY_ITEM_POISON,     /* waiting to be moved to the dead letters */
   RELAY_ITEM_CLEARING,   /* acknowledged, its clear is running */
   RELAY_ITEM_N_STATES
} relay_item_state_t;

typedef struct relay_pos_t {
   bson_t *token;      /* owned; NULL for "before the stream" (a sweep) */
   uint64_t seq;       /* increasing along the FIFO: orders positions (group.c's markers) */
   uint64_t remaining; /* buffered events that came from this position */
   int64_t wall_ms;    /* when the change happened (for the lag gauge), 0 if unknown */
   struct relay_pos_t *next;
} relay_pos_t;

typedef struct relay_item_t {
   relay_event_t ev;
   relay_item_state_t state;
   relay_pos_t *pos;
   const char *reason; /* why it is poison (static string) */
   size_t bytes;       /* the event's BSON size, counted in relay_table_t.buffered_bytes */
   /* The archive's validator refused its entry this many times in a row (store/writer.c),
    * the first time when the writer had seen archive_ok_mark statements archived. */
   uint8_t archive_refusals;
   uint64_t archive_ok_mark;
   struct relay_item_t *next;
} relay_item_t;

typedef struct relay_entity_t {
   uint8_t *key; /* collection index + the BSON of the _id: the table's key */
   size_t key_len;
   uint32_t hash;
   int coll;        /* its namespace's index (stream/namespaces.h) */
   int label;       /* its namespace's metrics series (namespaces.h: bounded) */
   bson_value_t id; /* the document's _id (owned) */
   char *rendered;  /* relay_render_id() of id */
   size_t rendered_len;
   char *encoded; /* rendered, percent-encoded, or NULL: written by the sender (mqtt/publish.c)
                   * on the entity's first message, freed with the entity (table.c) */
   size_t encoded_len;
   int64_t last_seq; /* highest seq queued or known to be handled; later ones only */
   relay_item_t *head, *tail;
   relay_item_t *inflight;
   uint32_t n_state[RELAY_ITEM_N_STATES]; /* items per state (saves walking the list) */
   int64_t ready_at_ms;                   /* after a failure: not before this time */
   bool on_ready, on_dirty;
   bool parked; /* its partition may not publish now: on a list of group.c's */
   /* Why it stays in the table while it holds nothing (relay_table_evict() refuses): */
   bool sweep_hold;  /* the stream took it while a sweep of its partition runs: until the
                      * sweep ends (relay_docs_sync()) */
   int64_t read_seq; /* its document was read ahead of the stream with this eventSeq: changes
                      * up to it are replays, until the stream passes it (changes.c) */
   int part;         /* its partition (group.c) */
   struct relay_entity_t *hnext, *rnext, *dnext, *pnext;
} relay_entity_t;

typedef struct {
   relay_entity_t **buckets;
   size_t nbuckets;
   size_t count;          /* entities */
   size_t buffered;       /* items in all entities */
   size_t buffered_bytes; /* their BSON size (relay_item_t.bytes) */
   size_t inflight;       /* items in flight */
   relay_entity_t *ready_head, *ready_tail;
   relay_entity_t *dirty_head, *dirty_tail;
   relay_pos_t *pos_head, *pos_tail;
   bson_t *checkpoint;      /* newest token that may be saved (owned), NULL if none yet */
   uint64_t checkpoint_seq; /* the seq of the position it came from */
   bool checkpoint_changed;
   uint64_t next_seq;
   size_t read_holds; /* entities with a read_seq */
   /* Entities that hold nothing stay known (relay_table_forget_if_idle() keeps them): set
    * while the stream replays history ("verifying", changes.c), where an entity seen for the
    * first time is read from its document and a known one must not look new again. */
   bool keep_idle;
} relay_table_t;

void relay_table_init(relay_table_t *t);

/* Frees everything, including the entities' items. */
void relay_table_cleanup(relay_table_t *t);

/* Finds an entity; NULL if absent. */
relay_entity_t *relay_table_find(relay_table_t *t, int coll, const bson_value_t *id);

/* Finds or adds an entity (last_seq 0). */
relay_entity_t *relay_table_add(relay_table_t *t, int coll, const bson_value_t *id);

/* Removes @e if it holds nothing (no items, nothing in flight, on no list) and nothing keeps
 * it (sweep_hold, read_seq). Returns true if it was removed (then @e is freed). */
bool relay_table_evict(relay_table_t *t, relay_entity_t *e);

/* Removes every entity that holds nothing. */
void relay_table_evict_idle(relay_table_t *t);

/* The one rule for forgetting entities: while @keep is set (the stream replays history),
 * entities that hold nothing stay in the table; the caller evicts them when it ends
 * (relay_table_evict_idle()). */
void relay_table_keep_idle(relay_table_t *t, bool keep);

/* relay_table_evict(), unless the table keeps idle entities now. True if @e was removed. */
bool relay_table_forget_if_idle(relay_table_t *t, relay_entity_t *e);

/* The partition @p went to another member: every queued event of its entities is dropped
 * (relay_table_drop_queued(); they stay pending in their documents) and idle entities are
 * forgotten. Returns how many events were dropped. */
size_t relay_table_drop_partition(relay_table_t *t, int p);

/* Sets @busy[p] (an array of the group's partitions) for every partition with an event in
 * flight, acknowledged but not cleared, or waiting for the dead letters. */
void relay_table_find_busy(const relay_table_t *t, bool *busy);

/* Keeps @e in the table until the stream passes eventSeq @seq (relay_entity_t.read_seq). */
void relay_table_hold_read(relay_table_t *t, relay_entity_t *e, int64_t seq);

/* Ends relay_table_hold_read() for @e (which stays in the table: evict it if wanted). */
void relay_table_release_read(relay_table_t *t, relay_entity_t *e);

/* Sets sweep_hold on every entity of the partitions in @parts (a sweep of them begins). */
void relay_table_hold_parts(relay_table_t *t, const relay_partset_t *parts);

/* Clears every entity's sweep_hold, or (@read) its read_seq, and forgets those that hold
 * nothing any more (relay_table_forget_if_idle()). */
void relay_table_release_holds(relay_table_t *t, bool read);

/* Appends a stream position. @token is copied (NULL allowed). Positions with nothing left
 * are merged, so the FIFO never grows beyond the number of buffered events + 1. */
relay_pos_t *relay_table_pos_push(relay_table_t *t, const bson_t *token, int64_t wall_ms);

/* Appends a new position that is never merged with another (a group's acquisition marker:
 * the checkpoint passes it only once everything attached to it is done). It starts with one
 * reference held for the caller, dropped with relay_table_pos_release(). */
relay_pos_t *relay_table_pos_marker(relay_table_t *t);

/* Drops the caller's reference on @pos and settles. */
void relay_table_pos_release(relay_table_t *t, relay_pos_t *pos);

/* Pops positions with nothing left from the front and moves the checkpoint candidate. Call
 * after the events of a change event were offered. */
void relay_table_pos_settle(relay_table_t *t);

/* Drops the checkpoint candidate and all positions (used when a sweep restarts the
 * stream: the old positions mean nothing any more). Items keep their (orphaned) counts. */
void relay_table_pos_reset(relay_table_t *t);

/* Attaches every item that has no position (after relay_table_pos_reset()) to @pos. */
void relay_table_pos_adopt(relay_table_t *t, relay_pos_t *pos);

/* The dead-letter reason of an event whose seq is not above its entity's last seq. */
#define RELAY_REASON_SEQ_NOT_ABOVE                                                                 \
   "seq not above the entity's last seq (a repeated or decreasing seq, written outside "           \
   "liboutbox)"

/* Whether relay_table_offer() would skip an event with @seq whose element is @raw as seen
 * already (a replay, or this very element buffered), decided without parsing the event. */
bool relay_table_seen(const relay_entity_t *e, int64_t seq, const bson_value_t *raw,
                      int64_t replayed_upto);

/* Offers a parsed event to @e. Seq rule: an event whose seq is above e->last_seq is taken
 * (valid: queued; invalid: poison) and raises last_seq. One whose seq is not above it is
 *  - skipped if its seq is at most @replayed_upto (a change the stream replays after a
 *    restart or reopen, pass e->last_seq from before the change; 0 when nothing can be a
 *    replay: a document read, or a change read live) or if @e buffers this very element
 *    (read again with its document);
 *  - otherwise taken as poison with RELAY_REASON_SEQ_NOT_ABOVE: repeated or decreasing seqs
 *    in one document ([2,1,2], [1,1]) or an append below what was published; without this
 *    they stayed pending for good, and a later sweep published seq 1 after seq 2.
 * Events without a readable seq (seq 0) are always taken, as poison. Taken events are moved
 * into the table (@ev zeroed); returns true then, otherwise the caller still owns @ev. */
bool relay_table_offer(relay_table_t *t, relay_entity_t *e, relay_event_t *ev, relay_pos_t *pos,
                       int64_t replayed_upto);

/* Offers an event read from the entity's document as it is now (a read or a sweep). An event
 * an operator requeued (ev->requeued > 0) whose seq is not above e->last_seq is taken once:
 * unless @e already holds an event with its id (taken before, not yet cleared); last_seq does
 * not move, and its seq is no reason to refuse it. Anything else as relay_table_offer(). */
bool relay_table_offer_requeued(relay_table_t *t, relay_entity_t *e, relay_event_t *ev,
                                relay_pos_t *pos);

/* Pops the next entity whose first queued event may be published now (@now_ms: for entities
 * backing off after a failure), marks that event in flight and returns the entity; the
 * event is e->inflight. NULL if none. */
relay_entity_t *relay_table_next_ready(relay_table_t *t, int64_t now_ms);

/* The in-flight event of @e was acknowledged: it waits for clearing, the next one may go. */
void relay_table_acked(relay_table_t *t, relay_entity_t *e);

/* The in-flight event of @e failed: it is queued again (first in line) and @e is not offered
 * before @retry_at_ms. */
void relay_table_failed(relay_table_t *t, relay_entity_t *e, int64_t retry_at_ms);

/* The in-flight event of @e can never be published: it waits for the dead letters. */
void relay_table_poisoned(relay_table_t *t, relay_entity_t *e, const char *reason);

/* The in-flight event of @e may not be published now (its partition's gate is closed): it is
 * queued again, first in line, without counting as a failure, and @e is taken off the ready
 * list and marked parked. relay_table_unpark() offers it again. */
void relay_table_park(relay_table_t *t, relay_entity_t *e);
void relay_table_unpark(relay_table_t *t, relay_entity_t *e);

/* Removes @e's queued events (its partition went to another relay: they stay pending in
 * their document for the new owner) and sets last_seq to the highest seq @e still holds, 0
 * when it holds nothing. Returns how many were removed. */
size_t relay_table_drop_queued(relay_table_t *t, relay_entity_t *e);

/* The in-flight event of @e ended without an acknowledgement and its partition is gone:
 * forget it (it stays pending in its document) instead of queueing it again. */
void relay_table_drop_inflight(relay_table_t *t, relay_entity_t *e);

/* How many acknowledged events an entity may gather before its clear while its next event
 * is in flight: a quarter of @max_buffered spread over @window entities in flight, 1..16. */
uint32_t relay_table_gather_limit(int max_buffered, int window);

/* Whether @e's clear may wait for the acknowledgement of its event in flight (which makes it
 * dirty again): it has one in flight, no poison, and fewer than @limit acknowledged events.
 * Every clear rewrites the entity's document, so a backlog is cleared a few events at a time;
 * once nothing of @e is in flight it is cleared at once. */
bool relay_table_may_gather(const relay_entity_t *e, uint32_t limit);

/* Pops an entity with acknowledged or poison items to write; NULL if none. */
relay_entity_t *relay_table_next_dirty(relay_table_t *t);

/* Puts @e back on the dirty list (its write failed, or did not fit in a batch). */
void relay_table_mark_dirty(relay_table_t *t, relay_entity_t *e);

/* Removes @e's items in @state (ACKED or POISON) after they were written, releasing their
 * positions. Returns how many were removed. */
size_t relay_table_remove_state(relay_table_t *t, relay_entity_t *e, relay_item_state_t state);

/* Removes one item of @e (after it was dead-lettered), releasing its position. */
void relay_table_remove_item(relay_table_t *t, relay_entity_t *e, relay_item_t *item);

/* Moves @e's items in state @from to @to; returns how many. */
size_t relay_table_restate(relay_entity_t *e, relay_item_state_t from, relay_item_state_t to);

/* Moves one item of @e to @state (keeps the per-state counts right). */
void relay_table_set_state(relay_entity_t *e, relay_item_t *it, relay_item_state_t state);

/* Counts @e's items in @state. */
size_t relay_table_count_state(const relay_entity_t *e, relay_item_state_t state);

/* Takes the checkpoint candidate if it changed since the last call (caller frees), else
 * NULL. */
bson_t *relay_table_take_checkpoint(relay_table_t *t);

#endif /* RELAY_TABLE_H */
