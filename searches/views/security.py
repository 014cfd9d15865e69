"""Content-Security-Policy for the dashboard's pages: scripts only from our static files,
data handed to them through json_script, so injected markup cannot run code."""

from functools import wraps

POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def content_security_policy(view):
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response

    return wrapper
