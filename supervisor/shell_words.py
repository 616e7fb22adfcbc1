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

import fnmatch
import functools
import os
import re
from collections.abc import Callable, Iterator
from typing import NamedTuple

UNKNOWN = "\0"  # stands for what only the running shell knows (a variable, a glob...)
ARGUMENT = "\1"  # a positional parameter (`$1`, `"$@"`): what the caller gives
BESIDE = "\2"  # the sourcing file's own folder (`$(dirname "$0")`, `${BASH_SOURCE%/*}`)
NOT_KNOWN = (UNKNOWN, ARGUMENT, BESIDE)
MAX_CANDIDATES = 16  # the values one word may take, at most (more: one UNKNOWN more)
MAX_SCRIPTS = 4000  # scripts read in one file: its own, each substitution's, each string's

_OPERATOR = re.compile(r";;&|;;|;&|&&|\|\||\|&|&>>|&>|<<<|<<-|<<|>>|>&|<&|<>|>\||[;&|()<>]")
_REDIRECTIONS = frozenset(("<", ">", ">>", "<<<", "&>", "&>>", ">&", "<&", "<>", ">|"))
_HEREDOCS = frozenset(("<<", "<<-"))
_BLANK = re.compile(r"(?:[ \t\r\f\v]|\\\n)+")
_PLAIN = re.compile(r"[^ \t\n\r\f\v;&|()<>'\"\\$`*?\[]+")
_DQ_PLAIN = re.compile(r'[^"\\$`]+')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\+?=")
# A substitution that makes the sourcing file's own folder: `$(dirname "$0")`,
# `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)`, zsh's `${0:A:h}` forms aside.
_BESIDE = re.compile(r"^\s*(cd\s+[^;&|]*)?\bdirname\b[^;&|]*(\$\{?0\b|BASH_SOURCE|%[xN])")

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
    trim: tuple[str, str] | None = None  # `${NAME%PATTERN}`'s ("%", PATTERN), `#`, `%%`, `##`
    alternative: bool = False  # `${NAME:+WORD}`: WORD (the default's place), or nothing
    among: tuple[tuple[str | Variable, ...], ...] = ()  # `$(find A B ...)`: below A or B


Part = str | Variable  # a literal string (UNKNOWN: what is not known), or a variable


class Word(NamedTuple):
    """A word as its parts."""

    parts: tuple[Part, ...]
    quoted: bool  # some part was quoted (a quoted `then` is no reserved word)
    line: int = 0  # the line of the file it is on (a string's: the string's line)
    demand: bool = False  # in an alias's text: runs when the person types its name
    string: bool = False  # in a string read as a script (which may be only text)

    def literal(self) -> str | None:
        """The word's text where it is all literal, else None."""
        text = [p for p in self.parts if isinstance(p, str) and p not in NOT_KNOWN]
        return "".join(text) if len(text) == len(self.parts) else None


def first_unknown(value: str) -> int:
    """Where the first part only the running shell knows is in `value`, or -1."""
    found = [i for i in (value.find(c) for c in NOT_KNOWN) if i >= 0]
    return min(found) if found else -1


def render(parts: tuple[Part, ...]) -> str:
    """A word's parts as shell text again: what `eval` (or a trap, an alias, a prompt)
    reads when it runs the word's value as a script."""
    text = []
    for part in parts:
        if isinstance(part, str):
            text.append(part)
        elif part.default is not None:
            text.append("${" + part.name + (":+" if part.alternative else ":-") +
                        render(part.default) + "}")
        else:
            text.append("${" + part.name + "}")
    return "".join(text)


Token = Word | str  # a str is an operator, "\n" included


