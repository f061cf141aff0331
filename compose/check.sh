#!/usr/bin/env bash
# Validate compose/docker-compose.yml without starting anything (no engine needed).
set -euo pipefail

file="$(dirname "$0")/docker-compose.yml"

if command -v docker-compose >/dev/null 2>&1; then
    docker-compose -f "$file" config -q
elif command -v docker >/dev/null 2>&1 && docker compose version >/dev/null 2>&1; then
    docker compose -f "$file" config -q
else
    echo "check.sh: neither docker-compose nor 'docker compose' is available; skipping validation of $file"
    exit 0
fi
echo "check.sh: $file is valid"
