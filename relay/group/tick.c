/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * One tick of the lease table (tick.h), and the writes made between ticks (checkpoints,
 * handoffs, the final release), through the store operations it was handed. The caller's
 * thread only (the lease thread): the lease table in relay_tick_t is changed here and nowhere
 * else. Order matters for the gate: a partition's deadline is
 * cleared before anything is said or written that gives it up, and set only from the time a
 * renew or acquire that succeeded was sent.
 */
#include "group/tick-private.h"

#include <string.h>
#include <sysexits.h>

#include "util/error.h"
#include "util/log.h"
#include "base/str.h"

static int64_t
deadline_after(const relay_tick_t *t, int64_t sent_ns)
{
   return sent_ns + (t->cfg->lease_ttl_ms - t->cfg->lease_margin_ms) * 1000000LL;
}

static void
set_owned(relay_tick_t *t, int p, int64_t epoch, int64_t deadline_ns)
{
   relay_partset_add(&t->owned, p);
   t->epochs[p] = epoch;
   t->handoff_posted[p] = false;
   bson_free(t->handoff_to[p]);
   t->handoff_to[p] = NULL;
   atomic_store_explicit(&t->epoch_pub[p], epoch, memory_order_relaxed);
   atomic_store_explicit(&t->deadline[p], deadline_ns, memory_order_release);
}

/* Closes the gate first: from here on nothing of @p is published. */
static void
drop_owned(relay_tick_t *t, int p)
{
   atomic_store_explicit(&t->deadline[p], 0, memory_order_release);
   atomic_store_explicit(&t->epoch_pub[p], 0, memory_order_relaxed);
   relay_partset_remove(&t->owned, p);
}

static void
publish_counts(relay_tick_t *t)
{
   int owned = relay_partset_count(&t->owned, t->cfg->partitions);
   relay_metrics_set(t->metrics, RELAY_G_PARTITIONS_OWNED, (double)owned);
   relay_metrics_set(t->metrics, RELAY_G_GROUP_MEMBERS, (double)atomic_load(&t->members));
}

static void
observe_renew(relay_tick_t *t, int64_t sent_ns)
{
   static const double bounds[RELAY_RENEW_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1,    2.5,   5};
   double s = (double)(t->clock() - sent_ns) / 1e9;
   int b = 0;
   while (b < RELAY_RENEW_BUCKETS && s > bounds[b]) {
      b++;
   }
   atomic_fetch_add(&t->renew_buckets[b], 1);
   atomic_fetch_add(&t->renew_count, 1);
   atomic_fetch_add(&t->renew_sum_us, (uint64_t)(s * 1e6));
}

/* Renews what this member owns; @sent_ns holds the tick's start (no later than the first
 * attempt was sent) and receives the send time of a retry that succeeded: the deadlines count
 * from it. A renewal that failed because the server stepped
 * down ("not primary": an updateMany is not a retryable write) is sent again as soon as mongoc
 * knows the new primary, instead of a tick later: with elections every few seconds a member
 * could otherwise miss every renewal until its deadlines pass (issue 34 item 10, F14's
 * trigger). Bounded: at most RELAY_RENEW_RETRIES more attempts, none started once a renew
 * period has gone by since the first. */
static bool
renew(relay_tick_t *t, int64_t *sent_ns)
{
   bson_error_t error;
   int64_t first_ns = *sent_ns;

   for (int attempt = 0;; attempt++) {
      if (attempt > 0) {
         *sent_ns = t->clock();
      }
      if (t->ops->renew(t->store, &t->owned, t->epochs, &error)) {
         observe_renew(t, *sent_ns);
         return true;
      }
      if (attempt == RELAY_RENEW_RETRIES || !relay_error_is_not_primary(&error)) {
         break;
      }
      relay_log(RELAY_LOG_INFO, "group",
                "renewing leases failed: %s: retrying once a primary is known", error.message);
      if (!t->ops->wait_primary(t->store, &error) ||
          t->clock() - first_ns >= t->cfg->lease_renew_ms * 1000000LL) {
         break;
      }
   }
   _relay_tick_note_down(t, "renewing leases", &error);
   return false;
}

