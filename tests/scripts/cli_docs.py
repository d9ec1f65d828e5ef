#!/usr/bin/python3
"""Checks that --help, the man pages and docs/cli.md name the same commands and options.

Usage: cli_docs.py REPLAYGATE MAN_DIR DOCS_CLI_MD

Walks the CLI through its own --help output (every command and nested action), then checks:
- each command has a man page (MAN_DIR/replaygate[-WORD...].1), and no page is left for a
  command that is gone; each page's OPTIONS lists every option --help lists, by its own names,
  and its COMMANDS every action;
- docs/cli.md has a section for each command (its own "## WORDS" heading, else its parent
  command's; a command with actions may instead have one for each action), and documents each
  option of each command: in that section, or in a paragraph that names the command in a code
  span (the introduction's "Every command that loads a table (`decide`, ...) takes
  `--trusted-key`");
- docs/cli.md names no long option that no command has (placeholders such as `--OPT` and other
  programs' options such as `cmake --install` aside), and a command's section names another
  command's option only in a code span that says whose it is (`decide --input-format`).
Exit: 0 all agree; 1 disagreements (each on stderr); 2 usage or a command that cannot run.
"""
import os
import re
import subprocess
import sys

OPTION = re.compile(r"(?<![\w-])(--?[A-Za-z0-9][A-Za-z0-9-]*)")
SPAN = re.compile(r"`([^`]*)`")


def run_help(binary, words):
    """A command's options (each a list of its names) and actions, parsed from its --help."""
    result = subprocess.run([binary, *words, "--help"], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join([binary, *words, '--help'])} exited {result.returncode}: "
                           f"{result.stderr.strip()}")
    options, actions, section = [], [], None
    for line in result.stdout.splitlines():
        if line and not line.startswith(" "):
            section = line[:-1] if line.endswith(":") else None
            continue
        # An entry starts at column 2; deeper lines continue a description.
        if not line.startswith("  ") or line.startswith("   "):
            continue
        first = line.split()[0]
        if section == "Options":
            options.append([n for n in first.split(",") if n.startswith("-")])
        elif section == "Subcommands":
            actions.append(first)
    return options, actions


def walk(binary):
    """Every command path (a tuple of words; () is the program) -> (options, actions)."""
    commands, pending = {}, [()]
    while pending:
        path = pending.pop()
        options, actions = run_help(binary, list(path))
        commands[path] = (options, actions)
        pending.extend(path + (action,) for action in actions)
    return commands


def page_name(path):
    return "-".join(("replaygate",) + path) + ".1"


def unroff(text):
    """A roff page's text, fonts and escapes dropped: enough to find option names."""
    text = re.sub(r"\\f(\[[A-Z]*\]|[BIRP])", "", text)
    return text.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")


def man_sections(text):
    sections, name = {}, None
    for line in text.splitlines():
        if line.startswith(".SH "):
            name = line[4:].strip().strip('"')
            sections[name] = ""
        elif name:
            sections[name] += line + "\n"
    return sections


def blocks(markdown):
    """(line number, text, fenced, heading) for each paragraph, its lines joined so a code span
    may cross a line break, and each line of a fenced block with its indented continuation
    lines; heading is the level-2 heading above it (None in the introduction)."""
    out, paragraph, start, fence, heading = [], [], 0, False, None

    def flush():
        if paragraph:
            out.append((start, " ".join(paragraph), False, heading))
            paragraph.clear()

    for number, line in enumerate(markdown.splitlines(), 1):
        if line.startswith("```"):
            flush()
            fence = not fence
        elif fence:
            if line[:1].isspace() and out and out[-1][2]:
                out[-1] = (out[-1][0], out[-1][1] + " " + line.strip(), True, heading)
            else:
                out.append((number, line, True, heading))
        elif line.startswith("## "):
            flush()
            heading = line[3:].replace("`", "").strip()
        elif not line.strip():
            flush()
        else:
            if not paragraph:
                start = number
            paragraph.append(line.strip())
    flush()
    return out


def section_for(headings, path):
    """The level-2 heading that documents `path`: its own, else its parent command's."""
    for n in range(len(path), 0, -1):
        want = " ".join(path[:n])
        for heading in headings:
            if want in [name.strip() for name in heading.split(", ")]:
                return heading
    return None


