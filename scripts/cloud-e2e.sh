#!/usr/bin/env bash
# The cloud shape run for real: template.yaml deployed into an AWS emulator on this machine and
# driven end to end (docs/deploy.md, "Try the cloud shape on your machine").
#
# On a fresh Debian machine, as root: installs ministack (pinned, in .venv-ministack) and applies
# scripts/cloud-e2e/ministack.patch (the emulator's bugs we cannot avoid, each hunk with its
# reproduction in scripts/cloud-e2e/reproduce.py); starts podman's Docker-compatible service for
# the emulator's ECS; builds the stack with SAM (.venv-sam) and the verifier image with podman
# (the base image as scripts/container-check.sh makes it, cached by podman); deploys; runs
# scripts/cloud-e2e/scenario.py through the emulated API Gateway with the real MCP client and the
# real CLI; deletes the stack. One line per step, the figures, then `cloud-e2e: K/N passed`; any
# failure exits non-zero. Run it after scripts/test.sh (it makes .venv and .venv-sam; made here
# if missing). CLOUD_E2E_KEEP=1 leaves the emulator running and the stack deployed.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
export DEBIAN_FRONTEND=noninteractive
MINISTACK_VERSION=1.5.33
STACK=${CLOUD_E2E_STACK:-taskgate-e2e}
PORT=${CLOUD_E2E_PORT:-4566}
ENDPOINT=http://127.0.0.1:$PORT
WORK=$(mktemp -d /var/tmp/taskgate-cloud-e2e.XXXXXX)
began=$(date +%s)
passed=0
total=0
failed=0
pids=()

# The emulator's account: any credentials, region us-east-1, every client at the emulator.
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=$ENDPOINT SAM_CLI_TELEMETRY=0 AWS_EC2_METADATA_DISABLED=true
export CONTAINERS_CONF=$WORK/containers.conf
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

# Each service runs in a process group of its own (setsid): the emulator's Lambda workers are
# its children, and go with it.
stop_group() {
  kill -TERM -- "-$1" 2>/dev/null || return 0
  for _ in $(seq 150); do
    kill -0 -- "-$1" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -- "-$1" 2>/dev/null
}

finish() {
  for pid in "${pids[@]}"; do stop_group "$pid"; done
  wait 2>/dev/null
  # Verifier containers the emulator started and did not remove.
  podman ps --all --quiet --filter label=com.amazonaws.ecs.cluster 2>/dev/null | xargs -r podman rm --force >/dev/null 2>&1
  # The image's name in the stack's repository (the image itself stays, for the next run's cache).
  podman images --format '{{.Repository}}:{{.Tag}}' 2>/dev/null \
    | grep "^000000000000\.dkr\.ecr\.us-east-1\.amazonaws\.com/$STACK-verifierrepository-" \
    | xargs -r podman untag >/dev/null 2>&1
  rm -rf "$WORK/build"  # the built stack (~150 MB); the logs stay
  echo "cloud-e2e: whole run $(( $(date +%s) - began )) s; logs in $WORK"
  echo "cloud-e2e: $passed/$total passed"
}

# step NAME COMMAND...: one line, its output in $WORK/NN.log (its tail shown when it fails).
step() {
  local name=$1 t0 rc log
  shift
  total=$((total + 1))
  log=$(printf '%s/%02d.log' "$WORK" "$total")
  t0=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1))
    echo "cloud-e2e: ok   $name ($(( $(date +%s) - t0 )) s)"
  else
    failed=1
    echo "cloud-e2e: FAIL $name (exit $rc, $(( $(date +%s) - t0 )) s; $log):"
    tail -25 "$log" | sed 's/^/    /'
  fi
  return $rc
}

# A step that cannot run because an earlier one failed counts as failed.
cannot() {
  total=$((total + 1))
  failed=1
  echo "cloud-e2e: FAIL $1 (not run: an earlier step failed)"
}

tools() {
  local missing=()
  for tool in podman runc debootstrap patch git make curl; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq --no-install-recommends podman runc debootstrap patch git make curl
  fi
  if [ ! -x .venv/bin/taskgate ] || [ ! -x .venv-sam/bin/sam ]; then
    # What scripts/test.sh makes: the project (its CLI, the MCP SDK, boto3) and the SAM CLI.
    local py=${PYTHON:-python3}
    [ -x .venv/bin/python ] || "$py" -m venv .venv
    .venv/bin/python -m pip install --quiet -e '.[test,lint,browser]'
    if [ ! -x .venv-sam/bin/sam ]; then
      "$py" -m venv .venv-sam && .venv-sam/bin/python -m pip install --quiet 'aws-sam-cli>=1.140,<2'
    fi
  fi
}

