/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease tick's state (tick.h): its set-up and cleanup, the events it posts for the main
 * thread (through the post function it was handed, held back while a tick's acquisitions are
 * collected), how a failed lease write or read is said, and the lease metrics. Called by
 * tick.c and tick-checks.c on the lease thread; relay_tick_render_metrics() from any thread.
 */
#include "group/tick-private.h"

#include <inttypes.h>
#include <sysexits.h>

#include "util/error.h"
#include "util/log.h"

void
relay_tick_init(relay_tick_t *t, const relay_config_t *cfg, relay_metrics_t *metrics,
                const char *me, const char *host, const char *settings, int pid,
                const relay_lease_store_ops_t *ops, void *store, int64_t (*clock)(void),
                relay_lease_post_fn post, void *post_ctx)
{
   size_t n = (size_t)cfg->partitions;

   *t = (relay_tick_t){.cfg = cfg,
                       .metrics = metrics,
                       .me = me,
                       .host = host,
                       .settings = settings,
                       .pid = pid,
                       .ops = ops,
                       .store = store,
                       .clock = clock,
                       .post = post,
                       .post_ctx = post_ctx};
   t->deadline = bson_malloc0(n * sizeof *t->deadline);
   t->epoch_pub = bson_malloc0(n * sizeof *t->epoch_pub);
   t->epochs = bson_malloc0(n * sizeof *t->epochs);
   t->handoff_posted = bson_malloc0(n * sizeof *t->handoff_posted);
   t->malformed_seen = bson_malloc0(n * sizeof *t->malformed_seen);
   t->handoff_to = bson_malloc0(n * sizeof *t->handoff_to);
   t->snap = bson_malloc0(sizeof *t->snap);
   for (size_t i = 0; i < n; i++) {
      atomic_init(&t->deadline[i], 0);
      atomic_init(&t->epoch_pub[i], 0);
   }
   for (size_t i = 0; i < RELAY_RENEW_BUCKETS + 1; i++) {
      atomic_init(&t->renew_buckets[i], 0);
   }
   relay_skew_init(&t->skew, cfg->lease_margin_ms);
}

void
relay_tick_cleanup(relay_tick_t *t)
{
   if (t->snap) {
      relay_group_snapshot_cleanup(t->snap);
   }
   for (int p = 0; t->handoff_to && p < t->cfg->partitions; p++) {
      bson_free(t->handoff_to[p]);
   }
   while (t->held_head) {
      relay_lease_event_t *ev = t->held_head;
      t->held_head = ev->next;
      relay_lease_event_free(ev);
   }
   bson_free(t->deadline);
   bson_free(t->epoch_pub);
   bson_free(t->epochs);
   bson_free(t->handoff_posted);
   bson_free(t->malformed_seen);
   bson_free(t->handoff_to);
   bson_free(t->output_mismatch_with);
   bson_free(t->snap);
   relay_skew_cleanup(&t->skew);
}

bool
relay_tick_may_publish(const relay_tick_t *t, int part, int64_t now)
{
   int64_t deadline = atomic_load_explicit(&t->deadline[part], memory_order_acquire);
   return deadline != 0 && now < deadline;
}

void
relay_lease_event_free(relay_lease_event_t *ev)
{
   if (ev) {
      bson_destroy(ev->token);
      bson_free(ev->message);
      bson_free(ev);
   }
}

static void
enqueue(relay_tick_t *t, relay_lease_event_t *ev)
{
   if (!t->holding) {
      t->post(t->post_ctx, ev, ev);
      return;
   }
   if (t->held_tail) {
      t->held_tail->next = ev;
   } else {
      t->held_head = ev;
   }
   t->held_tail = ev;
}

static relay_lease_event_t *
event_new(relay_lease_event_kind_t kind, int part, int64_t epoch, bson_t *token,
          const char *message)
{
   relay_lease_event_t *ev = bson_malloc0(sizeof *ev);
   ev->kind = kind;
   ev->part = part;
   ev->epoch = epoch;
   ev->token = token;
   ev->message = message ? bson_strdup(message) : NULL;
   return ev;
}

void
_relay_tick_post(relay_tick_t *t, relay_lease_event_kind_t kind, int part, int64_t epoch,
                 bson_t *token, const char *message)
{
   enqueue(t, event_new(kind, part, epoch, token, message));
}

void
_relay_tick_post_fatal(relay_tick_t *t, int code, const char *message)
{
   relay_lease_event_t *ev = event_new(RELAY_LEASE_FATAL, -1, 0, NULL, message);
   ev->code = code;
   enqueue(t, ev);
}

void
_relay_tick_hold(relay_tick_t *t)
{
   t->holding = true;
}