static void
log_set(const char *what, const relay_partset_t *s, int n, const char *tail)
{
   bson_string_t *list = bson_string_new(NULL);
   relay_partset_format(s, n, list);
   relay_log(RELAY_LOG_INFO, "group", "%s %d partition%s: %s%s", what, relay_partset_count(s, n),
             relay_partset_count(s, n) == 1 ? "" : "s", list->str, tail ? tail : "");
   bson_string_free(list, true);
}

static void
lose(relay_tick_t *t, int p, const relay_lease_view_t *v)
{
   drop_owned(t, p);
   relay_metrics_add(t->metrics, RELAY_M_LEASE_LOSSES, 1);
   relay_log(RELAY_LOG_WARNING, "group",
             "lost partition %d (epoch %" PRId64 "): now %s%s at epoch %" PRId64, p, t->epochs[p],
             v->owner ? "owned by " : "free", v->owner ? v->owner : "", v->epoch);
   _relay_tick_post(t, RELAY_LEASE_LOST, p, t->epochs[p], NULL, NULL);
}

/* What the read says about the leases we hold: lost ones, renewed ones, handoffs asked. */
static void
reconcile(relay_tick_t *t, bool renewed, int64_t sent_ns)
{
   for (int p = 0; p < t->cfg->partitions; p++) {
      const relay_lease_view_t *v = &t->snap->leases[p];
      if (!relay_partset_has(&t->owned, p)) {
         continue;
      }
      if (!relay_str_same(v->owner, t->me) || v->epoch != t->epochs[p]) {
         lose(t, p, v);
         continue;
      }
      if (renewed) {
         atomic_store_explicit(&t->deadline[p], deadline_after(t, sent_ns), memory_order_release);
      }
      if (v->handoff_to && !t->handoff_posted[p]) {
         t->handoff_posted[p] = true;
         t->handoff_to[p] = bson_strdup(v->handoff_to);
         relay_log(RELAY_LOG_INFO, "group", "partition %d asked for by %s: draining it", p,
                   v->handoff_to);
         _relay_tick_post(t, RELAY_LEASE_HANDOFF, p, t->epochs[p], NULL, NULL);
      }
   }
}

/* Leases the group read says are ours but that this member does not hold: a take the server
 * applied but did not confirm (w: majority timed out, 64, and the take replicated later; or a
 * connection lost after sending), or a release that failed. This member never counted them, so
 * it publishes nothing of them, and balancing never takes a lease named after itself: left
 * alone they would stay unpublished until someone else takes them. Released, fenced by the
 * epoch read, they are free at the next tick. */
static void
release_strays(relay_tick_t *t)
{
   relay_partset_t strays;
   int64_t *epochs = NULL;
   bson_error_t error;

   relay_partset_clear(&strays);
   for (int p = 0; p < t->cfg->partitions; p++) {
      const relay_lease_view_t *v = &t->snap->leases[p];
      if (!relay_partset_has(&t->owned, p) && relay_str_same(v->owner, t->me) && !v->malformed) {
         if (!epochs) {
            epochs = bson_malloc0(sizeof(int64_t) * (size_t)t->cfg->partitions);
         }
         relay_partset_add(&strays, p);
         epochs[p] = v->epoch;
      }
   }
   if (!epochs) {
      return;
   }
   if (!t->ops->release(t->store, &strays, epochs, NULL, &error)) {
      _relay_tick_note_down(t, "releasing leases taken unconfirmed", &error);
   } else {
      log_set("released", &strays, t->cfg->partitions,
              " (taken unconfirmed: named after this member, never held)");
   }
   bson_free(epochs);
}

static void
release_all(relay_tick_t *t, const char *why, bool tell_main)
{
   relay_partset_t all = t->owned;
   bson_error_t error;

   if (relay_partset_count(&all, t->cfg->partitions) == 0) {
      return;
   }
   for (int p = 0; p < t->cfg->partitions; p++) {
      if (relay_partset_has(&all, p)) {
         drop_owned(t, p);
         if (tell_main) {
            _relay_tick_post(t, RELAY_LEASE_LOST, p, t->epochs[p], NULL, NULL);
         }
      }
   }
   if (!t->ops->release(t->store, &all, t->epochs, NULL, &error)) {
      relay_log(RELAY_LOG_WARNING, "group", "releasing leases failed: %s (they expire instead)",
                error.message);
   }
   log_set("released", &all, t->cfg->partitions, why);
   publish_counts(t);
}

