#!/usr/bin/env bash
# run-guarded.sh PARENT_PID COMMAND [ARGS...]
# Runs COMMAND and stops it when PARENT_PID is gone, so that servers started by a test run or by the
# dev stack never outlive it, even when it is killed with SIGKILL. SIGTERM/SIGINT to this script
# stop COMMAND too (TERM, then KILL after 5 s).
parent="$1"; shift
"$@" &
child=$!
stop() {
  kill -TERM "$child" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$child" 2>/dev/null || exit 0; sleep 0.1; done
  kill -KILL "$child" 2>/dev/null
  exit 0
}
trap stop TERM INT HUP
while kill -0 "$child" 2>/dev/null; do
  if ! kill -0 "$parent" 2>/dev/null; then stop; fi
  sleep 1 & wait $!
done
wait "$child"
