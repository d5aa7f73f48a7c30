/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease tick (group/tick.h) with a fake store in memory and a fake clock, no thread and
 * no servers: one test per rule of tick.c's opening comment and of the checks it makes.
 * The gate closes (deadline 0) before a partition is given up in any way (lost, handed
 * over, released); deadlines count from the time the successful write was sent; writes are
 * fenced by {owner, epoch}; strays are released, malformed leases repaired, deleted ones
 * re-created; a member whose settings differ does not join; renewals that fail "not primary"
 * are retried once a primary is known (issue 34 item 10); wrong credentials at start are
 * fatal, refused writes are flagged until a tick succeeds.
 *
 * The fake applies the fence as MongoDB's filter does: a write for partition p changes the
 * lease only when its owner is this member at the epoch given.
 */
#include <criterion/criterion.h>
#include <sysexits.h>

#include "group/tick.h"
#include "test-util.h"

#define N 4
#define ME "me"
#define OTHER "other"
#define MS 1000000LL

typedef struct {
   const char *owner; /* static strings: ME, OTHER or NULL */
   int64_t epoch;
   bool live, malformed, deleted;
   const char *handoff_to;
} fake_lease_t;

typedef struct {
   fake_lease_t lease[N];
   const char *members[4];
   const char *member_settings[4];
   size_t n_members;
   int64_t now;           /* the fake clock, ns */
   int64_t write_takes;   /* each write advances the clock this much */
   int renew_not_primary; /* this many renewals fail with 10107 NotWritablePrimary */
   int renew_down;        /* this many renewals fail with a network error */
   int renew_refused;     /* this many renewals fail with 13 Unauthorized */
   bool init_auth_fails;  /* set-up fails: authentication refused */
   int n_renew, n_wait_primary, n_init, n_leave, n_repair, n_checkpoint, n_release;
   relay_partset_t repaired, checkpointed, released;
   int64_t released_epoch[N];
   const char *released_for[N];
   int64_t deadline_at_release[N];  /* the gate when the release that took effect was written */
   relay_lease_event_t *events[32]; /* posted, in order */
   int64_t deadline_at_post[32];    /* the gate of their partition when posted */
   int n_events, n_posts;
} fake_t;

static fake_t f;
static relay_tick_t t;
static relay_config_t cfg;
static relay_metrics_t *metrics;

static int64_t
fake_clock(void)
{
   return f.now;
}

static void
fake_post(void *ctx, relay_lease_event_t *first, relay_lease_event_t *last)
{
   (void)ctx;
   (void)last;
   f.n_posts++;
   for (relay_lease_event_t *ev = first; ev;) {
      relay_lease_event_t *next = ev->next;
      ev->next = NULL;
      cr_assert_lt(f.n_events, 32);
      f.deadline_at_post[f.n_events] = ev->part >= 0 ? atomic_load(&t.deadline[ev->part]) : 0;
      f.events[f.n_events++] = ev;
      ev = next;
   }
}

static bool
same(const char *a, const char *b)
{
   return a && b && strcmp(a, b) == 0;
}

/* MongoDB's filter {owner: me, epoch: E}. */
static bool
fenced(int p, const int64_t *epochs)
{
   return same(f.lease[p].owner, ME) && f.lease[p].epoch == epochs[p];
}

static void
write_sent(void)
{
   f.now += f.write_takes;
}

static relay_group_init_t
fake_init(void *store, bson_error_t *error)
{
   (void)store;
   f.n_init++;
   if (f.init_auth_fails) {
      bson_set_error(error, MONGOC_ERROR_CLIENT, MONGOC_ERROR_CLIENT_AUTHENTICATE,
                     "Authentication failed.");
      return RELAY_GROUP_RETRY;
   }
   for (int p = 0; p < N; p++) {
      f.lease[p].deleted = false;
   }
   return RELAY_GROUP_OK;
}

static relay_sharding_t
fake_check_sharding(void *store, bson_error_t *error)
{
   (void)store;
   (void)error;
   return RELAY_SHARDING_OK;
}

