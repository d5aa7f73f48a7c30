/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The address part of an MQTT URI (after the scheme): what paho accepts but then gets wrong
 * is refused here, when the configuration is read. paho 1.3.12 reads the port with atoi()
 * into 16 bits (99999 connects to 34463), takes "[::1" up to the end as a host name, and
 * sends "tcp://host:1883/path" to "host:1883/path". No state.
 */
#include "config/config-private.h"
#include "util/error.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "util/redact.h"

/* Checks ":PORT" at @p up to @end (nothing is fine: paho then uses the scheme's default). */
static bool
port_ok(const char *p, const char *end, const char **why)
{
   if (p == end) {
      return true;
   }
   if (*p != ':' || p + 1 == end) {
      *why = *p == ':' ? "an empty port" : "text after the host that is not ':PORT'";
      return false;
   }
   long port = 0;
   for (p++; p < end; p++) {
      if (!isdigit((unsigned char)*p) || (port = port * 10 + (*p - '0')) > 65535) {
         *why = isdigit((unsigned char)*p) ? "a port above 65535" : "a port that is not a number";
         return false;
      }
   }
   if (port == 0) {
      *why = "port 0";
      return false;
   }
   return true;
}

/* Checks HOST[:PORT] or [IPV6][:PORT] from @p to @end; sets *@why when it is not. */
static bool
host_port_ok(const char *p, const char *end, const char **why)
{
   if (*p == '[') {
      const char *close = memchr(p, ']', (size_t)(end - p));
      if (!close) {
         *why = "a '[' without ']'";
         return false;
      }
      if (close == p + 1) {
         *why = "an empty host";
         return false;
      }
      return port_ok(close + 1, end, why);
   }
   const char *colon = memchr(p, ':', (size_t)(end - p));
   const char *host_end = colon ? colon : end;
   if (host_end == p) {
      *why = "an empty host";
      return false;
   }
   if (memchr(p, ']', (size_t)(host_end - p)) ||
       (colon && memchr(colon + 1, ':', (size_t)(end - colon - 1)))) {
      *why = "an IPv6 address without brackets (write [::1]:1883)";
      return false;
   }
   return port_ok(host_end, end, why);
}

bool
_relay_mqtt_uri_check_address(const char *uri, size_t scheme_len, const char *what,
                              bson_error_t *error)
{
   const char *p = uri + scheme_len;
   bool websocket = !strncasecmp(uri, "ws", 2); /* ws:// and wss:// may carry a path */
   size_t len = strcspn(p, "/?#");
   const char *why = NULL;

   if (p[len] && !websocket && !(p[len] == '/' && !p[len + 1])) {
      why = "a path, query or fragment, which MQTT over TCP has no use for";
   } else {
      host_port_ok(p, p + len, &why);
   }
   if (!why) {
      return true;
   }
   char *shown = relay_redact_uri(uri);
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: '%s' has %s", what, shown,
                  why);
   bson_free(shown);
   return false;
}
