# shellcheck shell=bash
# Sourced by lib.sh (after it made $TMP): the ports a test may pick for
# itself. tests/integration/run runs several tests at once (-j N), and
# other suites may run on the machine too, so a port a test picks must be
# picked by no one else while the test lives. free_port used to bind port
# 0, close and hand out the number: the kernel could then give the same
# port to another test, to another test's port 0, or to any connection as
# its source port.
#
# Now each test claims a block of PORT_BLOCK_SIZE ports, from the
# PORT_BLOCKS blocks just below the kernel's ephemeral range
# (net.ipv4.ip_local_port_range: the kernel never gives a port outside
# it to a bind of port 0 nor to a connection), by holding a lock on
# /tmp/skewgate-ports/BLOCK.lock for as long as the test's shell (or a
# process it started, which inherits the descriptor) lives; free_port
# hands out the block's ports in turn, each one checked free (nothing
# bound to it, no TIME_WAIT left by an earlier test). A listener bound to
# port 0 and kept open (the gate's listeners, the fake API server, the
# Python upstreams) needs none of this: what the kernel gave it is its own.
#
# run exports SKEWGATE_TEST_SLOT (0 to N-1, which test of the N running
# at once this is): the search starts at that block, so the tests of one
# run do not even contend for the locks.
PORT_BLOCK_SIZE=100
PORT_BLOCKS=96
PORT_LOCK_DIR=/tmp/skewgate-ports

# port_block_claim: sets PORT_BLOCK (its index), PORT_FIRST (its first
# port) and PORT_LOCK_FD (the descriptor holding the lock).
port_block_claim() {
  local lo hi pool i b
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
  if [ "$lo" -ge $(( 1024 + PORT_BLOCKS * PORT_BLOCK_SIZE )) ]; then
    pool=$(( lo - PORT_BLOCKS * PORT_BLOCK_SIZE ))
  elif [ "$hi" -le $(( 65535 - PORT_BLOCKS * PORT_BLOCK_SIZE )) ]; then
    pool=$(( hi + 1 ))
  else
    echo "FAIL: no room for test ports outside the ephemeral range $lo-$hi (net.ipv4.ip_local_port_range)" >&2
    exit 1
  fi
  if mkdir -p "$PORT_LOCK_DIR" 2>/dev/null; then chmod 1777 "$PORT_LOCK_DIR" 2>/dev/null || true; fi
  for ((i = 0; i < PORT_BLOCKS; i++)); do
    b=$(( (${SKEWGATE_TEST_SLOT:-0} + i) % PORT_BLOCKS ))
    [ -e "$PORT_LOCK_DIR/$b.lock" ] || : 2>/dev/null >>"$PORT_LOCK_DIR/$b.lock" || true
    exec {PORT_LOCK_FD}<"$PORT_LOCK_DIR/$b.lock" || continue
    if flock -n "$PORT_LOCK_FD"; then
      PORT_BLOCK=$b
      PORT_FIRST=$(( pool + b * PORT_BLOCK_SIZE ))
      return 0
    fi
    exec {PORT_LOCK_FD}<&-
  done
  echo "FAIL: all $PORT_BLOCKS blocks of test ports in $PORT_LOCK_DIR are taken" >&2
  exit 1
}

# free_port: the next port of the test's block that nothing is bound to,
# on any IPv4 or IPv6 address (a bind without SO_REUSEADDR, so a port with
# connections in TIME_WAIT is passed over too). Never the same one twice
# in a test, even from subshells ($TMP/.free_port keeps the count).
free_port() {
  python3 - "$PORT_FIRST" "$PORT_BLOCK_SIZE" "$TMP/.free_port" <<'PY'
import errno, fcntl, socket, sys
first, size, counter = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def free(port):
    for family, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            s = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 here
        try:
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            s.bind((addr, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return False
            if family == socket.AF_INET:
                raise
        finally:
            s.close()
    return True

with open(counter, "a+") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    f.seek(0)
    n = int(f.read() or 0)
    while n < size:
        port, n = first + n, n + 1
        if free(port):
            break
    else:
        sys.exit("free_port: no free port left in %d-%d" % (first, first + size - 1))
    f.seek(0)
    f.truncate()
    f.write(str(n))
print(port)
PY
}
