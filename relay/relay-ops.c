/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The ops tables relay.c hands its components (the nng pattern: a component calls through
 * the table it was given, never a sibling by name). Each adapts what one component needs to
 * the thread, client or component that serves it; the context is always the relay_t. Part of
 * relay.c's job, kept apart so that relay.c reads as the components and the loop. Main
 * thread only, like the components that call them.
 */
#include <mongoc/mongoc.h>

#include "group/probe.h"
#include "relay-private.h"

/* The writer's world (store/writer.h): the clearer thread and the collections. */
static relay_clear_job_t *
writer_take(void *ctx)
{
   return relay_clearer_take(((relay_t *)ctx)->clearer);
}

static void
writer_submit(void *ctx, relay_clear_job_t *job)
{
   relay_clearer_submit(((relay_t *)ctx)->clearer, job);
}

static bool
writer_busy(void *ctx)
{
   return relay_clearer_busy(((relay_t *)ctx)->clearer);
}

static bool
writer_update_one(void *ctx, int coll, const bson_t *query, const bson_t *update, bson_t *reply,
                  bson_error_t *error)
{
   relay_t *r = ctx;
   return mongoc_collection_update_one(relay_ns_handle(&r->colls, r->ns, r->client, coll), query,
                                       update, NULL, reply, error);
}

const relay_writer_ops_t relay_ops_writer = {
   .take = writer_take,
   .submit = writer_submit,
   .busy = writer_busy,
   .update_one = writer_update_one,
};

/* Who may publish (publish/publisher.h): nothing while MongoDB refuses the writes (what went
 * out could not be cleared), and an entity only through its partition's gate. */
static bool
admission_open(void *ctx)
{
   return !relay_writer_refused(((relay_t *)ctx)->writer);
}

static bool
admission_admit(void *ctx, relay_entity_t *e)
{
   return relay_gate_admit(((relay_t *)ctx)->group, e);
}

static bool
admission_keep_failed(void *ctx, relay_entity_t *e)
{
   return relay_gate_keep_failed(((relay_t *)ctx)->group, e);
}

const relay_admission_ops_t relay_ops_admission = {
   .open = admission_open,
   .admit = admission_admit,
   .keep_failed = admission_keep_failed,
};

/* The partition owner's world (group/group.h): the lease thread, and the server's hashing. */
static relay_lease_event_t *
group_pop(void *ctx)
{
   return relay_lease_pop(((relay_t *)ctx)->lease);
}

static bool
group_may_publish(void *ctx, int part)
{
   return relay_lease_may_publish(((relay_t *)ctx)->lease, part);
}

static void
group_drained(void *ctx, int part, int64_t epoch)
{
   relay_lease_drained(((relay_t *)ctx)->lease, part, epoch);
}

static void
group_set_eligible(void *ctx, bool eligible)
{
   relay_lease_set_eligible(((relay_t *)ctx)->lease, eligible);
}

static void
group_checkpoint(void *ctx, const bson_t *token, const relay_partset_t *valid,
                 const int64_t *epochs)
{
   relay_lease_checkpoint(((relay_t *)ctx)->lease, token, valid, epochs);
}

static int
group_probe(void *ctx)
{
   return relay_group_probe(((relay_t *)ctx)->state);
}

const relay_group_ops_t relay_ops_group = {
   .pop = group_pop,
   .may_publish = group_may_publish,
   .drained = group_drained,
   .set_eligible = group_set_eligible,
   .checkpoint = group_checkpoint,
   .probe = group_probe,
};

/* Ingest's world (stream/ingest.h): the reader thread, and the store's reads and sweeps. */
static relay_change_t *
ingest_pop(void *ctx)
{
   return relay_reader_pop(((relay_t *)ctx)->reader);
}

static uint64_t
ingest_start(void *ctx, const bson_t *token, const relay_ts_t *at)
{
   return relay_reader_start(((relay_t *)ctx)->reader, token, at);
}

