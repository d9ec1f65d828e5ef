#!/usr/bin/env python3
"""The include check of the dependency rules (docs/architecture.md), folder by folder.

In: ROOT, a source tree, and RULES, its table (tests/scripts/include_rules.txt says the form).
Every .h/.cc/.c/.hpp/.cpp file under ROOT (but build*/ and hidden folders) is read; each
#include must be of the file's own folder, of a folder its rule lists, or of a listed library,
and never of another folder's internal/ (unless the file's folder is internal-ok).
Out: one line per bad include, "include_rules: FILE:LINE: ..." on stderr, and exit 1; exit 0
("include_rules: ok, N files") when every include keeps its rule; exit 2 when the table cannot be
read or a source folder has no rule.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCES = ('.h', '.cc', '.c', '.hpp', '.cpp')


class Rules:
    def __init__(self, path):
        self.path = path
        self.allowed = {}  # folder -> set of folders ("*": any)
        self.libraries = {}  # folder -> set of library names ("*": any)
        self.pending = {}  # folder -> set of folders allowed for now (+=)
        self.internal_ok = set()
        self.headers = []  # (pattern, library)
        with open(path, encoding='utf-8') as f:
            for number, raw in enumerate(f, 1):
                line = raw.split('#', 1)[0].strip()
                if line:
                    self._read(line, number)

    def _fail(self, number, why):
        sys.stderr.write(f'include_rules: {self.path}:{number}: {why}\n')
        sys.exit(2)

    def _read(self, line, number):
        if line.startswith('library '):
            name, _, patterns = line[len('library '):].partition(':')
            for p in patterns.split():
                self.headers.append((p, name.strip()))
        elif line.startswith('internal-ok:'):
            self.internal_ok.update(line[len('internal-ok:'):].split())
        elif '+=' in line:
            folder, _, extra = line.partition('+=')
            if folder.strip() not in self.allowed:
                self._fail(number, f'"{folder.strip()} +=" before its rule')
            self.pending.setdefault(folder.strip(), set()).update(extra.split())
        elif ':' in line:
            folder, _, rest = line.partition(':')
            folders, _, libraries = rest.partition('|')
            folders, libraries = set(folders.split()), set(libraries.split())
            if '*' in folders:
                libraries.add('*')
            self.allowed[folder.strip()] = folders
            self.libraries[folder.strip()] = libraries
        else:
            self._fail(number, f'cannot read "{line}"')

    def owner(self, directory):
        """The folder whose rule covers `directory`: the longest rule folder it lies in."""
        parts = directory.split('/') if directory else []
        for n in range(len(parts), 0, -1):
            candidate = '/'.join(parts[:n])
            if candidate in self.allowed:
                return candidate
        return None

    def may_include_internal(self, rel):
        return any(rel.startswith(folder + '/') for folder in self.internal_ok)

    def library_of(self, header):
        for pattern, name in self.headers:
            if pattern.endswith('/') and header.startswith(pattern):
                return name
            if pattern.endswith('*') and header.startswith(pattern[:-1]):
                return name
            if header == pattern:
                return name
        return None


def top_folders(root, rules):
    """The first parts of project include paths: the tree's folders and the table's."""
    found = {e for e in os.listdir(root) if os.path.isdir(os.path.join(root, e))}
    return found | {folder.split('/')[0] for folder in rules.allowed}


def check_file(rules, root, rel, folder, tops, problems):
    allowed = rules.allowed[folder] | rules.pending.get(folder, set())
    libraries = rules.libraries[folder]
    with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, header = m.group(1), m.group(2)
            where = f'{rel}:{number}: includes {kind}{header}{">" if kind == "<" else kind}'
            if kind == '<':
                library = rules.library_of(header)
                if library and '*' not in libraries and library not in libraries:
                    problems.append(f'{where}, a header of {library}, which {folder}/ may not '
                                    f'use (it may use: {", ".join(sorted(libraries)) or "none"})')
                continue
            if '/' not in header or header.split('/')[0] not in tops:
                continue  # beside the file (or a test's include directory)
            target_dir = os.path.dirname(os.path.normpath(header))
            parts = target_dir.split('/')
            if 'internal' in parts and not rules.may_include_internal(rel):
                home = '/'.join(parts[:parts.index('internal')])
                if rules.owner(home) != folder:
                    problems.append(f'{where}, under {home}/internal/, which only {home}/ '
                                    'may include')
                    continue
            target = rules.owner(target_dir)
            if target is None or target == folder or '*' in allowed or target in allowed:
                continue
            problems.append(f'{where}: {folder}/ may include only '
                            f'{", ".join(f + "/" for f in sorted(allowed)) or "itself"}')


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: include_rules.py ROOT RULES\n')
        return 2
    root, rules = argv[1], Rules(argv[2])
    tops = top_folders(root, rules)
    problems, files = [], 0
    for base, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith('.') and not d.startswith('build'))
        rel_dir = os.path.relpath(base, root)
        rel_dir = '' if rel_dir == '.' else rel_dir
        for name in sorted(names):
            if not name.endswith(SOURCES):
                continue
            rel = os.path.join(rel_dir, name)
            folder = rules.owner(rel_dir)
            if folder is None:
                sys.stderr.write(f'include_rules: {rel}: no rule for {rel_dir or "the top"}/ in '
                                 f'{rules.path}\n')
                return 2
            files += 1
            check_file(rules, root, rel, folder, tops, problems)
    for p in problems:
        sys.stderr.write(f'include_rules: {p} ({rules.path})\n')
    if problems:
        return 1
    print(f'include_rules: ok, {files} files')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
