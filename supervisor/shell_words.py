"""The files a shell script sources, found by reading it as the shell reads it: words,
quotes and operators, then commands.

A pattern over the text knew `.`/`source` after a few characters and a word quoted
whole; a red team (issue 26, item 5) sourced in forms it did not know: `builtin source
x`, `command . x`, a `case` arm's `*) . x ;;`, nvm's `\\. x`, `. ~/"work"/x`. So the
text is split into words and operators the way the shell's own tokenizer does
(quotes, backslashes, `$(...)`, backquotes, comments, here-documents), and `.` or
`source` is found where the shell runs a command word: at a line's start, after any
operator (`;`, `&`, `|`, `(`, `)`, `;;`...), after the reserved words that start a
command (`then`, `do`, `else`, `{`, `!`, `time`...), after a precommand (`builtin`,
`command`, `exec`, zsh's `noglob`), assignments and redirections.

Each word is kept as parts: what is literal, and what is not known until the shell runs
(a variable, a command substitution, a glob). What a variable holds is followed where
the files themselves say it (`NAME=...`, `export NAME=...`, a `for NAME in WORDS` list,
a `${NAME:-default}`'s default), else taken from lnk's own environment at launch (the
person's shell exported it), else unknown. `sourced.py`'s caller decides what an unknown
part means (the folder it cannot leave).

Reads text only; never runs anything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

UNKNOWN = "\0"  # stands for what only the running shell knows (a variable, a glob...)
MAX_CANDIDATES = 16  # the values one word may take, at most

_OPERATOR = re.compile(r";;&|;;|;&|&&|\|\||\|&|&>>|&>|<<<|<<-|<<|>>|>&|<&|<>|>\||[;&|()<>]")
_REDIRECTIONS = frozenset(("<", ">", ">>", "<<<", "&>", "&>>", ">&", "<&", "<>", ">|"))
_HEREDOCS = frozenset(("<<", "<<-"))
_BLANK = re.compile(r"(?:[ \t\r\f\v]|\\\n)+")
_PLAIN = re.compile(r"[^ \t\n\r\f\v;&|()<>'\"\\$`*?\[]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")

# Words after which the next word is again a command's first: reserved words and the
# precommands that run a builtin (bash(1) SHELL GRAMMAR, zsh's "Precommand Modifiers").
_PRECOMMANDS = frozenset(("time", "builtin", "command", "exec", "noglob", "nocorrect",
                          "-"))
_STARTS_COMMAND = frozenset(("then", "do", "else", "elif", "if", "while", "until", "{",
                             "!", *_PRECOMMANDS))
_DECLARES = frozenset(("export", "declare", "typeset", "local", "readonly"))
SOURCING = frozenset((".", "source"))


class Variable(NamedTuple):
    """`$NAME`, `${NAME}`; `default`: the word parts of `${NAME:-DEFAULT}`, or None."""

    name: str
    default: tuple[str | Variable, ...] | None = None


Part = str | Variable  # a literal string (UNKNOWN: what is not known), or a variable


class Word(NamedTuple):
    """A word as its parts."""

    parts: tuple[Part, ...]
    quoted: bool  # some part was quoted (a quoted `then` is no reserved word)

    def literal(self) -> str | None:
        """The word's text where it is all literal, else None."""
        text = [p for p in self.parts if isinstance(p, str) and p != UNKNOWN]
        return "".join(text) if len(text) == len(self.parts) else None


Token = Word | str  # a str is an operator, "\n" included


