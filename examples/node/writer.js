// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// Commit a change and its events in ONE MongoDB write, exactly as liboutbox does (THE STORED
// CONTRACT in lib/include/outbox/collection.h), with the official `mongodb` driver (6.x).
//
//   await create(coll, 'c-42', { name: 'Ada' }, [['contact.created', { name: 'Ada' }]]);  // version 1
//   await update(coll, 'c-42', 1, { email: 'ada@example.org' },
//                [['contact.email-changed', { email: 'ada@example.org' }]]);            // version 2
//
// As a program: node writer.js URI DB COLLECTION ENTITIES CHANGES creates ENTITIES entities,
// changes each CHANGES times, and prints "committed ENTITY SEQ EVENT-ID" per event.
'use strict';
const { randomUUID } = require('node:crypto');
const { Long, MongoClient } = require('mongodb');

const RESERVED = ['_id', 'version', 'eventSeq', 'events'];
const EVENT_TYPE = /^[A-Za-z0-9._-]{1,128}$/;

// The entity is not at the expected version: someone else changed it. Re-read it, decide
// again, retry (HTTP 412 in a REST service).
class Conflict extends Error {}

// version, eventSeq and seq are Int64 in the contract: a JS number would be stored as an
// int32 (or a double), so they are written as Long.
const int64 = (n) => Long.fromNumber(n);

// What liboutbox refuses before writing: bookkeeping fields among the business fields, event
// types outside 1..128 of [A-Za-z0-9._-] (the relay would dead-letter them).
function check(fields, specs) {
  const bad = RESERVED.filter((name) => name in fields);
  if (bad.length) throw new Error(`business fields may not set ${bad.join(', ')}`);
  const type = specs.map(([t]) => t).find((t) => !EVENT_TYPE.test(t));
  if (type !== undefined) throw new Error(`event type ${type} is not 1..128 of [A-Za-z0-9._-]`);
  const badExpiry = specs.find(([, , o]) => o && o.expiresAt !== undefined && !(o.expiresAt instanceof Date));
  if (badExpiry) throw new Error(`expiresAt of a ${badExpiry[0]} event must be a Date`);
}

// The events as stored: id a UUID v4 string, seq, type, time a Date (the same for the whole
// commit), data a document whose keys do not start with '$'. A spec may carry options as a
// third element: { expiresAt: Date } stores expiresAt (outbox-relay sends the time left as the
// MQTT 5 Message Expiry Interval and does not publish the event after it).
function storedEvents(specs, firstSeq) {
  const now = new Date();
  return specs.map(([type, data, opts], i) => {
    const ev = { id: randomUUID(), seq: int64(firstSeq + i), type, time: now, data };
    if (opts && opts.expiresAt) ev.expiresAt = opts.expiresAt;
    return ev;
  });
}

// Inserts the entity at version 1 with its first events (a duplicate key error, code 11000,
// if it exists). Returns the stored events.
async function create(coll, id, fields, specs) {
  check(fields, specs);
  const events = storedEvents(specs, 1);
  await coll.insertOne({ ...fields, _id: id, version: int64(1), eventSeq: int64(events.length), events });
  return events;
}

// One updateOne: the filter holds _id, the expected version and the eventSeq read; $set the
// business fields, version + 1 and eventSeq + n; $push the events. Returns the new version
// and the events; throws Conflict (nothing written) or an Error when there is no such entity.
async function update(coll, id, expectedVersion, setFields, specs) {
  check(setFields, specs);
  const current = await coll.findOne({ _id: id }, { projection: { version: 1, eventSeq: 1 } });
  if (!current) throw new Error(`no entity ${id}`);
  if (Number(current.version) !== expectedVersion) {
    throw new Conflict(`entity is at version ${current.version}, expected ${expectedVersion}`);
  }
  const seq = Number(current.eventSeq);
  const events = storedEvents(specs, seq + 1);
  const change = { $set: { ...setFields, version: int64(expectedVersion + 1) } };
  if (events.length) { // as liboutbox: a change without events leaves eventSeq and events alone
    change.$set.eventSeq = int64(seq + events.length);
    change.$push = { events: { $each: events } };
  }
  const result = await coll.updateOne({ _id: id, version: int64(expectedVersion), eventSeq: int64(seq) }, change);
  if (result.matchedCount === 0) throw new Conflict('entity changed concurrently'); // since our read
  return { version: expectedVersion + 1, events };
}

async function main(args) {
  if (args.length !== 5) throw new Error('usage: node writer.js URI DB COLLECTION ENTITIES CHANGES');
  const [uri, db, collection, entities, changes] = args;
  // w: majority as liboutbox: an acknowledged commit survives a primary failover.
  const client = new MongoClient(uri, { writeConcern: { w: 'majority' } });
  const coll = client.db(db).collection(collection);
  try {
    for (let e = 0; e < Number(entities); e++) {
      const entity = `node-${e}`;
      const committed = await create(coll, entity, { changes: 0 }, [['thing.created', {}]]);
      let version = 1;
      for (let c = 0; c < Number(changes); c++) {
        const specs = Array.from({ length: 1 + (c % 2) }, (_, k) => ['thing.changed', { change: c, part: k }]);
        const result = await update(coll, entity, version, { changes: c + 1 }, specs);
        version = result.version;
        committed.push(...result.events);
      }
      for (const ev of committed) console.log(`committed ${entity} ${ev.seq} ${ev.id}`);
    }
  } finally {
    await client.close();
  }
}

module.exports = { create, update, Conflict };
if (require.main === module) main(process.argv.slice(2)).catch((err) => { console.error(err.message); process.exit(1); });
