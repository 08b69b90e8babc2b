"""Prints the line tables of a sample module's code objects, with the line
every instruction is at as the interpreter itself says it (co_lines()),
as JSON: what TestLineTablesMatchPython checks the decoders against.
Standard library only, any CPython 3.10 on."""
import json
import sys

SAMPLE = '''
import os


def plain(a, b):
    c = a + b
    return c * 2


def loops(items):
    total = 0
    for i in items:
        if i % 2:
            total += i
        else:
            total -= (i *
                      2)
    while total > 10:
        total //= 3
    return total


def tries(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return str(e)
    finally:
        os.getpid()


def far():
    x = 1
''' + "\n" * 300 + '''
    y = x + 2
''' + "\n" * 5000 + '''
    return x, y


def wide():
    return [''' + ", ".join("v%d" % i for i in range(400)) + ''']


class Outer:
    class Inner:
        def method(self):
            return [lambda q: q + k for k in range(3)]

    def gen(self):
        yield from (i * i for i in range(
            10))
'''


def lines(code):
    out = []
    for start, end, line in code.co_lines():
        out.append([start, end, line or 0])
    return out


def walk(code, out):
    out.append({"name": code.co_name, "first": code.co_firstlineno,
                "table": code.co_linetable.hex(), "lines": lines(code)})
    for const in code.co_consts:
        if hasattr(const, "co_lines"):
            walk(const, out)


def main():
    out = []
    walk(compile(SAMPLE, "sample.py", "exec"), out)
    json.dump({"version": list(sys.version_info[:2]), "codes": out}, sys.stdout)


main()
