#!/usr/bin/python3
"""The JSON Schemas in schemas/ against the docs and against replaygate's own readers.

Usage:
  schemas.py lint SOURCE_DIR AJV
      ajv (strict mode) compiles each schema, which lints it; every title and description appears in
      the schema's docs page (whitespace, `code` marks and **bold** aside); every example is valid
      against the part of the schema that gives it.
  schemas.py validate SOURCE_DIR REPLAYGATE AJV WORK_DIR
      Exports every shipped and golden policy, test-case and mapping file through replaygate's own
      readers (`replaygate convert --to json`) and validates each export against its schema with
      ajv (strict mode); proposal files the reader accepts (`proposal check`) are validated as
      they are. A file the reader rejects (exit 1) exports nothing and is skipped; every shipped
      file must export, start with its `# yaml-language-server: $schema=` line, and a shipped
      policy's YAML and .policy forms must export the same JSON.
Exit: 0 all good, 1 a problem (each on stderr), 2 usage or a missing tool.
The raw YAML is never read here: only replaygate's reading of it is validated (docs/editors.md).
"""
import json
import os
import re
import shutil
import subprocess
import sys

SCHEMA_DIALECT = "http://json-schema.org/draft-07/schema#"
# Each schema and the page whose text its titles and descriptions come from.
DOCS = {
    "policy": "docs/policy-language.md",
    "cases": "docs/cli.md",
    "mapping": "docs/input-mapping.md",
    "proposal": "docs/proposals.md",
    "plan": "docs/plans.md",
}
SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")
# Strict mode (unknown keywords, types, required properties, tuples are errors); union types
# (`"type": ["string", "integer"]`) are what a YAML scalar is, so they are allowed.
AJV_FLAGS = ["--spec=draft7", "--strict=true", "--allow-union-types"]
VALIDATE_FLAGS = AJV_FLAGS + ["--all-errors", "--errors=text"]

problems = []


def problem(text):
    problems.append(text)
    print("schemas: " + text, file=sys.stderr)


def normalized(text):
    """Text as the docs and the schemas both hold it: no Markdown code or bold marks, one space."""
    text = text.replace("`", "").replace("**", "")
    return " ".join(text.split())


# Keywords whose values are data, not schemas: nothing in them is an annotation.
DATA_KEYWORDS = ("examples", "enum", "const", "default")


def walk(node, pointer=""):
    """Every (JSON pointer, dict) that is a schema or holds schemas, depth first."""
    if isinstance(node, dict):
        yield pointer, node
        for key, value in node.items():
            if key in DATA_KEYWORDS:
                continue
            yield from walk(value, pointer + "/" + key.replace("~", "~0").replace("/", "~1"))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, pointer + "/" + str(i))


def run_ajv(ajv, args):
    result = subprocess.run([ajv] + args, capture_output=True, text=True)
    return result.returncode, (result.stdout + result.stderr).strip()


def lint(source, ajv):
    import jsonschema  # Debian's python3-jsonschema (tools/setup.sh)
    for kind, page in sorted(DOCS.items()):
        path = os.path.join(source, "schemas", kind + ".schema.json")
        code, out = run_ajv(ajv, ["compile"] + AJV_FLAGS + ["-s", path])
        if code != 0:
            problem(f"{path}: ajv --strict=true refuses it:\n{out}")
            continue
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
        if schema.get("$schema") != SCHEMA_DIALECT:
            problem(f"{path}: $schema must be {SCHEMA_DIALECT} (draft-07, what editors support)")
        if not str(schema.get("$id", "")).endswith("/" + kind + ".schema.json"):
            problem(f"{path}: $id must end in /{kind}.schema.json")
        for key in ("title", "description"):
            if key not in schema:
                problem(f"{path}: the schema has no top-level {key}")
        with open(os.path.join(source, page), encoding="utf-8") as f:
            docs = normalized(f.read())
        resolver = jsonschema.RefResolver.from_schema(schema)
        for pointer, node in walk(schema):
            for key in ("title", "description"):
                text = node.get(key)
                # A property named "title" or "description" is a schema, not an annotation.
                if isinstance(text, str) and normalized(text) not in docs:
                    problem(f"{path}#{pointer}: this {key} is not in {page} (write it there, "
                            f"or take the docs' words): {text!r}")
            examples = node.get("examples")
            if examples is None or not isinstance(examples, list):
                continue
            part = {k: v for k, v in node.items() if k != "examples"}
            validator = jsonschema.Draft7Validator(part, resolver=resolver)
            for i, example in enumerate(examples):
                for error in validator.iter_errors(example):
                    problem(f"{path}#{pointer}/examples/{i}: the example is not valid here: "
                            f"{error.message}")


