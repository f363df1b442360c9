#!/usr/bin/python3
"""fakeapi: a small, honest fake Kubernetes API server for skewgate's tests.

It serves one custom resource, machineconfigurations.operator.openshift.io/v1
(cluster-scoped), the way a kube-apiserver with the MachineConfiguration CRD
installed serves it: discovery, get, list, watch (chunked, bookmarks, 410
Expired from a bounded history), merge and JSON patch, update, create, delete,
the /status subresource, bearer-token auth and Status error objects.  Tests
steer it through a small control API under /_fake/ (faults, seeding, stats).

Python 3 standard library only, plus PyYAML (Debian's python3-yaml) to read
YAML seed objects.  Binds loopback only.  See README.md beside this file.
"""

import argparse
import collections
import copy
import datetime
import hashlib
import hmac
import ipaddress
import json
import os
import re
import select
import socket
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import inventory
import leases

try:
    import yaml
except ImportError:  # JSON seeds still work without PyYAML
    yaml = None

GROUP = "operator.openshift.io"
VERSION = "v1"
GV = GROUP + "/" + VERSION
KIND = "MachineConfiguration"
LIST_KIND = "MachineConfigurationList"
PLURAL = "machineconfigurations"
SINGULAR = "machineconfiguration"
QUALIFIED = PLURAL + "." + GROUP            # as in real error messages
KIND_QUALIFIED = KIND + "." + GROUP
BASE = "/apis/" + GV + "/" + PLURAL
# Who a 403 of fault forbid names, as the authorizer names the token's user.
FORBIDDEN_USER = "system:serviceaccount:skewgate:skewgate"
MAX_BODY = 3 * 1024 * 1024                  # kube-apiserver's request limit
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def log(msg):
    sys.stderr.write("fakeapi: %s\n" % msg)
    sys.stderr.flush()


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"))


# --------------------------------------------------------------------------
# Status objects and errors


class ApiError(Exception):
    """An error answered as a metav1.Status object."""

    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        return status_obj(self.code, self.reason, self.message, self.details)


def status_obj(code, reason, message, details=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
          "status": "Failure", "message": message, "reason": reason,
          "code": code}
    if details is not None:
        st["details"] = details
    return st


def not_found(name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (QUALIFIED, name),
                    {"name": name, "group": GROUP, "kind": PLURAL})


def conflict(name):
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": the object has been '
                    "modified; please apply your changes to the latest version and "
                    "try again" % (QUALIFIED, name),
                    {"name": name, "group": GROUP, "kind": PLURAL})


def lease_details(name):
    return {"name": name, "group": leases.GROUP, "kind": leases.PLURAL}


def lease_not_found(name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (leases.QUALIFIED, name), lease_details(name))


def lease_conflict(name):
    return ApiError(409, "Conflict",
                    'Operation cannot be fulfilled on %s "%s": the object has been modified; please apply '
                    "your changes to the latest version and try again" % (leases.QUALIFIED, name),
                    lease_details(name))


def lease_invalid(name, errors):
    msgs = ["%s: %s" % (f, m) for f, _, m in errors]
    joined = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (leases.KIND_QUALIFIED, name, joined),
                    {"name": name, "group": leases.GROUP, "kind": leases.KIND,
                     "causes": [{"reason": t, "message": m, "field": f} for f, t, m in errors]})


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def invalid(name, errors):
    """422 Invalid as the CRD validation reports it; errors: [(field, type, msg)]."""
    msgs = ["%s: %s" % (f, m) for f, _, m in errors]
    joined = msgs[0] if len(msgs) == 1 else "[" + ", ".join(msgs) + "]"
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (KIND_QUALIFIED, name, joined),
                    {"name": name, "group": GROUP, "kind": KIND,
                     "causes": [{"reason": t, "message": m, "field": f} for f, t, m in errors]})


def generic_status(code, message):
    reasons = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
               405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict",
               410: "Expired", 413: "RequestEntityTooLarge", 415: "UnsupportedMediaType",
               422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
               503: "ServiceUnavailable", 504: "Timeout"}
    return reasons.get(code, "InternalError" if code >= 500 else "BadRequest")


# --------------------------------------------------------------------------
# Loading objects


def _jsonable(v):
    """PyYAML turns unquoted timestamps into datetime objects; JSON wants strings."""
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return v.astimezone(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ" if v.microsecond else "%Y-%m-%dT%H:%M:%SZ")
    if isinstance(v, datetime.date):
        return v.isoformat()
    return v


def parse_document(text, what):
    text = text.strip()
    if not text:
        raise ValueError("%s: empty document" % what)
    try:
        return json.loads(text)
    except ValueError:
        pass
    if yaml is None:
        raise ValueError("%s: not JSON, and PyYAML (python3-yaml) is not installed" % what)
    try:
        return _jsonable(yaml.safe_load(text))
    except yaml.YAMLError as e:
        raise ValueError("%s: %s" % (what, e))


def load_object_file(path):
    with open(path, encoding="utf-8") as f:
        obj = parse_document(f.read(), path)
    if not isinstance(obj, dict):
        raise ValueError("%s: not an object" % path)
    if obj.get("kind") == LIST_KIND:  # a list dump: take its items
        return [dict(o, apiVersion=GV, kind=KIND) for o in obj.get("items") or []]
    return [obj]


# --------------------------------------------------------------------------
# Patches


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class PatchError(Exception):
    pass


def _pointer(path):
    if not isinstance(path, str):
        raise PatchError("path must be a string")
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError('JSON pointer must be empty or start with a "/": %r' % path)
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _index(container, tok, allow_end=False):
    if allow_end and tok == "-":
        return len(container)
    if not re.fullmatch(r"0|[1-9][0-9]*", tok):
        raise PatchError("invalid array index %r" % tok)
    i = int(tok)
    if i > len(container) or (i == len(container) and not allow_end):
        raise PatchError("array index %d out of bounds" % i)
    return i


def _walk(doc, toks):
    cur = doc
    for t in toks:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("missing value at %r" % t)
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t)]
        else:
            raise PatchError("cannot descend into a scalar at %r" % t)
    return cur


def _get(doc, toks):
    return _walk(doc, toks)


def _add(doc, toks, value):
    if not toks:
        return value
    parent = _walk(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc, toks):
    if not toks:
        raise PatchError("cannot remove the whole document")
    parent = _walk(doc, toks[:-1])
    last = toks[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("Unable to remove nonexistent key: %s: missing value" % last)
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last))
    raise PatchError("cannot remove from a scalar")


