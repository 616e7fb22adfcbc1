"""`python -m supervisor ...` runs the `lnk-sandbox` command line."""

from .cli import main_lnk_sandbox

main_lnk_sandbox()