def names_command(span, path):
    words = span.split()
    if words[:1] == ["replaygate"]:
        words = words[1:]
    return tuple(words[:len(path)]) == path


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, man_dir, cli_md = sys.argv[1:]
    try:
        commands = walk(binary)
        with open(cli_md, encoding="utf-8") as f:
            markdown = f.read()
        pages = {p for p in os.listdir(man_dir) if p.endswith(".1")}
    except (OSError, RuntimeError) as e:
        print(f"cli_docs: {e}", file=sys.stderr)
        return 2
    doc = blocks(markdown)
    headings = list(dict.fromkeys(h for _, _, _, h in doc if h is not None))
    all_options = {n for options, _ in commands.values() for names in options for n in names}
    command_words = {word for path in commands for word in path}
    problems = []

    for path, (options, actions) in sorted(commands.items()):
        shown = " ".join(("replaygate",) + path)
        # The man page.
        page = page_name(path)
        if page not in pages:
            problems.append(f"{shown}: no man page {page} in {man_dir}")
        else:
            with open(os.path.join(man_dir, page), encoding="utf-8") as f:
                man = man_sections(f.read())
            # Each option is a .TP paragraph whose tag line starts with its names.
            lines = unroff(man.get("OPTIONS", "")).splitlines()
            listed = {m for tp, tag in zip(lines, lines[1:]) if tp == ".TP"
                      for m in OPTION.findall(tag.split(" ")[0])}
            for names in options:
                missing = [n for n in names if n not in listed]
                if missing:
                    problems.append(f"{page}: OPTIONS does not list {', '.join(missing)} "
                                    f"({shown} --help does)")
            listed = unroff(man.get("COMMANDS", "")).splitlines()
            for action in actions:
                if action not in listed:
                    problems.append(f"{page}: COMMANDS does not list '{action}'")
        # docs/cli.md: the section, then each option.
        heading = section_for(headings, path) if path else None
        if path and heading is None:
            if actions and all(section_for(headings, path + (a,)) for a in actions):
                pass  # documented action by action
            else:
                problems.append(f"{cli_md}: no section for '{' '.join(path)}': add a "
                                f"'## {' '.join(path)}' heading that documents it and its options")
                continue
        in_section = {t for _, text, _, h in doc if h == heading for t in OPTION.findall(text)}
        for names in options:
            if "--help" in names or any(n in in_section for n in names):
                continue
            if any(any(n in OPTION.findall(text) for n in names)
                   and any(names_command(span, path) for span in SPAN.findall(text))
                   for _, text, fenced, _ in doc if path and not fenced):
                continue  # a paragraph that names the command and the option
            where = f"## {heading}" if heading else "the introduction"
            problems.append(f"{cli_md}: {where} does not document {shown} {'/'.join(names)} "
                            f"(its --help lists it)")
    for page in sorted(pages - {page_name(path) for path in commands}):
        problems.append(f"{man_dir}/{page}: a man page for no command (a stale page)")

    # Options no command has, and options of another command in a section. A code span or code
    # line that starts with another program's name (`cmake --install`) is that program's.
    owners = {}
    for path in commands:
        heading = section_for(headings, path) if path else None
        if heading:
            owners.setdefault(heading, set()).update(
                n for p, (opts, _) in commands.items() if p[:len(path)] == path
                for names in opts for n in names)
    for number, text, fenced, heading in doc:
        segments = [(text, True)] if fenced else \
            [(span, True) for span in SPAN.findall(text)] + [(SPAN.sub(" ", text), False)]
        for span, in_code in segments:
            words = span.split()
            other_program = in_code and bool(words) and bool(re.fullmatch(r"[a-z][\w.-]*", words[0])) \
                and words[0] != "replaygate" and words[0] not in command_words
            for i, word in enumerate(words):
                match = OPTION.match(word)
                if not match or not word.startswith("--") or other_program:
                    continue
                token = match.group(1)
                if token[2:].isupper():
                    continue  # a placeholder: --OPT=VALUE
                if token not in all_options:
                    problems.append(f"{cli_md}:{number}: documents {token}, which no replaygate "
                                    f"command has")
                elif in_code and heading in owners and token not in owners[heading] \
                        and not any(w in command_words for w in words[:i]):
                    problems.append(f"{cli_md}:{number}: ## {heading}: `{span}` names {token}, "
                                    f"an option of another command: say whose "
                                    f"(`COMMAND {token}`)")
    for problem in dict.fromkeys(problems):  # one line per place, however often it is named
        print(f"cli_docs: {problem}", file=sys.stderr)
    checked = sum(len(options) for options, _ in commands.values())
    print(f"cli_docs: {len(commands)} commands, {checked} options, {len(pages)} man pages: "
          f"{len(set(problems))} disagreement(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