# The Python the emulator runs the functions with: the functions' runtime (3.13) where this
# machine has it, else python3; the layer is built for it (LAYER_FOR=host).
runtime_python() {
  local candidate
  for candidate in python3.13 /root/.pyenv/versions/3.13*/bin/python3.13 /usr/local/bin/python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys, venv; assert sys.version_info >= (3, 11)' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

ministack() {
  local marker py
  marker=".venv-ministack/.taskgate-$MINISTACK_VERSION-$(sha256sum scripts/cloud-e2e/ministack.patch | cut -c1-12)"
  if [ ! -f "$marker" ]; then
    rm -rf .venv-ministack
    py=$(runtime_python) || { echo "no Python 3.11+ found"; return 1; }
    "$py" -m venv .venv-ministack
    # docker: its ECS talks to podman's Docker API; aws-sam-translator: the SAM transform;
    # cryptography: KMS asymmetric keys. botocore stays at ministack's own pin.
    .venv-ministack/bin/python -m pip install --quiet --disable-pip-version-check \
      "ministack==$MINISTACK_VERSION" 'docker>=7,<8' 'aws-sam-translator>=1.90,<2' 'cryptography>=41'
    local site
    site=$(.venv-ministack/bin/python -c 'import ministack, os; print(os.path.dirname(os.path.dirname(ministack.__file__)))')
    patch -p1 --forward --no-backup-if-mismatch -d "$site" < scripts/cloud-e2e/ministack.patch
    touch "$marker"
  fi
  .venv-ministack/bin/python -c 'import importlib.metadata as m; print("ministack", m.version("ministack"))'
}

podman_service() {
  printf '[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n\n[containers]\ndefault_ulimits = []\n' > "$CONTAINERS_CONF"
  setsid podman system service --time=0 "unix://$WORK/podman.sock" >"$WORK/podman.log" 2>&1 &
  pids+=($!)
  echo "$!" > "$WORK/podman.pid"
  for _ in $(seq 100); do
    curl -fsS --unix-socket "$WORK/podman.sock" http://d/_ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

emulator() {
  if curl -fsS "$ENDPOINT/_ministack/health" >/dev/null 2>&1; then
    echo "something already answers on port $PORT: set CLOUD_E2E_PORT"
    return 1
  fi
  # DEBUG: the request log counts DynamoDB requests for the figures.
  DOCKER_HOST="unix://$WORK/podman.sock" BIND_HOST=127.0.0.1 GATEWAY_PORT=$PORT LOG_LEVEL=DEBUG \
    MINISTACK_REGION=us-east-1 setsid .venv-ministack/bin/ministack >"$WORK/ministack.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  echo "$pid" > "$WORK/ministack.pid"
  for _ in $(seq 600); do
    kill -0 "$pid" 2>/dev/null || { tail -20 "$WORK/ministack.log"; return 1; }
    curl -fsS "$ENDPOINT/_ministack/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

build() {
  LAYER_FOR=host PYTHON="$ROOT/.venv-ministack/bin/python" .venv-sam/bin/sam build --build-dir "$WORK/build"
}

image() {
  local base
  base=$(bash scripts/verifier-base.sh) || return 1
  podman build --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network host \
    -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
    --ignorefile verifier_container/Dockerfile.dockerignore --label taskgate.cloud-e2e=1 \
    --build-arg BASE="$base" -f verifier_container/Dockerfile -t localhost/taskgate-verifier:cloud-e2e .
}

cost_model() {
  .venv/bin/python bench/cost.py --n 3 | tee "$WORK/cost.out" | tail -3
}

output() {
  .venv/bin/python - "$STACK" "$1" <<'EOF'
import sys, boto3
stack, key = sys.argv[1:]
outputs = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]
print(next(o["OutputValue"] for o in outputs if o["OutputKey"] == key))
EOF
}

# The parameters each deploy passes (SAM splits the overrides at spaces outside quotes). Every
# other parameter keeps its default. A sweep every minute: the scenario kills a verifier task.
PARAMS=("McpExtraAllowedHosts=127.0.0.1:*" 'VerifierSweepSchedule="rate(1 minute)"')

sam_deploy() {
  .venv-sam/bin/sam deploy --template-file "$WORK/build/template.yaml" --stack-name "$STACK" \
    --resolve-s3 --capabilities CAPABILITY_IAM --no-confirm-changeset --no-fail-on-empty-changeset \
    --parameter-overrides "${PARAMS[@]}" "$@"
}

deploy() {
  date +%s.%N > "$WORK/deploy-started"
  sam_deploy
}

# The emulator serves the API at a path of its own address, not at the execute-api host name:
# the verifier tasks get that URL from the stack's VerifierServerUrl parameter (an update).
server_url() {
  local api_url id
  api_url=$(output ApiUrl) || return 1
  id=${api_url#https://}
  id=${id%%.*}
  PARAMS+=("VerifierServerUrl=$ENDPOINT/_aws/execute-api/$id")
  sam_deploy || return 1
  local repo
  repo=$(output VerifierRepositoryUri) || return 1
  # ECR's data plane is not emulated: the task's image is found under its name in podman's store.
  podman tag localhost/taskgate-verifier:cloud-e2e "$repo:latest"
  curl -fsS "$ENDPOINT/_aws/execute-api/$id/api/health"
}

scenario() {
  local model redeploy
  model=$(grep -o 'all_requests=[0-9.]*' "$WORK/cost.out" 2>/dev/null | head -1)
  # The same deploy, for the scenario's update of the nightly schedule (a JSON argv).
  redeploy=$(.venv/bin/python -c 'import json, sys; print(json.dumps(sys.argv[1:]))' \
    .venv-sam/bin/sam deploy --template-file "$WORK/build/template.yaml" --stack-name "$STACK" \
    --resolve-s3 --capabilities CAPABILITY_IAM --no-confirm-changeset --no-fail-on-empty-changeset \
    --parameter-overrides "${PARAMS[@]}")
  CLOUD_E2E_STACK=$STACK CLOUD_E2E_ENDPOINT=$ENDPOINT CLOUD_E2E_WORK=$WORK \
    CLOUD_E2E_DEPLOY_STARTED=$(cat "$WORK/deploy-started") CLOUD_E2E_MINISTACK_LOG=$WORK/ministack.log \
    CLOUD_E2E_REDEPLOY=$redeploy CLOUD_E2E_COST_MODEL="${model:+$model (requests_per_lifecycle plus the key lookups of the authorizers)}" \
    CLOUD_E2E_PIDS="$(cat "$WORK/ministack.pid") $(cat "$WORK/podman.pid")" \
    .venv/bin/python scripts/cloud-e2e/scenario.py
}

delete() {
  .venv-sam/bin/sam delete --stack-name "$STACK" --no-prompts --region us-east-1
  # What the template retains (the table, the attestation key, the cache bucket) stays.
  .venv/bin/python - "$STACK" <<'EOF'
import sys, boto3
stack = sys.argv[1]
left = [s["StackName"] for s in boto3.client("cloudformation").list_stacks()["StackSummaries"] if s["StackName"] == stack and s["StackStatus"] != "DELETE_COMPLETE"]
assert not left, left
tables = [t for t in boto3.client("dynamodb").list_tables()["TableNames"] if t.startswith(f"{stack}-Table")]
assert tables, "the retained table is gone"
print("deleted; retained:", ", ".join(tables))
EOF
}

trap finish EXIT
step "tools: podman, runc, debootstrap; .venv and .venv-sam" tools || exit 1
step "ministack $MINISTACK_VERSION in .venv-ministack, patched" ministack || exit 1
step "podman's Docker API service (the emulator's ECS runs on it)" podman_service || exit 1
step "the emulator on $ENDPOINT" emulator || exit 1
cost_model >"$WORK/cost.log" 2>&1 &
cost_pid=$!
image >"$WORK/image.log" 2>&1 &
image_pid=$!
step "sam build (the layer for this machine: LAYER_FOR=host)" build
built=$?
step "the verifier image (podman, on the local base image)" wait $image_pid
imaged=$?
wait $cost_pid
if [ $built -ne 0 ] || [ $imaged -ne 0 ]; then
  cannot "sam deploy"; exit 1
fi
step "sam deploy: the whole stack" deploy || exit 1
step "sam deploy: VerifierServerUrl, the emulator's API address" server_url || exit 1
# The scenario prints its own steps; they count here.
CLOUD_E2E_SCENARIO_LOG=$WORK/scenario.log
scenario 2>"$WORK/scenario.err" | tee "$CLOUD_E2E_SCENARIO_LOG" | grep --line-buffered -v '^cloud-e2e: scenario '
scenario_rc=${PIPESTATUS[0]}
if [ -f "$WORK/steps.json" ]; then
  read -r s_passed s_total < <(.venv/bin/python -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sum(ok for _, ok in r), len(r))' "$WORK/steps.json")
  passed=$((passed + s_passed))
  total=$((total + s_total))
else
  total=$((total + 1))
  echo "cloud-e2e: FAIL the scenario did not run (exit $scenario_rc):"
  tail -25 "$WORK/scenario.err" | sed 's/^/    /'
fi
[ "$scenario_rc" -eq 0 ] || failed=1
if [ "${CLOUD_E2E_KEEP:-0}" = 1 ]; then
  echo "cloud-e2e: kept: the stack $STACK on $ENDPOINT (CLOUD_E2E_KEEP=1)"
  trap - EXIT
  echo "cloud-e2e: $passed/$total passed"
  wait
  exit $failed
fi
step "sam delete: the stack gone, what it retains kept" delete || failed=1
exit $failed
