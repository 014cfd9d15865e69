"""Hardening for every request and response.

Content-Security-Policy: scripts and styles only from our static files, data handed to scripts
through json_script, so injected markup can neither run code nor restyle the page.

NUL characters: no text a person types contains one, and PostgreSQL refuses them in text
columns and queries, so a NUL anywhere in the query string or a form field is a 400 here
rather than a database error inside whichever view reads that field."""

from django.http import HttpResponseBadRequest

POLICY = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
          "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response


class RejectNulMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        fields = [request.GET]
        if request.method == "POST" and request.content_type in ("multipart/form-data",
                                                                  "application/x-www-form-urlencoded"):
            fields.append(request.POST)  # file contents (request.FILES) may hold any byte
        for query in fields:
            for key, values in query.lists():
                if "\x00" in key or any("\x00" in value for value in values):
                    return HttpResponseBadRequest("Text input must not contain NUL characters.",
                                                  content_type="text/plain; charset=utf-8")
        return self.get_response(request)