class _Scanner:
    """Splits shell text into Words and operators (bash(1) "QUOTING", "EXPANSION")."""

    def __init__(self, text: str, inner: Callable[[str, int], None], *, line: int = 1,
                 demand: bool = False, string: bool = False) -> None:
        self.text = text
        self.pos = 0
        self.inner = inner  # gets each substitution's and here-document's text, and line
        self.heredocs: list[tuple[str, bool]] = []
        self.line = line  # the line the text starts on
        self.demand, self.string = demand, string
        self.counted = (0, line)  # (a position, its line): lines are counted on from it

    def line_at(self, pos: int) -> int:
        at, line = self.counted if pos >= self.counted[0] else (0, self.line)
        line += self.text.count("\n", at, pos)
        self.counted = (pos, line)
        return line

    def nested(self) -> _Scanner:
        """A scanner of the same text (a `$(...)`'s), at the same place."""
        scanner = _Scanner(self.text, self.inner, line=self.line, demand=self.demand,
                           string=self.string)
        scanner.counted = self.counted
        scanner.pos = self.pos
        return scanner

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
            # `. /dev/stdin <<EOF` runs the body: it is read as a script too
            body = self.text[self.pos:len(self.text) if end is None else end.start()]
            self.inner(body, self.line_at(self.pos))
            self.pos = len(self.text) if end is None else min(end.end() + 1, len(self.text))
        self.heredocs = []

    def word(self) -> Word:
        text, quoted, start = self.text, False, self.pos
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
            elif char == "(" and self.pos > start and text[self.pos - 1] in "@?*+!" and (
                    text[self.pos - 1] != "!" or self.pos - 1 > start):
                # bash's extglob patterns, @(a|b) ?(..) *(..) +(..) !(..) inside a word:
                # a pattern (red team 3: `. ~/work/@(team)/x.sh` was cut at the `(`)
                self.pos = self.balanced(self.pos + 1, "(", ")", 1)
                parts.append(UNKNOWN)
            else:  # a blank or an operator ends the word
                break
        return Word(tuple(parts), quoted, self.line_at(start), self.demand, self.string)

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
            inner = self.nested()
            for _ in inner.tokens(closing=True):
                pass
            script = text[self.pos:inner.pos]
            self.inner(script, self.line_at(self.pos))
            self.pos = inner.pos
            return BESIDE if _BESIDE.search(script) else _listing(script)
        if after == "{":
            end = self.balanced(start + 1, "{", "}", 1)
            self.pos = end
            return _braced(text[start + 1:end - 1], lambda t: self.inner(
                t, self.line_at(start)))
        if after == "'":  # $'...': ANSI-C quoting, its escapes not followed
            end = text.find("'", start + 1)
            self.pos = len(text) if end < 0 else end + 1
            return UNKNOWN
        name = _NAME.match(text, start)
        if name:
            self.pos = name.end()
            return Variable(name.group())
        if after and after in "0123456789@*":
            self.pos = start + 1
            return ARGUMENT
        if after and after in "#?$!-":
            self.pos = start + 1
            return UNKNOWN
        self.pos = start
        return "$"

    def backquote(self) -> Part:
        end = self.pos + 1
        while end < len(self.text) and self.text[end] != "`":
            end += 2 if self.text[end] == "\\" else 1
        script = self.text[self.pos + 1:end]
        self.inner(script, self.line_at(self.pos))
        self.pos = end + 1
        return BESIDE if _BESIDE.search(script) else UNKNOWN

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


def _listing(script: str) -> Part:
    """`$(find A B -type f ...)`, `$(ls A)`: what they print lies below the folders they
    are given (sdkman-init.sh sources `$(find "${SDKMAN_DIR}/src" ...)`): those folders,
    each followed by what is not known; anything else is not known."""
    found = re.match(r"\s*(?:command\s+)?(find|ls)\s", script)
    if found is None:
        return UNKNOWN
    tokens = list(_Scanner(script[found.end():], lambda t, n: None).tokens())
    folders: list[tuple[Part, ...]] = []
    for token in tokens:
        if isinstance(token, str):
            if token != "\n":  # a pipe or a list after it: what it prints is not known
                return UNKNOWN
            break
        head = token.literal()
        if head is not None and head.startswith(("-", "(", "!")):
            if found.group(1) == "find":
                break  # find's expression: its start points are before it
            continue
        folders.append(token.parts)
    return Variable("", among=tuple(folders)) if folders else UNKNOWN


