"""Schemathesis hooks for Confetti: an append to a resumable upload sends its bytes as
`application/partial-upload`, a media type Schemathesis has no serializer for."""

import schemathesis
from schemathesis.transport.serialization import serialize_binary


@schemathesis.serializer("application/partial-upload")
def partial_upload(ctx, value):
    return {"data": serialize_binary(value)}


# Hypothesis names a filtered strategy by parsing its lambda's source; on CPython 3.11 parsing
# deep inside Schemathesis's coverage phase can fail with "SystemError: AST constructor recursion
# depth mismatch" (a CPython bug, python/cpython#106905), which aborts the whole operation. The
# name is only a description: without it the cases and the checks are the same.
import hypothesis.internal.lambda_sources as _lambda_sources

_describe = _lambda_sources.lambda_description


def _lambda_description(f):
    try:
        return _describe(f)
    except SystemError:
        return "lambda: <source not parsed>"


_lambda_sources.lambda_description = _lambda_description
