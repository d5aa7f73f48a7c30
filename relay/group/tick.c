/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * One tick of the lease thread, and the writes it makes between ticks (checkpoints,
 * handoffs, the final release). Lease thread only: the lease table in relay_lease_t is
 * changed here and nowhere else. Order matters for the gate: a partition's deadline is
 * cleared before anything is said or written that gives it up, and set only from the time a
 * renew or acquire that succeeded was sent.
 */
#include "group/lease-private.h"

#include <string.h>
#include <sysexits.h>

#include "store/sharding.h"
#include "util/error.h"
#include "util/log.h"
#include "base/str.h"

static int64_t
deadline_after(const relay_lease_t *l, int64_t sent_ns)
{
   return sent_ns + (l->cfg->lease_ttl_ms - l->cfg->lease_margin_ms) * 1000000LL;
}

/* MongoDB refuses the writes (13 Unauthorized, or the password stopped working): no lease
 * can be held, so nothing is published; said once, as the writer says it of clears. The gauge
 * is relay.c's (relay_lease_refused()). */
static void
note_refused(relay_lease_t *l, const char *what, const bson_error_t *error)
{
   if (!atomic_load(&l->refused)) {
      relay_log(RELAY_LOG_ERROR, "group",
                "MongoDB refuses the relay's writes (%s: %s): its user needs readWrite on "
                "database %s. Publishing is paused until a write succeeds; events already "
                "published stay pending and will be published again (retrying every %d ms)",
                what, error->message, l->cfg->database, l->cfg->lease_renew_ms);
      atomic_store(&l->refused, true);
   } else {
      relay_log(RELAY_LOG_DEBUG, "group", "%s refused again: %s", what, error->message);
   }
   /* The server answered: MongoDB is reachable, it says no. */
   atomic_store(&l->last_ok_ns, relay_boot_ns());
}

void
_relay_lease_note_down(relay_lease_t *l, const char *what, const bson_error_t *error)
{
   bool auth =
      error->domain == MONGOC_ERROR_CLIENT && error->code == MONGOC_ERROR_CLIENT_AUTHENTICATE;
   if (auth && !l->ready) {
      /* Wrong credentials before the relay ever worked will not fix themselves: stop, so the
       * operator sees it at once. mongoc passes the server's answer to the SASL conversation
       * on as is (e.g. "no such command: 'saslStart'"): say that authentication failed. */
      char *msg = bson_strdup_printf(
         "MongoDB authentication failed (%s): check the user, password, authSource and "
         "authMechanism of --mongodb-uri; exiting with status %d",
         error->message, EX_NOPERM);
      l->fatal = true;
      _relay_lease_post_fatal(l, EX_NOPERM, msg);
      bson_free(msg);
      return;
   }
   l->tick_failed = true;
   if (relay_error_is_refusal(error)) {
      note_refused(l, what, error);
      return;
   }
   if (!l->down_logged) {
      relay_log(RELAY_LOG_WARNING, "group",
                "%s failed: MongoDB: %s (leases are not renewed; each partition stops "
                "publishing at its deadline; retrying every %d ms)",
                what, error->message, l->cfg->lease_renew_ms);
      l->down_logged = true;
   } else {
      relay_log(RELAY_LOG_DEBUG, "group", "%s failed: %s", what, error->message);
   }
}

static void
set_owned(relay_lease_t *l, int p, int64_t epoch, int64_t deadline_ns)
{
   relay_partset_add(&l->owned, p);
   l->epochs[p] = epoch;
   l->handoff_posted[p] = false;
   bson_free(l->handoff_to[p]);
   l->handoff_to[p] = NULL;
   atomic_store_explicit(&l->epoch_pub[p], epoch, memory_order_relaxed);
   atomic_store_explicit(&l->deadline[p], deadline_ns, memory_order_release);
}

/* Closes the gate first: from here on nothing of @p is published. */
static void
drop_owned(relay_lease_t *l, int p)
{
   atomic_store_explicit(&l->deadline[p], 0, memory_order_release);
   atomic_store_explicit(&l->epoch_pub[p], 0, memory_order_relaxed);
   relay_partset_remove(&l->owned, p);
}

static void
publish_counts(relay_lease_t *l)
{
   int owned = relay_partset_count(&l->owned, l->cfg->partitions);
   relay_metrics_set(l->metrics, RELAY_G_PARTITIONS_OWNED, (double)owned);
   relay_metrics_set(l->metrics, RELAY_G_GROUP_MEMBERS, (double)atomic_load(&l->members));
}