static void
ingest_stop(void *ctx)
{
   relay_reader_stop(((relay_t *)ctx)->reader);
}

static bool
ingest_read_entity(void *ctx, int coll, const bson_value_t *id, const relay_ts_t *after,
                   bson_t *doc, relay_ts_t *seen, bson_error_t *error)
{
   relay_t *r = ctx;
   return relay_store_read_entity(relay_ns_handle(&r->colls, r->ns, r->client, coll), r->cfg, id,
                                  after, doc, seen, error);
}

static bool
ingest_ensure_index(void *ctx, int coll, bson_error_t *error)
{
   relay_t *r = ctx;
   return relay_store_ensure_index(relay_ns_handle(&r->colls, r->ns, r->client, coll), r->cfg,
                                   error);
}

static bool
ingest_operation_time(void *ctx, relay_ts_t *ts, bson_error_t *error)
{
   return relay_store_operation_time(((relay_t *)ctx)->client, ts, error);
}

static bool
ingest_wait_majority(void *ctx, int coll, const relay_ts_t *after, bson_error_t *error)
{
   relay_t *r = ctx;
   return relay_store_wait_majority(relay_ns_handle(&r->colls, r->ns, r->client, coll), r->cfg,
                                    after, error);
}

static void *
ingest_sweep_open(void *ctx, int coll, bool hint, const relay_ts_t *after,
                  const relay_partset_t *parts, int n)
{
   relay_t *r = ctx;
   return relay_store_sweep_cursor_in(relay_ns_handle(&r->colls, r->ns, r->client, coll), r->cfg,
                                      hint, after, parts, n);
}

static bool
ingest_sweep_next(void *ctx, void *cursor, const bson_t **doc)
{
   if (!mongoc_cursor_next(cursor, doc)) {
      return false;
   }
   relay_store_sweep_pace(cursor, *doc);
   return true;
}

static bool
ingest_sweep_error(void *ctx, void *cursor, bson_error_t *error)
{
   return mongoc_cursor_error(cursor, error);
}

static void
ingest_sweep_close(void *ctx, void *cursor)
{
   mongoc_cursor_destroy(cursor);
}

static bool
ingest_list_namespaces(void *ctx, bson_error_t *error)
{
   relay_t *r = ctx;
   return relay_namespaces_list(r->ns, r->client, error);
}

const relay_ingest_ops_t relay_ops_ingest = {
   .pop = ingest_pop,
   .start = ingest_start,
   .stop = ingest_stop,
   .read_entity = ingest_read_entity,
   .ensure_index = ingest_ensure_index,
   .operation_time = ingest_operation_time,
   .wait_majority = ingest_wait_majority,
   .sweep_open = ingest_sweep_open,
   .sweep_next = ingest_sweep_next,
   .sweep_error = ingest_sweep_error,
   .sweep_close = ingest_sweep_close,
   .list_namespaces = ingest_list_namespaces,
};

/* The publisher's link: messages rendered by the sender, handed to the MQTT client. */
static int
link_send(void *ctx, relay_entity_t *e, uint64_t tag, const char **poison)
{
   return relay_sender_send(((relay_t *)ctx)->sender, e, tag, poison);
}

static int
link_receive_max(void *ctx)
{
   return relay_mqtt_receive_max(((relay_t *)ctx)->mqtt);
}

static bool
link_connect(void *ctx, bson_error_t *error)
{
   return relay_mqtt_connect(((relay_t *)ctx)->mqtt, error);
}

static void
link_clean_session(void *ctx)
{
   relay_mqtt_clean_session(((relay_t *)ctx)->mqtt);
}

static int
link_last_disconnect_reason(void *ctx)
{
   return relay_mqtt_last_disconnect_reason(((relay_t *)ctx)->mqtt);
}

const relay_link_ops_t relay_ops_link = {
   .send = link_send,
   .receive_max = link_receive_max,
   .connect = link_connect,
   .clean_session = link_clean_session,
   .last_disconnect_reason = link_last_disconnect_reason,
};