class _Scanner:
    """Splits shell text into Words and operators (bash(1) "QUOTING", "EXPANSION")."""

    def __init__(self, text: str, inner: Callable[[str], None]) -> None:
        self.text = text
        self.pos = 0
        self.inner = inner  # gets each command substitution's text, a script too
        self.heredocs: list[tuple[str, bool]] = []

    def tokens(self, *, closing: bool = False) -> Iterator[Token]:
        """Every token to the end, or (`closing`) to the `)` closing a `$(`."""
        text, depth = self.text, 0
        while self.pos < len(text):
            blank = _BLANK.match(text, self.pos)
            if blank:
                self.pos = blank.end()
                continue
            char = text[self.pos]
            if char == "\n":
                self.pos += 1
                self.skip_heredocs()
                yield "\n"
            elif char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                operator = _OPERATOR.match(text, self.pos)
                if operator:
                    self.pos = operator.end()
                    op = operator.group()
                    if closing and op == ")" and depth == 0:
                        return
                    depth += {"(": 1, ")": -1}.get(op, 0)
                    yield op
                    if op in _HEREDOCS:
                        self.heredoc(op == "<<-")
                else:
                    before = self.pos
                    yield self.word()
                    if self.pos == before:  # never stuck on a character no rule takes
                        self.pos += 1

    def heredoc(self, tabs: bool) -> None:
        blank = _BLANK.match(self.text, self.pos)
        if blank:
            self.pos = blank.end()
        if self.pos < len(self.text) and self.text[self.pos] not in "\n;&|()<>":
            delimiter = self.word()
            text = "".join(p if isinstance(p, str) else "" for p in delimiter.parts)
            self.heredocs.append((text, tabs))

    def skip_heredocs(self) -> None:
        """After the newline that ends a line with here-documents: their bodies."""
        for delimiter, tabs in self.heredocs:
            pattern = re.compile(r"^" + ("\t*" if tabs else "") + re.escape(delimiter) + "$",
                                 re.MULTILINE)
            end = pattern.search(self.text, self.pos)
            self.pos = len(self.text) if end is None else min(end.end() + 1, len(self.text))
        self.heredocs = []

    def word(self) -> Word:
        text, quoted = self.text, False
        parts: list[Part] = []
        while self.pos < len(text):
            char = text[self.pos]
            plain = _PLAIN.match(text, self.pos)
            if plain:
                parts.append(plain.group())
                self.pos = plain.end()
            elif char == "\\":
                if text[self.pos + 1:self.pos + 2] != "\n":
                    parts.append(text[self.pos + 1:self.pos + 2])
                    quoted = True
                self.pos += 2
            elif char == "'":
                end = text.find("'", self.pos + 1)
                end = len(text) if end < 0 else end
                parts.append(text[self.pos + 1:end])
                self.pos, quoted = end + 1, True
            elif char == '"':
                self.pos += 1
                parts += self.double_quoted()
                quoted = True
            elif char == "$":
                parts.append(self.dollar())
            elif char == "`":
                parts.append(self.backquote())
            elif char in "*?[":
                parts.append(UNKNOWN)
                self.pos += 1
            else:  # a blank or an operator ends the word
                break
        return Word(tuple(parts), quoted)

    def double_quoted(self) -> list[Part]:
        text = self.text
        parts: list[Part] = []
        while self.pos < len(text):
            char = text[self.pos]
            plain = _DQ_PLAIN.match(text, self.pos)
            if plain:
                parts.append(plain.group())
                self.pos = plain.end()
            elif char == "\\":
                after = text[self.pos + 1:self.pos + 2]
                if after in ('"', "\\", "$", "`"):
                    parts.append(after)
                elif after != "\n":
                    parts.append("\\" + after)
                self.pos += 2
            elif char == "$":
                parts.append(self.dollar())
            elif char == "`":
                parts.append(self.backquote())
            else:  # the closing quote
                self.pos += 1
                break
        return parts

    def dollar(self) -> Part:
        text, start = self.text, self.pos + 1
        after = text[start:start + 1]
        if text.startswith("((", start):
            self.pos = self.balanced(start + 2, "(", ")", 2)
            return UNKNOWN
        if after == "(":
            self.pos = start + 1
            inner = _Scanner(text, self.inner)
            inner.pos = self.pos
            for _ in inner.tokens(closing=True):
                pass
            self.inner(text[self.pos:inner.pos])
            self.pos = inner.pos
            return UNKNOWN
        if after == "{":
            end = self.balanced(start + 1, "{", "}", 1)
            self.pos = end
            return _braced(text[start + 1:end - 1], self.inner)
        if after == "'":  # $'...': ANSI-C quoting, its escapes not followed
            end = text.find("'", start + 1)
            self.pos = len(text) if end < 0 else end + 1
            return UNKNOWN
        name = _NAME.match(text, start)
        if name:
            self.pos = name.end()
            return Variable(name.group())
        if after and after in "0123456789@*#?$!-":
            self.pos = start + 1
            return UNKNOWN
        self.pos = start
        return "$"

    def backquote(self) -> Part:
        end = self.pos + 1
        while end < len(self.text) and self.text[end] != "`":
            end += 2 if self.text[end] == "\\" else 1
        self.inner(self.text[self.pos + 1:end])
        self.pos = end + 1
        return UNKNOWN

    def balanced(self, pos: int, opening: str, closing: str, depth: int) -> int:
        """The position after the `closing` that brings `depth` to 0 (quotes skipped)."""
        text = self.text
        while pos < len(text) and depth:
            char = text[pos]
            if char == "\\":
                pos += 1
            elif char == "'" and opening == "{":
                end = text.find("'", pos + 1)
                pos = len(text) if end < 0 else end
            elif char == opening:
                depth += 1
            elif char == closing:
                depth -= 1
            pos += 1
        return pos


def _braced(inside: str, inner: Callable[[str], None]) -> Part:
    """`${...}`: a variable, with the default its `:-`, `-`, `:=` or `=` gives."""
    name = _NAME.match(inside)
    if not name:
        return UNKNOWN  # ${#x}, ${!x}, ${1}...
    rest = inside[name.end():]
    if not rest:
        return Variable(name.group())
    operator = re.match(r":?[-=]", rest)
    if operator:
        scanner = _Scanner(rest[operator.end():], inner)
        return Variable(name.group(), scanner.word().parts)
    return UNKNOWN  # ${x%/*}, ${x/a/b}, ${x:+...}: what it makes is not followed


