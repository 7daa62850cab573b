#!/usr/bin/env bash
# Start a local PostgreSQL for the tests of tune's shared Optuna storage, installing it from apt when
# missing, and print the storage URL to use. Idempotent; needs root (CI runs as root).
set -euo pipefail
if ! command -v pg_ctlcluster >/dev/null || [ -z "$(pg_lsclusters -h 2>/dev/null)" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
read -r version cluster _ < <(pg_lsclusters -h | head -n 1)
pg_ctlcluster "$version" "$cluster" start >/dev/null 2>&1 || true  # "already running" is fine
for _ in $(seq 1 30); do
  su postgres -c "pg_isready -q" && break
  sleep 0.5
done
user="$(id -un)"
su postgres -c "psql -qtAc \"select 1 from pg_roles where rolname='$user'\" | grep -q 1 || psql -qc 'create role \"$user\" superuser login'"
su postgres -c "psql -qtAc \"select 1 from pg_database where datname='hyperloom_test'\" | grep -q 1 || createdb -O \"$user\" hyperloom_test"
echo "postgresql+psycopg://$user@/hyperloom_test?host=/var/run/postgresql"