def _braced(inside: str, inner: Callable[[str], None]) -> Part:
    """`${...}`: a variable (an array's element: any of the array's values), with the
    default its `:-`, `-`, `:=` or `=` gives, or the pattern its `%`, `%%`, `#` or `##`
    trims (the shell's own pattern matching, done on each value it may hold)."""
    if re.match(r"(BASH_SOURCE|0)\b.*%", inside) or re.search(
            r"^(0|\$\{\(%\):-%[xN]\}):[aA]:h$", inside):
        return BESIDE  # ${BASH_SOURCE%/*}, ${0%/*}, zsh's ${0:a:h}: the file's own folder
    if re.match(r"[0-9@*]+(\[|$)", inside):
        return ARGUMENT  # ${1}, ${@}
    name = _NAME.match(inside)
    if not name:
        return UNKNOWN  # ${#x}, ${!x}...
    rest = inside[name.end():]
    subscript = re.match(r"\[[^]]*\]", rest)  # ${a[0]}, ${a[@]}: one of a's values
    if subscript:
        rest = rest[subscript.end():]
    if not rest:
        return Variable(name.group())
    operator = re.match(r":?[-=+]", rest)
    if operator:
        scanner = _Scanner(rest[operator.end():], lambda t, _: inner(t))
        return Variable(name.group(), scanner.word().parts,
                        alternative=operator.group().endswith("+"))
    trim = re.match(r"(%%|%|##|#)(.*)", rest, re.DOTALL)
    if trim and not any(c in trim.group(2) for c in "$`\"'"):
        return Variable(name.group(), trim=(trim.group(1), trim.group(2)))
    return UNKNOWN  # ${x/a/b}, ${x:+...}, a quoted pattern: what it makes is not followed


class Script(NamedTuple):
    """What a script sources (each `.` or `source` command's word), what it assigns
    (NAME, value: an array's each element) and its `for` lists (NAME, words), in the
    order they come; `words`: every word anywhere, each string's too (what may name a
    path); `run`: each command's first word (what the shell runs, by its name);
    `cut`: whether a bound stopped the reading (MAX_SCRIPTS)."""

    sourced: list[Word]
    assigned: list[tuple[str, Word]]
    loops: list[tuple[str, list[Word]]]
    words: list[Word]
    run: list[Word]
    cut: bool
    functions: dict[str, set[int]]  # each function's name: the ids of its words
    demanded: set[int]  # filled by commands(): see on_demand
    cds: list[Word]  # each `cd` or `pushd`'s folder: where a relative name may be found

    def on_demand(self, word: Word) -> bool:
        """Whether `word` runs only when the person types a command, in the folder they
        chose: an alias's text, or the body of a function that the file's own commands
        (outside every function, and in the functions those call) never call."""
        return word.demand or id(word) in self.demanded


def commands(text: str) -> Script:
    """Read `text` as the shell would: its command substitutions' and here-documents'
    scripts too, and the value of every quoted word (and what follows its first `=`)
    as a script of its own, since a string may be run as one later: eval's, a trap's,
    an alias's, PROMPT_COMMAND's, `bind -x`'s, `complete -C`'s, a function's caller's.
    Reading a string that is only text finds more, never less (fail closed)."""
    script = Script([], [], [], [], [], False, {}, set(), [])
    scripts: list[tuple[str, int, bool, bool]] = [(text, 1, False, False)]
    done = 0
    while scripts:
        if done >= MAX_SCRIPTS:
            script = script._replace(cut=True)
            break
        body, line, demand, string = scripts.pop(0)
        done += 1
        found: list[tuple[str, int]] = []
        scanner = _Scanner(body, functools.partial(_collect, found), line=line,
                           demand=demand, string=string)
        tokens = list(scanner.tokens())
        aliases = _parse(tokens, script)
        scripts += [(t, n, demand, string) for t, n in found]
        for word in (t for t in tokens if isinstance(t, Word) and t.quoted):
            rendered = render(word.parts)
            on_demand = demand or id(word) in aliases
            if _SCRIPT_LIKE.search(rendered) and _NAMES_PATH.search(rendered):
                scripts.append((rendered, word.line, on_demand, True))
            if "=" in rendered:
                scripts.append((rendered.partition("=")[2], word.line, on_demand, True))
    _demanded(script)
    return script