static relay_group_init_t
fake_find_elsewhere(void *store, bson_error_t *error)
{
   (void)store;
   (void)error;
   return RELAY_GROUP_OK;
}

static void
fake_measure_skew(void *store, relay_skew_t *skew)
{
   (void)store;
   (void)skew;
}

static bool
fake_wait_primary(void *store, bson_error_t *error)
{
   (void)store;
   (void)error;
   f.n_wait_primary++;
   return true;
}

static bool
fake_renew(void *store, const relay_partset_t *parts, const int64_t *epochs, bson_error_t *error)
{
   (void)store;
   f.n_renew++;
   write_sent();
   if (f.renew_not_primary > 0) {
      f.renew_not_primary--;
      bson_set_error(error, MONGOC_ERROR_SERVER, 10107, "not primary");
      return false;
   }
   if (f.renew_refused > 0) {
      f.renew_refused--;
      bson_set_error(error, MONGOC_ERROR_SERVER, 13, "not authorized");
      return false;
   }
   if (f.renew_down > 0) {
      f.renew_down--;
      bson_set_error(error, MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET, "connection lost");
      return false;
   }
   for (int p = 0; p < N; p++) {
      if (relay_partset_has(parts, p) && fenced(p, epochs)) {
         f.lease[p].live = true;
      }
   }
   return true;
}

static bool
fake_checkpoint(void *store, const relay_partset_t *parts, const int64_t *epochs,
                const bson_t *token, bson_error_t *error)
{
   (void)store;
   (void)token;
   (void)error;
   f.n_checkpoint++;
   for (int p = 0; p < N; p++) {
      if (relay_partset_has(parts, p) && fenced(p, epochs)) {
         relay_partset_add(&f.checkpointed, p);
      }
   }
   return true;
}

static bool
fake_acquire(void *store, const relay_partset_t *parts, bson_error_t *error)
{
   (void)store;
   (void)error;
   write_sent();
   for (int p = 0; p < N; p++) {
      fake_lease_t *l = &f.lease[p];
      if (relay_partset_has(parts, p) && (!l->owner || !l->live) && !l->malformed) {
         l->owner = ME;
         l->epoch++;
         l->live = true;
      }
   }
   return true;
}

static bool
fake_read_mine(void *store, const relay_partset_t *parts, relay_partset_t *owned, int64_t *epochs,
               bson_t **tokens, bson_error_t *error)
{
   (void)store;
   (void)tokens;
   (void)error;
   relay_partset_clear(owned);
   for (int p = 0; p < N; p++) {
      if (relay_partset_has(parts, p) && same(f.lease[p].owner, ME)) {
         relay_partset_add(owned, p);
         epochs[p] = f.lease[p].epoch;
      }
   }
   return true;
}

static bool
fake_release(void *store, const relay_partset_t *parts, const int64_t *epochs,
             const char *reserve_for, bson_error_t *error)
{
   (void)store;
   (void)error;
   f.n_release++;
   for (int p = 0; p < N; p++) {
      if (relay_partset_has(parts, p)) {
         if (fenced(p, epochs)) {
            f.deadline_at_release[p] = atomic_load(&t.deadline[p]);
            relay_partset_add(&f.released, p);
            f.released_epoch[p] = epochs[p];
            f.released_for[p] = reserve_for ? OTHER : NULL;
            f.lease[p].owner = NULL;
            f.lease[p].handoff_to = NULL;
         }
      }
   }
   return true;
}

static bool
fake_request(void *store, int p, const char *owner, int64_t epoch, bson_error_t *error)
{
   (void)store;
   (void)p;
   (void)owner;
   (void)epoch;
   (void)error;
   return true;
}

static bool
fake_member(void *store, const char *host, int pid, int owned, bson_error_t *error)
{
   (void)store;
   (void)host;
   (void)pid;
   (void)owned;
   (void)error;
   return true;
}

static bool
fake_leave(void *store, bson_error_t *error)
{
   (void)store;
   (void)error;
   f.n_leave++;
   return true;
}

