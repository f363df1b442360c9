"""leases: coordination.k8s.io/v1 Leases, namespaced and writable, as
kube-apiserver serves them: the objects skewgate's gates share the pacing
line through.  This module holds what is particular to the kind: its names,
paths, decoding (unknown fields dropped, typed fields checked as the Go
decoder checks them: a bad MicroTime is a 400 decoding error), validation
(ValidateLease: the name a DNS subdomain, labels, annotations and their total
size, spec ranges: 422 Invalid) and table columns.  The store and the HTTP
handling live in fakeapi.py beside the other resources.

The registry strategy of the real server (pkg/registry/coordination/lease):
AllowCreateOnUpdate true (a PUT of a missing Lease creates it, 201),
AllowUnconditionalUpdate false (a PUT without metadata.resourceVersion is 422
"must be specified for an update"), no generation, no status subresource.
"""

import random
import re

GROUP = "coordination.k8s.io"
VERSION = "v1"
GV = GROUP + "/" + VERSION
KIND = "Lease"
LIST_KIND = "LeaseList"
PLURAL = "leases"
SINGULAR = "lease"
QUALIFIED = PLURAL + "." + GROUP          # leases.coordination.k8s.io, as in messages
KIND_QUALIFIED = KIND + "." + GROUP       # Lease.coordination.k8s.io, as in 422 messages
PREFIX = "/apis/" + GV
RES = QUALIFIED                           # the store's name for the kind (history tag, stats, forbid)
VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
DISCOVERY_PATHS = {"/apis/" + GROUP, PREFIX}
ANNOTATIONS_MAX = 256 * 1024              # TotalAnnotationSizeLimitB
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

SPEC_FIELDS = ("acquireTime", "holderIdentity", "leaseDurationSeconds", "leaseTransitions",
               "preferredHolder", "renewTime", "strategy")
META_FIELDS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
               "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
               "annotations", "ownerReferences", "finalizers", "managedFields")

TABLE_COLUMNS = [
    {"name": "Name", "type": "string", "format": "name", "priority": 0,
     "description": "Name must be unique within a namespace."},
    {"name": "Holder", "type": "string", "format": "", "priority": 0,
     "description": "holderIdentity contains the identity of the holder of a current lease."},
    {"name": "Age", "type": "date", "format": "", "priority": 0,
     "description": "CreationTimestamp is a timestamp representing the server time when this "
                    "object was created."},
]


def parse_path(path):
    """(namespace|None, name|None, legacy_watch) for a Lease path, else None.
    /apis/coordination.k8s.io/v1/leases (all namespaces), .../namespaces/NS/leases[/NAME],
    and the same under .../watch/."""
    if path.startswith(PREFIX + "/watch/"):
        legacy, rest = True, path[len(PREFIX) + len("/watch/"):]
    elif path.startswith(PREFIX + "/"):
        legacy, rest = False, path[len(PREFIX) + 1:]
    else:
        return None
    parts = rest.split("/")
    ns = None
    if len(parts) >= 3 and parts[0] == "namespaces" and parts[1]:
        ns, parts = parts[1], parts[2:]
    if not parts or parts[0] != PLURAL:
        return None
    if len(parts) == 1:
        return ns, None, legacy
    if len(parts) == 2 and parts[1] and ns is not None:
        return ns, parts[1], legacy
    return None


def key(ns, name):
    return "%s/%s" % (ns, name)


# --------------------------------------------------------------------------
# Decoding: what the Go JSON decoder refuses is a 400, before validation


class DecodeError(Exception):
    """400 BadRequest 'Lease in version "v1" cannot be handled as a Lease: ...'."""


def _go_time_error(value, elem, layout_elem):
    return 'parsing time "%s" as "%s": cannot parse "%s" as "%s"' % (value, RFC3339_MICRO, elem, layout_elem)


