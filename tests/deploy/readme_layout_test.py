#!/usr/bin/env python3
"""The README's Layout block matches the tree (issue 42).

  usage: readme_layout_test.py SOURCE_DIR

Reads the fenced block of README.md's "## Layout" section. Each line of it that starts in the first
column names a path of the repository (relative to SOURCE_DIR; a trailing "/" says it is a folder, a
"*" is a glob, as in "server/service/region_socket_*"); indented lines go on with the line above.
Fails (exit 1, a line for each problem) when
  - a top-level folder that git tracks (the first component of `git ls-files`, dot-folders left out)
    has no line of its own in the block;
  - a line names a path that does not exist, a file where it says folder, or a path outside the
    repository (absolute, or through "..");
  - the Layout section points outside the repository anywhere ("../").
Without git, or outside a git checkout, it skips (exit 77), except in CI (CI set), where that fails.
Python's standard library only.
"""
import glob
import os
import re
import subprocess
import sys

SKIP = 77


def fail_or_skip(message):
    ci = os.environ.get('CI', '')
    if ci and ci not in ('false', '0'):
        print(f'FAIL: {message} (CI must not skip this check)', file=sys.stderr)
        sys.exit(1)
    print(f'SKIP: {message}')
    sys.exit(SKIP)


def layout_section(readme_text):
    """The text of the "## Layout" section, up to the next heading of level 1 or 2; None without one."""
    match = re.search(r'^## Layout[ \t]*\n(.*?)(?=^#{1,2} |\Z)', readme_text, re.M | re.S)
    return match.group(1) if match else None


def layout_entries(section):
    """(line number within the block, path) for each line of the section's first fenced block that
    starts in the first column; None when the section has no fenced block."""
    match = re.search(r'^```[^\n]*\n(.*?)^```', section, re.M | re.S)
    if not match:
        return None
    entries = []
    for number, line in enumerate(match.group(1).split('\n'), 1):
        if line and not line[0].isspace():
            entries.append((number, line.split()[0]))
    return entries


def tracked_top_folders(source_dir):
    try:
        listed = subprocess.run(['git', '-C', source_dir, 'ls-files', '-z'], capture_output=True,
                                check=True).stdout.decode('utf-8', 'surrogateescape')
    except (OSError, subprocess.CalledProcessError) as error:
        fail_or_skip(f'cannot list the files git tracks in {source_dir}: {error}')
    folders = set()
    for path in listed.split('\0'):
        if '/' in path:
            top = path.split('/', 1)[0]
            if not top.startswith('.'):
                folders.add(top)
    if not folders:
        fail_or_skip(f'git tracks no folder in {source_dir}')
    return folders


def check_entry(source_dir, path):
    """A problem with one entry's path, or None."""
    if os.path.isabs(path) or '..' in path.split('/'):
        return f'"{path}" is outside the repository'
    root = os.path.realpath(source_dir)
    pattern = os.path.join(root, path.rstrip('/'))
    matches = glob.glob(pattern) if glob.has_magic(path) else [pattern] if os.path.lexists(pattern) else []
    if not matches:
        return f'"{path}" does not exist in {source_dir}'
    for found in matches:
        real = os.path.realpath(found)
        if real != root and not real.startswith(root + os.sep):
            return f'"{path}" leads outside the repository ({real})'
        if path.endswith('/') and not os.path.isdir(found):
            return f'"{path}" is not a folder'
    return None


def main(argv):
    if len(argv) != 2:
        print('usage: readme_layout_test.py SOURCE_DIR', file=sys.stderr)
        return 2
    source_dir = argv[1]
    readme = os.path.join(source_dir, 'README.md')
    try:
        with open(readme, encoding='utf-8') as f:
            text = f.read()
    except OSError as error:
        print(f'FAIL: cannot read {readme}: {error}', file=sys.stderr)
        return 1
    section = layout_section(text)
    if section is None:
        print(f'FAIL: {readme} has no "## Layout" section', file=sys.stderr)
        return 1
    entries = layout_entries(section)
    if not entries:
        print(f'FAIL: the Layout section of {readme} has no fenced block of paths', file=sys.stderr)
        return 1

    problems = []
    for number, path in entries:
        problem = check_entry(source_dir, path)
        if problem:
            problems.append(f'Layout block line {number}: {problem}')
    if '../' in section:
        problems.append('the Layout section points outside the repository ("../")')
    named = {path.rstrip('/') for _, path in entries}
    for folder in sorted(tracked_top_folders(source_dir) - named):
        problems.append(f'top-level folder "{folder}/" (tracked by git) is missing from the Layout block')

    if problems:
        for problem in problems:
            print(f'FAIL: {problem}', file=sys.stderr)
        return 1
    print(f'OK: the Layout block names {len(entries)} paths, every one in the tree, and every '
          f'top-level folder git tracks')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
