"""Log in, with failed attempts limited per address and account (lib.ratelimit)."""

from django.contrib.auth import views as auth_views

from lib import ratelimit


class LoginView(auth_views.LoginView):
    def post(self, request, *args, **kwargs):
        wait = ratelimit.retry_after(ratelimit.LOGIN_FAILURES, self._who())
        if wait:
            return ratelimit.too_many(request, ratelimit.LOGIN_FAILURES, wait)
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        ratelimit.count(ratelimit.LOGIN_FAILURES, self._who())
        return super().form_invalid(form)

    def _who(self) -> str:
        username = self.request.POST.get("username", "")[:150].strip().lower()
        return f"{self.request.META.get('REMOTE_ADDR', '')}|{username}"
