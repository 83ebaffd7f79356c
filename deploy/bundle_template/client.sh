#!/bin/sh
# Send a file to the model with curl. Usage: ./client.sh {{EXAMPLE}} [http://127.0.0.1:8000] [TOKEN]
set -eu
IMAGE="$1"
URL="${2:-http://127.0.0.1:8000}"
TOKEN="${3:-}"
if [ -n "$TOKEN" ]; then
  curl -sS -F "file=@${IMAGE}" -H "Authorization: Bearer ${TOKEN}" "${URL}/v1/predict"
else
  curl -sS -F "file=@${IMAGE}" "${URL}/v1/predict"
fi
echo
