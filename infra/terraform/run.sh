#!/usr/bin/env bash
# The offline checks of terraform/ (make test-terraform): tofu fmt -check,
# then tofu init, validate and test on every module and example, and the
# same with HashiCorp Terraform, with no network: OpenTofu built from the
# Go module proxy, Terraform as installed, and the google and aws providers
# replaced by a schema-only stand-in (infra/terraform/standin) serving the
# real providers' schemas, from a filesystem mirror.
#
# Environment:
#   SLUICE_CACHE=dir   where the tofu binary and the generated schemas are
#                      kept between runs (default ${XDG_CACHE_HOME:-~/.cache}/sluice)
#   TF_DIRS="..."      check only these directories (relative to terraform/)
#   TF_JOBS=n          directories checked at once (default: one per CPU)
#   TERRAFORM=path     the terraform binary (default: terraform on PATH)
#   CI=true            a missing tool (go, npm, terraform) fails instead of
#                      skipping
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

TOFU_VERSION=1.12.6
GOOGLE_VERSION=6.50.0 # of @cdktf/provider-google 16.12.1
AWS_VERSION=6.25.0    # of @cdktf/provider-aws 21.22.1
cache="${SLUICE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice}"

missing() {
  if [ "${CI:-}" = true ]; then
    echo "test-terraform: FAILED: $1"
    exit 1
  fi
  echo "test-terraform: SKIPPED: $1; CI=true makes this a failure"
  exit 0
}
command -v go >/dev/null || missing "go is not installed"
command -v npm >/dev/null || missing "npm is not installed"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/sluice-terraform.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# tofu and terraform read only this run's CLI configuration, never the
# machine's: the stand-in's mirror (filled below) is their one way to
# install providers.
mirror="$tmp/mirror"
export TF_CLI_CONFIG_FILE="$tmp/tofurc"
cat >"$TF_CLI_CONFIG_FILE" <<EOF
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.opentofu.org/hashicorp/*", "registry.terraform.io/hashicorp/*"]
  }
}
EOF
export TF_IN_AUTOMATION=1 TF_INPUT=0 CHECKPOINT_DISABLE=1

# OpenTofu, built once per version from the module proxy's source (go
# install refuses the module: its go.mod has replace directives).
tofu="$cache/tofu-v$TOFU_VERSION/tofu"
if [ ! -x "$tofu" ]; then
  echo "=== building OpenTofu v$TOFU_VERSION from the Go module proxy (once; cached in $(dirname "$tofu"))"
  started=$SECONDS
  dir="$(cd "$tmp" && GOFLAGS=-mod=mod go mod download -json "github.com/opentofu/opentofu@v$TOFU_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$dir" ] || { echo "test-terraform: FAILED: go mod download gave no directory"; exit 1; }
  cp -r "$dir" "$tmp/opentofu"
  chmod -R u+w "$tmp/opentofu"
  mkdir -p "$(dirname "$tofu")"
  (cd "$tmp/opentofu" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -trimpath \
    -ldflags "-X github.com/opentofu/opentofu/version.dev=no" -o "$tofu.new" ./cmd/tofu)
  mv "$tofu.new" "$tofu"
  rm -rf "$tmp/opentofu"
  echo "=== OpenTofu built in $((SECONDS - started))s"
fi
"$tofu" version | sed -n 1p

# The providers' schemas: the .jsii manifests of the CDKTF packages
# (infra/terraform/schemas/package-lock.json), turned into the stand-in's
# schema files; both cached by what they are made from.
schemas=infra/terraform/schemas
stamp="$schemas/node_modules/.sluice-lock"
if ! cmp -s "$schemas/package-lock.json" "$stamp" 2>/dev/null; then
  echo "=== npm ci in $schemas"
  (cd "$schemas" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) ||
    missing "npm ci in $schemas failed"
  cp "$schemas/package-lock.json" "$stamp"
fi
key="$(cat "$schemas/package-lock.json" infra/terraform/standin/*.go infra/terraform/standin/go.sum | sha256sum | cut -c1-16)"
gen="$cache/standin-$key"
standin="$tmp/standin"
echo "=== go vet, go test and go build in infra/terraform/standin"
(cd infra/terraform/standin && go vet . && go test -count=1 . && go build -o "$standin" .)
if [ ! -s "$gen/google.json" ] || [ ! -s "$gen/aws.json" ]; then
  mkdir -p "$gen"
  "$standin" gen "$schemas/node_modules/@cdktf/provider-google/.jsii" "$gen/google.json.new"
  "$standin" gen "$schemas/node_modules/@cdktf/provider-aws/.jsii" "$gen/aws.json.new"
  mv "$gen/google.json.new" "$gen/google.json"
  mv "$gen/aws.json.new" "$gen/aws.json"
  # Schemas of earlier sources are of no further use.
  for old in "$cache"/standin-*; do
    [ "$old" = "$gen" ] || rm -rf "$old"
  done
fi

# The filesystem mirror (unpacked layout): the stand-in under each
# provider's name and version, its schema.json beside it.
platform="$(go env GOOS)_$(go env GOARCH)"
for p in "google $GOOGLE_VERSION" "aws $AWS_VERSION"; do
  set -- $p
  for registry in registry.opentofu.org registry.terraform.io; do
    d="$mirror/$registry/hashicorp/$1/$2/$platform"
    mkdir -p "$d"
    cp "$standin" "$d/terraform-provider-$1_v$2"
    cp "$gen/$1.json" "$d/schema.json"
  done
done

# A copy of the tree without lock files or .terraform: a committed lock
# file holds the real providers' hashes, which the stand-in cannot match.
# Modules read files of the repository beside terraform/ (the Firestore
# store's index declaration): those are copied to the same places.
mkdir -p "$tmp/tree/terraform" "$tmp/tree/stores/firestore"
tar -C terraform --exclude=.terraform --exclude=.terraform.lock.hcl --exclude='*.tfstate*' -cf - . | tar -C "$tmp/tree/terraform" -xf -
cp stores/firestore/firestore.indexes.json "$tmp/tree/stores/firestore/"

# Most users apply the modules with HashiCorp Terraform, so its init,
# validate and test run too, on a copy of their own. Terraform keeps an
# override's values out of a plan unless the block says
# override_during = plan, which OpenTofu refuses (it applies overrides to
# plans already): the copy's test files get the line. Terraform is not
# fetched (its licence keeps it out of Debian and the module proxy).
terraform="${TERRAFORM:-$(command -v terraform || true)}"
terraform_missing=""
terraform_version=""
if [ -n "$terraform" ]; then
  terraform_version="$("$terraform" version 2>/dev/null | sed -n '1s/^Terraform v\([0-9][0-9.]*\).*/\1/p')"
