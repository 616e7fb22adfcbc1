"""`python -I -m netns_helper CTL_FD SUPERVISOR_PID`: see `main.py`."""

from .main import main

main()
