#!/usr/bin/env bash
# The fake API server's wire protocol and fault knobs (watch framing,
# bookmarks, 410 Expired, drops, garbage, stalls, 5xx, stats), checked with
# Python's http.client and a strict chunked-stream reader.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec timeout 240 /usr/bin/python3 "$here/../fakeapi/test_fakeapi.py"
