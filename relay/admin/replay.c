/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `replay`: publishes archived events (--archive-collection, outbox/archive.h) again, as the
 * relay published them (its --topic, --source, --qos, --payload-mode, --user-properties,
 * --mqtt-* options and MQTT client, and the relay's own renderer, mqtt/message.h), with a
 * marker consumers can see: the CloudEvents extension attribute "replay": true (after "seq";
 * in binary mode an attribute is a user property) and, with MQTT 5, the user property
 * replay=true (after all others). "replay" is a reserved name (outbox/contract.h): no
 * producer header can forge it.
 * The archive cursor reads each collection sorted by entity and seq, so an entity's events go
 * out oldest first; one MQTT connection keeps them in that order. Consumers de-duplicate by
 * event id as always, so a replay to one that saw the events already changes nothing.
 * A failed publish stops the replay (exit 69): run it again, duplicates are harmless.
 * Single-threaded apart from paho's callbacks, which only queue completions (mqtt/mqtt.h).
 */
#include <string.h>
#include <inttypes.h>
#include <sysexits.h>
#include <time.h>
#include <sys/random.h>
#include <unistd.h>

#include "admin/admin.h"
#include "util/error.h"
#include "admin/args.h"
#include "group/hash.h"
#include "base/partition.h"
#include "mqtt/message.h"
#include "mqtt/mqtt.h"
#include "mqtt/render.h"
#include "mqtt/expiry.h"
#include "mqtt/tls.h"
#include "util/util.h"
#include "stream/event.h"

/* Completions collected per wait. */
#define REPLAY_BATCH 64
#define REPLAY_CONNECT_MS 10000

typedef struct {
   admin_t *a;
   relay_mqtt_t *mqtt;
   int64_t sent, acked, started_us;
   int64_t window;     /* the in-flight window last in effect (reported with --json) */
   const char *failed; /* why publishing stopped, or NULL */
   int64_t expired;    /* events skipped: their expiresAt passed (--expired-events) */
} replay_t;

static bson_t *
cursor_opts(admin_t *a, const char *coll, int64_t now, bson_error_t *error)
{
   bson_t *opts = bson_new();
   int64_t ms;

   BSON_APPEND_UTF8(opts, "collection", coll);
   if (a->has_entity) {
      BSON_APPEND_VALUE(opts, "entityId", &a->entity);
   }
   if (a->event_id) {
      BSON_APPEND_UTF8(opts, "eventId", a->event_id);
   }
   if (a->type) {
      BSON_APPEND_UTF8(opts, "type", a->type);
   }
   for (int i = 0; i < 2; i++) {
      const char *text = i == 0 ? a->since : a->until;
      if (!text) {
         continue;
      }
      if (!admin_parse_time(text, now, &ms)) { /* checked by args.c already */
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "--%s: '%s'",
                        i == 0 ? "since" : "until", text);
         bson_destroy(opts);
         return NULL;
      }
      BSON_APPEND_DATE_TIME(opts, i == 0 ? "since" : "until", ms);
   }
   return opts;
}

/* The archived event as the stored event it was: every field of the contract's EVENT rows
 * the entry holds (the id from its _id; binary data, contentType and expiresAt included),
 * parsed as the relay parses it. */
static bool
as_event(const outbox_archived_event_t *e, bson_t *doc, relay_event_t *ev)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);
   bson_value_t value;
   bson_iter_t it;

   bson_init(doc);
   BSON_APPEND_UTF8(doc, "id", e->event_id ? e->event_id : "");
   for (size_t i = 0; i < n; i++) {
      const char *name = rules[i].name;
      if (rules[i].scope == OUTBOX_CONTRACT_EVENT && strcmp(name, "id") != 0 && e->entry &&
          bson_iter_init_find(&it, e->entry, name)) {
         bson_append_value(doc, name, -1, bson_iter_value(&it));
      }
   }
   value.value_type = BSON_TYPE_DOCUMENT;
   value.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   value.value.v_doc.data_len = doc->len;
   return relay_event_parse(&value, ev);
}

