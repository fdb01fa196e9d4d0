#!/usr/bin/env python3
"""Checks the Markdown files named on the command line (make check-docs):

- every relative link [text](path#anchor) resolves: the file (or folder) exists,
  and the anchor is a heading of the target (GitHub's slugs) or of the file itself;
- every repository path written as code (`user/agent/agent.c`, `bench/scale.sh -s 5`)
  names a file or folder of the tree, and a bare source file name (`fo_rules.c`)
  is some file's name.

Prints one line per fault (file:line: what) and exits 1 if there is any. Paths are
checked against the working tree, from the repository root (the current directory).
"""
import os
import re
import sys

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
TOP = ("bpf/", "include/", "user/", "tests/", "bench/", "scripts/", "docs/",
       "packaging/", "mk/", ".ci/")
SOURCE = re.compile(r"^[A-Za-z0-9_.@-]+\.(c|h|sh|py|js|mk)$")
# Placeholders and names that are not files of this tree.
SKIP = re.compile(r"[<>*$…{}|]|^build|\.\.\.|node_modules")


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def lines_outside_fences(path):
    fence = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = re.match(r"^\s*(```|~~~)", line)
            if m:
                fence = None if fence == m.group(1) else (fence or m.group(1))
                continue
            if fence is None:
                yield n, line.rstrip("\n")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, out = {}, set()
        for _, line in lines_outside_fences(path):
            m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            s = slug(m.group(2))
            if s in seen:
                seen[s] += 1
                s = "%s-%d" % (s, seen[s])
            else:
                seen[s] = 0
            out.add(s)
        _anchors[path] = out
    return _anchors[path]


def basenames():
    names = set()
    for root, dirs, files in os.walk("."):
        dirs[:] = [d for d in dirs if not d.startswith((".git", "build")) and d != "node_modules"]
        names.update(files)
    return names


def main(files):
    faults = []
    names = basenames()
    for doc in files:
        here = os.path.dirname(doc)
        for n, line in lines_outside_fences(doc):
            for target in LINK.findall(line):
                if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
                    continue
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(here, path)) if path else doc
                if not os.path.exists(dest):
                    faults.append("%s:%d: link to %s: no such file" % (doc, n, target))
                elif anchor:
                    if not dest.endswith(".md"):
                        faults.append("%s:%d: link to %s: an anchor into a file that is not Markdown" % (doc, n, target))
                    elif anchor not in anchors(dest):
                        faults.append("%s:%d: link to %s: no heading '%s' in %s" % (doc, n, target, anchor, dest))
            for code in CODE.findall(line):
                word = code.split()[0] if code.split() else ""
                word = word.rstrip(".,;:)")
                if SKIP.search(word):
                    continue
                if word.startswith(TOP):
                    if not os.path.exists(word):
                        faults.append("%s:%d: `%s`: no such file in the tree" % (doc, n, word))
                elif SOURCE.match(word) and word not in names:
                    faults.append("%s:%d: `%s`: no file of that name in the tree" % (doc, n, word))
    for f in faults:
        print(f)
    if faults:
        print("check-docs: %d broken reference(s)" % len(faults), file=sys.stderr)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
