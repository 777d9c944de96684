"""schemathesis hooks for ARIA's API: a check that every error answer has the API's one error shape.

Under `/api/v1` (and everywhere but `/v1/`) an error is `{"error": {"code", "message", "hint"}}`
with a `code` that fits the status (docs/http-api.md, Conventions); under `/v1/` it is OpenAI's
`{"error": {"message", "type", "param", "code", "hint"}}`. The schema checks of schemathesis cover
the documented answers; this one holds for every 4xx/5xx answer, documented or not.

Loaded by `tests/e2e/test_openapi_schema.py` through `SCHEMATHESIS_HOOKS`.
"""

from __future__ import annotations

import schemathesis

# The codes each status may carry (docs/http-api.md).
CODES = {
    400: {"bad_request"}, 401: {"unauthorized"}, 403: {"forbidden"}, 404: {"not_found"},
    405: {"method_not_allowed"}, 409: {"conflict"}, 413: {"payload_too_large"},
    415: {"unsupported_media_type"}, 429: {"rate_limited"}, 500: {"internal"},
    503: {"unavailable"},
}
OPENAI_TYPES = {"invalid_request_error", "authentication_error", "permission_error",
                "rate_limit_error", "server_error"}


@schemathesis.check
def error_shape(ctx, response, case):
    """A 4xx/5xx answer has the API's error shape, with a code that fits its status."""
    status = response.status_code
    if status < 400:
        return None
    path = case.operation.path
    content_type = response.headers.get("content-type", [""])
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    assert content_type.startswith("application/json"), \
        f"a {status} answer must be JSON, not `{content_type}`"
    body = response.json()
    error = body.get("error") if isinstance(body, dict) else None
    assert isinstance(error, dict), f"a {status} answer must be {{\"error\": {{...}}}}: {body!r}"
    if path.startswith("/v1/"):
        missing = {"message", "type", "param", "code", "hint"} - set(error)
        assert not missing, f"the OpenAI-shaped error lacks {sorted(missing)}: {body!r}"
        assert error["type"] in OPENAI_TYPES, f"unknown OpenAI error type: {body!r}"
        return None
    assert set(error) == {"code", "message", "hint"}, \
        f"the error must have exactly code, message and hint: {body!r}"
    assert all(isinstance(error[k], str) for k in error), f"code, message, hint are text: {body!r}"
    assert error["message"] and error["hint"], \
        f"an error says what went wrong and what to do about it: {body!r}"
    expected = CODES.get(status)
    assert expected is None or error["code"] in expected, \
        f"a {status} answer's code is one of {sorted(expected)}, not `{error['code']}`"
    return None