def json_patch(doc, ops):
    """RFC 6902 JSON patch."""
    if not isinstance(ops, list):
        raise ValueError("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise ValueError("each json patch operation must be an object with an op")
        kind = op["op"]
        toks = _pointer(op.get("path"))
        if kind == "add":
            if "value" not in op:
                raise PatchError("add operation does not apply: missing value")
            doc = _add(doc, toks, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc, _ = _remove(doc, toks)
        elif kind == "replace":
            if "value" not in op:
                raise PatchError("replace operation does not apply: missing value")
            _get(doc, toks)
            if not toks:
                doc = copy.deepcopy(op["value"])
            else:
                doc, _ = _remove(doc, toks)
                doc = _add(doc, toks, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            src = _pointer(op.get("from"))
            if kind == "move":
                if toks[:len(src)] == src and len(toks) > len(src):
                    raise PatchError("cannot move a value into one of its children")
                doc, val = _remove(doc, src)
            else:
                val = copy.deepcopy(_get(doc, src))
            doc = _add(doc, toks, val)
        elif kind == "test":
            if _get(doc, toks) != op.get("value"):
                raise PatchError("testing value %s failed: test failed" % op.get("path"))
        else:
            raise ValueError("Unexpected kind: %s" % kind)
    return doc


# --------------------------------------------------------------------------
# Validation of the fields skewgate reads (the CRD's OpenAPI + CEL rules)

OCP_RE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+$")
RHCOS_RE = re.compile(r"^[0-9]+\.[0-9]+\.([0-9]{8}|[0-9]{12})-[0-9]+$")
OCP_MSG = "ocpVersion must match the OCP semver compatible format of x.y.z"
RHCOS_MSG = ("rhcosVersion must match format [major].[minor].[datestamp(YYYYMMDD)]-[buildnumber] "
             "or must match legacy format [major].[minor].[timestamp(YYYYMMDDHHmm)]-[buildnumber]")


def _v_enum(errs, path, v, allowed):
    if not isinstance(v, str):
        errs.append((path, "FieldValueTypeInvalid", 'Invalid value: "%s": %s must be of type string'
                     % (type(v).__name__, path)))
    elif v not in allowed:
        errs.append((path, "FieldValueNotSupported", 'Unsupported value: "%s": supported values: %s'
                     % (v, ", ".join('"%s"' % a for a in allowed))))


def _v_version(errs, path, v, lo, hi, rx, msg):
    if not isinstance(v, str):
        errs.append((path, "FieldValueTypeInvalid", 'Invalid value: "%s": %s must be of type string'
                     % (type(v).__name__, path)))
        return
    if len(v) > hi:
        errs.append((path, "FieldValueTooLong", "Too long: may not be more than %d bytes" % hi))
    elif len(v) < lo:
        errs.append((path, "FieldValueInvalid", 'Invalid value: "%s": %s in body should be at least %d chars long'
                     % (v, path, lo)))
    elif not rx.match(v):
        errs.append((path, "FieldValueInvalid", 'Invalid value: "string": %s' % msg))


def _v_union(errs, path, obj, disc, member, value):
    has = member in obj
    want = obj.get(disc) == value
    if has != want:
        errs.append((path, "FieldValueInvalid", 'Invalid value: "object": %s is required when %s is %s, '
                     "and forbidden otherwise" % (member, disc, value)))


def _v_versions(errs, path, o):
    if "ocpVersion" in o:
        _v_version(errs, path + ".ocpVersion", o["ocpVersion"], 5, 10, OCP_RE, OCP_MSG)
    if "rhcosVersion" in o:
        _v_version(errs, path + ".rhcosVersion", o["rhcosVersion"], 14, 21, RHCOS_RE, RHCOS_MSG)


def _v_manual(errs, path, m):
    if not isinstance(m, dict):
        errs.append((path, "FieldValueTypeInvalid", 'Invalid value: "%s": %s must be of type object'
                     % (type(m).__name__, path)))
        return
    if "mode" not in m:
        errs.append((path + ".mode", "FieldValueRequired", "Required value"))
    else:
        _v_enum(errs, path + ".mode", m["mode"], ["OCPVersion", "RHCOSVersion"])
    _v_versions(errs, path, m)
    _v_union(errs, path, m, "mode", "ocpVersion", "OCPVersion")
    _v_union(errs, path, m, "mode", "rhcosVersion", "RHCOSVersion")


def _v_skew(errs, path, s, modes, status):
    if not isinstance(s, dict):
        errs.append((path, "FieldValueTypeInvalid", 'Invalid value: "%s": %s must be of type object'
                     % (type(s).__name__, path)))
        return
    if "mode" not in s:
        errs.append((path + ".mode", "FieldValueRequired", "Required value"))
    else:
        _v_enum(errs, path + ".mode", s["mode"], modes)
    if "manual" in s:
        _v_manual(errs, path + ".manual", s["manual"])
    _v_union(errs, path, s, "mode", "manual", "Manual")
    if status:
        if "automatic" in s:
            a = s["automatic"]
            if not isinstance(a, dict):
                errs.append((path + ".automatic", "FieldValueTypeInvalid", "must be of type object"))
            else:
                _v_versions(errs, path + ".automatic", a)
                if "ocpVersion" not in a and "rhcosVersion" not in a:
                    errs.append((path + ".automatic", "FieldValueInvalid", 'Invalid value: "object": '
                                 "at least one of ocpVersion or rhcosVersion is required"))
        _v_union(errs, path, s, "mode", "automatic", "Automatic")
    elif "automatic" in s:
        errs.append((path + ".automatic", "FieldValueForbidden", "Forbidden: field not declared in schema"))


def validate(new, old):
    """Errors for the skew-enforcement fields.  Like CRD validation ratcheting,
    a subtree left unchanged by the write is not re-validated."""
    errs = []
    for top, key, modes, is_status in (("spec", "bootImageSkewEnforcement", ["Manual", "None"], False),
                                       ("status", "bootImageSkewEnforcementStatus",
                                        ["Automatic", "Manual", "None"], True)):
        sect = new.get(top)
        if sect is None:
            continue
        if not isinstance(sect, dict):
            errs.append((top, "FieldValueTypeInvalid", 'Invalid value: "%s": %s must be of type object'
                         % (type(sect).__name__, top)))
            continue
        if key not in sect:
            continue
        old_sect = (old or {}).get(top)
        if isinstance(old_sect, dict) and key in old_sect and old_sect[key] == sect[key]:
            continue
        _v_skew(errs, top + "." + key, sect[key], modes, is_status)
    return errs


# --------------------------------------------------------------------------
# Selectors

LABEL_TERM = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(==|=|!=)\s*([A-Za-z0-9._-]*)|"
                        r"\s+(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_terms(s):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return out


def parse_label_selector(s):
    """Returns a predicate on a labels dict, or raises ApiError 400."""
    if not s:
        return lambda labels: True
    preds = []
    for term in _split_terms(s):
        m = LABEL_TERM.match(term)
        if not m:
            raise bad_request("unable to parse requirement: %r" % term.strip())
        neg, key, op, val, setop, setvals = m.groups()
        if neg and (op or setop):
            raise bad_request("unable to parse requirement: %r" % term.strip())
        if neg:
            preds.append(lambda l, k=key: k not in l)
        elif op in ("=", "=="):
            preds.append(lambda l, k=key, v=val: l.get(k) == v)
        elif op == "!=":
            preds.append(lambda l, k=key, v=val: l.get(k) != v)
        elif setop:
            vals = {x.strip() for x in setvals.split(",") if x.strip()}
            if setop == "in":
                preds.append(lambda l, k=key, vs=vals: l.get(k) in vs)
            else:
                preds.append(lambda l, k=key, vs=vals: l.get(k) not in vs)
        else:
            preds.append(lambda l, k=key: k in l)
    return lambda labels: all(p(labels) for p in preds)


def parse_field_selector(s):
    if not s:
        return lambda obj: True
    preds = []
    for term in s.split(","):
        m = re.match(r"^\s*([A-Za-z0-9._]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (s, term))
        field, op, val = m.groups()
        if field not in ("metadata.name", "metadata.namespace"):
            raise bad_request('field label not supported: %s' % field)
        if field == "metadata.name":
            get = lambda o: o.get("metadata", {}).get("name", "")
        else:
            get = lambda o: o.get("metadata", {}).get("namespace", "")  # cluster-scoped: always ""
        if op == "!=":
            preds.append(lambda o, g=get, v=val: g(o) != v)
        else:
            preds.append(lambda o, g=get, v=val: g(o) == v)
    return lambda obj: all(p(obj) for p in preds)


# --------------------------------------------------------------------------
# Tables (kubectl's human output asks for them)


def human_duration(seconds):
    s = int(max(0, seconds))
    if s < 120:
        return "%ds" % s
    m = s // 60
    if m < 10:
        return "%dm%ds" % (m, s % 60) if s % 60 else "%dm" % m
    if m < 180:
        return "%dm" % m
    h = m // 60
    if h < 8:
        return "%dh%dm" % (h, m % 60) if m % 60 else "%dh" % h
    if h < 48:
        return "%dh" % h
    d = h // 24
    if h < 24 * 8:
        return "%dd%dh" % (d, h % 24) if h % 24 else "%dd" % d
    if d < 365 * 2:
        return "%dd" % d
    y = d // 365
    return "%dy%dd" % (y, d % 365) if y < 8 and d % 365 else "%dy" % y


def age_of(obj):
    ts = obj.get("metadata", {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    try:
        t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return "<invalid>"
    return human_duration((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds())


TABLE_COLUMNS = [
    {"name": "Name", "type": "string", "format": "name", "priority": 0,
     "description": "Name must be unique within a namespace."},
    {"name": "Age", "type": "date", "format": "", "priority": 0,
     "description": "CreationTimestamp is a timestamp representing the server time when this "
                    "object was created."},
]


def to_table(objs, table_version, include, rv=None, headers=True, columns=None, cells=None):
    """cells(obj): the cells between NAME and AGE (a kind's own columns)."""
    rows = []
    for o in objs:
        row = {"cells": [o.get("metadata", {}).get("name", "")] + (cells(o) if cells else []) + [age_of(o)]}
        if include == "Object":
            row["object"] = o
        elif include != "None":
            row["object"] = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                             "metadata": copy.deepcopy(o.get("metadata", {}))}
        rows.append(row)
    t = {"kind": "Table", "apiVersion": "meta.k8s.io/" + table_version, "metadata": {},
         "columnDefinitions": (columns or TABLE_COLUMNS) if headers else [], "rows": rows}
    if rv is not None:
        t["metadata"]["resourceVersion"] = rv
    return t


def wants_table(accept):
    """Returns the Table version ('v1' or 'v1beta1') if Accept asks for a Table."""
    for part in (accept or "").split(","):
        fields = [f.strip() for f in part.split(";")]
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" \
                and params.get("v") in ("v1", "v1beta1"):
            return params["v"]
    return None


def accept_ok(accept):
    """True if we may answer application/json (JSON is all we speak)."""
    if not accept:
        return True
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        mt = fields[0].lower()
        params = dict(f.split("=", 1) for f in fields[1:] if "=" in f)
        if "as" in params and params.get("as") != "Table":
            continue  # PartialObjectMetadata etc.: not offered
        if mt in ("application/json", "application/*", "*/*"):
            return True
    return False


# --------------------------------------------------------------------------
# OpenAPI v3: just enough for kubectl create/replace/apply to see that the
# server validates (fieldValidation on PATCH) and that the kind exists.
# /openapi/v2 is not served.


def _openapi_v3_doc():
    gvk = [{"group": GROUP, "version": VERSION, "kind": KIND}]
    ref = {"$ref": "#/components/schemas/" + OPENAPI_NAME}
    qp = lambda n, d: {"name": n, "in": "query", "description": d, "schema": {"type": "string", "uniqueItems": True}}
    common = [qp("dryRun", "When present, indicates that modifications should not be persisted."),
              qp("fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."),
              qp("fieldValidation", "fieldValidation instructs the server on how to handle objects in the request "
                                    "containing unknown or duplicate fields.")]
    body = {"content": {"application/json": {"schema": ref}}, "required": True}
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}

    def op(opid, action, params=None, with_body=False, resp=None):
        o = {"operationId": opid, "tags": ["operatorOpenshiftIo_v1"], "x-kubernetes-action": action,
             "x-kubernetes-group-version-kind": gvk[0], "responses": resp or ok}
        if params:
            o["parameters"] = params
        if with_body:
            o["requestBody"] = body
        return o

    patch_body = {"content": {t: {"schema": {"type": "object"}} for t in (JSON_PATCH, MERGE_PATCH)},
                  "required": True}
    item = {"get": op("readOperatorOpenshiftIoV1MachineConfiguration", "get"),
            "put": op("replaceOperatorOpenshiftIoV1MachineConfiguration", "put", common, True),
            "patch": dict(op("patchOperatorOpenshiftIoV1MachineConfiguration", "patch", common),
                          requestBody=patch_body),
            "delete": op("deleteOperatorOpenshiftIoV1MachineConfiguration", "delete", common[:1]),
            "parameters": [{"name": "name", "in": "path", "required": True,
                            "description": "name of the MachineConfiguration",
                            "schema": {"type": "string", "uniqueItems": True}}]}
    status = {"get": op("readOperatorOpenshiftIoV1MachineConfigurationStatus", "get"),
              "put": op("replaceOperatorOpenshiftIoV1MachineConfigurationStatus", "put", common, True),
              "patch": dict(op("patchOperatorOpenshiftIoV1MachineConfigurationStatus", "patch", common),
                            requestBody=patch_body),
              "parameters": item["parameters"]}
    coll = {"get": op("listOperatorOpenshiftIoV1MachineConfiguration", "list"),
            "post": op("createOperatorOpenshiftIoV1MachineConfiguration", "post", common, True,
                       {"201": {"description": "Created", "content": {"application/json": {"schema": ref}}}})}
    obj = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema = {"description": "MachineConfiguration provides information to configure an operator to "
                             "manage Machine Configuration.",
              "type": "object", "required": ["spec"],
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "metadata": {"type": "object"}, "spec": obj, "status": obj},
              "x-kubernetes-group-version-kind": gvk}
    return {"openapi": "3.0.0", "info": {"title": "fakeapi", "version": "unversioned"},
            "paths": {BASE: coll, BASE + "/{name}": item, BASE + "/{name}/status": status},
            "components": {"schemas": {OPENAPI_NAME: schema}}}


OPENAPI_NAME = "com.github.openshift.api.operator.v1.MachineConfiguration"
OPENAPI_V3_DOC = _openapi_v3_doc()
OPENAPI_V3_HASH = hashlib.sha256(dumps(OPENAPI_V3_DOC).encode()).hexdigest()[:32].upper()


def _lease_openapi_v3_doc():
    """The same stub for coordination.k8s.io/v1 Leases (namespaced)."""
    gvk = {"group": leases.GROUP, "version": leases.VERSION, "kind": leases.KIND}
    name = "io.k8s.api.coordination.v1.Lease"
    ref = {"$ref": "#/components/schemas/" + name}
    qp = lambda n: {"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    common = [qp("dryRun"), qp("fieldManager"), qp("fieldValidation")]
    body = {"content": {"application/json": {"schema": ref}}, "required": True}
    ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}

    def op(verb, action, params=None, with_body=False, resp=None):
        o = {"operationId": verb + "CoordinationV1NamespacedLease", "tags": ["coordination_v1"],
             "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk, "responses": resp or ok}
        if params:
            o["parameters"] = params
        if with_body:
            o["requestBody"] = body
        return o

    patch_body = {"content": {t: {"schema": {"type": "object"}} for t in (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH)},
                  "required": True}
    path_params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True}}
                   for n in ("name", "namespace")]
    item = {"get": op("read", "get"), "put": op("replace", "put", common, True),
            "patch": dict(op("patch", "patch", common), requestBody=patch_body),
            "delete": op("delete", "delete", common[:1]), "parameters": path_params}
    coll = {"get": op("list", "list"),
            "post": op("create", "post", common, True,
                       {"201": {"description": "Created", "content": {"application/json": {"schema": ref}}}}),
            "delete": op("deletecollection", "deletecollection"), "parameters": path_params[1:]}
    base = leases.PREFIX + "/namespaces/{namespace}/" + leases.PLURAL
    schema = {"description": "Lease defines a lease concept.", "type": "object",
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "metadata": {"type": "object"}, "spec": {"type": "object"}},
              "x-kubernetes-group-version-kind": [gvk]}
    return {"openapi": "3.0.0", "info": {"title": "fakeapi", "version": "unversioned"},
            "paths": {base: coll, base + "/{name}": item,
                      leases.PREFIX + "/" + leases.PLURAL: {"get": op("list", "list")}},
            "components": {"schemas": {name: schema}}}


LEASE_OPENAPI_V3_DOC = _lease_openapi_v3_doc()
LEASE_OPENAPI_V3_HASH = hashlib.sha256(dumps(LEASE_OPENAPI_V3_DOC).encode()).hexdigest()[:32].upper()


# --------------------------------------------------------------------------
# The store


class Store:
    def __init__(self, args):
        self.cond = threading.Condition()
        self.objects = {}                 # name -> object (dict)
        self.inv = {res: {} for res in inventory.RESOURCES}   # res -> "ns/name" -> object
        self.leases = {}                  # "ns/name" -> Lease (coordination.k8s.io/v1)
        self.lease_fault = None           # {"code", "verbs", "count", "message", "retry_after"}: fault leases_unavailable
        self.lease_conflicts = 0          # the next N lease updates (PUT, PATCH) are 409 Conflict
        self.rv = 0                       # global resourceVersion counter
        self.history = collections.deque()  # (rv, type, obj, res) in rv order; res "mc" or an inventory one
        self.history_size = args.history
        self.floor = 0                    # watches may start at any rv >= floor
        self.drop_gen = 0                 # bumping it drops open watches
        self.drop_rst = False
        self.bcasts = collections.deque(maxlen=256)  # (seq, kind, payload)
        self.bseq = 0
        self.stall_until = 0.0
        self.stall_watches = False
        self.continue_410 = 0      # list requests with a continue token answered 410 Expired
        self.trickle_until = 0.0   # answers (not control ones) are sent a byte at a time until then
        self.trickle_gap = 0.2
        self.fail = None                  # {"count", "code", "kinds", "message", "retry_after"}
        self.forbidden = set()            # resources every request on gets 403, as without an RBAC rule
        self.watchers = 0
        self.status_on_main = args.status_on_main
        self.validate = not args.no_validate
        self.bookmark_interval = args.bookmark_interval
        self.too_large_wait = args.too_large_wait

    # -- internals (hold self.cond) --
    def _next_rv(self):
        self.rv += 1
        return str(self.rv)

    def _emit(self, etype, obj, res="mc"):
        self.history.append((int(obj["metadata"]["resourceVersion"]), etype, copy.deepcopy(obj), res))
        while len(self.history) > self.history_size:
            evicted = self.history.popleft()
            self.floor = evicted[0]
        self.cond.notify_all()

    def _broadcast(self, kind, payload=None):
        self.bseq += 1
        self.bcasts.append((self.bseq, kind, payload))
        self.cond.notify_all()

    def _normalize_new(self, obj, keep_rv=False):
        obj = copy.deepcopy(obj)
        obj["apiVersion"] = GV
        obj["kind"] = KIND
        md = obj.setdefault("metadata", {})
        md.pop("namespace", None)
        md.setdefault("uid", str(uuid.uuid4()))
        md.setdefault("creationTimestamp", now_rfc3339())
        md.setdefault("generation", 1)
        rv = md.get("resourceVersion")
        if keep_rv and isinstance(rv, str) and rv.isdigit() and int(rv) > self.rv:
            self.rv = int(rv)
        else:
            md["resourceVersion"] = self._next_rv()
        return obj

    # -- seeding and control (bypass validation and subresource rules) --
    def seed(self, obj):
        with self.cond:
            name = obj.get("metadata", {}).get("name")
            if not name:
                raise ValueError("object has no metadata.name")
            obj = self._normalize_new(obj, keep_rv=True)
            self.objects[name] = obj
            self.floor = self.rv   # history starts after the seed

    def set_object(self, obj):
        with self.cond:
            name = (obj.get("metadata") or {}).get("name")
            if not name:
                raise bad_request("object has no metadata.name")
            old = self.objects.get(name)
            if old is None:
                new = self._normalize_new(obj)
                etype = "ADDED"
            else:
                new = copy.deepcopy(obj)
                new["apiVersion"], new["kind"] = GV, KIND
                md = new.setdefault("metadata", {})
                md.pop("namespace", None)
                omd = old["metadata"]
                for k in ("uid", "creationTimestamp"):
                    md.setdefault(k, omd.get(k))
                md["generation"] = omd.get("generation", 1) + (1 if _spec_changed(old, new) else 0)
                md["resourceVersion"] = self._next_rv()
                etype = "MODIFIED"
            self.objects[name] = new
            self._emit(etype, new)
            return copy.deepcopy(new)

    def delete_object(self, name):
        with self.cond:
            old = self.objects.pop(name, None)
            if old is None:
                raise not_found(name)
            old = copy.deepcopy(old)
            old["metadata"]["resourceVersion"] = self._next_rv()
            self._emit("DELETED", old)
            return old

    # -- the inventory (Nodes, Machines): written by the control API only --
    def set_resource(self, res, obj):
        with self.cond:
            obj = inventory.normalize(res, copy.deepcopy(obj))
            key = inventory.key_of(obj)
            objs = self.inv[res]
            old = objs.get(key)
            md = obj["metadata"]
            md["uid"] = old["metadata"]["uid"] if old else str(uuid.uuid4())
            # A new object may say when it was made (a CSR an hour old, a
            # young Node), which the real API server never lets a client do.
            md["creationTimestamp"] = old["metadata"]["creationTimestamp"] if old else \
                md.get("creationTimestamp") or now_rfc3339()
            md["resourceVersion"] = self._next_rv()
            objs[key] = obj
            self._emit("MODIFIED" if old else "ADDED", obj, res)
            return copy.deepcopy(obj)

    def delete_resource(self, res, namespace, name):
        with self.cond:
            old = self.inv[res].pop("%s/%s" % (namespace or "", name), None)
            if old is None:
                raise not_found(name)
            old["metadata"]["resourceVersion"] = self._next_rv()
            self._emit("DELETED", old, res)
            return copy.deepcopy(old)

    def generate_nodes(self, count, prefix, base, pad_bytes=0):
        """count Nodes at once, without events: as if they had been there before any watch;
        pad_bytes of annotation each make them as large as busy real Nodes (~20 KiB)."""
        with self.cond:
            for i in range(count):
                obj = inventory.normalize("nodes", inventory.generated_node(i, prefix, base, pad_bytes))
                obj["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(),
                                       resourceVersion=self._next_rv())
                self.inv["nodes"][inventory.key_of(obj)] = obj
            self.history.clear()
            self.floor = self.rv

    # -- Leases (coordination.k8s.io/v1): written through the API, like kube-apiserver --
    def lease_set(self, obj):
        """Control API: create or replace a Lease as is (no validation)."""
        with self.cond:
            md = obj.setdefault("metadata", {})
            if not md.get("name") or not md.get("namespace"):
                raise bad_request("a Lease needs metadata.name and metadata.namespace")
            k = leases.key(md["namespace"], md["name"])
            old = self.leases.get(k)
            obj["apiVersion"], obj["kind"] = leases.GV, leases.KIND
            md["uid"] = old["metadata"]["uid"] if old else md.get("uid") or str(uuid.uuid4())
            md["creationTimestamp"] = old["metadata"]["creationTimestamp"] if old else \
                md.get("creationTimestamp") or now_rfc3339()
            md["resourceVersion"] = self._next_rv()
            self.leases[k] = obj
            self._emit("MODIFIED" if old else "ADDED", obj, leases.RES)
            return copy.deepcopy(obj)

    def lease_remove(self, ns, name):
        """Control API: delete a Lease (DELETED event)."""
        with self.cond:
            old = self.leases.pop(leases.key(ns or "", name), None)
            if old is None:
                raise lease_not_found(name)
            old["metadata"]["resourceVersion"] = self._next_rv()
            self._emit("DELETED", old, leases.RES)
            return copy.deepcopy(old)

    def lease_get(self, ns, name):
        with self.cond:
            o = self.leases.get(leases.key(ns, name))
            if o is None:
                raise lease_not_found(name)
            return copy.deepcopy(o)

    def _lease_check_ns(self, obj, ns):
        md = obj.setdefault("metadata", {})
        if md.get("namespace") and md["namespace"] != ns:
            raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
        md["namespace"] = ns

    def _lease_store_new(self, ns, obj, dry_run):
        """The create half (POST, or PUT of a missing Lease): system fields, validation, 409 AlreadyExists."""
        md = obj["metadata"]
        for k in ("uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "managedFields", "selfLink"):
            md.pop(k, None)
        generated = not md.get("name") and md.get("generateName")
        for _ in range(8):
            if generated:
                md["name"] = leases.generate_name(md["generateName"])
            errs = leases.validate(obj)
            if errs:
                raise lease_invalid(md.get("name", ""), errs)
            k = leases.key(ns, md["name"])
            if k not in self.leases or not generated:
                break
        if k in self.leases:
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (leases.QUALIFIED, md["name"]),
                           lease_details(md["name"]))
        obj["apiVersion"], obj["kind"] = leases.GV, leases.KIND
        md["uid"] = str(uuid.uuid4())
        md["creationTimestamp"] = now_rfc3339()
        if dry_run:
            return copy.deepcopy(obj)
        md["resourceVersion"] = self._next_rv()
        self.leases[k] = obj
        self._emit("ADDED", obj, leases.RES)
        return copy.deepcopy(obj)

    def lease_create(self, ns, obj, dry_run):
        with self.cond:
            obj = copy.deepcopy(obj)
            self._lease_check_ns(obj, ns)
            return self._lease_store_new(ns, obj, dry_run)

    def lease_update(self, ns, name, mutate, dry_run, put):
        """PUT (put=True: needs metadata.resourceVersion; a missing Lease is created, 201, as
        the lease strategy's AllowCreateOnUpdate says) or PATCH (mutate of the current object).
        Returns (object, created)."""
        with self.cond:
            k = leases.key(ns, name)
            old = self.leases.get(k)
            if old is None and not put:
                raise lease_not_found(name)
            cand = mutate(copy.deepcopy(old) if old else None)
            md = cand.setdefault("metadata", {})
            if md.get("name", name) != name:
                raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                  % (md.get("name"), name))
            md["name"] = name
            self._lease_check_ns(cand, ns)
            if old is None:
                return self._lease_store_new(ns, cand, dry_run), True
            if self.lease_conflicts > 0:
                self.lease_conflicts -= 1
                raise lease_conflict(name)
            omd = old["metadata"]
            crv = md.get("resourceVersion")
            if put and not crv:
                raise ApiError(422, "Invalid", '%s "%s" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
                               "must be specified for an update" % (leases.QUALIFIED, name),
                               dict(lease_details(name), causes=[{
                                   "reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
                                   "message": "Invalid value: 0x0: must be specified for an update"}]))
            if crv and crv != omd["resourceVersion"]:
                raise lease_conflict(name)
            errs = leases.validate(cand, old)
            if errs:
                raise lease_invalid(name, errs)
            for f in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
                if f in omd:
                    md[f] = omd[f]
                else:
                    md.pop(f, None)
            for f in ("generation", "managedFields", "selfLink"):
                md.pop(f, None)
            cand["apiVersion"], cand["kind"] = leases.GV, leases.KIND
            md["resourceVersion"] = omd["resourceVersion"]
            if cand == old:
                return copy.deepcopy(old), False   # no change: no new resourceVersion, no event
            if dry_run:
                return copy.deepcopy(cand), False
            md["resourceVersion"] = self._next_rv()
            self.leases[k] = cand
            self._emit("MODIFIED", cand, leases.RES)
            return copy.deepcopy(cand), False

    def lease_delete(self, ns, name, precond, dry_run):
        with self.cond:
            k = leases.key(ns, name)
            old = self.leases.get(k)
            if old is None:
                raise lease_not_found(name)
            md = old["metadata"]
            for what, field in (("UID", "uid"), ("ResourceVersion", "resourceVersion")):
                want = precond.get(field)
                if want and want != md.get(field):
                    raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": Precondition failed: '
                                   "%s in precondition: %s, %s in object meta: %s"
                                   % (leases.QUALIFIED, name, what, want, what, md.get(field)), lease_details(name))
            if not dry_run:
                gone = copy.deepcopy(self.leases.pop(k))
                gone["metadata"]["resourceVersion"] = self._next_rv()
                self._emit("DELETED", gone, leases.RES)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": dict(lease_details(name), uid=md.get("uid"))}

    # -- API reads --
    def get(self, name):
        with self.cond:
            o = self.objects.get(name)
            if o is None:
                raise not_found(name)
            return copy.deepcopy(o)

    def list(self, pred):
        with self.cond:
            items = [copy.deepcopy(o) for n, o in sorted(self.objects.items()) if pred(o)]
            return items, str(self.rv)

    def wait_for_rv(self, want, deadline):
        """Waits until the store has reached resourceVersion want; False on timeout."""
        with self.cond:
            while self.rv < want:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 0.25))
            return True

    # -- API writes --
    def create(self, obj, dry_run):
        with self.cond:
            md = obj.get("metadata")
            if not isinstance(md, dict) or not md.get("name"):
                raise invalid("", [("metadata.name", "FieldValueRequired",
                                    "Required value: name or generateName is required")])
            name = md["name"]
            if name in self.objects:
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (QUALIFIED, name),
                               {"name": name, "group": GROUP, "kind": PLURAL})
            obj = copy.deepcopy(obj)
            if not self.status_on_main:
                obj.pop("status", None)  # create cannot set status
            for k in ("uid", "resourceVersion", "generation", "creationTimestamp",
                      "deletionTimestamp", "managedFields"):
                obj["metadata"].pop(k, None)
            if self.validate:
                errs = validate(obj, None)
                if errs:
                    raise invalid(name, errs)
            if dry_run:
                new = copy.deepcopy(obj)
                new["apiVersion"], new["kind"] = GV, KIND
                new["metadata"].update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(),
                                       generation=1)
                return new
            new = self._normalize_new(obj)
            self.objects[name] = new
            self._emit("ADDED", new)
            return copy.deepcopy(new)

    def update(self, name, mutate, subresource, dry_run, require_rv=False):
        """mutate(copy_of_current) -> candidate object.  Applies the CRD update
        strategy (status subresource rules, generation), optimistic concurrency,
        validation; skips no-op writes like etcd does."""
        with self.cond:
            old = self.objects.get(name)
            if old is None:
                raise not_found(name)
            cand = mutate(copy.deepcopy(old))
            if not isinstance(cand, dict):
                raise bad_request("the object is not a JSON object")
            cmd = cand.get("metadata")
            if cmd is None:
                cmd = cand["metadata"] = {}
            if not isinstance(cmd, dict):
                raise bad_request("metadata must be an object")
            if cand.get("kind") not in (None, KIND) or cand.get("apiVersion") not in (None, GV):
                raise bad_request("the API version in the data (%s) does not match the expected API "
                                  "version (%s)" % (cand.get("apiVersion"), GV))
            if cmd.get("name", name) != name:
                raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                  % (cmd.get("name"), name))
            crv = cmd.get("resourceVersion")
            if require_rv and not crv:
                raise invalid(name, [("metadata.resourceVersion", "FieldValueInvalid",
                                      "Invalid value: 0x0: must be specified for an update")])
            if crv and crv != old["metadata"]["resourceVersion"]:
                raise conflict(name)
            omd = old["metadata"]
            if subresource == "status":
                new = copy.deepcopy(old)      # only status may change
                if "status" in cand:
                    new["status"] = cand["status"]
                else:
                    new.pop("status", None)
            else:
                new = cand
                if not self.status_on_main:   # status is ignored on the main resource
                    if "status" in old:
                        new["status"] = copy.deepcopy(old["status"])
                    else:
                        new.pop("status", None)
                md = new["metadata"]
                md.pop("namespace", None)
                for k in ("uid", "creationTimestamp", "generation", "deletionTimestamp",
                          "deletionGracePeriodSeconds"):
                    if k in omd:
                        md[k] = omd[k]
                    else:
                        md.pop(k, None)
            new["apiVersion"], new["kind"] = GV, KIND
            new["metadata"]["name"] = name
            new["metadata"]["resourceVersion"] = omd["resourceVersion"]
            if self.validate:
                errs = validate(new, old)
                if errs:
                    raise invalid(name, errs)
            if new == old:
                return copy.deepcopy(old)     # no-op: no new resourceVersion, no event
            if _spec_changed(old, new):
                new["metadata"]["generation"] = omd.get("generation", 1) + 1
            if dry_run:
                return copy.deepcopy(new)
            new["metadata"]["resourceVersion"] = self._next_rv()
            self.objects[name] = new
            self._emit("MODIFIED", new)
            return copy.deepcopy(new)

    def delete(self, name, precond, dry_run):
        with self.cond:
            old = self.objects.get(name)
            if old is None:
                raise not_found(name)
            md = old["metadata"]
            if precond.get("uid") and precond["uid"] != md.get("uid"):
                raise ApiError(409, "Conflict",
                               "Operation cannot be fulfilled on %s \"%s\": Precondition failed: "
                               "UID in precondition: %s, UID in object meta: %s"
                               % (QUALIFIED, name, precond["uid"], md.get("uid")),
                               {"name": name, "group": GROUP, "kind": PLURAL})
            if precond.get("resourceVersion") and precond["resourceVersion"] != md["resourceVersion"]:
                raise ApiError(409, "Conflict",
                               "Operation cannot be fulfilled on %s \"%s\": Precondition failed: "
                               "ResourceVersion in precondition: %s, ResourceVersion in object meta: %s"
                               % (QUALIFIED, name, precond["resourceVersion"], md["resourceVersion"]),
                               {"name": name, "group": GROUP, "kind": PLURAL})
            uid = md.get("uid")
            if not dry_run:
                gone = copy.deepcopy(self.objects.pop(name))
                gone["metadata"]["resourceVersion"] = self._next_rv()
                self._emit("DELETED", gone)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "details": {"name": name, "group": GROUP, "kind": PLURAL, "uid": uid}}

    # -- faults --
    def expire(self, notify):
        with self.cond:
            self.history.clear()
            self.floor = self.rv
            if notify:
                self._broadcast("expire")
            self.cond.notify_all()

    def stats_locked(self):
        return {"resourceVersion": str(self.rv), "historyFloor": str(self.floor),
                "historyLength": len(self.history), "objects": sorted(self.objects),
                "inventory": {res: len(objs) for res, objs in self.inv.items()},
                "leases": len(self.leases), "leaseConflictsPending": self.lease_conflicts,
                "leaseFault": dict(self.lease_fault, verbs=sorted(self.lease_fault["verbs"]))
                if self.lease_fault else None,
                "currentWatchers": self.watchers}