static bool
fake_forget_dead(void *store, bson_error_t *error)
{
   (void)store;
   (void)error;
   return true;
}

/* Strings go into the snapshot's own list, which relay_group_snapshot_cleanup() frees. */
static const char *
keep(relay_group_snapshot_t *snap, const char *s)
{
   if (!s) {
      return NULL;
   }
   snap->strings[snap->n_strings] = bson_strdup(s);
   return snap->strings[snap->n_strings++];
}

static bool
fake_snapshot(void *store, relay_group_snapshot_t *snap, bson_error_t *error)
{
   (void)store;
   (void)error;
   memset(snap->leases, 0, sizeof snap->leases);
   snap->n_leases = 0;
   for (int p = 0; p < N; p++) {
      const fake_lease_t *l = &f.lease[p];
      if (l->deleted) {
         continue;
      }
      snap->n_leases++;
      snap->leases[p] = (relay_lease_view_t){.owner = keep(snap, l->owner),
                                             .epoch = l->epoch,
                                             .live = l->owner && l->live,
                                             .handoff_to = keep(snap, l->handoff_to),
                                             .malformed = l->malformed};
   }
   for (size_t i = 0; i < f.n_members; i++) {
      snap->member_ids[i] = bson_strdup(f.members[i]);
      snap->member_settings[i] = f.member_settings[i] ? bson_strdup(f.member_settings[i]) : NULL;
   }
   snap->n_members = f.n_members;
   return true;
}

static bool
fake_repair(void *store, const relay_partset_t *parts, bson_error_t *error)
{
   (void)store;
   (void)error;
   f.n_repair++;
   for (int p = 0; p < N; p++) {
      if (relay_partset_has(parts, p) && (!f.lease[p].owner || !f.lease[p].live)) {
         relay_partset_add(&f.repaired, p);
         f.lease[p] = (fake_lease_t){0};
      }
   }
   return true;
}

static const relay_lease_store_ops_t fake_ops = {
   .init = fake_init,
   .check_sharding = fake_check_sharding,
   .find_elsewhere = fake_find_elsewhere,
   .measure_skew = fake_measure_skew,
   .wait_primary = fake_wait_primary,
   .renew = fake_renew,
   .checkpoint = fake_checkpoint,
   .acquire = fake_acquire,
   .read_mine = fake_read_mine,
   .release = fake_release,
   .request = fake_request,
   .member = fake_member,
   .leave = fake_leave,
   .forget_dead = fake_forget_dead,
   .snapshot = fake_snapshot,
   .repair = fake_repair,
};

static char *settings;

static void
setup(void)
{
   const char *const args[] = {TEST_REQUIRED, "--partitions",      "4",    "--lease-ttl-ms",
                               "10000",       "--lease-margin-ms", "2000", NULL};
   bson_error_t error;

   test_clear_env();
   memset(&f, 0, sizeof f);
   f.now = 1000 * MS;
   f.members[0] = ME;
   f.n_members = 1;
   relay_config_init_defaults(&cfg);
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   metrics = relay_metrics_new();
   settings = relay_tick_settings(&cfg);
   f.member_settings[0] = settings;
   relay_tick_init(&t, &cfg, metrics, ME, "host", settings, 1, &fake_ops, NULL, fake_clock,
                   fake_post, NULL);
}

static void
teardown(void)
{
   for (int i = 0; i < f.n_events; i++) {
      relay_lease_event_free(f.events[i]);
   }
   relay_tick_cleanup(&t);
   bson_free(settings);
   relay_metrics_destroy(metrics);
   relay_config_destroy(&cfg);
}

TestSuite(tick, .init = setup, .fini = teardown);

static int64_t
gate(int p)
{
   return atomic_load(&t.deadline[p]);
}

static int
count_events(relay_lease_event_kind_t kind, int part)
{
   int n = 0;
   for (int i = 0; i < f.n_events; i++) {
      n += f.events[i]->kind == kind && (part < 0 || f.events[i]->part == part);
   }
   return n;
}

