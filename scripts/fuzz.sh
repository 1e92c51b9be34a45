#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang, AddressSanitizer and UBSan in build-asan/
# (preset asan-ubsan, the build scripts/sanitize.sh tests in too), replays each target's regression
# inputs (tests/fuzz/regressions/<target>/), then fuzzes it for $LOCKSTEP_FUZZ_SECONDS (default 30)
# from its seed corpus (tests/fuzz/corpus/<target>/) and what earlier runs found (kept in the build
# directory). A crash, leak, UB or failed check fails the script and leaves the input that caused
# it in build-asan/fuzz/<target>/.
#
#   scripts/fuzz.sh [checkpoint|manifest|graph_meta|image ...]   (all four by default)
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
build_dir=build-asan  # the binaryDir of preset asan-ubsan
seconds=${LOCKSTEP_FUZZ_SECONDS:-30}
targets=("$@")
((${#targets[@]} > 0)) || targets=(checkpoint manifest graph_meta image)

cmake --preset asan-ubsan >/dev/null
build_targets=()
for target in "${targets[@]}"; do build_targets+=(--target "${target}_fuzzer"); done
cmake --build "$build_dir" -j "$(nproc)" "${build_targets[@]}"

# Memory: the decoder accepts images of up to 2^28 pixels (dataset/decode.cc), 1.8 GB for a CMYK
# one, over libFuzzer's default 2 GB limit with ASan. Time: an input that takes 2 minutes hangs.
options=(-rss_limit_mb=4096 -timeout=120)
for target in "${targets[@]}"; do
  fuzzer=$build_dir/tests/fuzz/${target}_fuzzer
  work=$build_dir/fuzz/$target
  mkdir -p "$work/corpus"
  regressions=(tests/fuzz/regressions/"$target"/*)
  if ((${#regressions[@]} > 0)) &&
      ! "$fuzzer" "${options[@]}" -artifact_prefix="$work/" "${regressions[@]}" \
        >"$work/regressions.log" 2>&1; then
    tail -n 60 "$work/regressions.log"
    echo "fuzz: $target fails on a regression input (log above)" >&2
    exit 1
  fi
  dict=()
  [[ -f tests/fuzz/$target.dict ]] && dict=(-dict="tests/fuzz/$target.dict")
  # New inputs go to the first directory, the one in the build tree.
  if ! "$fuzzer" "${options[@]}" "${dict[@]}" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$work/" "$work/corpus" "tests/fuzz/corpus/$target" \
      >"$work/fuzz.log" 2>&1; then
    tail -n 60 "$work/fuzz.log"
    echo "fuzz: $target failed (log above; the input is in $work/)" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
  echo "fuzz: $target: $runs inputs in $seconds s and ${#regressions[@]} regression input(s)" \
    "without a failure"
done