static bool
others_live(const relay_tick_t *t)
{
   for (size_t i = 0; i < t->snap->n_members; i++) {
      if (!relay_str_same(t->snap->member_ids[i], t->me)) {
         return true;
      }
   }
   return false;
}

static void
acquire(relay_tick_t *t, const relay_balance_plan_t *plan)
{
   relay_partset_t want, got;
   bson_error_t error;
   int64_t sent_ns = t->clock();
   int64_t *epochs = bson_malloc0(sizeof(int64_t) * (size_t)t->cfg->partitions);
   bson_t **tokens = bson_malloc0(sizeof(bson_t *) * (size_t)t->cfg->partitions);

   relay_partset_clear(&want);
   for (int i = 0; i < plan->n_acquire; i++) {
      relay_partset_add(&want, plan->acquire[i]);
   }
   if (!t->ops->acquire(t->store, &want, &error) ||
       !t->ops->read_mine(t->store, &want, &got, epochs, tokens, &error)) {
      _relay_tick_note_down(t, "acquiring leases", &error);
   } else if (relay_partset_count(&got, t->cfg->partitions) > 0) {
      _relay_tick_hold(t);
      for (int p = 0; p < t->cfg->partitions; p++) {
         if (relay_partset_has(&got, p)) {
            set_owned(t, p, epochs[p], deadline_after(t, sent_ns));
            relay_metrics_add(t->metrics, RELAY_M_LEASE_ACQUISITIONS, 1);
            _relay_tick_post(t, RELAY_LEASE_ACQUIRED, p, epochs[p], tokens[p], NULL);
            tokens[p] = NULL;
         }
      }
      _relay_tick_flush(t);
      log_set("acquired", &got, t->cfg->partitions, NULL);
   }
   for (int p = 0; p < t->cfg->partitions; p++) {
      bson_destroy(tokens[p]);
   }
   bson_free(tokens);
   bson_free(epochs);
}

static void
balance(relay_tick_t *t, bool eligible)
{
   relay_balance_plan_t *plan = bson_malloc(sizeof *plan);
   relay_balance_input_t in = {
      t->cfg->partitions, t->me,    t->snap->leases, (const char *const *)t->snap->member_ids,
      t->snap->n_members, eligible, t->rotate};
   bson_error_t error;

   relay_balance_plan(&in, plan);
   atomic_store(&t->members, plan->members);
   if (plan->n_acquire > 0) {
      acquire(t, plan);
   }
   for (int i = 0; i < plan->n_handoff; i++) {
      const relay_lease_view_t *v = &t->snap->leases[plan->handoff[i]];
      if (!t->ops->request(t->store, plan->handoff[i], v->owner, v->epoch, &error)) {
         _relay_tick_note_down(t, "asking for a handoff", &error);
         break;
      }
      relay_log(RELAY_LOG_INFO, "group", "asked %s to hand partition %d over", v->owner,
                plan->handoff[i]);
   }
   bson_free(plan);
}

/* Before the group is set up: through mongos its lease and state collections must be
 * unsharded (store/sharding.h). False while that is not known yet, or when this member must
 * stop (EX_CONFIG, with the reason). */
static bool
check_unsharded(relay_tick_t *t)
{
   bson_error_t error;
   relay_sharding_t rc = t->ops->check_sharding(t->store, &error);

   if (rc == RELAY_SHARDING_REFUSE) {
      t->fatal = true;
      _relay_tick_post_fatal(t, EX_CONFIG, error.message);
   } else if (rc == RELAY_SHARDING_RETRY) {
      _relay_tick_note_down(t, "asking whether the group's collections are sharded", &error);
   } else if (rc == RELAY_SHARDING_UNKNOWN) {
      relay_log(RELAY_LOG_WARNING, "group",
                "cannot tell whether the state and lease collections are sharded (%s): they "
                "must not be; give the relay's user read on config.collections to check",
                error.message);
   }
   return rc == RELAY_SHARDING_OK || rc == RELAY_SHARDING_UNKNOWN;
}