def parse_micro_time(s):
    """Go time.Parse(RFC3339Micro, s), which wants exactly 6 fractional digits:
    returns (y, mo, d, h, mi, sec, usec, offset_minutes) or raises DecodeError with Go's wording."""
    v = s
    out = []

    def num(n, elem):
        nonlocal v
        if len(v) < n or not v[:n].isdigit():
            raise DecodeError(_go_time_error(s, v, elem))
        x = int(v[:n])
        v = v[n:]
        return x

    def lit(c):
        nonlocal v
        if not v.startswith(c):
            raise DecodeError(_go_time_error(s, v, c))
        v = v[len(c):]

    y = num(4, "2006"); lit("-"); mo = num(2, "01"); lit("-"); d = num(2, "02"); lit("T")
    h = num(2, "15"); lit(":"); mi = num(2, "04"); lit(":"); sec = num(2, "05")
    if len(v) < 7 or v[0] not in ".," or not v[1:7].isdigit():
        raise DecodeError(_go_time_error(s, v, ".000000"))
    usec = int(v[1:7])
    v = v[7:]
    if v == "Z":
        off = 0
    elif re.fullmatch(r"[+-][0-9]{2}:[0-9]{2}", v):
        off = (int(v[1:3]) * 60 + int(v[4:6])) * (-1 if v[0] == "-" else 1)
    else:
        raise DecodeError(_go_time_error(s, v, "Z07:00"))
    for what, x, lo, hi in (("month", mo, 1, 12), ("day", d, 1, 31), ("hour", h, 0, 23),
                            ("minute", mi, 0, 59), ("second", sec, 0, 59)):
        if not lo <= x <= hi:
            raise DecodeError('parsing time "%s": %s out of range' % (s, what))
    out = (y, mo, d, h, mi, sec, usec, off)
    return out


def normalize_micro_time(s):
    """MicroTime as the server writes it back: UTC, 6 digits, Z."""
    import datetime
    y, mo, d, h, mi, sec, usec, off = parse_micro_time(s)
    try:
        t = datetime.datetime(y, mo, d, h, mi, sec, usec, tzinfo=datetime.timezone(datetime.timedelta(minutes=off)))
    except ValueError:
        raise DecodeError('parsing time "%s": day out of range' % s)
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _type_error(value, field, gotype):
    return DecodeError("json: cannot unmarshal %s into Go struct field %s of type %s" % (value, field, gotype))


def _json_kind(v):
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def decode(obj, strict=False):
    """Decodes a request body into a Lease as the typed Go struct would:
    unknown fields dropped (listed in the returned warnings), typed fields
    checked.  Raises DecodeError.  Returns (lease, unknown_field_paths)."""
    unknown = []
    out = {}
    for k, v in obj.items():
        if k in ("apiVersion", "kind"):
            out[k] = v
        elif k == "metadata":
            if v is None:
                continue
            if not isinstance(v, dict):
                raise _type_error(_json_kind(v), "Lease.metadata", "v1.ObjectMeta")
            md = {}
            for mk, mv in v.items():
                if mk not in META_FIELDS:
                    unknown.append("metadata." + mk)
                    continue
                if mv is None:
                    continue
                if mk in ("labels", "annotations"):
                    if not isinstance(mv, dict):
                        raise _type_error(_json_kind(mv), "Lease.metadata.%s" % mk, "map[string]string")
                    for lk, lv in mv.items():
                        if not isinstance(lv, str):
                            raise _type_error(_json_kind(lv), "Lease.metadata.%s" % mk, "string")
                elif mk in ("name", "generateName", "namespace", "uid", "resourceVersion", "selfLink") \
                        and not isinstance(mv, str):
                    raise _type_error(_json_kind(mv), "Lease.metadata." + mk, "string")
                md[mk] = mv
            out["metadata"] = md
        elif k == "spec":
            if v is None:
                continue
            if not isinstance(v, dict):
                raise _type_error(_json_kind(v), "Lease.spec", "v1.LeaseSpec")
            spec = {}
            for sk, sv in v.items():
                if sk not in SPEC_FIELDS:
                    unknown.append("spec." + sk)
                    continue
                if sv is None:
                    continue      # a null pointer field: absent
                field = "LeaseSpec.spec." + sk
                if sk in ("holderIdentity", "preferredHolder", "strategy"):
                    if not isinstance(sv, str):
                        raise _type_error(_json_kind(sv), field, "string")
                elif sk in ("leaseDurationSeconds", "leaseTransitions"):
                    if isinstance(sv, bool) or not isinstance(sv, (int, float)):
                        raise _type_error(_json_kind(sv), field, "int32")
                    if isinstance(sv, float) or not -2 ** 31 <= sv < 2 ** 31:
                        raise _type_error("number %s" % _go_number(sv), field, "int32")
                else:  # acquireTime, renewTime: MicroTime
                    if not isinstance(sv, str):
                        raise _type_error(_json_kind(sv), field, "string")
                    sv = normalize_micro_time(sv)
                spec[sk] = sv
            out["spec"] = spec
        else:
            unknown.append(k)
    if strict and unknown:
        raise DecodeError("strict decoding error: " + ", ".join('unknown field "%s"' % u for u in unknown))
    return out, unknown