/* Collects completions until at most @max messages are outstanding (or @wait_ms passed). */
static void
settle(replay_t *r, int64_t max)
{
   relay_mqtt_completion_t done[REPLAY_BATCH];
   int64_t deadline = bson_get_monotonic_time() + (int64_t)REPLAY_CONNECT_MS * 1000;

   while (!r->failed && r->sent - r->acked > max) {
      size_t n = relay_mqtt_wait(r->mqtt, done, REPLAY_BATCH, 100);
      for (size_t i = 0; i < n; i++) {
         if (done[i].kind == RELAY_MQTT_ACK) {
            r->acked++;
         } else if (done[i].kind == RELAY_MQTT_FAIL || done[i].kind == RELAY_MQTT_LOST) {
            r->failed = "a publish failed or the broker connection was lost";
         }
      }
      if (n > 0) {
         deadline = bson_get_monotonic_time() + (int64_t)REPLAY_CONNECT_MS * 1000;
      } else if (bson_get_monotonic_time() > deadline) {
         r->failed = "the broker acknowledged nothing for 10 s";
      }
   }
}

/* Waits while publishing would go faster than --rate events per second. */
static void
pace(replay_t *r)
{
   if (r->a->rate > 0) {
      int64_t due = r->started_us + r->sent * 1000000 / r->a->rate;
      int64_t now = bson_get_monotonic_time();
      if (due > now) {
         usleep((useconds_t)(due - now));
      }
   }
}

/* Percent-encodes @s into a new string, as the relay's sender does once per name. */
static char *
encode(const char *s, size_t len)
{
   bson_string_t *out = bson_string_new(NULL);
   relay_percent_encode(out, s, len);
   return bson_string_free(out, false);
}

/* Renders one event with the relay's renderer (mqtt/message.h: the replayed message differs
 * from the live one only by the replay marker) and sends it. A message the relay could not
 * have sent either is skipped with its reason. */
static void
send_one(replay_t *r, const char *coll, const outbox_archived_event_t *e, const relay_event_t *ev)
{
   const relay_config_t *cfg = &r->a->cfg;
   size_t id_len;
   char *id = relay_render_id(e->entity_id, &id_len);
   /* The archive names a namespace by its label (targets.c): {db} and {collection} are the
    * real ones. */
   const admin_target_t *t = admin_target(r->a, coll);
   const char *db = t ? t->db : cfg->state_database;
   coll = t ? t->coll : coll;
   char *enc_id = encode(id, id_len), *enc_db = encode(db, strlen(db));
   char *enc_coll = encode(coll, strlen(coll));
   /* The partition the relay recorded, or the one it would compute (entries archived
    * without it). */
   int part = e->partition >= 0
                 ? e->partition
                 : relay_partition_of(relay_hash_value(e->entity_id), cfg->partitions);
   char part_s[24];
   relay_message_in_t in = {
      .vars = {.db = {enc_db, strlen(enc_db)},
               .collection = {enc_coll, strlen(enc_coll)},
               .id = {enc_id, strlen(enc_id)},
               .partition = {part_s, relay_format_int64(part, part_s)}},
      .subject = {id, id_len},
      .replay = true,
      .now_ms = relay_wall_ms(),
   };
   relay_message_t m;
   const char *why;

   relay_message_render(cfg, ev, &in, &m);
   if ((why = m.poison) || (why = relay_mqtt_check_size(r->mqtt, &m.msg))) {
      fprintf(stderr, "outbox-admin: skipping archived event %s: %s\n", ev->id, why);
   } else if (cfg->expired_mode != RELAY_EXPIRED_PUBLISH && relay_expiry_passed(ev, in.now_ms)) {
      r->expired++; /* worthless now (expiresAt), as the relay would not publish it */
   } else {
      pace(r);
      if (relay_mqtt_publish(r->mqtt, &m.msg, (uint64_t)r->sent + 1) != 0) {
         r->failed = "the MQTT client refused a publish";
      } else {
         r->sent++;
      }
   }
   relay_message_cleanup(&m);
   bson_free(enc_coll);
   bson_free(enc_db);
   bson_free(enc_id);
   bson_free(id);
}

