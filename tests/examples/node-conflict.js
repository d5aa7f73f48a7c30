// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// The Node example writer refuses stale commits: an expected version that is not the current
// one, and a change that lands between its read and its write (a collection whose findOne
// answers with what it read before another writer moved on). Prints stale-refused,
// race-refused and unchanged when each holds, and expires-at when an event's expiresAt is
// stored as a Date (and a non-Date refused).
//
// usage: node node-conflict.js PATH/TO/writer.js URI DB
'use strict';
const { MongoClient } = require('mongodb');

async function refuses(Conflict, commit) {
  try {
    await commit();
    return false;
  } catch (err) {
    return err instanceof Conflict;
  }
}

async function main([writerPath, uri, db]) {
  const { create, update, Conflict } = require(writerPath);
  const client = new MongoClient(uri, { writeConcern: { w: 'majority' } });
  const coll = client.db(db).collection('node');
  try {
    await create(coll, 'c', { n: 0 }, []);
    await update(coll, 'c', 1, { n: 1 }, [['thing.changed', {}]]);
    if (await refuses(Conflict, () => update(coll, 'c', 1, { n: 99 }, [['thing.changed', {}]]))) {
      console.log('stale-refused');
    }
    const before = await coll.findOne({ _id: 'c' });
    await update(coll, 'c', 2, { n: 2 }, []); // another writer overtakes the read below
    const overtaken = { findOne: async () => before, updateOne: (...a) => coll.updateOne(...a) };
    if (await refuses(Conflict, () => update(overtaken, 'c', 2, { n: 99 }, [['thing.changed', {}]]))) {
      console.log('race-refused');
    }
    const after = await coll.findOne({ _id: 'c' });
    if (after.n === 2 && Number(after.version) === 3 && Number(after.eventSeq) === 1) {
      console.log('unchanged');
    }
    // An event's expiry (issue 38) is stored as the Date expiresAt; anything else is refused.
    const expiresAt = new Date(Date.now() + 60000);
    await update(coll, 'c', 3, {}, [['thing.changed', {}, { expiresAt }]]);
    const stored = (await coll.findOne({ _id: 'c' })).events.pop();
    if (stored.expiresAt instanceof Date && stored.expiresAt.getTime() === expiresAt.getTime() &&
        (await refuses(Error, () => update(coll, 'c', 4, {}, [['thing.changed', {}, { expiresAt: 'soon' }]])))) {
      console.log('expires-at');
    }
  } finally {
    await client.close();
  }
}

main(process.argv.slice(2)).catch((err) => { console.error(err); process.exit(1); });
