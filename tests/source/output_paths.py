#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Guards for issue 32: every untrusted string reaches a script, a snippet or a terminal through one
escaping function.

1. Terminals. In src/, checks/ and include/, nothing writes to standard output or standard error
   but src/core/io.cpp (halo::write_stdout, write_stdout_text, write_stderr_text: the last two make
   text terminal-safe) and the child-process plumbing that redirects a child's descriptors: no
   std::cout, std::cerr, std::clog, printf/fprintf/puts/fputs/fwrite to stdout or stderr,
   fmt::print, or write(STDOUT_FILENO/STDERR_FILENO, ...). The log goes through spdlog, whose one
   sink (src/cli/main.cpp) writes with write_stderr_text.
2. Fix scripts and Nix snippets. src/fix/script.cpp and src/fix/nix.cpp build their text only
   with the writers of src/fix/writer.hpp (code from string literals, comments made one line,
   values quoted or escaped): no output stream, no `<<`, no fmt::format_to/print, and the renderers
   return nothing but the writer's text (`return s.str();`).

Usage: output_paths.py SOURCE_DIR. Exit 0 when clean, 1 with file:line: finding per finding.
"""
import pathlib
import re
import sys

TERMINAL = re.compile(
    r"std::(cout|cerr|clog)\b|\bfmt::print\s*\(|\b(printf|puts|putchar)\s*\(|"
    r"\bf(printf|puts|write)\s*\([^;]*\b(stdout|stderr)\b|"
    r"\bwrite\s*\(\s*(STDOUT_FILENO|STDERR_FILENO|1|2)\s*,")
# (path, why it may touch the descriptors)
ALLOWED_TERMINAL = {
    "src/core/io.cpp": "the one writer of stdout and stderr (write_stdout, *_text)",
}
FIX_FORBIDDEN = re.compile(
    r"std::(o|)stringstream|std::ostream|<<|fmt::format_to|fmt::print|\.append\(")
RENDERERS = ["src/fix/script.cpp", "src/fix/nix.cpp"]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def strip_strings(text):
    text = re.sub(r'R"([^(]*)\((.*?)\)\1"', lambda m: '""' + "\n" * m.group(0).count("\n"), text,
                  flags=re.S)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def main():
    src = pathlib.Path(sys.argv[1])
    findings = []
    for top in ("src", "checks", "include"):
        for f in sorted((src / top).rglob("*")):
            if f.suffix not in (".cpp", ".hpp", ".h"):
                continue
            rel = f.relative_to(src).as_posix()
            if rel in ALLOWED_TERMINAL:
                continue
            code = strip_strings(strip_comments(f.read_text(errors="replace")))
            for n, line in enumerate(code.split("\n"), 1):
                if TERMINAL.search(line):
                    findings.append(f"{rel}:{n}: writes to a terminal without the sanitiser: "
                                    f"{line.strip()}")
    for rel in RENDERERS:
        code = strip_strings(strip_comments((src / rel).read_text()))
        for n, line in enumerate(code.split("\n"), 1):
            if FIX_FORBIDDEN.search(line):
                findings.append(f"{rel}:{n}: builds script text outside the writers: {line.strip()}")
        # Every `return` inside render_script / render_nix returns the writer's text.
        for name in ("render_script", "render_nix"):
            start = code.find(f"std::string {name}(")
            if start < 0:
                continue
            body = code[start:]
            depth, end = 0, None
            for i, c in enumerate(body):
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        end = i
                        break
            for m in re.finditer(r"\breturn\s+([^;]*);", body[:end]):
                if m.group(1).strip() != "s.str()":
                    findings.append(f"{rel}: {name} returns '{m.group(1).strip()}', not the "
                                    "writer's text")
    # The allowed list stays true.
    for rel in ALLOWED_TERMINAL:
        if not (src / rel).exists():
            findings.append(f"{rel}: listed as allowed but missing")
    for f in findings:
        print(f)
    print(f"{len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
