"""Matching rules of MongoDB's unified test format ("Evaluating Matches").

match(expected, actual, entities, root=True) raises MatchError with a path when the actual
value does not match. Root-level documents may carry extra fields; nested ones may not.
"""
import datetime
import re

from bson import json_util
from bson.binary import Binary
from bson.code import Code

from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

try:  # bson.dbref exists in every pymongo 3.x
    from bson.dbref import DBRef
except ImportError:  # pragma: no cover
    DBRef = ()


class MatchError(AssertionError):
    pass


_MISSING = object()


def bson_type(value):
    """The $type alias of a decoded BSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if -2**31 <= value < 2**31 else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, DBRef):
        return "object"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, (Binary, bytes)):
        return "binData"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, datetime.datetime):
        return "date"
    if isinstance(value, (Regex, type(re.compile("")))):
        return "regex"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, Decimal128):
        return "decimal"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    if isinstance(value, Code):
        return "javascriptWithScope" if value.scope else "javascript"
    return type(value).__name__


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def describe(value):
    try:
        return json_util.dumps(value)[:300]
    except Exception:  # noqa: BLE001 - only for messages
        return repr(value)[:300]


def is_special(doc):
    return isinstance(doc, dict) and len(doc) == 1 and next(iter(doc)).startswith("$$")


def _type_matches(expected_types, actual):
    if isinstance(expected_types, str):
        expected_types = [expected_types]
    actual_type = bson_type(actual)
    for t in expected_types:
        if t == actual_type:
            return True
        if t == "number" and actual_type in ("int", "long", "double", "decimal"):
            return True
    return False


def _special(op, arg, actual, entities, path, root):
    """Evaluates a $$ operator against an actual value (actual may be _MISSING)."""
    if op == "$$exists":
        if bool(arg) != (actual is not _MISSING):
            raise MatchError("%s: expected %s, got %s" % (
                path, "present" if arg else "absent",
                "absent" if actual is _MISSING else describe(actual)))
        return
    if op == "$$unsetOrMatches":
        if actual is _MISSING:
            return
        match(arg, actual, entities, root=root, path=path)
        return
    if actual is _MISSING:
        raise MatchError("%s: missing (expected %s)" % (path, describe({op: arg})))
    if op == "$$type":
        if not _type_matches(arg, actual):
            raise MatchError("%s: expected type %s, got %s (%s)" % (
                path, arg, bson_type(actual), describe(actual)))
        return
    if op == "$$matchesEntity":
        match(entities.get(arg), actual, entities, root=root, path=path)
        return
    if op == "$$sessionLsid":
        match(entities.session_lsid(arg), actual, entities, root=False, path=path)
        return
    if op == "$$lte":
        if not (is_number(actual) and actual <= arg):
            raise MatchError("%s: expected <= %s, got %s" % (path, arg, describe(actual)))
        return
    if op == "$$matchesHexBytes":
        data = bytes.fromhex(arg)
        if not (isinstance(actual, (bytes, Binary)) and bytes(actual) == data):
            raise MatchError("%s: expected bytes %s, got %s" % (path, arg, describe(actual)))
        return
    if op == "$$matchAsDocument":
        if not isinstance(actual, str):
            raise MatchError("%s: expected an extended JSON string" % path)
        match(arg, json_util.loads(actual), entities, root=False, path=path)
        return
    if op == "$$matchAsRoot":
        match(arg, actual, entities, root=True, path=path)
        return
    raise MatchError("%s: unsupported special operator %s" % (path, op))


def match(expected, actual, entities=None, root=True, path="$"):
    if isinstance(expected, dict):
        if is_special(expected):
            op, arg = next(iter(expected.items()))
            _special(op, arg, actual, entities, path, root)
            return
        if not isinstance(actual, dict):
            raise MatchError("%s: expected a document %s, got %s" % (
                path, describe(expected), describe(actual)))
        for key, value in expected.items():
            sub = "%s.%s" % (path, key)
            got = actual.get(key, _MISSING) if key in actual else _MISSING
            if is_special(value):
                op, arg = next(iter(value.items()))
                if op in ("$$exists", "$$unsetOrMatches"):
                    _special(op, arg, got, entities, sub, False)
                    continue
            if got is _MISSING:
                raise MatchError("%s: missing (expected %s)" % (sub, describe(value)))
            match(value, got, entities, root=False, path=sub)
        if not root:
            extra = [k for k in actual if k not in expected]
            if extra:
                raise MatchError("%s: unexpected field(s) %s in %s" % (
                    path, ", ".join(extra), describe(actual)))
        return
    if isinstance(expected, list):
        if not isinstance(actual, (list, tuple)):
            raise MatchError("%s: expected an array %s, got %s" % (
                path, describe(expected), describe(actual)))
        if len(expected) != len(actual):
            raise MatchError("%s: expected %d elements %s, got %d %s" % (
                path, len(expected), describe(expected), len(actual), describe(actual)))
        for i, (e, a) in enumerate(zip(expected, actual)):
            match(e, a, entities, root=False, path="%s[%d]" % (path, i))
        return
    if not values_equal(expected, actual):
        raise MatchError("%s: expected %s (%s), got %s (%s)" % (
            path, describe(expected), bson_type(expected), describe(actual), bson_type(actual)))


def values_equal(expected, actual):
    """Scalar equality: flexible numerics (int/long/double), strict otherwise."""
    if is_number(expected) and is_number(actual):
        return expected == actual
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if bson_type(expected) != bson_type(actual):
        return False
    return expected == actual


def exact_equal(expected, actual, path="$"):
    """Exact comparison for outcome data: key order free, flexible numerics only."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(expected) != set(actual):
            raise MatchError("%s: expected %s, got %s" % (path, describe(expected), describe(actual)))
        for k in expected:
            exact_equal(expected[k], actual[k], "%s.%s" % (path, k))
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            raise MatchError("%s: expected %s, got %s" % (path, describe(expected), describe(actual)))
        for i, (e, a) in enumerate(zip(expected, actual)):
            exact_equal(e, a, "%s[%d]" % (path, i))
        return
    if not values_equal(expected, actual):
        raise MatchError("%s: expected %s (%s), got %s (%s)" % (
            path, describe(expected), bson_type(expected), describe(actual), bson_type(actual)))
