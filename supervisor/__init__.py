"""lnk-sandbox's supervisor: the outer process that validates a spec, resolves its
grants, starts bubblewrap (or sandbox-exec) and stays its parent for the whole run.
"""
