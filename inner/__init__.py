"""The in-sandbox confiner: standard library and ctypes only, nothing at import time.

It starts inside every sandbox, so it must start fast; see `main.py` for its steps.
"""
