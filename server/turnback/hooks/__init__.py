"""turnback in an agent's loop: the `turnback hook` command and the hook installers.

`harnesses` is the table of what each agent sends and expects; `payload` maps its
stdin JSON to a capture; `runner` runs one hook (never blocking the agent);
`installer` and `configs` write the agent's hook config; `hints` says how to roll
a conversation back after an undo. Nothing here imports pygit2 or the engine at
import time: a hook pays for them only when it captures.
"""