class Script(NamedTuple):
    """What a script sources (each `.` or `source` command's word), what it assigns
    (NAME, value) and its `for` lists (NAME, words), in the order they come."""

    sourced: list[Word]
    assigned: list[tuple[str, Word]]
    loops: list[tuple[str, list[Word]]]


def commands(text: str) -> Script:
    """Read `text` as the shell would (its command substitutions' scripts too)."""
    inner: list[str] = []
    sourced: list[Word] = []
    assigned: list[tuple[str, Word]] = []
    loops: list[tuple[str, list[Word]]] = []
    scripts = [text]
    while scripts and len(scripts) < 1000:
        script = scripts.pop(0)
        scanner = _Scanner(script, inner.append)
        _parse(list(scanner.tokens()), sourced, assigned, loops)
        scripts += inner
        inner.clear()
    return Script(sourced, assigned, loops)


def _parse(tokens: list[Token], sourced: list[Word],
           assigned: list[tuple[str, Word]], loops: list[tuple[str, list[Word]]]) -> None:
    start = True  # the next word is a command's first
    options = False  # after a precommand: its options (`command -p`) come first
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if isinstance(token, str):
            if token in _REDIRECTIONS or token in _HEREDOCS:
                if _word_at(tokens, index):
                    index += 1  # the redirection's target: the command goes on
                continue
            start, options = True, False
            continue
        if not start:
            continue
        literal = token.literal()
        assignment = _ASSIGNMENT.match(literal or _head(token))
        if assignment:
            assigned.append((assignment.group(1), _after(token, assignment.end())))
            continue
        if literal is not None and options and literal.startswith("-"):
            continue
        if literal is not None and not (token.quoted and literal in _STARTS_COMMAND):
            if literal in _STARTS_COMMAND:
                options = literal in _PRECOMMANDS
                continue
            if literal.isdigit() and index < len(tokens) and tokens[index] in _REDIRECTIONS:
                continue
            if literal in SOURCING:
                argument = _word_at(tokens, index)
                if argument and argument.literal() == "--":
                    argument = _word_at(tokens, index + 1)
                if argument:
                    sourced.append(argument)
            elif literal in _DECLARES:
                while word := _word_at(tokens, index):
                    assignment = _ASSIGNMENT.match(_head(word))
                    if assignment:
                        assigned.append((assignment.group(1),
                                         _after(word, assignment.end())))
                    index += 1
            elif literal == "for":
                index = _loop(tokens, index, loops)
        start = options = False


def _word_at(tokens: list[Token], index: int) -> Word | None:
    """The word at `index`, or None (an operator, or the end)."""
    token = tokens[index] if index < len(tokens) else None
    return token if isinstance(token, Word) else None


def _head(word: Word) -> str:
    """The literal text a word starts with."""
    head = []
    for part in word.parts:
        if not isinstance(part, str) or part == UNKNOWN:
            break
        head.append(part)
    return "".join(head)


def _after(word: Word, length: int) -> Word:
    """The word without its first `length` literal characters (an assignment's value)."""
    parts: list[Part] = []
    for part in word.parts:
        if length and isinstance(part, str) and part != UNKNOWN:
            cut = min(length, len(part))
            length -= cut
            if part[cut:]:
                parts.append(part[cut:])
        else:
            parts.append(part)
    return Word(tuple(parts), word.quoted)


def _loop(tokens: list[Token], index: int, loops: list[tuple[str, list[Word]]]) -> int:
    """`for NAME in WORDS` (and zsh's `for NAME (WORDS)`): the values NAME takes."""
    variable = _word_at(tokens, index)
    name = variable.literal() if variable else None
    if name is None or not _NAME.fullmatch(name):
        return index
    index += 1
    after = _word_at(tokens, index)
    if (index < len(tokens) and tokens[index] == "(") or (after and after.literal() == "in"):
        index += 1
    words: list[Word] = []
    while word := _word_at(tokens, index):
        words.append(word)
        index += 1
    loops.append((name, words))
    return index


def values(parts: tuple[Part, ...], variables: dict[str, list[str]],
           environ: dict[str, str] | os._Environ[str], home: str) -> list[str]:
    """The strings a word may make, UNKNOWN standing for what is not known: a variable
    takes what the files assigned it, else the environment's value, and its default."""
    made = [""]
    for part in parts:
        if isinstance(part, str):
            options = [part]
        else:
            name = part.name
            options = [home] if name == "HOME" else list(variables.get(name, ()))
            if not options and environ.get(name):
                options = [environ[name]]
            if part.default is not None:
                options += values(part.default, variables, environ, home)
            options = options or [UNKNOWN]
        made = list(dict.fromkeys(m + o for m in made for o in options))[:MAX_CANDIDATES]
    return [home + m[1:] if m == "~" or m.startswith("~/") else m for m in made]
