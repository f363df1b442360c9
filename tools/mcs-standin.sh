#!/usr/bin/env bash
# mcs-standin.sh DIR PORT [SIZE [TLS_PORT CERT KEY]]: prepares an nginx MCS
# stand-in in DIR (config, data, temp dirs) listening on 127.0.0.1:PORT, and
# with TLS on TLS_PORT when given, and prints the command that runs it in the
# foreground. MCS_ADDR=0.0.0.0 listens on all addresses instead, as the real
# MCS does.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mkdir -p "$1" && cd "$1" && pwd); port=$2; size=${3:-307200}
addr=${MCS_ADDR:-127.0.0.1}
[[ $addr =~ ^[0-9.]+$ ]] || { echo "mcs-standin: MCS_ADDR must be an IPv4 address, not '$addr'" >&2; exit 2; }
tls_listen=""
if [ $# -ge 6 ]; then
  tls_listen="listen $addr:$4 ssl reuseport; ssl_certificate $5; ssl_certificate_key $6;"
fi
mkdir -p "$dir/tmp" "$dir/data"
# nginx workers drop root: they must be able to read the data.
chmod 755 "$dir"
python3 "$here/tools/mcs-data.py" "$dir/data" "$size" worker master infra
sed -e "s|@PREFIX@|$dir|g" -e "s|@ADDR@|$addr|g" -e "s|@PORT@|$port|g" -e "s|@DATA@|$dir/data|g" -e "s|@TLS_LISTEN@|$tls_listen|g" \
    "$here/conf/demo/mcs-nginx.conf.in" > "$dir/nginx.conf"
echo "nginx -e $dir/error.log -p $dir -c $dir/nginx.conf"