def shipped_files(source):
    """The YAML files replaygate ships, with the kind of each."""
    out = []
    for root, _, names in os.walk(os.path.join(source, "policies")):
        for name in sorted(names):
            if name.endswith(".test.yaml"):
                out.append((os.path.join(root, name), "cases"))
            elif name.endswith((".yaml", ".yml")):
                out.append((os.path.join(root, name), "policy"))
    examples = os.path.join(source, "examples")
    for name in sorted(os.listdir(examples)):
        if name.endswith(".mapping.yaml"):
            out.append((os.path.join(examples, name), "mapping"))
    return sorted(out)


def files_under(directory, suffixes):
    out = []
    for root, _, names in os.walk(directory):
        out += [os.path.join(root, n) for n in names if n.endswith(suffixes)]
    return sorted(out)


def policy_of(source, path, kind):
    """The policy a case or mapping file is read against."""
    if kind == "cases":
        sibling = path[: -len(".test.yaml")] + ".yaml"
        if os.path.exists(sibling):
            return sibling
    if kind == "mapping":
        beside = os.path.join(os.path.dirname(path), "policy.yaml")
        if os.path.exists(beside):
            return beside
    # The examples, the fuzz corpora (tests/fuzz/fuzz_mapping.cc, fuzz_test_cases.cc) and
    # tests/data/mapping are read against the reference gate.
    return os.path.join(source, "policies", "replay_gate.yaml")


def collect(source):
    """(path, kind, policy or None, shipped) for every file to export."""
    data = os.path.join(source, "tests", "data")
    fuzz = os.path.join(data, "fuzz")
    shipped = shipped_files(source)
    seen = set(p for p, _ in shipped)
    out = [(p, k, policy_of(source, p, k) if k != "policy" else None, True) for p, k in shipped]

    def add(path, kind):
        if path not in seen:
            seen.add(path)
            out.append((path, kind, policy_of(source, path, kind) if kind != "policy" else None,
                        False))

    for path in files_under(source + "/policies", (".policy",)):
        add(path, "policy")
    for path in files_under(data, (".yaml", ".yml", ".policy")):
        if path.startswith(fuzz + "/"):
            continue
        if path.endswith(".test.yaml"):
            add(path, "cases")
        elif path.endswith(".mapping.yaml"):
            add(path, "mapping")
        else:
            add(path, "policy")
    for target, kind in (("policy_yaml", "policy"), ("policy_dsl", "policy"),
                         ("test_cases", "cases"), ("mapping", "mapping")):
        for path in files_under(os.path.join(fuzz, target), ("",)):
            add(path, kind)
    return out


def export(replaygate, path, kind, policy, work, n):
    """Exports `path`; returns (exit code, output file, stderr)."""
    given = path
    if kind == "policy" and not path.endswith((".yaml", ".yml", ".policy")):
        # A fuzz corpus file: the front-end is picked by extension, as its fuzz target picks it.
        extension = ".policy" if "/policy_dsl/" in path else ".yaml"
        given = os.path.join(work, "in", f"{n}{extension}")
        shutil.copyfile(path, given)
    output = os.path.join(work, kind, f"{n}.json")
    command = [replaygate, "convert", "--to", "json", given, "-o", output]
    if kind != "policy":
        command += ["--kind", kind, "--policy", policy]
    result = subprocess.run(command, capture_output=True, text=True, errors="replace")
    return result.returncode, output, result.stderr


