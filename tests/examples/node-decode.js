// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// The Node example consumer's decode() on the messages the relay makes (issue 38): binary data
// in binary mode (payload format indicator 0, its own content type) is a Buffer, JSON data in
// binary mode is parsed, structured mode's data_base64 is a Buffer. Prints binary-data-decoded
// when all hold.
//
// usage: node node-decode.js PATH/TO/consumer.js
'use strict';

const { decode } = require(process.argv[2]);
const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0xff]);
const attrs = { specversion: '1.0', id: 'i', subject: 'b', seq: '1', type: 't' };
const bin = decode(png, { properties: { contentType: 'image/png', payloadFormatIndicator: false,
  userProperties: attrs } });
const json = decode(Buffer.from('{"n":3}'), { properties: { contentType: 'application/json',
  payloadFormatIndicator: true, userProperties: attrs } });
const structured = decode(Buffer.from(JSON.stringify({ id: 'i', subject: 'b', seq: 1, type: 't',
  datacontenttype: 'image/png', data_base64: png.toString('base64') })), { properties: {} });
if (Buffer.isBuffer(bin.data) && bin.data.equals(png) && json.data.n === 3 &&
    Buffer.isBuffer(structured.data) && structured.data.equals(png)) {
  console.log('binary-data-decoded');
}