void
relay_tick_run(relay_tick_t *t, bool eligible)
{
   bson_error_t error;
   int64_t sent_ns = t->clock();
   bool renewed = false;

   if (t->fatal) {
      return;
   }
   t->tick_failed = false;
   if (!t->ready) {
      if (!check_unsharded(t)) {
         return;
      }
      relay_group_init_t rc = t->ops->init(t->store, &error);
      if (rc == RELAY_GROUP_MISMATCH) {
         char *msg = bson_strdup_printf("cannot join: %s", error.message);
         t->fatal = true;
         _relay_tick_post_fatal(t, EX_CONFIG, msg);
         bson_free(msg);
         return;
      }
      if (rc != RELAY_GROUP_OK) {
         _relay_tick_note_down(t, "setting up the group", &error);
         return;
      }
      t->ready = true;
   }
   t->ops->measure_skew(t->store, &t->skew);
   if (relay_partset_count(&t->owned, t->cfg->partitions) > 0) {
      renewed = renew(t, &sent_ns);
   }
   if (eligible && !t->ops->member(t->store, t->host, t->pid,
                                   relay_partset_count(&t->owned, t->cfg->partitions), &error)) {
      _relay_tick_note_down(t, "writing the member document", &error);
   }
   if (!_relay_tick_read_group(t)) {
      return;
   }
   if (!_relay_tick_check_settings(t)) {
      return;
   }
   t->joined = true;
   reconcile(t, renewed, sent_ns);
   release_strays(t);
   _relay_tick_repair_malformed(t);
   if (++t->ticks % 60 == 1 && !t->ops->forget_dead(t->store, &error)) {
      relay_log(RELAY_LOG_DEBUG, "group", "forgetting dead members failed: %s", error.message);
   }
   if (!eligible && others_live(t)) {
      release_all(t, " (the broker cannot be reached; the others take them)", true);
   }
   balance(t, eligible);
   publish_counts(t);
   _relay_tick_watch_unowned(t);
   if (t->fatal) {
      return;
   }
   atomic_store(&t->last_ok_ns, t->clock());
   if (atomic_load(&t->refused) && !t->tick_failed) {
      relay_log(RELAY_LOG_INFO, "group",
                "MongoDB accepts the relay's writes again: publishing "
                "resumes");
      atomic_store(&t->refused, false);
   }
   if (t->down_logged) {
      relay_log(RELAY_LOG_INFO, "group", "MongoDB reachable again");
      t->down_logged = false;
   }
}

void
relay_tick_write_checkpoint(relay_tick_t *t, const bson_t *token, const relay_partset_t *valid,
                            const int64_t *epochs)
{
   relay_partset_t mine;
   bson_error_t error;

   relay_partset_clear(&mine);
   for (int p = 0; p < t->cfg->partitions; p++) {
      if (relay_partset_has(valid, p) && relay_partset_has(&t->owned, p) &&
          epochs[p] == t->epochs[p]) {
         relay_partset_add(&mine, p);
      }
   }
   if (relay_partset_count(&mine, t->cfg->partitions) == 0) {
      return;
   }
   if (!t->ops->checkpoint(t->store, &mine, t->epochs, token, &error)) {
      relay_log(RELAY_LOG_WARNING, "group", "saving the checkpoint failed: %s", error.message);
   }
}

void
relay_tick_hand_over(relay_tick_t *t, int part, int64_t epoch)
{
   relay_partset_t one;
   bson_error_t error;

   if (!relay_partset_has(&t->owned, part) || t->epochs[part] != epoch) {
      return; /* lost meanwhile */
   }
   drop_owned(t, part);
   relay_partset_clear(&one);
   relay_partset_add(&one, part);
   if (!t->ops->release(t->store, &one, t->epochs, t->handoff_to[part], &error)) {
      relay_log(RELAY_LOG_WARNING, "group",
                "handing partition %d over failed: %s (it expires instead)", part, error.message);
   } else {
      relay_log(RELAY_LOG_INFO, "group", "handed partition %d over to %s", part,
                t->handoff_to[part] ? t->handoff_to[part] : "(anyone)");
   }
   relay_metrics_add(t->metrics, RELAY_M_LEASE_HANDOFFS, 1);
   publish_counts(t);
}

void
relay_tick_leave(relay_tick_t *t)
{
   bson_error_t error;

   if (!t->ready) {
      return;
   }
   release_all(t, " (stopping)", false);
   if (!t->ops->leave(t->store, &error)) {
      relay_log(RELAY_LOG_DEBUG, "group", "deleting the member document failed: %s", error.message);
   }
}
