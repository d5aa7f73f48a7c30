/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's state: the components and the threads it connects. Private to relay.c, the
 * only file that knows every component (each of the others is handed what it needs), and to
 * relay-ops.c, the ops tables relay.c hands them. Every
 * field is touched by the main thread only, except @stop; the reader (reader.c), the clearer
 * (clearer.c), the scanner (scanner.c), the lease thread (group/lease.c) and paho have their
 * own threads and talk to the main thread through queues.
 */
#ifndef RELAY_PRIVATE_H
#define RELAY_PRIVATE_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "store/clearer.h"
#include "store/scanner.h"
#include "config/config.h"
#include "group/group.h"
#include "http/metrics.h"
#include "mqtt/mqtt.h"
#include "mqtt/publish.h"
#include "publish/publisher.h"
#include "relay.h"
#include "store/store.h"
#include "store/writer.h"
#include "stream/ingest.h"
#include "stream/namespaces.h"
#include "stream/reader.h"
#include "stream/table.h"
#include "util/util.h"

struct relay_t {
   const relay_config_t *cfg;
   relay_metrics_t *metrics;
   atomic_int stop;

   mongoc_client_t *client;
   relay_namespaces_t *ns;   /* the watched set (stream/namespaces.h) */
   relay_ns_handles_t colls; /* the main thread's handles, by namespace index */
   mongoc_collection_t *state;

   relay_mqtt_t *mqtt;
   relay_sender_t *sender;       /* events into messages (mqtt/publish.h) */
   relay_publisher_t *publisher; /* the window, admission, suspects (publish/publisher.h) */
   relay_table_t table;

   /* The partition owner: which partitions this member owns, the gate (group/group.h). */
   relay_group_t *group;
   relay_lease_t *lease; /* the lease thread (group/lease.h) */
   bool fatal;           /* the group said this process cannot join: stop with exit_code */

   /* Change stream and sweeps: read on the reader's thread, applied by ingest. */
   relay_reader_t *reader;
   relay_ingest_t *ingest; /* the held change, verifying, the sweep (stream/ingest.h) */

   /* Writes. */
   relay_clearer_t *clearer;
   relay_scanner_t *scanner; /* NULL when --pending-scan-interval-ms is 0 */
   relay_writer_t *writer;   /* clears, dead letters, when a checkpoint is due (writer.h) */

   int exit_code; /* relay_run()'s result when it stops by itself (EX_OK otherwise) */
};

/* relay-ops.c: what relay.c hands each component (its context: the relay_t). */
extern const relay_writer_ops_t relay_ops_writer;
extern const relay_admission_ops_t relay_ops_admission;
extern const relay_group_ops_t relay_ops_group;
extern const relay_ingest_ops_t relay_ops_ingest;
extern const relay_link_ops_t relay_ops_link;

#endif /* RELAY_PRIVATE_H */