static void
observe_renew(relay_lease_t *l, int64_t sent_ns)
{
   static const double bounds[RELAY_RENEW_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                      0.1,   0.25,   0.5,   1,    2.5,   5};
   double s = (double)(relay_boot_ns() - sent_ns) / 1e9;
   int b = 0;
   while (b < RELAY_RENEW_BUCKETS && s > bounds[b]) {
      b++;
   }
   atomic_fetch_add(&l->renew_buckets[b], 1);
   atomic_fetch_add(&l->renew_count, 1);
   atomic_fetch_add(&l->renew_sum_us, (uint64_t)(s * 1e6));
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
lose(relay_lease_t *l, int p, const relay_lease_view_t *v)
{
   drop_owned(l, p);
   relay_metrics_add(l->metrics, RELAY_M_LEASE_LOSSES, 1);
   relay_log(RELAY_LOG_WARNING, "group",
             "lost partition %d (epoch %" PRId64 "): now %s%s at epoch %" PRId64, p, l->epochs[p],
             v->owner ? "owned by " : "free", v->owner ? v->owner : "", v->epoch);
   _relay_lease_post(l, RELAY_LEASE_LOST, p, l->epochs[p], NULL, NULL);
}

/* What the read says about the leases we hold: lost ones, renewed ones, handoffs asked. */
static void
reconcile(relay_lease_t *l, bool renewed, int64_t sent_ns)
{
   for (int p = 0; p < l->cfg->partitions; p++) {
      const relay_lease_view_t *v = &l->snap->leases[p];
      if (!relay_partset_has(&l->owned, p)) {
         continue;
      }
      if (!relay_str_same(v->owner, l->me) || v->epoch != l->epochs[p]) {
         lose(l, p, v);
         continue;
      }
      if (renewed) {
         atomic_store_explicit(&l->deadline[p], deadline_after(l, sent_ns), memory_order_release);
      }
      if (v->handoff_to && !l->handoff_posted[p]) {
         l->handoff_posted[p] = true;
         l->handoff_to[p] = bson_strdup(v->handoff_to);
         relay_log(RELAY_LOG_INFO, "group", "partition %d asked for by %s: draining it", p,
                   v->handoff_to);
         _relay_lease_post(l, RELAY_LEASE_HANDOFF, p, l->epochs[p], NULL, NULL);
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
release_strays(relay_lease_t *l)
{
   relay_partset_t strays;
   int64_t *epochs = NULL;
   bson_error_t error;

   relay_partset_clear(&strays);
   for (int p = 0; p < l->cfg->partitions; p++) {
      const relay_lease_view_t *v = &l->snap->leases[p];
      if (!relay_partset_has(&l->owned, p) && relay_str_same(v->owner, l->me) && !v->malformed) {
         if (!epochs) {
            epochs = bson_malloc0(sizeof(int64_t) * (size_t)l->cfg->partitions);
         }
         relay_partset_add(&strays, p);
         epochs[p] = v->epoch;
      }
   }
   if (!epochs) {
      return;
   }
   if (!relay_lease_store_release(&l->st, &strays, epochs, NULL, &error)) {
      _relay_lease_note_down(l, "releasing leases taken unconfirmed", &error);
   } else {
      log_set("released", &strays, l->cfg->partitions,
              " (taken unconfirmed: named after this member, never held)");
   }
   bson_free(epochs);
}

static void
release_all(relay_lease_t *l, const char *why, bool tell_main)
{
   relay_partset_t all = l->owned;
   bson_error_t error;

   if (relay_partset_count(&all, l->cfg->partitions) == 0) {
      return;
   }
   for (int p = 0; p < l->cfg->partitions; p++) {
      if (relay_partset_has(&all, p)) {
         drop_owned(l, p);
         if (tell_main) {
            _relay_lease_post(l, RELAY_LEASE_LOST, p, l->epochs[p], NULL, NULL);
         }
      }
   }
   if (!relay_lease_store_release(&l->st, &all, l->epochs, NULL, &error)) {
      relay_log(RELAY_LOG_WARNING, "group", "releasing leases failed: %s (they expire instead)",
                error.message);
   }
   log_set("released", &all, l->cfg->partitions, why);
   publish_counts(l);
}

static bool
others_live(const relay_lease_t *l)
{
   for (size_t i = 0; i < l->snap->n_members; i++) {
      if (!relay_str_same(l->snap->member_ids[i], l->me)) {
         return true;
      }
   }
   return false;
}

static void
acquire(relay_lease_t *l, const relay_balance_plan_t *plan)
{
   relay_partset_t want, got;
   bson_error_t error;
   int64_t sent_ns = relay_boot_ns();
   int64_t *epochs = bson_malloc0(sizeof(int64_t) * (size_t)l->cfg->partitions);
   bson_t **tokens = bson_malloc0(sizeof(bson_t *) * (size_t)l->cfg->partitions);

   relay_partset_clear(&want);
   for (int i = 0; i < plan->n_acquire; i++) {
      relay_partset_add(&want, plan->acquire[i]);
   }
   if (!relay_lease_store_acquire(&l->st, &want, &error) ||
       !relay_lease_store_read_mine(&l->st, &want, &got, epochs, tokens, &error)) {
      _relay_lease_note_down(l, "acquiring leases", &error);
   } else if (relay_partset_count(&got, l->cfg->partitions) > 0) {
      _relay_lease_hold(l);
      for (int p = 0; p < l->cfg->partitions; p++) {
         if (relay_partset_has(&got, p)) {
            set_owned(l, p, epochs[p], deadline_after(l, sent_ns));
            relay_metrics_add(l->metrics, RELAY_M_LEASE_ACQUISITIONS, 1);
            _relay_lease_post(l, RELAY_LEASE_ACQUIRED, p, epochs[p], tokens[p], NULL);
            tokens[p] = NULL;
         }
      }
      _relay_lease_flush(l);
      log_set("acquired", &got, l->cfg->partitions, NULL);
   }
   for (int p = 0; p < l->cfg->partitions; p++) {
      bson_destroy(tokens[p]);
   }
   bson_free(tokens);
   bson_free(epochs);
}

static void
balance(relay_lease_t *l, bool eligible)
{
   relay_balance_plan_t *plan = bson_malloc(sizeof *plan);
   relay_balance_input_t in = {
      l->cfg->partitions, l->me,    l->snap->leases, (const char *const *)l->snap->member_ids,
      l->snap->n_members, eligible, l->rotate};
   bson_error_t error;

   relay_balance_plan(&in, plan);
   atomic_store(&l->members, plan->members);
   if (plan->n_acquire > 0) {
      acquire(l, plan);
   }
   for (int i = 0; i < plan->n_handoff; i++) {
      const relay_lease_view_t *v = &l->snap->leases[plan->handoff[i]];
      if (!relay_lease_store_request(&l->st, plan->handoff[i], v->owner, v->epoch, &error)) {
         _relay_lease_note_down(l, "asking for a handoff", &error);
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
check_unsharded(relay_lease_t *l)
{
   bson_error_t error;
   relay_sharding_t rc = relay_sharding_check_group(
      l->client, l->cfg->database, l->cfg->state_collection, l->cfg->lease_collection, &error);

   if (rc == RELAY_SHARDING_REFUSE) {
      l->fatal = true;
      _relay_lease_post_fatal(l, EX_CONFIG, error.message);
   } else if (rc == RELAY_SHARDING_RETRY) {
      _relay_lease_note_down(l, "asking whether the group's collections are sharded", &error);
   } else if (rc == RELAY_SHARDING_UNKNOWN) {
      relay_log(RELAY_LOG_WARNING, "group",
                "cannot tell whether the state and lease collections are sharded (%s): they "
                "must not be; give the relay's user read on config.collections to check",
                error.message);
   }
   return rc == RELAY_SHARDING_OK || rc == RELAY_SHARDING_UNKNOWN;
}

void
_relay_lease_tick(relay_lease_t *l, bool eligible)
{
   bson_error_t error;
   int64_t sent_ns = relay_boot_ns();
   bool renewed = false;

   if (l->fatal) {
      return;
   }
   l->tick_failed = false;
   if (!l->ready) {
      if (!check_unsharded(l)) {
         return;
      }
      relay_group_init_t rc = relay_lease_store_init(&l->st, &error);
      if (rc == RELAY_GROUP_MISMATCH) {
         char *msg = bson_strdup_printf("cannot join: %s", error.message);
         l->fatal = true;
         _relay_lease_post_fatal(l, EX_CONFIG, msg);
         bson_free(msg);
         return;
      }
      if (rc != RELAY_GROUP_OK) {
         _relay_lease_note_down(l, "setting up the group", &error);
         return;
      }
      l->ready = true;
   }
   relay_skew_measure(&l->skew, l->client);
   if (relay_partset_count(&l->owned, l->cfg->partitions) > 0) {
      renewed = relay_lease_store_renew(&l->st, &l->owned, l->epochs, NULL, &error);
      if (!renewed) {
         _relay_lease_note_down(l, "renewing leases", &error);
      } else {
         observe_renew(l, sent_ns);
      }
   }
   if (eligible &&
       !relay_lease_store_member(&l->st, l->host, l->pid,
                                 relay_partset_count(&l->owned, l->cfg->partitions), &error)) {
      _relay_lease_note_down(l, "writing the member document", &error);
   }
   if (!_relay_lease_read_group(l)) {
      return;
   }
   if (!_relay_lease_check_settings(l)) {
      return;
   }
   l->joined = true;
   reconcile(l, renewed, sent_ns);
   release_strays(l);
   _relay_lease_repair_malformed(l);
   if (++l->ticks % 60 == 1 && !relay_lease_store_forget_dead(&l->st, &error)) {
      relay_log(RELAY_LOG_DEBUG, "group", "forgetting dead members failed: %s", error.message);
   }
   if (!eligible && others_live(l)) {
      release_all(l, " (the broker cannot be reached; the others take them)", true);
   }
   balance(l, eligible);
   publish_counts(l);
   _relay_lease_watch_unowned(l);
   if (l->fatal) {
      return;
   }
   atomic_store(&l->last_ok_ns, relay_boot_ns());
   if (atomic_load(&l->refused) && !l->tick_failed) {
      relay_log(RELAY_LOG_INFO, "group",
                "MongoDB accepts the relay's writes again: publishing "
                "resumes");
      atomic_store(&l->refused, false);
   }
   if (l->down_logged) {
      relay_log(RELAY_LOG_INFO, "group", "MongoDB reachable again");
      l->down_logged = false;
   }
}

void
_relay_lease_write_checkpoint(relay_lease_t *l, const bson_t *token, const relay_partset_t *valid,
                              const int64_t *epochs)
{
   relay_partset_t mine;
   bson_error_t error;

   relay_partset_clear(&mine);
   for (int p = 0; p < l->cfg->partitions; p++) {
      if (relay_partset_has(valid, p) && relay_partset_has(&l->owned, p) &&
          epochs[p] == l->epochs[p]) {
         relay_partset_add(&mine, p);
      }
   }
   if (relay_partset_count(&mine, l->cfg->partitions) == 0) {
      return;
   }
   if (!relay_lease_store_checkpoint(&l->st, &mine, l->epochs, token, &error)) {
      relay_log(RELAY_LOG_WARNING, "group", "saving the checkpoint failed: %s", error.message);
   }
}

void
_relay_lease_hand_over(relay_lease_t *l, int part, int64_t epoch)
{
   relay_partset_t one;
   bson_error_t error;

   if (!relay_partset_has(&l->owned, part) || l->epochs[part] != epoch) {
      return; /* lost meanwhile */
   }
   drop_owned(l, part);
   relay_partset_clear(&one);
   relay_partset_add(&one, part);
   if (!relay_lease_store_release(&l->st, &one, l->epochs, l->handoff_to[part], &error)) {
      relay_log(RELAY_LOG_WARNING, "group",
                "handing partition %d over failed: %s (it expires instead)", part, error.message);
   } else {
      relay_log(RELAY_LOG_INFO, "group", "handed partition %d over to %s", part,
                l->handoff_to[part] ? l->handoff_to[part] : "(anyone)");
   }
   relay_metrics_add(l->metrics, RELAY_M_LEASE_HANDOFFS, 1);
   publish_counts(l);
}

void
_relay_lease_leave(relay_lease_t *l)
{
   bson_error_t error;

   if (!l->ready) {
      return;
   }
   release_all(l, " (stopping)", false);
   if (!relay_lease_store_leave(&l->st, &error)) {
      relay_log(RELAY_LOG_DEBUG, "group", "deleting the member document failed: %s", error.message);
   }
}
