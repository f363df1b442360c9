"""mc_extract.py MANIFEST file PATH | unit NAME: what the one MachineConfig
in MANIFEST (a YAML stream, as `kubectl kustomize` renders it) carries: the
contents of the file at PATH (its data: URL decoded), or the contents of
the systemd unit NAME, on stdout byte for byte. Fails when there is not
exactly one MachineConfig, or it has no such file or unit."""
import base64, sys, urllib.parse
import yaml

manifest, what, name = sys.argv[1:4]
mcs = [d for d in yaml.safe_load_all(open(manifest)) if d and d.get("kind") == "MachineConfig"]
if len(mcs) != 1:
    sys.exit("mc_extract: %d MachineConfigs in %s, expected 1" % (len(mcs), manifest))
config = mcs[0]["spec"]["config"]
if what == "file":
    [f] = [f for f in config.get("storage", {}).get("files", []) if f["path"] == name] or [None]
    if not f:
        sys.exit("mc_extract: no file %s" % name)
    src = f["contents"]["source"]
    assert src.startswith("data:"), src[:40]
    meta, _, data = src[5:].partition(",")
    body = base64.b64decode(data) if meta.endswith(";base64") else urllib.parse.unquote_to_bytes(data)
    sys.stdout.buffer.write(body)
elif what == "unit":
    [u] = [u for u in config.get("systemd", {}).get("units", []) if u["name"] == name] or [None]
    if not u:
        sys.exit("mc_extract: no unit %s" % name)
    sys.stdout.write(u["contents"])
else:
    sys.exit("mc_extract: file PATH or unit NAME")
