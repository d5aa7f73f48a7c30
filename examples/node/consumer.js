// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// Consume what outbox-relay publishes (relay/README.md, "The message contract") with mqtt.js
// (5.x) over MQTT 5, in either payload mode: skip duplicates by event id (delivery is at least
// once), notice per-entity gaps by seq, and log the W3C trace id the event was stored with
// (its traceparent), so a trace can be followed from the request that raised it to here.
//
// usage: node consumer.js MQTT-URI TOPIC-FILTER CLIENT-ID [PARTITIONS]
// e.g. tcp://127.0.0.1:1883 'outbox/things/{partition}/#' things-1 0-15: with PARTITIONS (a
// set such as 0-15 or 0,2,4-7) it subscribes to one filter per partition, {partition}
// replaced, for a relay publishing to outbox/{collection}/{partition}/{id}; instances on
// disjoint sets share the entities, each entity's events going to one instance, in order. It
// prints "subscribed", then per message one of
//     applied ENTITY SEQ EVENT-ID TYPE in-order|gap|late TRACE-ID|-
//     duplicate ENTITY SEQ EVENT-ID
//     gap ENTITY missing SEQ..SEQ
// and a count on SIGTERM/SIGINT. The session is persistent (clean: false), so messages
// published while the consumer is down are delivered when it comes back.
'use strict';
const mqtt = require('mqtt');
const partitions = require('./partitions'); // the partition-set grammar

const seen = new Set(); // event ids applied; a real service keeps them with its state
const lastSeq = new Map(); // entity -> highest seq applied
const counts = { applied: 0, duplicate: 0, gap: 0 };

// W3C traceparent: version-traceid-parentid-flags (a later version may add "-..." fields).
const TRACEPARENT = /^(?!ff)[0-9a-f]{2}-(?!0{32})([0-9a-f]{32})-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$/;
const traceId = (tp) => {
  const m = typeof tp === 'string' && TRACEPARENT.exec(tp);
  return m ? m[1] : '-';
};

// { id, entity, seq, type, data, trace } from either payload mode. data is the event's
// document, or a Buffer for an event whose data is binary (its content type is the MQTT 5
// content type or the CloudEvents datacontenttype).
function decode(payload, packet) {
  const props = (packet.properties && packet.properties.userProperties) || {};
  const prop = (name) => (Array.isArray(props[name]) ? props[name][0] : props[name]);
  if (prop('specversion') !== undefined) {
    // Binary mode: the CloudEvents attributes are user properties (subject percent-encoded
    // like the topic) and the payload is the event's data; the event's headers, traceparent
    // among them, are user properties too. Payload format indicator 0 (or a content type
    // other than JSON): the data's own bytes.
    const p = packet.properties || {};
    const json = p.payloadFormatIndicator !== false &&
      (p.contentType || 'application/json') === 'application/json';
    return { id: prop('id'), entity: decodeURIComponent(prop('subject')), seq: Number(prop('seq')),
             type: prop('type'), data: json ? JSON.parse(payload.toString()) : Buffer.from(payload),
             trace: traceId(prop('traceparent')) };
  }
  // Structured mode: the payload is a CloudEvents JSON object with the seq extension and the
  // distributed-tracing extension (traceparent, tracestate) when the event has one; binary
  // data comes base64-encoded in data_base64.
  const ev = JSON.parse(payload.toString());
  const data = ev.data_base64 !== undefined ? Buffer.from(ev.data_base64, 'base64') : ev.data;
  return { id: ev.id, entity: ev.subject, seq: Number(ev.seq), type: ev.type, data,
           trace: traceId(ev.traceparent) };
}

function handle({ id, entity, seq, type, trace }) {
  if (seen.has(id)) {
    counts.duplicate++;
    console.log(`duplicate ${entity} ${seq} ${id}`);
    return;
  }
  const last = lastSeq.get(entity) || 0;
  if (seq > last + 1) {
    counts.gap++;
    console.log(`gap ${entity} missing ${last + 1}..${seq - 1}`);
  }
  const order = seq === last + 1 ? 'in-order' : seq > last ? 'gap' : 'late';
  // ... apply the event's data to the service's own state here ...
  seen.add(id);
  lastSeq.set(entity, Math.max(last, seq));
  counts.applied++;
  console.log(`applied ${entity} ${seq} ${id} ${type} ${order} ${trace}`);
}

function main([uri, topic, clientId, set]) {
  let subs;
  try { // refused before connecting: a bad set would split nothing
    subs = Object.fromEntries(partitions.filters(topic, set).map((f) => [f, { qos: 1 }]));
  } catch (err) {
    console.error(`consumer.js: ${err.message}`);
    process.exit(64);
  }
  const client = mqtt.connect(uri, {
    clientId, protocolVersion: 5, clean: false,
    properties: { sessionExpiryInterval: 3600 }, // keep the session (and its queue) an hour
  });
  client.on('connect', () => client.subscribe(subs, (err) => {
    if (err) { console.error(`subscribe: ${err.message}`); process.exit(1); }
    console.log('subscribed');
  }));
  // QoS 1: mqtt.js acknowledges after this (synchronous) handler returns; for asynchronous
  // work, override client.handleMessage(packet, callback) and call back once it is stored.
  client.on('message', (topic, payload, packet) => {
    try {
      handle(decode(payload, packet));
    } catch (err) { // not a message of the contract
      console.log(`unreadable message on ${topic}: ${err.message}`);
    }
  });
  client.on('error', (err) => console.error(`mqtt: ${err.message}`));
  const stop = () => client.end(false, () => {
    console.log(`consumer: ${counts.applied} applied, ${counts.duplicate} duplicates, ${counts.gap} gaps`);
  });
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

module.exports = { decode };
if (require.main === module) {
  if (process.argv.length !== 5 && process.argv.length !== 6) {
    console.error('usage: node consumer.js MQTT-URI TOPIC-FILTER CLIENT-ID [PARTITIONS]');
    process.exit(64);
  }
  main(process.argv.slice(2));
}
