#!/usr/bin/env python3
"""No function in server/ longer than the limit without a reason written beside it (issue 15).

  scripts/check-function-length.py [--limit 80] [DIR...]      (default: server)

Counts the lines of every function body (from its opening brace to its closing one) in the .cc and .h
files under DIR. A longer one passes only with a comment line "// long-function: <why>" within the few
lines above its opening brace. Exit 1 and one line per function when any is over.

A brace scanner, not a compiler: comments, strings and character literals are blanked first, then a
brace that opens at namespace or class level after a ")" (a signature, a constructor's initializer list,
qualifiers, a trailing return type) opens a function; everything inside it belongs to it (lambdas
included). Good enough for this codebase's style, which clang-format keeps regular.
"""
import argparse
import pathlib
import re
import sys

SCOPE = re.compile(r'^(template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern)\b', re.S)
SIGNATURE_END = re.compile(
    r'\)\s*(const|override|final|noexcept(\s*\([^)]*\))?|mutable|&&|&|\s)*(->\s*[^{;=]+)?$', re.S)
CTOR_INIT = re.compile(r'\)\s*:\s*\w[\s\S]*[)}]$')
REASON = re.compile(r'//\s*long-function:')


def blank(text):
    """Comments, string and char literals become spaces (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(')' + m.group(1) + '"', i) + len(m.group(1)) + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:end])); i = end
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)


def functions(text):
    """(first line, last line) of every function body."""
    code = blank(text)
    stack = []  # kinds: scope, func, init, other
    buf = []
    found = []
    line = 1
    for c in code:
        if c == '\n':
            line += 1
        in_func = any(k[0] == 'func' for k in stack)
        if c == '{':
            if in_func:
                stack.append(('other', line))
                continue
            b = re.sub(r'^\s*#.*$', '', ''.join(buf), flags=re.M).strip()
            b = re.sub(r'^(public|private|protected)\s*:', '', b).strip()
            if SCOPE.match(b) and '(' not in b.split('{')[0].split(':')[0]:
                kind = 'scope'
            elif b.endswith(('=', ',', '(', 'return')) or re.search(r'[\w>\]]$', b):
                kind = 'init'
            elif SIGNATURE_END.search(b) or CTOR_INIT.search(b):
                kind = 'func'
            else:
                kind = 'other'
            stack.append((kind, line))
            if kind != 'init':
                buf = []
            else:
                buf.append(c)
        elif c == '}':
            if not stack:
                continue
            kind, start = stack.pop()
            if kind == 'func':
                found.append((start, line))
            if not any(k[0] == 'func' for k in stack):
                if kind == 'init':
                    buf.append(c)
                else:
                    buf = []
        elif c == ';' and not in_func:
            if not stack or stack[-1][0] != 'init':
                buf = []
            else:
                buf.append(c)
        elif not in_func:
            buf.append(c)
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--limit', type=int, default=80)
    parser.add_argument('dirs', nargs='*', default=['server'])
    args = parser.parse_args()
    over = []
    for d in args.dirs:
        for path in sorted(pathlib.Path(d).rglob('*')):
            if path.suffix not in ('.cc', '.h'):
                continue
            text = path.read_text()
            lines = text.split('\n')
            for start, end in functions(text):
                length = end - start + 1
                if length <= args.limit:
                    continue
                above = lines[max(0, start - 8):start]
                if any(REASON.search(l) for l in above):
                    continue
                over.append(f'{path}:{start}: a function of {length} lines (limit {args.limit}); shorten it or '
                            f'write "// long-function: <why>" above it')
    for o in over:
        print(o)
    if over:
        return 1
    print(f'function length: nothing over {args.limit} lines without a reason')
    return 0


if __name__ == '__main__':
    sys.exit(main())
