# Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
"""An exact BSON encoder for the fuzzer: every value gets the type it is given, and strings
may hold any bytes (pymongo refuses invalid UTF-8 and picks int32 or int64 by size, so
neither what another writer may store nor a boundary of the contract could be written
otherwise). Values: str (UTF-8), Raw (a string of any bytes), bool, None, float, Int32,
Int64, Date (milliseconds), dict (a document, in order), list (an array), bytes (binary
subtype 0), bson.ObjectId, bson.decimal128.Decimal128, MinKey/MaxKey."""
import struct

from bson import ObjectId
from bson.decimal128 import Decimal128
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.timestamp import Timestamp


class Raw:
    """A BSON string of exactly these bytes (may be invalid UTF-8 or hold NUL)."""
    def __init__(self, data):
        self.data = data

    def __repr__(self):
        return "Raw(%r)" % self.data


class Int32(int):
    pass


class Int64(int):
    pass


class Pairs(list):
    """A document given as (key, value) pairs: it may repeat a key, as BSON allows and a dict
    cannot."""


class Date(int):
    """A BSON date: milliseconds since the epoch."""


def _cstring(key):
    raw = key.data if isinstance(key, Raw) else key.encode("utf-8", "surrogatepass")
    return raw + b"\x00"


def _string(raw):
    return struct.pack("<i", len(raw) + 1) + raw + b"\x00"


def element(key, v):
    """(type byte, key cstring, value bytes) of one element."""
    k = _cstring(key)
    if isinstance(v, Raw):
        return b"\x02" + k + _string(v.data)
    if isinstance(v, str):
        return b"\x02" + k + _string(v.encode("utf-8", "surrogatepass"))
    if isinstance(v, bool):
        return b"\x08" + k + (b"\x01" if v else b"\x00")
    if v is None:
        return b"\x0a" + k
    if isinstance(v, Date):
        return b"\x09" + k + struct.pack("<q", v)
    if isinstance(v, Int64):
        return b"\x12" + k + struct.pack("<q", v)
    if isinstance(v, (Int32, int)):
        return b"\x10" + k + struct.pack("<i", v)
    if isinstance(v, float):
        return b"\x01" + k + struct.pack("<d", v)
    if isinstance(v, Pairs):
        return b"\x03" + k + document(v)
    if isinstance(v, dict):
        return b"\x03" + k + document(v)
    if isinstance(v, list):
        return b"\x04" + k + document({str(i): x for i, x in enumerate(v)})
    if isinstance(v, bytes):
        return b"\x05" + k + struct.pack("<i", len(v)) + b"\x00" + v
    if isinstance(v, ObjectId):
        return b"\x07" + k + v.binary
    if isinstance(v, Decimal128):
        return b"\x13" + k + v.bid
    if isinstance(v, Timestamp):
        return b"\x11" + k + struct.pack("<II", v.inc, v.time)
    if isinstance(v, MinKey):
        return b"\xff" + k
    if isinstance(v, MaxKey):
        return b"\x7f" + k
    raise TypeError("bsonenc: cannot encode %r" % (v,))


def document(d):
    """The BSON bytes of a document; keys are str or Raw, in the dict's order."""
    items = d if isinstance(d, Pairs) else d.items()
    body = b"".join(element(k, v) for k, v in items)
    return struct.pack("<i", len(body) + 5) + body + b"\x00"


def value_doc(key, v):
    """A document with one element: how a lone value travels (an entity id)."""
    return document({key: v})


def ejson(v):
    """Canonical extended JSON of a value (for the Node writer, which parses it with
    EJSON.parse({relaxed: false}) and so stores the very same types)."""
    import base64
    if isinstance(v, str):
        return v
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, Date):
        return {"$date": {"$numberLong": str(int(v))}}
    if isinstance(v, Int64):
        return {"$numberLong": str(int(v))}
    if isinstance(v, int):
        return {"$numberInt": str(int(v))}
    if isinstance(v, float):
        return {"$numberDouble": repr(v)}
    if isinstance(v, dict):
        return {k: ejson(x) for k, x in v.items()}
    if isinstance(v, list):
        return [ejson(x) for x in v]
    if isinstance(v, bytes):
        return {"$binary": {"base64": base64.b64encode(v).decode(), "subType": "00"}}
    if isinstance(v, ObjectId):
        return {"$oid": str(v)}
    if isinstance(v, Decimal128):
        return {"$numberDecimal": str(v)}
    if isinstance(v, MinKey):
        return {"$minKey": 1}
    if isinstance(v, MaxKey):
        return {"$maxKey": 1}
    raise TypeError("bsonenc: no extended JSON for %r" % (v,))