/* Connects, waiting for the outcome. */
static bool
connect_broker(replay_t *r, bson_error_t *error)
{
   char client_id[64];
   relay_mqtt_completion_t done[8];
   int64_t deadline = bson_get_monotonic_time() + (int64_t)REPLAY_CONNECT_MS * 1000;
   uint8_t rnd[4];

   /* Never the pid alone: replays in separate PID namespaces (Kubernetes Jobs, where the
    * tool is pid 1) would share it and the broker would hand one's session to the other.
    * Never the relay's --client-id either: the broker would disconnect the relay. */
   if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
      uint32_t t = (uint32_t)bson_get_monotonic_time() ^ ((uint32_t)getpid() << 16);
      memcpy(rnd, &t, sizeof rnd);
   }
   bson_snprintf(client_id, sizeof client_id, "outbox-admin-replay-%02x%02x%02x%02x", rnd[0],
                 rnd[1], rnd[2], rnd[3]);
   /* The relay's client-id settings do not apply (relay_mqtt_new() would log "from --name"). */
   r->a->cfg.client_id_from_name = false;
   char *shown = relay_config_redact_uri(r->a->cfg.mqtt_uri);
   fprintf(stderr, "outbox-admin: replay connects to %s as client id '%s' (random per run)\n",
           shown, client_id);
   bson_free(shown);
   r->mqtt = relay_mqtt_new(&r->a->cfg, client_id, error);
   if (!r->mqtt || !relay_mqtt_connect(r->mqtt, error)) {
      return false;
   }
   while (bson_get_monotonic_time() < deadline) {
      size_t n = relay_mqtt_wait(r->mqtt, done, 8, 100);
      for (size_t i = 0; i < n; i++) {
         if (done[i].kind == RELAY_MQTT_CONNECTED) {
            return true;
         }
         if (done[i].kind == RELAY_MQTT_CONNECT_FAILED) {
            const char *why =
               relay_mqtt_connack_text(r->a->cfg.mqtt_version, done[i].code, done[i].reason);
            bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_MQTT, "cannot connect to %s: %s",
                           r->a->cfg.mqtt_uri, why ? why : "connection failed");
            return false;
         }
      }
   }
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_MQTT, "cannot connect to %s within 10 s",
                  r->a->cfg.mqtt_uri);
   return false;
}

/* Replays (or with --dry-run counts) the matching events of collection @coll. */
static int
replay_coll(replay_t *r, mongoc_collection_t *archive, const char *coll, int64_t now,
            int64_t *count)
{
   bson_error_t error;
   bson_t *opts = cursor_opts(r->a, coll, now, &error);
   outbox_archive_cursor_t *cur;
   const outbox_archived_event_t *e;
   int rc = EX_OK;

   if (!opts) {
      fprintf(stderr, "outbox-admin: %s\n", error.message);
      return EX_USAGE;
   }
   cur = outbox_archive_find(archive, opts, &error);
   while (cur && !r->failed && outbox_archive_cursor_next(cur, &e)) {
      bson_t doc;
      relay_event_t ev;
      if (r->a->limit > 0 && r->sent + *count >= r->a->limit) {
         break;
      }
      if (!as_event(e, &doc, &ev)) {
         fprintf(stderr, "outbox-admin: skipping archived event %s: %s\n",
                 e->event_id ? e->event_id : "(no id)", ev.reason);
      } else if (r->a->dry_run) {
         (*count)++;
      } else {
         /* The relay's window (--inflight-window, at most the broker's Receive Maximum):
          * above mosquitto's default of 20, paho stalls up to 1 s at a time. */
         r->window = (int64_t)relay_mqtt_window(r->a->cfg.inflight_window, r->a->cfg.qos,
                                                relay_mqtt_receive_max(r->mqtt));
         settle(r, r->window - 1);
         if (!r->failed) {
            send_one(r, coll, e, &ev);
         }
      }
      relay_event_cleanup(&ev);
      bson_destroy(&doc);
   }
   if (!cur || outbox_archive_cursor_error(cur, &error)) {
      rc = admin_fail(r->a->cfg.archive_collection, &error);
   }
   outbox_archive_cursor_destroy(cur);
   bson_destroy(opts);
   return rc;
}

