"""The LSP front: the server, its reader and the wire shapes of protocol.md."""
