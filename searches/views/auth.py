"""Log in, with failed attempts limited per address and account, and per address across accounts
(lib.ratelimit)."""

from django.contrib.auth import views as auth_views

from lib import ratelimit


class LoginView(auth_views.LoginView):
    def post(self, request, *args, **kwargs):
        for limit, who in self._counted():
            wait = ratelimit.retry_after(limit, who)
            if wait:
                return ratelimit.too_many(request, limit, wait)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        for limit, who in self._counted():
            ratelimit.count(limit, who)
        return super().form_invalid(form)

    def _counted(self):
        address = self.request.META.get("REMOTE_ADDR", "")
        username = self.request.POST.get("username", "")[:150].strip().lower()
        return [(ratelimit.LOGIN_FAILURES, f"{address}|{username}"),
                (ratelimit.LOGIN_FAILURES_PER_ADDRESS, f"address:{address}")]
