#!/usr/bin/env bash
# Fuzz smoke run: builds the cargo-fuzz targets in fuzz/ and runs each for a short time.
#
# Usage: .ci/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   SECONDS_PER_TARGET  libFuzzer's -max_total_time for each target (default 8: six
#                       targets, qipc_decode, block_decode, ipc_view, request_parse,
#                       handshake and frame_reader, in about 50 s)
#   TARGET...           which targets to run (default: every target in fuzz/Cargo.toml)
#
# Environment:
#   FUZZ_SANITIZER   address (default) or none (about twice as fast, catches less)
#   FUZZ_TARGET_DIR  build directory (default ~/.cache/strata/fuzz-target, outside the clone; apart from the
#                    workspace's CARGO_TARGET_DIR because the flags differ)
#
# Needs only the stable toolchain: cargo-fuzz passes nightly-only -Z flags to rustc,
# which RUSTC_BOOTSTRAP=1 lets stable accept. cargo-fuzz itself is installed from
# crates.io at a pinned version when missing, and the seed corpus is written by
# fuzz/seeds.py when fuzz/corpus/TARGET is empty.
#
# Exits non-zero if any target panics, crashes, leaks, times out or runs out of
# memory; the failing input is kept in fuzz/artifacts/TARGET/ and the reproduction
# command is printed. Full libFuzzer logs go to fuzz/artifacts/logs/TARGET.log.
set -euo pipefail

CARGO_FUZZ_VERSION=0.13.2
SECONDS_PER_TARGET=${1:-8}
[[ $# -gt 0 ]] && shift
case $SECONDS_PER_TARGET in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS_PER_TARGET must be a whole number, not '$SECONDS_PER_TARGET'" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fuzz_dir=$root/fuzz
sanitizer=${FUZZ_SANITIZER:-address}
export RUSTC_BOOTSTRAP=1
export CARGO_TARGET_DIR=${FUZZ_TARGET_DIR:-$HOME/.cache/strata/fuzz-target}
export RUST_BACKTRACE=${RUST_BACKTRACE:-1}

say() { printf '[fuzz.sh %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
since() { echo "$(($(date +%s) - $1))s"; }

say "toolchain: $(rustc --version) (RUSTC_BOOTSTRAP=1), sanitizer: $sanitizer, build dir: $CARGO_TARGET_DIR"

# 1. cargo-fuzz, pinned.
if [[ $(cargo fuzz --version 2>/dev/null || true) != "cargo-fuzz $CARGO_FUZZ_VERSION" ]]; then
  say "installing cargo-fuzz $CARGO_FUZZ_VERSION: cargo install cargo-fuzz --version =$CARGO_FUZZ_VERSION --locked --force"
  t0=$(date +%s)
  cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked --force
  say "installed cargo-fuzz in $(since "$t0")"
else
  say "cargo-fuzz $CARGO_FUZZ_VERSION already installed"
fi

cd "$fuzz_dir"
if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi
[[ ${#targets[@]} -gt 0 ]] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 2; }

# 2. Seeds for empty corpora (the corpus is generated, never committed).
for target in "${targets[@]}"; do
  if [[ -z $(ls -A "corpus/$target" 2>/dev/null) ]]; then
    if command -v python3 >/dev/null; then
      say "seeding corpus/: python3 fuzz/seeds.py"
      python3 seeds.py corpus
    else
      say "no python3: starting from an empty corpus"
    fi
    break
  fi
done

# 3. Build every target once (cargo fuzz run then finds them up to date).
say "building: cargo fuzz build --sanitizer $sanitizer ${targets[*]}"
t0=$(date +%s)
for target in "${targets[@]}"; do
  cargo fuzz build --sanitizer "$sanitizer" "$target"
done
say "built in $(since "$t0")"

# 4. Run each target; keep going after a failure so every target reports.
mkdir -p artifacts/logs
failed=()
summary=()
for target in "${targets[@]}"; do
  log=artifacts/logs/$target.log
  say "running $target for ${SECONDS_PER_TARGET}s: cargo fuzz run --sanitizer $sanitizer $target -- -max_total_time=$SECONDS_PER_TARGET -max_len=4104 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1"
  t0=$(date +%s)
  status=0
  cargo fuzz run --sanitizer "$sanitizer" "$target" -- \
    -max_total_time="$SECONDS_PER_TARGET" -max_len=4104 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 >"$log" 2>&1 || status=$?
  took=$(since "$t0")
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 || true)
  if [[ $status -eq 0 ]]; then
    say "$target: ok in $took, ${runs:-?} inputs (${speed:-?}/s), $cov"
    summary+=("ok      $target  $took  ${runs:-?} inputs")
  else
    say "$target: FAILED (exit $status) after $took; the error from $fuzz_dir/$log:"
    # The panic message or sanitizer report with the top of its stack, then the input.
    grep -v '# Uses:' "$log" | awk '/panicked at|ERROR: |SUMMARY: /{f=1} f' | head -n 50 || true
    grep -v '# Uses:' "$log" | sed -n '/^Failing input:/,/^Minimize test case/p' || true
    failed+=("$target")
    summary+=("FAILED  $target  $took  see fuzz/$log and fuzz/artifacts/$target/")
  fi
done

say "summary:"
printf '  %s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  say "${#failed[@]} of ${#targets[@]} targets failed: ${failed[*]}"
  exit 1
fi
say "all ${#targets[@]} targets ran ${SECONDS_PER_TARGET}s each without a crash"
