/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `replay`: publishes archived events (--archive-collection, outbox/archive.h) again, as the
 * relay published them (its --topic, --source, --qos, --payload-mode, --user-properties,
 * --mqtt-* options and MQTT client), with a marker consumers can see: the CloudEvents extension
 * attribute "replay": true (attribute names are lowercase letters and digits; in binary mode
 * an attribute is a user property) and, with MQTT 5, the user property replay=true.
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
#include <unistd.h>

#include "admin/admin.h"
#include "util/error.h"
#include "admin/args.h"
#include "group/hash.h"
#include "base/partition.h"
#include "mqtt/headers.h"
#include "mqtt/mqtt.h"
#include "mqtt/render.h"
#include "stream/event.h"

/* Messages handed to paho and not yet acknowledged, at most. */
#define REPLAY_WINDOW 64
#define REPLAY_CONNECT_MS 10000

typedef struct {
   admin_t *a;
   relay_mqtt_t *mqtt;
   int64_t sent, acked, started_us;
   const char *failed; /* why publishing stopped, or NULL */
} replay_t;

/* RFC 3339 UTC ("2026-11-20T10:00:00Z", optional fraction) or an age ("2h": that long before
 * the server's @now). */
static bool
parse_time(const char *text, int64_t now, int64_t *ms)
{
   struct tm tm = {0};
   int64_t age;
   const char *rest = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);

   if (rest) {
      int64_t frac = 0, scale = 1000;
      if (*rest == '.') {
         for (rest++; *rest >= '0' && *rest <= '9'; rest++) {
            if (scale > 1) {
               scale /= 10;
               frac += (*rest - '0') * scale;
            }
         }
      }
      if (strcmp(rest, "Z") != 0) {
         return false;
      }
      *ms = (int64_t)timegm(&tm) * 1000 + frac;
      return true;
   }
   if (admin_parse_age(text, &age)) {
      *ms = now - age;
      return true;
   }
   return false;
}

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
      if (!parse_time(text, now, &ms)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                        "--%s: expected 2026-11-20T10:00:00Z or an age like 2h, "
                        "got '%s'",
                        i == 0 ? "since" : "until", text);
         bson_destroy(opts);
         return NULL;
      }
      BSON_APPEND_DATE_TIME(opts, i == 0 ? "since" : "until", ms);
   }
   return opts;
}

/* The archived event as the stored event it was ({id, seq, type, time, data, headers}),
 * parsed as the relay parses it. */