/* The one event of @kind for @part; fails when there is none. */
static int
event_index(relay_lease_event_kind_t kind, int part)
{
   for (int i = 0; i < f.n_events; i++) {
      if (f.events[i]->kind == kind && f.events[i]->part == part) {
         return i;
      }
   }
   cr_assert_fail("no event %d for partition %d", (int)kind, part);
   return -1;
}

#define TTL_LESS_MARGIN ((10000 - 2000) * MS)

/* A deadline counts from the time the acquire that succeeded was sent, not from when its
 * answer came: the server's lease may have been written at the very start. */
Test(tick, acquire_deadline_counts_from_the_send_time)
{
   int64_t sent = f.now;
   f.write_takes = 3000 * MS;
   relay_tick_run(&t, true);
   for (int p = 0; p < N; p++) {
      cr_assert(relay_partset_has(&t.owned, p));
      cr_assert_eq(gate(p), sent + TTL_LESS_MARGIN, "partition %d", p);
      cr_assert(relay_tick_may_publish(&t, p, f.now));
   }
   /* All acquisitions of a tick reach the main thread at once. */
   cr_assert_eq(count_events(RELAY_LEASE_ACQUIRED, -1), N);
   cr_assert_eq(f.n_posts, 1);
}

Test(tick, renew_deadline_counts_from_the_send_time_and_only_on_success)
{
   int64_t sent;
   relay_tick_run(&t, true);
   f.now += 5000 * MS;
   f.write_takes = 2000 * MS;
   sent = f.now;
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_renew, 1);
   for (int p = 0; p < N; p++) {
      cr_assert_eq(gate(p), sent + TTL_LESS_MARGIN, "partition %d", p);
   }
   /* A renewal that fails leaves the deadline where it was: the gate closes on time. */
   f.now += 5000 * MS;
   f.renew_down = 1;
   relay_tick_run(&t, true);
   for (int p = 0; p < N; p++) {
      cr_assert_eq(gate(p), sent + TTL_LESS_MARGIN, "partition %d", p);
   }
   cr_assert_not(relay_tick_may_publish(&t, 0, sent + TTL_LESS_MARGIN));
}

/* Taken by another member after it expired (a higher epoch): the gate is closed before the
 * main thread is told, and the lease is never written again. */
Test(tick, a_lost_partition_closes_its_gate_before_it_is_said)
{
   int i;
   relay_tick_run(&t, true);
   f.lease[2].owner = OTHER;
   f.lease[2].epoch++;
   f.members[1] = OTHER;
   f.member_settings[1] = settings;
   f.n_members = 2;
   relay_tick_run(&t, true);
   i = event_index(RELAY_LEASE_LOST, 2);
   cr_assert_eq(f.deadline_at_post[i], 0, "the gate was open when LOST was posted");
   cr_assert_eq(gate(2), 0);
   cr_assert_not(relay_partset_has(&t.owned, 2));
   cr_assert_eq(relay_metrics_get(metrics, RELAY_M_LEASE_LOSSES), 1);
   cr_assert_str_eq(f.lease[2].owner, OTHER, "the fenced renewal must not take it back");
}

/* A handoff asked: HANDOFF once per epoch; once drained, the gate closes before the release
 * (reserved for the member that asked) is written. */
Test(tick, a_handoff_closes_the_gate_before_the_release)
{
   relay_tick_run(&t, true);
   f.lease[1].handoff_to = OTHER;
   relay_tick_run(&t, true);
   relay_tick_run(&t, true);
   cr_assert_eq(count_events(RELAY_LEASE_HANDOFF, 1), 1);
   cr_assert_neq(gate(1), 0, "draining: still published until drained");
   relay_tick_hand_over(&t, 1, t.epochs[1]);
   cr_assert(relay_partset_has(&f.released, 1));
   cr_assert_eq(f.deadline_at_release[1], 0, "the gate was open when the release was written");
   cr_assert_str_eq(f.released_for[1], OTHER);
   cr_assert_eq(relay_metrics_get(metrics, RELAY_M_LEASE_HANDOFFS), 1);
}

