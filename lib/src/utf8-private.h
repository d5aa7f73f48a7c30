/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The UTF-8 check (utf8.c): the lowest of liboutbox's validation layers, used by the BSON walk
 * (bson-walk.c), the input checks (check.c) and the relay. Stateless and thread-safe.
 */
#ifndef OUTBOX_UTF8_PRIVATE_H
#define OUTBOX_UTF8_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

/* bson_utf8_validate(s, len, allow_nul), with a fast path for ASCII (also used by the
 * relay, whose events carry the same data). */
bool _outbox_utf8_valid(const char *s, size_t len, bool allow_nul);

/* True if s[0..len) is a string every MQTT 5 receiver must accept (section 1.5.4): valid
 * UTF-8 without U+0000, control characters (U+0001..U+001F, U+007F..U+009F) and
 * non-characters (U+FDD0..U+FDEF, U+nFFFE, U+nFFFF). The contract's OUTBOX_CONTRACT_TEXT_MQTT
 * (outbox/contract.h). Length limits are the caller's. */
bool _outbox_utf8_mqtt_valid(const char *s, size_t len);

/* The length (1..4) of the character at @s (@avail bytes left) when _outbox_utf8_mqtt_valid()
 * allows it, else 0: for the relay's percent-encoding of topic levels, which encodes the
 * bytes of every character MQTT may refuse. */
size_t _outbox_mqtt_char_len(const char *s, size_t avail);

#endif /* OUTBOX_UTF8_PRIVATE_H */
