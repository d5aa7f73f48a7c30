/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * --max-publish-rate: a token bucket. Tokens accrue at the rate and the bucket holds a
 * twentieth of a second's worth (at least one), so a relay that was held back resumes with a
 * burst of at most 50 ms of events and the rate over any second stays within a few percent
 * of the limit. The publisher asks before taking an event from the table, so a held event
 * stays queued (nothing else waits for it: clears, checkpoints and leases go on). Pure; the
 * state belongs to its publisher (main thread).
 */
#ifndef RELAY_PUBLISH_PACER_H
#define RELAY_PUBLISH_PACER_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
   double rate;     /* tokens per microsecond; 0: no limit */
   double capacity; /* tokens the bucket holds at most */
   double tokens;
   int64_t last_us; /* when tokens was last brought up to date */
} relay_pacer_t;

/* @per_second events per second at most (0: no limit), starting at @now_us with one token. */
void relay_pacer_init(relay_pacer_t *p, int per_second, int64_t now_us);

/* Whether one event may go at @now_us (always without a limit). */
bool relay_pacer_ready(relay_pacer_t *p, int64_t now_us);

/* One event went: takes its token. */
void relay_pacer_spend(relay_pacer_t *p);

/* Microseconds from @now_us until the next token (0: one is there, or no limit). */
int64_t relay_pacer_wait_us(const relay_pacer_t *p, int64_t now_us);

#endif /* RELAY_PUBLISH_PACER_H */