/* A drained report for an epoch no longer held (lost meanwhile) writes nothing. */
Test(tick, a_stale_hand_over_is_fenced_by_the_epoch)
{
   relay_tick_run(&t, true);
   relay_tick_hand_over(&t, 1, t.epochs[1] - 1);
   cr_assert_eq(f.n_release, 0);
   cr_assert_neq(gate(1), 0);
}

/* A checkpoint is stored only in the leases still held at the epochs it was valid for. */
Test(tick, checkpoints_are_fenced_by_the_epoch)
{
   int64_t epochs[N];
   relay_partset_t valid;
   bson_t *token = BCON_NEW("_data", "t1");

   relay_tick_run(&t, true);
   relay_partset_clear(&valid);
   for (int p = 0; p < N; p++) {
      relay_partset_add(&valid, p);
      epochs[p] = t.epochs[p];
   }
   epochs[3] = t.epochs[3] - 1; /* an older life of partition 3 */
   relay_tick_write_checkpoint(&t, token, &valid, epochs);
   cr_assert_eq(f.n_checkpoint, 1);
   cr_assert(relay_partset_has(&f.checkpointed, 0));
   cr_assert_not(relay_partset_has(&f.checkpointed, 3));
   bson_destroy(token);
}

/* A lease named after this member that it does not hold (a take the server applied but did
 * not confirm) is released, fenced by the epoch read, and never published. */
Test(tick, stray_leases_are_released)
{
   for (int p = 0; p < N; p++) {
      f.lease[p] = (fake_lease_t){.owner = OTHER, .epoch = 3, .live = true};
   }
   f.lease[0] = (fake_lease_t){.owner = ME, .epoch = 7, .live = true};
   f.members[1] = OTHER;
   f.member_settings[1] = settings;
   f.n_members = 2;
   relay_tick_run(&t, true);
   cr_assert(relay_partset_has(&f.released, 0));
   cr_assert_eq(f.released_epoch[0], 7);
   cr_assert_eq(gate(0), 0);
   cr_assert_eq(count_events(RELAY_LEASE_ACQUIRED, 0), 0);
}

/* A malformed lease is said once, repaired when free, not taken before. */
Test(tick, malformed_leases_are_repaired)
{
   f.lease[1] = (fake_lease_t){.owner = NULL, .epoch = 0, .malformed = true};
   relay_tick_run(&t, true);
   cr_assert(relay_partset_has(&f.repaired, 1));
   cr_assert_eq(relay_metrics_get(metrics, RELAY_M_LEASE_REPAIRS), 1);
   cr_assert_not(relay_partset_has(&t.owned, 1), "taken in the tick that repaired it");
   relay_tick_run(&t, true);
   cr_assert(relay_partset_has(&t.owned, 1), "repaired, then taken as usual");
   cr_assert_eq(relay_metrics_get(metrics, RELAY_M_LEASE_REPAIRS), 1);
}

/* Lease documents deleted while the group runs are re-created, then taken again. */
Test(tick, deleted_leases_are_recreated)
{
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_init, 1);
   f.lease[2] = (fake_lease_t){.deleted = true};
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_init, 2);
   cr_assert_eq(relay_metrics_get(metrics, RELAY_M_LEASE_RECREATIONS), 1);
}

/* Not eligible (the broker down) while others are live: every lease is given up, each gate
 * closed before the LOST event and before the release is written. */
Test(tick, not_eligible_gives_every_lease_up_gate_first)
{
   relay_tick_run(&t, true);
   f.members[1] = OTHER;
   f.member_settings[1] = settings;
   f.n_members = 2;
   relay_tick_run(&t, false);
   for (int p = 0; p < N; p++) {
      int i = event_index(RELAY_LEASE_LOST, p);
      cr_assert_eq(f.deadline_at_post[i], 0, "partition %d", p);
      cr_assert(relay_partset_has(&f.released, p));
      cr_assert_eq(f.deadline_at_release[p], 0, "partition %d", p);
   }
   cr_assert_eq(relay_partset_count(&t.owned, N), 0);
}

