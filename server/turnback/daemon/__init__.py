"""`turnback daemon`: a background server per work tree, so that hooks capture fast.

`paths` and `client` import only the standard library (a hook's process stays
light); `service` runs the real server (pygls, pygit2) over a private socket.
"""
