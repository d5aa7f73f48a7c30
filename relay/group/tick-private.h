/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers of the lease tick shared by its files, which call downwards only: tick.c (the
 * tick, and the writes between ticks) calls tick-checks.c (what a tick checks in the group
 * it read), and both call tick-state.c (set-up, events posted, failures noted, metrics).
 * The caller's thread only (tick.h).
 */
#ifndef RELAY_TICK_PRIVATE_H
#define RELAY_TICK_PRIVATE_H

#include "group/tick.h"

/* tick-state.c: queues an event for the main thread (takes @token), or holds it back while
 * holding. */
void _relay_tick_post(relay_tick_t *t, relay_lease_event_kind_t kind, int part, int64_t epoch,
                      bson_t *token, const char *message);

/* tick-state.c: a FATAL event: the relay stops with exit status @code; @message says why. */
void _relay_tick_post_fatal(relay_tick_t *t, int code, const char *message);

/* tick-state.c: holds events back until _relay_tick_flush(): the main thread then sees a
 * whole tick's acquisitions at once (one stream start, one sweep). */
void _relay_tick_hold(relay_tick_t *t);
void _relay_tick_flush(relay_tick_t *t);

/* tick-state.c: a failed lease write or read: said once; refusals flagged; wrong
 * credentials before the group was ever set up are fatal. */
void _relay_tick_note_down(relay_tick_t *t, const char *what, const bson_error_t *error);

/* tick-checks.c: reads the group into t->snap, re-creating deleted lease documents (false:
 * nothing read); members whose settings differ (false: this member must stop, FATAL posted);
 * malformed leases; the unowned-partition gauges. */
bool _relay_tick_read_group(relay_tick_t *t);
bool _relay_tick_check_settings(relay_tick_t *t);
void _relay_tick_repair_malformed(relay_tick_t *t);
void _relay_tick_watch_unowned(relay_tick_t *t);

#endif /* RELAY_TICK_PRIVATE_H */