/* A member that runs with other settings on the first read: this one does not join. */
Test(tick, a_member_with_other_settings_stops_this_one_from_joining)
{
   f.members[1] = OTHER;
   f.member_settings[1] = "collections=x";
   f.n_members = 2;
   relay_tick_run(&t, true);
   cr_assert_eq(count_events(RELAY_LEASE_FATAL, -1), 1);
   cr_assert_eq(f.events[0]->code, EX_CONFIG);
   cr_assert_eq(f.n_leave, 1);
   cr_assert_eq(relay_partset_count(&t.owned, N), 0);
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_renew, 0);
   cr_assert_eq(count_events(RELAY_LEASE_ACQUIRED, -1), 0);
}

/* A renewal refused "not primary" (an election) is sent again once a primary is known, in
 * the same tick; its deadline counts from the retry's send time. */
Test(tick, a_renewal_refused_not_primary_is_retried_once_a_primary_is_known)
{
   int64_t retry_sent;
   relay_tick_run(&t, true);
   f.now += 2000 * MS;
   f.write_takes = 10 * MS;
   f.renew_not_primary = 1;
   retry_sent = f.now + 10 * MS; /* after the first attempt */
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_renew, 2);
   cr_assert_eq(f.n_wait_primary, 1);
   for (int p = 0; p < N; p++) {
      cr_assert_eq(gate(p), retry_sent + TTL_LESS_MARGIN, "partition %d", p);
   }
}

/* Bounded: a server that keeps saying "not primary" is tried RELAY_RENEW_RETRIES more times;
 * any other failure (MongoDB unreachable) waits for the next tick; the deadline stays. */
Test(tick, renewal_retries_are_bounded_and_only_for_not_primary)
{
   int64_t before;
   relay_tick_run(&t, true);
   before = gate(0);
   f.now += 2000 * MS;
   f.renew_not_primary = 100;
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_renew, 1 + RELAY_RENEW_RETRIES);
   cr_assert_eq(gate(0), before);
   f.renew_not_primary = 0;
   f.renew_down = 1;
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_renew, 2 + RELAY_RENEW_RETRIES);
   cr_assert_eq(f.n_wait_primary, RELAY_RENEW_RETRIES);
}

/* No retry starts once a renew period has gone by since the first attempt: the tick keeps
 * its pace (member document, reading the group, handoffs). */
Test(tick, no_renewal_retry_after_a_renew_period)
{
   relay_tick_run(&t, true);
   f.now += 2000 * MS;
   f.write_takes = cfg.lease_renew_ms * MS;
   f.renew_not_primary = 1;
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_renew, 1);
}

/* Wrong credentials before the group was ever set up do not fix themselves: FATAL with
 * EX_NOPERM, and no more ticks. */
Test(tick, authentication_refused_at_start_is_fatal)
{
   f.init_auth_fails = true;
   relay_tick_run(&t, true);
   cr_assert_eq(count_events(RELAY_LEASE_FATAL, -1), 1);
   cr_assert_eq(f.events[0]->code, EX_NOPERM);
   relay_tick_run(&t, true);
   cr_assert_eq(f.n_init, 1, "ticked again after a fatal error");
}

/* MongoDB refusing the writes (13) is flagged for the gauge until a tick succeeds, and
 * counts as MongoDB answering (the member stays healthy, publishing stops at the deadline). */
Test(tick, refused_writes_are_flagged_until_a_tick_succeeds)
{
   int64_t before;
   relay_tick_run(&t, true);
   before = gate(0);
   f.now += 2000 * MS;
   f.renew_refused = 1;
   relay_tick_run(&t, true);
   cr_assert(atomic_load(&t.refused));
   cr_assert_eq(gate(0), before, "a refused renewal moved the deadline");
   cr_assert_eq(f.n_renew, 1, "a refusal is not retried as not primary");
   f.now += 2000 * MS;
   relay_tick_run(&t, true);
   cr_assert_not(atomic_load(&t.refused));
}
