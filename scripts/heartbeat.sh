# Sourced by scripts/setup.sh: run a long command with a progress line every HEARTBEAT_S seconds.
#
#   with_heartbeat LABEL LOG COMMAND...   COMMAND's output is appended to LOG; every HEARTBEAT_S
#                                         seconds (default 10) one line says LABEL, the seconds
#                                         so far and LOG's last line (what pip is doing); returns
#                                         COMMAND's exit status
#   wait_heartbeat LABEL LOG PID          the same for a command already running in the background

HEARTBEAT_S="${HEARTBEAT_S:-10}"

wait_heartbeat() {
    local label=$1 log=$2 pid=$3 t0=$SECONDS next=$((SECONDS + HEARTBEAT_S)) last
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        if ((SECONDS >= next)) && kill -0 "$pid" 2>/dev/null; then
            last="$(tail -n 1 "$log" 2>/dev/null | tr -d '\r' | cut -c1-90)"
            echo "setup: $label ... $((SECONDS - t0)) s${last:+ (${last})}"
            next=$((SECONDS + HEARTBEAT_S))
        fi
    done
    wait "$pid"
}

with_heartbeat() {
    local label=$1 log=$2
    shift 2
    "$@" >>"$log" 2>&1 &
    wait_heartbeat "$label" "$log" $!
}