def validate(source, replaygate, ajv, work):
    shutil.rmtree(work, ignore_errors=True)
    for sub in ("in", "policy", "cases", "mapping"):
        os.makedirs(os.path.join(work, sub))
    exported = {"policy": [], "cases": [], "mapping": []}
    by_source = {}
    rejected = 0
    for n, (path, kind, policy, shipped) in enumerate(collect(source)):
        relative = os.path.relpath(path, source)
        if shipped and path.endswith((".yaml", ".yml")):
            with open(path, encoding="utf-8", errors="replace") as f:
                first = f.readline().rstrip("\n")
            match = SCHEMA_LINE.match(first)
            want = os.path.join(source, "schemas", kind + ".schema.json")
            if not match:
                problem(f"{relative}:1: a shipped file starts with "
                        f"'# yaml-language-server: $schema={os.path.relpath(want, os.path.dirname(path))}'")
            elif os.path.normpath(os.path.join(os.path.dirname(path), match.group(1))) != want:
                problem(f"{relative}:1: the $schema line names {match.group(1)}, not "
                        f"{os.path.relpath(want, os.path.dirname(path))}")
        code, output, err = export(replaygate, path, kind, policy, work, n)
        if code == 0:
            exported[kind].append((relative, output))
            by_source[path] = output
        elif code == 1 and not shipped:
            rejected += 1  # the reader refuses it: nothing to validate
        else:
            problem(f"{relative}: replaygate convert --to json{'' if kind == 'policy' else ' --kind ' + kind} "
                    f"exited {code}:\n{err.strip()}")
    # Both forms of a shipped policy export one document (it is printed from the checked IR).
    for path, output in sorted(by_source.items()):
        if path.startswith(os.path.join(source, "policies")) and path.endswith(".policy"):
            yaml_form = path[: -len(".policy")] + ".yaml"
            other = by_source.get(yaml_form)
            if other is None:
                problem(f"{os.path.relpath(path, source)}: no exported YAML form beside it")
                continue
            with open(output, encoding="utf-8") as a, open(other, encoding="utf-8") as b:
                if a.read() != b.read():
                    problem(f"{os.path.relpath(path, source)} and its YAML form export different "
                            f"JSON ({output}, {other})")
    # Proposal files are JSON already: validated as they are when the reader accepts them (the
    # fuzz corpus is read against the reference gate, as tests/fuzz/fuzz_proposal.cc reads it).
    proposals = []
    for path in files_under(os.path.join(source, "tests", "data", "fuzz", "proposal"), ("",)):
        result = subprocess.run([replaygate, "proposal", "check", path, "--policy",
                                 os.path.join(source, "policies", "replay_gate.yaml")],
                                capture_output=True)
        if result.returncode == 0:
            proposals.append((os.path.relpath(path, source), path))
        else:
            rejected += 1
    exported["proposal"] = proposals
    # Plan files are JSON: the fuzz seeds `plan show` reads as unedited plans are validated.
    plans = []
    for path in files_under(os.path.join(source, "tests", "data", "fuzz", "plan"), ("",)):
        result = subprocess.run([replaygate, "plan", "show", path], capture_output=True)
        if result.returncode == 0:
            plans.append((os.path.relpath(path, source), path))
        else:
            rejected += 1
    exported["plan"] = plans
    for kind, files in sorted(exported.items()):
        if not files:
            problem(f"no {kind} file exported: the search for files is broken")
            continue
        schema = os.path.join(source, "schemas", kind + ".schema.json")
        args = ["validate"] + VALIDATE_FLAGS + ["-s", schema]
        for _, output in files:
            args += ["-d", output]
        code, out = run_ajv(ajv, args)
        if code != 0:
            # ajv names each data file "valid" or "invalid", then the errors: name the source.
            for relative, output in files:
                out = out.replace(output, f"{relative} (as exported to {output})")
            lines = [line for line in out.splitlines() if not line.endswith(" valid")]
            problem(f"{os.path.relpath(schema, source)}: ajv validate exited {code}:\n" +
                    "\n".join(lines))
    if not problems:
        print(f"schemas: valid exports: {len(exported['policy'])} policies, "
              f"{len(exported['cases'])} case files, {len(exported['mapping'])} mapping files, "
              f"{len(exported['proposal'])} proposals, {len(exported['plan'])} plans; {rejected} files the readers reject "
              f"were not validated")


def main():
    args = sys.argv[1:]
    if len(args) == 3 and args[0] == "lint":
        source, ajv = args[1], args[2]
    elif len(args) == 5 and args[0] == "validate":
        source, replaygate, ajv, work = args[1:]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    if not os.access(ajv, os.X_OK):
        print(f"schemas: {ajv} is not installed: run tools/setup.sh (npm ci in tools/schema)",
              file=sys.stderr)
        return 2
    if args[0] == "lint":
        lint(source, ajv)
    else:
        validate(source, replaygate, ajv, work)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
