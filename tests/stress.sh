#!/usr/bin/env bash
# The suite on a busy machine: every CPU kept busy by other processes while the tests run, N runs in a
# row, stopping at the first failure. A test that passes here waits for conditions, not for luck.
#
#   tests/stress.sh                      # the whole suite, 5 runs, one busy loop per CPU
#   tests/stress.sh 3 tests/tui -n 0     # 3 runs of one folder in one process (any pytest arguments)
#   STRESS_HOGS=4 tests/stress.sh 1      # four busy loops instead of one per CPU
#
# Exit status: 0 when every run passed, else the failing run's pytest status.
set -uo pipefail
cd "$(dirname "$0")/.."

runs="${1:-5}"
shift $(($# > 0 ? 1 : 0))
python="${PYTHON:-.venv/bin/python}"
hogs="${STRESS_HOGS:-$(nproc)}"

pids=()
stop_hogs() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    wait "${pids[@]}" 2>/dev/null
}
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
    "$python" -c "while True: pass" &
    pids+=("$!")
done

for run in $(seq "$runs"); do
    echo "== stress run $run of $runs ($hogs busy loops): pytest $*"
    start=$(date +%s)
    "$python" -m pytest -q "$@"
    status=$?
    echo "== run $run: exit $status in $(($(date +%s) - start)) s"
    if [ "$status" -ne 0 ]; then
        echo "== stopped at the first failure (run $run of $runs)"
        exit "$status"
    fi
done
echo "== all $runs runs passed"
