/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * See message.h: the one renderer of an event into an MQTT message, for the relay and for
 * outbox-admin replay. Pure functions over the caller's structs: any thread.
 */
#include "mqtt/message.h"

#include <string.h>

#include "contract-private.h" /* liboutbox: the MESSAGE rules and their reasons */

/* The contract's MESSAGE rule @id: its reason, and its accepted form's maximum. */
static const outbox_contract_rule_t *
rule(_outbox_rule_id_t id)
{
   return _outbox_contract_row(id);
}

static bool
props_fit(const char *const *props, size_t n, int64_t max)
{
   for (size_t i = 0; i < n; i++) {
      if ((int64_t)strlen(props[i]) > max) {
         return false;
      }
   }
   return true;
}

/* The relay's own user properties and, in binary mode, the CloudEvents attributes. */
static size_t
own_props(const relay_config_t *cfg, const relay_event_t *ev, relay_message_t *m,
          relay_str_t entity, bool binary)
{
   const char **p = m->props;
   size_t n = 0;

   if (cfg->user_properties & RELAY_PROP_EVENT_ID) {
      p[n++] = "event-id", p[n++] = ev->id;
   }
   if (cfg->user_properties & RELAY_PROP_EVENT_TYPE) {
      p[n++] = "event-type", p[n++] = ev->type;
   }
   if (cfg->user_properties & RELAY_PROP_ENTITY_ID) {
      /* Percent-encoded like the topic: user properties are MQTT text, an id anything. */
      p[n++] = "entity-id", p[n++] = entity.str;
   }
   /* In binary mode seq is also the CloudEvents extension attribute: always sent there. */
   if ((cfg->user_properties & RELAY_PROP_SEQ) || binary) {
      p[n++] = "seq", p[n++] = m->seq;
   }
   if (binary) {
      /* CloudEvents MQTT binding, binary mode: attributes as user properties. */
      p[n++] = "specversion", p[n++] = "1.0";
      p[n++] = "id", p[n++] = ev->id;
      p[n++] = "source", p[n++] = m->source;
      p[n++] = "type", p[n++] = ev->type;
      p[n++] = "subject", p[n++] = entity.str;
      if (ev->has_time) {
         relay_format_time(ev->time_ms, m->time, sizeof m->time);
         p[n++] = "time", p[n++] = m->time;
      }
   }
   return n;
}

/* The contract's MESSAGE rules, in the order the relay has always applied them. */
static const char *
poison(const relay_config_t *cfg, const relay_message_t *m, size_t n)
{
   if (!m->payload) {
      /* libbson's JSON writer refuses invalid UTF-8 (in the entity id, the subject, or the
       * data): sending would publish an empty payload and then clear the event. */
      return rule(_OUTBOX_RULE_MESSAGE_PAYLOAD)->reason;
   }
   if ((int64_t)m->topic_len > rule(_OUTBOX_RULE_MESSAGE_TOPIC)->accepted.max) {
      return rule(_OUTBOX_RULE_MESSAGE_TOPIC)->reason;
   }
   if (cfg->mqtt_version == 5 &&
       !props_fit(m->props, n, rule(_OUTBOX_RULE_MESSAGE_USER_PROPERTY)->accepted.max)) {
      return rule(_OUTBOX_RULE_MESSAGE_USER_PROPERTY)->reason;
   }
   if (m->payload_len + m->topic_len > cfg->max_message_bytes) {
      return rule(_OUTBOX_RULE_MESSAGE_SIZE)->reason;
   }
   return NULL;
}

void
relay_message_render(const relay_config_t *cfg, const relay_event_t *ev,
                     const relay_message_in_t *in, relay_message_t *m)
{
   bool binary = cfg->payload_mode == RELAY_PAYLOAD_BINARY && cfg->mqtt_version == 5;
   relay_template_vars_t vars = in->vars;
   size_t n;

   memset(m, 0, sizeof *m);
   vars.type = (relay_str_t){ev->type, strlen(ev->type)};
   m->topic = relay_template_render_encoded(cfg->topic_template, &vars, &m->topic_len);
   m->source = relay_template_render_encoded(cfg->source_template, &vars, &(size_t){0});
   relay_headers_read(ev, &m->headers);
   if (binary && ev->bin) {
      /* Binary data in binary mode: the bytes themselves (the CloudEvents MQTT binding). */
      m->payload = bson_malloc(ev->bin_len ? ev->bin_len : 1);
      memcpy(m->payload, ev->bin, ev->bin_len);
      m->payload_len = ev->bin_len;
   } else {
      m->payload = binary ? relay_data_json(ev, &m->payload_len)
                          : relay_cloudevent_json_marked(ev, m->source, in->subject, &m->headers,
                                                         in->replay, &m->payload_len);
   }
   relay_format_int64(ev->seq, m->seq);
   n = own_props(cfg, ev, m, vars.id, binary);
   n = relay_headers_append_props(&m->headers, m->props, n);
   if (in->replay) {
      m->props[n++] = OUTBOX_CONTRACT_REPLAY_MARKER, m->props[n++] = "true";
   }
   m->msg = (relay_mqtt_message_t){
      .topic = m->topic,
      .payload = m->payload,
      .payload_len = m->payload_len,
      .content_type = binary ? relay_event_content_type(ev) : "application/cloudevents+json",
      .user_props = m->props,
      .n_user_props = n / 2,
      .expiry_s = relay_expiry_interval(cfg, ev, in->now_ms),
      /* JSON text, except binary data's own bytes in binary mode. */
      .payload_format = binary && ev->bin ? RELAY_PAYLOAD_FORMAT_BYTES : RELAY_PAYLOAD_FORMAT_UTF8,
   };
   m->poison = poison(cfg, m, n);
}

void
relay_message_cleanup(relay_message_t *m)
{
   if (!m) {
      return;
   }
   bson_free(m->topic);
   bson_free(m->payload);
   bson_free(m->source);
   memset(m, 0, sizeof *m);
}
