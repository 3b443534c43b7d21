"""The error shapes: OpenAI's {"error": {"message", "type", "param", "code"}} everywhere but Anthropic's
Messages API, which gets Anthropic's {"type": "error", "error": {"type", "message"}}."""

from __future__ import annotations

from starlette.responses import JSONResponse

TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
         404: "not_found_error", 405: "invalid_request_error", 413: "invalid_request_error",
         415: "invalid_request_error", 500: "server_error", 503: "server_error"}
ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                   404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
                   502: "api_error", 503: "overloaded_error"}
ANTHROPIC_PATHS = ("/v1/messages",)


def anthropic_shaped(path: str) -> bool:
    """Whether an answer on this path speaks Anthropic's error shape."""
    return path.rstrip("/").startswith(ANTHROPIC_PATHS)


class ApiError(Exception):
    """A request the server answers with an error; raised anywhere in a handler."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 retry_after_s: int | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.retry_after_s = retry_after_s

    def body(self) -> dict[str, object]:
        return error_body(self.status, self.message, self.param, self.code)

    def anthropic_body(self) -> dict[str, object]:
        return anthropic_error_body(self.status, self.message)

    def response(self, anthropic: bool = False) -> JSONResponse:
        headers = {"Retry-After": str(self.retry_after_s)} if self.retry_after_s is not None else None
        if self.status == 401:
            headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
        body = self.anthropic_body() if anthropic else self.body()
        return JSONResponse(body, status_code=self.status, headers=headers)


def error_body(status: int, message: str, param: str | None = None, code: str | None = None) -> dict[str, object]:
    return {"error": {"message": message, "type": TYPES.get(status, "invalid_request_error"),
                      "param": param, "code": code}}


def anthropic_error_body(status: int, message: str) -> dict[str, object]:
    return {"type": "error", "error": {"type": ANTHROPIC_TYPES.get(status, "invalid_request_error"),
                                       "message": message}}