void
_relay_tick_flush(relay_tick_t *t)
{
   t->holding = false;
   if (t->held_head) {
      t->post(t->post_ctx, t->held_head, t->held_tail);
      t->held_head = t->held_tail = NULL;
   }
}

/* MongoDB refuses the writes (13 Unauthorized, or the password stopped working): no lease
 * can be held, so nothing is published; said once, as the writer says it of clears. The gauge
 * is relay.c's (relay_lease_refused()). */
static void
note_refused(relay_tick_t *t, const char *what, const bson_error_t *error)
{
   if (!atomic_load(&t->refused)) {
      relay_log(RELAY_LOG_ERROR, "group",
                "MongoDB refuses the relay's writes (%s: %s): its user needs readWrite on "
                "database %s. Publishing is paused until a write succeeds; events already "
                "published stay pending and will be published again (retrying every %d ms)",
                what, error->message, t->cfg->state_database, t->cfg->lease_renew_ms);
      atomic_store(&t->refused, true);
   } else {
      relay_log(RELAY_LOG_DEBUG, "group", "%s refused again: %s", what, error->message);
   }
   /* The server answered: MongoDB is reachable, it says no. */
   atomic_store(&t->last_ok_ns, t->clock());
}

void
_relay_tick_note_down(relay_tick_t *t, const char *what, const bson_error_t *error)
{
   bool auth =
      error->domain == MONGOC_ERROR_CLIENT && error->code == MONGOC_ERROR_CLIENT_AUTHENTICATE;
   if (auth && !t->ready) {
      /* Wrong credentials before the relay ever worked will not fix themselves: stop, so the
       * operator sees it at once. mongoc passes the server's answer to the SASL conversation
       * on as is (e.g. "no such command: 'saslStart'"): say that authentication failed. */
      char *msg = bson_strdup_printf(
         "MongoDB authentication failed (%s): check the user, password, authSource and "
         "authMechanism of --mongodb-uri; exiting with status %d",
         error->message, EX_NOPERM);
      t->fatal = true;
      _relay_tick_post_fatal(t, EX_NOPERM, msg);
      bson_free(msg);
      return;
   }
   t->tick_failed = true;
   if (relay_error_is_refusal(error)) {
      note_refused(t, what, error);
      return;
   }
   if (!t->down_logged) {
      relay_log(RELAY_LOG_WARNING, "group",
                "%s failed: MongoDB: %s (leases are not renewed; each partition stops "
                "publishing at its deadline; retrying every %d ms)",
                what, error->message, t->cfg->lease_renew_ms);
      t->down_logged = true;
   } else {
      relay_log(RELAY_LOG_DEBUG, "group", "%s failed: %s", what, error->message);
   }
}

void
relay_tick_render_metrics(const relay_tick_t *t, bson_string_t *out)
{
   static const char *const les[RELAY_RENEW_BUCKETS] = {
      "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5"};
   uint64_t cumulative = 0;

   bson_string_append(out, "# HELP outbox_relay_lease_epoch Epoch (the fencing token) of each "
                           "partition lease this member holds.\n"
                           "# TYPE outbox_relay_lease_epoch gauge\n");
   for (int p = 0; p < t->cfg->partitions; p++) {
      int64_t e = atomic_load_explicit((_Atomic int64_t *)&t->epoch_pub[p], memory_order_relaxed);
      if (e != 0) {
         bson_string_append_printf(out, "outbox_relay_lease_epoch{partition=\"%d\"} %" PRId64 "\n",
                                   p, e);
      }
   }
   bson_string_append(out, "# HELP outbox_relay_lease_renew_seconds Time one renewal of this "
                           "member's leases took (one round-trip for all of them).\n"
                           "# TYPE outbox_relay_lease_renew_seconds histogram\n");
   for (int b = 0; b <= RELAY_RENEW_BUCKETS; b++) {
      cumulative += atomic_load((_Atomic uint64_t *)&t->renew_buckets[b]);
      bson_string_append_printf(out,
                                "outbox_relay_lease_renew_seconds_bucket{le=\"%s\"} %" PRIu64 "\n",
                                b < RELAY_RENEW_BUCKETS ? les[b] : "+Inf", cumulative);
   }
   bson_string_append_printf(
      out,
      "outbox_relay_lease_renew_seconds_sum %.6f\noutbox_relay_lease_renew_seconds_count %" PRIu64
      "\n",
      (double)atomic_load((_Atomic uint64_t *)&t->renew_sum_us) / 1e6,
      atomic_load((_Atomic uint64_t *)&t->renew_count));
   relay_skew_render(&t->skew, out);
}
