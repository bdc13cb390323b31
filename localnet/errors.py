"""The node's JSON-RPC error."""


class RpcError(Exception):
    """A JSON-RPC error answer (code, message, data)."""

    def __init__(self, code: int, message: str, data: object = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data