static void
report(replay_t *r, int64_t count)
{
   admin_t *a = r->a;
   int64_t n = a->dry_run ? count : r->acked;
   if (a->json) {
      bson_t doc = BSON_INITIALIZER;
      BSON_APPEND_UTF8(&doc, "archive", a->cfg.archive_collection);
      BSON_APPEND_BOOL(&doc, "dryRun", a->dry_run);
      BSON_APPEND_INT64(&doc, a->dry_run ? "matching" : "replayed", n);
      if (r->window > 0) {
         BSON_APPEND_INT64(&doc, "inflightWindow", r->window);
      }
      if (r->expired) {
         BSON_APPEND_INT64(&doc, "expired", r->expired);
      }
      if (r->failed) {
         BSON_APPEND_UTF8(&doc, "error", r->failed);
      }
      admin_print_json(a->out, &doc);
      bson_destroy(&doc);
   } else if (a->dry_run) {
      fprintf(a->out, "%" PRId64 " archived events would be replayed\n", n);
   } else {
      fprintf(a->out, "replayed %" PRId64 " events\n", n);
      if (r->expired) {
         fprintf(a->out, "skipped %" PRId64 " expired events (expiresAt passed)\n", r->expired);
      }
   }
}

int
admin_replay_check(const admin_t *a)
{
   bson_error_t error;
   if (!a->cfg.archive_collection) {
      fprintf(stderr, "outbox-admin: replay needs --archive-collection (the relay's)\n");
      return EX_USAGE;
   }
   if (!a->dry_run && !a->cfg.mqtt_uri) {
      fprintf(stderr, "outbox-admin: replay needs --mqtt-uri (the relay's) or --dry-run\n");
      return EX_USAGE;
   }
   /* What the relay refuses to start with (a '$' topic, TLS files without a TLS URI ...) is
    * refused here too, with the relay's exit status, before anything connects. */
   if (!a->dry_run && !relay_config_check_publishing(&a->cfg, &error)) {
      fprintf(stderr, "outbox-admin: %s\n", error.message);
      return EX_CONFIG;
   }
   /* The relay's TLS checks (mqtt/tls.h): a bad file is named, not a paho number. */
   if (!a->dry_run && !relay_tls_check_files(&a->cfg, RELAY_TLS_WARN_DAYS, NULL, &error)) {
      fprintf(stderr, "outbox-admin: %s\n", error.message);
      return EX_CONFIG;
   }
   return EX_OK;
}

int
admin_replay(admin_t *a)
{
   replay_t r = {.a = a};
   bson_error_t error;
   mongoc_client_t *client;
   mongoc_collection_t *archive;
   int64_t now, count = 0;
   int rc = EX_OK;

   if (!admin_server_now(a, &now, &error)) {
      return admin_fail("MongoDB", &error);
   }
   if (!a->dry_run && !connect_broker(&r, &error)) {
      fprintf(stderr, "outbox-admin: MQTT: %s\n", error.message);
      relay_mqtt_destroy(r.mqtt);
      return EX_UNAVAILABLE;
   }
   client = mongoc_client_pool_pop(a->pool);
   archive = mongoc_client_get_collection(client, a->cfg.state_database, a->cfg.archive_collection);
   r.started_us = bson_get_monotonic_time();
   for (size_t i = 0; i < a->n_targets && rc == EX_OK && !r.failed; i++) {
      rc = replay_coll(&r, archive, a->targets[i].label, now, &count);
   }
   mongoc_collection_destroy(archive);
   mongoc_client_pool_push(a->pool, client);
   if (r.mqtt) {
      settle(&r, 0);
      relay_mqtt_disconnect(r.mqtt, 5000);
      relay_mqtt_destroy(r.mqtt);
   }
   report(&r, count);
   if (r.failed) {
      fprintf(stderr, "outbox-admin: replay stopped after %" PRId64 " events: %s\n", r.acked,
              r.failed);
      rc = rc == EX_OK ? EX_UNAVAILABLE : rc;
   }
   return rc;
}