def _spec_changed(old, new):
    """CRD rule: generation bumps when anything but metadata and status changes."""
    strip = lambda o: {k: v for k, v in o.items() if k not in ("metadata", "status")}
    return strip(old) != strip(new)


# --------------------------------------------------------------------------
# Stats


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_kind = collections.Counter()
        self.by_code = collections.Counter()
        self.by_resource = {}     # resource -> Counter(verb)
        self.bytes = {}           # resource -> {"in": request body bytes, "out": response body bytes}
        self.watches_total = 0
        self.last_token_valid = None
        self.auth_failures = 0
        self.recent = collections.deque(maxlen=100)

    def count(self, kind):
        with self.lock:
            self.by_kind[kind] += 1

    def record_resource(self, res, kind, bytes_in, bytes_out):
        with self.lock:
            self.by_resource.setdefault(res, collections.Counter())[kind] += 1
            b = self.bytes.setdefault(res, {"in": 0, "out": 0})
            b["in"] += bytes_in
            b["out"] += bytes_out

    def record(self, method, target, kind, code, ua):
        with self.lock:
            self.by_code[str(code)] += 1
            self.recent.append({"time": time.time(), "method": method, "path": target,
                                "kind": kind, "code": code, "userAgent": ua})

    def snapshot(self):
        with self.lock:
            return {"requestsByKind": dict(self.by_kind), "requestsByCode": dict(self.by_code),
                    "requestsByResource": {r: dict(c) for r, c in self.by_resource.items()},
                    "bytesByResource": {r: dict(b) for r, b in self.bytes.items()},
                    "watchesTotal": self.watches_total, "lastTokenValid": self.last_token_valid,
                    "authFailures": self.auth_failures, "recentRequests": list(self.recent)}

    def reset(self):
        with self.lock:
            self.by_kind.clear()
            self.by_code.clear()
            self.by_resource.clear()
            self.bytes.clear()
            self.watches_total = 0
            self.auth_failures = 0
            self.last_token_valid = None
            self.recent.clear()


