#!/usr/bin/env bash
# The steps of the wsplan GitHub Action (action.yml at the repository's
# root), one subcommand each, so that a test runs exactly what a job runs
# (cmd/wsplan/action_test.go) and other CI systems can call it too
# (docs/ci.md). Inputs come as INPUT_* environment variables; results go
# where GitHub Actions reads them: GITHUB_OUTPUT (step outputs),
# GITHUB_STEP_SUMMARY (the job summary), GITHUB_PATH.
#
#   ci-gate.sh install   wsplan at a ref: INPUT_WSPLAN_BIN (a binary to use
#                        as it is), else INPUT_VERSION (go install
#                        github.com/wsplan/wsplan/cmd/wsplan@VERSION), else
#                        built from the action's own checkout
#                        (GITHUB_ACTION_PATH: the ref the workflow named).
#                        Outputs: bin, version.
#   ci-gate.sh run       WSPLAN runs INPUT_PLAN with INPUT_ARGS (split on
#                        whitespace), INPUT_COUNT repeats and INPUT_BASELINE
#                        (an earlier results.json; a missing file is noted,
#                        not fatal), writing results.json, junit.xml,
#                        report.html, summary.md and logs/ under
#                        INPUT_OUT_DIR; appends the verdict and summary.md
#                        to the job summary. Always exits 0, so that the
#                        files are kept; outputs: exit-code, passed, json,
#                        junit, html, summary, assertions, assertions-failed,
#                        baseline.
#   ci-gate.sh verdict   exits with EXIT_CODE (the run's) unless INPUT_FAIL
#                        is false: the job fails when an assertion, a phase
#                        or the plan did.
set -euo pipefail

# output NAME VALUE appends a step output.
output() {
  printf '%s=%s\n' "$1" "$2" >>"${GITHUB_OUTPUT:-/dev/null}"
}

# summary appends its arguments, one line each, to the job summary.
summary() {
  printf '%s\n' "$@" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
}

install() {
  local bin
  if [[ -n "${INPUT_WSPLAN_BIN:-}" ]]; then
    bin=$INPUT_WSPLAN_BIN
    if [[ ! -x "$bin" ]]; then
      echo "::error title=wsplan::wsplan-bin $bin is not an executable file" >&2
      return 1
    fi
  else
    local dir=${RUNNER_TEMP:-/tmp}/wsplan-bin
    mkdir -p "$dir"
    if [[ -n "${INPUT_VERSION:-}" ]]; then
      GOBIN=$dir go install "github.com/wsplan/wsplan/cmd/wsplan@${INPUT_VERSION}"
    else
      (cd "${GITHUB_ACTION_PATH:?}" && go build -o "$dir/wsplan" ./cmd/wsplan)
    fi
    bin=$dir/wsplan
    echo "$dir" >>"${GITHUB_PATH:-/dev/null}"
  fi
  local version
  version=$("$bin" version)
  version=${version%%$'\n'*} # the first line; head would cut wsplan's pipe
  echo "$version"
  output bin "$bin"
  output version "$version"
}

run() {
  local plan=${INPUT_PLAN:?the plan input is required}
  local out=${INPUT_OUT_DIR:-wsplan-results}
  local wsplan=${WSPLAN:-wsplan}
  mkdir -p "$out"
  local files=(--json "$out/results.json" --junit "$out/junit.xml" --html "$out/report.html" --summary "$out/summary.md")
  local args=(run "$plan" "${files[@]}" --out "$out/logs" --progress off)
  if [[ -n "${INPUT_COUNT:-}" && "${INPUT_COUNT}" != 1 ]]; then
    args+=(--count "$INPUT_COUNT")
  fi
  local compared=false note=""
  if [[ -n "${INPUT_BASELINE:-}" ]]; then
    if [[ -f "$INPUT_BASELINE" ]]; then
      args+=(--baseline "$INPUT_BASELINE")
      compared=true
    else
      note="No baseline at \`$INPUT_BASELINE\` (a first run?): nothing compared."
    fi
  fi
  local extra=()
  read -r -a extra <<<"${INPUT_ARGS:-}"
  args+=("${extra[@]}")

  echo "wsplan ${args[*]}"
  local code=0
  "$wsplan" "${args[@]}" 2>"$out/stderr.log" || code=$?
  cat "$out/stderr.log" >&2

  local passed=false
  [[ $code == 0 ]] && passed=true
  # "3 assertions: 2 passed, 1 failed", the summary's last count.
  local count="" failed=""
  if [[ -f "$out/summary.md" ]]; then
    local line
    line=$(grep -E '^[0-9]+ assertions?: [0-9]+ passed, [0-9]+ failed' "$out/summary.md" | tail -n 1 || true)
    if [[ -n "$line" ]]; then
      count=${line%% *}
      failed=${line##*passed, }
      failed=${failed%% failed*}
    fi
  fi

  local verdict="PASS"
  [[ $code != 0 ]] && verdict="FAIL (exit $code)"
  summary "## wsplan: $verdict — \`$plan\`" ""
  if [[ -n "$count" ]]; then
    summary "Assertions: $count, failed: $failed." ""
  fi
  if [[ $compared == true ]]; then
    summary "Compared with the baseline \`$INPUT_BASELINE\`: each figure carries its change; with repeats on both sides (\`count\`: 4 or more a side), its p-value (Mann-Whitney U), \`~\` when not significant." ""
  elif [[ -n "$note" ]]; then
    summary "$note" ""
  fi
  if [[ -f "$out/summary.md" ]]; then
    cat "$out/summary.md" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
  else
    summary "wsplan wrote no report:" "" '```text' "$(tail -n 20 "$out/stderr.log")" '```'
  fi

  output exit-code "$code"
  output passed "$passed"
  output json "$out/results.json"
  output junit "$out/junit.xml"
  output html "$out/report.html"
  output summary "$out/summary.md"
  output assertions "${count:-0}"
  output assertions-failed "${failed:-0}"
  output baseline "$compared"
}

verdict() {
  local code=${EXIT_CODE:?the exit-code of the run step}
  if [[ $code == 0 ]]; then
    echo "wsplan: every phase ran and every assertion held"
    return 0
  fi
  echo "::error title=wsplan::wsplan run exited $code: see the job summary (1: an assertion or a phase failed; 2: the plan or a flag is wrong)" >&2
  if [[ "${INPUT_FAIL:-true}" == false ]]; then
    echo "fail-on-error is false: the job goes on" >&2
    return 0
  fi
  return "$code"
}

case "${1:-}" in
install | run | verdict) "$1" ;;
*)
  echo "usage: ci-gate.sh install|run|verdict" >&2
  exit 2
  ;;
esac