static bool
as_event(const outbox_archived_event_t *e, bson_t *doc, relay_event_t *ev)
{
   bson_value_t value;

   bson_init(doc);
   BSON_APPEND_UTF8(doc, "id", e->event_id ? e->event_id : "");
   BSON_APPEND_INT64(doc, "seq", e->seq);
   BSON_APPEND_UTF8(doc, "type", e->type ? e->type : "");
   BSON_APPEND_DATE_TIME(doc, "time", e->time_ms);
   BSON_APPEND_DOCUMENT(doc, "data", e->data);
   if (!bson_empty(e->headers)) {
      BSON_APPEND_DOCUMENT(doc, "headers", e->headers);
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
   relay_mqtt_completion_t done[REPLAY_WINDOW];
   int64_t deadline = bson_get_monotonic_time() + (int64_t)REPLAY_CONNECT_MS * 1000;

   while (!r->failed && r->sent - r->acked > max) {
      size_t n = relay_mqtt_wait(r->mqtt, done, REPLAY_WINDOW, 100);
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

/* The user properties the relay sends for @ev (its --user-properties; in binary mode the
 * CloudEvents attributes too), plus the marker replay=true. Returns the number of pairs. */
static size_t
replay_props(const relay_config_t *cfg, const relay_event_t *ev, const char *entity,
             const char *seq, const char *source, const char *time, bool binary, const char **props)
{
   size_t n = 0;
   if (cfg->user_properties & RELAY_PROP_EVENT_ID) {
      props[n++] = "event-id", props[n++] = ev->id;
   }
   if (cfg->user_properties & RELAY_PROP_EVENT_TYPE) {
      props[n++] = "event-type", props[n++] = ev->type;
   }
   if (cfg->user_properties & RELAY_PROP_ENTITY_ID) {
      props[n++] = "entity-id", props[n++] = entity;
   }
   if ((cfg->user_properties & RELAY_PROP_SEQ) || binary) {
      props[n++] = "seq", props[n++] = seq;
   }
   if (binary) {
      props[n++] = "specversion", props[n++] = "1.0";
      props[n++] = "id", props[n++] = ev->id;
      props[n++] = "source", props[n++] = source;
      props[n++] = "type", props[n++] = ev->type;
      props[n++] = "subject", props[n++] = entity;
      props[n++] = "time", props[n++] = time;
   }
   props[n++] = "replay", props[n++] = "true";
   return n / 2;
}

/* The payload as the relay would send it, with the marker: in structured mode the attribute
 * "replay": true first in the CloudEvents object; in binary mode the data alone (the marker
 * is the user property). NULL when it cannot be written as JSON. */
static char *
replay_payload(const relay_event_t *ev, const char *source, relay_str_t subject,
               const relay_headers_t *headers, bool binary, size_t *len)
{
   char *json, *marked;
   if (binary) {
      return relay_data_json(ev, len);
   }
   if (!(json = relay_cloudevent_json(ev, source, subject, headers, len))) {
      return NULL;
   }
   marked = bson_strdup_printf("{\"replay\":true,%s", json + 1);
   *len += strlen("\"replay\":true,");
   bson_free(json);
   return marked;
}

/* Renders and sends one event with the replay marker, as the relay renders it. */
static void
send_one(replay_t *r, const char *coll, const outbox_archived_event_t *e, const relay_event_t *ev)
{
   const relay_config_t *cfg = &r->a->cfg;
   bool binary = cfg->payload_mode == RELAY_PAYLOAD_BINARY && cfg->mqtt_version == 5;
   size_t id_len, len = 0;
   char *id = relay_render_id(e->entity_id, &id_len);
   bson_string_t *encoded = bson_string_new(NULL);
   /* The partition the relay recorded, or the one it would compute (entries archived
    * without it). */
   int part = e->partition >= 0
                 ? e->partition
                 : relay_partition_of(relay_hash_value(e->entity_id), cfg->partitions);
   char part_s[24];
   relay_template_vars_t vars = {{cfg->database, strlen(cfg->database)},
                                 {coll, strlen(coll)},
                                 {id, id_len},
                                 {ev->type, strlen(ev->type)},
                                 {part_s, relay_format_int64(part, part_s)}};
   char *topic = relay_template_render(cfg->topic_template, &vars);
   char *source = relay_template_render(cfg->source_template, &vars);
   relay_headers_t headers;
   relay_headers_read(ev, &headers);
   char *payload = replay_payload(ev, source, (relay_str_t){id, id_len}, &headers, binary, &len);
   char seq[24], tbuf[40];
   const char *props[2 * RELAY_MQTT_MAX_USER_PROPS];
   relay_mqtt_message_t msg = {
      topic, payload, len, binary ? "application/json" : "application/cloudevents+json", props, 0};

   relay_percent_encode(encoded, id, id_len);
   relay_format_int64(ev->seq, seq);
   relay_format_time(ev->time_ms, tbuf, sizeof tbuf);
   msg.n_user_props = replay_props(cfg, ev, encoded->str, seq, source, tbuf, binary, props);
   msg.n_user_props = relay_headers_append_props(&headers, props, 2 * msg.n_user_props) / 2;
   if (!payload) {
      r->failed = "an archived event cannot be written as JSON";
   } else {
      pace(r);
      if (relay_mqtt_publish(r->mqtt, &msg, (uint64_t)r->sent + 1) != 0) {
         r->failed = "the MQTT client refused a publish";
      } else {
         r->sent++;
      }
   }
   bson_free(payload);
   bson_free(topic);
   bson_free(source);
   bson_string_free(encoded, true);
   bson_free(id);
}

/* Connects, waiting for the outcome. */
static bool
connect_broker(replay_t *r, bson_error_t *error)
{
   char client_id[64];
   relay_mqtt_completion_t done[8];
   int64_t deadline = bson_get_monotonic_time() + (int64_t)REPLAY_CONNECT_MS * 1000;

   bson_snprintf(client_id, sizeof client_id, "outbox-admin-replay-%d", (int)getpid());
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
         settle(r, REPLAY_WINDOW - 1);
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
      if (r->failed) {
         BSON_APPEND_UTF8(&doc, "error", r->failed);
      }
      admin_print_json(a->out, &doc);
      bson_destroy(&doc);
   } else if (a->dry_run) {
      fprintf(a->out, "%" PRId64 " archived events would be replayed\n", n);
   } else {
      fprintf(a->out, "replayed %" PRId64 " events\n", n);
   }
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

   if (!a->cfg.archive_collection) {
      fprintf(stderr, "outbox-admin: replay needs --archive-collection (the relay's)\n");
      return EX_USAGE;
   }
   if (!a->dry_run && !a->cfg.mqtt_uri) {
      fprintf(stderr, "outbox-admin: replay needs --mqtt-uri (the relay's) or --dry-run\n");
      return EX_USAGE;
   }
   if (!admin_server_now(a, &now, &error)) {
      return admin_fail("MongoDB", &error);
   }
   if (!a->dry_run && !connect_broker(&r, &error)) {
      fprintf(stderr, "outbox-admin: MQTT: %s\n", error.message);
      relay_mqtt_destroy(r.mqtt);
      return EX_UNAVAILABLE;
   }
   client = mongoc_client_pool_pop(a->pool);
   archive = mongoc_client_get_collection(client, a->cfg.database, a->cfg.archive_collection);
   r.started_us = bson_get_monotonic_time();
   for (size_t i = 0; i < a->cfg.n_collections && rc == EX_OK && !r.failed; i++) {
      rc = replay_coll(&r, archive, a->cfg.collections[i], now, &count);
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
