"""The CLI's commands that need more than a few lines (cli.py holds the parser and the rest).

A surface: these and cli.py are the only modules that print or exit. Each takes the parsed
arguments, calls the library (the rest of `generator`, which takes data and returns data), and
prints (tests/test_layering.py checks it).
"""