def _collect(found: list[tuple[str, int]], text: str, line: int) -> None:
    found.append((text, line))


def _demanded(script: Script) -> None:
    """Mark the words of each function the file's own commands never call."""
    owners: dict[int, list[str]] = {}
    for name, ids in script.functions.items():
        for i in ids:
            owners.setdefault(i, []).append(name)
    calls: dict[str, set[str]] = {}
    called: set[str] = set()
    for word in script.run:
        command = word.literal()
        if command is None or word.demand:
            continue
        for owner in owners.get(id(word), ()):
            calls.setdefault(owner, set()).add(command)
        if id(word) not in owners:
            called.add(command)
    pending = [name for name in script.functions if name in called]
    while pending:
        for name in calls.get(pending.pop(), ()):
            if name in script.functions and name not in called:
                called.add(name)
                pending.append(name)
    for name, ids in script.functions.items():
        if name not in called:
            script.demanded.update(ids)


_SCRIPT_LIKE = re.compile(r"[\s;&|()<>'\"\\]")
_NAMES_PATH = re.compile(r"[/~$`]")  # what may name a path (or make one, run later)


def _parse(tokens: list[Token], script: Script) -> set[int]:
    """Add what `tokens` source, assign, loop over, name and run to `script`; the ids
    of the words that are an alias's definition (their text runs when typed)."""
    sourced, assigned, loops = script.sourced, script.assigned, script.loops
    aliases: set[int] = set()
    bodies: list[tuple[str, int]] = []  # the functions being defined: (name, brace depth)
    braces = 0
    cases, patterns = 0, False  # open `case`s; whether the next words are its patterns
    start = True  # the next word is a command's first
    options = False  # after a precommand: its options (`command -p`) come first
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if isinstance(token, str):
            if token in _REDIRECTIONS or token in _HEREDOCS:
                if target := _word_at(tokens, index):
                    script.words.append(target)
                    index += 1  # the redirection's target: the command goes on
                continue
            if patterns and token in ("|", "(", "\n"):
                continue
            patterns = (patterns and token != ")") or (cases > 0 and token in (
                ";;", ";&", ";;&"))
            start, options = True, False
            continue
        script.words.append(token)
        for name, _ in bodies:
            script.functions.setdefault(name, set()).add(id(token))
        literal = token.literal()
        if patterns or (literal == "esac" and cases and not token.quoted):
            if literal == "esac" and not token.quoted:
                cases, patterns, start = cases - 1, False, False
            continue  # a `case` arm's pattern: no command
        if not start:
            continue
        if literal == "case" and not token.quoted:
            while (word := _word_at(tokens, index)) and word.literal() != "in":
                script.words.append(word)
                index += 1
            cases, patterns, start = cases + 1, True, False
            index += 1
            continue
        if literal in ("{", "}") and not token.quoted:
            braces += 1 if literal == "{" else -1
            while bodies and bodies[-1][1] > braces:
                bodies.pop()
            if literal == "}":
                continue
        defined = _defines(tokens, index - 1)
        if defined is not None:  # its name here defines it: no call
            bodies.append((defined, braces + 1))
            start = options = False
            continue
        assignment = _ASSIGNMENT.match(literal or _head(token))
        if assignment:
            value = _after(token, assignment.end())
            if not value.parts and index < len(tokens) and tokens[index] == "(":
                index += 1  # NAME=(WORDS): an array, each of its words a value
                while element := _word_at(tokens, index):
                    script.words.append(element)
                    assigned.append((assignment.group(1), element))
                    index += 1
                continue
            assigned.append((assignment.group(1), value))
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
                    script.words.append(word)
                    assignment = _ASSIGNMENT.match(_head(word))
                    if assignment:
                        assigned.append((assignment.group(1),
                                         _after(word, assignment.end())))
                    index += 1
            elif literal == "for":
                index = _loop(tokens, index, loops)
                script.words.extend(w for _, ws in loops[-1:] for w in ws)
            elif literal in ("cd", "pushd"):
                while (word := _word_at(tokens, index)) and (word.literal() or "").startswith(
                        "-"):
                    index += 1
                if word:
                    script.cds.append(word)
                script.run.append(token)
            elif literal == "alias":
                while word := _word_at(tokens, index):
                    aliases.add(id(word))
                    script.words.append(word)
                    index += 1
            else:
                script.run.append(token)
        else:
            script.run.append(token)
        start = options = False
    return aliases