# --------------------------------------------------------------------------
# HTTP


class WatchDropped(Exception):
    pass


def truthy(v):
    return v is not None and v.lower() in ("1", "true", "t", "yes")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fakeapi"
    sys_version = ""
    timeout = 300  # idle keep-alive connections are closed after this

    # quiet the default per-request log; we log our own line
    def log_message(self, fmt, *args):
        pass

    def log_error(self, fmt, *args):
        log("%s %s" % (self.peer(), fmt % args))

    def peer(self):
        return "%s:%s" % (self.client_address[0], self.client_address[1])

    def send_response(self, code, message=None):
        # like the real server: Date, no Server header
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    # -- plumbing --
    def read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            data = b""
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline(8)
                if len(data) > MAX_BODY:
                    self.close_connection = True
                    raise ApiError(413, "RequestEntityTooLarge", "Request entity too large")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            raise ApiError(413, "RequestEntityTooLarge",
                           "Request entity too large: limit is %d" % MAX_BODY)
        return self.rfile.read(n) if n > 0 else b""

    def send_body(self, code, body, ctype="application/json", headers=None):
        if isinstance(body, (dict, list)):
            body = (json.dumps(body) + "\n").encode()
        elif isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body)))
        self.bytes_out += len(body)
        if self.close_connection:
            self.send_header("Connection", "close")
        # headers and body in one write (one TLS record where it fits)
        self._headers_buffer.append(b"\r\n")
        if self.command != "HEAD":
            self._headers_buffer.append(body)
        st = self.server.store
        if time.monotonic() < st.trickle_until and not self.path.startswith("/_fake/"):
            data = b"".join(self._headers_buffer)
            self._headers_buffer = []
            for i in range(len(data)):   # one byte, one TLS record, per gap
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
                time.sleep(st.trickle_gap)
                if time.monotonic() >= st.trickle_until + 60:
                    break
        else:
            self.flush_headers()
        self.resp_code = code

    def send_error_status(self, err):
        self.send_body(err.code, err.status(), headers=err.headers)

    # -- classification --
    def classify(self, method, path, q):
        if path.startswith("/_fake/"):
            return "control"
        if path in ("/healthz", "/livez", "/readyz") or path.startswith(("/healthz/", "/livez/", "/readyz/")):
            return "health"
        if path in ("/version", "/api", "/apis", "/apis/" + GROUP, "/apis/" + GV) \
                or path.startswith("/openapi/") or path in inventory.DISCOVERY_PATHS \
                or path in leases.DISCOVERY_PATHS:
            return "discovery"
        lp = leases.parse_path(path)
        if lp is not None:
            if lp[2] or (method == "GET" and truthy(q.get("watch"))):
                return "watch"
            if lp[1] is None:
                return {"GET": "list", "POST": "create", "DELETE": "deletecollection"}.get(method, "other")
            return {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "other")
        inv = inventory.parse_path(path)
        if inv is not None:
            if method != "GET":
                return "other"
            return "watch" if inv[3] or truthy(q.get("watch")) else ("get" if inv[2] else "list")
        r = self.parse_resource_path(path)
        if r is None:
            return "other"
        name, sub, legacy_watch = r
        if legacy_watch or (method == "GET" and truthy(q.get("watch"))):
            return "watch"
        if sub == "status":
            return {"GET": "get", "PUT": "update", "PATCH": "patch"}.get(method, "other")
        if name is None:
            return {"GET": "list", "POST": "create", "DELETE": "deletecollection"}.get(method, "other")
        return {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "other")

    @staticmethod
    def parse_resource_path(path):
        """(name|None, subresource|None, legacy_watch) or None if not our resource."""
        legacy = False
        p = path
        wbase = "/apis/" + GV + "/watch/" + PLURAL
        if p == wbase or p.startswith(wbase + "/"):
            legacy = True
            p = BASE + p[len(wbase):]
        if p == BASE:
            return (None, None, legacy)
        if not p.startswith(BASE + "/"):
            return None
        parts = p[len(BASE) + 1:].split("/")
        if len(parts) == 1 and parts[0]:
            return (parts[0], None, legacy)
        if len(parts) == 2 and parts[0] and parts[1] == "status" and not legacy:
            return (parts[0], "status", False)
        return None

    # -- main entry --
    def dispatch(self):
        start = time.monotonic()
        self.resp_code = 0
        self.watch_note = ""
        self.bytes_out = 0
        body = b""
        srv = self.server
        u = urllib.parse.urlsplit(self.path)
        path = u.path or "/"
        if len(path) > 1:
            path = path.rstrip("/")
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        kind = self.classify(self.command, path, q)
        if kind != "control":
            srv.stats.count(kind)
        try:
            try:
                body = self.read_body()
                if kind == "control":
                    self.control(path, body)
                    return
                self.wait_stall()
                self.maybe_fail(kind)
                self.authenticate()
                self.authorize(kind, path)
                self.route(kind, path, q, body)
            except ApiError as e:
                if self.resp_code:
                    raise
                self.send_error_status(e)
        except WatchDropped:
            self.close_connection = True
        except (BrokenPipeError, ConnectionError, ssl.SSLError, socket.timeout) as e:
            self.close_connection = True
            self.watch_note += " client-gone(%s)" % e.__class__.__name__
        finally:
            if kind != "control" or srv.args.log_control:
                log('%s "%s %s" %s kind=%s %.1fms%s' % (self.peer(), self.command, self.path,
                                                       self.resp_code or "-", kind,
                                                       (time.monotonic() - start) * 1000,
                                                       self.watch_note))
            if kind != "control":
                srv.stats.record(self.command, self.path, kind, self.resp_code,
                                 self.headers.get("User-Agent", ""))
                res = self.resource_of(path)
                if res:
                    srv.stats.record_resource(res, kind, len(body), self.bytes_out)

    def wait_stall(self):
        st = self.server.store
        with st.cond:
            while True:
                left = st.stall_until - time.monotonic()
                if left <= 0:
                    return
                st.cond.wait(min(left, 1.0))

    def maybe_fail(self, kind):
        st = self.server.store
        with st.cond:
            f = st.fail
            if not f or f["count"] <= 0:
                return
            if f["kinds"] and kind not in f["kinds"]:
                return
            f["count"] -= 1
            if f["count"] <= 0:
                st.fail = None
            code, msg, ra = f["code"], f["message"], f["retry_after"]
        details = {"causes": [{"message": msg}]} if code == 500 else None
        headers = {}
        if ra is not None:
            headers["Retry-After"] = str(ra)
            details = dict(details or {}, retryAfterSeconds=ra)
        text = "Internal error occurred: %s" % msg if code == 500 else msg
        raise ApiError(code, generic_status(code, text), text, details, headers)

    def authenticate(self):
        srv = self.server
        try:
            with open(srv.args.token_file, encoding="utf-8") as f:
                want = f.read().strip()
        except OSError:
            want = ""
        auth = self.headers.get("Authorization") or ""
        got = auth[7:].strip() if auth[:7].lower() == "bearer " else None
        ok = bool(want) and got is not None and hmac.compare_digest(got.encode(), want.encode())
        with srv.stats.lock:
            srv.stats.last_token_valid = ok
            if not ok:
                srv.stats.auth_failures += 1
        if not ok:
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def authorize(self, kind, path):
        """403, worded as the RBAC authorizer words it, on a resource the
        control API forbade (fault forbid): a service account without the rule."""
        lp = leases.parse_path(path)
        inv = inventory.parse_path(path)
        mc = self.parse_resource_path(path) if inv is None and lp is None and kind not in ("health", "discovery") \
            else None
        if lp is not None:
            res, ns, name = leases.RES, lp[0], lp[1]
            group, plural = leases.GROUP, leases.PLURAL
        elif inv is not None:
            res, ns, name = inv[0], inv[1], inv[2]
            group, plural = inventory.RESOURCES[res]["group"], inventory.RESOURCES[res]["plural"]
        elif mc is not None:
            res, ns, name = QUALIFIED, None, mc[0]
            group, plural = GROUP, PLURAL
        else:
            return
        st = self.server.store
        with st.cond:
            allowed = res not in st.forbidden
        if allowed:
            if lp is not None:
                self.lease_fault(kind, ns, name)
            return
        scope = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
        who = res + (' "%s"' % name if name else "")
        details = {"group": group, "kind": plural}
        if name:
            details["name"] = name
        raise ApiError(403, "Forbidden", '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s'
                       % (who, FORBIDDEN_USER, kind, plural, group, scope), details)

    @staticmethod
    def resource_of(path):
        """The qualified resource a path is about (for stats), or None."""
        if leases.parse_path(path) is not None:
            return leases.RES
        inv = inventory.parse_path(path)
        if inv is not None:
            return inv[0]
        if Handler.parse_resource_path(path) is not None:
            return QUALIFIED
        return None

    def lease_fault(self, kind, ns, name):
        """Fault leases_unavailable: requests of those verbs on Leases fail with its code."""
        st = self.server.store
        with st.cond:
            f = st.lease_fault
            if not f or kind not in f["verbs"]:
                return
            if f["count"] is not None:
                f["count"] -= 1
                if f["count"] <= 0:
                    st.lease_fault = None
            code, msg, ra = f["code"], f["message"], f["retry_after"]
        headers, details = {}, None
        if code == 403:
            scope = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
            who = leases.QUALIFIED + (' "%s"' % name if name else "")
            details = {"group": leases.GROUP, "kind": leases.PLURAL}
            if name:
                details["name"] = name
            msg = msg or ('%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s'
                          % (who, FORBIDDEN_USER, kind, leases.PLURAL, leases.GROUP, scope))
        elif code == 500:
            msg = "Internal error occurred: %s" % (msg or "etcdserver: request timed out")
        elif code == 429:
            msg = msg or "Too many requests, please try again later."
        else:
            msg = msg or "the server is currently unable to handle the request"
        if ra is not None:
            headers["Retry-After"] = str(ra)
            details = dict(details or {}, retryAfterSeconds=ra)
        raise ApiError(code, generic_status(code, msg), msg, details, headers)

    # -- routing --
    def route(self, kind, path, q, body):
        m = self.command
        if kind == "health":
            if m not in ("GET", "HEAD"):
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            return self.send_body(200, "ok", "text/plain; charset=utf-8")
        if kind == "discovery":
            if m not in ("GET", "HEAD"):
                raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
            return self.discovery(path)
        inv = inventory.parse_path(path)
        lp = leases.parse_path(path)
        if kind == "other" and self.parse_resource_path(path) is None and inv is None and lp is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if not accept_ok(self.headers.get("Accept")):
            raise ApiError(406, "NotAcceptable", "only the following media types are accepted: "
                           "application/json, application/yaml, application/vnd.kubernetes.protobuf")
        if lp is not None:
            return self.lease_route(kind, lp, q, body)
        if inv is not None:
            return self.inventory_route(kind, inv, q)
        name, sub, _ = self.parse_resource_path(path)
        dry_run = "dryRun" in q and q["dryRun"] in ("All", "all")
        if kind == "watch":
            return self.watch(name, q)
        if kind == "list":
            return self.list(q)
        if kind == "get":
            obj = self.server.store.get(name)
            return self.send_object(obj)
        if kind == "create":
            obj = self.decode_object(body)
            new = self.server.store.create(obj, dry_run)
            return self.send_body(201, new)
        if kind == "update":
            obj = self.decode_object(body)
            new = self.server.store.update(name, lambda cur: obj, sub, dry_run, require_rv=True)
            return self.send_body(200, new)
        if kind == "patch":
            return self.patch(name, sub, body, dry_run)
        if kind == "delete":
            return self.delete(name, body, dry_run)
        if kind == "deletecollection":
            return self.delete_collection(q, dry_run)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def inventory_route(self, kind, inv, q):
        res, namespace, name, _ = inv
        st = self.server.store
        r = inventory.RESOURCES[res]
        if kind == "watch":
            return self.watch(name, q, res, namespace)
        if kind == "get":
            with st.cond:
                o = st.inv[res].get("%s/%s" % (namespace or "", name))
                o = copy.deepcopy(o) if o else None
            if o is None:
                raise ApiError(404, "NotFound", '%s "%s" not found' % (r["plural"] + ("." + r["group"] if r["group"] else ""), name),
                               {"name": name, "group": r["group"], "kind": r["plural"]})
            return self.send_object(o)
        if kind != "list":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        return self.inventory_list(res, namespace, q)

    def inventory_list(self, res, namespace, q):
        return self.paged_list(self.server.store.inv[res], namespace, q, inventory.gv(res),
                               inventory.RESOURCES[res]["kind"] + "List")

    def paged_list(self, objects, namespace, q, gv, list_kind, columns=None, cells=None, strip_type=False,
                   check_rv=False):
        """A list of objects ("ns/name" -> object) of one kind: selectors, namespace, limit/continue
        paging; check_rv: the resourceVersion parameter is honoured as the real server does
        (a future one waits, then 504; Exact only at the current one)."""
        st = self.server.store
        sel = self.selectors(q)
        pred = (lambda o: sel(o) and o["metadata"].get("namespace") == namespace) if namespace else sel
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise bad_request("limit: invalid value %r" % q.get("limit"))
        rvq = q.get("resourceVersion", "")
        if check_rv and rvq not in ("", "0") and not q.get("continue"):
            if not rvq.isdigit():
                raise bad_request('invalid resource version "%s"' % rvq)
            if not st.wait_for_rv(int(rvq), time.monotonic() + st.too_large_wait):
                raise too_large(int(rvq), st.rv)
            if q.get("resourceVersionMatch") == "Exact" and int(rvq) != st.rv:
                raise ApiError(410, "Expired", "resourceVersionMatch=Exact is supported by the fake only at the "
                                               "current resourceVersion (%d)" % st.rv)
        after = None
        with st.cond:
            rv = st.rv
            if q.get("continue"):
                tok = inventory.decode_continue(q["continue"])
                if tok is None:
                    raise bad_request("continue key is not valid: the continue token is not valid")
                rv, after = tok
                if st.continue_410 > 0 or rv < st.floor:
                    st.continue_410 = max(0, st.continue_410 - 1)
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the continue "
                                   "parameter, or use the continue token in this response to retrieve the "
                                   "remainder of the results. Continuing with the provided token results in "
                                   "an inconsistent list - objects that were created, modified, or deleted "
                                   "between the time the first chunk was returned and now may show up in "
                                   "the list.")
            items, last, more = inventory.page(objects, pred, limit, after)
            items = [copy.deepcopy(o) for o in items]
        md = {"resourceVersion": str(rv)}
        if more:
            md["continue"] = inventory.encode_continue(rv, last)
        tv = wants_table(self.headers.get("Accept"))
        if tv:
            t = to_table(items, tv, q.get("includeObject", "Metadata"), str(rv), columns=columns, cells=cells)
            if more:
                t["metadata"]["continue"] = md["continue"]
            return self.send_body(200, t)
        if strip_type:   # a typed list's items carry no apiVersion and kind
            for o in items:
                o.pop("apiVersion", None)
                o.pop("kind", None)
        return self.send_body(200, {"apiVersion": gv, "kind": list_kind, "items": items, "metadata": md})

    # -- Leases --
    def lease_route(self, kind, lp, q, body):
        ns, name, _ = lp
        st = self.server.store
        dry_run = q.get("dryRun") in ("All", "all")
        if kind == "watch":
            return self.watch(name, q, leases.RES, ns)
        if kind == "list":
            return self.paged_list(st.leases, ns, q, leases.GV, leases.LIST_KIND, leases.TABLE_COLUMNS,
                                   leases.table_cells, strip_type=True, check_rv=True)
        if ns is None or kind == "other":
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        if kind == "get":
            return self.send_object(st.lease_get(ns, name), leases.TABLE_COLUMNS, leases.table_cells)
        if kind == "create":
            obj, warn = self.decode_lease(body, q)
            return self.send_body(201, st.lease_create(ns, obj, dry_run), headers=warn)
        if kind == "update":
            obj, warn = self.decode_lease(body, q)
            new, created = st.lease_update(ns, name, lambda cur: obj, dry_run, put=True)
            return self.send_body(201 if created else 200, new, headers=warn)
        if kind == "patch":
            return self.lease_patch(ns, name, body, dry_run)
        if kind == "delete":
            precond, dry_run = self.delete_options(body, dry_run)
            return self.send_body(200, st.lease_delete(ns, name, precond, dry_run))
        if kind == "deletecollection":
            sel = self.selectors(q)
            with st.cond:
                items = [copy.deepcopy(o) for k, o in sorted(st.leases.items())
                         if o["metadata"]["namespace"] == ns and sel(o)]
                for o in items:
                    st.lease_delete(ns, o["metadata"]["name"], {}, dry_run)
                rv = str(st.rv)
            for o in items:
                o.pop("apiVersion", None)
                o.pop("kind", None)
            return self.send_body(200, {"apiVersion": leases.GV, "kind": leases.LIST_KIND, "items": items,
                                        "metadata": {"resourceVersion": rv}})
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")

    def decode_lease(self, body, q):
        """The body of a create or update as a typed Lease: (lease, headers with a Warning for
        unknown fields).  fieldValidation=Strict makes unknown fields a 400."""
        obj = self.decode_object(body, kind=leases.KIND, gv=leases.GV)
        mode = q.get("fieldValidation", "Warn")
        try:
            lease, unknown = leases.decode(obj, strict=mode == "Strict")
        except leases.DecodeError as e:
            raise bad_request('Lease in version "v1" cannot be handled as a Lease: %s' % e)
        warn = {}
        if unknown and mode != "Ignore":
            warn["Warning"] = ", ".join('299 - "unknown field \\"%s\\""' % u for u in unknown)
        return lease, warn

    def lease_patch(self, ns, name, body, dry_run):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH):
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media types "
                           "include: %s, %s, %s" % (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH))
        try:
            patch = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("error decoding patch: %s" % e)

        def mutate(cur):
            if ctype in (MERGE_PATCH, STRATEGIC_PATCH):   # no list in a Lease has a merge key
                if not isinstance(patch, dict):
                    raise bad_request("merge patch must be a JSON object")
                out = merge_patch(cur, patch)
            else:
                try:
                    out = json_patch(cur, patch)
                except ValueError as e:
                    raise bad_request(str(e))
                except PatchError as e:
                    raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request",
                                   {"causes": [{"reason": "UnexpectedServerResponse", "message": str(e)}]})
            if not isinstance(out, dict):
                raise bad_request("the patched object is not a JSON object")
            try:
                return leases.decode(out)[0]
            except leases.DecodeError as e:
                text = dumps(out)
                msg = "Invalid value: %s: %s" % (json.dumps(text), e)
                raise ApiError(422, "Invalid", ' "" is invalid: patch: %s' % msg,
                               {"causes": [{"reason": "FieldValueInvalid", "message": msg, "field": "patch"}]})
        new, _ = self.server.store.lease_update(ns, name, mutate, dry_run, put=False)
        return self.send_body(200, new)

    def delete_options(self, body, dry_run):
        precond = {}
        if body.strip():
            try:
                opts = json.loads(body.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as e:
                raise bad_request("error decoding DeleteOptions: %s" % e)
            if isinstance(opts, dict):
                precond = opts.get("preconditions") or {}
                if opts.get("dryRun") in (["All"], "All"):
                    dry_run = True
        return precond, dry_run

    def discovery(self, path):
        h, p = self.server.server_address[0], self.server.server_address[1]
        host = ("[%s]:%d" if ":" in h else "%s:%d") % (h, p)
        gv = {"groupVersion": GV, "version": VERSION}
        if path == "/version":
            v = self.server.args.server_version
            mm = re.match(r"v(\d+)\.(\d+)", v)
            return self.send_body(200, {
                "major": mm.group(1) if mm else "1", "minor": mm.group(2) if mm else "0",
                "gitVersion": v, "gitCommit": "0" * 40, "gitTreeState": "clean",
                "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0",
                "compiler": "gc", "platform": "linux/amd64"})
        if path == "/api":
            return self.send_body(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0", "serverAddress": host}]})
        if path == "/apis":
            # Aggregated discovery is not implemented: a plain APIGroupList with
            # Content-Type application/json makes clients fall back to legacy.
            groups = [{"name": GROUP, "versions": [gv], "preferredVersion": gv}]
            lgv = {"groupVersion": leases.GV, "version": leases.VERSION}
            groups.append({"name": leases.GROUP, "versions": [lgv], "preferredVersion": lgv})
            for res, r in inventory.RESOURCES.items():
                if r["group"]:
                    igv = {"groupVersion": inventory.gv(res), "version": r["version"]}
                    groups.append({"name": r["group"], "versions": [igv], "preferredVersion": igv})
            return self.send_body(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        for res, r in inventory.RESOURCES.items():
            igv = {"groupVersion": inventory.gv(res), "version": r["version"]}
            if r["group"] and path == "/apis/" + r["group"]:
                return self.send_body(200, {"kind": "APIGroup", "apiVersion": "v1", "name": r["group"],
                                            "versions": [igv], "preferredVersion": igv})
            if path == r["prefix"]:
                return self.send_body(200, {
                    "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": inventory.gv(res),
                    "resources": [{"name": r["plural"], "singularName": r["singular"],
                                   "namespaced": r["namespaced"], "kind": r["kind"],
                                   "verbs": ["get", "list", "watch"], "shortNames": r["short"],
                                   "storageVersionHash": "fakeapiHash="}]})
        if path == "/apis/" + leases.GROUP:
            lgv = {"groupVersion": leases.GV, "version": leases.VERSION}
            return self.send_body(200, {"kind": "APIGroup", "apiVersion": "v1", "name": leases.GROUP,
                                        "versions": [lgv], "preferredVersion": lgv})
        if path == leases.PREFIX:
            return self.send_body(200, {
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": leases.GV,
                "resources": [{"name": leases.PLURAL, "singularName": leases.SINGULAR, "namespaced": True,
                               "kind": leases.KIND, "verbs": leases.VERBS, "storageVersionHash": "fakeapiHash="}]})
        if path == "/apis/" + GROUP:
            return self.send_body(200, {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP,
                                        "versions": [gv], "preferredVersion": gv})
        if path == "/apis/" + GV:
            return self.send_body(200, {
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GV,
                "resources": [
                    {"name": PLURAL, "singularName": SINGULAR, "namespaced": False, "kind": KIND,
                     "verbs": ["delete", "deletecollection", "get", "list", "patch", "create",
                               "update", "watch"],
                     "storageVersionHash": "fakeapiHash="},
                    {"name": PLURAL + "/status", "singularName": "", "namespaced": False,
                     "kind": KIND, "verbs": ["get", "patch", "update"]}]})
        if path == "/openapi/v3":
            return self.send_body(200, {"paths": {
                "apis/" + GV: {"serverRelativeURL": "/openapi/v3/apis/%s?hash=%s" % (GV, OPENAPI_V3_HASH)},
                "apis/" + leases.GV: {"serverRelativeURL": "/openapi/v3/apis/%s?hash=%s"
                                                           % (leases.GV, LEASE_OPENAPI_V3_HASH)}}})
        if path == "/openapi/v3/apis/" + GV:
            return self.send_body(200, OPENAPI_V3_DOC)
        if path == "/openapi/v3/apis/" + leases.GV:
            return self.send_body(200, LEASE_OPENAPI_V3_DOC)
        raise ApiError(404, "NotFound", "the server could not find the requested resource", {})

    def decode_object(self, body, kind=KIND, gv=GV):
        ctype = (self.headers.get("Content-Type") or "application/json").split(";")[0].strip().lower()
        if ctype not in ("application/json", "application/yaml", "*/*"):
            raise ApiError(415, "UnsupportedMediaType",
                           'the body of the request was in an unknown format - accepted media types '
                           'include: application/json, application/yaml')
        try:
            obj = parse_document(body.decode("utf-8"), "request body")
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("the object provided is unrecognized: %s" % e)
        if not isinstance(obj, dict):
            raise bad_request("the object provided is not an object")
        if obj.get("kind") not in (None, kind) or obj.get("apiVersion") not in (None, gv):
            raise bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                              % (obj.get("apiVersion"), gv))
        return obj

    def send_object(self, obj, columns=None, cells=None):
        tv = wants_table(self.headers.get("Accept"))
        if tv:
            q = self.query()
            return self.send_body(200, to_table([obj], tv, q.get("includeObject", "Metadata"),
                                                obj["metadata"]["resourceVersion"], columns=columns, cells=cells))
        return self.send_body(200, obj)

    def query(self):
        u = urllib.parse.urlsplit(self.path)
        return {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}

    def selectors(self, q):
        lsel = parse_label_selector(q.get("labelSelector", ""))
        fsel = parse_field_selector(q.get("fieldSelector", ""))
        return lambda o: fsel(o) and lsel(o.get("metadata", {}).get("labels") or {})

    def list(self, q):
        st = self.server.store
        pred = self.selectors(q)
        rv = q.get("resourceVersion", "")
        if rv not in ("", "0"):
            if not rv.isdigit():
                raise bad_request('invalid resource version "%s"' % rv)
            want = int(rv)
            if q.get("resourceVersionMatch") == "Exact":
                raise ApiError(410, "Expired", "resourceVersionMatch=Exact is not supported by the fake")
            if not st.wait_for_rv(want, time.monotonic() + st.too_large_wait):
                raise too_large(want, st.rv)
        items, cur = st.list(pred)
        tv = wants_table(self.headers.get("Accept"))
        if tv:
            return self.send_body(200, to_table(items, tv, q.get("includeObject", "Metadata"), cur))
        return self.send_body(200, {"apiVersion": GV, "kind": LIST_KIND, "items": items,
                                    "metadata": {"continue": "", "resourceVersion": cur}})

    def patch(self, name, sub, body, dry_run):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in (JSON_PATCH, MERGE_PATCH):
            raise ApiError(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media types "
                           "include: %s, %s" % (JSON_PATCH, MERGE_PATCH))
        try:
            patch = json.loads(body.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("error decoding patch: %s" % e)

        def mutate(cur):
            if ctype == MERGE_PATCH:
                if not isinstance(patch, dict):
                    raise bad_request("merge patch must be a JSON object")
                return merge_patch(cur, patch)
            try:
                return json_patch(cur, patch)
            except ValueError as e:
                raise bad_request(str(e))
            except PatchError as e:
                raise ApiError(422, "Invalid", "the server rejected our request due to an error in our request",
                               {"causes": [{"reason": "UnexpectedServerResponse", "message": str(e)}]})
        new = self.server.store.update(name, mutate, sub, dry_run)
        return self.send_body(200, new)

    def delete(self, name, body, dry_run):
        precond, dry_run = self.delete_options(body, dry_run)
        return self.send_body(200, self.server.store.delete(name, precond, dry_run))

    def delete_collection(self, q, dry_run):
        st = self.server.store
        items, _ = st.list(self.selectors(q))
        for o in items:
            try:
                st.delete(o["metadata"]["name"], {}, dry_run)
            except ApiError:
                pass
        return self.send_body(200, {"apiVersion": GV, "kind": LIST_KIND, "items": items,
                                    "metadata": {"continue": "", "resourceVersion": str(st.rv)}})

    # -- watch --
    def watch(self, name, q, res="mc", namespace=None):
        srv = self.server
        st = srv.store
        base_pred = self.selectors(q)
        if namespace:
            ns_pred = base_pred
            base_pred = lambda o: ns_pred(o) and o["metadata"].get("namespace") == namespace
        pred = (lambda o: base_pred(o) and o["metadata"]["name"] == name) if name else base_pred
        columns = cells = None
        if res == "mc":
            objects, bm_kind, bm_gv = st.objects, KIND, GV
        elif res == leases.RES:
            objects, bm_kind, bm_gv = st.leases, leases.KIND, leases.GV
            columns, cells = leases.TABLE_COLUMNS, leases.table_cells
        else:
            objects, bm_kind, bm_gv = st.inv[res], inventory.RESOURCES[res]["kind"], inventory.gv(res)
        rv_param = q.get("resourceVersion", "")
        try:
            timeout = int(q["timeoutSeconds"]) if q.get("timeoutSeconds") else srv.args.default_watch_timeout
        except ValueError:
            raise bad_request("timeoutSeconds: invalid value %r" % q.get("timeoutSeconds"))
        bookmarks = truthy(q.get("allowWatchBookmarks"))
        send_initial = truthy(q.get("sendInitialEvents"))
        if send_initial and q.get("resourceVersionMatch") != "NotOlderThan":
            raise invalid("", [("resourceVersionMatch", "FieldValueForbidden",
                                "Forbidden: sendInitialEvents requires setting resourceVersionMatch "
                                "to NotOlderThan")])
        if rv_param not in ("", "0") and not rv_param.isdigit():
            raise bad_request('invalid resource version "%s"' % rv_param)
        tv = wants_table(self.headers.get("Accept"))
        include = q.get("includeObject", "Metadata")
        deadline = time.monotonic() + max(timeout, 0)
        first_error = None
        initial = []
        if rv_param.isdigit() and rv_param != "0" and int(rv_param) > st.rv:
            want = int(rv_param)
            if not st.wait_for_rv(want, time.monotonic() + st.too_large_wait):
                first_error = too_large(want, st.rv).status()
        with st.cond:
            if first_error is None:
                if rv_param in ("", "0") or send_initial:
                    initial = [copy.deepcopy(o) for _, o in sorted(objects.items()) if pred(o)]
                    last_rv = st.rv
                    if send_initial and rv_param not in ("", "0"):
                        last_rv = max(last_rv, int(rv_param))
                else:
                    last_rv = int(rv_param)
                    if last_rv < st.floor:
                        first_error = status_obj(410, "Expired", "too old resource version: %d (%d)"
                                                 % (last_rv, st.floor))
            my_drop = st.drop_gen
            my_bseq = st.bseq
            st.watchers += 1
        with srv.stats.lock:
            srv.stats.watches_total += 1
        sent = 0
        end_how = "timeout"
        try:
            self.send_response(200)
            self.send_header("Audit-Id", str(uuid.uuid4()))
            self.send_header("Cache-Control", "no-cache, private")
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            self.resp_code = 200
            headers_sent = [False]

            def ev(etype, obj):
                if tv and etype in ("ADDED", "MODIFIED", "DELETED"):
                    obj = to_table([obj], tv, include, headers=not headers_sent[0], columns=columns, cells=cells)
                    headers_sent[0] = True
                return {"type": etype, "object": obj}

            if first_error is not None:
                self.write_chunk(dumps({"type": "ERROR", "object": first_error}) + "\n")
                sent += 1
                end_how = "error(%d)" % first_error["code"]
                self.end_chunks()
                return
            out = [ev("ADDED", o) for o in initial]
            if send_initial and bookmarks:
                out.append({"type": "BOOKMARK", "object": bookmark_obj(last_rv, initial_end=True, kind=bm_kind, gv=bm_gv)})
            for e in out:
                self.write_chunk(dumps(e) + "\n")
                sent += 1
            next_bookmark = time.monotonic() + (st.bookmark_interval or 0)
            while True:
                batch = []
                finish = None
                with st.cond:
                    # At most two passes (look, wait up to 250 ms, look again),
                    # then leave the lock so a closed client is noticed.
                    for attempt in (0, 1):
                        if attempt:
                            st.cond.wait(min(0.25, max(0.0, deadline - time.monotonic())))
                        nowm = time.monotonic()
                        if st.drop_gen != my_drop:
                            finish = "drop-rst" if st.drop_rst else "drop"
                            break
                        if nowm >= deadline:
                            finish = "timeout"
                            break
                        if st.stall_watches and nowm < st.stall_until:
                            continue
                        for seq, bkind, payload in st.bcasts:
                            if seq <= my_bseq:
                                continue
                            my_bseq = seq
                            if bkind == "garbage":
                                batch.append(("raw", payload))
                            elif bkind == "bookmark" and bookmarks:
                                batch.append(("bm", None))
                            elif bkind == "expire" and finish is None:
                                finish = "expired"
                            elif bkind == "error" and finish is None:
                                batch.append(("err", payload))
                                finish = "error(%d)" % payload["code"]
                        if finish is None and last_rv < st.floor:
                            finish = "expired"    # fell out of the window (expire, or too slow)
                        if finish is None:
                            for erv, etype, eobj, eres in st.history:
                                if erv > last_rv:
                                    if eres == res and pred(eobj):
                                        batch.append(("ev", ev(etype, eobj)))
                                    last_rv = erv
                            # every event up to st.rv has been seen (filtered or not)
                            last_rv = max(last_rv, st.rv)
                            if bookmarks and st.bookmark_interval and nowm >= next_bookmark:
                                batch.append(("bm", None))
                        elif finish == "expired":
                            batch.append(("err", status_obj(
                                410, "Expired", "too old resource version: %d (%d)" % (last_rv, st.floor))))
                        if batch or finish:
                            break
                    bm_rv = last_rv
                if finish and finish.startswith("drop"):
                    self.abort_connection(rst=finish == "drop-rst")
                    end_how = finish
                    raise WatchDropped()
                for what, payload in batch:
                    if what == "ev":
                        line = dumps(payload) + "\n"
                    elif what == "bm":
                        line = dumps({"type": "BOOKMARK", "object": bookmark_obj(bm_rv, kind=bm_kind, gv=bm_gv)}) + "\n"
                        next_bookmark = time.monotonic() + (st.bookmark_interval or 0)
                    elif what == "err":
                        line = dumps({"type": "ERROR", "object": payload}) + "\n"
                    else:
                        line = payload
                    self.write_chunk(line)
                    sent += 1
                if finish:
                    end_how = finish
                    self.end_chunks()
                    return
                if not batch and self.client_gone():
                    end_how = "client-closed"
                    self.close_connection = True
                    return
        finally:
            with st.cond:
                st.watchers -= 1
            self.watch_note = " watch rv=%s events=%d end=%s" % (rv_param or '""', sent, end_how)

    def write_chunk(self, text):
        data = text.encode() if isinstance(text, str) else text
        self.bytes_out += len(data)
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def abort_connection(self, rst=False):
        self.close_connection = True
        try:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def client_gone(self):
        """True if the client closed a connection on which it sends nothing more."""
        sock = self.connection
        try:
            r, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        if not r:
            return False
        old = sock.gettimeout()
        try:
            sock.setblocking(False)
            data = sock.recv(1)
            return True  # EOF (b"") or unexpected bytes on a watch: stop either way
        except (ssl.SSLWantReadError, BlockingIOError):
            return False
        except (OSError, ssl.SSLError):
            return True
        finally:
            try:
                sock.settimeout(old)
            except OSError:
                pass

    # -- control API --
    def control(self, path, body):
        srv = self.server
        st = srv.store
        if srv.args.control_token_file:
            try:
                with open(srv.args.control_token_file, encoding="utf-8") as f:
                    want = f.read().strip()
            except OSError:
                want = ""
            auth = self.headers.get("Authorization") or ""
            if not want or not hmac.compare_digest(auth.encode(), ("Bearer " + want).encode()):
                raise ApiError(401, "Unauthorized", "Unauthorized")
        if path == "/_fake/stats" and self.command == "GET":
            out = srv.stats.snapshot()
            with st.cond:
                out.update(st.stats_locked())
                out["stalledFor"] = max(0.0, st.stall_until - time.monotonic())
                out["failNext"] = dict(st.fail, kinds=sorted(st.fail["kinds"] or [])) if st.fail else None
                out["forbidden"] = sorted(st.forbidden)
                out["statusOnMain"] = st.status_on_main
                out["validate"] = st.validate
                out["bookmarkInterval"] = st.bookmark_interval
            return self.send_body(200, out)
        if path == "/_fake/objects" and self.command == "GET":
            items, rv = st.list(lambda o: True)
            return self.send_body(200, {"apiVersion": GV, "kind": LIST_KIND, "items": items,
                                        "metadata": {"resourceVersion": rv}})
        if path == "/_fake/leases" and self.command == "GET":
            with st.cond:
                items = [copy.deepcopy(o) for _, o in sorted(st.leases.items())]
                rv = str(st.rv)
            return self.send_body(200, {"apiVersion": leases.GV, "kind": leases.LIST_KIND, "items": items,
                                        "metadata": {"resourceVersion": rv}})
        if path != "/_fake/fault" or self.command != "POST":
            raise ApiError(404, "NotFound", "control endpoints: GET /_fake/stats, GET /_fake/objects, "
                                            "GET /_fake/leases, POST /_fake/fault")
        try:
            req = json.loads(body.decode("utf-8") or "{}")
            if not isinstance(req, dict):
                raise ValueError("body must be a JSON object")
        except (ValueError, UnicodeDecodeError) as e:
            raise bad_request("control: %s" % e)
        f = req.get("fault")
        res = {"ok": True, "fault": f}
        try:
            if f == "drop_watches":
                with st.cond:
                    res["dropped"] = st.watchers
                    st.drop_gen += 1
                    st.drop_rst = bool(req.get("rst"))
                    st.cond.notify_all()
            elif f == "stall":
                secs = float(req.get("seconds", 5))
                with st.cond:
                    st.stall_until = time.monotonic() + secs
                    st.stall_watches = bool(req.get("watches", False))
                    st.cond.notify_all()
            elif f in ("status_500", "fail"):
                kinds = req.get("kinds")
                if isinstance(kinds, str):
                    kinds = [kinds]
                with st.cond:
                    st.fail = {"count": int(req.get("count", 1)), "code": int(req.get("code", 500)),
                               "kinds": set(kinds or []), "message": str(req.get("message", "fakeapi fault")),
                               "retry_after": req.get("retry_after")}
            elif f == "garbage":
                text = req.get("text", "this is not JSON {{{")
                with st.cond:
                    res["watchers"] = st.watchers
                    st._broadcast("garbage", (text.rstrip("\n") + "\n").encode())
            elif f == "bookmark":
                with st.cond:
                    res["watchers"] = st.watchers
                    st._broadcast("bookmark")
            elif f == "watch_error":
                code = int(req.get("code", 410))
                reason = req.get("reason") or generic_status(code, "")
                msg = req.get("message") or ("too old resource version: 1 (%d)" % st.rv
                                             if code == 410 else "fakeapi watch error")
                with st.cond:
                    res["watchers"] = st.watchers
                    st._broadcast("error", status_obj(code, reason, msg))
            elif f == "expire":
                st.expire(bool(req.get("notify", False)))
            elif f == "set_object":
                obj = req.get("object")
                if obj is None and req.get("file"):
                    objs = load_object_file(req["file"])
                    if len(objs) != 1:
                        raise bad_request("%s: expected exactly one object" % req["file"])
                    obj = objs[0]
                if isinstance(obj, str):
                    obj = parse_document(obj, "object")
                if not isinstance(obj, dict):
                    raise bad_request("set_object needs an object (JSON or YAML text) or a file")
                res["object"] = st.set_object(obj)
            elif f == "set_resource":
                if req.get("resource") not in inventory.RESOURCES:
                    raise bad_request("set_resource: resource must be one of %s" % sorted(inventory.RESOURCES))
                obj = req.get("object")
                if isinstance(obj, str):
                    obj = parse_document(obj, "object")
                if not isinstance(obj, dict):
                    raise bad_request("set_resource needs an object")
                res["object"] = st.set_resource(req["resource"], obj)
            elif f == "delete_resource":
                if req.get("resource") not in inventory.RESOURCES:
                    raise bad_request("delete_resource: resource must be one of %s" % sorted(inventory.RESOURCES))
                res["object"] = st.delete_resource(req["resource"], req.get("namespace"), req.get("name", ""))
            elif f == "set_lease":
                obj = req.get("object")
                if isinstance(obj, str):
                    obj = parse_document(obj, "object")
                if not isinstance(obj, dict):
                    raise bad_request("set_lease needs an object")
                res["object"] = st.lease_set(copy.deepcopy(obj))
            elif f == "delete_lease":
                res["object"] = st.lease_remove(req.get("namespace"), req.get("name", ""))
            elif f == "leases_unavailable":
                verbs = req.get("verbs", ["create", "update", "patch", "delete", "deletecollection"])
                if isinstance(verbs, str):
                    verbs = [verbs]
                known = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
                if not verbs or not set(verbs) <= known:
                    raise bad_request("leases_unavailable: verbs must be some of %s" % sorted(known))
                count = req.get("count")
                with st.cond:
                    st.lease_fault = {"code": int(req.get("status", req.get("code", 503))), "verbs": set(verbs),
                                      "count": int(count) if count is not None else None,
                                      "message": req.get("message"), "retry_after": req.get("retry_after")}
            elif f == "leases_available":
                with st.cond:
                    st.lease_fault = None
            elif f == "lease_conflicts":
                with st.cond:
                    st.lease_conflicts = int(req.get("count", 1))
            elif f == "generate_nodes":
                base = [int(x) for x in str(req.get("base", "10.128")).split(".")]
                if len(base) != 2:
                    raise bad_request("generate_nodes: base is two octets, like 10.128")
                st.generate_nodes(int(req.get("count", 1)), str(req.get("prefix", "node")), base,
                                  int(req.get("pad_bytes", 0)))
            elif f in ("forbid", "allow"):
                res_name = req.get("resource")
                if res_name not in inventory.RESOURCES and res_name not in (QUALIFIED, leases.RES):
                    raise bad_request("%s: resource must be one of %s"
                                      % (f, sorted(inventory.RESOURCES) + [QUALIFIED, leases.RES]))
                with st.cond:
                    if f == "forbid":
                        st.forbidden.add(res_name)
                    else:
                        st.forbidden.discard(res_name)
            elif f == "continue_410":
                with st.cond:
                    st.continue_410 = int(req.get("count", 1))
            elif f == "delete_object":
                res["object"] = st.delete_object(req.get("name", "cluster"))
            elif f == "config":
                with st.cond:
                    if "status_on_main" in req:
                        st.status_on_main = bool(req["status_on_main"])
                    if "validate" in req:
                        st.validate = bool(req["validate"])
                    if "bookmark_interval" in req:
                        st.bookmark_interval = float(req["bookmark_interval"])
                    if "too_large_wait" in req:
                        st.too_large_wait = float(req["too_large_wait"])
                    st.cond.notify_all()
            elif f == "trickle":
                with st.cond:
                    st.trickle_until = time.monotonic() + float(req.get("seconds", 5))
                    st.trickle_gap = float(req.get("gap", 0.2))
            elif f == "clear":
                with st.cond:
                    st.fail = None
                    st.lease_fault = None
                    st.lease_conflicts = 0
                    st.forbidden.clear()
                    st.stall_until = 0.0
                    st.stall_watches = False
                    st.trickle_until = 0.0
                    st.cond.notify_all()
            elif f == "reset_stats":
                srv.stats.reset()
            else:
                raise bad_request("unknown fault %r" % f)
        except (ValueError, TypeError, OSError) as e:
            raise bad_request("control: %s: %s" % (f, e))
        log("control: %s" % dumps({k: v for k, v in req.items() if k not in ("object",)}))
        return self.send_body(200, res)


def too_large(want, cur):
    return ApiError(504, "Timeout", "Timeout: Too large resource version: %d, current: %d" % (want, cur),
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1})


def bookmark_obj(rv, initial_end=False, kind=KIND, gv=GV):
    md = {"resourceVersion": str(rv)}
    if initial_end:
        md["annotations"] = {"k8s.io/initial-events-end": "true"}
    return {"kind": kind, "apiVersion": gv, "metadata": md}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, args, ssl_ctx, family):
        self.address_family = family
        self.args = args
        self.ssl_ctx = ssl_ctx
        self.store = Store(args)
        self.stats = Stats()
        super().__init__(addr, Handler)

    def finish_request(self, request, client_address):
        # The TLS handshake runs in the connection's own thread, never in the
        # accept loop, so a slow or broken client cannot hold up others.
        conn = request
        try:
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if self.ssl_ctx is not None:
            try:
                request.settimeout(10)
                conn = self.ssl_ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as e:
                log("%s:%s TLS handshake failed: %s" % (client_address[0], client_address[1], e))
                return
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            if conn is not request:
                try:
                    conn.close()
                except OSError:
                    pass

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, socket.timeout, BrokenPipeError)):
            return
        log("%s:%s unexpected error: %r" % (client_address[0], client_address[1], exc))
        import traceback
        traceback.print_exc()


