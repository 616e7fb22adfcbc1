"""What runs as you outside a sandbox, and where your tools keep their secrets.

Three tables of plain data, researched from each tool's own documentation, source or
manual page (the source of every entry is its `source` field; docs/runs-as-you.md has
the tables with how each was checked, the decisions behind them, and what was left out).

Why these tables exist: a folder a sandbox writes is one you work in afterwards, outside
it (the decision record, "A project's dot files"). Whatever there runs as you on what you
would do anyway, without running the project, must be out of the sandbox's reach, and
whatever in your home holds a token, key or session must not be read by a sandbox that
was only meant to read your files.

- `AGENT_SETTINGS`: project settings of coding-agent harnesses and editors that run
  programs, hooks or servers when the harness starts in the folder or the editor opens
  it. Coding agents are lnk-sandbox's main users, and these files are the agents' own
  `.git/hooks`: a sandbox that writes `.codex/config.toml` makes the next `codex` you run
  there start its server. Names are relative to the top of a written folder; `hold` says
  whether a missing one is held by a placeholder for the run (an empty folder for a
  folder, an empty file for a file), decided from what the tool does with an empty one.
- `HOME_PLACES`: places in your home that run as you on what you would do anyway (log
  in, open a shell, run git, ssh, an editor, a debugger). `holder` marks a folder that
  holds an open-ended set of things that run, whose write grant (or a grant of a folder
  holding it) is refused whole, as home itself is; the others are places kept read-only
  inside any write grant that holds them, and held when missing.
- `CREDENTIALS`: where a common developer tool keeps a token, key, session, secret store,
  history or agent socket in your home: the rule the default hides grow from. `os` is
  "any" where the path is the same on Linux and macOS, else the one OS the path is for
  (a tool whose path differs has one entry per OS).

Plain data only (no imports but `typing`): the policy, `describe` and `check` read these
tables; nothing here decides how a path is enforced on each OS.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

Kind = Literal["file", "folder"]
OS = Literal["any", "linux", "macos"]


class AgentSetting(NamedTuple):
    """A project-level setting, relative to the top of a written folder.

    `name` may be a glob (`*.code-workspace`); a glob is never held, since nothing names
    the one file to hold. `hold` is whether a missing one gets a placeholder for the run.
    `lingers`: whether that placeholder, an empty settings folder, may stay between runs
    (dotfiles.Protected.stays); not where the tool writes into an empty one.
    `found_by`: for a name without a dot, which a placeholder would put in the person's
    listing: where the tool shows it is used here (its program's name on PATH, or a
    folder of its own in home); a missing one is held only then. One that is there is
    read-only whatever.
    """

    name: str
    kind: Kind
    tool: str
    runs: str
    source: str
    hold: bool
    lingers: bool = True
    found_by: tuple[str, ...] = ()


class HomePlace(NamedTuple):
    """A place in home (`~/...`) that runs as you; a holder's write grant is refused.

    `instead`: where a refusal points the person, for a place that is a tool's own home
    (the variable that moves it into a folder the spec may grant); empty for the rest.
    """

    name: str
    kind: Kind
    what: str
    source: str
    holder: bool
    instead: str = ""


class Credential(NamedTuple):
    """A place in home (`~/...`) where a tool keeps a secret, hidden unless a spec names it."""

    name: str
    tool: str
    holds: str
    source: str
    os: OS


_CLAUDE_DIR = "https://code.claude.com/docs/en/claude-directory"
_CODEX_CONFIG = "https://developers.openai.com/codex/config-basic"
_GEMINI_CONFIG = (
    "https://github.com/google-gemini/gemini-cli/blob/main/docs/reference/configuration.md"
)
_AIDER_CONF = "https://aider.chat/docs/config/aider_conf.html"
_AIDER_DOTENV = "https://aider.chat/docs/config/dotenv.html"
_MISE_TRUST = "https://mise.jdx.dev/cli/trust.html"
_MISE_CONFIG = "https://mise.jdx.dev/configuration.html"
# mise's project config files (its configuration page), each read on cd.
_MISE_FILES = ("mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml",
               ".mise/config.toml", "mise/config.toml", ".config/mise.toml",
               ".config/mise/config.toml")

# Where OpenCode shows it is used by this person: its program, its folders in home.
_OPENCODE = ("opencode", "~/.config/opencode", "~/.local/share/opencode",
             "~/.local/state/opencode", "~/.cache/opencode", "~/.opencode")

_PDB = "https://docs.python.org/3/library/pdb.html#debugger-commands"
_EXRC = ("read at the start from the working directory where the person's settings set "
         "'exrc' (nvim 0.7 and vim ask nothing; nvim 0.9 asks once per file content): "
         "its commands run as the editor's own")
# Startup files tools read from the folder they start in, each run as the tool's
# commands or code: (name, tool, what runs, source, the programs that show it is used).
_FOLDER_STARTUP: tuple[tuple[str, str, str, str], ...] = (
    (".perldb", "perl's debugger (perl -d)",
     "read from the working directory first, before ~/.perldb, and run as Perl when the "
     "person owns it and no one else may write it (what a sandbox of theirs writes is)",
     "https://perldoc.perl.org/perldebug#Debugger-Customization"),
    (".gdbinit", "gdb",
     "run as gdb commands (`shell` runs a program) at the start where the folder is on "
     "the auto-load safe-path the person's settings give (`add-auto-load-safe-path`, "
     "`set auto-load safe-path /`)",
     "https://sourceware.org/gdb/current/onlinedocs/gdb.html/Init-File-in-the-Current-"
     "Directory.html"),
    (".lldbinit", "lldb",
     "run as lldb commands (`platform shell`, `script`) at the start where the person's "
     "settings set target.load-cwd-lldbinit true, or lldb --local-lldbinit",
     "https://lldb.llvm.org/man/lldb.html"),
    (".nvim.lua", "Neovim", _EXRC, "https://neovim.io/doc/user/options.html#'exrc'"),
    (".nvimrc", "Neovim", _EXRC, "https://neovim.io/doc/user/options.html#'exrc'"),
    (".exrc", "Neovim, Vim", _EXRC, "https://neovim.io/doc/user/options.html#'exrc'"),
    (".vimrc", "Vim", _EXRC, "https://vimhelp.org/options.txt.html#%27exrc%27"),
    (".gvimrc", "gVim", _EXRC, "https://vimhelp.org/options.txt.html#%27exrc%27"),
    (".irbrc", "irb (Ruby)",
     "run as Ruby at irb's start where the person has no ~/.irbrc (the first found)",
     "https://ruby.github.io/irb/#configuration-file"),
    (".pryrc", "pry (Ruby)", "run as Ruby at pry's start, after ~/.pryrc",
     "https://github.com/pry/pry/wiki/Pry-rc"),
    (".byebugrc", "byebug (Ruby)", "run as debugger commands at its start, after "
     "~/.byebugrc", "https://github.com/deivid-rodriguez/byebug/blob/master/GUIDE.md"),
    (".Rprofile", "R", "run as R at every start in the folder, instead of ~/.Rprofile",
     "https://stat.ethz.ch/R-manual/R-devel/library/base/html/Startup.html"),
    (".Renviron", "R", "read at every start in the folder, instead of ~/.Renviron: its "
     "variables (R_PROFILE_USER) name the code R runs",
     "https://stat.ethz.ch/R-manual/R-devel/library/base/html/Startup.html"),
    (".octaverc", "GNU Octave", "run as Octave at its start in the folder",
     "https://docs.octave.org/latest/Startup-Files.html"),
    (".ghci", "GHCi (Haskell)", "run as GHCi commands (`:!` runs a program) at its start "
     "in the folder", "https://downloads.haskell.org/ghc/latest/docs/users_guide/"
     "ghci.html#the-ghci-and-haskeline-files"),
    (".ocamlinit", "the OCaml toplevel (ocaml, utop)", "run as OCaml at its start, "
     "instead of the one in home", "https://ocaml.org/manual/latest/toplevel.html"),
    (".iex.exs", "IEx (Elixir)", "run as Elixir at its start, instead of ~/.iex.exs",
     "https://hexdocs.pm/iex/IEx.html#module-the-iex-exs-file"),
)
_PYTHON_SITE = "https://docs.python.org/3/library/site.html#rlcompleter-config"
# The two modules site's interactive hook (site.register_readline) imports by name,
# every Python 3, and the forms the import system finds one in from the working
# directory: source, bytecode, an extension module (glob: any ABI tag), a package.
_PYTHON_HOOK = ("readline", "rlcompleter")
_PYTHON_FORMS: tuple[tuple[str, Kind], ...] = (
    (".py", "file"), (".pyc", "file"), (".*so", "file"), ("", "folder"))

AGENT_SETTINGS: tuple[AgentSetting, ...] = (
    AgentSetting(
        ".claude", "folder", "Claude Code",
        "settings.json and settings.local.json run hooks, the status line and helper "
        "commands on session events; skills, commands and workflows run their shell "
        "lines and scripts when invoked",
        _CLAUDE_DIR, True,
    ),
    AgentSetting(
        ".mcp.json", "file", "Claude Code",
        "starts the MCP servers it lists when a session begins, once approved, and "
        "without asking in -p and SDK runs",
        "https://code.claude.com/docs/en/mcp", True,
    ),
    AgentSetting(
        ".codex", "folder", "Codex CLI",
        "config.toml's MCP servers and hooks, hooks.json's hooks, and rules/ that let "
        "commands run outside Codex's sandbox, once the project is trusted",
        _CODEX_CONFIG, True,
    ),
    AgentSetting(
        ".agents", "folder", "Codex CLI, Gemini CLI",
        "skills/ offers instructions and scripts the model invokes by itself when a task "
        "matches; plugins/marketplace.json lists plugins to install",
        "https://developers.openai.com/codex/skills", True,
    ),
    AgentSetting(
        ".gemini", "folder", "Gemini CLI",
        "settings.json's MCP servers, hooks and tool discovery and call commands, "
        "commands/*.toml shell lines, .gemini/.env loaded into its environment",
        _GEMINI_CONFIG, True,
    ),
    AgentSetting(
        ".cursor", "folder", "Cursor",
        "hooks.json runs commands on agent events; mcp.json starts MCP servers",
        "https://cursor.com/docs/agent/hooks", True,
    ),
    AgentSetting(
        ".opencode", "folder", "OpenCode",
        "plugins/ modules load at startup, its package.json's dependencies are installed "
        "there, and its opencode.json(c) applies",
        "https://opencode.ai/docs/plugins/", True,
        False,  # OpenCode writes into an empty one (.gitignore, its plugin's install)
    ),
    AgentSetting(
        "opencode.json", "file", "OpenCode",
        "the plugins it loads at startup, and its other settings",
        "https://opencode.ai/docs/plugins/", True, found_by=_OPENCODE,
    ),
    AgentSetting(
        "opencode.jsonc", "file", "OpenCode",
        "the same as opencode.json, with comments",
        "https://opencode.ai/docs/plugins/", True, found_by=_OPENCODE,
    ),
    AgentSetting(
        ".continue", "folder", "Continue",
        "mcpServers/ YAML and JSON files start MCP servers for its agent",
        "https://docs.continue.dev/customize/deep-dives/mcp", True,
    ),
    AgentSetting(
        ".roo", "folder", "Roo Code",
        "mcp.json starts MCP servers, loaded automatically; tools/ custom tools run "
        "without asking once enabled",
        "https://docs.roocode.com/features/mcp/using-mcp-in-roo", True,
    ),
    AgentSetting(
        ".kiro", "folder", "Kiro",
        "hooks/ run shell commands on file and agent events; settings/mcp.json and "
        "agents/ start MCP servers",
        "https://kiro.dev/docs/hooks/actions", True,
    ),
    AgentSetting(
        ".windsurf", "folder", "Windsurf",
        "hooks.json runs Cascade hooks' shell commands on Cascade actions",
        "https://docs.windsurf.com/windsurf/cascade/hooks", True,
    ),
    AgentSetting(
        ".zed", "folder", "Zed",
        "settings.json's language servers, context (MCP) servers and formatter commands, "
        "once the worktree is trusted",
        "https://zed.dev/docs/worktree-trust", True,
    ),
    AgentSetting(
        ".aider.conf.yml", "file", "aider",
        "lint-cmd runs after every edit (auto-lint is on by default), test-cmd with "
        "auto-test",
        _AIDER_CONF, True,
    ),
    AgentSetting(
        ".env", "file", "aider, Gemini CLI",
        "loaded into their environment when they start in the folder: aider takes its "
        "options from AIDER_* variables there (AIDER_LINT_CMD runs after every edit), "
        "Gemini CLI its own (GOOGLE_GEMINI_BASE_URL sends your API key where it names)",
        _AIDER_DOTENV, True,
    ),
    *(AgentSetting(
        name, "file", "mise",
        "[env] (sourced scripts included) and [hooks] run when you cd into the folder "
        "with mise activated; trust is kept by the file's path, so a trusted file "
        "rewritten runs unasked, while a new one is untrusted until you trust it",
        _MISE_TRUST, False,
    ) for name in _MISE_FILES),
    AgentSetting(
        ".config/mise/conf.d", "folder", "mise",
        "each *.toml there is read as mise.toml is, under the same trust",
        _MISE_CONFIG, False,
    ),
    AgentSetting(
        ".tool-versions", "file", "mise, asdf",
        "mise reads it on cd as its own config, under the same trust (a path: version "
        "puts a folder of the project on PATH)",
        _MISE_TRUST, False,
    ),
    AgentSetting(
        ".clinerules", "folder", "Cline",
        "hooks/ scripts run on task and tool events",
        "https://github.com/cline/cline/blob/0b0ca9b1fa95ed9f3e0891a34f1f9b3904309710"
        "/docs/customization/hooks.mdx", True,
    ),
    AgentSetting(
        ".cline", "folder", "Cline CLI",
        "hooks/ run on lifecycle events, plugins/ load, mcp.json starts MCP servers",
        "https://docs.cline.bot/cli/cli-reference", True,
    ),
    AgentSetting(
        ".github/hooks", "folder", "GitHub Copilot CLI",
        "its *.json files run commands on session and tool events, loaded from the "
        "working directory",
        "https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference",
        True,
    ),
    AgentSetting(
        ".pdbrc", "file", "pdb (python3 -m pdb, breakpoint())",
        "read from the working directory at the debugger's start and run line by line "
        "as debugger commands, `!` Python statements and `alias` included",
        _PDB, True,
    ),
    # Other tools' startup files read from the folder they start in (the class of
    # .pdbrc): each runs as commands or code of its tool. Held when missing, as .pdbrc,
    # whether or not the tool is installed now: a dot name, in no `ls` or `git status`.
    *(AgentSetting(name, "file", tool, runs, source, True)
      for name, tool, runs, source in _FOLDER_STARTUP),
    *(AgentSetting(
        f"{module}{form}", kind, "python3",
        f"its interactive start (site's readline hook) imports {module} with the "
        "working directory first on sys.path: this file runs when you type `python3` "
        "in the folder", _PYTHON_SITE, False,
    ) for module in _PYTHON_HOOK for form, kind in _PYTHON_FORMS),
    AgentSetting(
        "*.code-workspace", "file", "VS Code and its forks",
        "its settings, tasks and launch configurations apply when the workspace file is "
        "opened",
        "https://code.visualstudio.com/docs/editing/workspaces/multi-root-workspaces",
        False,
    ),
)

class VcsMetadata(NamedTuple):
    """A version-control system's repository metadata at the top of a checkout, which its
    tool reads on every command there (and in every folder below, found upward) to
    decide what to run. `hold`: a missing one gets an empty folder for the run (a dot
    name: invisible to `ls` and `git status`), for the tools run in any folder as git is;
    the others are read-only where they are, not made when missing (docs/runs-as-you.md,
    "Other version control", says why)."""

    name: str
    kind: Kind
    tool: str
    runs: str
    source: str
    hold: bool


VCS_METADATA: tuple[VcsMetadata, ...] = (
    VcsMetadata(".hg", "folder", "Mercurial",
                "hgrc's [hooks] run on every command (pre-status, pre-commit...) and its "
                "[extensions] load the Python files they name; sharedpath points hg at "
                "another repository's", "https://www.mercurial-scm.org/doc/hgrc.5.html",
                True),
    VcsMetadata(".jj", "folder", "Jujutsu",
                "repo/config.toml's settings (ui.pager, ui.editor, ui.diff-editor, merge "
                "and fix tools, aliases) run on every jj command; repo/store names the git "
                "directory it uses", "https://jj-vcs.github.io/jj/latest/config/", True),
    VcsMetadata(".sl", "folder", "Sapling",
                "config's [hooks] and [extensions], as Mercurial's hgrc",
                "https://sapling-scm.com/docs/introduction/getting-started/", True),
    VcsMetadata(".bzr", "folder", "Breezy (Bazaar)",
                "branch/branch.conf's post_commit names Python callables brz runs after "
                "every commit",
                "https://www.breezy-vcs.org/doc/en/user-reference/hooks-help.html", False),
    VcsMetadata("_darcs", "folder", "darcs",
                "prefs/defaults gives each darcs command its options, --prehook and "
                "--posthook commands among them", "https://darcs.net/Using/Configuration",
                False),
    VcsMetadata(".pijul", "folder", "Pijul",
                "config's hooks run on pijul record, and the approval of the project's "
                "shared hooks is kept here",
                "https://docs.rs/crate/pijul/1.0.0-beta.22/source/src/commands/hooks.rs",
                False),
    VcsMetadata(".fslckout", "file", "Fossil",
                "the checkout's database names the repository whose settings fossil runs "
                "(hooks, editor, diff and ssh commands)",
                "https://fossil-scm.org/home/help/hook", False),
    VcsMetadata("_FOSSIL_", "file", "Fossil",
                "the older name of the same checkout database",
                "https://fossil-scm.org/home/help/hook", False),
)


_BASH = "https://www.gnu.org/software/bash/manual/html_node/Bash-Startup-Files.html"
_ZSH = "https://zsh.sourceforge.io/Doc/Release/Files.html"
_TCSH = "https://manpages.debian.org/bookworm/tcsh/tcsh.1.en.html"
_SSH = "https://man.openbsd.org/ssh.1#FILES"
_SSHD = "https://man.openbsd.org/sshd.8#FILES"
_SYSTEMD_UNIT = "https://www.freedesktop.org/software/systemd/man/latest/systemd.unit.html"
_FILE_HIERARCHY = "https://www.freedesktop.org/software/systemd/man/latest/file-hierarchy.html"
_DIRENV = "https://github.com/direnv/direnv/blob/master/man/direnv.1.md"
_XSESSION = "https://manpages.debian.org/bookworm/x11-common/Xsession.5.en.html"
_DEBIAN_PROFILE = "https://salsa.debian.org/debian/bash/-/blob/master/debian/skel.profile"
_P10K = "https://github.com/romkatv/powerlevel10k#instant-prompt"
_READLINE = "https://tiswww.case.edu/php/chet/readline/readline.html#Readline-Init-File"
_LESS = "https://man7.org/linux/man-pages/man1/lesskey.1.html"
_LESSPIPE = "https://manpages.debian.org/bookworm/less/lesspipe.1.en.html"

HOME_PLACES: tuple[HomePlace, ...] = (
    # Holders: folders where anything new may run; a write grant of one is refused.
    HomePlace("~/.config", "folder", "every XDG program's settings, many of which name "
              "programs to run", _FILE_HIERARCHY, True),
    HomePlace("~/.local", "folder", "bin/ on PATH and share/ with desktop entries, D-Bus "
              "services, user units and shell snippets", _FILE_HIERARCHY, True),
    HomePlace("~/.local/share", "folder", "desktop entries, D-Bus services, user units, "
              "fish snippets, editor packages, direnv's allow list", _FILE_HIERARCHY, True),
    HomePlace("~/.local/bin", "folder", "executables on PATH (Debian's ~/.profile adds it)",
              _FILE_HIERARCHY, True),
    HomePlace("~/bin", "folder", "executables on PATH (Debian's ~/.profile adds it)",
              _DEBIAN_PROFILE, True),
    HomePlace("~/.cargo/bin", "folder", "binaries cargo install and rustup put there, on "
              "PATH once added", "https://doc.rust-lang.org/cargo/guide/cargo-home.html",
              True),
    HomePlace("~/go/bin", "folder", "binaries go install puts there (GOPATH defaults to "
              "~/go), on PATH once added",
              "https://pkg.go.dev/cmd/go#hdr-Compile_and_install_packages_and_dependencies",
              True),
    HomePlace("~/.ssh", "folder", "ssh's and sshd's per-user files: keys, config, "
              "authorized_keys, rc", _SSH, True),
    HomePlace("~/.gnupg", "folder", "GnuPG's keys and gpg.conf / gpg-agent.conf, which "
              "name programs such as pinentry-program",
              "https://www.gnupg.org/documentation/manuals/gnupg/Agent-Options.html", True),
    HomePlace("~/.cache", "folder", "every tool's cache; shells source files kept at its "
              "top (powerlevel10k's instant prompt, from .zshrc)", _P10K, True),
    # Agents' user folders, whole: what is in them runs when the harness starts anywhere
    # (hooks, MCP servers, plugins, skills), so a grant inside one is refused too.
    HomePlace("~/.claude", "folder", "Claude Code's user settings (hooks), skills, "
              "commands, agents, plugins and credentials", _CLAUDE_DIR, False,
              "CLAUDE_CONFIG_DIR"),
    HomePlace("~/.codex", "folder", "Codex's config.toml (MCP servers, hooks, notify), "
              "hooks.json, rules and skills", _CODEX_CONFIG, False, "CODEX_HOME"),
    HomePlace("~/.gemini", "folder", "Gemini CLI's user settings (MCP servers, hooks), "
              "commands, extensions and credentials", _GEMINI_CONFIG, False,
              "GEMINI_CLI_HOME"),
    HomePlace("~/.cursor", "folder", "Cursor's user hooks.json and mcp.json, and its "
              "extensions", "https://cursor.com/docs/agent/hooks", False),
    HomePlace("~/.config/opencode", "folder", "OpenCode's global opencode.json(c) and "
              "plugins/, loaded at every start", "https://opencode.ai/docs/plugins/", False,
              "OPENCODE_CONFIG_DIR"),
    HomePlace("~/.copilot", "folder", "GitHub Copilot CLI's settings, mcp-config.json, "
              "hooks/, agents, skills and installed plugins",
              "https://docs.github.com/en/copilot/reference/copilot-cli-reference"
              "/cli-config-dir-reference", False, "COPILOT_HOME"),
    HomePlace("~/.continue", "folder", "Continue's global config.yaml: MCP servers and "
              "tools its agent starts", "https://docs.continue.dev/reference", False),
    HomePlace("~/.codeium/windsurf", "folder", "Windsurf's global mcp_config.json and "
              "hooks", "https://docs.windsurf.com/windsurf/cascade/hooks", False),
    HomePlace("~/.kiro", "folder", "Kiro's user-level settings/mcp.json, agents and hooks",
              "https://kiro.dev/docs/mcp/configuration/", False),
    # What the person's tools load and run from home: toolchain and interpreter homes,
    # whose shims, proxies and installed packages every command of theirs runs.
    HomePlace("~/.pyenv", "folder", "pyenv: shims on PATH, libexec/ (what pyenv runs), "
              "versions/ (every python the shims start), plugins/",
              "https://github.com/pyenv/pyenv#understanding-path", False, "PYENV_ROOT"),
    HomePlace("~/.rbenv", "folder", "rbenv: shims, versions and plugins, as pyenv's",
              "https://github.com/rbenv/rbenv#how-it-works", False, "RBENV_ROOT"),
    HomePlace("~/.rustup", "folder", "rustup's toolchains, which the proxies in "
              "~/.cargo/bin run", "https://rust-lang.github.io/rustup/concepts/index.html",
              False, "RUSTUP_HOME"),
    HomePlace("~/.cargo/env", "file", "rustup's shell setup, sourced by ~/.profile and "
              "~/.bashrc", "https://rust-lang.github.io/rustup/installation/index.html",
              False),
    HomePlace("~/.nvm", "folder", "nvm: nvm.sh, sourced by the shell's startup files, and "
              "every node version and its global packages",
              "https://github.com/nvm-sh/nvm#installing-and-updating", False, "NVM_DIR"),
    HomePlace("~/.volta", "folder", "Volta's shims on PATH and the tools they run",
              "https://docs.volta.sh/advanced/installers", False, "VOLTA_HOME"),
    HomePlace("~/.asdf", "folder", "asdf's shims, installs and plugins (ASDF_DATA_DIR's "
              "default)", "https://asdf-vm.com/manage/configuration.html", False,
              "ASDF_DATA_DIR"),
    HomePlace("~/.local/share/mise", "folder", "mise's installs, shims and plugins "
              "(MISE_DATA_DIR's default)",
              "https://mise.jdx.dev/directories.html", False, "MISE_DATA_DIR"),
    HomePlace("~/.sdkman", "folder", "SDKMAN!'s sdkman-init.sh, sourced by the shell's "
              "startup files, and its candidates", "https://sdkman.io/install", False,
              "SDKMAN_DIR"),
    HomePlace("~/.local/lib", "folder", "pip install --user's site-packages: python runs "
              "every import line of a .pth file there at start",
              "https://docs.python.org/3/library/site.html", False, "PYTHONUSERBASE"),
    HomePlace("~/Library/Python", "folder", "the same user site-packages on macOS",
              "https://docs.python.org/3/library/site.html", False, "PYTHONUSERBASE"),
    HomePlace("~/.local/share/pipx", "folder", "pipx's virtual environments, which the "
              "links it puts in ~/.local/bin run",
              "https://pipx.pypa.io/latest/how-to/configure-paths/", False, "PIPX_HOME"),
    HomePlace("~/.local/share/uv", "folder", "uv's installed tools and Pythons, run from "
              "~/.local/bin", "https://docs.astral.sh/uv/reference/storage/", False,
              "UV_TOOL_DIR"),
    HomePlace("~/.cache/uv", "folder", "uv's cache: uvx runs tools from environments "
              "cached there", "https://docs.astral.sh/uv/concepts/tools/", False,
              "UV_CACHE_DIR"),
    HomePlace("~/.npm/_npx", "folder", "npx installs the packages it runs there and runs "
              "them again from there", "https://docs.npmjs.com/cli/commands/npm-cache",
              False, "npm_config_cache"),
    HomePlace("~/.npm-global", "folder", "the global prefix npm's docs suggest: bin/ on "
              "PATH and the packages it runs",
              "https://docs.npmjs.com/resolving-eacces-permissions-errors-when-installing"
              "-packages-globally", False),
    HomePlace("~/.node_modules", "folder", "node loads modules from it when a project has "
              "none", "https://nodejs.org/api/modules.html#loading-from-the-global-folders",
              False),
    HomePlace("~/.node_libraries", "folder", "node loads modules from it when a project has "
              "none", "https://nodejs.org/api/modules.html#loading-from-the-global-folders",
              False),
    HomePlace("~/.bun", "folder", "bun and the packages bun install -g puts in bin/",
              "https://bun.sh/docs/installation", False, "BUN_INSTALL"),
    HomePlace("~/.deno", "folder", "deno and the scripts deno install puts in bin/",
              "https://docs.deno.com/runtime/reference/cli/install/", False),
    HomePlace("~/.gem", "folder", "gem install --user-install's gems and their "
              "executables", "https://guides.rubygems.org/faqs/#user-install", False,
              "GEM_HOME"),
    HomePlace("~/.cache/pre-commit", "folder", "pre-commit's hook repositories and their "
              "environments, run on every git commit", "https://pre-commit.com/#managing-ci"
              "-caches", False, "PRE_COMMIT_HOME"),
    HomePlace("~/.oh-my-zsh", "folder", "oh-my-zsh.sh, its plugins and themes, sourced by "
              "~/.zshrc", "https://github.com/ohmyzsh/ohmyzsh#manual-installation", False,
              "ZSH"),
    HomePlace("~/.bash_aliases", "file", "sourced by Debian's and Ubuntu's ~/.bashrc",
              "https://salsa.debian.org/debian/bash/-/blob/master/debian/skel.bashrc",
              False),
    HomePlace("~/.p10k.zsh", "file", "powerlevel10k's settings, sourced by ~/.zshrc",
              _P10K, False),
    # Shells.
    HomePlace("~/.profile", "file", "login shells of sh, dash, ksh and bash (when bash has "
              "no .bash_profile or .bash_login)", _BASH, False),
    HomePlace("~/.bash_profile", "file", "bash login shells", _BASH, False),
    HomePlace("~/.bash_login", "file", "bash login shells without .bash_profile", _BASH,
              False),
    HomePlace("~/.bashrc", "file", "interactive bash, and bash run by sshd", _BASH, False),
    HomePlace("~/.bash_logout", "file", "bash login shells as they exit", _BASH, False),
    HomePlace("~/.zshenv", "file", "every zsh ($ZDOTDIR defaults to home)", _ZSH, False),
    HomePlace("~/.zprofile", "file", "zsh login shells", _ZSH, False),
    HomePlace("~/.zshrc", "file", "interactive zsh", _ZSH, False),
    HomePlace("~/.zlogin", "file", "zsh login shells", _ZSH, False),
    HomePlace("~/.zlogout", "file", "zsh login shells as they exit", _ZSH, False),
    HomePlace("~/.config/fish", "folder", "fish: config.fish, conf.d/ snippets and "
              "autoloaded functions/",
              "https://fishshell.com/docs/current/language.html#configuration-files",
              False),
    HomePlace("~/.config/nushell", "folder", "nushell on Linux: env.nu, config.nu, login.nu "
              "and autoload directories",
              "https://www.nushell.sh/book/configuration.html", False),
    HomePlace("~/Library/Application Support/nushell", "folder", "nushell on macOS: env.nu, "
              "config.nu, login.nu", "https://www.nushell.sh/book/configuration.html", False),
    HomePlace("~/.kshrc", "file", "interactive ksh93 ($ENV's default)",
              "https://manpages.debian.org/bookworm/ksh/ksh.1.en.html", False),
    HomePlace("~/.tcshrc", "file", "every tcsh", _TCSH, False),
    HomePlace("~/.cshrc", "file", "every csh, and tcsh without .tcshrc", _TCSH, False),
    HomePlace("~/.login", "file", "csh and tcsh login shells", _TCSH, False),
    HomePlace("~/.logout", "file", "csh and tcsh login shells as they exit", _TCSH, False),
    # X and desktop sessions.
    HomePlace("~/.xsession", "file", "the X session script Xsession runs at graphical "
              "login", _XSESSION, False),
    HomePlace("~/.xsessionrc", "file", "sourced by Xsession at every graphical login",
              _XSESSION, False),
    HomePlace("~/.xinitrc", "file", "xinit and startx run it as the X session",
              "https://manpages.debian.org/bookworm/xinit/xinit.1.en.html", False),
    HomePlace("~/.xserverrc", "file", "xinit runs it to start the X server",
              "https://manpages.debian.org/bookworm/xinit/xinit.1.en.html", False),
    HomePlace("~/.config/autostart", "folder", "desktop entries the session starts at login",
              "https://specifications.freedesktop.org/autostart-spec/latest/", False),
    HomePlace("~/.config/systemd", "folder", "user units (user/) systemd --user runs when "
              "enabled or wanted", _SYSTEMD_UNIT, False),
    HomePlace("~/.local/share/systemd", "folder", "user units installed in home", _SYSTEMD_UNIT,
              False),
    HomePlace("~/.config/environment.d", "folder", "*.conf variables for the user manager "
              "and every user service (PATH, LD_PRELOAD...)",
              "https://www.freedesktop.org/software/systemd/man/latest/environment.d.html",
              False),
    HomePlace("~/.local/share/applications", "folder", "desktop entries whose Exec runs when "
              "launched or chosen to open a file type",
              "https://gitlab.freedesktop.org/xdg/xdg-utils/-/blob/master/scripts/xdg-open.in",
              False),
    HomePlace("~/.config/mimeapps.list", "file", "the default application xdg-open runs "
              "for each type",
              "https://gitlab.freedesktop.org/xdg/xdg-utils/-/blob/master/scripts/xdg-mime.in",
              False),
    HomePlace("~/.local/share/dbus-1/services", "folder", "session services D-Bus starts on "
              "demand", "https://dbus.freedesktop.org/doc/dbus-daemon.1.html", False),
    # ssh.
    HomePlace("~/.ssh/authorized_keys", "file", "keys sshd lets log in as you", _SSHD, False),
    HomePlace("~/.ssh/rc", "file", "sshd runs it at every login before your shell", _SSHD,
              False),
    HomePlace("~/.ssh/config", "file", "ssh runs its ProxyCommand, LocalCommand, "
              "KnownHostsCommand and Match exec",
              "https://man.openbsd.org/ssh_config.5", False),
    HomePlace("~/.ssh/environment", "file", "variables sshd sets at login where "
              "PermitUserEnvironment allows", _SSH, False),
    # Readline and less: what they read at every start names what runs.
    HomePlace("~/.inputrc", "file", "readline's key bindings for bash and every readline "
              "program: a macro bound to Return types a command and ends in accept-line, "
              "so the person's next Enter runs it; $include names more files", _READLINE,
              False),
    HomePlace("~/.lessfilter", "file", "Debian's lesspipe (LESSOPEN, set by Debian's "
              "~/.bashrc) runs it on every file less opens", _LESSPIPE, False),
    HomePlace("~/.config/lessfilter", "file", "the same, in the XDG place lesspipe looks "
              "in first", _LESSPIPE, False),
    HomePlace("~/.lesskey", "file", "less reads it at every start: its #env section sets "
              "LESSOPEN, a command less runs on every file it opens", _LESS, False),
    HomePlace("~/.config/lesskey", "file", "the XDG place of the same lesskey source", _LESS,
              False),
    HomePlace("~/.less", "file", "the compiled lesskey file older less reads: its "
              "variables set LESSOPEN too", _LESS, False),
    # git and direnv.
    HomePlace("~/.gitconfig", "file", "git's global settings: hooksPath, fsmonitor, "
              "filters, aliases, helpers", "https://git-scm.com/docs/git-config#FILES", False),
    HomePlace("~/.config/git", "folder", "git's XDG global config, attributes and "
              "credentials", "https://git-scm.com/docs/git-config#FILES", False),
    HomePlace("~/.config/direnv", "folder", "direnvrc runs in every .envrc; direnv.toml's "
              "whitelist allows .envrc files unasked", _DIRENV, False),
    HomePlace("~/.local/share/direnv", "folder", "allow/ records which .envrc files direnv "
              "runs", _DIRENV, False),
    # Build tools and clouds.
    HomePlace("~/.npmrc", "file", "npm's user config: script-shell, node-options, git "
              "programs it runs",
              "https://docs.npmjs.com/cli/configuring-npm/npmrc", False),
    HomePlace("~/.cargo/config.toml", "file", "cargo's user config: target runner, "
              "rustc-wrapper, credential providers, aliases",
              "https://doc.rust-lang.org/cargo/reference/config.html", False),
    HomePlace("~/.cargo/config", "file", "the legacy name cargo still reads",
              "https://doc.rust-lang.org/cargo/reference/config.html", False),
    HomePlace("~/.gradle/init.d", "folder", "init scripts run before every Gradle build",
              "https://docs.gradle.org/current/userguide/init_scripts.html", False),
    HomePlace("~/.gradle/init.gradle", "file", "an init script run before every Gradle build",
              "https://docs.gradle.org/current/userguide/init_scripts.html", False),
    HomePlace("~/.gradle/init.gradle.kts", "file", "the Kotlin init script run before every "
              "Gradle build", "https://docs.gradle.org/current/userguide/init_scripts.html",
              False),
    HomePlace("~/.gradle/gradle.properties", "file", "org.gradle.jvmargs for every Gradle "
              "daemon (a -javaagent runs code)",
              "https://docs.gradle.org/current/userguide/build_environment.html", False),
    HomePlace("~/.docker/config.json", "file", "credsStore and credHelpers name "
              "docker-credential-* programs docker runs",
              "https://docs.docker.com/reference/cli/docker/login/#credential-stores", False),
    HomePlace("~/.docker/cli-plugins", "folder", "docker runs the plugins there as "
              "subcommands",
              "https://github.com/docker/cli/blob/master/cli-plugins/manager/manager.go",
              False),
    HomePlace("~/.kube/config", "file", "exec credential plugins kubectl runs",
              "https://kubernetes.io/docs/reference/kubectl/generated/kubectl_config"
              "/kubectl_config_set-credentials/", False),
    HomePlace("~/.aws/config", "file", "credential_process the AWS CLI and SDKs run",
              "https://docs.aws.amazon.com/cli/latest/topic/config-vars.html", False),
    HomePlace("~/.vault", "file", "token_helper, a program the Vault CLI runs to keep its "
              "token", "https://developer.hashicorp.com/vault/docs/commands/token-helper",
              False),
    # Editors, terminals, REPLs and debuggers.
    HomePlace("~/.vimrc", "file", "vim's user vimrc",
              "https://vimhelp.org/starting.txt.html#vimrc", False),
    HomePlace("~/.vim", "folder", "vim's vimrc, plugin/ and pack/ start packages",
              "https://vimhelp.org/starting.txt.html#vimrc", False),
    HomePlace("~/.config/nvim", "folder", "neovim's init.lua / init.vim and plugins",
              "https://neovim.io/doc/user/starting.html#config", False),
    HomePlace("~/.local/share/nvim", "folder", "neovim's data folder: site/ (on the "
              "runtime path; site/pack/*/start plugins load at start) and the plugins "
              "managers such as lazy.nvim install there",
              "https://neovim.io/doc/user/pack.html", False),
    HomePlace("~/.config/emacs", "folder", "Emacs' init.el in its XDG place",
              "https://www.gnu.org/software/emacs/manual/html_node/emacs/Find-Init.html",
              False),
    HomePlace("~/.vscode", "folder", "VS Code's extensions/, which its extension host runs",
              "https://code.visualstudio.com/docs/editor/extension-marketplace"
              "#_where-are-extensions-installed", False),
    HomePlace("~/.vscode-server", "folder", "VS Code Remote's server and its extensions",
              "https://code.visualstudio.com/docs/remote/faq", False),
    HomePlace("~/.config/Code", "folder", "VS Code's user settings.json and tasks.json "
              "(terminal profiles, tool paths its extensions run)",
              "https://code.visualstudio.com/docs/getstarted/settings"
              "#_settings-file-locations", False),
    HomePlace("~/Library/Application Support/Code", "folder", "the same on macOS",
              "https://code.visualstudio.com/docs/getstarted/settings"
              "#_settings-file-locations", False),
    HomePlace("~/.config/zed", "folder", "Zed's settings.json (language and context "
              "servers) and tasks.json", "https://zed.dev/docs/configuring-zed", False),
    HomePlace("~/.emacs", "file", "Emacs' init file",
              "https://www.gnu.org/software/emacs/manual/html_node/emacs/Find-Init.html",
              False),
    HomePlace("~/.emacs.el", "file", "Emacs' init file",
              "https://www.gnu.org/software/emacs/manual/html_node/emacs/Find-Init.html",
              False),
    HomePlace("~/.emacs.d", "folder", "Emacs' init.el, early-init.el and packages",
              "https://www.gnu.org/software/emacs/manual/html_node/emacs/Find-Init.html",
              False),
    HomePlace("~/.tmux.conf", "file", "tmux runs its commands at server start",
              "https://man.openbsd.org/tmux.1", False),
    HomePlace("~/.config/tmux", "folder", "tmux.conf, the XDG place tmux reads",
              "https://man.openbsd.org/tmux.1", False),
    HomePlace("~/.gdbinit", "file", "gdb runs its commands at start",
              "https://sourceware.org/gdb/current/onlinedocs/gdb.html/Initialization-Files.html",
              False),
    HomePlace("~/.config/gdb", "folder", "gdbinit and gdbearlyinit, read before ~/.gdbinit",
              "https://sourceware.org/gdb/current/onlinedocs/gdb.html/Initialization-Files.html",
              False),
    HomePlace("~/.ipython", "folder", "profile_default/startup/ scripts and "
              "ipython_config.py run at every IPython start",
              "https://ipython.readthedocs.io/en/stable/interactive/tutorial.html"
              "#startup-files", False),
    HomePlace("~/.psqlrc", "file", "psql runs it at start (\\! runs shell commands)",
              "https://www.postgresql.org/docs/current/app-psql.html#APP-PSQL-FILES", False),
    HomePlace("~/.sqliterc", "file", "the sqlite3 shell runs its dot-commands at start",
              "https://sqlite.org/cli.html", False),
    # Agents' user settings that are single files.
    HomePlace("~/.claude.json", "file", "Claude Code's user and local MCP servers, trust "
              "decisions and sign-in session", "https://code.claude.com/docs/en/settings",
              False),
    HomePlace("~/.aider.conf.yml", "file", "aider's user config: lint and test commands",
              _AIDER_CONF, False),
    HomePlace("~/.env", "file", "loaded into their environment by Gemini CLI (when no "
              "project has one) and aider (AIDER_LINT_CMD and the like)",
              "https://aider.chat/docs/config/dotenv.html", False),
)

_BROWSER_CHROMIUM = "https://chromium.googlesource.com/chromium/src/+/HEAD/docs/user_data_dir.md"
_FIREFOX = (
    "https://firefox-source-docs.mozilla.org/code-quality/lint/linters/dot-mozilla-reference.html"
)
_GCLOUD = "https://cloud.google.com/sdk/docs/configurations"
_EDGE = ("https://learn.microsoft.com/en-us/microsoft-edge/extensions/developer-guide"
         "/alternate-distribution-options")
_NSS = "https://github.com/nss-dev/nss/blob/master/lib/sysinit/nsssysinit.c"
_LINODE = ("https://github.com/linode/linode-cli/blob/main/linodecli/configuration"
           "/helpers.py")
_SNOWFLAKE = ("https://docs.snowflake.com/en/developer-guide/snowflake-cli/connecting"
              "/configure-cli")
_CLOUDFLARED = ("https://developers.cloudflare.com/tunnel/advanced/local-management"
                "/local-tunnel-terms/")
_NGROK = "https://ngrok.com/docs/agent/config/"
_POETRY = "https://python-poetry.org/docs/repositories/#configuring-credentials"
_LLM = "https://llm.datasette.io/en/stable/setup.html#saving-and-using-stored-keys"

CREDENTIALS: tuple[Credential, ...] = (
    # Clouds.
    Credential("~/.aws", "AWS CLI", "access keys, SSO and CLI credential caches",
               "https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html",
               "any"),
    Credential("~/.config/gcloud", "gcloud", "credential and access-token databases, "
               "application default credentials", _GCLOUD, "any"),
    Credential("~/.azure", "Azure CLI", "MSAL token cache and service principal secrets",
               "https://learn.microsoft.com/en-us/cli/azure/azure-cli-configuration", "any"),
    Credential("~/.config/doctl", "doctl", "config.yaml with the access token",
               "https://github.com/digitalocean/doctl#configuring-default-values", "any"),
    Credential("~/.fly", "flyctl", "config.yml with the access token",
               "https://github.com/superfly/flyctl/blob/master/helpers/config.go", "any"),
    Credential("~/.netrc", "curl, git, ftp and the clients that write it", "logins and "
               "tokens per host", "https://curl.se/docs/manpage.html#-n", "any"),
    Credential("~/.config/netlify", "Netlify CLI", "config.json with the auth token "
               "(Linux; env-paths' config folder)",
               "https://github.com/netlify/cli/blob/main/src/lib/settings.ts", "linux"),
    Credential("~/Library/Preferences/netlify", "Netlify CLI", "config.json with the auth "
               "token (macOS; env-paths' config folder)",
               "https://github.com/netlify/cli/blob/main/src/lib/settings.ts", "macos"),
    Credential("~/.netlify", "Netlify CLI", "the legacy config folder",
               "https://github.com/netlify/cli/blob/main/src/lib/settings.ts", "any"),
    Credential("~/.wrangler", "wrangler", "the legacy global config with the OAuth token",
               "https://github.com/cloudflare/workers-sdk/blob/main/packages/wrangler/src"
               "/global-wrangler-config-path.ts", "any"),
    Credential("~/.config/.wrangler", "wrangler", "config/default.toml with the OAuth token "
               "(Linux, XDG path of older 3.x and 4.x)",
               "https://github.com/cloudflare/workers-sdk/blob/main/packages/wrangler/src"
               "/global-wrangler-config-path.ts", "linux"),
    Credential("~/.config/wrangler", "wrangler", "config/default.toml with the OAuth token "
               "(Linux, current XDG path)",
               "https://github.com/cloudflare/workers-sdk/blob/main/packages/wrangler/src"
               "/global-wrangler-config-path.ts", "linux"),
    Credential("~/Library/Preferences/.wrangler", "wrangler", "config/default.toml with the "
               "OAuth token (macOS, older path)",
               "https://github.com/cloudflare/workers-sdk/blob/main/packages/wrangler/src"
               "/global-wrangler-config-path.ts", "macos"),
    Credential("~/Library/Preferences/wrangler", "wrangler", "config/default.toml with the "
               "OAuth token (macOS, current path)",
               "https://github.com/cloudflare/workers-sdk/blob/main/packages/wrangler/src"
               "/global-wrangler-config-path.ts", "macos"),
    Credential("~/.local/share/com.vercel.cli", "Vercel CLI", "auth.json with the token "
               "(Linux)", "https://github.com/vercel/vercel/blob/main/packages/cli/src/util"
               "/config/global-path.ts", "linux"),
    Credential("~/Library/Application Support/com.vercel.cli", "Vercel CLI", "auth.json with "
               "the token (macOS)", "https://github.com/vercel/vercel/blob/main/packages/cli"
               "/src/util/config/global-path.ts", "macos"),
    Credential("~/.now", "Vercel CLI", "the legacy config folder with auth.json",
               "https://github.com/vercel/vercel/blob/main/packages/cli/src/util/config"
               "/global-path.ts", "any"),
    Credential("~/.kube", "kubectl", "kubeconfig with client keys and tokens, and caches",
               "https://kubernetes.io/docs/concepts/configuration/organize-cluster-access"
               "-kubeconfig/", "any"),
    Credential("~/.docker", "docker", "config.json's registry auths", "https://docs.docker.com/reference/cli/docker/login/",
               "any"),
    Credential("~/.terraform.d", "Terraform", "credentials.tfrc.json from terraform login",
               "https://developer.hashicorp.com/terraform/cli/commands/login", "any"),
    Credential("~/.terraformrc", "Terraform", "credentials blocks for registries",
               "https://developer.hashicorp.com/terraform/cli/config/config-file"
               "#credentials", "any"),
    Credential("~/.config/rclone", "rclone", "rclone.conf with every remote's tokens",
               "https://rclone.org/docs/#config-string", "any"),
    Credential("~/.rclone.conf", "rclone", "the legacy config with remotes' tokens",
               "https://rclone.org/docs/#config-string", "any"),
    Credential("~/.config/hcloud/cli.toml", "hcloud (Hetzner Cloud CLI)", "each context's "
               "API token", "https://github.com/hetznercloud/cli/blob/main/docs/reference"
               "/configuration.md", "any"),
    Credential("~/.config/linode-cli", "Linode CLI", "the config file with each user's "
               "token", _LINODE, "any"),
    Credential("~/.linode-cli", "Linode CLI", "the legacy config file, read first when "
               "there", _LINODE, "any"),
    Credential("~/.supabase/access-token", "Supabase CLI", "the access token from supabase "
               "login when no keyring is available",
               "https://github.com/supabase/cli/blob/develop/docs/supabase/login.md", "any"),
    Credential("~/.snowflake", "Snowflake CLI", "config.toml and connections.toml with "
               "passwords and key paths (used when the folder exists)", _SNOWFLAKE, "any"),
    Credential("~/.config/snowflake", "Snowflake CLI", "the same files, the XDG place "
               "(Linux)", _SNOWFLAKE, "linux"),
    Credential("~/Library/Application Support/snowflake", "Snowflake CLI", "the same files "
               "(macOS)", _SNOWFLAKE, "macos"),
    Credential("~/.cloudflared", "cloudflared", "cert.pem from cloudflared login and the "
               "tunnels' credentials files", _CLOUDFLARED, "any"),
    Credential("~/.config/ngrok", "ngrok agent", "ngrok.yml with the authtoken and API key "
               "(Linux)", _NGROK, "linux"),
    Credential("~/Library/Application Support/ngrok", "ngrok agent", "ngrok.yml with the "
               "authtoken and API key (macOS)", _NGROK, "macos"),
    Credential("~/.config/helm/registry/config.json", "Helm", "logins from helm registry "
               "login (Linux)", "https://helm.sh/docs/helm/helm_registry_login/", "linux"),
    # Package registries.
    Credential("~/.npmrc", "npm", "_authToken and _auth per registry",
               "https://docs.npmjs.com/cli/configuring-npm/npmrc#auth-related-configuration",
               "any"),
    Credential("~/.pypirc", "twine, PyPI uploads", "PyPI API tokens",
               "https://packaging.python.org/en/latest/specifications/pypirc/", "any"),
    Credential("~/.cargo/credentials.toml", "cargo", "registry tokens from cargo login",
               "https://doc.rust-lang.org/cargo/guide/cargo-home.html", "any"),
    Credential("~/.cargo/credentials", "cargo", "the legacy name of credentials.toml",
               "https://doc.rust-lang.org/cargo/reference/config.html#credentials", "any"),
    Credential("~/.gradle/gradle.properties", "Gradle", "repository and signing credentials "
               "kept as properties",
               "https://docs.gradle.org/current/userguide/build_environment.html", "any"),
    Credential("~/.config/pypoetry/auth.toml", "Poetry", "repository passwords and PyPI "
               "tokens when no keyring is available (Linux)", _POETRY, "linux"),
    Credential("~/Library/Application Support/pypoetry/auth.toml", "Poetry", "the same "
               "(macOS)", _POETRY, "macos"),
    Credential("~/.local/share/uv/credentials", "uv", "credentials.toml from uv auth login, "
               "in plain text", "https://docs.astral.sh/uv/concepts/authentication/http/",
               "any"),
    Credential("~/.bundle/config", "Bundler", "global settings, with gem sources' "
               "credentials", "https://bundler.io/man/bundle-config.1.html", "any"),
    # Forges and git.
    Credential("~/.config/gh", "GitHub CLI", "hosts.yml with the OAuth token when no "
               "keyring is used",
               "https://cli.github.com/manual/gh_help_environment", "any"),
    Credential("~/.config/glab-cli", "GitLab CLI", "config.yml with each host's token",
               "https://docs.gitlab.com/cli/configuration/", "any"),
    Credential("~/.config/hub", "hub", "the config file with each host's OAuth token",
               "https://github.com/github/hub/blob/master/share/man/man1/hub.1.md", "any"),
    Credential("~/.git-credentials", "git credential store", "passwords and tokens in "
               "plain text", "https://git-scm.com/docs/git-credential-store#FILES", "any"),
    Credential("~/.config/git/credentials", "git credential store", "the XDG place of "
               "the same store", "https://git-scm.com/docs/git-credential-store#FILES", "any"),
    # AI tools.
    Credential("~/.claude", "Claude Code", ".credentials.json with the sign-in tokens "
               "(Linux; the Keychain on macOS) and session transcripts",
               "https://code.claude.com/docs/en/authentication", "any"),
    Credential("~/.claude.json", "Claude Code", "the sign-in session and MCP servers' "
               "settings", "https://code.claude.com/docs/en/settings", "any"),
    Credential("~/.codex", "Codex CLI", "auth.json with ChatGPT tokens or the API key, and "
               "session transcripts", "https://developers.openai.com/codex/auth", "any"),
    Credential("~/.gemini", "Gemini CLI", "oauth_creds.json and history",
               "https://github.com/google-gemini/gemini-cli/blob/main/packages/core/src"
               "/config/storage.ts", "any"),
    Credential("~/.cache/huggingface/token", "Hugging Face Hub", "the access token "
               "(HF_TOKEN_PATH's default)",
               "https://huggingface.co/docs/huggingface_hub/package_reference"
               "/environment_variables#hftokenpath", "any"),
    Credential("~/.local/share/opencode/auth.json", "OpenCode", "provider API keys and "
               "OAuth tokens from opencode auth login",
               "https://opencode.ai/docs/cli/#auth", "any"),
    Credential("~/.ollama/id_ed25519", "Ollama", "the private key that signs its requests "
               "to ollama.com (sign-in, push)",
               "https://github.com/ollama/ollama/blob/main/auth/auth.go", "any"),
    Credential("~/.config/io.datasette.llm/keys.json", "llm", "API keys from llm keys set "
               "(Linux)", _LLM, "linux"),
    Credential("~/Library/Application Support/io.datasette.llm/keys.json", "llm", "API keys "
               "from llm keys set (macOS)", _LLM, "macos"),
    # Secrets managers and keyrings.
    Credential("~/.vault-token", "Vault", "the token the default token helper keeps",
               "https://developer.hashicorp.com/vault/docs/commands/token-helper", "any"),
    Credential("~/.config/sops/age/keys.txt", "sops", "age private keys (Linux)",
               "https://github.com/getsops/sops/blob/main/age/keysource.go", "linux"),
    Credential("~/Library/Application Support/sops/age/keys.txt", "sops", "age private keys "
               "(macOS)", "https://github.com/getsops/sops/blob/main/age/keysource.go",
               "macos"),
    Credential("~/.password-store", "pass", "the GPG-encrypted password store",
               "https://git.zx2c4.com/password-store/about/", "any"),
    Credential("~/.local/share/keyrings", "GNOME Keyring", "the login keyring and others",
               "https://gitlab.gnome.org/GNOME/gnome-keyring", "linux"),
    Credential("~/.gnupg", "GnuPG", "private keys, and gpg-agent's sockets where no "
               "/run/user folder exists",
               "https://www.gnupg.org/documentation/manuals/gnupg/GPG-Configuration.html",
               "any"),
    Credential("~/.ssh", "OpenSSH", "private keys, and ssh-agent's sockets in agent/ "
               "(OpenSSH 10.1 and later)", _SSH, "any"),
    # Databases.
    Credential("~/.pgpass", "PostgreSQL (libpq)", "passwords per host and database",
               "https://www.postgresql.org/docs/current/libpq-pgpass.html", "any"),
    Credential("~/.my.cnf", "MySQL and MariaDB clients", "[client] passwords",
               "https://mariadb.com/kb/en/configuring-mariadb-with-option-files/", "any"),
    # Shell and REPL histories: commands typed with tokens in them.
    Credential("~/.bash_history", "bash", "command history", _BASH, "any"),
    Credential("~/.local/share/fish/fish_history", "fish", "command history",
               "https://fishshell.com/docs/current/cmds/history.html", "any"),
    Credential("~/.sh_history", "ksh", "command history",
               "https://manpages.debian.org/bookworm/ksh/ksh.1.en.html", "any"),
    Credential("~/.history", "tcsh", "command history", _TCSH, "any"),
    Credential("~/.python_history", "python", "REPL history",
               "https://docs.python.org/3/library/site.html#rlcompleter-config", "any"),
    Credential("~/.node_repl_history", "node", "REPL history",
               "https://nodejs.org/api/repl.html#persistent-history", "any"),
    Credential("~/.psql_history", "psql", "query history",
               "https://www.postgresql.org/docs/current/app-psql.html#APP-PSQL-FILES", "any"),
    Credential("~/.mongodb/mongosh/mongosh_repl_history", "mongosh", "command history",
               "https://www.mongodb.com/docs/mongodb-shell/logs/command-history/", "any"),
    Credential("~/.mysql_history", "mysql client", "statement history",
               "https://dev.mysql.com/doc/refman/8.4/en/mysql-logging.html", "any"),
    Credential("~/.sqlite_history", "sqlite3 shell", "statement history",
               "https://sqlite.org/cli.html", "any"),
    Credential("~/.lesshst", "less", "search and shell-command history",
               "https://man7.org/linux/man-pages/man1/less.1.html", "any"),
    Credential("~/.local/share/atuin", "atuin", "history.db and the sync key",
               "https://docs.atuin.sh/configuration/config/", "any"),
    Credential("~/.ipython", "IPython", "profile_default/history.sqlite",
               "https://github.com/ipython/ipython/blob/main/IPython/core/history.py", "any"),
    # Browser profiles: cookies, sessions, saved passwords.
    Credential("~/.mozilla", "Firefox", "profiles (Linux, the legacy place)", _FIREFOX, "linux"),
    Credential("~/.config/mozilla", "Firefox", "profiles (Linux, the XDG place Firefox 143 "
               "and later prefers)", _FIREFOX, "linux"),
    Credential("~/Library/Application Support/Firefox", "Firefox", "profiles (macOS)",
               _FIREFOX, "macos"),
    Credential("~/.config/google-chrome", "Google Chrome", "the user data folder (Linux)",
               _BROWSER_CHROMIUM, "linux"),
    Credential("~/.config/chromium", "Chromium", "the user data folder (Linux)",
               _BROWSER_CHROMIUM, "linux"),
    Credential("~/Library/Application Support/Google/Chrome", "Google Chrome", "the user "
               "data folder (macOS)", _BROWSER_CHROMIUM, "macos"),
    Credential("~/Library/Application Support/Chromium", "Chromium", "the user data folder "
               "(macOS)", _BROWSER_CHROMIUM, "macos"),
    Credential("~/.config/BraveSoftware", "Brave", "the user data folders of every channel "
               "(Linux)", "https://github.com/brave/brave-core/blob/master/chromium_src/chrome"
               "/common/chrome_paths_linux.cc", "linux"),
    Credential("~/.config/microsoft-edge", "Microsoft Edge", "the user data folder (Linux)",
               _EDGE, "linux"),
    Credential("~/Library/Application Support/Microsoft Edge", "Microsoft Edge", "the user "
               "data folder (macOS)", _EDGE, "macos"),
    Credential("~/.pki/nssdb", "NSS (Chromium's and Chrome's certificate store)", "client "
               "certificates' private keys (Linux)", _NSS, "linux"),
    Credential("~/.local/share/pki/nssdb", "NSS (Chromium's and Chrome's certificate store)",
               "the same database, NSS's XDG place when ~/.pki/nssdb is missing (Linux)",
               _NSS, "linux"),
    # Agent sockets under home.
    Credential("~/.1password", "1Password", "agent.sock, its SSH agent (Linux)",
               "https://developer.1password.com/docs/ssh/get-started/", "linux"),
    Credential("~/.colima", "Colima", "each profile's docker.sock (default/docker.sock)",
               "https://github.com/abiosoft/colima/blob/main/docs/FAQ.md"
               "#docker-socket-location", "any"),
    Credential("~/.lima", "Lima", "instances' sockets and SSH keys (LIMA_HOME's default)",
               "https://lima-vm.io/docs/config/environment-variables/", "any"),
    # Found readable by the red team of issue 13 with read = ["~"], and the tools the rule
    # names that were left unverified before: data and cloud tools' keys.
    Credential("~/.kaggle", "Kaggle API", "kaggle.json with the API key",
               "https://github.com/Kaggle/kaggle-api#api-credentials", "any"),
    Credential("~/.config/containers/auth.json", "podman, buildah, skopeo", "registry "
               "logins (user:password), read after the one in $XDG_RUNTIME_DIR",
               "https://man.archlinux.org/man/containers-auth.json.5", "any"),
    Credential("~/.s3cfg", "s3cmd", "the access and secret keys",
               "https://s3tools.org/kb/item14.htm", "any"),
    Credential("~/.boto", "gsutil, boto", "credentials and key file paths",
               "https://cloud.google.com/storage/docs/boto-gsutil", "any"),
    Credential("~/.databrickscfg", "Databricks CLI and SDKs", "configuration profiles with "
               "tokens", "https://docs.databricks.com/dev-tools/auth/config-profiles.html",
               "any"),
    Credential("~/.dbt/profiles.yml", "dbt", "database connection credentials",
               "https://docs.getdbt.com/docs/configure-your-profile", "any"),
    Credential("~/.pulumi/credentials.json", "Pulumi", "access tokens from pulumi login",
               "https://github.com/pulumi/pulumi/blob/master/sdk/go/common/workspace/creds.go",
               "any"),
    Credential("~/.config/configstore/firebase-tools.json", "Firebase CLI", "the OAuth "
               "refresh token from firebase login",
               "https://github.com/firebase/firebase-tools/blob/master/src/configstore.ts",
               "any"),
    Credential("~/.oci", "OCI CLI", "config and the API signing key (oci_api_key.pem)",
               "https://docs.oracle.com/en-us/iaas/Content/API/Concepts/sdkconfig.htm", "any"),
    # Package managers and build tools.
    Credential("~/.config/pip/pip.conf", "pip", "index URLs, often with credentials",
               "https://pip.pypa.io/en/stable/topics/configuration/", "any"),
    Credential("~/.pip/pip.conf", "pip", "the legacy place of the same file",
               "https://pip.pypa.io/en/stable/topics/configuration/", "any"),
    Credential("~/.m2/settings.xml", "Maven", "servers' user names and passwords",
               "https://maven.apache.org/settings.html#servers", "any"),
    Credential("~/.m2/settings-security.xml", "Maven", "the master password",
               "https://maven.apache.org/guides/mini/guide-encryption.html", "any"),
    Credential("~/.gem/credentials", "RubyGems", "API keys from gem signin",
               "https://guides.rubygems.org/command-reference/#gem-signin", "any"),
    Credential("~/.local/share/gem/credentials", "RubyGems", "the same, in the XDG place",
               "https://guides.rubygems.org/command-reference/#gem-signin", "any"),
    Credential("~/.yarnrc.yml", "Yarn", "npmAuthToken per registry",
               "https://yarnpkg.com/configuration/yarnrc#npmAuthToken", "any"),
    Credential("~/.config/composer/auth.json", "Composer", "HTTP basic, GitHub and GitLab "
               "tokens (COMPOSER_HOME's XDG default)",
               "https://getcomposer.org/doc/articles/authentication-for-private-packages.md",
               "any"),
    Credential("~/.composer/auth.json", "Composer", "the same, COMPOSER_HOME's legacy place",
               "https://getcomposer.org/doc/articles/authentication-for-private-packages.md",
               "any"),
    Credential("~/.nuget/NuGet/NuGet.Config", "NuGet, dotnet", "packageSourceCredentials",
               "https://learn.microsoft.com/en-us/nuget/reference/nuget-config-file", "any"),
    Credential("~/.config/NuGet/NuGet.Config", "NuGet, dotnet", "the same, the other user "
               "place", "https://learn.microsoft.com/en-us/nuget/reference/nuget-config-file",
               "any"),
    # Forges, version control and editors' sign-ins.
    Credential("~/.gitcookies", "git (http.cookieFile), Gerrit", "HTTP authentication "
               "cookies", "https://git-scm.com/docs/git-config#Documentation/git-config.txt"
               "-httpcookieFile", "any"),
    Credential("~/.cache/git/credential", "git credential-cache", "the cache daemon's "
               "socket, which hands out cached passwords",
               "https://git-scm.com/docs/git-credential-cache", "any"),
    Credential("~/.git-credential-cache", "git credential-cache", "the legacy place of the "
               "same socket", "https://git-scm.com/docs/git-credential-cache", "any"),
    Credential("~/.subversion/auth", "Subversion", "cached passwords and certificates",
               "https://svnbook.red-bean.com/en/1.7/svn.serverconfig.netmodel.html", "any"),
    Credential("~/.config/github-copilot", "GitHub Copilot in editors", "hosts.json and "
               "apps.json with the OAuth token", "https://github.com/github/copilot.vim",
               "any"),
    Credential("~/.huggingface", "Hugging Face Hub", "token, the place before "
               "~/.cache/huggingface", "https://github.com/huggingface/huggingface_hub/issues"
               "/1232", "any"),
    Credential("~/.authinfo", "Emacs auth-source", "passwords for hosts and services",
               "https://www.gnu.org/software/emacs/manual/html_mono/auth.html", "any"),
    Credential("~/.authinfo.gpg", "Emacs auth-source", "the same, encrypted",
               "https://www.gnu.org/software/emacs/manual/html_mono/auth.html", "any"),
    Credential("~/.mylogin.cnf", "MySQL clients", "login paths with obfuscated passwords",
               "https://dev.mysql.com/doc/refman/8.4/en/mysql-config-editor.html", "any"),
    Credential("~/.android/adbkey", "adb", "the private key Android devices trust",
               "https://developer.android.com/tools/adb", "any"),
    # Histories: editors' and the shells' that set HISTFILE themselves.
    Credential("~/.zsh_history", "zsh (Oh My Zsh, macOS's /etc/zshrc)", "command history "
               "(zsh has no default HISTFILE: these set it)",
               "https://github.com/ohmyzsh/ohmyzsh/blob/master/lib/history.zsh", "any"),
    Credential("~/.histfile", "zsh (zsh-newuser-install)", "command history",
               "https://github.com/zsh-users/zsh/blob/master/Functions/Newuser"
               "/zsh-newuser-install", "any"),
    Credential("~/.viminfo", "Vim", "command-line, search and register history",
               "https://vimhelp.org/starting.txt.html#viminfo-file-name", "any"),
    Credential("~/.local/state/nvim/shada", "Neovim", "ShaDa: command-line, search and "
               "register history", "https://neovim.io/doc/user/starting.html#shada-file-name",
               "any"),
    Credential("~/.local/share/nvim/shada", "Neovim", "the same, before Neovim 0.8",
               "https://neovim.io/doc/user/starting.html#shada-file-name", "any"),
)