fi
# override_during came with Terraform 1.11.
if [ -n "$terraform_version" ] && ! printf '%s\n%s\n' 1.11 "$terraform_version" | sort -C -V; then
  terraform_missing="terraform $terraform_version is older than 1.11, the first with override_during"
elif [ -n "$terraform_version" ]; then
  "$terraform" version | sed -n 1p
  cp -r "$tmp/tree" "$tmp/tree-terraform"
  find "$tmp/tree-terraform" -name '*.tftest.hcl' -exec sed -E -i \
    '/^[[:space:]]*override_(resource|data|module)[[:space:]]*[{][[:space:]]*$/a\  override_during = plan' {} +
else
  terraform_missing="terraform is not installed (set TERRAFORM to its path)"
fi
if [ -n "$terraform_missing" ]; then
  if [ "${CI:-}" = true ]; then
    echo "test-terraform: FAILED: $terraform_missing"
  else
    echo "test-terraform: SKIPPED the Terraform checks: $terraform_missing; CI=true makes this a failure"
  fi
fi

rc=0
fail() { echo "=== FAILED: $1"; rc=1; }

echo "=== tofu fmt -check -recursive terraform"
"$tofu" fmt -check -recursive -diff terraform || fail "tofu fmt (run: tofu fmt -recursive terraform)"

dirs="${TF_DIRS:-$(cd terraform && ls -d modules/*/ examples/*/ 2>/dev/null | sed 's,/$,,')}"
[ -n "$dirs" ] || { echo "test-terraform: FAILED: no modules or examples under terraform/"; exit 1; }
# check_dir runs one directory's checks with one tool (tofu or terraform),
# its output to $3. Each step exits on its own failure: set -e does not act
# in a function whose status is tested.
check_dir() {
  local name="$1" dir="$2" log="$3" bin tree
  case "$name" in
    tofu) bin="$tofu" tree="$tmp/tree" ;;
    terraform) bin="$terraform" tree="$tmp/tree-terraform" ;;
  esac
  (
    cd "$tree/terraform/$dir" || exit 1
    echo "=== $dir: $name init -backend=false"
    "$bin" init -backend=false -no-color >"$log.init" 2>&1 || { cat "$log.init"; exit 1; }
    echo "=== $dir: $name validate"
    "$bin" validate -no-color || exit 1
    if compgen -G "*.tftest.hcl" >/dev/null || compgen -G "tests/*.tftest.hcl" >/dev/null; then
      echo "=== $dir: $name test"
      "$bin" test -no-color || exit 1
    fi
  ) >"$log" 2>&1
}

tools="tofu"
[ -z "$terraform_missing" ] && tools="tofu terraform"
[ -n "$terraform_missing" ] && [ "${CI:-}" = true ] && fail "$terraform_missing"

# The directories are independent (each its own copy, the mirror only
# read) and the tools are CPU-bound loading the providers' schemas, so they
# run TF_JOBS at a time (default: one per CPU); their output is shown in
# order.
jobs_max="${TF_JOBS:-$(nproc)}"
mkdir -p "$tmp/logs"
i=0
for tool in $tools; do
  for d in $dirs; do
    i=$((i + 1))
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
    (if check_dir "$tool" "$d" "$tmp/logs/$i"; then echo 0; else echo 1; fi >"$tmp/logs/$i.rc") &
  done
done
wait
i=0
for tool in $tools; do
  for d in $dirs; do
    i=$((i + 1))
    cat "$tmp/logs/$i"
    [ "$(cat "$tmp/logs/$i.rc" 2>/dev/null)" = 0 ] || fail "$d ($tool)"
  done
done
[ $rc -eq 0 ] && echo "=== test-terraform: ok ($(echo "$dirs" | wc -w) directories with $(echo "$tools" | sed 's/ / and /'), ${SECONDS}s)"
exit $rc
