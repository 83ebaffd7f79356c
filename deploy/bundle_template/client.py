"""Send files ({{NOUN}}s) to the running service, using only Python's standard library.

Usage: python client.py FILE [FILE ...] [--url http://127.0.0.1:8000] [--token TOKEN]
Prints the service's JSON answer: one {"label", "score", "scores"} per file, and the latency.
"""

import argparse
import base64
import json
import sys
import urllib.error
import urllib.request

FIELD = "{{JSON_FIELDS}}"  # the JSON field of this model's inputs, filled in when the bundle is made
ENCODING = "{{ENCODING}}"  # "base64": a file's bytes; "text": a text file sent as it is


def encode(path) -> str:
    """One file as the JSON value the service reads."""
    with open(path, "rb") as handle:
        data = handle.read()
    return data.decode("utf-8-sig") if ENCODING == "text" else base64.b64encode(data).decode("ascii")


def predict(paths, url="http://127.0.0.1:8000", token=None, timeout=60.0) -> dict:
    """POST the files as JSON to ``url``/v1/predict and return the decoded answer."""
    files = [encode(path) for path in paths]
    request = urllib.request.Request(
        url.rstrip("/") + "/v1/predict",
        data=json.dumps({FIELD: files}).encode("utf-8"),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode("utf-8"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", default=None)
    args = parser.parse_args(argv)
    try:
        answer = predict(args.files, args.url, args.token)
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", "replace")
        sys.stderr.write(f"error {exc.code}: {body}\n")
        return 1
    except (OSError, urllib.error.URLError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    json.dump(answer, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