def _defines(tokens: list[Token], index: int) -> str | None:
    """The function `NAME() {` or `function NAME {` at `index` defines, or None."""
    word = _word_at(tokens, index)
    name = word.literal() if word else None
    if name == "function":
        after = _word_at(tokens, index + 1)
        name, index = (after.literal() if after else None), index + 2
        if index < len(tokens) and tokens[index:index + 2] == ["(", ")"]:
            index += 2
    elif name and tokens[index + 1:index + 3] == ["(", ")"]:
        index += 3
    else:
        return None
    while index < len(tokens) and tokens[index] == "\n":
        index += 1
    body = _word_at(tokens, index)  # only a body in braces: its end is found
    return name if body and body.literal() == "{" and not body.quoted else None


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
    return word._replace(parts=tuple(parts))


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
    takes what the files assigned it, else the environment's value, and its default,
    trimmed as its pattern says. `~` and `~/` are home; `~+` and `~-` the folder the
    shell is in (`./`). More than MAX_CANDIDATES: one more that is UNKNOWN whole."""
    made = [""]
    for part in parts:
        if isinstance(part, str):
            options = _braces(part)
        else:
            name = part.name
            options = [home] if name == "HOME" else ["."] if name in (
                "PWD", "OLDPWD") else list(variables.get(name, ()))
            if not options and environ.get(name):
                options = [environ[name]]
            if part.trim is not None:
                options = [_trimmed(o, *part.trim) for o in options]
            if part.among:
                options = [v.rstrip("/") + "/" + UNKNOWN for w in part.among
                           for v in values(w, variables, environ, home)]
            elif part.alternative and part.default is not None:
                options = ["", *values(part.default, variables, environ, home)]
            elif part.default is not None:
                options += values(part.default, variables, environ, home)
            options = options or [UNKNOWN]
        made = list(dict.fromkeys(m + o for m in made for o in options))
        if len(made) > MAX_CANDIDATES:
            made = [*made[:MAX_CANDIDATES], UNKNOWN]
    return [_tilde(m, home) for m in made]


def _braces(text: str) -> list[str]:
    """Brace expansion (`~/.{path,exports}` → `~/.path`, `~/.exports`), innermost first;
    a quoted brace is expanded too: finding more only holds more."""
    made, done = [text], list[str]()
    while made and len(done) + len(made) <= MAX_CANDIDATES * 4:
        value = made.pop(0)
        match = _BRACE.search(value)
        if match is None:
            done.append(value)
            continue
        made += [value[:match.start()] + choice + value[match.end():]
                 for choice in match.group(1).split(",")]
    return done + [UNKNOWN] * bool(made)


_BRACE = re.compile(r"\{([^{}]*,[^{}]*)\}")


def _tilde(value: str, home: str) -> str:
    if value == "~" or value.startswith("~/"):
        return home + value[1:]
    if value in ("~+", "~-") or value.startswith(("~+/", "~-/")):
        return "." + value[2:]  # $PWD, $OLDPWD: where the shell is (or was)
    return value


def _trimmed(value: str, operator: str, pattern: str) -> str:
    """`${NAME%PATTERN}` (and `%%`, `#`, `##`) of a value, as the shell matches; a value
    with a part not known stays not known from there (its start kept where `%` trims)."""
    if first_unknown(value) >= 0:
        return value if operator.startswith("%") else UNKNOWN
    pattern = pattern or ""
    cuts = range(len(value), -1, -1) if operator in ("%", "##") else range(len(value) + 1)
    for cut in cuts:
        if operator.startswith("%") and fnmatch.fnmatchcase(value[cut:], pattern):
            return value[:cut]
        if operator.startswith("#") and fnmatch.fnmatchcase(value[:cut], pattern):
            return value[cut:]
    return value
