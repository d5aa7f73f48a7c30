/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's configuration: every option can be given as a command-line flag
 * (--mongodb-uri URI), an environment variable (OUTBOX_MONGODB_URI) and a key of a JSON
 * config file ({"mongodb-uri": "..."}, the flag's name without dashes in front). Flags win
 * over the environment, the environment over the file, the file over the defaults.
 *
 * relay_config_t is a plain struct: after relay_config_load() succeeded, code reads the
 * fields directly and must not modify them. All strings are owned by the struct and freed by
 * relay_config_destroy(). Not thread-safe to modify; safe to read from any thread.
 *
 * Adding an option: a field here, its default in relay_config_init_defaults() and a row in
 * relay_opts (config-table.c). The row gives it its flag, variable, config-file key,
 * validation, --help text and --check-config line, and makes relay_config_destroy() free it.
 * Document it in outbox-relay.1 too (a test checks that every option is there).
 */
#ifndef RELAY_CONFIG_H
#define RELAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <bson/bson.h>

#include "util/log.h"

typedef enum {
   RELAY_PAYLOAD_STRUCTURED = 0, /* CloudEvents JSON, application/cloudevents+json */
   RELAY_PAYLOAD_BINARY,         /* attributes as MQTT 5 user properties, data as payload */
} relay_payload_mode_t;

/* The relay's own MQTT 5 user properties (--user-properties), as bits. */
enum {
   RELAY_PROP_EVENT_ID = 1,   /* "event-id": the event id */
   RELAY_PROP_EVENT_TYPE = 2, /* "event-type": the event type */
   RELAY_PROP_ENTITY_ID = 4,  /* "entity-id": the rendered entity id, percent-encoded */
   RELAY_PROP_SEQ = 8,        /* "seq": the event's seq in decimal */
   RELAY_PROP_ALL = 15,
};

/* What happens to an event whose expiry (expiresAt, or --message-expiry) has passed before it
 * is published (--expired-events). */
typedef enum {
   RELAY_EXPIRED_DROP = 0,    /* cleared without publishing (archived when an archive is set) */
   RELAY_EXPIRED_DEAD_LETTER, /* moved to the dead letters */
   RELAY_EXPIRED_PUBLISH,     /* published anyway, without an expiry interval */
} relay_expired_t;

typedef struct relay_config_t {
   /* MongoDB: everything else (TLS, auth, timeouts, read/write concern) goes in the URI. */
   char *mongodb_uri;
   char *database;     /* --database: the database of --collection, may be NULL */
   char **collections; /* n_collections names of --database */
   size_t n_collections;
   char **namespaces; /* --namespace patterns as given (config/namespace.h) */
   size_t n_namespaces;
   char *state_database; /* state, leases, archive; set after loading (never NULL then) */
   /* After loading: every pattern watched, --database + --collection first as DB.COLL,
    * then --namespace; at least one unless mongodb_only. */
   char **watch;
   size_t n_watch;
   /* Names a lower layer (config file, environment) listed and a --collection flag replaced:
    * still the config's outbox collections, which no --archive-collection may name. */
   char **replaced_collections;
   size_t n_replaced_collections;

   /* MQTT. */
   char *mqtt_uri;           /* tcp://, ssl://, mqtt://, mqtts://, ws://, wss:// */
   char *topic_template;     /* "outbox/{collection}/{id}"; also {db}, {type} */
   char *source_template;    /* CloudEvents "source": "/{db}/{collection}"; same placeholders */
   int qos;                  /* 0, 1 (default) or 2 */
   int mqtt_version;         /* 5 (default) or 4 (3.1.1) */
   char *name;               /* relay name, "outbox-relay": relays with one name form a group */
   char *client_id;          /* MQTT client id; defaults to name (see client_id_from_name) */
   bool client_id_from_name; /* not given: each process connects as "<name>-<8 hex>" */
   relay_payload_mode_t payload_mode;
   unsigned user_properties;     /* RELAY_PROP_* bits, RELAY_PROP_ALL by default */
   char *mqtt_ca_file;           /* PEM CA bundle; NULL = system default store */
   char *mqtt_cert_file;         /* client certificate (PEM) */
   char *mqtt_key_file;          /* client private key (PEM) */
   char *mqtt_key_password;      /* passphrase of an encrypted key; never logged or a flag */
   char *mqtt_key_password_file; /* where mqtt_key_password was read from, or NULL */
   bool mqtt_tls_insecure;       /* true disables hostname verification (false = verify) */
   char *mqtt_username;
   char *mqtt_password;      /* never logged: relay_config_dump() shows "***" */
   char *mqtt_password_file; /* where mqtt_password was read from, or NULL */
   bool mqtt_clean_start;
   int mqtt_keepalive_s;
   char *message_expiry;         /* NULL: none; "90s", "12h" ... (config/expiry.c) */
   int64_t message_expiry_s;     /* message_expiry in seconds after loading, 0: none */
   char *expired_events;         /* "drop" (default), "dead-letter" or "publish" */
   relay_expired_t expired_mode; /* expired_events after loading */
   int max_publish_rate;         /* events per second at most; 0: no limit (the default) */
   bool topic_aliases;           /* MQTT 5 Topic Aliases (mqtt/aliases.h); off by default */

   /* The stored contract (see outbox.h): names of the bookkeeping fields. */
   char *state_collection;   /* "outbox_relay_state" */
   char *version_field;      /* "version" */
   char *event_seq_field;    /* "eventSeq" */
   char *events_field;       /* "events" */
   char *dead_letters_field; /* "deadLetters" */
   char *requeues_field;     /* "requeues": incremented by a requeue (outbox-admin, liboutbox) */

   /* Flow control and timing. */
   int inflight_window;          /* 256: unacknowledged publishes at most */
   int max_buffered_events;      /* 10000: read from the stream but not yet cleared */
   size_t max_buffered_bytes;    /* 32 MiB: the BSON size of those events */
   int clear_batch_size;         /* 500: acknowledged events cleared per round-trip at most */
   int clear_interval_ms;        /* 20: how long acknowledgements are collected before a clear */
   int checkpoint_interval_ms;   /* 1000 */
   int shutdown_timeout_ms;      /* 10000: wait for acknowledgements on SIGTERM at most */
   size_t max_message_bytes;     /* 268435455: larger messages are dead-lettered */
   int publish_timeout_ms;       /* 30000: unacknowledged this long, the connection is dropped */
   int reconnect_min_ms;         /* 100 */
   int reconnect_max_ms;         /* 10000 */
   int pending_scan_interval_ms; /* 30000: count stored pending events and dead letters; 0 off */

   /* Groups (relays with the same name share the partitions through leases). */
   int partitions;         /* 32: fixed for a group */
   int lease_ttl_ms;       /* 10000: a lease expires this long after its last renewal */
   int lease_renew_ms;     /* 2000: how often leases are renewed */
   int lease_margin_ms;    /* 2000: stop publishing this long before the lease could expire */
   char *lease_collection; /* NULL: the state collection */

   /* The archive of published events (outbox/archive.h): written before each clear. */
   char *archive_collection; /* NULL: no archive (the default) */
   char *archive_ttl;        /* NULL: kept for ever; "30d", "12h" ... (config/archive.c) */
   int64_t archive_ttl_s;    /* archive_ttl in seconds after loading, 0: none */

   /* Operations. */
   char *metrics_listen; /* "127.0.0.1:9464"; NULL after loading when "" or "off" */
   relay_log_level_t log_level;
   relay_log_format_t log_format;
   char *log_file;    /* NULL = stderr */
   char *config_file; /* the file that was read, or NULL */
   bool mongodb_only; /* loaded by relay_config_load_mongodb(): MQTT options not required */
} relay_config_t;

/* What main() should do after relay_config_load(). */
typedef enum {
   RELAY_CONFIG_RUN = 0,     /* a valid configuration: run */
   RELAY_CONFIG_HELP,        /* --help was given: print relay_config_usage(), exit 0 */
   RELAY_CONFIG_VERSION,     /* --version was given */
   RELAY_CONFIG_CHECK,       /* --check-config and the configuration is valid */
   RELAY_CONFIG_USAGE_ERROR, /* a bad flag or flag value (EX_USAGE); error says which */
   RELAY_CONFIG_INVALID,     /* a bad environment, config file or combination (EX_CONFIG) */
} relay_config_action_t;

/* Fills @cfg with the defaults (also what relay_config_load() starts from). Any previous
 * contents are overwritten, not freed. */
void relay_config_init_defaults(relay_config_t *cfg);

/* Loads the configuration from @argv, the environment and the config file (--config FILE or
 * OUTBOX_CONFIG) on top of the defaults and validates it. @cfg must be initialised with
 * relay_config_init_defaults() (or zeroed) and is destroyed and refilled; it must be
 * destroyed with relay_config_destroy() whatever is returned. On USAGE_ERROR or INVALID,
 * @error->message says exactly what is wrong, naming the flag, variable or key, e.g.
 * "--qos: expected 0, 1 or 2, got '7'". @argv is not modified. */
relay_config_action_t relay_config_load(relay_config_t *cfg, int argc, char **argv,
                                        bson_error_t *error);

/* Like relay_config_load(), for tools that share the relay's configuration but only talk to
 * MongoDB (outbox-admin): the MQTT options are not required (nor is --collection: with none,
 * cfg->n_collections is 0). --help, --version and --check-config are not recognised here
 * (they are the tool's own business). */
relay_config_action_t relay_config_load_mongodb(relay_config_t *cfg, int argc, char **argv,
                                                bson_error_t *error);

/* The checks relay_config_load() makes of the MQTT options and the topic, for a tool loaded
 * with relay_config_load_mongodb() that publishes as the relay does (outbox-admin replay):
 * the same refusals, with the same messages. Needs cfg->mqtt_uri. */
bool relay_config_check_publishing(const relay_config_t *cfg, bson_error_t *error);

/* Whether "--@name" (@len bytes, without the dashes and any "=value") is an option of the
 * relay's table or --config, and whether it takes a value (all but the booleans do). Lets
 * tools that accept the relay's options alongside their own split a command line. */
bool relay_config_is_option(const char *name, size_t len, bool *takes_value);

/* Appends the effective configuration to @out, one "key = value" line per option in the
 * config file's key names; passwords are "***" and credentials inside URIs are replaced by
 * "***" too. Used by --check-config. */
void relay_config_dump(const relay_config_t *cfg, bson_string_t *out);

/* Appends the effective configuration as a single line of "key=value" pairs separated by
 * spaces (for the startup log line), redacted like relay_config_dump(). */
void relay_config_dump_line(const relay_config_t *cfg, bson_string_t *out);

/* Returns a newly allocated copy of @uri with any "user:password@" or "password=..." query
 * value replaced by "***" (the user name stays). Free with bson_free(). NULL gives NULL. */
char *relay_config_redact_uri(const char *uri);

/* Writes the --help text: every option with its variable and default. */
void relay_config_usage(FILE *out);

/* Frees everything @cfg owns and zeroes it; NULL-safe, may be called twice. */
void relay_config_destroy(relay_config_t *cfg);

#endif /* RELAY_CONFIG_H */