def main(argv=None):
    ap = argparse.ArgumentParser(description="Fake Kubernetes API server serving "
                                             "machineconfigurations.operator.openshift.io/v1.")
    ap.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=0, help="port (default 0: the kernel picks one)")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    ap.add_argument("--cert", help="server certificate (PEM); with --key enables TLS")
    ap.add_argument("--key", help="server private key (PEM)")
    ap.add_argument("--plain-http", action="store_true", help="serve plain HTTP (no --cert/--key)")
    ap.add_argument("--token-file", required=True, help="bearer token file, re-read on every request")
    ap.add_argument("--control-token-file", help="if set, /_fake/ needs 'Authorization: Bearer <this>'")
    ap.add_argument("--object", action="append", default=[], help="seed object file (YAML or JSON); repeatable")
    ap.add_argument("--history", type=int, default=1000, help="watch history window in events (default 1000)")
    ap.add_argument("--bookmark-interval", type=float, default=1.0,
                    help="seconds between BOOKMARK events on watches that allow them; 0 disables (default 1)")
    ap.add_argument("--default-watch-timeout", type=int, default=1800,
                    help="watch length when the client sends no timeoutSeconds (default 1800)")
    ap.add_argument("--too-large-wait", type=float, default=3.0,
                    help="how long a request for a future resourceVersion waits before 504 (default 3)")
    ap.add_argument("--status-on-main", action="store_true",
                    help="DEVIATION: let writes to the main resource change .status (a real server ignores it)")
    ap.add_argument("--no-validate", action="store_true",
                    help="do not validate the skew enforcement fields on API writes")
    ap.add_argument("--server-version", default="v1.32.5", help="gitVersion reported by /version")
    ap.add_argument("--log-control", action="store_true", help="also log each control request line")
    args = ap.parse_args(argv)

    try:
        ip = ipaddress.ip_address(args.host)
    except ValueError:
        ap.error("--host must be an IP address")
    if not ip.is_loopback:
        ap.error("--host must be a loopback address; fakeapi never binds anything else")
    if bool(args.cert) != bool(args.key):
        ap.error("--cert and --key go together")
    if not args.cert and not args.plain_http:
        ap.error("give --cert and --key, or --plain-http")
    if args.history < 1:
        ap.error("--history must be at least 1")

    ssl_ctx = None
    if args.cert:
        ssl_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ssl_ctx.load_cert_chain(args.cert, args.key)
        ssl_ctx.set_alpn_protocols(["http/1.1"])

    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    srv = Server((args.host, args.port), args, ssl_ctx, family)
    try:
        for path in args.object:
            for obj in load_object_file(path):
                srv.store.seed(obj)
    except (OSError, ValueError) as e:
        log("cannot load seed object: %s" % e)
        return 2
    port = srv.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    log("listening on %s://%s:%d (objects: %s, resourceVersion %d)"
        % ("https" if ssl_ctx else "http", args.host, port,
           ",".join(sorted(srv.store.objects)) or "none", srv.store.rv))
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
