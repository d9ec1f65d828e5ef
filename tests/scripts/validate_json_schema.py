#!/usr/bin/python3
"""Validates a JSON document against a JSON schema (draft 4, as the SARIF 2.1.0 schema is).

Usage: validate_json_schema.py SCHEMA.json DOCUMENT.json
Exit: 0 valid; 1 invalid (each error on stderr with its JSON path); 2 usage or unreadable input.
Uses python3-jsonschema from Debian (tools/setup.sh installs it).
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate_json_schema: python3-jsonschema is not installed (tools/setup.sh)", file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], encoding="utf-8") as f:
            schema = json.load(f)
        with open(sys.argv[2], encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError) as e:
        print(f"validate_json_schema: {e}", file=sys.stderr)
        return 2
    validator = jsonschema.Draft4Validator(schema)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    for e in errors:
        path = "/".join(str(p) for p in e.absolute_path)
        print(f"invalid at /{path}: {e.message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