def _go_number(v):
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return repr(v)  # 1.0 stays 1.0 as written
    return str(v)


# --------------------------------------------------------------------------
# Validation: 422 Invalid, the wording of apimachinery's validators

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QNAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
QNAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
             "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation "
             "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                   "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def _qualified_name_errors(path, k):
    errs = []
    parts = k.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append((path, "FieldValueInvalid", 'Invalid value: "%s": prefix part must be non-empty' % k))
        else:
            if len(prefix) > 253:
                errs.append((path, "FieldValueInvalid", 'Invalid value: "%s": prefix part must be no more than '
                             "253 characters" % k))
            if not DNS1123_SUBDOMAIN.match(prefix):
                errs.append((path, "FieldValueInvalid", 'Invalid value: "%s": prefix part %s' % (k, SUBDOMAIN_MSG)))
    else:
        return [(path, "FieldValueInvalid", 'Invalid value: "%s": a qualified name must consist of alphanumeric '
                 "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                 "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
                 "(e.g. 'example.com/MyName')" % k)]
    if not name:
        errs.append((path, "FieldValueInvalid", 'Invalid value: "%s": name part must be non-empty' % k))
    else:
        if len(name) > 63:
            errs.append((path, "FieldValueInvalid", 'Invalid value: "%s": name part must be no more than '
                         "63 characters" % k))
        if not QNAME.match(name):
            errs.append((path, "FieldValueInvalid", 'Invalid value: "%s": %s' % (k, QNAME_MSG)))
    return errs


def validate(lease, old=None):
    """[(field, reason, message)] as ValidateLease / ValidateLeaseUpdate report them."""
    errs = []
    md = lease.get("metadata") or {}
    name = md.get("name", "")
    if old is None:
        if not name:
            errs.append(("metadata.name", "FieldValueRequired", "Required value: name or generateName is required"))
        else:
            if len(name) > 253:
                errs.append(("metadata.name", "FieldValueInvalid",
                             'Invalid value: "%s": must be no more than 253 characters' % name))
            if not DNS1123_SUBDOMAIN.match(name):
                errs.append(("metadata.name", "FieldValueInvalid", 'Invalid value: "%s": %s' % (name, SUBDOMAIN_MSG)))
    else:
        omd = old["metadata"]
        if md.get("uid") and md["uid"] != omd.get("uid"):
            errs.append(("metadata.uid", "FieldValueInvalid", 'Invalid value: "%s": field is immutable' % md["uid"]))
    for k, v in sorted((md.get("labels") or {}).items()):
        errs.extend(_qualified_name_errors("metadata.labels", k))
        if len(v) > 63:
            errs.append(("metadata.labels", "FieldValueInvalid",
                         'Invalid value: "%s": must be no more than 63 characters' % v))
        elif not LABEL_VALUE.match(v):
            errs.append(("metadata.labels", "FieldValueInvalid", 'Invalid value: "%s": %s' % (v, LABEL_VALUE_MSG)))
    ann = md.get("annotations") or {}
    total = 0
    for k, v in sorted(ann.items()):
        errs.extend(_qualified_name_errors("metadata.annotations", k.lower()))
        total += len(k.encode()) + len(v.encode())
    if total > ANNOTATIONS_MAX:
        errs.append(("metadata.annotations", "FieldValueTooLong",
                     "Too long: may not be more than %d bytes" % ANNOTATIONS_MAX))
    spec = lease.get("spec") or {}
    if "leaseDurationSeconds" in spec and spec["leaseDurationSeconds"] <= 0:
        errs.append(("spec.leaseDurationSeconds", "FieldValueInvalid",
                     "Invalid value: %d: must be greater than 0" % spec["leaseDurationSeconds"]))
    if "leaseTransitions" in spec and spec["leaseTransitions"] < 0:
        errs.append(("spec.leaseTransitions", "FieldValueInvalid",
                     "Invalid value: %d: must be greater than or equal to 0" % spec["leaseTransitions"]))
    if "preferredHolder" in spec and "strategy" not in spec:
        errs.append(("spec.preferredHolder", "FieldValueForbidden",
                     "Forbidden: may only be specified if `strategy` is defined"))
    return errs


# generateName: names.SimpleNameGenerator
_ALNUM = "bcdfghjklmnpqrstvwxz2456789"


def generate_name(base):
    if len(base) > 58:
        base = base[:58]
    return base + "".join(random.choice(_ALNUM) for _ in range(5))


def table_cells(obj):
    return [(obj.get("spec") or {}).get("holderIdentity", "")]
